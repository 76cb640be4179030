/* SPDX-License-Identifier: BSD-2-Clause */
#include "thread_engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TE_MAX_OPS 8192

enum te_kind { TE_ALLREDUCE, TE_BROADCAST, TE_BARRIER };

typedef struct te_op {
    enum te_kind kind;
    int64_t count;
    cblob_dtype dtype;
    int32_t root;
    void *buffers[TE_MAX_RANKS];
    int started;
    bool done;
    char mismatch[160]; /* non-empty: the ranks disagreed */
} te_op;

struct te_world {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int size;
    uint64_t random;
    int64_t next_seq[TE_MAX_RANKS];
    int64_t fail_seq[TE_MAX_RANKS];
    bool dead[TE_MAX_RANKS];
    te_op *ops;
};

typedef struct te_rank {
    te_world *world;
    int rank;
} te_rank;

te_world *te_world_new(int size, uint64_t seed)
{
    te_world *world = calloc(1, sizeof *world);
    world->ops = calloc(TE_MAX_OPS, sizeof *world->ops);
    pthread_mutex_init(&world->lock, NULL);
    pthread_cond_init(&world->changed, NULL);
    world->size = size;
    world->random = seed * 2654435761u + 1;
    for (int r = 0; r < TE_MAX_RANKS; ++r)
        world->fail_seq[r] = -1;
    return world;
}

void te_world_free(te_world *world)
{
    pthread_mutex_destroy(&world->lock);
    pthread_cond_destroy(&world->changed);
    free(world->ops);
    free(world);
}

static uint64_t next_random(te_world *world)
{
    world->random ^= world->random << 13;
    world->random ^= world->random >> 7;
    world->random ^= world->random << 17;
    return world->random;
}

void te_fail_start(te_world *world, int rank, int64_t seq)
{
    pthread_mutex_lock(&world->lock);
    world->fail_seq[rank] = seq;
    pthread_mutex_unlock(&world->lock);
}

void te_kill_rank(te_world *world, int rank)
{
    pthread_mutex_lock(&world->lock);
    world->dead[rank] = true;
    pthread_cond_broadcast(&world->changed);
    pthread_mutex_unlock(&world->lock);
}

int64_t te_calls(te_world *world, int rank)
{
    pthread_mutex_lock(&world->lock);
    const int64_t calls = world->next_seq[rank];
    pthread_mutex_unlock(&world->lock);
    return calls;
}

/* ---- the work ---------------------------------------------------------------------------- */

