/* SPDX-License-Identifier: BSD-2-Clause */
/* GPU bandwidth and per-call host cost (issue 13): a benchmark for a machine with a GPU, not a
 * test. It prints ratios measured in one run and exits 0; without a usable GPU (or on the test
 * double of the driver, whose timings mean nothing) it says why and measures nothing.
 *
 *   bandwidth   each kernel family (the generated kernel) and each cuBLAS call on float32 vectors
 *               of 64 Mi elements, against cuMemcpyDtoDAsync of the same bytes: the median of
 *               interleaved repetitions, with the min-max range, as bytes moved per second. Each
 *               path of a kernel gets its line: element-wise kernels on aligned vectors and on
 *               windows misaligned against each other (one element at a time), the transpose's
 *               tiles (inner 1), runs (inner 64) and long runs through the kernel and through
 *               the copy engines' 2D copies, the strided copy kernel on long and on 3-element rows.
 *               Targets on an H100: element-wise kernels and reductions at least 0.85 of the copy,
 *               transpose at least 0.7.
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

#define ELEMENTS ((int64_t)64 << 20)
#define ROUNDS 11

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
    return v->device->backend->copy(v->device, v->y, v->x, (size_t)v->n * sizeof(float), CB_COPY_DEVICE_TO_DEVICE);
}
static cblob_status fill(const vectors *v) { return cb_cuda_jit_kernels.fill(v->device, CBLOB_DTYPE_FLOAT32, v->n, 1.0, v->y); }
static cblob_status add(const vectors *v) { return cb_cuda_jit_kernels.add(v->device, CBLOB_DTYPE_FLOAT32, v->n, v->x, v->y); }
/* x one element past y's phase: the arrays never align together, every element is loaded alone. */
static cblob_status add_misaligned(const vectors *v)
{
    return cb_cuda_jit_kernels.add(v->device, CBLOB_DTYPE_FLOAT32, v->n - 1, (const float *)v->x + 1, v->y);
}
static cblob_status axpy(const vectors *v) { return cb_cuda_jit_kernels.axpy(v->device, CBLOB_DTYPE_FLOAT32, v->n, -1.0, v->x, v->y); }
static cblob_status axpy_misaligned(const vectors *v)
{
    return cb_cuda_jit_kernels.axpy(v->device, CBLOB_DTYPE_FLOAT32, v->n - 1, -1.0, (const float *)v->x + 1, v->y);
}
static cblob_status axpy_blas(const vectors *v) { return cb_cuda_kernels.axpy(v->device, CBLOB_DTYPE_FLOAT32, v->n, -1.0, v->x, v->y); }
static cblob_status scale(const vectors *v) { return cb_cuda_jit_kernels.scale(v->device, CBLOB_DTYPE_FLOAT32, v->n, 0.5, v->y); }
static cblob_status scale_blas(const vectors *v) { return cb_cuda_kernels.scale(v->device, CBLOB_DTYPE_FLOAT32, v->n, 0.5, v->y); }
static cblob_status asum(const vectors *v)
{
    double sum;
    return cb_cuda_jit_kernels.asum(v->device, CBLOB_DTYPE_FLOAT32, v->n, v->x, &sum);
}
static cblob_status asum_blas(const vectors *v)
{
    double sum;
    return cb_cuda_kernels.asum(v->device, CBLOB_DTYPE_FLOAT32, v->n, v->x, &sum);
}
static cblob_status sumsq(const vectors *v)
{
    double sum;
    return cb_cuda_jit_kernels.sumsq(v->device, CBLOB_DTYPE_FLOAT32, v->n, v->x, &sum);
}
static cblob_status convert(const vectors *v)
{
    return cb_cuda_jit_kernels.convert_to_i32(v->device, CBLOB_DTYPE_FLOAT32, v->n, v->x, v->y);
}
/* A square matrix of the vector's elements, rows and columns swapped: the tiles. */
static cblob_status transpose(const vectors *v)
{
    const int64_t side = 8192;
    return cb_cuda_jit_kernels.transpose(v->device, CBLOB_DTYPE_FLOAT32, side * side, 1, side, 1, side, 1, v->x, v->y);
}
/* 1024 x 1024 runs of 64 elements swapped: the kernel's runs. */
static cblob_status transpose_runs(const vectors *v)
{
    return cb_cuda_jit_kernels.transpose(v->device, CBLOB_DTYPE_FLOAT32, v->n, 1, 1024, 1, 1024, v->n >> 20, v->x, v->y);
}
/* 4 x 4 runs of 4 Mi elements: the kernel, then the copy engines (4 lines of 2D copies). */
static cblob_status transpose_long_runs(const vectors *v)
{
    return cb_cuda_jit_kernels.transpose(v->device, CBLOB_DTYPE_FLOAT32, v->n, 1, 4, 1, 4, v->n / 16, v->x, v->y);
}
static cblob_status transpose_long_runs_2d(const vectors *v)
{
    return cb_cuda_kernels.transpose(v->device, CBLOB_DTYPE_FLOAT32, v->n, 1, 4, 1, 4, v->n / 16, v->x, v->y);
}
/* Every other row of 1024 elements: the kernel, then the copy engine's 2D copy. */
static cblob_status strided(const vectors *v)
{
    const int64_t cols = 1024, rows = v->n / (2 * cols);
    return cb_cuda_jit_kernels.copy_strided(v->device, CBLOB_DTYPE_FLOAT32, rows * cols, rows, cols, v->x, 2 * cols, v->y,
                                            2 * cols);
}
/* Every other row of 3 elements: a row per group of 4 threads. */
static cblob_status strided_short_rows(const vectors *v)
{
    const int64_t cols = 3, rows = v->n / (2 * cols);
    return cb_cuda_jit_kernels.copy_strided(v->device, CBLOB_DTYPE_FLOAT32, rows * cols, rows, cols, v->x, 2 * cols, v->y,
                                            2 * cols);
}
static cblob_status strided_2d(const vectors *v)
{
    const int64_t cols = 1024, rows = v->n / (2 * cols);
    return cb_cuda_kernels.copy_strided(v->device, CBLOB_DTYPE_FLOAT32, rows * cols, rows, cols, v->x, 2 * cols, v->y,
                                        2 * cols);
}

