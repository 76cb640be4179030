/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cblob/mpi.h - cblob communicators over MPI (libcblob_mpi.so.1, package libcblob-mpi1).
 *
 * MPI lives in a library of its own so that libcblob never depends on MPI: a program that trains
 * with MPI links both (pkg-config cblob-mpi, or the CMake target cblob_mpi in cblob's build tree), and
 * everything else about communicators (collectives, requests, timeouts, arenas) is cblob.h's
 * "Arenas and communicators" section. Written by hand (it includes <mpi.h>, which the generator
 * of cblob.h knows nothing of); libcblob_mpi uses nothing but cblob.h's functions.
 *
 * What the MPI engine does
 *   - Collectives run on a communicator of its own, MPI_Comm_dup of the caller's, whose error
 *     handler is MPI_ERRORS_RETURN: MPI's errors become CBLOB_ERR_COMM with MPI's error string,
 *     never an abort. The caller's own communicator and error handler are left as they are.
 *   - Buffers are on the host (CBLOB_MEMORY_HOST): the engine is for CPUs (use NCCL for GPUs).
 *     All-reduce is MPI_Iallreduce with MPI_SUM and MPI_IN_PLACE, broadcast MPI_Ibcast, barrier
 *     MPI_Ibarrier; dtypes float32 (MPI_FLOAT), float64 (MPI_DOUBLE), int32 (MPI_INT32_T) and
 *     uint32 (MPI_UINT32_T). A collective on more than INT_MAX elements is split into several
 *     MPI calls. The order of the sum is MPI's: Open MPI gives every rank the same bits (the
 *     tests check it), but the sum may differ in the last bits from a serial sum.
 *   - Before each collective, cblob's agreement (cblob.h, "Arenas and communicators") runs one
 *     MPI_Iallreduce of a few hundred bytes (uint32) on the same duplicate, so that ranks that
 *     disagree fail with an error naming the difference instead of meeting in MPI with buffers of
 *     different sizes (MPI itself calls such programs erroneous). That all-reduce is also the
 *     barrier: MPI_Ibarrier runs only with the agreement turned off.
 *   - A wait polls MPI_Testall (spinning as MPI_Wait does; MPI yields the CPU when ranks share
 *     cores) until the collective completes or the communicator's timeout
 *     (cblob_comm_set_timeout) passes; then it fails with CBLOB_ERR_TIMEOUT. MPI can neither cancel
 *     nor free a collective in flight: after a failure MPI keeps what it started, and a rank that
 *     joins that collective late still makes MPI write into its memory, until MPI_Finalize. cblob
 *     keeps that memory until the communicator is destroyed: after a failed collective, call
 *     MPI_Finalize before cblob_comm_destroy unless the missing rank is known to be gone.
 *
 * A rank that stops
 *   MPI has no notion of a collective that fails because a rank left. What the other ranks see
 *   is decided by the launcher; with Open MPI 4.1's mpirun:
 *   - A rank that calls MPI_Finalize (or just stops calling collectives) leaves the others
 *     waiting: with a timeout set they get CBLOB_ERR_TIMEOUT, and can destroy the communicator
 *     and finalize; the job then ends normally.
 *   - A rank that dies (a signal, or an exit without MPI_Finalize): by default mpirun kills
 *     every other rank of the job at once, so there is nobody left to report to. Started with
 *     `mpirun --enable-recovery`, the others keep running and get CBLOB_ERR_TIMEOUT (tried by
 *     hand with a rank killed by SIGKILL), but mpirun itself often never exits afterwards.
 *   Set the same timeout on every rank, longer than the slowest rank's work between collectives.
 *
 * Threads
 *   As cblob.h says for communicators: one thread at a time per communicator. MPI must have been
 *   initialised with at least MPI_THREAD_SERIALIZED if several threads make MPI calls. Open MPI
 *   4.1 reports the error of a non-blocking collective through MPI_COMM_WORLD's error handler
 *   (which aborts the job by default), whichever communicator it ran on; so a wait sets
 *   MPI_COMM_WORLD's handler to MPI_ERRORS_RETURN while it polls and puts the caller's back
 *   before it returns. Another thread's MPI calls on MPI_COMM_WORLD during a wait would see that.
 */
