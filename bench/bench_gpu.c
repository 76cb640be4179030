/* SPDX-License-Identifier: BSD-2-Clause */
/* GPU bandwidth, sums, row widths, ordering hazards and per-call host cost (issues 13 and 25): a
 * benchmark for a machine with a GPU, not a test. It prints what it measured in one run; without
 * a usable GPU (or on the test double of the driver, whose timings mean nothing) it says why,
 * measures nothing and exits 0. It exits 1 when a hazard check below reproduces its hazard.
 * scripts/gpu-check.sh runs it and summarises its "summary:" lines.
 *
 *   bandwidth   each kernel family (the generated kernel) and each cuBLAS call on float32 vectors
 *               of 64 Mi elements, against cuMemcpyDtoDAsync of the same bytes: the median of
 *               interleaved repetitions, with the min-max range, as bytes moved per second. Each
 *               path of a kernel gets its line: element-wise kernels on aligned vectors and on
 *               windows misaligned against each other (one element at a time), the transpose's
 *               tiles (inner 1), one small side (NCHW to NHWC with 3 channels, and back), runs
 *               (inner 64) and long runs through the kernel and through the copy engines' 2D
 *               copies, the strided copy kernel on long and on 3-element rows.
 *               Targets (issue 25): element-wise kernels and reductions at least 0.85 of the copy,
 *               transpose at least 0.7 (the small-side case included).
 *   sums        asum and sumsq of float32 and float64, the generated two-pass kernels (what the
 *               library runs) against cuBLAS's: time and value. Target: within 10% of cuBLAS.
 *   rows        a strided copy of rows of 4 bytes to 64 KiB (every other row), the kernel against
 *               one cuMemcpy2DAsync: the library sends every strided copy to the kernel, which
 *               beat the 2D copy at every width on an H200 (cuda/cuda_copy.h); a width at
 *               which the 2D copy wins on another GPU shows here.
 *   hazards     the ordering hazards of issue 25 on the GPU, as regression checks: the GPU is kept
 *               busy on a consumer's or producer's stream (large copies queued first) so that a
 *               missing wait shows as wrong values: memory behind a pointer freed under a
 *               consumer's queued read and handed to cblob's next blob, and a producer's write
 *               that cblob's import must wait for.
 *   host cost   cblob_blob_scale (queues a cuBLAS call) and cblob_blob_asum (waits for its sum) on a
 *               one-element blob, from 1 to 16 threads at once, one context per thread: the median
 *               time per call.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "cuda/families.h"
#include "cblob/dlpack.h"
#include "cuda_blas.h"
#include "cuda_copy.h"
#include "cuda_device.h"
#include "cuda_queue.h"

#define ELEMENTS ((int64_t)64 << 20)
#define ROUNDS 11 /* at most: rounds below */

/* CBLOB_BENCH_GPU_SMOKE=1: every section on small vectors with few rounds, also on the test double
 * of the driver, to show the benchmark runs (scripts/gpu-check.sh --compile-only); its timings
 * mean nothing. */
static bool smoke;
static int rounds = ROUNDS;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- bandwidth ---------------------------------------------------------------------------------- */

typedef struct vectors {
    const cb_device *device;
    void *x, *y;
    int64_t n;
} vectors;

typedef cblob_status (*run_fn)(const vectors *v);

typedef struct variant {
    const char *name;
    run_fn run;
    double bytes_per_element; /* read and written */
    double target;            /* against the copy; 0: none */
    double seconds[ROUNDS];
} variant;

