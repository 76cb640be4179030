/* SPDX-License-Identifier: BSD-2-Clause */
/* Collectives: a list of blobs becomes engine calls, consecutive small blobs of one dtype fused
 * into buckets (copied into one buffer, reduced in one call, copied back), larger ones alone and
 * in place. A request holds the blobs and the calls from the start to the wait. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"
#include "alloc.h"
#include "core/run_kernels.h"
#include "status.h"

/* Buckets start at this alignment in the bucket buffer (cuMemAlloc's, and a cache line's). */
#define CB_BUCKET_ALIGNMENT 256

/* One engine operation: a bucket, one blob in place, or the barrier. */
typedef struct cb_engine_call {
    int64_t first, end;        /* the blobs it carries: request->blobs[first..end) */
    const cb_dtype_info *dtype;
    int64_t elements;
    bool fused;                /* a bucket: buffer is in request->bucket */
    size_t bucket_offset;
    void *buffer;
    bool started;
    void *pending;
} cb_engine_call;

struct cblob_comm_request {
    cblob_comm *comm; /* held */
    cb_collective kind;
    cblob_part part;
    cblob_reduce_op op;
    int32_t root;
    int64_t count;
    cblob_blob **blobs; /* held: the listed blobs with elements */
    void **memory;      /* each blob's memory on the engine's side */
    int64_t num_calls;
    cb_engine_call *calls;
    void *bucket; /* host or device memory of bucket_size bytes */
    size_t bucket_size;
    bool engine_had_memory; /* some call was started: the engine was given the buffers */
    bool finished;
    cblob_status status;
    cblob_comm_request *next_parked; /* in comm->parked (see request_free) */
    char message[sizeof ((cblob_comm *)0)->broken_message];
};

/* ---- checks ----------------------------------------------------------------------------- */

static cblob_status check_usable(const cblob_comm *comm)
{
    if (comm->broken)
        return cb_fail(CBLOB_ERR_COMM, "the communicator is broken by an earlier failure (%s)", comm->broken_message);
    return CBLOB_OK;
}

static const char *part_name(cblob_part part)
{
    return part == CBLOB_PART_DATA ? "data" : "diff";
}

static cblob_status check_dtype(const cblob_comm *comm, const cblob_blob *blob, int64_t i, cb_collective kind,
                                cblob_reduce_op op)
{
    const cb_dtype_info *dtype = blob->dtype;
    if (!(comm->engine.dtypes & (1u << dtype->dtype)))
        return cb_fail(CBLOB_ERR_DTYPE, "blobs[%" PRId64 "] is %s, which engine \"%s\" does not take", i, dtype->name,
                       comm->engine.name);
    if (kind == CB_ALLREDUCE && op == CBLOB_REDUCE_AVERAGE && !dtype->is_float)
        return cb_fail(CBLOB_ERR_DTYPE, "blobs[%" PRId64 "] is %s: an average is defined for float dtypes only", i,
                       dtype->name);
    return CBLOB_OK;
}

static cblob_status check_device(const cblob_comm *comm, const cblob_blob *blob, int64_t i, cblob_part part)
{
    const cb_storage *storage = blob->storage[part];
    if (cb_device_is_host(comm->device) || storage == NULL || storage->dev == NULL)
        return CBLOB_OK;
    if (storage->device.backend != comm->device->backend || storage->device.index != comm->device->index)
        return cb_fail(CBLOB_ERR_STATE, "the %s of blobs[%" PRId64 "] lives on device %d, the communicator's on %d",
                       part_name(part), i, (int)storage->device.index, (int)comm->device->index);
    return CBLOB_OK;
}

/* Where a listed blob's part lives: blobs sorted by place put a duplicate or an overlap next to
 * each other, so a list of a whole net's blobs is checked in O(n log n) on every collective (every
 * pair of a 1,000-blob list costs about a millisecond per call). */
typedef struct listed_blob {
    uintptr_t storage;
    size_t begin, end;
    uintptr_t blob;
    int64_t index;
} listed_blob;

