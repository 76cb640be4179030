/* SPDX-License-Identifier: BSD-2-Clause */
/* NCCL communicators: an engine table (cblob_comm_engine) over an ncclComm_t, for the core's
 * collectives (src/comm). Each communicator has a stream of its own, so that compute queued on
 * the context's stream after a collective starts overlaps it (a backward pass and its gradients'
 * all-reduce). Events order the two: one recorded on the context's stream when a collective is
 * queued (the core makes the buffers' users that stream, so it captures cblob's work on them)
 * makes the NCCL stream wait before the collective; one recorded after it is what a wait waits
 * for, before anything uses the buffers again. Without a timeout a wait synchronises with that
 * event; with one it polls the event and NCCL's asynchronous error, and aborts the NCCL
 * communicator when either says the collective will not finish. CBLOB_CUDA_LAUNCH_BLOCKING=1
 * makes the call that queues a collective wait for it, as it does for kernels. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_backend.h"
#include "alloc.h"
#include "cuda_device.h"
#include "cuda_loader.h"
#include "cuda_queue.h"
#include "status.h"

typedef struct nccl_engine {
    const cb_device *device; /* the communicator's context's: its stream at each call */
    cb_cuda_device_state *state;
    cbnc_comm comm;
    bool aborted;
    cbcu_stream stream;      /* the collectives' own, non-blocking */
    cbcu_event inputs_ready; /* recorded on the context's stream as each collective is queued */
    cbcu_deviceptr barrier_word; /* NCCL has no barrier: a barrier is a sum of one int32 */
} nccl_engine;

static const cb_nccl_api *nccl_api(void)
{
    return &cb_cuda_nccl_get()->api;
}

static cblob_status nccl_ready(void)
{
    const cb_cuda_nccl *nccl = cb_cuda_nccl_get();
    return nccl->status == CBLOB_OK ? CBLOB_OK : cb_fail(nccl->status, "%s", nccl->message);
}

static cblob_status nccl_failed(cbnc_result result, const char *what, char *message, size_t message_size)
{
    snprintf(message, message_size, "%s: %s (NCCL error %d)", what, nccl_api()->ncclGetErrorString(result), (int)result);
    return CBLOB_ERR_COMM;
}

cblob_status cb_cuda_nccl_unique_id(uint8_t *out_id)
{
    CB_TRY(nccl_ready());
    cbnc_unique_id id;
    const cbnc_result result = nccl_api()->ncclGetUniqueId(&id);
    if (result != CBNC_SUCCESS) {
        char message[256];
        return cb_fail(nccl_failed(result, "ncclGetUniqueId", message, sizeof message), "%s", message);
    }
    memcpy(out_id, id.internal, CBNC_UNIQUE_ID_BYTES);
    return CBLOB_OK;
}

/* ---- the engine ---------------------------------------------------------------------------- */

static bool nccl_datatype(cblob_dtype dtype, cbnc_datatype *out)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: *out = CBNC_FLOAT32; return true;
    case CBLOB_DTYPE_FLOAT64: *out = CBNC_FLOAT64; return true;
    case CBLOB_DTYPE_INT32: *out = CBNC_INT32; return true;
    case CBLOB_DTYPE_UINT32: *out = CBNC_UINT32; return true;
    default: return false;
    }
}

static cblob_status cuda_failed(cbcu_result result, const char *what, char *message, size_t message_size)
{
    snprintf(message, message_size, "%s: %s", what, cb_cuda_error_name(result));
    return CBLOB_ERR_DEVICE;
}

/* The NCCL stream waits for what the context's stream has queued so far (the buffers' writers). */
static cblob_status wait_for_inputs(nccl_engine *engine, char *message, size_t message_size)
{
    const cb_cuda_driver_api *cuda = cb_cuda_driver_api_get();
    cbcu_result result = cuda->cuEventRecord(engine->inputs_ready, cb_cuda_stream(engine->device));
    if (result == CBCU_SUCCESS)
        result = cuda->cuStreamWaitEvent(engine->stream, engine->inputs_ready, 0);
    return result == CBCU_SUCCESS ? CBLOB_OK
                                  : cuda_failed(result, "ordering the collective after the context's work", message,
                                                message_size);
}

static int64_t now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Polls the event until it has happened, NCCL reports an error, or the deadline passes (none when
 * timeout_ms is negative). */