static cblob_status copy(const vectors *v)
{
    return v->device->backend->memory->copy(v->device, v->y, v->x, (size_t)v->n * sizeof(float), CB_COPY_DEVICE_TO_DEVICE);
}
static cblob_status fill(const vectors *v) { return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].fill(v->device, v->n, 1.0, v->y); }
static cblob_status add(const vectors *v) { return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].add(v->device, v->n, v->x, v->y); }
/* x one element past y's phase: the arrays never align together, every element is loaded alone. */
static cblob_status add_misaligned(const vectors *v)
{
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].add(v->device, v->n - 1, (const float *)v->x + 1, v->y);
}
static cblob_status axpy(const vectors *v) { return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].axpy(v->device, v->n, -1.0, v->x, v->y); }
static cblob_status axpy_misaligned(const vectors *v)
{
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].axpy(v->device, v->n - 1, -1.0, (const float *)v->x + 1, v->y);
}
static cblob_status axpy_blas(const vectors *v) { return cb_cublas_axpy(v->device, CBLOB_DTYPE_FLOAT32, v->n, -1.0, v->x, v->y); }
static cblob_status scale(const vectors *v) { return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].scale(v->device, v->n, 0.5, v->y); }
static cblob_status scale_blas(const vectors *v) { return cb_cublas_scale(v->device, CBLOB_DTYPE_FLOAT32, v->n, 0.5, v->y); }
/* float64 on the same bytes: half as many elements. */
static cblob_status axpy64(const vectors *v) { return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT64].axpy(v->device, v->n / 2, -1.0, v->x, v->y); }
static cblob_status axpy64_blas(const vectors *v) { return cb_cublas_axpy(v->device, CBLOB_DTYPE_FLOAT64, v->n / 2, -1.0, v->x, v->y); }
static cblob_status scale64(const vectors *v) { return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT64].scale(v->device, v->n / 2, 0.5, v->y); }
static cblob_status scale64_blas(const vectors *v) { return cb_cublas_scale(v->device, CBLOB_DTYPE_FLOAT64, v->n / 2, 0.5, v->y); }
static cblob_status asum(const vectors *v)
{
    double sum;
    return cb_cuda_kernels[CBLOB_DTYPE_FLOAT32].asum(v->device, v->n, v->x, &sum);
}
static cblob_status sumsq(const vectors *v)
{
    double sum;
    return cb_cuda_kernels[CBLOB_DTYPE_FLOAT32].sumsq(v->device, v->n, v->x, &sum);
}
static cblob_status convert(const vectors *v)
{
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].convert_to_i32(v->device, v->n, v->x, v->y);
}
/* A square matrix of the vector's elements, rows and columns swapped: the tiles. */
static cblob_status transpose(const vectors *v)
{
    int64_t side = 1; /* 8192 for the full vectors */
    while (side * side * 4 <= v->n)
        side *= 2;
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].transpose(v->device, side * side, 1, side, 1, side, 1, v->x, v->y);
}
/* NCHW to NHWC with 3 channels (224 x 224 images, as many as fit; 16 x 16 in a smoke run): one
 * side of 3. */
static int64_t image_pixels(void)
{
    return smoke ? 16 * 16 : 224 * 224;
}
static int64_t images(const vectors *v)
{
    return v->n / (3 * image_pixels());
}
static cblob_status transpose_to_channels_last(const vectors *v)
{
    const int64_t n = images(v), hw = image_pixels();
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].transpose(v->device, n * 3 * hw, n, 3, 1, hw, 1, v->x, v->y);
}
static cblob_status transpose_to_channels_first(const vectors *v)
{
    const int64_t n = images(v), hw = image_pixels();
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].transpose(v->device, n * 3 * hw, n, hw, 1, 3, 1, v->x, v->y);
}
/* Square grids of runs of 64 elements swapped (1024 x 1024 for the full vectors): the kernel's runs. */
static cblob_status transpose_runs(const vectors *v)
{
    int64_t side = 1;
    while (side * side * 4 * 64 <= v->n)
        side *= 2;
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].transpose(v->device, side * side * 64, 1, side, 1, side, 64, v->x, v->y);
}
/* 4 x 4 runs of 4 Mi elements: the kernel (the copy engines' 2D copies: transpose_long_runs_2d, below). */
static cblob_status transpose_long_runs(const vectors *v)
{
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].transpose(v->device, v->n, 1, 4, 1, 4, v->n / 16, v->x, v->y);
}
/* Every other row of `cols` floats, by the strided-copy kernel. */
static cblob_status every_other_row_kernel(const vectors *v, int64_t cols)
{
    const int64_t rows = v->n / (2 * cols);
    return cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].copy_strided(v->device, rows * cols, rows, cols, v->x, 2 * cols, v->y,
                                                                 2 * cols);
}
/* Rows of 1024 elements (the kernel, then the copy engine's 2D copy: strided_2d, below), and of
 * 3 (a row per group of 4 threads). */
