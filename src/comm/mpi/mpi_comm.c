/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_comm_create_mpi: the MPI engine (mpi_engine.c) handed to cblob_comm_create; and
 * cblob_comm_create_nccl_mpi: an NCCL communicator whose unique id travels over MPI. */
#include "cblob/mpi.h"

#include <stdio.h>
#include <string.h>

#include "mpi_engine.h"
#include "status.h"

#define CBM_EXPORT __attribute__((visibility("default")))

/* libcblob_mpi's failures go through the one error core of src/util (its own copy: a library of
 * its own cannot set libcblob's message), named by the function called as libcblob's are. */
CBM_EXPORT const char *cblob_mpi_last_error_message(void)
{
    return cb_last_error_message();
}

CBM_EXPORT cblob_status cblob_comm_create_mpi(cblob_context *context, MPI_Comm comm, cblob_comm **out_comm)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_comm);
    char message[CBLOB_COMM_MESSAGE_BYTES] = "";
    cbm_engine *engine;
    const cblob_status created = cbm_engine_create(comm, &engine, message, sizeof message);
    if (created != CBLOB_OK)
        return cb_fail(created, "%s", message);
    const cblob_comm_engine table = {
        .struct_size = sizeof table,
        .name = "mpi",
        .rank = cbm_engine_rank(engine),
        .size = cbm_engine_size(engine),
        .memory = CBLOB_MEMORY_HOST,
        .dtypes = cbm_engine_dtypes(),
        .state = engine,
        .allreduce_sum = cbm_allreduce_sum,
        .broadcast = cbm_broadcast,
        .barrier = cbm_barrier,
        .wait = cbm_wait,
        .destroy = cbm_engine_destroy,
    };
    const cblob_status status = cblob_comm_create(context, &table, out_comm);
    if (status != CBLOB_OK) {
        /* The engine stays ours when cblob refuses it. */
        cbm_engine_destroy(engine);
        return cb_fail(status, "%s", cblob_last_error_detail());
    }
    return CBLOB_OK;
}

/* Rank 0's status and unique id, broadcast together so that the other ranks learn of a failure
 * instead of waiting for an id that never comes. */
typedef struct nccl_id_message {
    int32_t status;
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
} nccl_id_message;

static cblob_status share_nccl_id(MPI_Comm comm, int32_t *out_rank, int32_t *out_size, nccl_id_message *shared)
{
    char message[CBLOB_COMM_MESSAGE_BYTES] = "";
    cbm_engine *engine;
    cblob_status status = cbm_engine_create(comm, &engine, message, sizeof message);
    if (status != CBLOB_OK)
        return cb_fail(status, "%s", message);
    *out_rank = cbm_engine_rank(engine);
    *out_size = cbm_engine_size(engine);
    memset(shared, 0, sizeof *shared);
    char id_message[CBLOB_COMM_MESSAGE_BYTES] = "";
    if (*out_rank == 0) {
        shared->status = cblob_comm_nccl_unique_id(shared->id, sizeof shared->id);
        snprintf(id_message, sizeof id_message, "%s", cblob_last_error_detail());
    }
    void *pending = NULL;
    status = cbm_broadcast(engine, shared, (int64_t)sizeof *shared / 4, CBLOB_DTYPE_INT32, 0, &pending, message,
                           sizeof message);
    if (status == CBLOB_OK)
        status = cbm_wait(engine, pending, -1, message, sizeof message);
    cbm_engine_destroy(engine);
    if (status != CBLOB_OK)
        return cb_fail(status, "sending the NCCL unique id: %s", message);
    if (shared->status != CBLOB_OK)
        return *out_rank == 0 ? cb_fail(shared->status, "making the NCCL unique id: %s", id_message)
                              : cb_fail(shared->status, "rank 0 could not make the NCCL unique id (%s)",
                                        cblob_status_name(shared->status));
    return CBLOB_OK;
}

CBM_EXPORT cblob_status cblob_comm_create_nccl_mpi(cblob_context *context, MPI_Comm comm, cblob_comm **out_comm)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_comm);
    nccl_id_message shared;
    int32_t rank = 0, size = 0;
    const cblob_status shared_status = share_nccl_id(comm, &rank, &size, &shared);
    if (shared_status != CBLOB_OK)
        return shared_status;
    const cblob_status status = cblob_comm_create_nccl(context, shared.id, size, rank, out_comm);
    if (status != CBLOB_OK)
        return cb_fail(status, "%s", cblob_last_error_detail());
    return CBLOB_OK;
}
