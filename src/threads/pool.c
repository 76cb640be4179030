/* SPDX-License-Identifier: BSD-2-Clause */
/* The pool: its workers, the queue of jobs they help with, and what fork does to them.
 *
 * A small pthread pool rather than OpenMP. With OpenMP every caller thread gets a team of its own,
 * so eight goroutines calling at once would start eight teams (oversubscription); libgomp's
 * workers do not survive fork() (a child that uses OpenMP after its parent did can hang); and
 * libgomp spins its idle threads for a while after each region, which a library must not impose.
 * Here callers share one set of workers, a job takes only the workers that are free, the child of
 * a fork starts over, and idle workers sleep after a short spin.
 *
 * A job is a number of tasks that the caller and the workers claim one at a time (an atomic
 * counter), so a busy or slow thread simply claims fewer. The job lives on the caller's stack: the
 * caller unlinks it, then waits until every worker that joined has left.
 *
 * Waking a sleeping thread takes tens of microseconds on a virtual machine, as long as the work
 * of a 1e5-element operation. So a worker that ran out of work spins for CB_SPIN_SECONDS before it
 * sleeps (a training loop's next call finds it awake), and a caller waiting for its helpers spins
 * as long before it sleeps. OpenBLAS's threads spin too, and libgomp's for far longer. */
/* PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "threads.h"

/* How long an idle worker, or a caller waiting for its helpers, spins before it sleeps. */
#define CB_SPIN_SECONDS 100e-6

typedef struct cb_job {
    cb_task_fn task;
    void *arg;
    int64_t tasks;
    atomic_int_fast64_t next; /* the next task to claim */
    const char *function;     /* the caller's public call, which messages name */
    /* Under pool.lock: */
    int max_helpers;             /* workers that may join: the threads asked for, less the caller */
    atomic_int helpers;          /* workers inside the job now (changed under pool.lock) */
    bool queued;
    struct cb_job *before, *after; /* queue links */
    int64_t failed_task;         /* the lowest-numbered task that failed (tasks: none) */
    cblob_status status;
    cb_saved_error error;
} cb_job;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* idle workers wait here for a job */
    pthread_cond_t left; /* callers wait here for the workers in their job to leave */
    cb_job *first, *last;
    /* Jobs posted so far: what spinning workers watch for a change of. A caller adds to it after
     * it has queued its job and let go of the lock, so a worker that sees the change finds the
     * lock free (a worker that found it taken slept in the kernel, and waking it took longer than
     * the job). Sleeping workers go by the queue itself, under the lock. */
    atomic_uint posted;
    int workers;       /* started in this process (after fork: in this child) */
    int sleeping;      /* workers waiting on `wake` */
    bool stopping; /* the library is being unloaded */
    pthread_t ids[CB_MAX_THREADS];
} pool = {
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
    /* glibc's adaptive mutex spins a little before it sleeps: the lock is held for a few
     * instructions at a time, and a thread put to sleep for one of them costs a wake-up. */
    .lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP,
#else
    .lock = PTHREAD_MUTEX_INITIALIZER,
#endif
    .wake = PTHREAD_COND_INITIALIZER,
    .left = PTHREAD_COND_INITIALIZER};

/* Set while a thread runs tasks: work started inside a task runs inline. */
static _Thread_local bool inside_task;

int cb_threads_allowed(void)
{
    if (inside_task)
        return 1;
    const int32_t asked = cb_current_call.threads;
    return asked > 0 ? (int)asked : cb_threads_default();
}

int cb_pool_workers_started(void)
{
    pthread_mutex_lock(&pool.lock);
    const int workers = pool.workers;
    pthread_mutex_unlock(&pool.lock);
    return workers;
}

/* ---- the queue (under pool.lock) ------------------------------------------------------- */

static void enqueue(cb_job *job)
{
    job->before = pool.last;
    job->after = NULL;
    if (pool.last != NULL)
        pool.last->after = job;
    else
        pool.first = job;
    pool.last = job;
    job->queued = true;
}

