/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's blob math (update, asum, sumsq, scale) through the public API, against memcpy of the
 * same bytes, a plain loop doing the same work, and the direct BLIS call, all in one run.
 *
 * Bytes: the sizes of the arrays an operation reads (update reads data and diff and writes data:
 * 2 arrays; the others 1). memcpy copies the same number of bytes. Each figure is the best of
 * several timed batches, taken in turns with the other three, so a noisy neighbour costs
 * repetitions, not the result, and slows every contender alike.
 *
 * usage: bench_math [--quick]
 */
#include <blis.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_loops.h"
#include "cblob/cblob.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef void (*operation)(void *state);

static double batch_seconds = 0.02;
static int rounds = 15;

/* Calls per batch so that a batch lasts about batch_seconds. */
static long calls_per_batch(operation op, void *state)
{
    op(state); /* warm caches and lazy initialisation */
    long calls = 1;
    for (;;) {
        double start = now_seconds();
        for (long i = 0; i < calls; ++i)
            op(state);
        if (now_seconds() - start >= batch_seconds / 4 || calls > (1L << 30))
            return calls * 4;
        calls *= 2;
    }
}

/* Best time of one call for each of `count` operations, timed in turns (one batch of each per
 * round), so that a neighbour's load or a change in memory bandwidth during the run slows every
 * operation alike instead of whichever happened to run then. */
static void best_seconds_per_call(int count, const operation *ops, void *state, double *best)
{
    long calls[8];
    for (int k = 0; k < count; ++k) {
        calls[k] = calls_per_batch(ops[k], state);
        best[k] = INFINITY;
    }
    for (int r = 0; r < rounds; ++r) {
        /* The order turns each round: what ran just before decides how much of a buffer larger
         * than the L2 still sits in the L3, and no contender should always come after memcpy. */
        for (int turn = 0; turn < count; ++turn) {
            const int k = (turn + r) % count;
            double start = now_seconds();
            for (long i = 0; i < calls[k]; ++i)
                ops[k](state);
            const double per_call = (now_seconds() - start) / (double)calls[k];
            if (per_call < best[k])
                best[k] = per_call;
        }
    }
}

typedef struct state {
    cblob_blob *blob;
    cblob_dtype dtype;
    int64_t n;
    /* The blob's own data and diff: the loop and BLIS work on the same memory as cblob, so that
     * where the pages happen to live cannot favour one of them. */
    void *x, *y;
    /* The next factor of each scale implementation (cblob, loop, BLIS): each alternates 0.5 and
     * 2 on its own, so the values stay bounded (and normal) however the batches interleave. */
    int halve[3];
    void *copy_from, *copy_to;
    size_t copy_bytes;
    double sink;
} state;

static void check(cblob_status status, const char *what)
{
    if (status != CBLOB_OK) {
        fprintf(stderr, "bench_math: %s failed: %s\n", what, cblob_last_error_message());
        exit(1);
    }
}

/* ---- the operations, each as cblob, plain loop and BLIS ------------------------------------ */

static void op_memcpy(void *p)
{
    state *s = p;
    memcpy(s->copy_to, s->copy_from, s->copy_bytes);
}

static void cblob_update(void *p)
{
    check(cblob_blob_update(((state *)p)->blob), "update");
}
static void cblob_asum(void *p)
{
    state *s = p;
    check(cblob_blob_asum(s->blob, CBLOB_PART_DATA, &s->sink), "asum");
}
static void cblob_sumsq(void *p)
{
    state *s = p;
    check(cblob_blob_sumsq(s->blob, CBLOB_PART_DATA, &s->sink), "sumsq");
}
static double next_factor(state *s, int implementation)
{
    s->halve[implementation] = !s->halve[implementation];
    return s->halve[implementation] ? 0.5 : 2.0;
}

static void cblob_scale(void *p)
{
    state *s = p;
    check(cblob_blob_scale(s->blob, CBLOB_PART_DATA, next_factor(s, 0)), "scale");
}

