/* SPDX-License-Identifier: BSD-2-Clause */
/* Communicators: the engine table, checked and copied, and the settings collectives follow. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "alloc.h"
#include "status.h"

/* The ABI 1.1 table: every field up to and including destroy. */
#define CB_ENGINE_SIZE_1_1 (offsetof(cblob_comm_engine, destroy) + sizeof(cblob_comm_destroy_fn))

static cblob_status check_engine(const cblob_comm_engine *engine)
{
    if (engine->struct_size < CB_ENGINE_SIZE_1_1)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "engine->struct_size is %zu; the ABI 1.1 table has %zu bytes",
                       engine->struct_size, (size_t)CB_ENGINE_SIZE_1_1);
    const char *missing = engine->name == NULL            ? "name"
                          : engine->allreduce_sum == NULL ? "allreduce_sum"
                          : engine->broadcast == NULL     ? "broadcast"
                          : engine->barrier == NULL       ? "barrier"
                          : engine->wait == NULL          ? "wait"
                                                          : NULL;
    if (missing != NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "engine->%s is NULL", missing);
    if (engine->size < 1)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "engine->size is %" PRId32 "; a communicator has at least one rank",
                       engine->size);
    if (engine->rank < 0 || engine->rank >= engine->size)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "engine->rank is %" PRId32 ", outside 0..%" PRId32, engine->rank,
                       engine->size - 1);
    if (engine->memory != CBLOB_MEMORY_HOST && engine->memory != CBLOB_MEMORY_DEVICE)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "engine->memory %" PRId32 " is not a cblob_memory value",
                       (int32_t)engine->memory);
    return CBLOB_OK;
}

cblob_status cb_comm_create_engine(cblob_context *context, const cblob_comm_engine *engine, bool stream_ordered,
                                   cblob_comm **out)
{
    CB_REQUIRE(context);
    CB_REQUIRE(engine);
    CB_REQUIRE(out);
    CB_TRY(check_engine(engine));
    const cb_device *device = &cb_host_device;
    if (engine->memory == CBLOB_MEMORY_DEVICE)
        CB_TRY(cb_context_device(context, &device));
    cblob_comm *comm = cb_calloc(1, sizeof *comm);
    if (comm == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a communicator");
    atomic_init(&comm->holders, 1);
    cb_context_retain(context);
    comm->context = context;
    memcpy(&comm->engine, engine, CB_ENGINE_SIZE_1_1);
    comm->engine.struct_size = sizeof comm->engine;
    snprintf(comm->name_copy, sizeof comm->name_copy, "%s", engine->name);
    comm->engine.name = comm->name_copy;
    comm->device = device;
    comm->stream_ordered = stream_ordered;
    comm->timeout_ms = -1;
    comm->bucket_bytes = CBLOB_COMM_DEFAULT_BUCKET_BYTES;
    comm->check_agreement = true;
    const cblob_status agreement = cb_agreement_open(comm);
    if (agreement != CBLOB_OK) {
        cb_context_release(context);
        free(comm);
        return agreement;
    }
    *out = comm;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_comm_create(cblob_context *context, const cblob_comm_engine *engine, cblob_comm **out_comm)
{
    CB_ENTER();
    return cb_comm_create_engine(context, engine, false, out_comm);
}

/* A status an engine may give; anything else it returns is reported as CBLOB_ERR_COMM. */
static cblob_status engine_status(cblob_status status)
{
    switch (status) {
    case CBLOB_ERR_COMM:
    case CBLOB_ERR_TIMEOUT:
    case CBLOB_ERR_OUT_OF_MEMORY:
    case CBLOB_ERR_DEVICE:
    case CBLOB_ERR_DEVICE_LOST:
    case CBLOB_ERR_DEVICE_OUT_OF_MEMORY:
        return status;
    default:
        return CBLOB_ERR_COMM;
    }
}

cblob_status cb_comm_engine_failed(cblob_comm *comm, cblob_status status, char *message)
{
    message[CBLOB_COMM_MESSAGE_BYTES - 1] = '\0';
    status = engine_status(status);
    comm->broken = true;
    snprintf(comm->broken_message, sizeof comm->broken_message, "engine \"%s\": %s: %s", comm->engine.name,
             cblob_status_name(status), message[0] != '\0' ? message : "the engine gave no message");
    return cb_fail(status, "%s", comm->broken_message);
}

void cb_comm_release(cblob_comm *comm)
{
    if (comm == NULL || atomic_fetch_sub_explicit(&comm->holders, 1, memory_order_acq_rel) != 1)
        return;
    if (comm->engine.destroy != NULL)
        comm->engine.destroy(comm->engine.state);
    cb_comm_free_parked(comm);
    cb_agreement_close(comm);
    cb_context_release(comm->context);
    free(comm);
}

CBLOB_API void cblob_comm_destroy(cblob_comm *comm)
{
    cb_comm_release(comm);
}

CBLOB_API cblob_status cblob_comm_rank(cblob_comm *comm, int32_t *out_rank)
{
    CB_ENTER();
    CB_REQUIRE(comm);
    CB_REQUIRE(out_rank);
    *out_rank = comm->engine.rank;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_comm_size(cblob_comm *comm, int32_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(comm);
    CB_REQUIRE(out_size);
    *out_size = comm->engine.size;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_comm_set_timeout(cblob_comm *comm, int64_t timeout_ms)
{
    CB_ENTER();
    CB_REQUIRE(comm);
    if (timeout_ms < -1)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "timeout_ms is %" PRId64 "; it is -1 (none) or at least 0",
                       timeout_ms);
    comm->timeout_ms = timeout_ms;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_comm_set_bucket_bytes(cblob_comm *comm, int64_t bucket_bytes)
{
    CB_ENTER();
    CB_REQUIRE(comm);
    if (bucket_bytes < 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "bucket_bytes is %" PRId64 "; it cannot be negative", bucket_bytes);
    comm->bucket_bytes = bucket_bytes;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_comm_set_agreement_check(cblob_comm *comm, int32_t check)
{
    CB_ENTER();
    CB_REQUIRE(comm);
    CB_TRY(cb_check_bool("check", check));
    comm->check_agreement = check != 0;
    return CBLOB_OK;
}
