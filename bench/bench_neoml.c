/* SPDX-License-Identifier: BSD-2-Clause */
/* Throughput of the NeoML operations against memcpy of the same bytes, measured in one run.
 *
 *   bench_neoml [repetitions]
 *
 * Each line gives the operation's GB/s (bytes read + bytes written, over the best of the
 * repetitions), memcpy's GB/s on buffers of the same size, their ratio, and the target ratio.
 * Targets (issue 5): merge and split at least 0.7x memcpy; a transpose of the last two axes of a
 * 4096 x 4096 float32 matrix at least 0.3x memcpy. Not a test: numbers depend on the machine and
 * on what else runs on it. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cblob/cblob.h"

static int repetitions = 7;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void must(cblob_status status, const char *what)
{
    if (status != CBLOB_OK) {
        fprintf(stderr, "bench_neoml: %s failed: %s\n", what, cblob_last_error_message());
        exit(1);
    }
}

typedef cblob_status (*operation)(void *state);

/* The best time of the operation and of a memcpy of `bytes`, taken in turns so that both see the
 * same machine (this one is shared, and its speed drifts). Every page is touched once first. */
static void best_seconds(operation run, void *state, const char *what, size_t bytes, double *op_best,
                         double *copy_best)
{
    char *from = malloc(bytes), *to = malloc(bytes);
    if (from == NULL || to == NULL) {
        fprintf(stderr, "bench_neoml: no memory for %zu bytes\n", bytes);
        exit(1);
    }
    memset(from, 1, bytes);
    memset(to, 2, bytes);
    must(run(state), what);
    *op_best = *copy_best = 1e30;
    for (int r = 0; r < repetitions; ++r) {
        double start = now();
        must(run(state), what);
        double seconds = now() - start;
        *op_best = seconds < *op_best ? seconds : *op_best;
        start = now();
        memcpy(to, from, bytes);
        seconds = now() - start;
        *copy_best = seconds < *copy_best ? seconds : *copy_best;
    }
    if (to[bytes - 1] != 1) /* keeps the copies from being optimised away */
        exit(1);
    free(from);
    free(to);
}

static void report(operation run, void *state, const char *what, size_t bytes, double target)
{
    double seconds, copy;
    best_seconds(run, state, what, bytes, &seconds, &copy);
    const double gbs = 2.0 * (double)bytes / seconds * 1e-9, copy_gbs = 2.0 * (double)bytes / copy * 1e-9;
    printf("%-46s %6.1f MiB %7.2f GB/s  memcpy %7.2f GB/s  ratio %5.2f  (target >= %.1f)\n", what,
           (double)bytes / (1 << 20), gbs, copy_gbs, gbs / copy_gbs, target);
}

static cblob_blob *make(cblob_context *ctx, int32_t num_axes, const int64_t *dims)
{
    cblob_blob *blob;
    must(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, num_axes, dims, &blob), "create");
    must(cblob_blob_fill(blob, CBLOB_PART_DATA, 1.0), "fill");
    return blob;
}

typedef struct transpose_case {
    cblob_blob *from, *to;
    int32_t axis1, axis2;
} transpose_case;

static cblob_status run_transpose(void *state)
{
    transpose_case *c = state;
    return cblob_blob_transpose_from(c->to, c->from, CBLOB_PART_DATA, c->axis1, c->axis2);
}

typedef struct pieces_case {
    cblob_blob *whole;
    cblob_blob *pieces[8];
    int32_t num, axis;
} pieces_case;

static cblob_status run_merge(void *state)
{
    pieces_case *c = state;
    return cblob_blob_merge(c->whole, CBLOB_PART_DATA, c->axis, c->num, c->pieces);
}

static cblob_status run_split(void *state)
{
    pieces_case *c = state;
    return cblob_blob_split(c->whole, CBLOB_PART_DATA, c->axis, c->num, c->pieces);
}

static void bench_transpose(cblob_context *ctx, const char *what, int32_t num_axes, const int64_t *dims, int32_t axis1,
                            int32_t axis2, double target)
{
    int64_t swapped[CBLOB_MAX_AXES];
    memcpy(swapped, dims, (size_t)num_axes * sizeof dims[0]);
    swapped[axis1] = dims[axis2];
    swapped[axis2] = dims[axis1];
    transpose_case c = {make(ctx, num_axes, dims), make(ctx, num_axes, swapped), axis1, axis2};
    int64_t count;
    must(cblob_blob_count(c.from, &count), "count");
    report(run_transpose, &c, what, (size_t)count * sizeof(float), target);
    cblob_blob_destroy(c.from);
    cblob_blob_destroy(c.to);
}

/* `num` equal pieces of `dims` cut along `axis`, merged into and split from the whole. */
static void bench_pieces(cblob_context *ctx, const char *what, int32_t num_axes, const int64_t *dims, int32_t axis,
                         int32_t num)
{
    pieces_case c = {make(ctx, num_axes, dims), {NULL}, num, axis};
    int64_t piece[CBLOB_MAX_AXES];
    memcpy(piece, dims, (size_t)num_axes * sizeof dims[0]);
    piece[axis] = dims[axis] / num;
    for (int32_t i = 0; i < num; ++i)
        c.pieces[i] = make(ctx, num_axes, piece);
    int64_t count;
    must(cblob_blob_count(c.whole, &count), "count");
    char label[96];
    snprintf(label, sizeof label, "merge %s", what);
    report(run_merge, &c, label, (size_t)count * sizeof(float), 0.7);
    snprintf(label, sizeof label, "split %s", what);
    report(run_split, &c, label, (size_t)count * sizeof(float), 0.7);
    for (int32_t i = 0; i < num; ++i)
        cblob_blob_destroy(c.pieces[i]);
    cblob_blob_destroy(c.whole);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        repetitions = atoi(argv[1]) > 0 ? atoi(argv[1]) : repetitions;
    printf("cblob %s, %s; best of %d; GB/s counts bytes read + written\n", cblob_version(), cblob_cpu_features(),
           repetitions);
    cblob_context *ctx;
    must(cblob_context_create(&ctx), "context");

    const int64_t matrix[2] = {4096, 4096};
    bench_transpose(ctx, "transpose 4096x4096 float32 (last two axes)", 2, matrix, 0, 1, 0.3);
    const int64_t batch[3] = {16, 1024, 1024};
    bench_transpose(ctx, "transpose 16x1024x1024 float32 (last two axes)", 3, batch, 1, 2, 0.3);
    const int64_t image[4] = {64, 64, 64, 64};
    bench_transpose(ctx, "transpose 64^4 float32 (axes 1 and 3)", 4, image, 1, 3, 0.3);

    const int64_t rows[3] = {256, 256, 256};
    bench_pieces(ctx, "4 x (256,64,256) on axis 1 (64 KiB rows)", 3, rows, 1, 4);
    bench_pieces(ctx, "4 x (64,256,256) on axis 0 (whole blobs)", 3, rows, 0, 4);
    const int64_t narrow[2] = {65536, 256};
    bench_pieces(ctx, "4 x (65536,64) on axis 1 (256 B rows)", 2, narrow, 1, 4);
    const int64_t thin[2] = {1048576, 16};
    bench_pieces(ctx, "4 x (1048576,4) on axis 1 (16 B rows)", 2, thin, 1, 4);

    cblob_context_destroy(ctx);
    return 0;
}