static cblob_status strided(const vectors *v) { return every_other_row_kernel(v, 1024); }
static cblob_status strided_short_rows(const vectors *v) { return every_other_row_kernel(v, 3); }
/* One cuMemcpy2DAsync of `height` rows of `width` floats between the vectors (offsets and pitches
 * in floats). */
static cblob_status copy_2d(const vectors *v, int64_t x_at, int64_t x_pitch, int64_t y_at, int64_t y_pitch, int64_t width,
                            int64_t height)
{
    const cbcu_memcpy2d copy = {
        .srcMemoryType = CBCU_MEMORYTYPE_DEVICE,
        .srcDevice = (cbcu_deviceptr)(uintptr_t)((const float *)v->x + x_at),
        .srcPitch = (size_t)x_pitch * sizeof(float),
        .dstMemoryType = CBCU_MEMORYTYPE_DEVICE,
        .dstDevice = (cbcu_deviceptr)(uintptr_t)((float *)v->y + y_at),
        .dstPitch = (size_t)y_pitch * sizeof(float),
        .WidthInBytes = (size_t)width * sizeof(float),
        .Height = (size_t)height,
    };
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(v->device)));
    const cbcu_result result = cb_cuda_driver_api_get()->cuMemcpy2DAsync_v2(&copy, cb_cuda_stream(v->device));
    cb_cuda_leave();
    return cb_cuda_check(result, "cuMemcpy2DAsync");
}
/* Every other row of `cols` floats, by one 2D copy. */
static cblob_status every_other_row_2d(const vectors *v, int64_t cols)
{
    return copy_2d(v, 0, 2 * cols, 0, 2 * cols, cols, v->n / (2 * cols));
}
/* The 4 x 4 runs of transpose_long_runs by the copy engines: a 2D copy per row of runs (what the
 * library did before the kernel cut long runs into segments). */
static cblob_status transpose_long_runs_2d(const vectors *v)
{
    const int64_t inner = v->n / 16;
    for (int64_t r = 0; r < 4; ++r)
        CB_TRY(copy_2d(v, r * 4 * inner, inner, r * inner, 4 * inner, inner, 4));
    return CBLOB_OK;
}
static cblob_status strided_2d(const vectors *v) { return every_other_row_2d(v, 1024); }

static double timed(run_fn run, const vectors *v)
{
    v->device->backend->queue->synchronize(v->device);
    const double start = now();
    if (run(v) != CBLOB_OK || v->device->backend->queue->synchronize(v->device) != CBLOB_OK) {
        printf("  failed: %s\n", cblob_last_error_message());
        exit(1);
    }
    return now() - start;
}

/* Runs the variants in interleaved rounds (each round runs every variant once, after one round
 * that loads every kernel family), leaving each variant's times sorted. */
static void measure(variant *variants, int count, const vectors *v)
{
    for (int i = 0; i < count; ++i)
        timed(variants[i].run, v);
    for (int round = 0; round < rounds; ++round)
        for (int i = 0; i < count; ++i)
            variants[i].seconds[round] = timed(variants[i].run, v);
    for (int i = 0; i < count; ++i)
        qsort(variants[i].seconds, (size_t)rounds, sizeof(double), compare);
}

static double median_rate(const variant *a, double elements)
{
    return a->bytes_per_element * elements / a->seconds[rounds / 2];
}