static cblob_status poll_event(nccl_engine *engine, cbcu_event event, int64_t timeout_ms, char *message,
                               size_t message_size)
{
    const cb_cuda_driver_api *cuda = cb_cuda_driver_api_get();
    const int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ms() + timeout_ms;
    for (;;) {
        const cbcu_result queried = cuda->cuEventQuery(event);
        if (queried == CBCU_SUCCESS)
            return CBLOB_OK;
        if (queried != CBCU_ERROR_NOT_READY) {
            snprintf(message, message_size, "waiting for the collective: %s", cb_cuda_error_name(queried));
            return CBLOB_ERR_DEVICE;
        }
        cbnc_result async = CBNC_SUCCESS;
        const cbnc_result asked = nccl_api()->ncclCommGetAsyncError(engine->comm, &async);
        if (asked != CBNC_SUCCESS || (async != CBNC_SUCCESS && async != CBNC_IN_PROGRESS))
            return nccl_failed(asked != CBNC_SUCCESS ? asked : async, "the NCCL communicator", message, message_size);
        if (now_ms() >= deadline) {
            snprintf(message, message_size, "the collective did not finish within %lld ms", (long long)timeout_ms);
            return CBLOB_ERR_TIMEOUT;
        }
        const struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
    }
}

/* A collective that will not finish: the communicator is aborted, so that no kernel waits for
 * peers forever; it is unusable from then on. */
static void abort_comm(nccl_engine *engine)
{
    if (!engine->aborted) {
        nccl_api()->ncclCommAbort(engine->comm);
        engine->aborted = true;
    }
}

/* Records an event after the queued collective: the pending value a wait waits for. In
 * launch-blocking mode the collective is waited for here, so this call reports its failure. */
static cblob_status record_pending(nccl_engine *engine, void **out_pending, char *message, size_t message_size)
{
    const cb_cuda_driver_api *cuda = cb_cuda_driver_api_get();
    cbcu_event event = NULL;
    cbcu_result result = cuda->cuEventCreate(&event, CBCU_EVENT_DISABLE_TIMING);
    if (result == CBCU_SUCCESS)
        result = cuda->cuEventRecord(event, engine->stream);
    cblob_status status = result == CBCU_SUCCESS ? CBLOB_OK : cuda_failed(result, "the collective", message, message_size);
    /* Polled, not synchronised: a peer that died is NCCL's asynchronous error, not a hang. */
    if (status == CBLOB_OK && cb_cuda_launch_blocking()) {
        status = poll_event(engine, event, -1, message, message_size);
        if (status != CBLOB_OK)
            abort_comm(engine);
    }
    if (status != CBLOB_OK) {
        if (event != NULL)
            cuda->cuEventDestroy_v2(event);
        return status;
    }
    *out_pending = event;
    return CBLOB_OK;
}

/* Queues sum or broadcast (root >= 0) of count elements at buffer, in place, on the NCCL stream
 * after the context's work. */
static cblob_status queue_collective(nccl_engine *engine, void *buffer, int64_t count, cblob_dtype dtype, int32_t root,
                                     void **out_pending, char *message, size_t message_size)
{
    cbnc_datatype type;
    if (!nccl_datatype(dtype, &type)) {
        snprintf(message, message_size, "NCCL takes no dtype %d", (int)dtype);
        return CBLOB_ERR_COMM;
    }
    if (cb_cuda_enter(engine->state) != CBLOB_OK) {
        snprintf(message, message_size, "%s", cb_last_error_message());
        return CBLOB_ERR_DEVICE;
    }
    const cb_nccl_api *nccl = nccl_api();
    cblob_status status = wait_for_inputs(engine, message, message_size);
    if (status == CBLOB_OK) {
        const cbnc_result result =
            root < 0 ? nccl->ncclAllReduce(buffer, buffer, (size_t)count, type, CBNC_SUM, engine->comm, engine->stream)
                     : nccl->ncclBroadcast(buffer, buffer, (size_t)count, type, root, engine->comm, engine->stream);
        status = result == CBNC_SUCCESS ? record_pending(engine, out_pending, message, message_size)
                                        : nccl_failed(result, root < 0 ? "ncclAllReduce" : "ncclBroadcast", message,
                                                      message_size);
    }
    cb_cuda_leave();
    return status;
}

static cblob_status nccl_allreduce(void *state, void *buffer, int64_t count, cblob_dtype dtype, void **out_pending,
                                   char *message, size_t message_size)
{
    return queue_collective(state, buffer, count, dtype, -1, out_pending, message, message_size);
}

static cblob_status nccl_broadcast(void *state, void *buffer, int64_t count, cblob_dtype dtype, int32_t root,
                                   void **out_pending, char *message, size_t message_size)
{
    return queue_collective(state, buffer, count, dtype, root, out_pending, message, message_size);
}

static cblob_status nccl_barrier(void *state, void **out_pending, char *message, size_t message_size)
{
    nccl_engine *engine = state;
    return queue_collective(engine, (void *)(uintptr_t)engine->barrier_word, 1, CBLOB_DTYPE_INT32, -1, out_pending,
                            message, message_size);
}

