/* SPDX-License-Identifier: BSD-2-Clause */
/* The generated CUDA kernels (cb_cuda_jit_kernels) on inputs that take each of their paths:
 * transposes of every shape class (tiles with ragged edges and several strips, runs of one to
 * hundreds of elements), element-wise kernels on windows at every alignment (vector body, head
 * and tail), conversions of the values their rules single out, the strided copy kernel, and
 * reductions on windows. Each result is read back and compared with the CPU kernel's on the
 * host: byte for byte (a NaN matching any NaN, as the header promises), sums within the dtype's
 * tolerance. Built against the test double (gpu_kernels, where each launch is also checked by
 * the double: its twin, run on the host, against the CPU kernel) and against the machine's GPU
 * (gpu_kernels_device). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "core/enums.h"
#include "cpu/kernels.h"
#include "cuda/families.h"
#include "gpu_support.h"

static const cblob_dtype dtypes[] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64, CBLOB_DTYPE_INT32, CBLOB_DTYPE_UINT32};
#define DTYPE_COUNT (sizeof dtypes / sizeof dtypes[0])

static size_t size_of(cblob_dtype dtype)
{
    return cb_dtype_find(dtype)->size;
}

/* ---- device memory and the host's view of it ------------------------------------------------- */

typedef struct bench {
    cblob_context *ctx;
    const cb_device *device;
} bench;

static void bench_open(bench *b)
{
    b->ctx = NULL;
    b->device = NULL;
    CHECK_OK(cblob_context_create(&b->ctx));
    CHECK_OK(cb_context_device(b->ctx, &b->device));
}

/* Device memory of `bytes` (held by a blob, 256-byte aligned as cuMemAlloc's), filled from host. */
typedef struct buffer {
    cblob_blob *holder;
    unsigned char *device;
    size_t bytes;
} buffer;

static void buffer_make(const bench *b, const void *host, size_t bytes, buffer *out)
{
    const int64_t doubles = (int64_t)(bytes / sizeof(double)) + 1;
    void *device = NULL;
    CHECK_OK(cblob_blob_create(b->ctx, CBLOB_DTYPE_FLOAT64, 1, &doubles, &out->holder));
    CHECK_OK(cblob_blob_mutable_gpu_ptr(out->holder, CBLOB_PART_DATA, &device));
    out->device = device;
    out->bytes = bytes;
    CHECK_OK(b->device->backend->memory->copy(b->device, out->device, host, bytes, CB_COPY_HOST_TO_DEVICE));
}

static void buffer_read(const bench *b, const buffer *from, void *host)
{
    CHECK_OK(b->device->backend->memory->copy(b->device, host, from->device, from->bytes, CB_COPY_DEVICE_TO_HOST));
}

static void buffer_free(buffer *b)
{
    cblob_blob_destroy(b->holder);
    b->holder = NULL;
}

/* ---- values -------------------------------------------------------------------------------------- */

/* Values the kernels' rules single out (ties, the integer ranges' edges, NaN, infinities,
 * subnormals, negative zero), then ordinary ones. */
static double value_at(cblob_dtype dtype, int64_t i)
{
    static const double floats[] = {0.5, 1.5, 2.5, -0.5, -2.5, -0.0, 2147483647.5, 2147483648.0, -2147483648.5,
                                    -2147483649.0, 4294967295.4, 4294967296.0, 1e300, -1e300, INFINITY, -INFINITY,
                                    NAN, 4.9e-324, -1.2e-38, 3.0000001};
    static const double ints[] = {-2147483648.0, -1.0, 0.0, 2147483647.0, 17.0};
    static const double uints[] = {0.0, 2147483648.0, 4294967295.0, 1.0};
    const double ordinary = ((double)((i * 7919) % 2003) - 1001.0) / 7.0;
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32:
    case CBLOB_DTYPE_FLOAT64: return i % 3 == 0 ? floats[(i / 3) % (sizeof floats / sizeof floats[0])] : ordinary;
    case CBLOB_DTYPE_INT32: return i % 3 == 0 ? ints[(i / 3) % (sizeof ints / sizeof ints[0])] : trunc(ordinary * 1000);
    default: return i % 3 == 0 ? uints[(i / 3) % (sizeof uints / sizeof uints[0])] : fabs(trunc(ordinary * 1000));
    }
}

/* n elements of dtype, value_at(i + shift) (NULL without memory); `finite` replaces the special
 * values with 1.25 (for sums). */
