/* SPDX-License-Identifier: BSD-2-Clause */
/* Communicators over the thread engine (thread_engine.h): every rank is a thread with its own
 * context, communicator and blobs. Each rank fills its blobs from (rank, blob, element), so a
 * serial reference computes what every rank must hold afterwards. Every communicator has a
 * timeout, so that a rank that fails a CHECK and leaves makes the others fail, not hang. */
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "thread_engine.h"

#define RANKS 4
#define TEST_TIMEOUT_MS 20000

typedef struct rank_env {
    cblob_context *ctx;
    cblob_comm *comm;
} rank_env;

static int open_rank(te_world *world, int rank, rank_env *env)
{
    const cblob_comm_engine engine = te_engine(world, rank);
    return cblob_context_create(&env->ctx) == CBLOB_OK && cblob_comm_create(env->ctx, &engine, &env->comm) == CBLOB_OK &&
           cblob_comm_set_timeout(env->comm, TEST_TIMEOUT_MS) == CBLOB_OK;
}

static void close_rank(rank_env *env)
{
    cblob_comm_destroy(env->comm);
    cblob_context_destroy(env->ctx);
}

/* The value rank `rank` starts with at element i of blob b: small integers (exact in every dtype
 * and every sum here), scaled by a fraction for float dtypes so that roundings show. */
static double start_value(int rank, int b, int64_t i, cblob_dtype dtype)
{
    const int v = (int)((i * 7 + b * 13 + rank * 29) % 41) - 20;
    if (dtype == CBLOB_DTYPE_UINT32)
        return (double)(v + 20);
    if (dtype == CBLOB_DTYPE_INT32)
        return (double)v;
    return (double)v * 0.1;
}

static void put(void *ptr, cblob_dtype dtype, int64_t i, double v)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: ((float *)ptr)[i] = (float)v; break;
    case CBLOB_DTYPE_FLOAT64: ((double *)ptr)[i] = v; break;
    case CBLOB_DTYPE_INT32: ((int32_t *)ptr)[i] = (int32_t)v; break;
    case CBLOB_DTYPE_UINT32: ((uint32_t *)ptr)[i] = (uint32_t)v; break;
    default: break;
    }
}

static double get(const void *ptr, cblob_dtype dtype, int64_t i)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return ((const float *)ptr)[i];
    case CBLOB_DTYPE_FLOAT64: return ((const double *)ptr)[i];
    case CBLOB_DTYPE_INT32: return ((const int32_t *)ptr)[i];
    case CBLOB_DTYPE_UINT32: return ((const uint32_t *)ptr)[i];
    default: return NAN;
    }
}

static size_t dtype_bytes(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

/* A blob of `count` elements whose `part` holds the rank's start values. */
static cblob_blob *make_blob(cblob_context *ctx, cblob_dtype dtype, int64_t count, int rank, int b, cblob_part part)
{
    cblob_blob *blob = NULL;
    void *ptr = NULL;
    if (cblob_blob_create(ctx, dtype, 1, &count, &blob) != CBLOB_OK ||
        (count > 0 && cblob_blob_mutable_cpu_ptr(blob, part, &ptr) != CBLOB_OK))
        return NULL;
    for (int64_t i = 0; i < count; ++i)
        put(ptr, dtype, i, start_value(rank, b, i, dtype));
    return blob;
}

/* The sum over the ranks of element i of blob b, added in rank order in the dtype, as the
 * engine adds. */
static double reference_sum(int ranks, int b, int64_t i, cblob_dtype dtype)
{
    unsigned char acc[8], term[8];
    put(acc, dtype, 0, start_value(0, b, i, dtype));
    for (int r = 1; r < ranks; ++r) {
        put(term, dtype, 0, start_value(r, b, i, dtype));
        put(acc, dtype, 0, get(acc, dtype, 0) + get(term, dtype, 0));
    }
    return get(acc, dtype, 0);
}

static int bytes_equal(cblob_blob *blob, cblob_part part, const void *expected, size_t bytes)
{
    const void *ptr = NULL;
    return cblob_blob_cpu_ptr(blob, part, &ptr) == CBLOB_OK && memcmp(ptr, expected, bytes) == 0;
}

/* ---- arenas ------------------------------------------------------------------------------ */

TEST(arena_lays_out_aligned_slices_that_members_share)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t counts[4] = {3, 17, 0, 5};
    cblob_blob *blobs[4];
    for (int b = 0; b < 4; ++b)
        CHECK((blobs[b] = make_blob(ctx, CBLOB_DTYPE_FLOAT32, counts[b], 0, b, CBLOB_PART_DIFF)) != NULL);
    cblob_blob *arena = NULL;
    CHECK_OK(cblob_arena_create(blobs, 4, CBLOB_PART_DIFF, 64, &arena));
    int64_t elements = 0;
    CHECK_OK(cblob_blob_count(arena, &elements));
    CHECK_EQ_INT(elements, (64 + 128 + 0 + 64) / 4); /* 12, 68 and 20 bytes rounded up to 64 */
    const float *base = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(arena, CBLOB_PART_DIFF, (const void **)&base));
    CHECK(((uintptr_t)base % 64) == 0);
    const int64_t offsets[4] = {0, 16, 48, 48};
    for (int b = 0; b < 4; ++b) {
        if (counts[b] == 0)
            continue;
        const float *member = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blobs[b], CBLOB_PART_DIFF, (const void **)&member));
        CHECK(member == base + offsets[b]);
        for (int64_t i = 0; i < counts[b]; ++i)
            CHECK(member[i] == (float)start_value(0, b, i, CBLOB_DTYPE_FLOAT32));
    }
    for (int64_t i = 3; i < 16; ++i)
        CHECK(base[i] == 0.0f); /* padding */
    /* One memory: a write through a member shows in the arena and back. */
    float *member1 = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blobs[1], CBLOB_PART_DIFF, (void **)&member1));
    member1[2] = 42.0f;
    CHECK(base[16 + 2] == 42.0f);
    /* The data part stays the blob's own. */
    const float *data = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blobs[1], CBLOB_PART_DATA, (const void **)&data));
    CHECK(data < base || data >= base + elements);
    /* Destroying the arena first leaves the members working on the buffer they hold. */
    cblob_blob_destroy(arena);
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blobs[1], CBLOB_PART_DIFF, (void **)&member1));
    member1[0] = 1.0f;
    for (int b = 0; b < 4; ++b)
        cblob_blob_destroy(blobs[b]);
    cblob_context_destroy(ctx);
}

