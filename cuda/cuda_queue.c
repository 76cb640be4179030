/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_queue.h"

#include <stdlib.h>

#include "cuda_device.h"
#include "status.h"

cblob_status cb_cuda_queue_open(int32_t index, void *stream, cb_queue **out)
{
    cb_queue *queue = calloc(1, sizeof *queue);
    if (queue == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a stream record");
    atomic_init(&queue->holders, 1);
    atomic_init(&queue->retired, false);
    pthread_mutex_init(&queue->lock, NULL);
    queue->device_index = index;
    queue->stream = (cbcu_stream)stream;
    *out = queue;
    return CBLOB_OK;
}

static const cb_cuda_device_state *state_of(const cb_queue *queue)
{
    int count = 0;
    return &cb_cuda_device_table(&count)[queue->device_index];
}

/* Waits for the queue's work and marks it retired; after this its stream is never used again. */
static void retire(cb_queue *queue)
{
    pthread_mutex_lock(&queue->lock);
    if (!atomic_load(&queue->retired) && cb_cuda_enter(state_of(queue)) == CBLOB_OK) {
        cb_cuda_driver_api_get()->cuStreamSynchronize(queue->stream);
        cb_cuda_leave();
    }
    atomic_store(&queue->retired, true);
    pthread_mutex_unlock(&queue->lock);
}

void cb_cuda_queue_close(cb_queue *queue)
{
    if (queue == NULL)
        return;
    retire(queue);
    cb_cuda_queue_release(queue);
}

void cb_cuda_queue_retain(cb_queue *queue)
{
    atomic_fetch_add_explicit(&queue->holders, 1, memory_order_relaxed);
}

void cb_cuda_queue_release(cb_queue *queue)
{
    if (queue == NULL || atomic_fetch_sub_explicit(&queue->holders, 1, memory_order_acq_rel) != 1)
        return;
    if (queue->event != NULL && cb_cuda_enter(state_of(queue)) == CBLOB_OK) {
        cb_cuda_driver_api_get()->cuEventDestroy_v2(queue->event);
        cb_cuda_leave();
    }
    pthread_mutex_destroy(&queue->lock);
    free(queue);
}

cblob_status cb_cuda_queue_follow(const cb_device *device, cb_queue *previous)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    if (previous == NULL || previous == device->queue || atomic_load(&previous->retired) ||
        previous->stream == device->queue->stream)
        return CBLOB_OK;
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    pthread_mutex_lock(&previous->lock);
    cbcu_result result = CBCU_SUCCESS;
    if (!atomic_load(&previous->retired)) {
        if (previous->event == NULL)
            result = api->cuEventCreate(&previous->event, CBCU_EVENT_DISABLE_TIMING);
        if (result == CBCU_SUCCESS)
            result = api->cuEventRecord(previous->event, previous->stream);
        /* The wait takes the event as recorded now; a later record does not change it. */
        if (result == CBCU_SUCCESS)
            result = api->cuStreamWaitEvent(device->queue->stream, previous->event, 0);
    }
    pthread_mutex_unlock(&previous->lock);
    cb_cuda_leave();
    return cb_cuda_check(result, "ordering work after another stream's");
}

cbcu_stream cb_cuda_stream(const cb_device *device)
{
    const cb_queue *queue = device->queue;
    if (queue == NULL || atomic_load(&queue->retired))
        return NULL;
    return queue->stream;
}