static void *values(cblob_dtype dtype, int64_t n, int64_t shift, bool finite)
{
    unsigned char *host = malloc((size_t)(n > 0 ? n : 1) * size_of(dtype));
    for (int64_t i = 0; host != NULL && i < n; ++i) {
        const double v = finite && (i + shift) % 3 == 0 ? 1.25 : value_at(dtype, i + shift);
        switch (dtype) {
        case CBLOB_DTYPE_FLOAT32: ((float *)host)[i] = (float)v; break;
        case CBLOB_DTYPE_FLOAT64: ((double *)host)[i] = v; break;
        case CBLOB_DTYPE_INT32: ((int32_t *)host)[i] = (int32_t)v; break;
        default: ((uint32_t *)host)[i] = (uint32_t)v; break;
        }
    }
    return host;
}

/* The device wrote what the CPU kernel wrote, element by element (a NaN matches any NaN). */
static void same_elements(const char *what, cblob_dtype dtype, const void *device, const void *cpu, int64_t n)
{
    const size_t size = size_of(dtype);
    for (int64_t i = 0; i < n; ++i) {
        const unsigned char *d = (const unsigned char *)device + (size_t)i * size, *c = (const unsigned char *)cpu + (size_t)i * size;
        if (memcmp(d, c, size) == 0)
            continue;
        if (dtype == CBLOB_DTYPE_FLOAT32 && isnan(*(const float *)d) && isnan(*(const float *)c))
            continue;
        if (dtype == CBLOB_DTYPE_FLOAT64 && isnan(*(const double *)d) && isnan(*(const double *)c))
            continue;
        CHECK_MSG(false, "%s, %s: element %lld differs between the device and the CPU kernel", what,
                  cb_dtype_find(dtype)->name, (long long)i);
        return;
    }
}

/* ---- transposes ------------------------------------------------------------------------------- */

typedef struct shape5 {
    int64_t outer, rows, middle, cols, inner;
} shape5;

static void transpose_agrees_through(const cb_kernels *kernels, const bench *b, cblob_dtype dtype, shape5 s)
{
    const int64_t n = s.outer * s.rows * s.middle * s.cols * s.inner;
    const size_t bytes = (size_t)n * size_of(dtype);
    void *x = values(dtype, n, 0, false), *want = malloc(bytes), *got = malloc(bytes);
    CHECK(x != NULL && want != NULL && got != NULL);
    memset(got, 0, bytes);
    buffer dx, dy;
    buffer_make(b, x, bytes, &dx);
    buffer_make(b, got, bytes, &dy);
    CHECK_OK(cb_cpu_kernel_table[dtype].transpose(&cb_host_device, n, s.outer, s.rows, s.middle, s.cols, s.inner, x, want));
    CHECK_OK(kernels[dtype].transpose(b->device, n, s.outer, s.rows, s.middle, s.cols, s.inner, dx.device, dy.device));
    buffer_read(b, &dy, got);
    char what[128];
    snprintf(what, sizeof what, "transpose [%lld, %lld, %lld, %lld, %lld]", (long long)s.outer, (long long)s.rows,
             (long long)s.middle, (long long)s.cols, (long long)s.inner);
    same_elements(what, dtype, got, want, n);
    buffer_free(&dx);
    buffer_free(&dy);
    free(x);
    free(want);
    free(got);
}

static void transpose_agrees(const bench *b, cblob_dtype dtype, shape5 s)
{
    transpose_agrees_through(cb_cuda_jit_kernels, b, dtype, s);
}

/* Tiles: ragged edges, a strip of several tiles and more than one strip, planes (outer, middle),
 * a single row or column of tiles. One side below 32 (chunks of the long side): one element,
 * each small side from 1 to 31 on either side, chunks with a ragged end, several chunks, planes.
 * Runs: inner from 2 to past the block. */
static const shape5 tile_shapes[] = {
    {1, 33, 1, 65, 1}, {2, 70, 3, 300, 1}, {1, 32, 2, 32, 1}, {1, 40, 1, 2000, 1},
};
static const shape5 small_side_shapes[] = {
    {1, 1, 1, 1, 1},    {1, 5, 1, 2000, 1}, {1, 2000, 1, 5, 1}, {3, 31, 2, 33, 1}, {1, 3, 1, 1000, 1},
    {2, 1000, 1, 3, 1}, {1, 17, 3, 100, 1}, {2, 100, 2, 31, 1}, {1, 2, 1, 2, 1},  {1, 1, 1, 700, 1},
    {1, 700, 1, 1, 1},  {2, 4, 1, 4, 1},    {1, 8, 1, 529, 1}, {1, 529, 2, 16, 1},
};
/* The last three: runs longer than a segment (8 elements a lane of a block-wide group), cut into
 * segments with a ragged last one, and a single run. */