static void bandwidth(const vectors *v)
{
    variant variants[] = {
        {"cuMemcpyDtoDAsync", copy, 8, 0, {0}},
        {"fill (kernel)", fill, 4, 0.85, {0}},
        {"add (kernel)", add, 12, 0.85, {0}},
        {"add, misaligned (kernel)", add_misaligned, 12, 0.85, {0}},
        {"axpy (kernel)", axpy, 12, 0.85, {0}},
        {"axpy, misaligned (kernel)", axpy_misaligned, 12, 0.85, {0}},
        {"axpy (cuBLAS)", axpy_blas, 12, 0.85, {0}},
        {"scale (kernel)", scale, 8, 0.85, {0}},
        {"scale (cuBLAS)", scale_blas, 8, 0.85, {0}},
        {"axpy float64 (kernel)", axpy64, 12, 0.85, {0}},
        {"axpy float64 (cuBLAS)", axpy64_blas, 12, 0.85, {0}},
        {"scale float64 (kernel)", scale64, 8, 0.85, {0}},
        {"scale float64 (cuBLAS)", scale64_blas, 8, 0.85, {0}},
        {"asum (kernel)", asum, 4, 0.85, {0}},
        {"sumsq (kernel)", sumsq, 4, 0.85, {0}},
        {"convert f32->i32 (kernel)", convert, 8, 0.85, {0}},
        {"transpose 8192^2 (kernel)", transpose, 8, 0.7, {0}},
        {"transpose NCHW->NHWC, C=3 (kernel)", transpose_to_channels_last, 8, 0.7, {0}},
        {"transpose NHWC->NCHW, C=3 (kernel)", transpose_to_channels_first, 8, 0.7, {0}},
        {"transpose, runs of 64 (kernel)", transpose_runs, 8, 0.7, {0}},
        {"transpose, runs of 4Mi (kernel)", transpose_long_runs, 8, 0.7, {0}},
        {"transpose, runs of 4Mi (2D copies)", transpose_long_runs_2d, 8, 0, {0}}, /* references: not the library's paths */
        {"strided copy (kernel)", strided, 4, 0.85, {0}},
        {"strided copy, rows of 3 (kernel)", strided_short_rows, 4, 0.85, {0}},
        {"strided copy (2D copy)", strided_2d, 4, 0, {0}},
    };
    const int count = (int)(sizeof variants / sizeof variants[0]);
    measure(variants, count, v);
    printf("bandwidth, float32, %lld elements, median of %d interleaved rounds (min-max):\n", (long long)v->n, rounds);
    const double copy_rate = median_rate(&variants[0], (double)v->n);
    int met = 0, targets = 0;
    for (int i = 0; i < count; ++i) {
        /* The small-side transposes move whole images: fewer elements than the vectors hold. */
        const double elements = variants[i].run == transpose_to_channels_last || variants[i].run == transpose_to_channels_first
                                    ? (double)(images(v) * 3 * 224 * 224)
                                    : (double)v->n;
        const double bytes = variants[i].bytes_per_element * elements;
        const double rate = bytes / variants[i].seconds[rounds / 2];
        printf("  %-38s %7.0f GB/s (%5.0f-%5.0f)  %.2f of the copy", variants[i].name, rate * 1e-9,
               bytes / variants[i].seconds[rounds - 1] * 1e-9, bytes / variants[i].seconds[0] * 1e-9, rate / copy_rate);
        if (variants[i].target > 0) {
            const bool meets = rate / copy_rate >= variants[i].target;
            printf("  target %.2f: %s", variants[i].target, meets ? "met" : "MISSED");
            met += meets;
            ++targets;
        }
        printf("\n");
    }
    printf("summary: bandwidth: copy %.0f GB/s; %d of %d kernel paths meet their target\n", copy_rate * 1e-9, met, targets);
}

/* ---- sums: the generated kernels against cuBLAS ----------------------------------------------------- */

typedef cblob_status (*sum_fn)(const cb_device *device, int64_t n, const void *x, double *out);
typedef cblob_status (*blas_sum_fn)(const cb_device *device, cblob_dtype dtype, int64_t n, const void *x, double *out);

typedef struct sum_case {
    const char *name;
    sum_fn kernel;
    blas_sum_fn blas;
    cblob_dtype dtype;
} sum_case;

static const sum_case *sum_running;
static bool sum_through_blas;
static double sum_value;

static cblob_status run_sum(const vectors *v)
{
    const int64_t n = sum_running->dtype == CBLOB_DTYPE_FLOAT64 ? v->n / 2 : v->n;
    if (sum_through_blas)
        return sum_running->blas(v->device, sum_running->dtype, n, v->x, &sum_value);
    return sum_running->kernel(v->device, n, v->x, &sum_value);
}

