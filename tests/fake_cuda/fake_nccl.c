/* SPDX-License-Identifier: BSD-2-Clause */
/* A test double of NCCL (built as libnccl.so.2, for tests only), over the fake driver: one rank
 * per communicator (a sum or broadcast over one rank leaves the buffer as it is), with every
 * collective queued on its stream like a kernel, so it runs in the double's order and is checked
 * against freed and handed-back memory. What it checks: a unique id it made, a current context,
 * device memory, a count within the buffer's allocation. CBLOB_FAKE_NCCL_FAIL makes one thing
 * fail: "init" (ncclCommInitRank), "collective" (ncclAllReduce and ncclBroadcast), "async"
 * (ncclCommGetAsyncError reports a remote error, as when a peer died, and the collectives queued
 * meanwhile never finish, as they wait for that peer, until the communicator is aborted). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "fake_cuda_internal.h"

#define NCCL_SYSTEM_ERROR 2
#define NCCL_INVALID_ARGUMENT 4
#define NCCL_INVALID_USAGE 5
#define NCCL_REMOTE_ERROR 6

static const char magic[] = "fake-nccl-unique-id";

struct ncclComm {
    int nranks;
    int hung;      /* a peer died: queued collectives cannot start until the abort */
    int held;      /* collectives queued and not run yet */
    bool released; /* destroyed or aborted: freed once no queued collective names it */
};

static void release(cbnc_comm comm)
{
    comm->hung = 0; /* an abort ends what waited for the dead peer */
    comm->released = true;
    if (comm->held == 0)
        free(comm);
}

static bool failing(const char *what)
{
    const char *fail = getenv("CBLOB_FAKE_NCCL_FAIL");
    return fail != NULL && strcmp(fail, what) == 0;
}

FAKE_API cbnc_result ncclGetVersion(int *version)
{
    *version = 22800;
    return CBNC_SUCCESS;
}

FAKE_API const char *ncclGetErrorString(cbnc_result result)
{
    switch (result) {
    case CBNC_SUCCESS: return "no error";
    case NCCL_SYSTEM_ERROR: return "unhandled system error (fake)";
    case NCCL_INVALID_ARGUMENT: return "invalid argument (fake)";
    case NCCL_INVALID_USAGE: return "invalid usage (fake)";
    case NCCL_REMOTE_ERROR: return "remote process exited or there was a network error (fake)";
    default: return "unknown result code (fake)";
    }
}

FAKE_API cbnc_result ncclGetUniqueId(cbnc_unique_id *unique_id)
{
    memset(unique_id, 0, sizeof *unique_id);
    memcpy(unique_id->internal, magic, sizeof magic);
    return CBNC_SUCCESS;
}

FAKE_API cbnc_result ncclCommInitRank(cbnc_comm *comm, int nranks, cbnc_unique_id comm_id, int rank)
{
    if (failing("init"))
        return NCCL_SYSTEM_ERROR;
    if (memcmp(comm_id.internal, magic, sizeof magic) != 0 || rank < 0 || rank >= nranks)
        return NCCL_INVALID_ARGUMENT;
    if (nranks != 1 || !fake_context_current())
        return NCCL_INVALID_USAGE; /* the double runs one rank, on a current context */
    *comm = calloc(1, sizeof **comm);
    (*comm)->nranks = nranks;
    return CBNC_SUCCESS;
}

FAKE_API cbnc_result ncclCommDestroy(cbnc_comm comm)
{
    if (comm->hung)
        return NCCL_INVALID_USAGE; /* NCCL would wait for the dead peer forever: abort it instead */
    release(comm);
    return CBNC_SUCCESS;
}

FAKE_API cbnc_result ncclCommAbort(cbnc_comm comm)
{
    release(comm);
    return CBNC_SUCCESS;
}

FAKE_API cbnc_result ncclCommGetAsyncError(cbnc_comm comm, cbnc_result *async_error)
{
    (void)comm;
    *async_error = failing("async") ? NCCL_REMOTE_ERROR : CBNC_SUCCESS;
    return CBNC_SUCCESS;
}

typedef struct collective {
    uint64_t buffer;
    size_t bytes;
    cbnc_comm comm;
} collective;

/* At its turn on the stream: the buffer must still be device memory (fake_device_range ends the
 * process otherwise); one rank's sum or broadcast is the buffer itself. An aborted one does
 * nothing. */
static int run_collective(void *payload)
{
    const collective *call = payload;
    cbnc_comm comm = call->comm;
    if (!comm->released)
        fake_device_range((const void *)(uintptr_t)call->buffer, call->bytes);
    if (--comm->held == 0 && comm->released)
        free(comm);
    return 0;
}

static size_t datatype_bytes(cbnc_datatype datatype)
{
    return datatype == CBNC_FLOAT64 ? 8 : datatype == CBNC_FLOAT32 || datatype == CBNC_INT32 || datatype == CBNC_UINT32 ? 4 : 0;
}

static cbnc_result queue_collective(const void *sendbuff, void *recvbuff, size_t count, cbnc_datatype datatype,
                                    cbnc_comm comm, cbcu_stream stream)
{
    if (failing("collective"))
        return NCCL_SYSTEM_ERROR;
    if (comm == NULL || datatype_bytes(datatype) == 0 || sendbuff != recvbuff)
        return NCCL_INVALID_ARGUMENT;
    collective *payload = malloc(sizeof *payload);
    *payload = (collective){(uint64_t)(uintptr_t)recvbuff, count * datatype_bytes(datatype), comm};
    const uint64_t addresses[1] = {payload->buffer};
    if (failing("async"))
        comm->hung = 1;
    comm->held++;
    if (fake_queue_held_call(stream, run_collective, payload, addresses, 1, &comm->hung) == 0)
        return CBNC_SUCCESS;
    comm->held--;
    return NCCL_SYSTEM_ERROR;
}

FAKE_API cbnc_result ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, cbnc_datatype datatype,
                                   cbnc_red_op op, cbnc_comm comm, cbcu_stream stream)
{
    if (op != CBNC_SUM)
        return NCCL_INVALID_ARGUMENT;
    return queue_collective(sendbuff, recvbuff, count, datatype, comm, stream);
}

FAKE_API cbnc_result ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, cbnc_datatype datatype, int root,
                                   cbnc_comm comm, cbcu_stream stream)
{
    if (comm == NULL || root < 0 || root >= comm->nranks)
        return NCCL_INVALID_ARGUMENT;
    return queue_collective(sendbuff, recvbuff, count, datatype, comm, stream);
}