static int by_place(const void *a, const void *b)
{
    const listed_blob *x = a, *y = b;
    if (x->storage != y->storage)
        return x->storage < y->storage ? -1 : 1;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->blob != y->blob)
        return x->blob < y->blob ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static cblob_status overlap_failure(cblob_part part, int64_t a, int64_t b)
{
    return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "the %s of blobs[%" PRId64 "] and blobs[%" PRId64 "] overlap",
                   part_name(part), a < b ? a : b, a < b ? b : a);
}

/* Sorted by place: the same blob twice, then parts that overlap (empty ones overlap nothing). */
static cblob_status check_places(const listed_blob *sorted, int64_t count, cblob_part part)
{
    size_t reach = 0;      /* the furthest end so far in this storage ... */
    int64_t reacher = -1;  /* ... and whose */
    for (int64_t k = 0; k < count; ++k) {
        const listed_blob *b = &sorted[k];
        if (k > 0 && b->blob == sorted[k - 1].blob) {
            const int64_t first = sorted[k - 1].index;
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "blobs[%" PRId64 "] is blobs[%" PRId64 "] again",
                           b->index > first ? b->index : first, b->index > first ? first : b->index);
        }
        if (k == 0 || b->storage != sorted[k - 1].storage) {
            reach = 0;
            reacher = -1;
        }
        if (b->end == b->begin)
            continue;
        if (reacher >= 0 && b->begin < reach)
            return overlap_failure(part, reacher, b->index);
        if (b->end > reach) {
            reach = b->end;
            reacher = b->index;
        }
    }
    return CBLOB_OK;
}

static int by_blob(const void *a, const void *b)
{
    const listed_blob *x = a, *y = b;
    return x->blob < y->blob ? -1 : x->blob > y->blob;
}

/* An arena listed with one of its current members: the same memory under another storage. */
static cblob_status check_arenas(cblob_blob *const *blobs, const listed_blob *by_handle, int64_t count,
                                 cblob_part part)
{
    for (int64_t i = 0; i < count; ++i)
        for (int64_t m = 0; m < cb_param_arena_count(blobs[i]); ++m) {
            const listed_blob key = {.blob = (uintptr_t)cb_param_arena_current_member(blobs[i], m)};
            const listed_blob *found =
                key.blob != 0 ? bsearch(&key, by_handle, (size_t)count, sizeof *by_handle, by_blob) : NULL;
            if (found != NULL)
                return overlap_failure(part, found->index, i);
        }
    return CBLOB_OK;
}

/* Blobs listed once, not overlapping, and no arena listed with one of its members. */
static cblob_status check_disjoint(cblob_blob *const *blobs, int64_t count, cblob_part part)
{
    if (count < 2)
        return CBLOB_OK;
    listed_blob *listed = cb_malloc((size_t)count * sizeof *listed);
    if (listed == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to check a list of %" PRId64 " blobs", count);
    for (int64_t i = 0; i < count; ++i) {
        const cblob_blob *blob = blobs[i];
        const size_t bytes = blob->shape.count > 0 ? cb_blob_bytes(blob) : 0;
        listed[i] = (listed_blob){(uintptr_t)blob->storage[part], blob->offset_bytes, blob->offset_bytes + bytes,
                                  (uintptr_t)blob, i};
    }
    qsort(listed, (size_t)count, sizeof *listed, by_place);
    cblob_status status = check_places(listed, count, part);
    if (status == CBLOB_OK) {
        qsort(listed, (size_t)count, sizeof *listed, by_blob);
        status = check_arenas(blobs, listed, count, part);
    }
    free(listed);
    return status;
}

static cblob_status check_list(const cblob_comm *comm, cblob_blob *const *blobs, int64_t count, cblob_part part,
                               cb_collective kind, cblob_reduce_op op)
{
    CB_TRY(cb_check_blob_array("blobs", blobs, count));
    CB_TRY(cb_check_part(part));
    if (kind == CB_ALLREDUCE && op != CBLOB_REDUCE_SUM && op != CBLOB_REDUCE_AVERAGE)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "op %" PRId32 " is not a cblob_reduce_op value", (int32_t)op);
    for (int64_t i = 0; i < count; ++i) {
        CB_TRY(check_dtype(comm, blobs[i], i, kind, op));
        CB_TRY(check_device(comm, blobs[i], i, part));
    }
    return check_disjoint(blobs, count, part);
}