static void sums(const vectors *v)
{
    const sum_case cases[] = {
        {"asum float32", cb_cuda_kernels[CBLOB_DTYPE_FLOAT32].asum, cb_cublas_asum, CBLOB_DTYPE_FLOAT32},
        {"sumsq float32", cb_cuda_kernels[CBLOB_DTYPE_FLOAT32].sumsq, cb_cublas_sumsq, CBLOB_DTYPE_FLOAT32},
        {"asum float64", cb_cuda_kernels[CBLOB_DTYPE_FLOAT64].asum, cb_cublas_asum, CBLOB_DTYPE_FLOAT64},
        {"sumsq float64", cb_cuda_kernels[CBLOB_DTYPE_FLOAT64].sumsq, cb_cublas_sumsq, CBLOB_DTYPE_FLOAT64},
    };
    /* Values to add (the vectors may hold zeros): float32 1.25, as float64 pairs of them. */
    if (cb_cuda_jit_kernels[CBLOB_DTYPE_FLOAT32].fill(v->device, v->n, 1.25, v->x) != CBLOB_OK) {
        printf("  failed: %s\n", cblob_last_error_message());
        exit(1);
    }
    printf("sums over %lld bytes, the generated two-pass kernels (the library's) against cuBLAS, median of %d:\n",
           (long long)(v->n * 4), rounds);
    int within = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        sum_running = &cases[c];
        double values[2] = {0, 0};
        variant timings[2] = {{"kernel", run_sum, 4, 0, {0}}, {"cuBLAS", run_sum, 4, 0, {0}}};
        for (int round = 0; round <= rounds; ++round)
            for (int which = 0; which < 2; ++which) {
                sum_through_blas = which == 1;
                const double seconds = timed(run_sum, v);
                if (round > 0) /* the first round loads the kernels */
                    timings[which].seconds[round - 1] = seconds;
                values[which] = sum_value;
            }
        qsort(timings[0].seconds, (size_t)rounds, sizeof(double), compare);
        qsort(timings[1].seconds, (size_t)rounds, sizeof(double), compare);
        const double kernel = timings[0].seconds[rounds / 2], blas = timings[1].seconds[rounds / 2];
        const bool close = kernel <= 1.1 * blas;
        within += close;
        printf("  %-14s kernel %8.3f ms, cuBLAS %8.3f ms: %.2f of cuBLAS's time (target 1.10: %s); values %.17g and "
               "%.17g (relative difference %.1e)\n",
               cases[c].name, kernel * 1e3, blas * 1e3, kernel / blas, close ? "met" : "MISSED", values[0], values[1],
               values[0] != 0 ? (values[1] - values[0]) / values[0] : 0.0);
    }
    printf("summary: sums: %d of 4 generated sums within 10%% of cuBLAS's time\n", within);
}

/* ---- row widths: the strided-copy kernel against a 2D copy -------------------------------------------- */

static int64_t row_elements;

static cblob_status rows_kernel(const vectors *v) { return every_other_row_kernel(v, row_elements); }

static cblob_status rows_2d(const vectors *v) { return every_other_row_2d(v, row_elements); }

static void row_widths(const vectors *v)
{
    /* floats per row: 4 bytes to 64 KiB, narrow rows and wide ones */
    static const int widths[] = {1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 1024, 4096, 16384};
    const int count = (int)(sizeof widths / sizeof widths[0]);
    char faster[256] = "";
    int wins = 0;
    printf("strided copy, every other row of a float32 vector of %lld elements, median of %d:\n", (long long)v->n, rounds);
    for (int w = 0; w < count; ++w) {
        row_elements = widths[w];
        if (v->n / (2 * row_elements) < 1)
            break;
        variant pair[2] = {{"kernel", rows_kernel, 8, 0, {0}}, {"2D copy", rows_2d, 8, 0, {0}}};
        measure(pair, 2, v);
        const double elements = (double)(v->n / (2 * row_elements) * row_elements);
        const double kernel = median_rate(&pair[0], elements), copy_2d = median_rate(&pair[1], elements);
        const bool copy_wins = copy_2d > kernel;
        printf("  rows of %6d bytes: kernel %6.0f GB/s, 2D copy %6.0f GB/s: the %s is faster\n", widths[w] * 4,
               kernel * 1e-9, copy_2d * 1e-9, copy_wins ? "2D copy" : "kernel");
        if (copy_wins)
            snprintf(faster + strlen(faster), sizeof faster - strlen(faster), "%s%d", wins++ ? ", " : "", widths[w] * 4);
    }
    if (wins)
        printf("summary: rows: the 2D copy is faster for rows of %s bytes (of %d to %d), where the library runs the "
               "kernel\n", faster, widths[0] * 4, widths[count - 1] * 4);
    else
        printf("summary: rows: the kernel (the library's choice) is faster at every width from %d to %d bytes\n",
               widths[0] * 4, widths[count - 1] * 4);
}

