/* SPDX-License-Identifier: BSD-2-Clause */
/* Throughput of the NeoML operations (transposes, merges, splits) against memcpy of the same
 * bytes, measured in one run.
 *
 *   bench_neoml [rounds]
 *
 * Each operation runs through the public API on one thread and on the context's default threads
 * (the CPUs the process may use), in turns with memcpy between two blobs' own buffers of the same
 * size (so the page size, 2 MiB pages where the kernel gives them, is the same on both sides).
 * GB/s counts bytes read plus bytes written; each figure is the median of the rounds with min-max.
 * Targets (issues 5 and 15): merge and split at least 0.7x memcpy; the transpose of the last two
 * axes of a 4096 x 4096 matrix at least 0.7x memcpy, every dtype. Not a test: numbers depend on
 * the machine and on what else runs on it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"
#include "cblob/cblob.h"

static bench_plan plan = {.rounds = 9, .batch_seconds = 0.05};
static cblob_context *context;
static int32_t default_threads;

static void must(cblob_status status, const char *what)
{
    if (status != CBLOB_OK) {
        fprintf(stderr, "bench_neoml: %s failed: %s\n", what, cblob_last_error_message());
        exit(1);
    }
}

static size_t element_size(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

static cblob_blob *make(cblob_dtype dtype, int32_t num_axes, const int64_t *dims)
{
    cblob_blob *blob;
    must(cblob_blob_create(context, dtype, num_axes, dims, &blob), "create");
    must(cblob_blob_fill(blob, CBLOB_PART_DATA, 1.0), "fill");
    return blob;
}

/* What every case shares: the operation, its thread count for this turn, and two buffers of the
 * operation's size for memcpy. */
typedef struct bench_case {
    void (*operation)(struct bench_case *c);
    int32_t threads;
    void *copy_from, *copy_to;
    size_t bytes;
    cblob_blob *from, *to;
    cblob_blob *pieces[8];
    int32_t axis1, axis2, num;
} bench_case;

static void run_memcpy(void *state)
{
    bench_case *c = state;
    memcpy(c->copy_to, c->copy_from, c->bytes);
}

static void run_with_threads(bench_case *c, int32_t threads)
{
    must(cblob_context_set_num_threads(context, threads), "set_num_threads");
    c->operation(c);
}

static void run_one_thread(void *state)
{
    run_with_threads(state, 1);
}

static void run_default_threads(void *state)
{
    run_with_threads(state, 0);
}

static void transpose(bench_case *c)
{
    must(cblob_blob_transpose_from(c->to, c->from, CBLOB_PART_DATA, c->axis1, c->axis2), "transpose");
}

static void merge(bench_case *c)
{
    must(cblob_blob_merge(c->from, CBLOB_PART_DATA, c->axis1, c->num, c->pieces), "merge");
}

static void split(bench_case *c)
{
    must(cblob_blob_split(c->from, CBLOB_PART_DATA, c->axis1, c->num, c->pieces), "split");
}

static void report(bench_case *c, const char *what, double target)
{
    const bench_contender contenders[3] = {
        {"memcpy", run_memcpy, NULL, c}, {"1 thread", run_one_thread, NULL, c}, {"default threads", run_default_threads, NULL, c}};
    bench_time t[3];
    bench_measure(&plan, 3, contenders, t);
    const double bytes = 2.0 * (double)c->bytes * 1e-9;
    printf("%-44s %7.2f (%5.2f-%5.2f) | %7.2f %5.2fx | %7.2f %5.2fx | %.1f %s\n", what, bytes / t[0].median,
           bytes / t[0].max, bytes / t[0].min, bytes / t[1].median, t[0].median / t[1].median, bytes / t[2].median,
           t[0].median / t[2].median, target, t[0].median / t[1].median >= target ? "met" : "MISSED");
    fflush(stdout);
}

/* memcpy's buffers: the data of two blobs of the operation's size, so their pages are cblob's. */
static void copy_buffers(bench_case *c, cblob_dtype dtype, int64_t count, cblob_blob **keep)
{
    c->bytes = (size_t)count * element_size(dtype);
    must(cblob_blob_create(context, dtype, 1, &count, &keep[0]), "create");
    must(cblob_blob_create(context, dtype, 1, &count, &keep[1]), "create");
    must(cblob_blob_mutable_cpu_ptr(keep[0], CBLOB_PART_DATA, &c->copy_from), "data");
    must(cblob_blob_mutable_cpu_ptr(keep[1], CBLOB_PART_DATA, &c->copy_to), "data");
    memset(c->copy_from, 1, c->bytes);
    memset(c->copy_to, 2, c->bytes);
}

