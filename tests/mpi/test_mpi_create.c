/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_comm_create_mpi: ranks from the caller's communicator, a duplicate of it, bad arguments
 * and MPI's state refused with messages. */
#include "mpi_support.h"

TEST(a_communicator_has_the_rank_and_size_of_the_mpi_communicator)
{
    /* Ranks in reverse order and split in two: cblob's ranks are the sub-communicator's. */
    MPI_Comm split;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, world_rank() % 2, -world_rank(), &split) == MPI_SUCCESS);
    int mpi_rank, mpi_size;
    MPI_Comm_rank(split, &mpi_rank);
    MPI_Comm_size(split, &mpi_size);
    cblob_context *context;
    CHECK_OK(cblob_context_create(&context));
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create_mpi(context, split, &comm));
    /* The cblob communicator has its own duplicate: the caller may free its communicator. */
    MPI_Comm_free(&split);
    int32_t rank = -1, size = -1;
    CHECK_OK(cblob_comm_rank(comm, &rank));
    CHECK_OK(cblob_comm_size(comm, &size));
    CHECK_EQ_INT(rank, mpi_rank);
    CHECK_EQ_INT(size, mpi_size);
    /* A sum over the half the rank is in: the sum of the world ranks of that half. */
    cblob_blob *blob = new_blob(context, CBLOB_DTYPE_INT32, 1);
    CHECK(blob != NULL);
    const int32_t mine = world_rank();
    CHECK_OK(cblob_blob_copy_in(blob, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, &mine, 1));
    CHECK_OK(cblob_comm_allreduce(comm, &blob, 1, CBLOB_PART_DATA, CBLOB_REDUCE_SUM));
    int32_t sum = 0, expected = 0;
    CHECK_OK(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, &sum, 1));
    for (int r = world_rank() % 2; r < world_size(); r += 2)
        expected += r;
    CHECK_EQ_INT(sum, expected);
    cblob_blob_destroy(blob);
    cblob_comm_destroy(comm);
    cblob_context_destroy(context);
}

TEST(the_callers_communicator_keeps_its_error_handler)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    MPI_Errhandler handler;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
    CHECK(handler == MPI_ERRORS_ARE_FATAL);
    MPI_Errhandler_free(&handler);
    test_comm_close(&tc);
}

TEST(bad_arguments_are_refused_with_a_message_naming_the_call)
{
    cblob_context *context;
    CHECK_OK(cblob_context_create(&context));
    cblob_comm *untouched = (cblob_comm *)&context;
    cblob_comm *comm = untouched;
    CHECK_STATUS(cblob_comm_create_mpi(NULL, MPI_COMM_WORLD, &comm), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_mpi_last_error_message(), "cblob_comm_create_mpi: context") != NULL);
    CHECK_STATUS(cblob_comm_create_mpi(context, MPI_COMM_WORLD, NULL), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_mpi_last_error_message(), "out_comm") != NULL);
    CHECK_STATUS(cblob_comm_create_mpi(context, MPI_COMM_NULL, &comm), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(cblob_mpi_last_error_message(), "MPI_COMM_NULL") != NULL, "message: %s", cblob_mpi_last_error_message());
    CHECK(comm == untouched);
    cblob_context_destroy(context);
}

TEST(without_mpi_init_creation_fails_with_a_state_error)
{
    cblob_context *context;
    CHECK_OK(cblob_context_create(&context));
    cblob_comm *comm = NULL;
    CHECK_STATUS(cblob_comm_create_mpi(context, MPI_COMM_WORLD, &comm), CBLOB_ERR_STATE);
    CHECK_MSG(strstr(cblob_mpi_last_error_message(), "MPI_Init") != NULL, "message: %s", cblob_mpi_last_error_message());
    CHECK(comm == NULL);
    cblob_context_destroy(context);
}

/* MPI_Finalize before cblob_comm_destroy (a program that exits in that order) is no crash, and no
 * communicator can be made afterwards. */
TEST(a_communicator_destroyed_after_mpi_finalize_is_freed_safely)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    CHECK_OK(cblob_comm_barrier(tc.comm));
    MPI_Finalize();
    cblob_comm *comm = NULL;
    CHECK_STATUS(cblob_comm_create_mpi(tc.context, MPI_COMM_WORLD, &comm), CBLOB_ERR_STATE);
    CHECK(strstr(cblob_mpi_last_error_message(), "finalized") != NULL);
    test_comm_close(&tc);
}
