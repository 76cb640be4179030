/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_comm_create_mpi_world: a communicator over MPI_COMM_WORLD for callers that have no MPI
 * types (the Rust, Go and C# bindings load libcblob_mpi at run time). It initialises MPI when
 * nobody has, and then, only then, finalizes it when the process exits. */
#include "cblob/mpi.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* atexit handler, registered only by the call that initialised MPI. */
static void finalize_our_mpi(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Finalize();
}

/* Initialises MPI unless it is initialised (or finalized: cblob_comm_create_mpi then says so). */
static void ensure_mpi(void)
{
    pthread_mutex_lock(&init_lock);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized && !finalized) {
        /* MULTIPLE: bindings call from any OS thread (Go moves goroutines, test harnesses run tests
         * on threads), and distinct communicators may then be used on different threads at once. */
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS)
            atexit(finalize_our_mpi);
    }
    pthread_mutex_unlock(&init_lock);
}

__attribute__((visibility("default"))) cblob_status cblob_comm_create_mpi_world(cblob_context *context,
                                                                                cblob_comm **out_comm)
{
    /* Bad arguments are refused before MPI is touched (cblob_comm_create_mpi checks them first). */
    if (context == NULL || out_comm == NULL)
        return cblob_comm_create_mpi(context, MPI_COMM_NULL, out_comm);
    /* A failed MPI_Init_thread leaves MPI uninitialised: cblob_comm_create_mpi says so. */
    ensure_mpi();
    return cblob_comm_create_mpi(context, MPI_COMM_WORLD, out_comm);
}