static const shape5 run_shapes[] = {
    {1, 3, 1, 2, 2},    {3, 7, 2, 5, 3}, {2, 3, 4, 5, 64}, {1, 20, 1, 9, 300}, {1, 17, 3, 2, 33},
    {1, 3, 2, 2, 4133}, {2, 1, 1, 3, 5000}, {1, 1, 1, 1, 6000},
};

static void transposes_agree(const shape5 *shapes, size_t count)
{
    REQUIRE_GPU();
    bench b;
    bench_open(&b);
    for (size_t d = 0; d < DTYPE_COUNT && !cbt_failed(); ++d)
        for (size_t s = 0; s < count && !cbt_failed(); ++s)
            transpose_agrees(&b, dtypes[d], shapes[s]);
    cblob_context_destroy(b.ctx);
}

TEST(transpose_in_tiles_agrees_with_the_cpu) { transposes_agree(tile_shapes, sizeof tile_shapes / sizeof tile_shapes[0]); }
TEST(transpose_of_runs_agrees_with_the_cpu) { transposes_agree(run_shapes, sizeof run_shapes / sizeof run_shapes[0]); }
TEST(transpose_with_a_small_side_agrees_with_the_cpu)
{
    transposes_agree(small_side_shapes, sizeof small_side_shapes / sizeof small_side_shapes[0]);
}

/* Opens a bench on the driver double told to run one block per multiprocessor, so that a grid is
 * much smaller than the work; skips on a real device, which cannot be told another occupancy. */
static bool bench_open_on_a_small_grid(bench *b)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("only the double can report another occupancy");
    if (!gpu_set_occupancy(1)) {
        cbt_fail(__FILE__, __LINE__, "CHECK(gpu_set_occupancy(1))");
        return false;
    }
    bench_open(b);
    return true;
}

/* A grid much smaller than the work: each block walks many strips and runs. */
TEST(transpose_with_a_small_grid_agrees_with_the_cpu)
{
    bench b;
    if (!bench_open_on_a_small_grid(&b))
        return;
    transpose_agrees(&b, CBLOB_DTYPE_FLOAT32, (shape5){2, 100, 3, 90, 1});
    transpose_agrees(&b, CBLOB_DTYPE_FLOAT64, (shape5){2, 50, 3, 7, 5});
    transpose_agrees(&b, CBLOB_DTYPE_FLOAT32, (shape5){2, 3, 2, 3000, 1}); /* many chunks per block */
    transpose_agrees(&b, CBLOB_DTYPE_INT32, (shape5){3, 2000, 1, 7, 1});
    transpose_agrees(&b, CBLOB_DTYPE_FLOAT32, (shape5){1, 2, 1, 3, 4500}); /* segments of long runs */
    cblob_context_destroy(b.ctx);
}

/* Long runs go to the kernel through the library's table too, cut into segments (no 2D copies). */
TEST(transpose_of_long_runs_through_the_library_agrees_with_the_cpu)
{
    REQUIRE_GPU();
    bench b;
    bench_open(&b);
    const fake_cuda_counters before = gpu_counters();
    transpose_agrees_through(cb_cuda_kernels, &b, CBLOB_DTYPE_FLOAT32, (shape5){1, 2, 2, 3, 4100});
    transpose_agrees_through(cb_cuda_kernels, &b, CBLOB_DTYPE_FLOAT64, (shape5){2, 3, 1, 2, 2049});
    CHECK_COUNTER_DELTA(before, copies_2d, 0);
    CHECK_COUNTER_DELTA(before, launches, 2);
    cblob_context_destroy(b.ctx);
}

/* ---- element-wise kernels on windows ---------------------------------------------------------------- */

/* Offsets (in elements) of the x and y windows: aligned together at every phase of a vector, and
 * misaligned against each other. Lengths: shorter than a vector, a few vectors with head and
 * tail, and enough for the unrolled loop (4 vectors per thread) to run a few times on the
 * double's smallest grid (4 blocks, set below). */