#ifndef CBLOB_MPI_H
#define CBLOB_MPI_H

#include <mpi.h>

#include "cblob/cblob.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#  define CBLOB_MPI_API __attribute__((visibility("default")))
#else
#  define CBLOB_MPI_API
#endif

/*
 * Makes a communicator over the MPI communicator `comm`: the same ranks, in the same order
 * (cblob_comm_rank is the rank in comm). Collective over comm: every rank of comm calls it. comm
 * may be freed afterwards; the cblob communicator has its own duplicate, which
 * cblob_comm_destroy frees (unless MPI is finalized by then, when there is nothing to free).
 * context: as for cblob_comm_create (its lifetime is held; an MPI engine works on host memory).
 *   Returns: CBLOB_OK; CBLOB_ERR_INVALID_ARGUMENT for a NULL context or out_comm, MPI_COMM_NULL or
 *   an inter-communicator; CBLOB_ERR_STATE when MPI is not initialised or already finalized;
 *   CBLOB_ERR_COMM when MPI fails; CBLOB_ERR_OUT_OF_MEMORY. Since libcblob_mpi ABI 1.1.
 *   On failure cblob_mpi_last_error_message() says why.
 */
CBLOB_MPI_API cblob_status cblob_comm_create_mpi(cblob_context *context, MPI_Comm comm, cblob_comm **out_comm);

/*
 * Makes an NCCL communicator (cblob_comm_create_nccl: collectives on GPUs) over the ranks of the
 * MPI communicator `comm`, in its order: rank 0 makes the unique id (cblob_comm_nccl_unique_id),
 * MPI carries it to the others, and every rank joins. Collective over comm; each rank's context
 * is in GPU mode on the device that rank uses (one rank per GPU). If rank 0 cannot make the id
 * (no GPU, no NCCL), every rank fails with rank 0's status. Later collectives go through NCCL
 * only; comm is not kept.
 *   Returns: CBLOB_OK; CBLOB_ERR_INVALID_ARGUMENT for a NULL context or out_comm, MPI_COMM_NULL or
 *   an inter-communicator; CBLOB_ERR_STATE when MPI is not initialised or already finalized;
 *   CBLOB_ERR_COMM when MPI or NCCL fails; and the statuses of cblob_comm_nccl_unique_id and
 *   cblob_comm_create_nccl (CBLOB_ERR_NCCL_MISSING, CBLOB_ERR_NO_DRIVER, ...). Since
 *   libcblob_mpi ABI 1.1. On failure cblob_mpi_last_error_message() says why.
 */
CBLOB_MPI_API cblob_status cblob_comm_create_nccl_mpi(cblob_context *context, MPI_Comm comm, cblob_comm **out_comm);

/*
 * The calling thread's message for the last failed call of this library, naming the call; never
 * NULL. (A library that uses only cblob.h's functions cannot set cblob_last_error_message(); where
 * cblob itself refused, this is cblob's message.) Since libcblob_mpi ABI 1.1.
 */
CBLOB_MPI_API const char *cblob_mpi_last_error_message(void);

/*
 * cblob_comm_create_mpi over MPI_COMM_WORLD, for callers without MPI's types (the Rust, Go, C# and
 * Python bindings, which load libcblob_mpi.so.1 at run time). When MPI is not initialised yet it
 * calls MPI_Init_thread (MPI_THREAD_MULTIPLE) and registers an atexit handler that finalizes MPI
 * when the process exits; when the caller initialised MPI it neither initialises nor finalizes it.
 * Collective over MPI_COMM_WORLD. Under mpirun the ranks are mpirun's; started alone, the process
 * is a world of one rank (MPI's singleton start). Statuses as cblob_comm_create_mpi, whose name the
 * messages carry; MPI already finalized is CBLOB_ERR_STATE. Since libcblob_mpi ABI 1.1.
 */
CBLOB_MPI_API cblob_status cblob_comm_create_mpi_world(cblob_context *context, cblob_comm **out_comm);

#ifdef __cplusplus
}
#endif

#endif