/* ---- engine calls ------------------------------------------------------------------------ */

static cblob_status start_call(cblob_comm_request *request, cb_engine_call *call, char *message)
{
    const cblob_comm_engine *engine = &request->comm->engine;
    switch (request->kind) {
    case CB_ALLREDUCE:
        return engine->allreduce_sum(engine->state, call->buffer, call->elements, call->dtype->dtype, &call->pending,
                                     message, CBLOB_COMM_MESSAGE_BYTES);
    case CB_BROADCAST:
        return engine->broadcast(engine->state, call->buffer, call->elements, call->dtype->dtype, request->root,
                                 &call->pending, message, CBLOB_COMM_MESSAGE_BYTES);
    case CB_BARRIER:
        return engine->barrier(engine->state, &call->pending, message, CBLOB_COMM_MESSAGE_BYTES);
    }
    return cb_fail(CBLOB_ERR_INTERNAL, "unknown collective %d", (int)request->kind);
}

static int64_t now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Waits for every started call, in order, within the communicator's timeout. Once the
 * communicator is broken (by this request or an earlier one) the calls are only handed back to
 * the engine (timeout 0), as its contract asks, and the request fails. */
static cblob_status wait_calls(cblob_comm_request *request)
{
    cblob_comm *comm = request->comm;
    const int64_t deadline = comm->timeout_ms < 0 ? -1 : now_ms() + comm->timeout_ms;
    cblob_status status = check_usable(comm);
    for (int64_t i = 0; i < request->num_calls; ++i) {
        cb_engine_call *call = &request->calls[i];
        if (!call->started)
            continue;
        call->started = false;
        char message[CBLOB_COMM_MESSAGE_BYTES] = "";
        const int64_t left = comm->broken ? 0 : deadline < 0 ? -1 : deadline > now_ms() ? deadline - now_ms() : 0;
        const cblob_status waited = comm->engine.wait(comm->engine.state, call->pending, left, message, sizeof message);
        if (waited != CBLOB_OK && status == CBLOB_OK)
            status = cb_comm_engine_failed(comm, waited, message);
    }
    return status;
}

/* ---- buckets ----------------------------------------------------------------------------- */

static void close_bucket(cblob_comm_request *request, cb_engine_call *call)
{
    call->fused = call->end - call->first > 1;
    if (call->fused) {
        call->bucket_offset = (request->bucket_size + CB_BUCKET_ALIGNMENT - 1) & ~(size_t)(CB_BUCKET_ALIGNMENT - 1);
        request->bucket_size = call->bucket_offset + (size_t)call->elements * call->dtype->size;
    }
    ++request->num_calls;
}

/* Cuts the blobs into engine calls: consecutive blobs of one dtype while they fit in a bucket;
 * a bucket of one blob is that blob in place. */
static void plan_calls(cblob_comm_request *request, int64_t bucket_bytes)
{
    cb_engine_call *open = NULL;
    for (int64_t i = 0; i < request->count; ++i) {
        const cblob_blob *blob = request->blobs[i];
        const int64_t bytes = (int64_t)cb_blob_bytes(blob);
        const bool joins = open != NULL && open->dtype == blob->dtype &&
                           (open->elements * (int64_t)open->dtype->size) + bytes <= bucket_bytes;
        if (!joins) {
            if (open != NULL)
                close_bucket(request, open);
            open = &request->calls[request->num_calls];
            *open = (cb_engine_call){.first = i, .end = i, .dtype = blob->dtype};
        }
        open->end = i + 1;
        open->elements += blob->shape.count;
    }
    if (open != NULL)
        close_bucket(request, open);
}

static cblob_status bucket_alloc(cblob_comm_request *request)
{
    if (request->bucket_size == 0)
        return CBLOB_OK;
    const cb_device *device = request->comm->device;
    return device->backend->memory->alloc(device, request->bucket_size, false, &request->bucket);
}

static void bucket_free(cblob_comm_request *request)
{
    if (request->bucket == NULL)
        return;
    const cb_device *device = request->comm->device;
    device->backend->memory->free(device, request->bucket, request->bucket_size);
    request->bucket = NULL;
}