static double timed(run_fn run, const vectors *v)
{
    v->device->backend->synchronize(v->device);
    const double start = now();
    if (run(v) != CBLOB_OK || v->device->backend->synchronize(v->device) != CBLOB_OK) {
        printf("  failed: %s\n", cblob_last_error_message());
        exit(0);
    }
    return now() - start;
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
        {"asum (kernel)", asum, 4, 0.85, {0}},
        {"asum (cuBLAS)", asum_blas, 4, 0.85, {0}},
        {"sumsq (kernel)", sumsq, 4, 0.85, {0}},
        {"convert f32->i32 (kernel)", convert, 8, 0.85, {0}},
        {"transpose 8192^2 (kernel)", transpose, 8, 0.7, {0}},
        {"transpose, runs of 64 (kernel)", transpose_runs, 8, 0.7, {0}},
        {"transpose, runs of 4Mi (kernel)", transpose_long_runs, 8, 0.7, {0}},
        {"transpose, runs of 4Mi (2D copies)", transpose_long_runs_2d, 8, 0.7, {0}},
        {"strided copy (kernel)", strided, 4, 0.85, {0}},
        {"strided copy, rows of 3 (kernel)", strided_short_rows, 4, 0.85, {0}},
        {"strided copy (2D copy)", strided_2d, 4, 0.85, {0}},
    };
    const int count = (int)(sizeof variants / sizeof variants[0]);
    for (int i = 0; i < count; ++i)
        timed(variants[i].run, v); /* loads every family before timing */
    for (int round = 0; round < ROUNDS; ++round) /* interleaved: each round runs every variant */
        for (int i = 0; i < count; ++i)
            variants[i].seconds[round] = timed(variants[i].run, v);
    double copy_rate = 0;
    printf("bandwidth, float32, %lld elements, median of %d interleaved rounds (min-max):\n", (long long)v->n, ROUNDS);
    for (int i = 0; i < count; ++i) {
        qsort(variants[i].seconds, ROUNDS, sizeof(double), compare);
        const double bytes = variants[i].bytes_per_element * (double)v->n;
        const double rate = bytes / variants[i].seconds[ROUNDS / 2];
        if (i == 0)
            copy_rate = rate;
        printf("  %-36s %7.0f GB/s (%5.0f-%5.0f)  %.2f of the copy", variants[i].name, rate * 1e-9,
               bytes / variants[i].seconds[ROUNDS - 1] * 1e-9, bytes / variants[i].seconds[0] * 1e-9, rate / copy_rate);
        if (variants[i].target > 0)
            printf("  target %.2f: %s", variants[i].target, rate / copy_rate >= variants[i].target ? "met" : "MISSED");
        printf("\n");
    }
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
        for (int threads = 1; threads <= 16; threads *= 2) {
            pthread_t ids[16];
            worker workers[16];
            pthread_barrier_t start;
            pthread_barrier_init(&start, NULL, (unsigned)threads);
            for (int t = 0; t < threads; ++t) {
                workers[t] = (worker){&start, waits, 20000, 0};
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
    const char *driver = getenv("CBLOB_CUDA_DRIVER");
    if (driver != NULL && strstr(driver, "fake_cuda") != NULL) {
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
    const int64_t n = ELEMENTS;
    vectors v = {.n = n};
    if (cblob_context_create(&ctx) != CBLOB_OK || cb_context_device(ctx, &device) != CBLOB_OK ||
        cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, &n, &a) != CBLOB_OK ||
        cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, &n, &b) != CBLOB_OK ||
        cblob_blob_mutable_gpu_ptr(a, CBLOB_PART_DATA, &v.x) != CBLOB_OK ||
        cblob_blob_mutable_gpu_ptr(b, CBLOB_PART_DATA, &v.y) != CBLOB_OK) {
        printf("bench_gpu: cannot set up two vectors of %lld floats: %s\n", (long long)n, cblob_last_error_message());
        return 0;
    }
    v.device = device;
    char name[256];
    size_t length = 0;
    cblob_gpu_device_name(device->index, name, sizeof name, &length);
    printf("device: %s\n", name);
    bandwidth(&v);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_context_destroy(ctx);
    host_cost();
    return 0;
}