TEST(arena_member_grown_past_its_slice_leaves_the_arena)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blobs[2];
    for (int b = 0; b < 2; ++b)
        CHECK((blobs[b] = make_blob(ctx, CBLOB_DTYPE_FLOAT64, 4, 0, b, CBLOB_PART_DATA)) != NULL);
    cblob_blob *arena = NULL;
    CHECK_OK(cblob_arena_create(blobs, 2, CBLOB_PART_DATA, 64, &arena));
    const double *base = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(arena, CBLOB_PART_DATA, (const void **)&base));
    const double before = base[8];
    /* Shrinking stays in the slice; growing gives the blob memory of its own. */
    const int64_t two = 2, nine = 9;
    CHECK_OK(cblob_blob_reshape(blobs[1], 1, &two));
    const double *member = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blobs[1], CBLOB_PART_DATA, (const void **)&member));
    CHECK(member == base + 8);
    CHECK_OK(cblob_blob_reshape(blobs[1], 1, &nine));
    double *grown = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blobs[1], CBLOB_PART_DATA, (void **)&grown));
    CHECK(grown < base || grown >= base + 16);
    grown[0] = 99.0;
    CHECK(base[8] == before);
    /* The blob that left can be listed with the arena: they no longer overlap. */
    te_world *world = te_world_new(1, 1);
    const cblob_comm_engine engine = te_engine(world, 0);
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create(ctx, &engine, &comm));
    CHECK_OK(cblob_comm_allreduce(comm, (cblob_blob *const[]){arena, blobs[1]}, 2, CBLOB_PART_DATA, CBLOB_REDUCE_SUM));
    CHECK_ERROR(cblob_comm_allreduce(comm, (cblob_blob *const[]){arena, blobs[0]}, 2, CBLOB_PART_DATA, CBLOB_REDUCE_SUM),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "overlap") != NULL);
    cblob_comm_destroy(comm);
    te_world_free(world);
    cblob_blob_destroy(blobs[0]);
    cblob_blob_destroy(arena);
    cblob_blob_destroy(blobs[1]);
    cblob_context_destroy(ctx);
}

TEST(arena_refuses_arenas_and_mixed_contexts_and_changes_nothing)
{
    cblob_context *ctx = NULL, *other = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_context_create(&other));
    cblob_blob *a = make_blob(ctx, CBLOB_DTYPE_FLOAT32, 5, 0, 0, CBLOB_PART_DIFF);
    cblob_blob *b = make_blob(other, CBLOB_DTYPE_FLOAT32, 5, 0, 1, CBLOB_PART_DIFF);
    CHECK(a != NULL && b != NULL);
    const void *a_diff = NULL, *after = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(a, CBLOB_PART_DIFF, &a_diff));
    cblob_blob *arena = NULL;
    CHECK_ERROR(cblob_arena_create((cblob_blob *const[]){a, b}, 2, CBLOB_PART_DIFF, 64, &arena), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(arena == NULL);
    CHECK_OK(cblob_blob_cpu_ptr(a, CBLOB_PART_DIFF, &after));
    CHECK(after == a_diff);
    CHECK_OK(cblob_arena_create((cblob_blob *const[]){a}, 1, CBLOB_PART_DIFF, 64, &arena));
    cblob_blob *nested = NULL;
    CHECK_ERROR(cblob_arena_create((cblob_blob *const[]){arena}, 1, CBLOB_PART_DIFF, 64, &nested), CBLOB_ERR_STATE);
    /* A member moves to a newer arena; the old one no longer counts it. */
    cblob_blob *second = NULL;
    CHECK_OK(cblob_arena_create((cblob_blob *const[]){a}, 1, CBLOB_PART_DIFF, 128, &second));
    const float *in_second = NULL, *member = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(second, CBLOB_PART_DIFF, (const void **)&in_second));
    CHECK_OK(cblob_blob_cpu_ptr(a, CBLOB_PART_DIFF, (const void **)&member));
    CHECK(member == in_second && member[4] == (float)start_value(0, 0, 4, CBLOB_DTYPE_FLOAT32));
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_blob_destroy(arena);
    cblob_blob_destroy(second);
    cblob_context_destroy(ctx);
    cblob_context_destroy(other);
}

/* ---- collectives over ranks ------------------------------------------------------------------ */

#define MAX_BLOBS 256

typedef struct scenario {
    te_world *world;
    cblob_dtype dtype;
    cblob_reduce_op op;
    int num_blobs;
    int64_t counts[MAX_BLOBS];
    int64_t bucket_bytes;
    bool one_by_one;
    bool use_arena;
    bool nonblocking;
    int64_t engine_calls;
    /* Rank 0's results, for comparisons between scenarios: blob b's bytes at results[b]. */
    unsigned char *results[MAX_BLOBS];
} scenario;

static void allreduce_rank(int rank, void *arg)
{
    scenario *s = arg;
    rank_env env;
    CHECK(open_rank(s->world, rank, &env));
    CHECK_OK(cblob_comm_set_bucket_bytes(env.comm, s->bucket_bytes));
    cblob_blob *blobs[MAX_BLOBS];
    for (int b = 0; b < s->num_blobs; ++b)
        CHECK((blobs[b] = make_blob(env.ctx, s->dtype, s->counts[b], rank, b, CBLOB_PART_DIFF)) != NULL);
    cblob_blob *arena = NULL;
    if (s->use_arena)
        CHECK_OK(cblob_arena_create(blobs, s->num_blobs, CBLOB_PART_DIFF, 64, &arena));
    if (s->one_by_one) {
        for (int b = 0; b < s->num_blobs; ++b)
            CHECK_OK(cblob_comm_allreduce(env.comm, &blobs[b], 1, CBLOB_PART_DIFF, s->op));
    } else if (s->nonblocking) {
        /* Two requests in flight at once, waited for in the opposite order. */
        const int half = s->num_blobs / 2;
        cblob_comm_request *first = NULL, *second = NULL;
        CHECK_OK(cblob_comm_allreduce_start(env.comm, blobs, half, CBLOB_PART_DIFF, s->op, &first));
        CHECK_OK(cblob_comm_allreduce_start(env.comm, blobs + half, s->num_blobs - half, CBLOB_PART_DIFF, s->op, &second));
        CHECK_OK(cblob_comm_request_wait(second));
        CHECK_OK(cblob_comm_request_wait(first));
        CHECK_OK(cblob_comm_request_wait(first)); /* again: the same status, nothing done twice */
        cblob_comm_request_destroy(first);
        cblob_comm_request_destroy(second);
    } else {
        cblob_blob **list = arena != NULL ? &arena : blobs;
        CHECK_OK(cblob_comm_allreduce(env.comm, list, arena != NULL ? 1 : s->num_blobs, CBLOB_PART_DIFF, s->op));
    }
    int32_t size = 0;
    CHECK_OK(cblob_comm_size(env.comm, &size));
    for (int b = 0; b < s->num_blobs; ++b) {
        const void *ptr = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blobs[b], CBLOB_PART_DIFF, &ptr));
        for (int64_t i = 0; i < s->counts[b]; ++i) {
            double want = reference_sum(size, b, i, s->dtype);
            if (s->op == CBLOB_REDUCE_AVERAGE) {
                unsigned char scaled[8]; /* the sum times 1/size, rounded in the dtype */
                put(scaled, s->dtype, 0, want);
                put(scaled, s->dtype, 0, get(scaled, s->dtype, 0) * (s->dtype == CBLOB_DTYPE_FLOAT32 ? (double)(1.0f / (float)size) : 1.0 / size));
                want = get(scaled, s->dtype, 0);
            }
            CHECK_MSG(get(ptr, s->dtype, i) == want, "rank %d blob %d element %" PRId64 ": %.17g, expected %.17g", rank, b,
                      i, get(ptr, s->dtype, i), want);
        }
        if (rank == 0 && s->results[b] != NULL && s->counts[b] > 0)
            memcpy(s->results[b], ptr, (size_t)s->counts[b] * dtype_bytes(s->dtype));
    }
    if (rank == 0)
        s->engine_calls = te_calls(s->world, 0);
    for (int b = 0; b < s->num_blobs; ++b)
        cblob_blob_destroy(blobs[b]);
    cblob_blob_destroy(arena);
    close_rank(&env);
}