static void loop_update(void *p)
{
    state *s = p;
    if (s->dtype == CBLOB_DTYPE_FLOAT32)
        loop_sub_f32(s->n, s->y, s->x);
    else
        loop_sub_f64(s->n, s->y, s->x);
}
static void loop_asum(void *p)
{
    state *s = p;
    s->sink = s->dtype == CBLOB_DTYPE_FLOAT32 ? loop_asum_f32(s->n, s->x) : loop_asum_f64(s->n, s->x);
}
static void loop_sumsq(void *p)
{
    state *s = p;
    s->sink = s->dtype == CBLOB_DTYPE_FLOAT32 ? loop_sumsq_f32(s->n, s->x) : loop_sumsq_f64(s->n, s->x);
}
static void loop_scale(void *p)
{
    state *s = p;
    const double factor = next_factor(s, 1);
    if (s->dtype == CBLOB_DTYPE_FLOAT32)
        loop_scale_f32(s->n, (float)factor, s->x);
    else
        loop_scale_f64(s->n, factor, s->x);
}

static void blis_update(void *p)
{
    state *s = p;
    if (s->dtype == CBLOB_DTYPE_FLOAT32) {
        float alpha = -1.0f;
        bli_saxpyv(BLIS_NO_CONJUGATE, (dim_t)s->n, &alpha, s->y, 1, s->x, 1);
    } else {
        double alpha = -1.0;
        bli_daxpyv(BLIS_NO_CONJUGATE, (dim_t)s->n, &alpha, s->y, 1, s->x, 1);
    }
}
static void blis_asum(void *p)
{
    state *s = p;
    if (s->dtype == CBLOB_DTYPE_FLOAT32) {
        float r;
        bli_sasumv((dim_t)s->n, s->x, 1, &r);
        s->sink = r;
    } else {
        bli_dasumv((dim_t)s->n, s->x, 1, &s->sink);
    }
}
static void blis_sumsq(void *p)
{
    state *s = p;
    if (s->dtype == CBLOB_DTYPE_FLOAT32) {
        float r;
        bli_sdotv(BLIS_NO_CONJUGATE, BLIS_NO_CONJUGATE, (dim_t)s->n, s->x, 1, s->x, 1, &r);
        s->sink = r;
    } else {
        bli_ddotv(BLIS_NO_CONJUGATE, BLIS_NO_CONJUGATE, (dim_t)s->n, s->x, 1, s->x, 1, &s->sink);
    }
}
static void blis_scale(void *p)
{
    state *s = p;
    double factor = next_factor(s, 2);
    if (s->dtype == CBLOB_DTYPE_FLOAT32) {
        float alpha = (float)factor;
        bli_sscalv(BLIS_NO_CONJUGATE, (dim_t)s->n, &alpha, s->x, 1);
    } else {
        bli_dscalv(BLIS_NO_CONJUGATE, (dim_t)s->n, &factor, s->x, 1);
    }
}

typedef struct benchmark {
    const char *name;
    int arrays; /* arrays read, for the byte count */
    operation cblob, loop, blis;
} benchmark;

static const benchmark benchmarks[] = {
    {"update", 2, cblob_update, loop_update, blis_update},
    {"asum", 1, cblob_asum, loop_asum, blis_asum},
    {"sumsq", 1, cblob_sumsq, loop_sumsq, blis_sumsq},
    {"scale", 1, cblob_scale, loop_scale, blis_scale},
};