static void bench_transpose(const char *what, cblob_dtype dtype, int32_t num_axes, const int64_t *dims, int32_t axis1,
                            int32_t axis2, double target)
{
    int64_t swapped[CBLOB_MAX_AXES], count = 1;
    memcpy(swapped, dims, (size_t)num_axes * sizeof dims[0]);
    swapped[axis1] = dims[axis2];
    swapped[axis2] = dims[axis1];
    for (int32_t i = 0; i < num_axes; ++i)
        count *= dims[i];
    bench_case c = {.operation = transpose, .from = make(dtype, num_axes, dims), .to = make(dtype, num_axes, swapped),
                    .axis1 = axis1, .axis2 = axis2};
    cblob_blob *copies[2];
    copy_buffers(&c, dtype, count, copies);
    report(&c, what, target);
    cblob_blob_destroy(c.from);
    cblob_blob_destroy(c.to);
    cblob_blob_destroy(copies[0]);
    cblob_blob_destroy(copies[1]);
}

/* `num` equal pieces of `dims` cut along `axis`, merged into and split from the whole. */
static void bench_pieces(const char *what, int32_t num_axes, const int64_t *dims, int32_t axis, int32_t num)
{
    bench_case c = {.from = make(CBLOB_DTYPE_FLOAT32, num_axes, dims), .axis1 = axis, .num = num};
    int64_t piece[CBLOB_MAX_AXES], count = 1;
    memcpy(piece, dims, (size_t)num_axes * sizeof dims[0]);
    piece[axis] = dims[axis] / num;
    for (int32_t i = 0; i < num; ++i)
        c.pieces[i] = make(CBLOB_DTYPE_FLOAT32, num_axes, piece);
    for (int32_t i = 0; i < num_axes; ++i)
        count *= dims[i];
    cblob_blob *copies[2];
    copy_buffers(&c, CBLOB_DTYPE_FLOAT32, count, copies);
    char label[96];
    c.operation = merge;
    snprintf(label, sizeof label, "merge %s", what);
    report(&c, label, 0.7);
    c.operation = split;
    snprintf(label, sizeof label, "split %s", what);
    report(&c, label, 0.7);
    for (int32_t i = 0; i < num; ++i)
        cblob_blob_destroy(c.pieces[i]);
    cblob_blob_destroy(c.from);
    cblob_blob_destroy(copies[0]);
    cblob_blob_destroy(copies[1]);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        plan.rounds = bench_parse_rounds(argv[1]);
    must(cblob_context_create(&context), "context");
    must(cblob_context_num_threads(context, &default_threads), "num_threads");
    bench_print_machine("bench_neoml");
    printf("cblob %s, %s; median of %d interleaved rounds (min-max); GB/s counts bytes read + written;\n"
           "ratios are memcpy time / operation time; the default is %d threads; memcpy runs on one\n\n",
           cblob_version(), cblob_cpu_features(), plan.rounds, (int)default_threads);
    printf("%-44s %-21s | %-13s | %-13s | target\n", "operation", "memcpy GB/s", "1 thread", "default");

    const int64_t matrix[2] = {4096, 4096};
    bench_transpose("transpose 4096x4096 float32 (last two axes)", CBLOB_DTYPE_FLOAT32, 2, matrix, 0, 1, 0.7);
    bench_transpose("transpose 4096x4096 float64 (last two axes)", CBLOB_DTYPE_FLOAT64, 2, matrix, 0, 1, 0.7);
    bench_transpose("transpose 4096x4096 int32 (last two axes)", CBLOB_DTYPE_INT32, 2, matrix, 0, 1, 0.7);
    bench_transpose("transpose 4096x4096 uint32 (last two axes)", CBLOB_DTYPE_UINT32, 2, matrix, 0, 1, 0.7);
    const int64_t batch[3] = {16, 1024, 1024};
    bench_transpose("transpose 16x1024x1024 float32 (last two)", CBLOB_DTYPE_FLOAT32, 3, batch, 1, 2, 0.7);
    const int64_t image[4] = {64, 64, 64, 64};
    bench_transpose("transpose 64^4 float32 (axes 1 and 3)", CBLOB_DTYPE_FLOAT32, 4, image, 1, 3, 0.3);

    const int64_t rows[3] = {256, 256, 256};
    bench_pieces("4 x (256,64,256) on axis 1 (64 KiB)", 3, rows, 1, 4);
    bench_pieces("4 x (64,256,256) on axis 0 (whole)", 3, rows, 0, 4);
    const int64_t narrow[2] = {65536, 256};
    bench_pieces("4 x (65536,64) on axis 1 (256 B)", 2, narrow, 1, 4);
    const int64_t thin[2] = {1048576, 16};
    bench_pieces("4 x (1048576,4) on axis 1 (16 B)", 2, thin, 1, 4);

    cblob_context_destroy(context);
    return 0;
}