static void run_scenario(scenario *s, uint64_t seed)
{
    s->world = te_world_new(RANKS, seed);
    te_run_ranks(RANKS, allreduce_rank, s);
    te_world_free(s->world);
}

static void varied_counts(scenario *s, int num_blobs)
{
    s->num_blobs = num_blobs;
    for (int b = 0; b < num_blobs; ++b)
        s->counts[b] = (b * 37) % 53 + (b % 11 == 0 ? 0 : 1); /* some blobs without elements */
}

TEST(allreduce_sum_and_average_of_every_dtype_match_a_serial_reference)
{
    const cblob_dtype dtypes[4] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64, CBLOB_DTYPE_INT32, CBLOB_DTYPE_UINT32};
    for (int d = 0; d < 4; ++d)
        for (cblob_reduce_op op = CBLOB_REDUCE_SUM; op <= CBLOB_REDUCE_AVERAGE; ++op) {
            if (op == CBLOB_REDUCE_AVERAGE && (dtypes[d] == CBLOB_DTYPE_INT32 || dtypes[d] == CBLOB_DTYPE_UINT32))
                continue;
            scenario s = {.dtype = dtypes[d], .op = op, .bucket_bytes = 256};
            varied_counts(&s, 40);
            run_scenario(&s, 7 + (uint64_t)d);
            CHECK(!cbt_failed());
        }
}

TEST(fused_buckets_arena_and_one_by_one_give_the_same_bits)
{
    const int n = 200;
    unsigned char *store[4][MAX_BLOBS];
    scenario variants[4] = {
        {.dtype = CBLOB_DTYPE_FLOAT32, .op = CBLOB_REDUCE_AVERAGE, .one_by_one = true, .bucket_bytes = 1 << 20},
        {.dtype = CBLOB_DTYPE_FLOAT32, .op = CBLOB_REDUCE_AVERAGE, .bucket_bytes = 1024},
        {.dtype = CBLOB_DTYPE_FLOAT32, .op = CBLOB_REDUCE_AVERAGE, .bucket_bytes = 0},
        {.dtype = CBLOB_DTYPE_FLOAT32, .op = CBLOB_REDUCE_AVERAGE, .use_arena = true, .bucket_bytes = 1024},
    };
    for (int v = 0; v < 4; ++v) {
        varied_counts(&variants[v], n);
        for (int b = 0; b < n; ++b)
            variants[v].results[b] = store[v][b] = calloc(64, 4);
        run_scenario(&variants[v], 100 + (uint64_t)v);
        CHECK(!cbt_failed());
    }
    for (int v = 1; v < 4; ++v)
        for (int b = 0; b < n; ++b)
            CHECK_MSG(memcmp(store[0][b], store[v][b], (size_t)variants[0].counts[b] * 4) == 0, "variant %d, blob %d", v, b);
    /* 200 calls alone (less the blobs without elements); far fewer fused; one for the arena. Each
     * collective also makes one call for the ranks' agreement. */
    int with_elements = 0;
    for (int b = 0; b < n; ++b)
        with_elements += variants[0].counts[b] > 0;
    CHECK_EQ_INT(variants[0].engine_calls, n + with_elements);
    CHECK_EQ_INT(variants[2].engine_calls, 1 + with_elements);
    CHECK(variants[1].engine_calls < 1 + with_elements / 4);
    CHECK_EQ_INT(variants[3].engine_calls, 1 + 1);
    for (int v = 0; v < 4; ++v)
        for (int b = 0; b < n; ++b)
            free(store[v][b]);
}

TEST(requests_in_flight_finish_in_any_order)
{
    scenario s = {.dtype = CBLOB_DTYPE_FLOAT64, .op = CBLOB_REDUCE_SUM, .nonblocking = true, .bucket_bytes = 512};
    varied_counts(&s, 30);
    for (uint64_t seed = 1; seed <= 5; ++seed) {
        run_scenario(&s, seed);
        CHECK(!cbt_failed());
    }
}

/* ---- broadcast and barrier --------------------------------------------------------------------- */

static void broadcast_rank(int rank, void *arg)
{
    te_world *world = arg;
    rank_env env;
    CHECK(open_rank(world, rank, &env));
    CHECK_OK(cblob_comm_set_bucket_bytes(env.comm, 100));
    cblob_blob *blobs[6];
    for (int b = 0; b < 6; ++b)
        CHECK((blobs[b] = make_blob(env.ctx, b % 2 ? CBLOB_DTYPE_INT32 : CBLOB_DTYPE_FLOAT32, 3 + b * 9, rank, b,
                                    CBLOB_PART_DATA)) != NULL);
    CHECK_OK(cblob_comm_broadcast(env.comm, blobs, 6, CBLOB_PART_DATA, 2));
    CHECK_OK(cblob_comm_barrier(env.comm));
    for (int b = 0; b < 6; ++b) {
        const cblob_dtype dtype = b % 2 ? CBLOB_DTYPE_INT32 : CBLOB_DTYPE_FLOAT32;
        const void *ptr = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blobs[b], CBLOB_PART_DATA, &ptr));
        for (int64_t i = 0; i < 3 + b * 9; ++i) {
            unsigned char want[8];
            put(want, dtype, 0, start_value(2, b, i, dtype));
            CHECK(get(ptr, dtype, i) == get(want, dtype, 0));
        }
        cblob_blob_destroy(blobs[b]);
    }
    int32_t me = -1;
    CHECK_OK(cblob_comm_rank(env.comm, &me));
    CHECK_EQ_INT(me, rank);
    close_rank(&env);
}

