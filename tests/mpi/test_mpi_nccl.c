/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_comm_create_nccl_mpi on the GPU doubles (tests/fake_cuda): the unique id made on rank 0
 * travels over MPI and the NCCL communicator works. The double's NCCL runs one rank per
 * communicator, so this runs on one rank; several ranks need several GPUs. */
#include "mpi_support.h"

TEST(an_nccl_communicator_is_made_with_the_id_sent_over_mpi)
{
    cblob_context *context;
    CHECK_OK(cblob_context_create(&context));
    CHECK_OK(cblob_context_set_mode(context, CBLOB_MODE_GPU));
    cblob_comm *comm = NULL;
    CHECK_MSG(cblob_comm_create_nccl_mpi(context, MPI_COMM_WORLD, &comm) == CBLOB_OK, "%s",
              cblob_mpi_last_error_message());
    int32_t rank = -1, size = -1;
    CHECK_OK(cblob_comm_rank(comm, &rank));
    CHECK_OK(cblob_comm_size(comm, &size));
    CHECK_EQ_INT(rank, world_rank());
    CHECK_EQ_INT(size, world_size());
    /* A collective through NCCL, on device memory: a sum over one rank is the rank's values. */
    cblob_blob *blob = new_blob(context, CBLOB_DTYPE_FLOAT32, 1000);
    CHECK(blob != NULL);
    float values[1000], got[1000];
    rank_values(CBLOB_DTYPE_FLOAT32, 0, 1000, 8, values);
    CHECK_OK(cblob_blob_copy_in(blob, CBLOB_PART_DIFF, CBLOB_DTYPE_FLOAT32, values, 1000));
    CHECK_OK(cblob_comm_allreduce(comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    CHECK_OK(cblob_blob_copy_out(blob, CBLOB_PART_DIFF, CBLOB_DTYPE_FLOAT32, got, 1000));
    CHECK(memcmp(values, got, sizeof got) == 0);
    cblob_blob_destroy(blob);
    cblob_comm_destroy(comm);
    cblob_context_destroy(context);
}
