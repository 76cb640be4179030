/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool itself: how many threads it starts (none for one thread), what the environment and a
 * context choose, work started inside a task, failures, and fork. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu/kernels.h"
#include "harness.h"
#include "threads.h"
#include "threads_support.h"

/* Large float32 work on `threads` threads: every element of a BIG blob scaled, then summed.
 * Returns whether the sum is what the scaling makes it. */
static bool large_work(int32_t threads)
{
    cblob_context *context = NULL;
    if (cblob_context_create(&context) != CBLOB_OK)
        return false;
    cblob_blob *blob = NULL;
    const int64_t n = BIG;
    double before = 0, after = -1;
    const bool ok = cblob_context_set_num_threads(context, threads) == CBLOB_OK &&
                    cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &n, &blob) == CBLOB_OK &&
                    cblob_blob_fill(blob, CBLOB_PART_DATA, 0.5) == CBLOB_OK &&
                    cblob_blob_asum(blob, CBLOB_PART_DATA, &before) == CBLOB_OK &&
                    cblob_blob_scale(blob, CBLOB_PART_DATA, 4) == CBLOB_OK &&
                    cblob_blob_asum(blob, CBLOB_PART_DATA, &after) == CBLOB_OK;
    cblob_blob_destroy(blob);
    cblob_context_destroy(context);
    return ok && before == 0.5 * (double)n && after == 2.0 * (double)n;
}

TEST(cblob_num_threads_1_starts_no_thread)
{
    split_small_work();
    setenv("CBLOB_NUM_THREADS", "1", 1);
    const int threads = process_threads();
    CHECK(threads >= 1);
    CHECK(large_work(0));
    CHECK_EQ_INT(process_threads(), threads);
    CHECK_EQ_INT(cb_pool_workers_started(), 0);
    cblob_context *context = NULL;
    int32_t count = 0;
    CHECK_OK(cblob_context_create(&context));
    CHECK_OK(cblob_context_num_threads(context, &count));
    cblob_context_destroy(context);
    CHECK_EQ_INT(count, 1);
}

TEST(a_context_set_to_one_thread_starts_no_thread)
{
    split_small_work();
    setenv("CBLOB_NUM_THREADS", "4", 1);
    const int threads = process_threads();
    CHECK(large_work(1));
    CHECK_EQ_INT(process_threads(), threads);
    CHECK_EQ_INT(cb_pool_workers_started(), 0);
    /* The same work on the default (4, from the environment) starts 3 workers beside the caller. */
    CHECK(large_work(0));
    CHECK_EQ_INT(cb_pool_workers_started(), 3);
    CHECK_EQ_INT(process_threads(), threads + 3);
}