TEST(broadcast_copies_the_roots_values_to_every_rank)
{
    te_world *world = te_world_new(RANKS, 3);
    te_run_ranks(RANKS, broadcast_rank, world);
    te_world_free(world);
}

/* ---- failures ---------------------------------------------------------------------------------- */

typedef struct failure {
    te_world *world;
    int victim;          /* the rank that dies, never arrives, fails its start, or differs */
    enum { LOST, KILLED, START_FAILS, MISMATCH, MISMATCH_UNCHECKED } how;
    int64_t failed_call; /* START_FAILS: the engine call that fails */
    cblob_status seen[RANKS];
    char messages[RANKS][512];
    cblob_status after[RANKS]; /* the next collective on the same communicator */
} failure;

static void failing_rank(int rank, void *arg)
{
    failure *f = arg;
    rank_env env;
    CHECK(open_rank(f->world, rank, &env));
    CHECK_OK(cblob_comm_set_timeout(env.comm, 300));
    cblob_blob *blob = make_blob(env.ctx, CBLOB_DTYPE_FLOAT32, 100, rank, 0, CBLOB_PART_DIFF);
    CHECK(blob != NULL);
    CHECK_OK(cblob_comm_allreduce(env.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM)); /* all healthy */
    if (rank == f->victim && f->how == LOST) {
        cblob_blob_destroy(blob);
        close_rank(&env); /* leaves without a word */
        return;
    }
    if (rank == f->victim && f->how == KILLED) {
        te_kill_rank(f->world, rank);
        cblob_blob_destroy(blob);
        close_rank(&env);
        return;
    }
    if (rank == f->victim && f->how == START_FAILS) {
        f->failed_call = te_calls(f->world, rank); /* the next one */
        te_fail_start(f->world, rank, f->failed_call);
    }
    if (f->how == MISMATCH_UNCHECKED)
        CHECK_OK(cblob_comm_set_agreement_check(env.comm, 0));
    const int64_t count = rank == f->victim && (f->how == MISMATCH || f->how == MISMATCH_UNCHECKED) ? 99 : 100;
    if (count != 100) {
        const int64_t shape[1] = {count};
        CHECK_OK(cblob_blob_reshape(blob, 1, shape));
    }
    f->seen[rank] = cblob_comm_allreduce(env.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE);
    snprintf(f->messages[rank], sizeof f->messages[rank], "%s", cblob_last_error_message());
    int64_t after_count = 0;
    CHECK_OK(cblob_blob_count(blob, &after_count));
    CHECK_EQ_INT(after_count, count); /* shapes survive a failed collective */
    f->after[rank] = cblob_comm_barrier(env.comm);
    cblob_blob_destroy(blob);
    close_rank(&env);
}

static void run_failure(failure *f)
{
    f->world = te_world_new(RANKS, 11);
    te_run_ranks(RANKS, failing_rank, f);
    te_world_free(f->world);
}

TEST(a_rank_that_never_arrives_times_the_others_out)
{
    failure f = {.victim = 3, .how = LOST};
    run_failure(&f);
    for (int r = 0; r < 3; ++r) {
        CHECK_MSG(f.seen[r] == CBLOB_ERR_TIMEOUT, "rank %d: %s", r, cblob_status_name(f.seen[r]));
        CHECK_MSG(strstr(f.messages[r], "cblob_comm_allreduce") != NULL && strstr(f.messages[r], "threads") != NULL &&
                      strstr(f.messages[r], "3 of 4 ranks") != NULL,
                  "rank %d: %s", r, f.messages[r]);
        CHECK_EQ_INT(f.after[r], CBLOB_ERR_COMM); /* broken from then on */
    }
}

TEST(a_rank_that_dies_gives_the_others_an_error)
{
    failure f = {.victim = 1, .how = KILLED};
    run_failure(&f);
    for (int r = 0; r < RANKS; ++r) {
        if (r == 1)
            continue;
        CHECK_MSG(f.seen[r] == CBLOB_ERR_COMM, "rank %d: %s", r, cblob_status_name(f.seen[r]));
        CHECK_MSG(strstr(f.messages[r], "rank 1 died") != NULL, "rank %d: %s", r, f.messages[r]);
        CHECK_EQ_INT(f.after[r], CBLOB_ERR_COMM);
    }
}

TEST(an_engine_failure_at_start_carries_the_engines_message)
{
    failure f = {.victim = 2, .how = START_FAILS};
    run_failure(&f);
    CHECK_EQ_INT(f.seen[2], CBLOB_ERR_COMM);
    char injected[64];
    snprintf(injected, sizeof injected, "injected failure at collective #%d", (int)f.failed_call);
    CHECK_MSG(strstr(f.messages[2], injected) != NULL, "%s", f.messages[2]);
    for (int r = 0; r < RANKS; ++r) {
        if (r != 2)
            CHECK_EQ_INT(f.seen[r], CBLOB_ERR_TIMEOUT);
        CHECK_EQ_INT(f.after[r], CBLOB_ERR_COMM);
    }
}

/* The agreement finds it before anything is sent: every rank fails alike, still usable. */
TEST(ranks_that_disagree_on_a_collective_all_fail)
{
    failure f = {.victim = 0, .how = MISMATCH};
    run_failure(&f);
    for (int r = 0; r < RANKS; ++r) {
        CHECK_MSG(f.seen[r] == CBLOB_ERR_SHAPE, "rank %d: %s", r, cblob_status_name(f.seen[r]));
        CHECK_MSG(strstr(f.messages[r], "blobs[0]: rank 1 has 100 float32, rank 0 99 float32") != NULL, "rank %d: %s",
                  r, f.messages[r]);
        CHECK_EQ_INT(f.after[r], CBLOB_OK);
    }
}

/* Turned off, the agreement leaves the disagreement to the engine (the thread engine finds it,
 * as MPI need not), which breaks the communicator. */
TEST(without_the_agreement_the_engine_meets_the_disagreement)
{
    failure f = {.victim = 0, .how = MISMATCH_UNCHECKED};
    run_failure(&f);
    for (int r = 0; r < RANKS; ++r) {
        CHECK_MSG(f.seen[r] == CBLOB_ERR_COMM, "rank %d: %s", r, cblob_status_name(f.seen[r]));
        CHECK_MSG(strstr(f.messages[r], "99") != NULL, "rank %d: %s", r, f.messages[r]);
        CHECK_EQ_INT(f.after[r], CBLOB_ERR_COMM);
    }
}

