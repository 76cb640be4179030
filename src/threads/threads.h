/* SPDX-License-Identifier: BSD-2-Clause */
/* Threads (DESIGN.md, "Threads live in one place"): one process-wide pool of worker threads over
 * which large operations split. Kernels stay plain single-threaded functions over a range; the
 * dispatch layer (generated/cpu/dispatch.c, the copies and the formats) decides when to split,
 * through the helpers below.
 *
 * - How many: by default the CPUs the process may use (its affinity mask, capped by a cgroup CPU
 *   quota); CBLOB_NUM_THREADS, read once, replaces that default; a context's setting
 *   (cblob_context_set_num_threads) replaces both for work on its blobs. One thread means none
 *   is started: the pool creates its workers only when a call may use more than one thread.
 * - Many callers at once (Go goroutines, .NET thread pools): callers share the workers. A call
 *   runs its ranges on the calling thread and on whichever workers are free; when none is, the
 *   caller runs them all itself, so the threads at work never exceed the callers plus the pool.
 *   Work started from inside a range runs inline.
 * - fork: the child starts with no workers (pthread_atfork) and starts new ones when it needs
 *   them. Workers block every signal, so signals go to the application's threads.
 * - Results never depend on the thread count: how work is cut into ranges depends only on its
 *   size, and sums add per-block partial sums in block order (cb_parallel_sum). */
#ifndef CBLOB_SRC_THREADS_H
#define CBLOB_SRC_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"
#include "status.h"

/* The most threads a call may use (the pool's workers plus the caller). */
#define CB_MAX_THREADS CBLOB_MAX_THREADS

/* Each thread gets at least this many bytes of work (read plus written); smaller work runs on
 * the calling thread, where handing it over would cost more than it saves. This is the threshold
 * of work without one of its own (copies, fills of new memory, merges, reads). On the idle VM
 * (bench/bench_threads, 2026-11-27, load 0.5) splitting copy_from lost at 78 KiB per thread
 * (0.46-0.84x) and won from 156 KiB (1.12x) to 7.8 MiB (1.9-2.9x at 200,000 float64 elements,
 * which 4 MiB, the threshold before, left on one thread); the other users are memory-bound passes
 * alike. Each kernel of codegen/ops.yaml may have its own (`split_kib`), measured by
 * bench/bench_threads against one thread and against OpenBLAS's threading (docs/benchmarks.md,
 * "Threads"). */
#define CB_SPLIT_MIN_BYTES ((size_t)128 << 10)
/* When not 0, replaces every threshold: tests split small work with it (every operation runs on
 * several threads on small blobs), bench/bench_threads splits every size (1). */
extern size_t cb_split_bytes_override;

/* The threshold work with its own threshold `own` splits from. */
static inline size_t cb_split_bytes(size_t own)
{
    return cb_split_bytes_override != 0 ? cb_split_bytes_override : own;
}

/* The threads the current public call may use, the caller included: the setting the call chose
 * (cb_threads_for_call), else the process default. Always 1 inside a range. */
int cb_threads_allowed(void);

/* The process default: CBLOB_NUM_THREADS when it holds a number from 1 to CB_MAX_THREADS, else
 * the CPUs the process may use. Read once. */
int cb_threads_default(void);

/* Makes the rest of the current public call use `threads` threads (0: the process default).
 * Entry points pass the setting of the context whose blob they write (or read, for sums). */
static inline void cb_threads_for_call(int32_t threads)
{
    cb_current_call.threads = threads;
}

/* Runs task(arg, i) for every i in [0, tasks), on up to `threads` threads (the caller's
 * included), and returns when all have run. Returns the status of the lowest-numbered task that
 * failed, with that task's message as the thread's error message. */
typedef cblob_status (*cb_task_fn)(void *arg, int64_t task);
cblob_status cb_pool_run(int64_t tasks, int threads, cb_task_fn task, void *arg);

/* Runs fn over [0, items) in ranges, spread over threads when the work is large: item_bytes is
 * what one item reads plus writes, which decides how many threads pay off; ranges start at
 * multiples of `align` items (so that two threads never write one cache line). Fails as
 * cb_pool_run does. */
typedef cblob_status (*cb_range_fn)(void *arg, int64_t begin, int64_t end);
cblob_status cb_parallel_for(int64_t items, size_t item_bytes, int64_t align, cb_range_fn fn, void *arg);
/* The same, each thread getting at least `split_bytes` of work (an operation's own threshold). */
cblob_status cb_parallel_for_split(int64_t items, size_t item_bytes, size_t split_bytes, int64_t align, cb_range_fn fn,
                                   void *arg);

/* A sum over [0, items): fn adds up one block, [begin, end), into *out, each thread getting at
 * least `split_bytes` of work (the operation's threshold). The blocks depend only on `items` (and
 * are one block below CB_SUM_BLOCK items), and their sums are added in block order in double, so
 * the total is the same bit for bit on any number of threads. */
#define CB_SUM_BLOCK ((int64_t)1 << 15)
typedef cblob_status (*cb_sum_fn)(void *arg, int64_t begin, int64_t end, double *out);
cblob_status cb_parallel_sum(int64_t items, size_t item_bytes, size_t split_bytes, cb_sum_fn fn, void *arg, double *out);

/* memcpy and memset of buffers that do not overlap, split over threads when large. The pages of
 * `to` are first touched by the threads that fill them. */
void cb_parallel_copy(void *to, const void *from, size_t bytes);
/* memmove: buffers that overlap are moved on the calling thread, others as cb_parallel_copy. */
void cb_parallel_move(void *to, const void *from, size_t bytes);
void cb_parallel_zero(void *to, size_t bytes);

/* A lane (lane.c): one background thread of a single producer's own, which runs the jobs handed to
 * it one at a time, in order, while the producer goes on (the export writer overlaps its file
 * writes with encoding: src/formats/sink.c). A lane is not the pool's: its job blocks (I/O) and
 * must not take a worker from the pool's ranges. Its thread blocks every signal, as the pool's
 * workers do.
 * - cb_lane_start: NULL when no thread can be started (no memory, no threads), and the producer
 *   then does the work itself.
 * - cb_lane_hand: waits until the lane is idle, then hands it run(arg, job, size); the job's
 *   memory is the lane's until the next cb_lane_wait, cb_lane_hand or cb_lane_stop returns.
 * - cb_lane_wait: waits until the lane is idle; false once any job has failed (run returned
 *   false), for good.
 * - cb_lane_stop: waits for the job in hand, ends the thread and frees the lane (NULL: nothing). */
typedef struct cb_lane cb_lane;
typedef bool (*cb_lane_job)(void *arg, void *job, size_t size);
cb_lane *cb_lane_start(cb_lane_job run, void *arg);
void cb_lane_hand(cb_lane *lane, void *job, size_t size);
bool cb_lane_wait(cb_lane *lane);
void cb_lane_stop(cb_lane *lane);

/* For tests: the worker threads started since the process (or, after fork, the child) began. */
int cb_pool_workers_started(void);

#endif