/* ---- hazards: issue 25's ordering hazards, as regression checks on the GPU ------------------------------- */

#define HAZARD_COUNT (smoke ? (int64_t)1 << 12 : (int64_t)1 << 22) /* floats: 16 MiB */

/* Keeps `stream` busy for a few milliseconds: the bench's vectors copied back and forth. */
static bool keep_busy(const vectors *v, cbcu_stream stream)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    bool queued = true;
    for (int i = 0; i < 16 && queued; ++i)
        queued = api->cuMemcpyDtoDAsync_v2((cbcu_deviceptr)(uintptr_t)(i % 2 ? v->x : v->y),
                                           (cbcu_deviceptr)(uintptr_t)(i % 2 ? v->y : v->x), (size_t)v->n * sizeof(float),
                                           stream) == CBCU_SUCCESS;
    return queued;
}

/* How many of `count` floats of device memory are not `want`. */
static int64_t wrong_values(cbcu_deviceptr device, int64_t count, float want)
{
    float *host = malloc((size_t)count * sizeof(float));
    int64_t wrong = count;
    if (host != NULL && cb_cuda_driver_api_get()->cuMemcpyDtoHAsync_v2(host, device, (size_t)count * sizeof(float), NULL) ==
                            CBCU_SUCCESS &&
        cb_cuda_driver_api_get()->cuStreamSynchronize(NULL) == CBCU_SUCCESS) {
        wrong = 0;
        for (int64_t i = 0; i < count; ++i)
            wrong += host[i] != want;
    }
    free(host);
    return wrong;
}

static cblob_blob *filled_blob(cblob_context *ctx, double value)
{
    const int64_t count = HAZARD_COUNT;
    cblob_blob *blob = NULL;
    if (cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, &count, &blob) != CBLOB_OK ||
        cblob_blob_fill(blob, CBLOB_PART_DATA, value) != CBLOB_OK) {
        cblob_blob_destroy(blob);
        return NULL;
    }
    return blob;
}

/* A consumer reads memory behind cblob_blob_gpu_ptr on its own busy stream and lets go without
 * waiting; cblob's next blob of the size takes the freed block (its pool, same stream) and
 * overwrites it. Returns whether the consumer read the overwritten values. */
static bool freed_under_a_consumer(const vectors *v, cblob_context *ctx)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    cblob_blob *blob = filled_blob(ctx, 2.0), *next = NULL;
    const void *dev = NULL;
    cbcu_stream consumer = NULL;
    cbcu_deviceptr target = 0;
    int64_t wrong = -1;
    if (blob != NULL && cblob_blob_gpu_ptr(blob, CBLOB_PART_DATA, &dev) == CBLOB_OK &&
        cb_cuda_enter(cb_cuda_device_state_of(v->device)) == CBLOB_OK) {
        if (api->cuStreamCreate(&consumer, CBCU_STREAM_NON_BLOCKING) == CBCU_SUCCESS &&
            api->cuMemAlloc_v2(&target, HAZARD_COUNT * sizeof(float)) == CBCU_SUCCESS && keep_busy(v, consumer) &&
            api->cuMemcpyDtoDAsync_v2(target, (cbcu_deviceptr)(uintptr_t)dev, HAZARD_COUNT * sizeof(float), consumer) ==
                CBCU_SUCCESS) {
            cblob_blob_destroy(blob);
            blob = NULL;
            next = filled_blob(ctx, -7.0);
            cblob_context_synchronize(ctx);
            api->cuStreamSynchronize(consumer);
            wrong = wrong_values(target, HAZARD_COUNT, 2.0f);
        }
        if (target != 0)
            api->cuMemFree_v2(target);
        if (consumer != NULL)
            api->cuStreamDestroy_v2(consumer);
        cb_cuda_leave();
    }
    cblob_blob_destroy(blob);
    cblob_blob_destroy(next);
    if (wrong < 0)
        printf("  memory freed under a consumer's queued read: could not set up (%s)\n", cblob_last_error_message());
    else
        printf("  memory freed under a consumer's queued read: %s (%lld of %lld values overwritten)\n",
               wrong > 0 ? "REPRODUCED" : "not reproduced", (long long)wrong, (long long)HAZARD_COUNT);
    return wrong > 0;
}