/* ---- ranks that disagree: the agreement ---------------------------------------------------------- */

/* Each rank lists STANDARD float32 blobs of 100 elements (diff: its start values) to a call that
 * makes it differ from the others; every rank must return `want` with a message containing
 * `needle`, the same words on every rank; the blobs must keep their values (nothing was sent),
 * and an all-reduce of them afterwards must give the reference sums (the communicator stays
 * usable). The thread engine ends the test with CBLOB_ERR_COMM if any engine call mismatched. */
#define STANDARD 4
#define ODD (RANKS - 1)

typedef cblob_status (*disagreeing_call)(rank_env *env, int rank, cblob_blob **blobs);

typedef struct disagreement {
    te_world *world;
    disagreeing_call call;
    cblob_status want;
    const char *needle;
    int refusing; /* the rank that refuses its own arguments (its message is its own), or -1 */
    cblob_status seen[RANKS];
    char messages[RANKS][1024];
    bool intact[RANKS];
    cblob_status after[RANKS];
} disagreement;

static bool intact_blobs(cblob_blob **blobs, int rank)
{
    for (int b = 0; b < STANDARD; ++b) {
        float expected[100];
        for (int64_t i = 0; i < 100; ++i)
            expected[i] = (float)start_value(rank, b, i, CBLOB_DTYPE_FLOAT32);
        if (!bytes_equal(blobs[b], CBLOB_PART_DIFF, expected, sizeof expected))
            return false;
    }
    return true;
}

static void disagreeing_rank(int rank, void *arg)
{
    disagreement *d = arg;
    rank_env env;
    CHECK(open_rank(d->world, rank, &env));
    cblob_blob *blobs[STANDARD];
    for (int b = 0; b < STANDARD; ++b)
        CHECK((blobs[b] = make_blob(env.ctx, CBLOB_DTYPE_FLOAT32, 100, rank, b, CBLOB_PART_DIFF)) != NULL);
    d->seen[rank] = d->call(&env, rank, blobs);
    snprintf(d->messages[rank], sizeof d->messages[rank], "%s", cblob_last_error_message());
    d->intact[rank] = intact_blobs(blobs, rank);
    d->after[rank] = cblob_comm_allreduce(env.comm, blobs, STANDARD, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM);
    for (int b = 0; b < STANDARD && d->after[rank] == CBLOB_OK; ++b) {
        const float *sum = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blobs[b], CBLOB_PART_DIFF, (const void **)&sum));
        for (int64_t i = 0; i < 100; ++i)
            CHECK(sum[i] == (float)reference_sum(RANKS, b, i, CBLOB_DTYPE_FLOAT32));
    }
    for (int b = 0; b < STANDARD; ++b)
        cblob_blob_destroy(blobs[b]);
    close_rank(&env);
}

static void expect_disagreement(disagreeing_call call, cblob_status want, const char *needle, int refusing)
{
    disagreement d = {
        .world = te_world_new(RANKS, 31), .call = call, .want = want, .needle = needle, .refusing = refusing};
    te_run_ranks(RANKS, disagreeing_rank, &d);
    te_world_free(d.world);
    for (int r = 0; r < RANKS; ++r) {
        CHECK_MSG(d.seen[r] == want, "rank %d: %s, expected %s: %s", r, cblob_status_name(d.seen[r]),
                  cblob_status_name(want), d.messages[r]);
        CHECK_MSG(r == refusing || strstr(d.messages[r], needle) != NULL, "rank %d: \"%s\" does not say \"%s\"", r,
                  d.messages[r], needle);
        const int reference = refusing == 0 ? 1 : 0;
        const char *mine = strstr(d.messages[r], ": "), *theirs = strstr(d.messages[reference], ": ");
        CHECK_MSG(r == refusing || (mine != NULL && theirs != NULL && strcmp(mine, theirs) == 0),
                  "rank %d says \"%s\", rank %d \"%s\"", r, d.messages[r], reference, d.messages[reference]);
        CHECK_MSG(d.intact[r], "rank %d: a blob's values changed", r);
        CHECK_MSG(d.after[r] == CBLOB_OK, "rank %d: the communicator is no longer usable: %s", r,
                  cblob_status_name(d.after[r]));
    }
}

static cblob_status standard_allreduce(rank_env *env, cblob_blob **blobs, cblob_reduce_op op)
{
    return cblob_comm_allreduce(env->comm, blobs, STANDARD, CBLOB_PART_DIFF, op);
}

/* A list with blobs[1] replaced by a blob of `count` elements of dtype on the odd rank. */
static cblob_status odd_blob_1(rank_env *env, int rank, cblob_blob **blobs, cblob_dtype dtype, int64_t count)
{
    if (rank != ODD)
        return standard_allreduce(env, blobs, CBLOB_REDUCE_SUM);
    cblob_blob *other = make_blob(env->ctx, dtype, count, rank, 1, CBLOB_PART_DIFF);
    cblob_blob *list[STANDARD] = {blobs[0], other, blobs[2], blobs[3]};
    const cblob_status status = standard_allreduce(env, list, CBLOB_REDUCE_SUM);
    cblob_blob_destroy(other);
    return status;
}

static cblob_status count_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return odd_blob_1(env, rank, blobs, CBLOB_DTYPE_FLOAT32, 99);
}

static cblob_status dtype_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return odd_blob_1(env, rank, blobs, CBLOB_DTYPE_FLOAT64, 100);
}

static cblob_status bucket_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    if (rank == ODD && cblob_comm_set_bucket_bytes(env->comm, 64) != CBLOB_OK)
        return CBLOB_ERR_INTERNAL;
    const cblob_status status = standard_allreduce(env, blobs, CBLOB_REDUCE_SUM);
    cblob_comm_set_bucket_bytes(env->comm, CBLOB_COMM_DEFAULT_BUCKET_BYTES);
    return status;
}

static cblob_status root_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return cblob_comm_broadcast(env->comm, blobs, STANDARD, CBLOB_PART_DIFF, rank == ODD ? 1 : 0);
}

static cblob_status op_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return standard_allreduce(env, blobs, rank == ODD ? CBLOB_REDUCE_AVERAGE : CBLOB_REDUCE_SUM);
}

static cblob_status part_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return cblob_comm_allreduce(env->comm, blobs, STANDARD, rank == ODD ? CBLOB_PART_DATA : CBLOB_PART_DIFF,
                                CBLOB_REDUCE_SUM);
}

static cblob_status list_length_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return cblob_comm_allreduce(env->comm, blobs, rank == ODD ? STANDARD - 1 : STANDARD, CBLOB_PART_DIFF,
                                CBLOB_REDUCE_SUM);
}

