/* SPDX-License-Identifier: BSD-2-Clause */
/* A context's device, stream and log (the GPU half of what Caffe keeps per thread). */
#include "context.h"
#include "status.h"

CBLOB_API cblob_status cblob_context_set_device(cblob_context *context, int32_t device_index)
{
    CB_ENTER();
    CB_REQUIRE(context);
    if (device_index < 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "device_index is %d; devices are numbered from 0", (int)device_index);
    const cb_device *device;
    return cb_context_use_device(context, device_index, &device);
}

CBLOB_API cblob_status cblob_context_device(const cblob_context *context, int32_t *out_device_index)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_device_index);
    cblob_context *mutable_context = (cblob_context *)context; /* the lock only */
    pthread_mutex_lock(&mutable_context->device_lock);
    *out_device_index = context->device.index;
    pthread_mutex_unlock(&mutable_context->device_lock);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_context_set_stream(cblob_context *context, void *stream)
{
    CB_ENTER();
    CB_REQUIRE(context);
    const cb_device *device;
    CB_TRY(cb_context_device(context, &device));
    if (device->stream == stream)
        return CBLOB_OK;
    cb_device fresh = *device;
    CB_TRY(device->backend->queue->open(&fresh, false, stream));
    /* Closing waits for the work already queued, so that it cannot race with work queued on the
     * new stream. */
    pthread_mutex_lock(&context->device_lock);
    cb_queue *previous = context->device.queue;
    context->device = fresh;
    pthread_mutex_unlock(&context->device_lock);
    device->backend->queue->close(previous);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_context_stream(const cblob_context *context, void **out_stream)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_stream);
    cblob_context *mutable_context = (cblob_context *)context; /* the lock only */
    pthread_mutex_lock(&mutable_context->device_lock);
    *out_stream = context->device.stream;
    pthread_mutex_unlock(&mutable_context->device_lock);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_context_synchronize(cblob_context *context)
{
    CB_ENTER();
    CB_REQUIRE(context);
    const cb_device *device = cb_context_open_device(context);
    if (device == NULL)
        return CBLOB_OK; /* never used a GPU: nothing can be queued */
    return device->backend->queue->synchronize(device);
}

CBLOB_API cblob_status cblob_context_log(const cblob_context *context, char *buffer, size_t buffer_size,
                                         size_t *out_length)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_length);
    char text[CB_LOG_BYTES];
    cb_log_read(&((cblob_context *)context)->log, text, sizeof text); /* the lock only */
    return cb_return_text(text, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_context_clear_log(cblob_context *context)
{
    CB_ENTER();
    CB_REQUIRE(context);
    cb_log_clear(&context->log);
    return CBLOB_OK;
}