static void unqueue(cb_job *job)
{
    if (!job->queued)
        return;
    if (job->before != NULL)
        job->before->after = job->after;
    else
        pool.first = job->after;
    if (job->after != NULL)
        job->after->before = job->before;
    else
        pool.last = job->before;
    job->queued = false;
}

static bool exhausted(const cb_job *job)
{
    return atomic_load_explicit(&job->next, memory_order_relaxed) >= job->tasks;
}

/* The oldest job a worker may still help with; jobs with nothing left to claim leave the queue. */
static cb_job *job_to_help(void)
{
    cb_job *job = pool.first;
    while (job != NULL) {
        cb_job *after = job->after;
        if (exhausted(job))
            unqueue(job);
        else if (atomic_load_explicit(&job->helpers, memory_order_relaxed) < job->max_helpers)
            return job;
        job = after;
    }
    return NULL;
}

/* ---- running tasks ---------------------------------------------------------------------- */

static void record_failure(cb_job *job, int64_t task, cblob_status status)
{
    pthread_mutex_lock(&pool.lock);
    if (task < job->failed_task) {
        job->failed_task = task;
        job->status = status;
        cb_error_save(&job->error);
    }
    pthread_mutex_unlock(&pool.lock);
}

/* Claims and runs tasks until none is left, as the job's caller (messages name its call). */
static void run_tasks(cb_job *job)
{
    const cb_call call = cb_current_call;
    const bool was_inside = inside_task;
    cb_current_call = (cb_call){job->function, 1};
    inside_task = true;
    for (;;) {
        const int64_t task = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
        if (task >= job->tasks)
            break;
        const cblob_status status = job->task(job->arg, task);
        if (status != CBLOB_OK)
            record_failure(job, task, status);
    }
    inside_task = was_inside;
    cb_current_call = call;
}

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spins up to CB_SPIN_SECONDS until done(arg); returns whether it came true. */
static bool spin_until(bool (*done)(const void *arg), const void *arg)
{
    const double until = seconds_now() + CB_SPIN_SECONDS;
    for (int round = 1;; ++round) {
        if (done(arg))
            return true;
        spin_pause();
        if (round % 64 == 0 && seconds_now() > until)
            return false;
    }
}

/* Whether a job was queued since the worker saw `posted` at *seen. */
static bool posted_since(const void *seen)
{
    return atomic_load_explicit(&pool.posted, memory_order_acquire) != *(const unsigned *)seen;
}

static bool helpers_left(const void *job)
{
    return atomic_load_explicit(&((const cb_job *)job)->helpers, memory_order_acquire) == 0;
}

static void *worker_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        cb_job *job = job_to_help();
        if (job == NULL) {
            if (pool.stopping)
                break;
            const unsigned seen = atomic_load_explicit(&pool.posted, memory_order_relaxed);
            pthread_mutex_unlock(&pool.lock);
            const bool found = spin_until(posted_since, &seen);
            pthread_mutex_lock(&pool.lock);
            /* A job queued while this worker spun is in the queue now (queued under the lock),
             * whether or not its caller has posted it yet; one queued later finds the worker
             * counted in `sleeping` and signals it. */
            if (!found && !pool.stopping && job_to_help() == NULL) {
                ++pool.sleeping;
                pthread_cond_wait(&pool.wake, &pool.lock);
                --pool.sleeping;
            }
            continue;
        }
        atomic_fetch_add_explicit(&job->helpers, 1, memory_order_relaxed);
        pthread_mutex_unlock(&pool.lock);
        run_tasks(job);
        /* The last touch of the job, without the lock: its caller, which unqueues it, may return
         * as soon as it sees 0, and need not wait until this worker gets the lock. A caller that
         * went to sleep waiting is woken under the lock, which this worker takes anyway to look
         * for its next job. */
        const bool last = atomic_fetch_sub_explicit(&job->helpers, 1, memory_order_release) == 1;
        pthread_mutex_lock(&pool.lock);
        if (last)
            pthread_cond_broadcast(&pool.left);
    }
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