/* A producer writes a CUDA tensor on its own busy stream (NULL: the legacy default stream) and
 * hands it to cblob without waiting; cblob's sum must see the values. */
static bool import_before_the_producer(const vectors *v, cblob_context *ctx, bool legacy)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    cblob_blob *source = filled_blob(ctx, 1.5), *imported = NULL;
    const void *values = NULL;
    cbcu_stream producer = NULL;
    cbcu_deviceptr memory = 0;
    double sum = -1;
    bool set_up = false;
    if (source != NULL && cblob_blob_gpu_ptr(source, CBLOB_PART_DATA, &values) == CBLOB_OK &&
        cb_cuda_enter(cb_cuda_device_state_of(v->device)) == CBLOB_OK) {
        int64_t shape[1] = {HAZARD_COUNT};
        if ((legacy || api->cuStreamCreate(&producer, CBCU_STREAM_NON_BLOCKING) == CBCU_SUCCESS) &&
            api->cuMemAlloc_v2(&memory, HAZARD_COUNT * sizeof(float)) == CBCU_SUCCESS &&
            api->cuMemsetD8Async(memory, 0, HAZARD_COUNT * sizeof(float), producer) == CBCU_SUCCESS &&
            api->cuStreamSynchronize(producer) == CBCU_SUCCESS && keep_busy(v, producer) &&
            api->cuMemcpyDtoDAsync_v2(memory, (cbcu_deviceptr)(uintptr_t)values, HAZARD_COUNT * sizeof(float), producer) ==
                CBCU_SUCCESS) {
            DLManagedTensorVersioned tensor = {
                .version = {1, 0},
                .dl_tensor = {.data = (void *)(uintptr_t)memory, .device = {kDLCUDA, v->device->index}, .ndim = 1,
                              .dtype = {kDLFloat, 32, 1}, .shape = shape},
            };
            const cblob_status imported_status = legacy ? cblob_blob_from_dlpack(ctx, &tensor, &imported)
                                                        : cblob_blob_from_dlpack_on_stream(ctx, &tensor, producer, &imported);
            set_up = imported_status == CBLOB_OK && cblob_blob_asum(imported, CBLOB_PART_DATA, &sum) == CBLOB_OK;
            cblob_blob_destroy(imported); /* the tensor has no deleter: the memory stays this function's */
            api->cuStreamSynchronize(producer);
        }
        if (memory != 0)
            api->cuMemFree_v2(memory);
        if (producer != NULL)
            api->cuStreamDestroy_v2(producer);
        cb_cuda_leave();
    }
    cblob_blob_destroy(source);
    const char *what = legacy ? "import of a tensor written on the legacy stream" : "import on the producer's stream";
    const double want = 1.5 * (double)HAZARD_COUNT;
    if (!set_up)
        printf("  %s: could not set up (%s)\n", what, cblob_last_error_message());
    else
        printf("  %s: %s (asum %.1f, expected %.1f)\n", what, sum != want ? "REPRODUCED" : "not reproduced", sum, want);
    return set_up && sum != want;
}

static int hazards(const vectors *v, cblob_context *ctx)
{
    printf("hazards of issue 25, the GPU kept busy on the other party's stream:\n");
    const int reproduced = freed_under_a_consumer(v, ctx) + import_before_the_producer(v, ctx, false) +
                           import_before_the_producer(v, ctx, true);
    printf("summary: hazards: %d of 3 reproduced\n", reproduced);
    return reproduced;
}

/* ---- host cost per call ----------------------------------------------------------------------------- */

typedef struct worker {
    pthread_barrier_t *start;
    bool waits; /* asum: waits for its sum; scale: queues only */
    int calls;
    double seconds;
} worker;