TEST(the_environment_and_the_context_choose_the_thread_count)
{
    setenv("CBLOB_NUM_THREADS", "3", 1);
    cblob_context *context = NULL;
    int32_t count = 0;
    CHECK_OK(cblob_context_create(&context));
    CHECK_OK(cblob_context_num_threads(context, &count));
    CHECK_EQ_INT(count, 3);
    CHECK_OK(cblob_context_set_num_threads(context, 7));
    CHECK_OK(cblob_context_num_threads(context, &count));
    CHECK_EQ_INT(count, 7);
    CHECK_ERROR(cblob_context_set_num_threads(context, CBLOB_MAX_THREADS + 1), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_context_set_num_threads(context, -1), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_OK(cblob_context_num_threads(context, &count));
    CHECK_EQ_INT(count, 7); /* a refused setting changes nothing */
    CHECK_OK(cblob_context_set_num_threads(context, 0));
    CHECK_OK(cblob_context_num_threads(context, &count));
    CHECK_EQ_INT(count, 3);
    cblob_context_destroy(context);
}

TEST(a_malformed_cblob_num_threads_leaves_the_cpu_count)
{
    setenv("CBLOB_NUM_THREADS", "2x", 1);
    CHECK(cb_threads_default() >= 1);
    CHECK(cb_threads_default() <= CBLOB_MAX_THREADS);
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(online < 1 || cb_threads_default() <= online);
}

/* ---- cb_pool_run -------------------------------------------------------------------------- */

typedef struct nested {
    atomic_int ran;
    pthread_t outer[64];
    bool inline_everywhere;
} nested;

static cblob_status inner_task(void *arg, int64_t task)
{
    nested *n = arg;
    (void)task;
    atomic_fetch_add(&n->ran, 1);
    return CBLOB_OK;
}

typedef struct nested_call {
    nested *n;
    int64_t outer_task;
} nested_call;

static cblob_status inner_checked(void *arg, int64_t task)
{
    nested_call *call = arg;
    (void)task;
    if (!pthread_equal(pthread_self(), call->n->outer[call->outer_task]))
        call->n->inline_everywhere = false;
    return inner_task(call->n, task);
}

static cblob_status outer_task(void *arg, int64_t task)
{
    nested *n = arg;
    n->outer[task] = pthread_self();
    if (cb_threads_allowed() != 1)
        n->inline_everywhere = false;
    nested_call call = {n, task};
    return cb_pool_run(8, 4, inner_checked, &call);
}

/* Runs `op` on a float32 blob whose work (bytes read plus written: `bytes_per_element` each) is
 * `work` bytes, on two threads, with the library's own thresholds; returns the pool's workers
 * started since the process began, or -1. The blob is made and filled on one thread, so that only
 * the op can start a worker (fills split from a threshold of their own). */
static int workers_after(const char *op, double work, int bytes_per_element)
{
    cblob_context *context = NULL;
    cblob_blob *blob = NULL;
    const int64_t n = (int64_t)(work / bytes_per_element);
    double sum = 0;
    bool ok = cblob_context_create(&context) == CBLOB_OK && cblob_context_set_num_threads(context, 1) == CBLOB_OK &&
              cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &n, &blob) == CBLOB_OK &&
              cblob_blob_fill(blob, CBLOB_PART_DATA, 1.0) == CBLOB_OK &&
              cblob_blob_fill(blob, CBLOB_PART_DIFF, 0.25) == CBLOB_OK &&
              cblob_context_set_num_threads(context, 2) == CBLOB_OK;
    if (ok && strcmp(op, "update") == 0)
        ok = cblob_blob_update(blob) == CBLOB_OK;
    else if (ok && strcmp(op, "scale") == 0)
        ok = cblob_blob_scale(blob, CBLOB_PART_DIFF, 0.5) == CBLOB_OK;
    else if (ok)
        ok = cblob_blob_asum(blob, CBLOB_PART_DIFF, &sum) == CBLOB_OK;
    cblob_blob_destroy(blob);
    cblob_context_destroy(context);
    return ok ? cb_pool_workers_started() : -1;
}

/* Each kernel splits from its own threshold (ops.yaml split_kib), not from one for all: work of
 * a little less than two threads' worth stays on the caller, a little more starts a worker. A sum
 * has more than one block. */
static void splits_from_its_own_threshold(const char *op, size_t threshold, int bytes_per_element)
{
    cb_split_bytes_override = 0;
    const double elements = (double)threshold * 2.2 / bytes_per_element;
    CHECK(strcmp(op, "asum") != 0 || elements > (double)CB_SUM_BLOCK);
    CHECK_EQ_INT(workers_after(op, (double)threshold * 1.8, bytes_per_element), 0);
    CHECK_EQ_INT(workers_after(op, (double)threshold * 2.2, bytes_per_element), 1);
}

TEST(update_splits_from_its_own_threshold)
{
    splits_from_its_own_threshold("update", CB_CPU_SPLIT_BYTES_AXPY, 12);
}

TEST(asum_splits_from_its_own_threshold)
{
    splits_from_its_own_threshold("asum", CB_CPU_SPLIT_BYTES_ASUM, 4);
}

TEST(scale_splits_from_its_own_threshold)
{
    splits_from_its_own_threshold("scale", CB_CPU_SPLIT_BYTES_SCALE, 8);
}

TEST(work_started_inside_a_task_runs_inline)
{
    nested n = {.inline_everywhere = true};
    atomic_init(&n.ran, 0);
    CHECK_OK(cb_pool_run(16, 4, outer_task, &n));
    CHECK_EQ_INT(atomic_load(&n.ran), 16 * 8);
    CHECK(n.inline_everywhere);
    CHECK_EQ_INT(cb_pool_workers_started(), 3);
}

static cblob_status failing_task(void *arg, int64_t task)
{
    (void)arg;
    if (task == 5)
        return cb_fail(CBLOB_ERR_OVERFLOW, "task 5 failed first");
    if (task == 11)
        return cb_fail(CBLOB_ERR_SHAPE, "task 11 failed later");
    return CBLOB_OK;
}

