/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_comm_create_nccl_mpi where NCCL cannot be loaded: rank 0 cannot make the unique id, and
 * every rank gets its status (CBLOB_ERR_NCCL_MISSING) instead of waiting for an id. */
#include "mpi_support.h"

TEST(without_nccl_every_rank_gets_rank_0s_status)
{
    cblob_context *context;
    CHECK_OK(cblob_context_create(&context));
    CHECK_OK(cblob_context_set_mode(context, CBLOB_MODE_GPU));
    cblob_comm *comm = NULL;
    const double start = seconds_now();
    CHECK_STATUS(cblob_comm_create_nccl_mpi(context, MPI_COMM_WORLD, &comm), CBLOB_ERR_NCCL_MISSING);
    CHECK(comm == NULL);
    CHECK(seconds_now() - start < 10);
    const char *message = cblob_mpi_last_error_message();
    if (world_rank() == 0)
        CHECK_MSG(strstr(message, "cblob_comm_create_nccl_mpi: making the NCCL unique id: no NCCL") != NULL,
                  "message: %s", message);
    else
        CHECK_MSG(strstr(message, "rank 0 could not make the NCCL unique id (CBLOB_ERR_NCCL_MISSING)") != NULL,
                  "message: %s", message);
    cblob_context_destroy(context);
}
