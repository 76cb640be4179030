/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_queue.h"
#include "alloc.h"

#include <stdlib.h>

#include "cuda_device.h"
#include "status.h"

/* A stream of the device's context: one made in the primary context (the runtime API's streams
 * are), or one of its default streams. */
static cblob_status check_stream_context(const cb_cuda_device_state *state, cbcu_stream stream)
{
    if (stream == NULL || stream == CBCU_STREAM_LEGACY || stream == CBCU_STREAM_PER_THREAD)
        return CBLOB_OK;
    cbcu_context owner = NULL;
    const cbcu_result result = cb_cuda_driver_api_get()->cuStreamGetCtx(stream, &owner);
    if (result != CBCU_SUCCESS)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "stream %p is not a CUDA stream the driver knows (%s)", (void *)stream,
                       cb_cuda_error_name(result));
    if (owner != state->context) {
        int count = 0;
        const cb_cuda_device_state *devices = cb_cuda_device_table(&count);
        for (int d = 0; d < count; ++d)
            if (devices[d].context == owner)
                return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                               "stream %p belongs to device %d, not to the context's device %d", (void *)stream, d,
                               (int)state->index);
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "stream %p belongs to another CUDA context (another device's, or one of its own) than device %d's "
                       "primary context",
                       (void *)stream, (int)state->index);
    }
    return CBLOB_OK;
}

/* A stream a context queues on: not the per-thread default stream, which follows the calling OS
 * thread. */
static cblob_status check_stream(const cb_cuda_device_state *state, cbcu_stream stream)
{
    if (stream == CBCU_STREAM_PER_THREAD)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "stream is the per-thread default stream, which follows the calling OS thread (goroutines and "
                       "thread pools move between threads): give a stream you created, or NULL");
    return check_stream_context(state, stream);
}

static cblob_status make_stream(const cb_cuda_device_state *state, bool own, void *given, cbcu_stream *out)
{
    CB_TRY(cb_cuda_enter(state));
    cblob_status status = CBLOB_OK;
    if (own)
        status = cb_cuda_check(cb_cuda_driver_api_get()->cuStreamCreate(out, CBCU_STREAM_NON_BLOCKING),
                               "creating the context's stream");
    else if ((status = check_stream(state, (cbcu_stream)given)) == CBLOB_OK)
        *out = (cbcu_stream)given;
    cb_cuda_leave();
    return status;
}

cblob_status cb_cuda_queue_open(cb_device *device, bool own, void *stream)
{
    const cb_cuda_device_state *state = cb_cuda_device_state_of(device);
    cbcu_stream made = NULL;
    CB_TRY(make_stream(state, own, stream, &made));
    cb_queue *queue = cb_calloc(1, sizeof *queue);
    if (queue == NULL) {
        if (own && cb_cuda_enter(state) == CBLOB_OK) {
            cb_cuda_driver_api_get()->cuStreamDestroy_v2(made);
            cb_cuda_leave();
        }
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a stream record");
    }
    atomic_init(&queue->holders, 1);
    atomic_init(&queue->retired, false);
    pthread_mutex_init(&queue->lock, NULL);
    pthread_mutex_init(&queue->reduce_lock, NULL);
    queue->device_index = device->index;
    queue->stream = made;
    queue->owned = own;
    device->queue = queue;
    device->stream = made;
    return CBLOB_OK;
}

static const cb_cuda_device_state *state_of(const cb_queue *queue)
{
    int count = 0;
    return &cb_cuda_device_table(&count)[queue->device_index];
}

static void destroy_blas(cb_queue *queue)
{
    const cb_cuda_cublas *blas = cb_cuda_cublas_get();
    if (queue->blas_sums != NULL)
        blas->api.cublasDestroy_v2(queue->blas_sums);
    if (queue->blas_scalars != NULL)
        blas->api.cublasDestroy_v2(queue->blas_scalars);
    queue->blas_sums = queue->blas_scalars = NULL;
}

/* Waits for the queue's work and marks it retired; after this its stream is never used again
 * (nor the cuBLAS handles bound to it). */
