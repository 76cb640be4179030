/* SPDX-License-Identifier: BSD-2-Clause */
/* A rank that dies (SIGKILL) while the others all-reduce, under mpirun --enable-recovery (plain
 * mpirun kills the whole job the moment a rank dies: include/cblob/mpi.h). The others get
 * CBLOB_ERR_TIMEOUT within the timeout instead of hanging, and finish normally. */
#include <signal.h>

#include "mpi_support.h"

TEST(a_rank_that_dies_gives_the_others_a_timeout)
{
    test_comm tc;
    CHECK(test_comm_open(&tc));
    CHECK_OK(cblob_comm_set_timeout(tc.comm, 1500));
    cblob_blob *blob = new_blob(tc.context, CBLOB_DTYPE_FLOAT64, 4096);
    CHECK(blob != NULL);
    CHECK_OK(cblob_comm_barrier(tc.comm));
    if (world_rank() == world_size() - 1)
        raise(SIGKILL);
    const double start = seconds_now();
    CHECK_ERROR(cblob_comm_allreduce(tc.comm, &blob, 1, CBLOB_PART_DATA, CBLOB_REDUCE_SUM), CBLOB_ERR_TIMEOUT);
    const double waited = seconds_now() - start;
    CHECK_MSG(waited >= 1.4 && waited < 6.0, "rank %d: the timeout of 1.5 s came after %.3f s", world_rank(), waited);
    cblob_blob_destroy(blob);
    test_comm_close(&tc);
}
