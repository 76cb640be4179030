/* SPDX-License-Identifier: BSD-2-Clause */
/* The MPI engine of libcblob_mpi: the operations of a cblob_comm_engine (cblob.h) on contiguous
 * host buffers, over a communicator of its own (MPI_Comm_dup of the caller's, with
 * MPI_ERRORS_RETURN). Collectives are MPI's non-blocking ones, in place; a wait polls them until
 * they complete or its timeout passes. MPI's errors become statuses with MPI's own error string;
 * nothing here aborts. mpi_comm.c hands these operations to cblob_comm_create. */
#ifndef CBLOB_MPI_ENGINE_H
#define CBLOB_MPI_ENGINE_H

#include <mpi.h>
#include <stdint.h>

#include "cblob/cblob.h"

typedef struct cbm_engine cbm_engine;

/* A new engine over a duplicate of `comm` (collective over comm, as MPI_Comm_dup is). Fails with
 * CBLOB_ERR_STATE when MPI is not initialised or already finalized, CBLOB_ERR_INVALID_ARGUMENT for
 * MPI_COMM_NULL or an inter-communicator, CBLOB_ERR_COMM when MPI fails, CBLOB_ERR_OUT_OF_MEMORY;
 * with a message in `message`. */
cblob_status cbm_engine_create(MPI_Comm comm, cbm_engine **out, char *message, size_t message_size);
/* cblob_comm_destroy_fn: frees the duplicate communicator (unless MPI is finalized already). */
void cbm_engine_destroy(void *engine);

int32_t cbm_engine_rank(const cbm_engine *engine);
int32_t cbm_engine_size(const cbm_engine *engine);
/* The dtypes MPI takes, as cblob_comm_engine's `dtypes` bits. */
uint32_t cbm_engine_dtypes(void);

/* The operations of cblob_comm_engine; `engine` is the cbm_engine. A pending collective is a
 * heap object that the wait takes back whatever the outcome. count may exceed INT_MAX: a
 * collective is then several MPI calls, each on at most cbm_max_chunk elements. */
cblob_status cbm_allreduce_sum(void *engine, void *buffer, int64_t count, cblob_dtype dtype, void **out_pending,
                               char *message, size_t message_size);
cblob_status cbm_broadcast(void *engine, void *buffer, int64_t count, cblob_dtype dtype, int32_t root,
                           void **out_pending, char *message, size_t message_size);
cblob_status cbm_barrier(void *engine, void **out_pending, char *message, size_t message_size);
/* Polls until the collective completes (CBLOB_OK), MPI reports an error (CBLOB_ERR_COMM with MPI's
 * text) or timeout_ms milliseconds pass (CBLOB_ERR_TIMEOUT; -1: no limit). MPI can neither cancel
 * nor free a collective's request: after a failure what is left of it stays MPI's, the buffer
 * included, until MPI_Finalize. */
cblob_status cbm_wait(void *engine, void *pending, int64_t timeout_ms, char *message, size_t message_size);

/* The largest element count of one MPI call (INT_MAX); tests lower it to exercise the split of
 * large collectives without gigabytes of memory. */
extern int64_t cbm_max_chunk;

#endif