/* Copies between a blob's engine-side memory and its place in a bucket. */
static cblob_status move_bytes(const cblob_comm *comm, void *to, const void *from, size_t bytes)
{
    return comm->device->backend->memory->copy(comm->device, to, from, bytes, CB_COPY_DEVICE_TO_DEVICE);
}

static cblob_status copy_bucket(cblob_comm_request *request, const cb_engine_call *call, bool into_bucket)
{
    char *slot = call->buffer;
    for (int64_t b = call->first; b < call->end; ++b) {
        const size_t bytes = cb_blob_bytes(request->blobs[b]);
        CB_TRY(into_bucket ? move_bytes(request->comm, slot, request->memory[b], bytes)
                           : move_bytes(request->comm, request->memory[b], slot, bytes));
        slot += bytes;
    }
    return CBLOB_OK;
}

/* ---- requests ---------------------------------------------------------------------------- */

/* Frees what the request holds; cblob_comm_free_parked calls it, without the comm hold. */
static void request_free_memory(cblob_comm_request *request)
{
    bucket_free(request);
    for (int64_t i = 0; i < request->count; ++i)
        cb_blob_release(request->blobs[i]);
    free(request->blobs);
    free(request->memory);
    free(request->calls);
    free(request);
}

/* A request whose engine failed after being given memory is parked in the communicator until the
 * engine is destroyed: a failed engine (an MPI collective that timed out, a peer that turns up
 * late) may still write into the bucket or the blobs, so they stay allocated until then. */
static void request_free(cblob_comm_request *request)
{
    cblob_comm *comm = request->comm;
    if (request->status != CBLOB_OK && request->engine_had_memory) {
        request->next_parked = comm->parked;
        comm->parked = request;
    } else {
        request_free_memory(request);
    }
    cb_comm_release(comm);
}

void cb_comm_free_parked(cblob_comm *comm)
{
    while (comm->parked != NULL) {
        cblob_comm_request *request = comm->parked;
        comm->parked = request->next_parked;
        request_free_memory(request);
    }
}

static cblob_status request_new(cblob_comm *comm, cb_collective kind, cblob_blob *const *blobs, int64_t count,
                                cblob_comm_request **out)
{
    cblob_comm_request *request = cb_calloc(1, sizeof *request);
    const size_t slots = (size_t)(count > 0 ? count : 1);
    if (request != NULL) {
        request->blobs = cb_calloc(slots, sizeof *request->blobs);
        request->memory = cb_calloc(slots, sizeof *request->memory);
        request->calls = cb_calloc(slots, sizeof *request->calls);
    }
    if (request == NULL || request->blobs == NULL || request->memory == NULL || request->calls == NULL) {
        if (request != NULL) {
            free(request->blobs);
            free(request->memory);
            free(request->calls);
        }
        free(request);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a request of %" PRId64 " blobs", count);
    }
    atomic_fetch_add(&comm->holders, 1);
    request->comm = comm;
    request->kind = kind;
    for (int64_t i = 0; i < count; ++i)
        if (blobs[i]->shape.count > 0) {
            cb_blob_retain(blobs[i]);
            request->blobs[request->count++] = blobs[i];
        }
    *out = request;
    return CBLOB_OK;
}

/* Each blob's memory on the engine's side, its arena's members gathered into it first. The root
 * of a broadcast only reads. */
static cblob_status find_memory(cblob_comm_request *request)
{
    const cblob_comm *comm = request->comm;
    const bool writable = !(request->kind == CB_BROADCAST && request->root == comm->engine.rank);
    for (int64_t i = 0; i < request->count; ++i) {
        cblob_blob *blob = request->blobs[i];
        CB_TRY(cb_param_arena_gather(blob, request->part));
        CB_TRY(cb_blob_at(blob, request->part, comm->device, writable, &request->memory[i]));
    }
    return CBLOB_OK;
}

