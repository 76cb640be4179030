/* SPDX-License-Identifier: BSD-2-Clause */
/* NCCL communicators: the public calls, over the device backend's NCCL engine (cuda/cuda_nccl.c).
 * Arguments are checked before the GPU is looked for, then the GPU stack, then NCCL, so each
 * missing piece has its own status. */
#include <inttypes.h>

#include "comm/comm.h"
#include "status.h"

static cblob_status nccl_backend(const cb_backend **out)
{
    const cb_backend *backend = cb_gpu_backend();
    if (backend == NULL || backend->collectives == NULL)
        return cb_fail(CBLOB_ERR_NO_DRIVER, "this build of cblob has no GPU backend");
    int32_t devices = 0;
    CB_TRY(backend->device->probe(&devices));
    *out = backend;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_comm_nccl_unique_id(uint8_t *out_id, size_t id_size)
{
    CB_ENTER();
    CB_REQUIRE(out_id);
    if (id_size < CBLOB_NCCL_UNIQUE_ID_BYTES)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "id_size is %zu; a unique id takes %d bytes", id_size,
                       CBLOB_NCCL_UNIQUE_ID_BYTES);
    const cb_backend *backend = NULL;
    CB_TRY(nccl_backend(&backend));
    return backend->collectives->unique_id(out_id);
}

CBLOB_API cblob_status cblob_comm_create_nccl(cblob_context *context, const uint8_t *unique_id, int32_t nranks,
                                              int32_t rank, cblob_comm **out_comm)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(unique_id);
    CB_REQUIRE(out_comm);
    if (nranks < 1)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "nranks is %" PRId32 "; a communicator has at least one rank", nranks);
    if (rank < 0 || rank >= nranks)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "rank %" PRId32 " is outside 0..%" PRId32, rank, nranks - 1);
    const cb_backend *backend = NULL;
    CB_TRY(nccl_backend(&backend));
    const cb_device *device = NULL;
    CB_TRY(cb_context_device(context, &device));
    cblob_comm_engine engine;
    CB_TRY(backend->collectives->engine(device, unique_id, nranks, rank, &engine));
    const cblob_status status = cb_comm_create_engine(context, &engine, true, out_comm);
    if (status != CBLOB_OK)
        engine.destroy(engine.state);
    return status;
}