static size_t dtype_size(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

/* Sums element i over the ranks in rank order into every rank's buffer. */
#define TE_SUM(T, U) \
    for (int64_t i = 0; i < op->count; ++i) { \
        U sum = (U)((T *)op->buffers[0])[i]; \
        for (int r = 1; r < size; ++r) \
            sum = (U)(sum + (U)((T *)op->buffers[r])[i]); \
        for (int r = 0; r < size; ++r) \
            ((T *)op->buffers[r])[i] = (T)sum; \
    }

static void run_op(te_op *op, int size)
{
    if (op->kind == TE_BROADCAST) {
        for (int r = 0; r < size; ++r)
            if (r != op->root)
                memcpy(op->buffers[r], op->buffers[op->root], (size_t)op->count * dtype_size(op->dtype));
    } else if (op->kind == TE_ALLREDUCE) {
        switch (op->dtype) {
        case CBLOB_DTYPE_FLOAT32: TE_SUM(float, float) break;
        case CBLOB_DTYPE_FLOAT64: TE_SUM(double, double) break;
        case CBLOB_DTYPE_INT32: TE_SUM(int32_t, uint32_t) break; /* wraps, as MPI_SUM on most machines */
        case CBLOB_DTYPE_UINT32: TE_SUM(uint32_t, uint32_t) break;
        default: break;
        }
    }
    op->done = true;
}

/* Runs every collective all ranks have started, in an order drawn from the seed. */
static void run_ready_ops(te_world *world)
{
    int64_t oldest = world->next_seq[0];
    for (int r = 1; r < world->size; ++r)
        if (world->next_seq[r] < oldest)
            oldest = world->next_seq[r];
    int64_t ready[64];
    int n = 0;
    for (int64_t seq = 0; seq < oldest && n < 64; ++seq)
        if (!world->ops[seq].done)
            ready[n++] = seq;
    for (int i = n - 1; i > 0; --i) {
        const int j = (int)(next_random(world) % (uint64_t)(i + 1));
        const int64_t t = ready[i];
        ready[i] = ready[j];
        ready[j] = t;
    }
    for (int i = 0; i < n; ++i)
        run_op(&world->ops[ready[i]], world->size);
    pthread_cond_broadcast(&world->changed);
}

/* ---- the engine table ---------------------------------------------------------------------- */

static cblob_status start(te_rank *me, enum te_kind kind, void *buffer, int64_t count, cblob_dtype dtype, int32_t root,
                          void **out_pending, char *message, size_t message_size)
{
    te_world *world = me->world;
    pthread_mutex_lock(&world->lock);
    const int64_t seq = world->next_seq[me->rank];
    cblob_status status = CBLOB_OK;
    if (seq == world->fail_seq[me->rank] || seq >= TE_MAX_OPS) {
        snprintf(message, message_size, "rank %d: injected failure at collective #%lld", me->rank, (long long)seq);
        status = CBLOB_ERR_COMM;
    } else {
        te_op *op = &world->ops[seq];
        if (op->started == 0) {
            op->kind = kind;
            op->count = count;
            op->dtype = dtype;
            op->root = root;
        } else if (op->kind != kind || op->count != count || op->dtype != dtype || op->root != root) {
            snprintf(op->mismatch, sizeof op->mismatch,
                     "collective #%lld: rank %d started kind %d of %lld elements of dtype %d (root %d), others kind %d "
                     "of %lld of dtype %d (root %d)",
                     (long long)seq, me->rank, (int)kind, (long long)count, (int)dtype, (int)root, (int)op->kind,
                     (long long)op->count, (int)op->dtype, (int)op->root);
        }
        op->buffers[me->rank] = buffer;
        ++op->started;
        world->next_seq[me->rank] = seq + 1;
        *out_pending = (void *)(intptr_t)(seq + 1);
        pthread_cond_broadcast(&world->changed);
    }
    pthread_mutex_unlock(&world->lock);
    return status;
}

static cblob_status te_allreduce(void *state, void *buffer, int64_t count, cblob_dtype dtype, void **out_pending,
                                 char *message, size_t message_size)
{
    return start(state, TE_ALLREDUCE, buffer, count, dtype, 0, out_pending, message, message_size);
}

static cblob_status te_broadcast(void *state, void *buffer, int64_t count, cblob_dtype dtype, int32_t root,
                                 void **out_pending, char *message, size_t message_size)
{
    return start(state, TE_BROADCAST, buffer, count, dtype, root, out_pending, message, message_size);
}

static cblob_status te_barrier(void *state, void **out_pending, char *message, size_t message_size)
{
    return start(state, TE_BARRIER, NULL, 0, CBLOB_DTYPE_FLOAT32, 0, out_pending, message, message_size);
}

static int dead_absent_rank(const te_world *world, int64_t seq)
{
    for (int r = 0; r < world->size; ++r)
        if (world->dead[r] && world->next_seq[r] <= seq)
            return r;
    return -1;
}

static cblob_status te_wait(void *state, void *pending, int64_t timeout_ms, char *message, size_t message_size)
{
    te_rank *me = state;
    te_world *world = me->world;
    const int64_t seq = (int64_t)(intptr_t)pending - 1;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&world->lock);
    te_op *op = &world->ops[seq];
    cblob_status status = CBLOB_OK;
    while (!op->done && status == CBLOB_OK) {
        const int dead = dead_absent_rank(world, seq);
        if (op->mismatch[0] != '\0') {
            snprintf(message, message_size, "%s", op->mismatch);
            status = CBLOB_ERR_COMM;
        } else if (dead >= 0) {
            snprintf(message, message_size, "rank %d died before collective #%lld", dead, (long long)seq);
            status = CBLOB_ERR_COMM;
        } else if (op->started == world->size) {
            run_ready_ops(world);
        } else if ((timeout_ms < 0 ? pthread_cond_wait(&world->changed, &world->lock)
                                   : pthread_cond_timedwait(&world->changed, &world->lock, &deadline)) == ETIMEDOUT) {
            snprintf(message, message_size, "rank %d: collective #%lld: %d of %d ranks arrived within %lld ms", me->rank,
                     (long long)seq, op->started, world->size, (long long)timeout_ms);
            status = CBLOB_ERR_TIMEOUT;
        }
    }
    pthread_mutex_unlock(&world->lock);
    return status;
}

static void te_destroy(void *state)
{
    free(state);
}

cblob_comm_engine te_engine(te_world *world, int rank)
{
    te_rank *me = malloc(sizeof *me);
    me->world = world;
    me->rank = rank;
    return (cblob_comm_engine){
        .struct_size = sizeof(cblob_comm_engine),
        .name = "threads",
        .rank = rank,
        .size = world->size,
        .memory = CBLOB_MEMORY_HOST,
        .dtypes = (1u << CBLOB_DTYPE_FLOAT32) | (1u << CBLOB_DTYPE_FLOAT64) | (1u << CBLOB_DTYPE_INT32) |
                  (1u << CBLOB_DTYPE_UINT32),
        .state = me,
        .allreduce_sum = te_allreduce,
        .broadcast = te_broadcast,
        .barrier = te_barrier,
        .wait = te_wait,
        .destroy = te_destroy,
    };
}

/* ---- ranks as threads ---------------------------------------------------------------------- */

typedef struct te_thread {
    pthread_t thread;
    int rank;
    void (*fn)(int rank, void *arg);
    void *arg;
} te_thread;

static void *run_rank(void *p)
{
    te_thread *t = p;
    t->fn(t->rank, t->arg);
    return NULL;
}

void te_run_ranks(int size, void (*fn)(int rank, void *arg), void *arg)
{
    te_thread threads[TE_MAX_RANKS];
    for (int r = 0; r < size; ++r) {
        threads[r] = (te_thread){.rank = r, .fn = fn, .arg = arg};
        pthread_create(&threads[r].thread, NULL, run_rank, &threads[r]);
    }
    for (int r = 0; r < size; ++r)
        pthread_join(threads[r].thread, NULL);
}