static cblob_status kind_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return rank == ODD ? cblob_comm_broadcast(env->comm, blobs, STANDARD, CBLOB_PART_DIFF, 0)
                       : standard_allreduce(env, blobs, CBLOB_REDUCE_SUM);
}

static cblob_status barrier_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return rank == ODD ? cblob_comm_barrier(env->comm) : standard_allreduce(env, blobs, CBLOB_REDUCE_SUM);
}

/* The odd rank averages a uint32 blob: it refuses its own arguments. */
static cblob_status odd_rank_refuses(rank_env *env, int rank, cblob_blob **blobs)
{
    if (rank != ODD)
        return standard_allreduce(env, blobs, CBLOB_REDUCE_AVERAGE);
    cblob_blob *integers = make_blob(env->ctx, CBLOB_DTYPE_UINT32, 100, rank, 1, CBLOB_PART_DIFF);
    cblob_blob *list[STANDARD] = {blobs[0], integers, blobs[2], blobs[3]};
    const cblob_status status = standard_allreduce(env, list, CBLOB_REDUCE_AVERAGE);
    cblob_blob_destroy(integers);
    return status;
}

/* Rank 0 lists a blob twice. */
static cblob_status rank_0_refuses(rank_env *env, int rank, cblob_blob **blobs)
{
    if (rank != 0)
        return standard_allreduce(env, blobs, CBLOB_REDUCE_SUM);
    cblob_blob *list[STANDARD] = {blobs[0], blobs[1], blobs[2], blobs[1]};
    return standard_allreduce(env, list, CBLOB_REDUCE_SUM);
}

/* Every rank but 0 differs, each its own way: rank 1, the lowest, is named. */
static cblob_status every_rank_differs(rank_env *env, int rank, cblob_blob **blobs)
{
    return odd_blob_1(env, rank == 0 ? 0 : ODD, blobs, CBLOB_DTYPE_FLOAT32, 100 + rank);
}

/* The start already fails: no request to wait for. */
static cblob_status start_fails(rank_env *env, int rank, cblob_blob **blobs)
{
    cblob_comm_request *request = NULL;
    const cblob_status status = cblob_comm_allreduce_start(env->comm, blobs, rank == ODD ? 2 : 3, CBLOB_PART_DIFF,
                                                           CBLOB_REDUCE_SUM, &request);
    return request == NULL ? status : CBLOB_ERR_INTERNAL;
}

/* 600 small blobs (the detail rounds carry a few blobs at a time), the odd rank's 450th longer. */
static cblob_status far_in_a_long_list(rank_env *env, int rank, cblob_blob **blobs)
{
    (void)blobs;
    enum { N = 600 };
    cblob_blob *list[N];
    for (int b = 0; b < N; ++b)
        list[b] = make_blob(env->ctx, CBLOB_DTYPE_FLOAT32, rank == ODD && b == 450 ? 5 : 4, rank, b, CBLOB_PART_DIFF);
    const cblob_status status = cblob_comm_allreduce(env->comm, list, N, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM);
    for (int b = 0; b < N; ++b)
        cblob_blob_destroy(list[b]);
    return status;
}

TEST(agreement_counts_that_differ)
{
    expect_disagreement(count_differs, CBLOB_ERR_SHAPE,
                        "the ranks disagree, nothing was sent: blobs[1]: rank 3 has 99 float32, rank 0 100 float32",
                        -1);
}

TEST(agreement_dtypes_that_differ)
{
    expect_disagreement(dtype_differs, CBLOB_ERR_DTYPE, "blobs[1]: rank 3 has 100 float64, rank 0 100 float32", -1);
}

TEST(agreement_bucket_sizes_that_differ)
{
    expect_disagreement(bucket_differs, CBLOB_ERR_INVALID_ARGUMENT,
                        "rank 3 fuses up to 64 bytes per bucket, rank 0 up to 8388608", -1);
}

TEST(agreement_roots_that_differ)
{
    expect_disagreement(root_differs, CBLOB_ERR_INVALID_ARGUMENT,
                        "rank 3 broadcasts from root 1, rank 0 from root 0", -1);
}

TEST(agreement_ops_that_differ)
{
    expect_disagreement(op_differs, CBLOB_ERR_INVALID_ARGUMENT, "rank 3 averages, rank 0 sums", -1);
}

TEST(agreement_parts_that_differ)
{
    expect_disagreement(part_differs, CBLOB_ERR_INVALID_ARGUMENT, "rank 3 works on the data, rank 0 on the diff", -1);
}

TEST(agreement_list_lengths_that_differ)
{
    expect_disagreement(list_length_differs, CBLOB_ERR_INVALID_ARGUMENT, "rank 3 lists 3 blobs, rank 0 4", -1);
}

TEST(agreement_collectives_that_differ)
{
    expect_disagreement(kind_differs, CBLOB_ERR_INVALID_ARGUMENT, "rank 3 calls a broadcast, rank 0 an all-reduce", -1);
    expect_disagreement(barrier_differs, CBLOB_ERR_INVALID_ARGUMENT,
                        "rank 3 calls a barrier, rank 0 an all-reduce", -1);
}

TEST(agreement_a_rank_that_refuses_its_arguments_fails_every_rank_with_its_status)
{
    expect_disagreement(odd_rank_refuses, CBLOB_ERR_DTYPE,
                        "rank 3 refused an all-reduce (CBLOB_ERR_DTYPE: blobs[1] is uint32: an average is defined for "
                        "float dtypes only)", ODD);
    expect_disagreement(rank_0_refuses, CBLOB_ERR_INVALID_ARGUMENT,
                        "rank 0 refused an all-reduce (CBLOB_ERR_INVALID_ARGUMENT: blobs[3] is blobs[1] again)", 0);
}

TEST(agreement_names_the_lowest_rank_that_differs)
{
    expect_disagreement(every_rank_differs, CBLOB_ERR_SHAPE,
                        "blobs[1]: rank 1 has 101 float32, rank 0 100 float32", -1);
}

TEST(agreement_refuses_at_the_start)
{
    expect_disagreement(start_fails, CBLOB_ERR_INVALID_ARGUMENT, "rank 3 lists 2 blobs, rank 0 3", -1);
}

TEST(agreement_finds_a_difference_far_in_a_long_list)
{
    expect_disagreement(far_in_a_long_list, CBLOB_ERR_SHAPE, "blobs[450]: rank 3 has 5 float32, rank 0 4 float32", -1);
}

/* The agreement costs one engine call per collective, none with it turned off; a barrier with it
 * is the agreement alone. */
