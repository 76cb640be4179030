/* SPDX-License-Identifier: BSD-2-Clause */
/* The generated CPU kernels and their BLIS twins against a naive double-precision reference,
 * at sizes around every vector and accumulator boundary and from unaligned starts; the CPU as a
 * backend; and the run path (core/run_kernels.h) where a table lacks a kernel. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/run_kernels.h"
#include "cpu/kernels.h"
#include "cpu_level.h"
#include "harness.h"

/* The last size is past 1 MiB for every dtype: memory-bound sizes, where the sums are cut into
 * many blocks and the kernels take their prefetching path (CB_PREFETCH_BYTES), with a tail. */
static const int64_t sizes[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 63, 64, 65, 127, 128, 129, 1000, 4097, 270001};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MAXN 270005

/* Deterministic values of both signs and varied magnitude. */
static double value(int64_t i)
{
    return ((double)((i * 7919) % 2003) - 1001.0) / 97.0;
}

/* The same, not exact in binary: another order of additions shows in the low bits of a sum. */
static double inexact_value(int64_t i)
{
    return value(i) * (1.0 + (double)(i % 13) * 1e-3);
}

#define KERNEL_TESTS(CTYPE, SUFFIX, TOLERANCE) \
    static void reductions_##SUFFIX(cblob_status (*asum)(int64_t, const void *, double *), \
                                    cblob_status (*sumsq)(int64_t, const void *, double *), size_t nsizes) \
    { \
        static CTYPE x[MAXN + 1]; \
        for (int64_t i = 0; i <= MAXN; ++i) \
            x[i] = (CTYPE)value(i); \
        for (size_t s = 0; s < nsizes; ++s) \
            for (int shift = 0; shift < 2; ++shift) { \
                const int64_t n = sizes[s]; \
                double want_asum = 0, want_sumsq = 0, got_asum = -1, got_sumsq = -1; \
                for (int64_t i = 0; i < n; ++i) { \
                    want_asum += fabs((double)x[i + shift]); \
                    want_sumsq += (double)x[i + shift] * (double)x[i + shift]; \
                } \
                CHECK_OK(asum(n, x + shift, &got_asum)); \
                CHECK_OK(sumsq(n, x + shift, &got_sumsq)); \
                CHECK_NEAR(got_asum, want_asum, TOLERANCE * (1 + want_asum)); \
                CHECK_NEAR(got_sumsq, want_sumsq, TOLERANCE * (1 + want_sumsq)); \
            } \
    } \
    static void elementwise_##SUFFIX(cblob_status (*axpy)(int64_t, double, const void *, void *), \
                                     cblob_status (*scale)(int64_t, double, void *)) \
    { \
        static CTYPE x[MAXN + 1], y[MAXN + 1], z[MAXN + 1]; \
        for (size_t s = 0; s < NSIZES; ++s) \
            for (int shift = 0; shift < 2; ++shift) { \
                const int64_t n = sizes[s]; \
                for (int64_t i = 0; i <= MAXN; ++i) { \
                    x[i] = (CTYPE)value(i); \
                    y[i] = z[i] = (CTYPE)value(i + 11); \
                } \
                CHECK_OK(axpy(n, -1.5, x + shift, y + shift)); \
                for (int64_t i = 0; i <= MAXN; ++i) { \
                    const int inside = i >= shift && i < n + shift; \
                    const double want = inside ? (double)z[i] + (double)(CTYPE)-1.5 * (double)x[i] : (double)z[i]; \
                    CHECK_NEAR(y[i], want, TOLERANCE * (1 + fabs(want))); \
                } \
                CHECK_OK(scale(n, 0.25, y + shift)); \
                for (int64_t i = shift; i < n + shift; ++i) { \
                    const double want = ((double)z[i] - 1.5 * (double)x[i]) * 0.25; \
                    CHECK_NEAR(y[i], want, TOLERANCE * (1 + fabs(want))); \
                } \
                CHECK(n + shift > MAXN || y[n + shift] == z[n + shift]); /* nothing past the end */ \
                /* Caffe's update, alpha -1: exactly y - x (the kernel subtracts). */ \
                for (int64_t i = 0; i <= MAXN; ++i) \
                    y[i] = z[i]; \
                CHECK_OK(axpy(n, -1.0, x + shift, y + shift)); \
                for (int64_t i = 0; i <= MAXN; ++i) { \
                    const CTYPE want = i >= shift && i < n + shift ? (CTYPE)(z[i] - x[i]) : z[i]; \
                    CHECK(y[i] == want); \
                } \
            } \
    } \
    TEST(generated_reductions_##SUFFIX) { reductions_##SUFFIX(cb_cpu_asum_##SUFFIX, cb_cpu_sumsq_##SUFFIX, NSIZES); } \
    /* BLIS sums in one running total of the element type: past a few thousand float elements its \
     * rounding exceeds the tolerance the lane sums meet, so its twins stop before the largest size. */ \
    TEST(blis_reductions_##SUFFIX) { reductions_##SUFFIX(cb_blis_asum_##SUFFIX, cb_blis_sumsq_##SUFFIX, NSIZES - 1); } \
    /* The wide sums (x86-64-v4, 64-byte vectors) add in the portable sums' order, so they give \
     * the same bits: at every size up to 4200 (past two short blocks) from four starts, and at \
     * six larger sizes from each of 16 starts (every misalignment within a 64-byte vector). The \
     * values are not exact in binary, so another order of additions shows in the low bits (the \
     * last check makes sure it would). */ \
    TEST(wide_sums_match_the_portable_ones_bit_for_bit_##SUFFIX) \
    { \
        if (!cb_cpu_x86_64_v4()) \
            SKIP("this CPU is not x86-64-v4 (no AVX-512): the wide sums never run here"); \
        static CTYPE x[MAXN + 16]; \
        for (int64_t i = 0; i < MAXN + 16; ++i) \
            x[i] = (CTYPE)inexact_value(i); \
        static const int64_t large[] = {4095, 4096, 4097, 8191, 65537, 270001}; \
        int orders_differ = 0; \
        for (int64_t k = 0; k < 4200 + (int64_t)(sizeof large / sizeof large[0]); ++k) { \
            const int64_t n = k < 4200 ? k : large[k - 4200]; \
            for (int shift = 0; shift < 16; shift += k < 4200 ? 5 : 1) { \
                double wide_asum, wide_sumsq, narrow_asum, narrow_sumsq, sequential = 0; \
                CHECK_OK(cb_cpu_asum_##SUFFIX(n, x + shift, &wide_asum)); \
                CHECK_OK(cb_cpu_asum_narrow_##SUFFIX(n, x + shift, &narrow_asum)); \
                CHECK_OK(cb_cpu_sumsq_##SUFFIX(n, x + shift, &wide_sumsq)); \
                CHECK_OK(cb_cpu_sumsq_narrow_##SUFFIX(n, x + shift, &narrow_sumsq)); \
                CHECK(memcmp(&wide_asum, &narrow_asum, sizeof wide_asum) == 0); \
                CHECK(memcmp(&wide_sumsq, &narrow_sumsq, sizeof wide_sumsq) == 0); \
                for (int64_t i = 0; i < n; ++i) \
                    sequential += (double)x[i + shift] * (double)x[i + shift]; \
                orders_differ += sequential != narrow_sumsq; \
            } \
        } \
        CHECK(orders_differ > 0); \
    } \
    TEST(generated_elementwise_##SUFFIX) { elementwise_##SUFFIX(cb_cpu_axpy_##SUFFIX, cb_cpu_scale_##SUFFIX); } \
    /* Large operands take the prefetching path on CPUs where it pays (cb_cpu_prefetch_pays) and \
     * the plain one elsewhere: both are forced here, on any CPU, and give the same bits. */ \
    TEST(prefetching_and_plain_paths_agree_bit_for_bit_##SUFFIX) \
    { \
        static CTYPE x[MAXN + 1], y[2][MAXN + 1]; \
        double sums[2][4]; \
        static const int64_t large[] = {270001, 262144, 65537}; \
        for (size_t s = 0; s < sizeof large / sizeof large[0]; ++s) \
            for (int shift = 0; shift < 2; ++shift) { \
                const int64_t n = large[s]; \
                for (int forced = 0; forced < 2; ++forced) { \
                    cb_cpu_force_prefetch(forced); \
                    CHECK(cb_cpu_prefetch_pays() == (forced == 1)); \
                    for (int64_t i = 0; i <= MAXN; ++i) { \
                        x[i] = (CTYPE)inexact_value(i); \
                        y[forced][i] = (CTYPE)value(i + 11); \
                    } \
                    CHECK_OK(cb_cpu_asum_##SUFFIX(n, x + shift, &sums[forced][0])); \
                    CHECK_OK(cb_cpu_sumsq_##SUFFIX(n, x + shift, &sums[forced][1])); \
                    CHECK_OK(cb_cpu_axpy_##SUFFIX(n, -1.5, x + shift, y[forced] + shift)); \
                    CHECK_OK(cb_cpu_axpy_##SUFFIX(n, -1.0, x + shift, y[forced] + shift)); \
                    CHECK_OK(cb_cpu_scale_##SUFFIX(n, 0.3, y[forced] + shift)); \
                    CHECK_OK(cb_cpu_sumsq_##SUFFIX(n, y[forced] + shift, &sums[forced][2])); \
                    CHECK_OK(cb_cpu_asum_##SUFFIX(n - 1, y[forced] + shift + 1, &sums[forced][3])); \
                } \
                cb_cpu_force_prefetch(-1); \
                CHECK(memcmp(sums[0], sums[1], sizeof sums[0]) == 0); \
                CHECK(memcmp(y[0], y[1], sizeof y[0]) == 0); \
                CHECK(sums[0][0] > 0 && sums[0][2] > 0); \
            } \
    } \
    TEST(blis_elementwise_##SUFFIX) { elementwise_##SUFFIX(cb_blis_axpy_##SUFFIX, cb_blis_scale_##SUFFIX); }

KERNEL_TESTS(float, f32, 1e-5)
KERNEL_TESTS(double, f64, 1e-12)

TEST(integer_rows_have_no_math_kernels)
{
    /* Caffe's math is not defined for integers: the table leaves those entries empty, and the
     * blob-level calls (src/core/blob_math.c) refuse integer blobs before looking at it. */
    CHECK(cb_cpu_kernel_table[CBLOB_DTYPE_INT32].asum == NULL);
    CHECK(cb_cpu_kernel_table[CBLOB_DTYPE_UINT32].axpy == NULL);
    CHECK(cb_cpu_kernel_table[CBLOB_DTYPE_FLOAT32].asum != NULL);
}

TEST(the_cpu_is_a_backend_whose_kernels_are_the_cpu_table)
{
    /* The host device is the CPU backend's, registered as CUDA is: host memory and the generated
     * dispatch table, no device part to open and no queue. */
    const cb_backend *cpu = cb_host_device.backend;
    CHECK(cpu != NULL && cpu->kernels == cb_cpu_kernel_table);
    CHECK(cpu->memory->is_host && cb_device_is_host(&cb_host_device));
    CHECK(cpu->device == NULL && cpu->queue == NULL && cpu->cache == NULL && cpu->collectives == NULL);
    CHECK(cb_gpu_backend() == NULL || !cb_gpu_backend()->memory->is_host);

    /* Its memory part: a zeroed buffer, a copy that moves overlapping bytes as memmove does. */
    float *x = NULL;
    CHECK_OK(cpu->memory->alloc(&cb_host_device, 8 * sizeof(float), true, (void **)&x));
    for (int i = 0; i < 8; ++i)
        CHECK(x[i] == 0.0f);
    for (int i = 0; i < 8; ++i)
        x[i] = (float)i;
    CHECK_OK(cpu->memory->copy(&cb_host_device, x + 1, x, 6 * sizeof(float), CB_COPY_HOST_TO_DEVICE));
    CHECK(x[0] == 0 && x[1] == 0 && x[2] == 1 && x[6] == 5 && x[7] == 7);

    /* The run path on the host device reaches the table's entry, which splits over threads. */
    CHECK_OK(cb_run_scale(&cb_host_device, CBLOB_DTYPE_FLOAT32, 8, 2.0, x));
    CHECK(x[2] == 2 && x[7] == 14);
    cpu->memory->free(&cb_host_device, x, 8 * sizeof(float));
}

TEST(dispatch_of_a_kernel_a_table_lacks_is_not_implemented)
{
    /* The CUDA backend's tables have every dtype an op is defined for (the generator demands a
     * twin for every kernel), so only a backend made here can lack one: the run path must answer,
     * naming the kernel, the dtype and the backend, and touch nothing. */
    static const cb_kernels empty[CB_KERNEL_ROWS] = {{0}};
    const cb_backend backend = {.name = "kernel-less", .kernels = empty};
    const cb_device device = {.backend = &backend};
    float x[3] = {1, 2, 3};
    CHECK_STATUS(cb_run_fill(&device, CBLOB_DTYPE_FLOAT32, 3, 9.0, x), CBLOB_ERR_NOT_IMPLEMENTED);
    const char *message = cblob_last_error_message();
    CHECK(strstr(message, "fill") != NULL && strstr(message, "float32") != NULL && strstr(message, "kernel-less") != NULL);
    CHECK(x[0] == 1 && x[2] == 3);
    double sum = -1;
    CHECK_STATUS(cb_run_asum(&cb_host_device, CBLOB_DTYPE_INT32, 3, x, &sum), CBLOB_ERR_NOT_IMPLEMENTED);
    CHECK(strstr(cblob_last_error_message(), "cpu") != NULL && sum == -1);
    /* A value that is no dtype's is refused the same way, never read past the table. */
    CHECK_STATUS(cb_run_asum(&cb_host_device, (cblob_dtype)CB_KERNEL_ROWS, 3, x, &sum), CBLOB_ERR_NOT_IMPLEMENTED);
}
