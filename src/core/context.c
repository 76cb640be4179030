/* SPDX-License-Identifier: BSD-2-Clause */
#include "context.h"
#include "alloc.h"

#include <stdlib.h>

#include "status.h"

CBLOB_API cblob_status cblob_context_create(cblob_context **out_context)
{
    CB_ENTER();
    CB_REQUIRE(out_context);
    cblob_context *context = cb_calloc(1, sizeof *context);
    if (context == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a context");
    atomic_init(&context->holders, 1);
    atomic_init(&context->mode, CBLOB_MODE_CPU);
    atomic_init(&context->device_open, false);
    atomic_init(&context->num_threads, 0);
    pthread_mutex_init(&context->device_lock, NULL);
    pthread_mutex_init(&context->progress_lock, NULL);
    cb_log_init(&context->log);
    context->device.log = &context->log;
    *out_context = context;
    return CBLOB_OK;
}

void cb_context_retain(cblob_context *context)
{
    atomic_fetch_add_explicit(&context->holders, 1, memory_order_relaxed);
}

void cb_context_release(cblob_context *context)
{
    if (atomic_fetch_sub_explicit(&context->holders, 1, memory_order_acq_rel) != 1)
        return;
    if (atomic_load(&context->device_open))
        context->device.backend->queue->close(context->device.queue);
    pthread_mutex_destroy(&context->device_lock);
    pthread_mutex_destroy(&context->progress_lock);
    cb_log_destroy(&context->log);
    free(context);
}

CBLOB_API void cblob_context_destroy(cblob_context *context)
{
    CB_ENTER();
    if (context != NULL)
        cb_context_release(context);
}

cblob_status cb_context_use_device(cblob_context *context, int32_t index, const cb_device **out)
{
    /* Once open the device never changes, so the common case needs no lock. */
    if (atomic_load_explicit(&context->device_open, memory_order_acquire) &&
        (index < 0 || index == context->device.index)) {
        *out = &context->device;
        return CBLOB_OK;
    }
    cblob_status status = CBLOB_OK;
    pthread_mutex_lock(&context->device_lock);
    if (index < 0)
        index = context->device.index;
    const bool open = atomic_load_explicit(&context->device_open, memory_order_relaxed);
    if (open && index != context->device.index) {
        status = cb_fail(CBLOB_ERR_STATE, "the context already uses device %d; create another context for device %d",
                         (int)context->device.index, (int)index);
    } else if (!open) {
        const cb_backend *backend = cb_gpu_backend();
        if (backend == NULL) {
            status = cb_fail(CBLOB_ERR_NO_DRIVER, "this build of cblob has no GPU backend");
        } else {
            status = backend->device->open(index);
            cb_device opened = context->device;
            opened.backend = backend;
            opened.index = index;
            if (status == CBLOB_OK)
                status = backend->queue->open(&opened, true, NULL); /* a stream of its own */
            if (status == CBLOB_OK) {
                context->device = opened;
                atomic_store_explicit(&context->device_open, true, memory_order_release);
            }
        }
    }
    pthread_mutex_unlock(&context->device_lock);
    if (status == CBLOB_OK)
        *out = &context->device;
    return status;
}

cblob_status cb_context_device(cblob_context *context, const cb_device **out)
{
    return cb_context_use_device(context, -1, out);
}

const cb_device *cb_context_open_device(cblob_context *context)
{
    return atomic_load_explicit(&context->device_open, memory_order_acquire) ? &context->device : NULL;
}

const cb_device *cb_context_pinning_device(cblob_context *context)
{
    if (atomic_load(&context->mode) != CBLOB_MODE_GPU)
        return NULL;
    const cb_device *device = NULL;
    return cb_context_device(context, &device) == CBLOB_OK ? device : NULL;
}

CBLOB_API cblob_status cblob_context_set_mode(cblob_context *context, cblob_mode mode)
{
    CB_ENTER();
    CB_REQUIRE(context);
    if (mode != CBLOB_MODE_CPU && mode != CBLOB_MODE_GPU)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "mode %d is neither CBLOB_MODE_CPU (0) nor CBLOB_MODE_GPU (1)", (int)mode);
    if (mode == CBLOB_MODE_GPU) {
        const cb_device *device;
        CB_TRY(cb_context_device(context, &device));
    }
    atomic_store(&context->mode, mode);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_context_mode(const cblob_context *context, cblob_mode *out_mode)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_mode);
    *out_mode = atomic_load(&((cblob_context *)context)->mode);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_context_set_num_threads(cblob_context *context, int32_t num_threads)
{
    CB_ENTER();
    CB_REQUIRE(context);
    if (num_threads < 0 || num_threads > CBLOB_MAX_THREADS)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "num_threads is %d; it must be 0 (the process default) to %d",
                       (int)num_threads, CBLOB_MAX_THREADS);
    atomic_store_explicit(&context->num_threads, num_threads, memory_order_relaxed);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_context_num_threads(const cblob_context *context, int32_t *out_num_threads)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_num_threads);
    const int32_t setting = atomic_load_explicit(&((cblob_context *)context)->num_threads, memory_order_relaxed);
    *out_num_threads = setting > 0 ? setting : cb_threads_default();
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_context_set_progress(cblob_context *context, cblob_progress_fn progress, void *user_data)
{
    CB_ENTER();
    CB_REQUIRE(context);
    pthread_mutex_lock(&context->progress_lock);
    context->progress = progress;
    context->progress_user_data = user_data;
    pthread_mutex_unlock(&context->progress_lock);
    return CBLOB_OK;
}

void cb_context_begin_progress(const cblob_context *context, cb_progress_kind kind, cb_progress *progress)
{
    cblob_progress_fn fn = NULL;
    void *user_data = NULL;
    if (context != NULL) {
        cblob_context *mutable_context = (cblob_context *)context;
        pthread_mutex_lock(&mutable_context->progress_lock);
        fn = context->progress;
        user_data = context->progress_user_data;
        pthread_mutex_unlock(&mutable_context->progress_lock);
    }
    cb_progress_begin(progress, kind, fn, user_data);
}