static const int64_t offset_pairs[][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {0, 1}, {1, 0}, {3, 2}, {2, 0}};
static const int64_t lengths[] = {1, 2, 3, 5, 17, 64, 1001, 40003};
#define PAD 8

/* One element-wise op, on the device and with the CPU kernel, over windows of two buffers. */
typedef struct window_case {
    cblob_dtype x_dtype, y_dtype; /* y_dtype 0: the op has one array (x) */
    int64_t n, x_offset, y_offset;
    bool same_array; /* y is x (add's aliasing) */
} window_case;

typedef cblob_status (*device_op)(const cb_device *device, const window_case *c, void *x, void *y);
typedef cblob_status (*cpu_op)(const window_case *c, void *x, void *y);

static void window_agrees(const bench *b, const window_case *c, device_op on_device, cpu_op on_cpu, const char *name)
{
    const size_t x_bytes = (size_t)(c->n + PAD) * size_of(c->x_dtype);
    const size_t y_bytes = c->y_dtype != 0 ? (size_t)(c->n + PAD) * size_of(c->y_dtype) : 0;
    unsigned char *x = values(c->x_dtype, c->n + PAD, 0, false), *x_got = malloc(x_bytes);
    unsigned char *y = c->y_dtype != 0 ? values(c->y_dtype, c->n + PAD, 7, false) : NULL;
    unsigned char *y_got = c->y_dtype != 0 ? malloc(y_bytes) : NULL;
    CHECK(x != NULL && x_got != NULL && (c->y_dtype == 0 || (y != NULL && y_got != NULL)));
    buffer dx, dy = {0};
    buffer_make(b, x, x_bytes, &dx);
    if (c->y_dtype != 0)
        buffer_make(b, y, y_bytes, &dy);
    unsigned char *x_window = x + (size_t)c->x_offset * size_of(c->x_dtype);
    unsigned char *y_window = c->same_array ? x_window : y != NULL ? y + (size_t)c->y_offset * size_of(c->y_dtype) : NULL;
    CHECK_OK(on_cpu(c, x_window, y_window));
    unsigned char *dx_window = dx.device + (size_t)c->x_offset * size_of(c->x_dtype);
    unsigned char *dy_window = c->same_array ? dx_window : dy.device != NULL ? dy.device + (size_t)c->y_offset * size_of(c->y_dtype) : NULL;
    CHECK_OK(on_device(b->device, c, dx_window, dy_window));
    char what[160];
    snprintf(what, sizeof what, "%s, n %lld, x at %lld, y at %lld: x", name, (long long)c->n, (long long)c->x_offset,
             (long long)c->y_offset);
    buffer_read(b, &dx, x_got);
    same_elements(what, c->x_dtype, x_got, x, c->n + PAD); /* outside the window: untouched */
    if (c->y_dtype != 0) {
        what[strlen(what) - 1] = 'y';
        buffer_read(b, &dy, y_got);
        same_elements(what, c->y_dtype, y_got, y, c->n + PAD);
        buffer_free(&dy);
    }
    buffer_free(&dx);
    free(x);
    free(x_got);
    free(y);
    free(y_got);
}

/* Every length and offset pair for one op and dtype pair. */
static void windows_agree(cblob_dtype x_dtype, cblob_dtype y_dtype, bool same_array, device_op on_device, cpu_op on_cpu,
                          const char *name)
{
    REQUIRE_GPU();
    gpu_set_occupancy(1); /* on the double: 4 blocks, so that long windows loop */
    bench b;
    bench_open(&b);
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0] && !cbt_failed(); ++l)
        for (size_t o = 0; o < sizeof offset_pairs / sizeof offset_pairs[0] && !cbt_failed(); ++o) {
            const window_case c = {x_dtype, y_dtype, lengths[l], offset_pairs[o][0], same_array ? 0 : offset_pairs[o][1],
                                   same_array};
            window_agrees(&b, &c, on_device, on_cpu, name);
        }
    cblob_context_destroy(b.ctx);
}