static cblob_status prepare_calls(cblob_comm_request *request)
{
    CB_TRY(find_memory(request));
    CB_TRY(bucket_alloc(request));
    for (int64_t i = 0; i < request->num_calls; ++i) {
        cb_engine_call *call = &request->calls[i];
        if (call->fused) {
            call->buffer = (char *)request->bucket + call->bucket_offset;
            CB_TRY(copy_bucket(request, call, true));
        } else if (request->kind != CB_BARRIER) {
            call->buffer = request->memory[call->first];
        }
    }
    /* An engine that knows no stream gets memory whose queued writes have finished. */
    const cb_device *device = request->comm->device;
    if (device->backend->queue != NULL && !request->comm->stream_ordered)
        CB_TRY(device->backend->queue->synchronize(device));
    return CBLOB_OK;
}

static cblob_status start_calls(cblob_comm_request *request)
{
    for (int64_t i = 0; i < request->num_calls; ++i) {
        cb_engine_call *call = &request->calls[i];
        char message[CBLOB_COMM_MESSAGE_BYTES] = "";
        const cblob_status status = start_call(request, call, message);
        if (status != CBLOB_OK) {
            const cblob_status failed = cb_comm_engine_failed(request->comm, status, message);
            cb_saved_error saved;
            cb_error_save(&saved);
            wait_calls(request);
            cb_error_restore(&saved);
            return failed;
        }
        call->started = true;
        request->engine_had_memory = true;
    }
    return CBLOB_OK;
}

/* This rank's part of a collective, ready to start: arguments checked, the list cut into engine
 * calls, buckets filled. With the agreement, a barrier needs no engine call of its own: the
 * agreement's all-reduce completes on no rank before every rank has joined it. */
static cblob_status prepare(cblob_comm *comm, cb_collective kind, cblob_blob *const *blobs, int64_t count,
                            cblob_part part, cblob_reduce_op op, int32_t root, cblob_comm_request **out_request)
{
    if (kind != CB_BARRIER)
        CB_TRY(check_list(comm, blobs, count, part, kind, op));
    if (kind == CB_BROADCAST && (root < 0 || root >= comm->engine.size))
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "root %" PRId32 " is outside 0..%" PRId32, root, comm->engine.size - 1);
    cblob_comm_request *request = NULL;
    CB_TRY(request_new(comm, kind, blobs, count, &request));
    request->part = part;
    request->op = op;
    request->root = root;
    if (kind == CB_BARRIER)
        request->num_calls = cb_agreement_active(comm) ? 0 : 1;
    else
        plan_calls(request, comm->bucket_bytes);
    cb_context_use_threads(comm->context);
    const cblob_status status = prepare_calls(request);
    if (status != CBLOB_OK) {
        request->status = status;
        request_free(request);
        return status;
    }
    *out_request = request;
    return CBLOB_OK;
}

/* Prepares, then agrees with the other ranks (a rank that could not prepare takes part too, so
 * that every rank fails), and only then hands the engine any data. */
static cblob_status start(cblob_comm *comm, cb_collective kind, cblob_blob *const *blobs, int64_t count,
                          cblob_part part, cblob_reduce_op op, int32_t root, cblob_comm_request **out_request)
{
    CB_REQUIRE(comm);
    CB_TRY(check_usable(comm));
    cblob_comm_request *request = NULL;
    const cblob_status prepared = out_request == NULL ? cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "out_request is NULL")
                                                      : prepare(comm, kind, blobs, count, part, op, root, &request);
    const cb_signature mine = {kind, prepared, op, root, part, comm->bucket_bytes, blobs, count};
    cblob_status status = cb_agree(comm, &mine);
    if (status == CBLOB_OK)
        status = start_calls(request);
    if (status != CBLOB_OK) {
        if (request != NULL) {
            request->status = status;
            request_free(request);
        }
        return status;
    }
    *out_request = request;
    return CBLOB_OK;
}

/* ---- finishing --------------------------------------------------------------------------- */

static cblob_status scale(const cblob_comm_request *request, const cb_dtype_info *dtype, int64_t n, void *x)
{
    const double alpha = 1.0 / (double)request->comm->engine.size;
    return cb_run_scale(request->comm->device, dtype->dtype, n, alpha, x);
}