static void *work(void *argument)
{
    worker *w = argument;
    cblob_context *ctx = NULL;
    cblob_blob *blob = NULL;
    const int64_t one = 1;
    double sum = 0;
    cblob_context_create(&ctx);
    cblob_context_set_mode(ctx, CBLOB_MODE_GPU);
    cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, &one, &blob);
    cblob_blob_fill(blob, CBLOB_PART_DATA, 1.0);
    cblob_blob_asum(blob, CBLOB_PART_DATA, &sum); /* handles and kernels made before timing */
    pthread_barrier_wait(w->start);
    const double start = now();
    for (int i = 0; i < w->calls; ++i) {
        if (w->waits)
            cblob_blob_asum(blob, CBLOB_PART_DATA, &sum);
        else
            cblob_blob_scale(blob, CBLOB_PART_DATA, 1.0);
    }
    cblob_context_synchronize(ctx);
    w->seconds = now() - start;
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
    return NULL;
}

static void host_cost(void)
{
    printf("host cost per call, one context per thread (median over threads):\n");
    for (int waits = 0; waits <= 1; ++waits)
        for (int threads = 1; threads <= (smoke ? 2 : 16); threads *= 2) {
            pthread_t ids[16];
            worker workers[16];
            pthread_barrier_t start;
            pthread_barrier_init(&start, NULL, (unsigned)threads);
            for (int t = 0; t < threads; ++t) {
                workers[t] = (worker){&start, waits, smoke ? 20 : 20000, 0};
                pthread_create(&ids[t], NULL, work, &workers[t]);
            }
            double per_call[16];
            for (int t = 0; t < threads; ++t) {
                pthread_join(ids[t], NULL);
                per_call[t] = workers[t].seconds / workers[t].calls;
            }
            pthread_barrier_destroy(&start);
            qsort(per_call, (size_t)threads, sizeof(double), compare);
            printf("  %-40s %2d thread%s: %7.2f us\n",
                   waits ? "cblob_blob_asum (waits for the sum)" : "cblob_blob_scale (queues cuBLAS)", threads,
                   threads == 1 ? " " : "s", per_call[threads / 2] * 1e6);
        }
}

int main(void)
{
    const char *knob = getenv("CBLOB_BENCH_GPU_SMOKE");
    smoke = knob != NULL && strcmp(knob, "1") == 0;
    const char *driver = getenv("CBLOB_CUDA_DRIVER");
    if (smoke) {
        rounds = 3;
        printf("bench_gpu: a smoke run (CBLOB_BENCH_GPU_SMOKE=1): small vectors, few rounds; its timings mean nothing\n");
    } else if (driver != NULL && strstr(driver, "fake_cuda") != NULL) {
        printf("bench_gpu: CBLOB_CUDA_DRIVER names the test double of the driver, whose timings mean nothing\n");
        return 0;
    }
    int32_t devices = 0;
    if (cblob_gpu_probe(&devices) != CBLOB_OK) {
        printf("bench_gpu: no usable GPU (%s); this benchmark measures only on a GPU\n", cblob_last_error_message());
        return 0;
    }
    cblob_context *ctx = NULL;
    const cb_device *device = NULL;
    cblob_blob *a = NULL, *b = NULL;
    const int64_t n = smoke ? (int64_t)1 << 16 : ELEMENTS;
    vectors v = {.n = n};
    if (cblob_context_create(&ctx) != CBLOB_OK || cblob_context_set_mode(ctx, CBLOB_MODE_GPU) != CBLOB_OK ||
        cb_context_device(ctx, &device) != CBLOB_OK || cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, &n, &a) != CBLOB_OK ||
        cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, &n, &b) != CBLOB_OK ||
        cblob_blob_mutable_gpu_ptr(a, CBLOB_PART_DATA, &v.x) != CBLOB_OK ||
        cblob_blob_mutable_gpu_ptr(b, CBLOB_PART_DATA, &v.y) != CBLOB_OK) {
        printf("bench_gpu: cannot set up two vectors of %lld floats: %s\n", (long long)n, cblob_last_error_message());
        return 1;
    }
    v.device = device;
    char name[256];
    size_t length = 0;
    cblob_gpu_device_name(device->index, name, sizeof name, &length);
    printf("device: %s\n", name);
    bandwidth(&v);
    sums(&v);
    row_widths(&v);
    const int reproduced = hazards(&v, ctx);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_context_destroy(ctx);
    host_cost();
    return reproduced > 0 ? 1 : 0;
}