static cblob_status fill_device(const cb_device *device, const window_case *c, void *x, void *y)
{
    (void)y;
    return cb_cuda_jit_kernels[c->x_dtype].fill(device, c->n, 7.0, x);
}
static cblob_status fill_cpu(const window_case *c, void *x, void *y)
{
    (void)y;
    return cb_cpu_kernel_table[c->x_dtype].fill(&cb_host_device, c->n, 7.0, x);
}
static cblob_status scale_device(const cb_device *device, const window_case *c, void *x, void *y)
{
    (void)y;
    return cb_cuda_jit_kernels[c->x_dtype].scale(device, c->n, -0.75, x);
}
static cblob_status scale_cpu(const window_case *c, void *x, void *y)
{
    (void)y;
    return cb_cpu_kernel_table[c->x_dtype].scale(&cb_host_device, c->n, -0.75, x);
}
static cblob_status add_device(const cb_device *device, const window_case *c, void *x, void *y)
{
    return cb_cuda_jit_kernels[c->x_dtype].add(device, c->n, x, y);
}
static cblob_status add_cpu(const window_case *c, void *x, void *y)
{
    return cb_cpu_kernel_table[c->x_dtype].add(&cb_host_device, c->n, x, y);
}
static cblob_status axpy_device(const cb_device *device, const window_case *c, void *x, void *y)
{
    return cb_cuda_jit_kernels[c->x_dtype].axpy(device, c->n, 1.5, x, y);
}
static cblob_status axpy_cpu(const window_case *c, void *x, void *y)
{
    return cb_cpu_kernel_table[c->x_dtype].axpy(&cb_host_device, c->n, 1.5, x, y);
}

TEST(fill_on_windows_agrees_with_the_cpu)
{
    for (size_t d = 0; d < DTYPE_COUNT && !cbt_failed(); ++d)
        windows_agree(dtypes[d], 0, false, fill_device, fill_cpu, "fill");
}

TEST(scale_on_windows_agrees_with_the_cpu)
{
    windows_agree(CBLOB_DTYPE_FLOAT32, 0, false, scale_device, scale_cpu, "scale");
    windows_agree(CBLOB_DTYPE_FLOAT64, 0, false, scale_device, scale_cpu, "scale");
}

TEST(add_on_windows_agrees_with_the_cpu)
{
    for (size_t d = 0; d < DTYPE_COUNT && !cbt_failed(); ++d) {
        windows_agree(dtypes[d], dtypes[d], false, add_device, add_cpu, "add");
        windows_agree(dtypes[d], dtypes[d], true, add_device, add_cpu, "add to itself");
    }
}

TEST(axpy_on_windows_agrees_with_the_cpu)
{
    windows_agree(CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT32, false, axpy_device, axpy_cpu, "axpy");
    windows_agree(CBLOB_DTYPE_FLOAT64, CBLOB_DTYPE_FLOAT64, false, axpy_device, axpy_cpu, "axpy");
}

/* ---- conversions on windows -------------------------------------------------------------------- */

typedef cblob_status (*convert_fn)(const cb_device *device, int64_t n, const void *x, void *y);

/* The conversion for the case's dtypes, by the op's name: "convert_to" or "truncate_to". */
static bool truncating;

/* The conversion from source to target in a backend's kernel table. */
static convert_fn conversion(const cb_kernels *table, cblob_dtype source, cblob_dtype target)
{
    const cb_kernels *k = &table[source];
    if (truncating)
        return target == CBLOB_DTYPE_INT32 ? k->truncate_to_i32 : k->truncate_to_u32;
    switch (target) {
    case CBLOB_DTYPE_FLOAT32: return k->convert_to_f32;
    case CBLOB_DTYPE_FLOAT64: return k->convert_to_f64;
    case CBLOB_DTYPE_INT32: return k->convert_to_i32;
    default: return k->convert_to_u32;
    }
}

static cblob_status convert_device(const cb_device *device, const window_case *c, void *x, void *y)
{
    return conversion(cb_cuda_jit_kernels, c->x_dtype, c->y_dtype)(device, c->n, x, y);
}
static cblob_status convert_cpu(const window_case *c, void *x, void *y)
{
    return conversion(cb_cpu_kernel_table, c->x_dtype, c->y_dtype)(&cb_host_device, c->n, x, y);
}

static void conversions_agree(cblob_dtype target)
{
    for (size_t d = 0; d < DTYPE_COUNT && !cbt_failed(); ++d)
        if (!truncating || dtypes[d] == CBLOB_DTYPE_FLOAT32 || dtypes[d] == CBLOB_DTYPE_FLOAT64)
            windows_agree(dtypes[d], target, false, convert_device, convert_cpu, truncating ? "truncate" : "convert");
}

