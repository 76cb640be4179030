/* SPDX-License-Identifier: BSD-2-Clause */
/* What the MPI suites share: a communicator over MPI_COMM_WORLD, blobs filled per rank, and checks
 * across ranks (made with MPI directly, on MPI_COMM_WORLD, so that they do not depend on what
 * they check). */
#ifndef CBLOB_TESTS_MPI_SUPPORT_H
#define CBLOB_TESTS_MPI_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/mpi.h"
#include "harness.h"

/* Long enough for 4 ranks on 2 busy cores; short enough that a hang fails well within CTest's
 * TIMEOUT. */
#define MPI_TEST_TIMEOUT_MS 20000

int world_rank(void);
int world_size(void);

/* A context and a communicator over MPI_COMM_WORLD with MPI_TEST_TIMEOUT_MS; NULL after a failed
 * check (reported). */
typedef struct test_comm {
    cblob_context *context;
    cblob_comm *comm;
} test_comm;
bool test_comm_open(test_comm *out);
void test_comm_close(test_comm *comm);

/* A 1-D blob of `count` elements of dtype; NULL after a reported failure. */
cblob_blob *new_blob(cblob_context *context, cblob_dtype dtype, int64_t count);
size_t dtype_size(cblob_dtype dtype);

/* Rank r's value at index i for dtype (float values are not exact in binary, so sums round). */
void rank_values(cblob_dtype dtype, int rank, int64_t count, uint64_t seed, void *out);

/* True on every rank when every rank's `bytes` equal rank 0's. */
bool same_bytes_on_every_rank(const void *bytes, size_t size);
/* True on every rank when `ok` is true on every rank. */
bool on_every_rank(bool ok);

double seconds_now(void);

extern const cblob_dtype every_dtype[4];

#endif