/* ---- starting, stopping and forking ------------------------------------------------------- */

static void before_fork(void)
{
    pthread_mutex_lock(&pool.lock);
}

static void after_fork_in_parent(void)
{
    pthread_mutex_unlock(&pool.lock);
}

/* The child has only the thread that forked, which held the lock (before_fork) and ran no job:
 * the workers and every other caller's job stayed in the parent. */
static void after_fork_in_child(void)
{
    pool.first = pool.last = NULL;
    pool.workers = 0;
    pool.sleeping = 0;
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.left, NULL);
    pthread_mutex_unlock(&pool.lock);
}

static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void install_fork_handlers(void)
{
    /* glibc removes these handlers when the library is unloaded (they are registered with its
     * __dso_handle). A failure leaves a child that forks mid-job without working threads. */
    (void)pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

/* Starts workers until there are `wanted` (under pool.lock). Workers block every signal, so the
 * library never runs an application's signal handler on a thread of its own. A thread that
 * cannot be started leaves fewer workers, never an error: the callers run the tasks. */
static void start_workers(int wanted)
{
    if (wanted > CB_MAX_THREADS - 1)
        wanted = CB_MAX_THREADS - 1;
    if (pool.workers >= wanted || pool.stopping)
        return;
    pthread_once(&fork_handlers_once, install_fork_handlers);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    while (pool.workers < wanted && pthread_create(&pool.ids[pool.workers], NULL, worker_main, NULL) == 0)
        ++pool.workers;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

/* When the library is unloaded (dlclose, or the process exits), its workers must not outlive its
 * code. A call still running finishes its tasks on its own thread. */
__attribute__((destructor)) static void stop_workers(void)
{
    pthread_mutex_lock(&pool.lock);
    pool.stopping = true;
    pthread_cond_broadcast(&pool.wake);
    const int workers = pool.workers;
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < workers; ++i)
        pthread_join(pool.ids[i], NULL);
}

/* ---- the entry point ---------------------------------------------------------------------- */

static cblob_status run_inline(int64_t tasks, cb_task_fn task, void *arg)
{
    for (int64_t i = 0; i < tasks; ++i)
        CB_TRY(task(arg, i));
    return CBLOB_OK;
}

cblob_status cb_pool_run(int64_t tasks, int threads, cb_task_fn task, void *arg)
{
    if (threads > tasks)
        threads = (int)tasks;
    if (threads <= 1 || inside_task)
        return run_inline(tasks, task, arg);
    cb_job job = {.task = task, .arg = arg, .tasks = tasks, .function = cb_current_call.function,
                  .max_helpers = threads - 1, .failed_task = tasks, .status = CBLOB_OK};
    atomic_init(&job.next, 0);
    atomic_init(&job.helpers, 0);
    pthread_mutex_lock(&pool.lock);
    start_workers(threads - 1);
    enqueue(&job);
    /* Sleeping workers need a signal (which costs nothing when none sleeps); spinning ones see
     * the job posted, once the lock is free for them. */
    for (int i = 0; i < job.max_helpers && i < pool.sleeping; ++i)
        pthread_cond_signal(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    atomic_fetch_add_explicit(&pool.posted, 1, memory_order_release);

    run_tasks(&job);

    /* Once unlinked, no worker can join; those inside leave by decrementing `helpers`. */
    pthread_mutex_lock(&pool.lock);
    unqueue(&job);
    pthread_mutex_unlock(&pool.lock);
    if (!spin_until(helpers_left, &job)) {
        pthread_mutex_lock(&pool.lock);
        while (atomic_load_explicit(&job.helpers, memory_order_acquire) > 0)
            pthread_cond_wait(&pool.left, &pool.lock);
        pthread_mutex_unlock(&pool.lock);
    }
    /* The failure fields were written before the helpers left (release, acquire above). */
    if (job.status != CBLOB_OK)
        cb_error_restore(&job.error);
    return job.status;
}