TEST(conversions_to_float32_on_windows_agree_with_the_cpu) { conversions_agree(CBLOB_DTYPE_FLOAT32); }
TEST(conversions_to_float64_on_windows_agree_with_the_cpu) { conversions_agree(CBLOB_DTYPE_FLOAT64); }
TEST(conversions_to_int32_on_windows_agree_with_the_cpu) { conversions_agree(CBLOB_DTYPE_INT32); }
TEST(conversions_to_uint32_on_windows_agree_with_the_cpu) { conversions_agree(CBLOB_DTYPE_UINT32); }

TEST(truncations_on_windows_agree_with_the_cpu)
{
    truncating = true;
    conversions_agree(CBLOB_DTYPE_INT32);
    conversions_agree(CBLOB_DTYPE_UINT32);
}

/* ---- the strided copy kernel (the copy engines' fallback) ----------------------------------------------- */

typedef struct strided_case {
    int64_t rows, cols, x_stride, y_stride;
} strided_case;

/* Rows of one element to longer than a block, strides equal to, above and (for x, rows read
 * twice) below the row; then batches of a lane's elements that span rows: many narrow rows (a
 * count that is no multiple of a batch), and rows of several elements a lane with a ragged end. */
static const strided_case strided_cases[] = {
    {7, 1, 3, 2},       {5, 3, 3, 7},         {40, 17, 20, 17},    {3, 300, 310, 305},
    {9, 8, 4, 8},       {1, 1000, 1000, 1000}, {1001, 3, 6, 3},    {37, 1000, 1003, 1001},
    {300, 513, 520, 600},
};

static void copy_strided_agrees(const bench *b, cblob_dtype dtype, strided_case s)
{
    const int64_t x_count = (s.rows - 1) * s.x_stride + s.cols, y_count = (s.rows - 1) * s.y_stride + s.cols;
    const size_t y_bytes = (size_t)y_count * size_of(dtype);
    void *x = values(dtype, x_count, 0, false), *y = values(dtype, y_count, 5, false), *got = malloc(y_bytes);
    CHECK(x != NULL && y != NULL && got != NULL);
    buffer dx, dy;
    buffer_make(b, x, (size_t)x_count * size_of(dtype), &dx);
    buffer_make(b, y, y_bytes, &dy);
    const int64_t n = s.rows * s.cols;
    CHECK_OK(cb_cpu_kernel_table[dtype].copy_strided(&cb_host_device, n, s.rows, s.cols, x, s.x_stride, y, s.y_stride));
    CHECK_OK(cb_cuda_jit_kernels[dtype].copy_strided(b->device, n, s.rows, s.cols, dx.device, s.x_stride, dy.device,
                                                     s.y_stride));
    buffer_read(b, &dy, got);
    char what[96];
    snprintf(what, sizeof what, "copy_strided %lld rows of %lld, strides %lld and %lld", (long long)s.rows,
             (long long)s.cols, (long long)s.x_stride, (long long)s.y_stride);
    same_elements(what, dtype, got, y, y_count);
    buffer_free(&dx);
    buffer_free(&dy);
    free(x);
    free(y);
    free(got);
}

TEST(copy_strided_kernel_agrees_with_the_cpu)
{
    REQUIRE_GPU();
    bench b;
    bench_open(&b);
    for (size_t d = 0; d < DTYPE_COUNT && !cbt_failed(); ++d)
        for (size_t k = 0; k < sizeof strided_cases / sizeof strided_cases[0] && !cbt_failed(); ++k)
            copy_strided_agrees(&b, dtypes[d], strided_cases[k]);
    cblob_context_destroy(b.ctx);
}

/* A grid much smaller than the rows: each lane's batches span rows, and a batch ends mid-row. */
TEST(copy_strided_with_a_small_grid_agrees_with_the_cpu)
{
    bench b;
    if (!bench_open_on_a_small_grid(&b))
        return;
    copy_strided_agrees(&b, CBLOB_DTYPE_FLOAT32, (strided_case){5001, 3, 6, 3});
    copy_strided_agrees(&b, CBLOB_DTYPE_FLOAT64, (strided_case){300, 700, 703, 701});
    copy_strided_agrees(&b, CBLOB_DTYPE_INT32, (strided_case){200, 37, 40, 37});
    cblob_context_destroy(b.ctx);
}