TEST(the_lowest_failing_task_gives_the_status_and_message)
{
    CB_ENTER();
    for (int threads = 1; threads <= 4; threads += 3) {
        CHECK_STATUS(cb_pool_run(16, threads, failing_task, NULL), CBLOB_ERR_OVERFLOW);
        CHECK(strstr(cblob_last_error_message(), "task 5 failed first") != NULL);
        CHECK(strstr(cblob_last_error_message(), "the_lowest_failing_task") != NULL); /* the caller's call */
    }
}

/* ---- fork ----------------------------------------------------------------------------------- */

static atomic_bool stop_background;

static void *background_work(void *unused)
{
    (void)unused;
    while (!atomic_load(&stop_background))
        if (!large_work(3))
            return (void *)1;
    return NULL;
}

/* Waits up to 60 s for a child; a child that hangs is killed and counts as failed. */
static bool child_succeeded(pid_t child)
{
    for (int waited = 0; waited < 6000; ++waited) {
        int status = 0;
        const pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (done < 0)
            return false;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return false;
}

/* A child forked while the parent's pool is busy on another thread starts workers of its own and
 * gets right results; the parent's pool goes on working. */
TEST(a_child_after_fork_uses_the_pool)
{
    split_small_work();
    CHECK(large_work(4));
    CHECK_EQ_INT(cb_pool_workers_started(), 3);
    atomic_store(&stop_background, false);
    pthread_t background;
    CHECK(pthread_create(&background, NULL, background_work, NULL) == 0);
    bool children_ok = true;
    for (int i = 0; i < 8 && children_ok; ++i) {
        const pid_t child = fork();
        if (child == 0) {
            const bool before = cb_pool_workers_started() == 0; /* the parent's workers stayed there */
            const bool ok = large_work(4) && large_work(2) && cb_pool_workers_started() == 3;
            _exit(before && ok ? 0 : 1);
        }
        children_ok = child > 0 && child_succeeded(child);
    }
    atomic_store(&stop_background, true);
    void *background_result = NULL;
    pthread_join(background, &background_result);
    CHECK(children_ok);
    CHECK(background_result == NULL);
    CHECK(large_work(4));
}

/* ---- lanes (a producer's background thread: the export writer's) ------------------------------ */

typedef struct lane_log {
    pthread_t caller;
    int ran[64];
    int count;
    bool on_another_thread, signals_blocked;
    int fail_at; /* the job value that fails; -1: none */
} lane_log;

static bool log_job(void *arg, void *job, size_t size)
{
    lane_log *log = arg;
    const int value = *(const int *)job;
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    log->on_another_thread = !pthread_equal(pthread_self(), log->caller);
    log->signals_blocked = sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGTERM) == 1;
    if (size == sizeof value && log->count < 64)
        log->ran[log->count++] = value;
    return value != log->fail_at;
}

TEST(a_lane_runs_its_jobs_in_order_on_a_thread_that_blocks_signals)
{
    lane_log log = {.caller = pthread_self(), .fail_at = -1};
    cb_lane *lane = cb_lane_start(log_job, &log);
    CHECK(lane != NULL);
    int jobs[2];
    for (int i = 0; i < 40; ++i) {
        /* Two buffers, as the sink's: a buffer handed is the lane's until the next hand returns. */
        jobs[i % 2] = i;
        cb_lane_hand(lane, &jobs[i % 2], sizeof jobs[0]);
    }
    CHECK(cb_lane_wait(lane));
    CHECK(log.count == 40);
    for (int i = 0; i < log.count; ++i)
        CHECK(log.ran[i] == i);
    CHECK(log.on_another_thread && log.signals_blocked);
    cb_lane_stop(lane);
    cb_lane_stop(NULL);
}

TEST(a_failed_lane_job_fails_every_later_wait)
{
    lane_log log = {.caller = pthread_self(), .fail_at = 2};
    cb_lane *lane = cb_lane_start(log_job, &log);
    CHECK(lane != NULL);
    int values[5] = {0, 1, 2, 3, 4};
    cb_lane_hand(lane, &values[0], sizeof values[0]);
    cb_lane_hand(lane, &values[1], sizeof values[0]);
    CHECK(cb_lane_wait(lane));
    for (int i = 2; i < 5; ++i)
        cb_lane_hand(lane, &values[i], sizeof values[0]);
    CHECK(!cb_lane_wait(lane));
    CHECK(!cb_lane_wait(lane));
    /* The jobs after the failure still ran: the producer decides what a failure stops. */
    CHECK(log.count == 5 && log.ran[4] == 4);
    cb_lane_stop(lane);
}