static void retire(cb_queue *queue)
{
    pthread_mutex_lock(&queue->lock);
    if (!atomic_load(&queue->retired) && cb_cuda_enter(state_of(queue)) == CBLOB_OK) {
        cb_cuda_driver_api_get()->cuStreamSynchronize(queue->stream);
        destroy_blas(queue);
        if (queue->owned)
            cb_cuda_driver_api_get()->cuStreamDestroy_v2(queue->stream);
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
    if (cb_cuda_enter(state_of(queue)) == CBLOB_OK) {
        if (queue->event != NULL)
            cb_cuda_driver_api_get()->cuEventDestroy_v2(queue->event);
        destroy_blas(queue);
        for (int i = 0; i < queue->chunk_count; ++i)
            cb_cuda_driver_api_get()->cuMemFreeHost(queue->chunks[i]);
        if (queue->scratch != 0)
            cb_cuda_driver_api_get()->cuMemFree_v2(queue->scratch);
        cb_cuda_leave();
    }
    free(queue->chunks);
    free(queue->free_slots);
    pthread_mutex_destroy(&queue->reduce_lock);
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

/* An event of its own for each call: recorded on a stream cblob does not own, from any thread,
 * it shares nothing with the queue's. The wait keeps what the event captured when it was
 * queued, so the event is destroyed at once. */
cblob_status cb_cuda_queue_wait_stream(const cb_device *device, void *stream)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    const cb_cuda_device_state *state = cb_cuda_device_state_of(device);
    const cbcu_stream producer = stream != NULL ? (cbcu_stream)stream : CBCU_STREAM_LEGACY;
    CB_TRY(cb_cuda_enter(state));
    cblob_status status = check_stream_context(state, producer);
    cbcu_event event = NULL;
    if (status == CBLOB_OK)
        status = cb_cuda_check(api->cuEventCreate(&event, CBCU_EVENT_DISABLE_TIMING), "creating an event");
    if (status == CBLOB_OK) {
        cbcu_result result = api->cuEventRecord(event, producer);
        if (result == CBCU_SUCCESS)
            result = api->cuStreamWaitEvent(cb_cuda_stream(device), event, 0);
        status = cb_cuda_check(result, "ordering work after the producer's stream");
        api->cuEventDestroy_v2(event);
    }
    cb_cuda_leave();
    return status;
}

cbcu_stream cb_cuda_stream(const cb_device *device)
{
    const cb_queue *queue = device->queue;
    if (queue == NULL || atomic_load(&queue->retired))
        return NULL;
    return queue->stream;
}

/* ---- result slots ------------------------------------------------------------------------------ */

#define SLOTS_PER_CHUNK 32

/* A pinned chunk cut into slots, all free. Runs under the queue's lock with the context current. */
static cblob_status add_chunk(cb_queue *queue)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    void **chunks = cb_realloc(queue->chunks, (size_t)(queue->chunk_count + 1) * sizeof *chunks);
    cb_cuda_slot *slots = cb_realloc(queue->free_slots, (size_t)(queue->free_room + SLOTS_PER_CHUNK) * sizeof *slots);
    if (chunks != NULL)
        queue->chunks = chunks;
    if (slots != NULL)
        queue->free_slots = slots;
    if (chunks == NULL || slots == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for result slots");
    queue->free_room += SLOTS_PER_CHUNK;
    const size_t bytes = SLOTS_PER_CHUNK * CB_CUDA_SLOT_DOUBLES * sizeof(double);
    void *host = NULL;
    cbcu_deviceptr device = 0;
    CB_TRY(cb_cuda_check(api->cuMemHostAlloc(&host, bytes, CBCU_MEMHOSTALLOC_PORTABLE), "allocating result slots"));
    const cbcu_result mapped = api->cuMemHostGetDevicePointer_v2(&device, host, 0);
    if (mapped != CBCU_SUCCESS) {
        api->cuMemFreeHost(host);
        return cb_cuda_check(mapped, "mapping result slots");
    }
    queue->chunks[queue->chunk_count++] = host;
    for (int i = 0; i < SLOTS_PER_CHUNK; ++i)
        queue->free_slots[queue->free_count++] = (cb_cuda_slot){
            (double *)host + i * CB_CUDA_SLOT_DOUBLES, device + (cbcu_deviceptr)(i * CB_CUDA_SLOT_DOUBLES * sizeof(double))};
    return CBLOB_OK;
}

cblob_status cb_cuda_slot_take(const cb_device *device, cb_cuda_slot *out)
{
    cb_queue *queue = device->queue;
    cblob_status status = CBLOB_OK;
    pthread_mutex_lock(&queue->lock);
    if (queue->free_count == 0 && (status = cb_cuda_enter(cb_cuda_device_state_of(device))) == CBLOB_OK) {
        status = add_chunk(queue);
        cb_cuda_leave();
    }
    if (status == CBLOB_OK)
        *out = queue->free_slots[--queue->free_count];
    pthread_mutex_unlock(&queue->lock);
    return status;
}

void cb_cuda_slot_give(const cb_device *device, cb_cuda_slot slot)
{
    cb_queue *queue = device->queue;
    pthread_mutex_lock(&queue->lock);
    queue->free_slots[queue->free_count++] = slot;
    pthread_mutex_unlock(&queue->lock);
}
