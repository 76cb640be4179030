/* SPDX-License-Identifier: BSD-2-Clause */
#include "gpu_support.h"

#include <dlfcn.h>
#include <stdio.h>

/* The driver cblob loaded: already in the process, so RTLD_NOLOAD finds it without loading a
 * second one. */
static void *loaded_driver(void)
{
    const char *path = getenv("CBLOB_CUDA_DRIVER");
    return dlopen(path != NULL && path[0] != '\0' ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
}

static void *driver_symbol(const char *name)
{
    void *driver = loaded_driver();
    void *symbol = driver != NULL ? dlsym(driver, name) : NULL;
    if (driver != NULL)
        dlclose(driver); /* drops only the reference RTLD_NOLOAD added */
    return symbol;
}

bool gpu_usable(char *reason, size_t size)
{
    int32_t devices = 0;
    const cblob_status status = cblob_gpu_probe(&devices);
    if (status == CBLOB_OK)
        return true;
    snprintf(reason, size, "no usable GPU (%s): %s", cblob_status_name(status), cblob_last_error_message());
    return false;
}

bool gpu_is_fake(void)
{
    return driver_symbol("fake_cuda_get_counters") != NULL;
}

fake_cuda_counters gpu_counters(void)
{
    fake_cuda_counters counters = {0};
    fake_cuda_get_counters_fn get = (fake_cuda_get_counters_fn)driver_symbol("fake_cuda_get_counters");
    if (get != NULL)
        get(&counters);
    return counters;
}

bool gpu_set_device_memory(uint64_t bytes)
{
    fake_cuda_set_memory_fn set = (fake_cuda_set_memory_fn)driver_symbol("fake_cuda_set_memory");
    if (set != NULL)
        set(bytes);
    return set != NULL;
}

bool gpu_set_occupancy(int blocks_per_multiprocessor)
{
    fake_cuda_set_occupancy_fn set = (fake_cuda_set_occupancy_fn)driver_symbol("fake_cuda_set_occupancy");
    if (set != NULL)
        set(blocks_per_multiprocessor);
    return set != NULL;
}

uint64_t gpu_pending_copies(void)
{
    fake_cuda_pending_copies_fn pending = (fake_cuda_pending_copies_fn)driver_symbol("fake_cuda_pending_copies");
    return pending != NULL ? pending() : 0;
}

uint64_t gpu_pending_work(void)
{
    fake_cuda_pending_work_fn pending = (fake_cuda_pending_work_fn)driver_symbol("fake_cuda_pending_work");
    return pending != NULL ? pending() : 0;
}

bool gpu_is_deferred(void)
{
    fake_cuda_deferred_fn deferred = (fake_cuda_deferred_fn)driver_symbol("fake_cuda_deferred");
    return deferred != NULL && deferred() != 0;
}

void gpu_give_back(const void *ptr, size_t bytes)
{
    fake_cuda_give_back_fn give_back = (fake_cuda_give_back_fn)driver_symbol("fake_cuda_give_back");
    if (give_back != NULL)
        give_back(ptr, bytes);
}

bool gpu_inject_fault(int error)
{
    fake_cuda_inject_fault_fn inject = (fake_cuda_inject_fault_fn)driver_symbol("fake_cuda_inject_fault");
    if (inject != NULL)
        inject(error);
    return inject != NULL;
}

/* Streams belong to a context: the device's primary one, made current around the call. */
typedef int (*primary_retain_fn)(void **context, int device);
typedef int (*context_fn)(void *context);
typedef int (*context_pop_fn)(void **context);
typedef int (*stream_create_fn)(void **stream, unsigned int flags);
typedef int (*stream_destroy_fn)(void *stream);

static bool with_context_of(int device)
{
    primary_retain_fn retain = (primary_retain_fn)driver_symbol("cuDevicePrimaryCtxRetain");
    context_fn push = (context_fn)driver_symbol("cuCtxPushCurrent_v2");
    void *context = NULL;
    return retain != NULL && push != NULL && retain(&context, device) == 0 && push(context) == 0;
}

static bool with_primary_context(void)
{
    return with_context_of(0);
}

static void without_context(void)
{
    context_pop_fn pop = (context_pop_fn)driver_symbol("cuCtxPopCurrent_v2");
    void *previous = NULL;
    if (pop != NULL)
        pop(&previous);
}

int gpu_fill_context_stack(void)
{
    int pushed = 0;
    while (pushed < 1000 && with_primary_context())
        ++pushed;
    return pushed;
}

void gpu_empty_context_stack(int pushed)
{
    for (int i = 0; i < pushed; ++i)
        without_context();
}

void *gpu_stream_create(void)
{
    return gpu_stream_create_on(0);
}

void *gpu_stream_create_on(int device)
{
    stream_create_fn create = (stream_create_fn)driver_symbol("cuStreamCreate");
    void *stream = NULL;
    if (create == NULL || !with_context_of(device))
        return NULL;
    /* CU_STREAM_NON_BLOCKING: the harder case, not ordered with the default stream. */
    if (create(&stream, 1) != 0)
        stream = NULL;
    without_context();
    return stream;
}

void gpu_stream_destroy(void *stream)
{
    stream_destroy_fn destroy = (stream_destroy_fn)driver_symbol("cuStreamDestroy_v2");
    if (destroy != NULL && stream != NULL && with_primary_context()) {
        destroy(stream);
        without_context();
    }
}

typedef int (*mem_alloc_fn)(uint64_t *ptr, size_t bytes);
typedef int (*mem_free_fn)(uint64_t ptr);
typedef int (*host_alloc_fn)(void **ptr, size_t bytes, unsigned int flags);
typedef int (*host_free_fn)(void *ptr);

void *gpu_device_alloc(size_t bytes)
{
    mem_alloc_fn alloc = (mem_alloc_fn)driver_symbol("cuMemAlloc_v2");
    uint64_t ptr = 0;
    if (alloc == NULL || !with_primary_context())
        return NULL;
    if (alloc(&ptr, bytes) != 0)
        ptr = 0;
    without_context();
    return (void *)(uintptr_t)ptr;
}

void gpu_device_free(void *ptr)
{
    mem_free_fn release = (mem_free_fn)driver_symbol("cuMemFree_v2");
    if (release != NULL && ptr != NULL && with_primary_context()) {
        release((uint64_t)(uintptr_t)ptr);
        without_context();
    }
}

void *gpu_pinned_alloc(size_t bytes)
{
    host_alloc_fn alloc = (host_alloc_fn)driver_symbol("cuMemHostAlloc");
    void *ptr = NULL;
    if (alloc == NULL || !with_primary_context())
        return NULL;
    if (alloc(&ptr, bytes, 1 /* portable */) != 0)
        ptr = NULL;
    without_context();
    return ptr;
}

void gpu_pinned_free(void *ptr)
{
    host_free_fn release = (host_free_fn)driver_symbol("cuMemFreeHost");
    if (release != NULL && ptr != NULL && with_primary_context()) {
        release(ptr);
        without_context();
    }
}

typedef int (*copy_to_device_fn)(uint64_t dst, const void *src, size_t bytes, void *stream);
typedef int (*stream_sync_fn)(void *stream);

bool gpu_write_on_stream(void *stream, void *device_dst, const void *src, size_t bytes)
{
    copy_to_device_fn copy = (copy_to_device_fn)driver_symbol("cuMemcpyHtoDAsync_v2");
    stream_sync_fn sync = (stream_sync_fn)driver_symbol("cuStreamSynchronize");
    if (copy == NULL || sync == NULL || !with_primary_context())
        return false;
    const bool done = copy((uint64_t)(uintptr_t)device_dst, src, bytes, stream) == 0 && sync(stream) == 0;
    without_context();
    return done;
}

typedef int (*copy_to_host_fn)(void *dst, uint64_t src, size_t bytes, void *stream);

bool gpu_read_on_stream(void *stream, void *dst, const void *device_src, size_t bytes)
{
    copy_to_host_fn copy = (copy_to_host_fn)driver_symbol("cuMemcpyDtoHAsync_v2");
    stream_sync_fn sync = (stream_sync_fn)driver_symbol("cuStreamSynchronize");
    if (copy == NULL || sync == NULL || !with_primary_context())
        return false;
    const bool done = copy(dst, (uint64_t)(uintptr_t)device_src, bytes, stream) == 0 && sync(stream) == 0;
    without_context();
    return done;
}

typedef int (*copy_on_device_fn)(uint64_t dst, uint64_t src, size_t bytes, void *stream);

bool gpu_copy_on_stream(void *stream, void *device_dst, const void *device_src, size_t bytes)
{
    copy_on_device_fn copy = (copy_on_device_fn)driver_symbol("cuMemcpyDtoDAsync_v2");
    stream_sync_fn sync = (stream_sync_fn)driver_symbol("cuStreamSynchronize");
    if (copy == NULL || sync == NULL || !with_primary_context())
        return false;
    const bool done =
        copy((uint64_t)(uintptr_t)device_dst, (uint64_t)(uintptr_t)device_src, bytes, stream) == 0 && sync(stream) == 0;
    without_context();
    return done;
}

bool gpu_queue_write(void *stream, void *device_dst, const void *src, size_t bytes)
{
    copy_to_device_fn copy = (copy_to_device_fn)driver_symbol("cuMemcpyHtoDAsync_v2");
    if (copy == NULL || !with_primary_context())
        return false;
    const bool queued = copy((uint64_t)(uintptr_t)device_dst, src, bytes, stream) == 0;
    without_context();
    return queued;
}

bool gpu_queue_copy(void *stream, void *device_dst, const void *device_src, size_t bytes)
{
    copy_on_device_fn copy = (copy_on_device_fn)driver_symbol("cuMemcpyDtoDAsync_v2");
    if (copy == NULL || !with_primary_context())
        return false;
    const bool queued = copy((uint64_t)(uintptr_t)device_dst, (uint64_t)(uintptr_t)device_src, bytes, stream) == 0;
    without_context();
    return queued;
}

bool gpu_stream_synchronize(void *stream)
{
    stream_sync_fn sync = (stream_sync_fn)driver_symbol("cuStreamSynchronize");
    if (sync == NULL || !with_primary_context())
        return false;
    const bool done = sync(stream) == 0;
    without_context();
    return done;
}

cblob_status open_streamed(streamed_context *c)
{
    c->stream = NULL;
    cblob_status status = cblob_context_create(&c->ctx);
    if (status == CBLOB_OK)
        status = cblob_context_set_mode(c->ctx, CBLOB_MODE_GPU);
    if (status == CBLOB_OK && (c->stream = gpu_stream_create()) == NULL)
        status = CBLOB_ERR_DEVICE;
    if (status == CBLOB_OK)
        status = cblob_context_set_stream(c->ctx, c->stream);
    return status;
}

void close_streamed(streamed_context *c)
{
    cblob_context_synchronize(c->ctx);
    cblob_context_set_stream(c->ctx, NULL);
    cblob_context_destroy(c->ctx);
    gpu_stream_destroy(c->stream);
}

cblob_status open_blob(gpu_blob *b, cblob_dtype dtype, int64_t count)
{
    b->ctx = NULL;
    b->blob = NULL;
    cblob_status status = cblob_context_create(&b->ctx);
    if (status == CBLOB_OK)
        status = cblob_blob_create(b->ctx, dtype, 1, &count, &b->blob);
    return status;
}

void close_blob(gpu_blob *b)
{
    cblob_blob_destroy(b->blob);
    cblob_context_destroy(b->ctx);
}

cblob_head head_of(const cblob_blob *blob, cblob_part part)
{
    cblob_head head = -1;
    cblob_blob_head(blob, part, &head);
    return head;
}
