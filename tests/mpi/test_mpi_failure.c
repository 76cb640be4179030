/* SPDX-License-Identifier: BSD-2-Clause */
/* A rank that leaves: the last rank finalizes MPI instead of joining the all-reduce. The others
 * must get CBLOB_ERR_TIMEOUT within the communicator's timeout (not hang), find the communicator
 * broken afterwards, and be able to destroy it and finalize: mpirun then ends the job normally. */
#include "mpi_support.h"

static const int64_t timeout_ms = 1500;

TEST(a_rank_that_finalizes_early_gives_the_others_a_timeout)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    CHECK_OK(cblob_comm_set_timeout(tc.comm, timeout_ms));
    cblob_blob *blob = new_blob(tc.context, CBLOB_DTYPE_FLOAT32, 1000);
    CHECK(blob != NULL);
    CHECK_OK(cblob_comm_barrier(tc.comm));
    if (world_rank() == world_size() - 1) {
        cblob_blob_destroy(blob);
        test_comm_close(&tc);
        MPI_Finalize();
        return;
    }
    const double start = seconds_now();
    CHECK_ERROR(cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM), CBLOB_ERR_TIMEOUT);
    const double waited = seconds_now() - start;
    CHECK_MSG(strstr(cblob_last_error_message(), "1500 ms") != NULL, "message: %s", cblob_last_error_message());
    CHECK_MSG(waited >= 1.4 && waited < 6.0, "rank %d: the timeout of 1.5 s came after %.3f s", world_rank(), waited);
    /* Broken from then on: an error at once, not another wait. */
    const double again = seconds_now();
    CHECK_ERROR(cblob_comm_barrier(tc.comm), CBLOB_ERR_COMM);
    CHECK(seconds_now() - again < 0.5);
    /* The blob keeps its shape and dtype. */
    int64_t count = 0;
    CHECK_OK(cblob_blob_count(blob, &count));
    CHECK_EQ_INT(count, 1000);
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}