static void counting_rank(int rank, void *arg)
{
    te_world *world = arg;
    rank_env env;
    CHECK(open_rank(world, rank, &env));
    cblob_blob *blob = make_blob(env.ctx, CBLOB_DTYPE_FLOAT32, 10, rank, 0, CBLOB_PART_DIFF);
    int64_t calls = te_calls(world, rank);
    CHECK_OK(cblob_comm_allreduce(env.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    CHECK_EQ_INT(te_calls(world, rank) - calls, 2);
    calls = te_calls(world, rank);
    CHECK_OK(cblob_comm_barrier(env.comm));
    CHECK_EQ_INT(te_calls(world, rank) - calls, 1);
    CHECK_ERROR(cblob_comm_set_agreement_check(env.comm, 2), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(cblob_comm_set_agreement_check(env.comm, 0));
    calls = te_calls(world, rank);
    CHECK_OK(cblob_comm_allreduce(env.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    CHECK_OK(cblob_comm_barrier(env.comm));
    CHECK_EQ_INT(te_calls(world, rank) - calls, 2);
    CHECK_OK(cblob_comm_set_agreement_check(env.comm, 1));
    calls = te_calls(world, rank);
    CHECK_OK(cblob_comm_allreduce(env.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    CHECK_EQ_INT(te_calls(world, rank) - calls, 2);
    cblob_blob_destroy(blob);
    close_rank(&env);
}

TEST(agreement_costs_one_engine_call_and_turns_off)
{
    te_world *world = te_world_new(RANKS, 32);
    te_run_ranks(RANKS, counting_rank, world);
    te_world_free(world);
}

/* An engine that takes only float32 carries the agreement in 16-bit pieces (a count above 2^16
 * spans several): it still tells. */
static void float32_engine_rank(int rank, void *arg)
{
    te_world *world = arg;
    cblob_comm_engine engine = te_engine(world, rank);
    engine.dtypes = 1u << CBLOB_DTYPE_FLOAT32;
    rank_env env;
    CHECK_OK(cblob_context_create(&env.ctx));
    CHECK_OK(cblob_comm_create(env.ctx, &engine, &env.comm));
    CHECK_OK(cblob_comm_set_timeout(env.comm, TEST_TIMEOUT_MS));
    cblob_blob *blob = make_blob(env.ctx, CBLOB_DTYPE_FLOAT32, rank == ODD ? 100000 : 7, rank, 0,
                                 CBLOB_PART_DIFF);
    CHECK_ERROR(cblob_comm_allreduce(env.comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM), CBLOB_ERR_SHAPE);
    CHECK_MSG(strstr(cblob_last_error_message(), "blobs[0]: rank 3 has 100000 float32, rank 0 7 float32") != NULL, "%s",
              cblob_last_error_message());
    CHECK_OK(cblob_comm_barrier(env.comm));
    cblob_blob_destroy(blob);
    close_rank(&env);
}

TEST(agreement_over_an_engine_of_float32_only)
{
    te_world *world = te_world_new(RANKS, 33);
    te_run_ranks(RANKS, float32_engine_rank, world);
    te_world_free(world);
}

/* ---- one rank: arguments ------------------------------------------------------------------------ */

TEST(bad_lists_fail_before_anything_starts_and_leave_the_communicator_usable)
{
    te_world *world = te_world_new(1, 5);
    rank_env env;
    CHECK(open_rank(world, 0, &env));
    cblob_blob *f32 = make_blob(env.ctx, CBLOB_DTYPE_FLOAT32, 8, 0, 0, CBLOB_PART_DIFF);
    cblob_blob *u32 = make_blob(env.ctx, CBLOB_DTYPE_UINT32, 8, 0, 1, CBLOB_PART_DIFF);
    CHECK(f32 != NULL && u32 != NULL);
    const void *before = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(u32, CBLOB_PART_DIFF, &before));
    unsigned char saved[32];
    memcpy(saved, before, sizeof saved);
    CHECK_ERROR(cblob_comm_allreduce(env.comm, (cblob_blob *const[]){f32, u32}, 2, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE),
                CBLOB_ERR_DTYPE);
    CHECK(strstr(cblob_last_error_message(), "blobs[1] is uint32") != NULL);
    CHECK(bytes_equal(u32, CBLOB_PART_DIFF, saved, sizeof saved));
    CHECK_EQ_INT(te_calls(world, 0), 0);
    CHECK_ERROR(cblob_comm_broadcast(env.comm, &f32, 1, CBLOB_PART_DIFF, 1), CBLOB_ERR_OUT_OF_RANGE);
    /* Still usable; an integer sum is exact, and an empty list starts nothing. */
    CHECK_OK(cblob_comm_allreduce(env.comm, (cblob_blob *const[]){f32, u32}, 2, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    CHECK(bytes_equal(u32, CBLOB_PART_DIFF, saved, sizeof saved));
    CHECK_OK(cblob_comm_allreduce(env.comm, NULL, 0, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    CHECK_EQ_INT(te_calls(world, 0), 2); /* one bucket per dtype */
    /* Destroying a request nobody waited for finishes it. */
    cblob_comm_request *request = NULL;
    CHECK_OK(cblob_comm_allreduce_start(env.comm, &f32, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM, &request));
    cblob_comm_request_destroy(request);
    CHECK_OK(cblob_comm_barrier(env.comm));
    cblob_blob_destroy(f32);
    cblob_blob_destroy(u32);
    close_rank(&env);
    te_world_free(world);
}

/* A whole net's list: a duplicate, windows that overlap with another window between them, and an
 * arena with its member are found wherever they sit in the list, and nothing starts. */
TEST(overlaps_far_apart_in_a_long_list_are_found)
{
    te_world *world = te_world_new(1, 6);
    rank_env env;
    CHECK(open_rank(world, 0, &env));
    enum { N = 600 };
    cblob_blob *blobs[N + 1];
    for (int b = 0; b < N; ++b)
        CHECK((blobs[b] = make_blob(env.ctx, CBLOB_DTYPE_FLOAT32, 4, 0, b, CBLOB_PART_DIFF)) != NULL);
    CHECK_OK(cblob_comm_allreduce(env.comm, blobs, N, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    cblob_blob *const kept = blobs[100];
    blobs[N] = blobs[3];
    CHECK_ERROR(cblob_comm_allreduce(env.comm, blobs, N + 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "blobs[600] is blobs[3] again") != NULL);
    /* Windows of one parent: [0, 64), [8, 12) and [32, 40): the first and the last overlap although
     * [8, 12) sorts between them. */
    cblob_blob *parent = make_blob(env.ctx, CBLOB_DTYPE_FLOAT32, 64, 0, N, CBLOB_PART_DIFF), *windows[3];
    CHECK(parent != NULL);
    const int64_t sizes[3] = {64, 4, 8}, positions[3] = {0, 8, 32};
    for (int w = 0; w < 3; ++w) {
        CHECK_OK(cblob_window_create(parent, sizes[w], &windows[w]));
        CHECK_OK(cblob_window_set_position(windows[w], positions[w]));
    }
    blobs[100] = windows[2];
    blobs[N] = windows[0];
    CHECK_ERROR(cblob_comm_allreduce(env.comm, blobs, N + 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "the diff of blobs[100] and blobs[600] overlap") != NULL);
    CHECK_OK(cblob_comm_allreduce(env.comm, (cblob_blob *const[]){windows[1], windows[2]}, 2, CBLOB_PART_DIFF,
                                  CBLOB_REDUCE_SUM));
    /* An arena of the first ten, listed last, with its members blobs[5..9] first in the list. */
    blobs[100] = make_blob(env.ctx, CBLOB_DTYPE_FLOAT32, 4, 0, N + 1, CBLOB_PART_DIFF);
    CHECK(blobs[100] != NULL);
    cblob_blob *arena = NULL;
    CHECK_OK(cblob_arena_create(blobs, 10, CBLOB_PART_DIFF, 64, &arena));
    blobs[N] = arena;
    CHECK_ERROR(cblob_comm_allreduce(env.comm, blobs + 5, N - 4, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "the diff of blobs[0] and blobs[595] overlap") != NULL);
    CHECK_OK(cblob_comm_allreduce(env.comm, blobs + 10, N - 9, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    CHECK_EQ_INT(te_calls(world, 0), 3); /* only the lists that passed */
    cblob_blob_destroy(arena);
    cblob_blob_destroy(blobs[100]);
    for (int w = 0; w < 3; ++w)
        cblob_blob_destroy(windows[w]);
    cblob_blob_destroy(parent);
    blobs[100] = kept;
    for (int b = 0; b < N; ++b)
        cblob_blob_destroy(blobs[b]);
    close_rank(&env);
    te_world_free(world);
}

static cblob_status refuse_wait(void *state, void *pending, int64_t timeout_ms, char *message, size_t message_size)
{
    (void)state, (void)pending, (void)timeout_ms, (void)message, (void)message_size;
    return CBLOB_OK;
}

TEST(an_engine_without_a_dtype_refuses_it_by_name)
{
    te_world *world = te_world_new(1, 5);
    cblob_comm_engine engine = te_engine(world, 0);
    engine.dtypes = 1u << CBLOB_DTYPE_FLOAT32;
    engine.wait = refuse_wait;
    cblob_context *ctx = NULL;
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_comm_create(ctx, &engine, &comm));
    cblob_blob *f64 = make_blob(ctx, CBLOB_DTYPE_FLOAT64, 3, 0, 0, CBLOB_PART_DATA);
    CHECK_ERROR(cblob_comm_broadcast(comm, &f64, 1, CBLOB_PART_DATA, 0), CBLOB_ERR_DTYPE);
    CHECK(strstr(cblob_last_error_message(), "engine \"threads\" does not take") != NULL);
    cblob_blob_destroy(f64);
    cblob_comm_destroy(comm);
    cblob_context_destroy(ctx);
    te_world_free(world);
}

/* ---- NCCL without a GPU ------------------------------------------------------------------------- */

TEST(nccl_without_a_gpu_says_so_before_looking_for_nccl)
{
    setenv("CBLOB_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    setenv("CBLOB_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
    CHECK_ERROR(cblob_comm_nccl_unique_id(id, sizeof id), CBLOB_ERR_NO_DRIVER);
    cblob_context *ctx = NULL;
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    memset(id, 0, sizeof id);
    CHECK_ERROR(cblob_comm_create_nccl(ctx, id, 2, 1, &comm), CBLOB_ERR_NO_DRIVER);
    CHECK_ERROR(cblob_comm_create_nccl(ctx, id, 2, 2, &comm), CBLOB_ERR_OUT_OF_RANGE); /* arguments first */
    CHECK(comm == NULL);
    cblob_context_destroy(ctx);
}

/* ---- a rank that turns up late -------------------------------------------------------------------- */

typedef struct late {
    te_world *world;
    bool agreement;
    atomic_int timed_out;
    cblob_status seen[RANKS];
} late;

/* Ranks 0..2 time out and destroy their blobs at once; rank 3 then joins the collective, and the
 * engine completes it, writing into every rank's buffer: memory the communicators must still
 * hold (ASan reports a use after free otherwise). Without the agreement the buffers are the
 * blobs' and the buckets; with it, the agreement's, and rank 3 then waits alone for the data. */
static void late_rank(int rank, void *arg)
{
    late *l = arg;
    rank_env env;
    CHECK(open_rank(l->world, rank, &env));
    CHECK_OK(cblob_comm_set_agreement_check(env.comm, l->agreement));
    cblob_blob *blobs[3];
    for (int b = 0; b < 3; ++b)
        CHECK((blobs[b] = make_blob(env.ctx, CBLOB_DTYPE_FLOAT64, 20 + b, rank, b, CBLOB_PART_DIFF)) != NULL);
    if (rank == RANKS - 1) {
        while (atomic_load(&l->timed_out) < RANKS - 1)
            sched_yield();
        if (l->agreement)
            CHECK_OK(cblob_comm_set_timeout(env.comm, 100));
    } else {
        CHECK_OK(cblob_comm_set_timeout(env.comm, 100));
    }
    l->seen[rank] = cblob_comm_allreduce(env.comm, blobs, 3, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM);
    for (int b = 0; b < 3; ++b)
        cblob_blob_destroy(blobs[b]);
    if (rank != RANKS - 1) {
        atomic_fetch_add(&l->timed_out, 1);
        while (atomic_load(&l->timed_out) < RANKS) /* until the late rank is done */
            sched_yield();
    } else {
        atomic_fetch_add(&l->timed_out, 1);
    }
    close_rank(&env);
}

TEST(a_late_rank_writes_only_into_memory_the_communicators_still_hold)
{
    late l = {.world = te_world_new(RANKS, 17)};
    te_run_ranks(RANKS, late_rank, &l);
    te_world_free(l.world);
    for (int r = 0; r < RANKS - 1; ++r)
        CHECK_EQ_INT(l.seen[r], CBLOB_ERR_TIMEOUT);
    CHECK_EQ_INT(l.seen[RANKS - 1], CBLOB_OK);
}

TEST(a_late_rank_writes_only_into_agreement_buffers_the_communicators_still_hold)
{
    late l = {.world = te_world_new(RANKS, 18), .agreement = true};
    te_run_ranks(RANKS, late_rank, &l);
    te_world_free(l.world);
    for (int r = 0; r < RANKS; ++r)
        CHECK_EQ_INT(l.seen[r], CBLOB_ERR_TIMEOUT);
}