static cblob_status nccl_wait(void *state, void *pending, int64_t timeout_ms, char *message, size_t message_size)
{
    nccl_engine *engine = state;
    cbcu_event event = pending;
    if (cb_cuda_enter(engine->state) != CBLOB_OK) {
        snprintf(message, message_size, "%s", cb_last_error_message());
        return CBLOB_ERR_DEVICE;
    }
    const cb_cuda_driver_api *cuda = cb_cuda_driver_api_get();
    cblob_status status = CBLOB_OK;
    if (engine->aborted) {
        snprintf(message, message_size, "the NCCL communicator was aborted");
        status = CBLOB_ERR_COMM;
    } else if (timeout_ms < 0) {
        const cbcu_result result = cuda->cuEventSynchronize(event);
        if (result != CBCU_SUCCESS) {
            snprintf(message, message_size, "waiting for the collective: %s", cb_cuda_error_name(result));
            status = CBLOB_ERR_DEVICE;
        }
    } else {
        status = poll_event(engine, event, timeout_ms, message, message_size);
    }
    if (status != CBLOB_OK)
        abort_comm(engine);
    cuda->cuEventDestroy_v2(event);
    cb_cuda_leave();
    return status;
}

/* The stream, its event and the barrier's word, made before joining and freed after leaving. */
static void free_resources(nccl_engine *engine)
{
    const cb_cuda_driver_api *cuda = cb_cuda_driver_api_get();
    if (engine->barrier_word != 0)
        cuda->cuMemFree_v2(engine->barrier_word);
    if (engine->inputs_ready != NULL)
        cuda->cuEventDestroy_v2(engine->inputs_ready);
    if (engine->stream != NULL)
        cuda->cuStreamDestroy_v2(engine->stream);
}

/* Destroying leaves the NCCL communicator, then its stream goes (work still queued on a stream
 * runs to its end). */
static void nccl_destroy(void *state)
{
    nccl_engine *engine = state;
    if (cb_cuda_enter(engine->state) == CBLOB_OK) {
        if (!engine->aborted)
            nccl_api()->ncclCommDestroy(engine->comm);
        free_resources(engine);
        cb_cuda_leave();
    }
    free(engine);
}

static cblob_status make_resources(nccl_engine *engine)
{
    const cb_cuda_driver_api *cuda = cb_cuda_driver_api_get();
    CB_TRY(cb_cuda_check(cuda->cuMemAlloc_v2(&engine->barrier_word, sizeof(int32_t)), "allocating the barrier's word"));
    CB_TRY(cb_cuda_check(cuda->cuStreamCreate(&engine->stream, CBCU_STREAM_NON_BLOCKING), "creating NCCL's stream"));
    return cb_cuda_check(cuda->cuEventCreate(&engine->inputs_ready, CBCU_EVENT_DISABLE_TIMING), "creating NCCL's event");
}

/* Joins the NCCL communicator (blocking until every rank has called) on the context's device. */
static cblob_status join(nccl_engine *engine, const uint8_t *unique_id, int32_t nranks, int32_t rank)
{
    cblob_status status = make_resources(engine);
    if (status == CBLOB_OK) {
        cbnc_unique_id id;
        memcpy(id.internal, unique_id, CBNC_UNIQUE_ID_BYTES);
        const cbnc_result result = nccl_api()->ncclCommInitRank(&engine->comm, nranks, id, rank);
        if (result != CBNC_SUCCESS) {
            char message[256];
            status = cb_fail(nccl_failed(result, "ncclCommInitRank", message, sizeof message), "%s", message);
        }
    }
    if (status != CBLOB_OK)
        free_resources(engine);
    return status;
}

cblob_status cb_cuda_nccl_engine(const cb_device *device, const uint8_t *unique_id, int32_t nranks, int32_t rank,
                                 cblob_comm_engine *out)
{
    CB_TRY(nccl_ready());
    nccl_engine *engine = cb_calloc(1, sizeof *engine);
    if (engine == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for an NCCL communicator");
    engine->device = device;
    engine->state = cb_cuda_device_state_of(device);
    cblob_status status = cb_cuda_enter(engine->state);
    if (status == CBLOB_OK) {
        status = join(engine, unique_id, nranks, rank);
        cb_cuda_leave();
    }
    if (status != CBLOB_OK) {
        free(engine);
        return status;
    }
    *out = (cblob_comm_engine){
        .struct_size = sizeof *out,
        .name = "nccl",
        .rank = rank,
        .size = nranks,
        .memory = CBLOB_MEMORY_DEVICE,
        .dtypes = (1u << CBLOB_DTYPE_FLOAT32) | (1u << CBLOB_DTYPE_FLOAT64) | (1u << CBLOB_DTYPE_INT32) |
                  (1u << CBLOB_DTYPE_UINT32),
        .state = engine,
        .allreduce_sum = nccl_allreduce,
        .broadcast = nccl_broadcast,
        .barrier = nccl_barrier,
        .wait = nccl_wait,
        .destroy = nccl_destroy,
    };
    return CBLOB_OK;
}
