/* SPDX-License-Identifier: BSD-2-Clause */
/* main() of the MPI suites: every rank runs the named test between MPI_Init and MPI_Finalize,
 * through the harness's own runner (tests/harness.c, whose main is renamed cbt_run for these
 * suites: tests/mpi/CMakeLists.txt). A rank whose test fails aborts the job, so that the other
 * ranks never wait for it in a collective; mpirun then exits with a non-zero status. A test may
 * finalize MPI itself (a rank that leaves early). Tests named without_mpi_init_* run without
 * MPI_Init, to see what the library does then. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int cbt_run(int argc, char **argv);

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "";
    if (strcmp(name, "--list") == 0 || strncmp(name, "without_mpi_init_", 17) == 0)
        return cbt_run(argc, argv);
    MPI_Init(&argc, &argv);
    const int status = cbt_run(argc, argv);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
        return status;
    if (status != 0) {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "rank %d: %s failed: aborting the job\n", rank, name);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, status);
    }
    MPI_Finalize();
    return status;
}