/* Values in [-1, 1): update subtracts a small diff, so data drifts slowly and stays finite. */
static void fill(void *ptr, cblob_dtype dtype, int64_t n, double magnitude)
{
    for (int64_t i = 0; i < n; ++i) {
        double v = magnitude * ((double)((i * 7919) % 2000) / 1000.0 - 1.0);
        if (dtype == CBLOB_DTYPE_FLOAT32)
            ((float *)ptr)[i] = (float)v;
        else
            ((double *)ptr)[i] = v;
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--quick") == 0) {
        batch_seconds = 0.005;
        rounds = 5;
    }
    cblob_context *context;
    check(cblob_context_create(&context), "context");
    printf("cblob %s; %s; %s\n", cblob_version(), cblob_blas_info(), cblob_cpu_features());
    printf("GB/s counts the bytes of the arrays each operation reads; ratios are against memcpy of\n"
           "those bytes, a plain -O2 loop and the direct BLIS call, measured in this run.\n\n");
    printf("%-7s %-6s %9s %9s %9s %9s %9s | %8s %8s %8s %s\n", "dtype", "op", "n", "cblob", "memcpy", "loop",
           "BLIS", "/memcpy", "/loop", "/BLIS", "targets");

    const cblob_dtype dtypes[2] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64};
    const int64_t sizes[3] = {1000, 100000, 10000000};
    int misses = 0;
    for (int d = 0; d < 2; ++d) {
        const size_t element = dtypes[d] == CBLOB_DTYPE_FLOAT32 ? 4 : 8;
        for (int z = 0; z < 3; ++z) {
            const int64_t n = sizes[z];
            state s = {.dtype = dtypes[d], .n = n};
            check(cblob_blob_create(context, s.dtype, 1, &n, &s.blob), "create");
            check(cblob_blob_mutable_cpu_ptr(s.blob, CBLOB_PART_DATA, &s.x), "data");
            check(cblob_blob_mutable_cpu_ptr(s.blob, CBLOB_PART_DIFF, &s.y), "diff");
            fill(s.x, s.dtype, n, 1.0);
            fill(s.y, s.dtype, n, 1e-9);
            for (size_t b = 0; b < sizeof benchmarks / sizeof benchmarks[0]; ++b) {
                const benchmark *bm = &benchmarks[b];
                const double bytes = (double)bm->arrays * (double)n * (double)element;
                s.copy_bytes = (size_t)bytes;
                s.copy_from = malloc(s.copy_bytes);
                s.copy_to = malloc(s.copy_bytes);
                memset(s.copy_from, 1, s.copy_bytes);
                memset(s.copy_to, 2, s.copy_bytes);
                const operation ops[4] = {op_memcpy, bm->cblob, bm->loop, bm->blis};
                double best[4];
                best_seconds_per_call(4, ops, &s, best);
                const double t_memcpy = best[0], t_cblob = best[1], t_loop = best[2], t_blis = best[3];
                free(s.copy_from);
                free(s.copy_to);
                const double best_other = t_loop < t_blis ? t_loop : t_blis;
                /* The targets: >= 0.9x the faster of loop and BLIS everywhere; >= 0.8x
                 * memcpy at 1e7; asum >= 4x BLIS at 1e7. */
                const int fast_enough = best_other / t_cblob >= 0.9;
                const int memory_bound_ok = n < 10000000 || t_memcpy / t_cblob >= 0.8;
                const int asum_ok = n < 10000000 || strcmp(bm->name, "asum") != 0 || t_blis / t_cblob >= 4.0;
                const int ok = fast_enough && memory_bound_ok && asum_ok;
                misses += !ok;
                printf("%-7s %-6s %9lld %9.2f %9.2f %9.2f %9.2f | %8.2f %8.2f %8.2f %s\n",
                       s.dtype == CBLOB_DTYPE_FLOAT32 ? "float32" : "float64", bm->name, (long long)n,
                       bytes / t_cblob * 1e-9, bytes / t_memcpy * 1e-9, bytes / t_loop * 1e-9,
                       bytes / t_blis * 1e-9, t_memcpy / t_cblob, t_loop / t_cblob, t_blis / t_cblob,
                       ok ? "met" : "MISSED");
                fflush(stdout);
            }
            cblob_blob_destroy(s.blob);
        }
    }
    cblob_context_destroy(context);
    printf("\n%s\n", misses == 0 ? "all targets met" : "some targets missed (see MISSED rows)");
    return 0;
}