/* After the engine: averages scaled, buckets copied back, arenas' members marked current. */
static cblob_status finish_calls(cblob_comm_request *request)
{
    const bool average = request->kind == CB_ALLREDUCE && request->op == CBLOB_REDUCE_AVERAGE;
    for (int64_t i = 0; i < request->num_calls; ++i) {
        const cb_engine_call *call = &request->calls[i];
        if (average && request->comm->engine.size > 1)
            CB_TRY(scale(request, call->dtype, call->elements, call->buffer));
        if (call->fused)
            CB_TRY(copy_bucket(request, call, false));
    }
    for (int64_t i = 0; i < request->count; ++i)
        CB_TRY(cb_param_arena_scatter(request->blobs[i], request->part));
    return CBLOB_OK;
}

static cblob_status finish(cblob_comm_request *request)
{
    cb_context_use_threads(request->comm->context);
    cblob_status status = wait_calls(request);
    if (status == CBLOB_OK)
        status = finish_calls(request);
    if (status == CBLOB_OK)
        bucket_free(request);
    request->finished = true;
    request->status = status;
    if (status != CBLOB_OK)
        snprintf(request->message, sizeof request->message, "%s", cb_last_error_message());
    return status;
}

/* ---- entry points ------------------------------------------------------------------------ */

CBLOB_API cblob_status cblob_comm_allreduce_start(cblob_comm *comm, cblob_blob *const *blobs, int64_t count,
                                                  cblob_part part, cblob_reduce_op op, cblob_comm_request **out_request)
{
    CB_ENTER();
    return start(comm, CB_ALLREDUCE, blobs, count, part, op, 0, out_request);
}

CBLOB_API cblob_status cblob_comm_broadcast_start(cblob_comm *comm, cblob_blob *const *blobs, int64_t count,
                                                  cblob_part part, int32_t root, cblob_comm_request **out_request)
{
    CB_ENTER();
    return start(comm, CB_BROADCAST, blobs, count, part, CBLOB_REDUCE_SUM, root, out_request);
}

CBLOB_API cblob_status cblob_comm_barrier_start(cblob_comm *comm, cblob_comm_request **out_request)
{
    CB_ENTER();
    return start(comm, CB_BARRIER, NULL, 0, CBLOB_PART_DATA, CBLOB_REDUCE_SUM, 0, out_request);
}

CBLOB_API cblob_status cblob_comm_request_wait(cblob_comm_request *request)
{
    CB_ENTER();
    CB_REQUIRE(request);
    if (!request->finished)
        return finish(request);
    if (request->status != CBLOB_OK)
        return cb_fail(request->status, "the collective failed before: %s", request->message);
    return CBLOB_OK;
}

CBLOB_API void cblob_comm_request_destroy(cblob_comm_request *request)
{
    if (request == NULL)
        return;
    if (!request->finished) {
        cb_saved_error saved;
        cb_error_save(&saved);
        finish(request);
        cb_error_restore(&saved);
    }
    request_free(request);
}

/* The blocking forms: start, then wait, with the message of whichever failed. */
static cblob_status run(cblob_status started, cblob_comm_request **started_request)
{
    if (started != CBLOB_OK)
        return started;
    cblob_comm_request *request = *started_request;
    const cblob_status status = finish(request);
    request_free(request);
    return status;
}

CBLOB_API cblob_status cblob_comm_allreduce(cblob_comm *comm, cblob_blob *const *blobs, int64_t count, cblob_part part,
                                            cblob_reduce_op op)
{
    CB_ENTER();
    cblob_comm_request *request = NULL;
    return run(start(comm, CB_ALLREDUCE, blobs, count, part, op, 0, &request), &request);
}

CBLOB_API cblob_status cblob_comm_broadcast(cblob_comm *comm, cblob_blob *const *blobs, int64_t count, cblob_part part,
                                            int32_t root)
{
    CB_ENTER();
    cblob_comm_request *request = NULL;
    return run(start(comm, CB_BROADCAST, blobs, count, part, CBLOB_REDUCE_SUM, root, &request), &request);
}

CBLOB_API cblob_status cblob_comm_barrier(cblob_comm *comm)
{
    CB_ENTER();
    cblob_comm_request *request = NULL;
    return run(start(comm, CB_BARRIER, NULL, 0, CBLOB_PART_DATA, CBLOB_REDUCE_SUM, 0, &request), &request);
}
