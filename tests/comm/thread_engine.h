/* SPDX-License-Identifier: BSD-2-Clause */
/* A collective engine for tests: the ranks of a world are threads of one process. It is at least
 * as hostile as a real engine: a start only records the buffer; the work happens at some rank's
 * wait, once every rank has started it, and that wait also finishes other ready collectives in
 * an order drawn from the world's seed, so cblob must leave every buffer alone from start to
 * wait. Sums add the ranks in order 0..size-1 and every rank gets the same bytes. Ranks that
 * disagree on a collective (kind, count, dtype, root) get CBLOB_ERR_COMM, as do the others once
 * a rank is killed; a rank that never arrives leaves the others waiting until their timeout. */
#ifndef CBLOB_TESTS_THREAD_ENGINE_H
#define CBLOB_TESTS_THREAD_ENGINE_H

#include <stdint.h>

#include "cblob/cblob.h"

#define TE_MAX_RANKS 8

typedef struct te_world te_world;

te_world *te_world_new(int size, uint64_t seed);
void te_world_free(te_world *world);
/* The engine table of one rank; cblob_comm_create takes it (its destroy frees the rank's state). */
cblob_comm_engine te_engine(te_world *world, int rank);
/* The rank's start of its collective number `seq` (0 the first) fails with CBLOB_ERR_COMM. */
void te_fail_start(te_world *world, int rank, int64_t seq);
/* The rank dies: every wait for a collective it has not started fails with CBLOB_ERR_COMM. */
void te_kill_rank(te_world *world, int rank);
/* Collectives (engine start calls) the rank has made so far. */
int64_t te_calls(te_world *world, int rank);

/* Runs fn(rank, arg) on `size` threads at once and joins them. */
void te_run_ranks(int size, void (*fn)(int rank, void *arg), void *arg);

#endif
