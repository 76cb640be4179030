/* SPDX-License-Identifier: BSD-2-Clause */
/* The NeoML operations on the GPU path, through the public API. Each test is a scenario run twice
 * for every dtype: once with its blobs on the host and once with them on the device (head
 * AT_GPU, as a GPU layer leaves its output), and what each run kept is compared element by
 * element. Built twice, as gpu_fake and gpu_device are:
 *
 * - gpu_neoml, against the test double of the driver: launches go through the real CUDA backend
 *   (NVRTC, the kernel cache, the generated launchers) and run the CPU kernels generated from the
 *   same ops.yaml entries, bounds-checked against their allocations. The double counts every
 *   transfer, so the tests check that operations on device-resident parts move nothing between
 *   host and device (cblob.h, "Where operations run"), how many kernels ran, and that a
 *   mapping stages exactly its range. Results must agree byte for byte.
 * - gpu_neoml_device, against the machine's GPU (skipped with the reason where there is none):
 *   the CUDA twins' own arithmetic runs. Counts are not available there; a NaN matches any NaN,
 *   since a GPU writes its canonical NaN where the CPU keeps a payload, and the header promises
 *   only that NaN stays NaN. Every other element must agree byte for byte.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "gpu_support.h"
#include "neoml/neoml_test.h"

#define DATA CBLOB_PART_DATA
#define DIFF CBLOB_PART_DIFF

typedef enum where { ON_HOST, ON_DEVICE } where;

static const char *where_name(where w)
{
    return w == ON_HOST ? "host" : "device";
}

/* ---- what a run keeps, and comparing two runs --------------------------------------------- */

#define MAX_KEPT 64

typedef struct kept {
    char what[64];
    cblob_dtype dtype;
    int64_t count;
    unsigned char *bytes;
} kept;

typedef struct record {
    int count;
    kept items[MAX_KEPT];
} record;

static void record_free(record *r)
{
    for (int i = 0; i < r->count; ++i)
        free(r->items[i].bytes);
    r->count = 0;
}

static bool keep_array(record *r, const char *what, cblob_dtype dtype, int64_t count, const void *values)
{
    const size_t bytes = (size_t)count * dtype_size(dtype);
    if (r->count == MAX_KEPT)
        return false;
    kept *item = &r->items[r->count];
    item->bytes = malloc(bytes > 0 ? bytes : 1);
    if (item->bytes == NULL)
        return false;
    if (bytes > 0)
        memcpy(item->bytes, values, bytes);
    snprintf(item->what, sizeof item->what, "%s", what);
    item->dtype = dtype;
    item->count = count;
    r->count++;
    return true;
}

/* Keeps a part's values, read with copy_out, which moves no head (and, from the device, is one
 * transfer: scenarios check their counts before they keep anything). */
static bool keep(record *r, const char *what, cblob_blob *blob, cblob_part part)
{
    cblob_dtype dtype;
    int64_t count;
    if (cblob_blob_dtype(blob, &dtype) != CBLOB_OK || cblob_blob_count(blob, &count) != CBLOB_OK)
        return false;
    void *values = malloc(count > 0 ? (size_t)count * dtype_size(dtype) : 1);
    const bool ok = values != NULL && cblob_blob_copy_out(blob, part, dtype, values, count) == CBLOB_OK &&
                    keep_array(r, what, dtype, count, values);
    free(values);
    return ok;
}

static bool is_nan(cblob_dtype dtype, const unsigned char *p)
{
    return (dtype == CBLOB_DTYPE_FLOAT32 || dtype == CBLOB_DTYPE_FLOAT64) && isnan(value_at(p, dtype, 0));
}

static void describe(cblob_dtype dtype, const unsigned char *p, char *text, size_t size)
{
    uint64_t bits = 0;
    memcpy(&bits, p, dtype_size(dtype));
    snprintf(text, size, "%.17g (bits 0x%0*llx)", value_at(p, dtype, 0), (int)(2 * dtype_size(dtype)),
             (unsigned long long)bits);
}

/* The device run kept what the host run kept. */
static void same_results(const record *host, const record *device, cblob_dtype dtype)
{
    const bool any_nan = !gpu_is_fake();
    CHECK_MSG(host->count == device->count, "%s: the host run kept %d results, the device run %d", dtype_name(dtype),
              host->count, device->count);
    for (int i = 0; i < host->count; ++i) {
        const kept *h = &host->items[i], *d = &device->items[i];
        CHECK_MSG(strcmp(h->what, d->what) == 0 && h->dtype == d->dtype && h->count == d->count,
                  "%s: result %d is %s (%lld of %s) on the host and %s (%lld of %s) on the device", dtype_name(dtype), i,
                  h->what, (long long)h->count, dtype_name(h->dtype), d->what, (long long)d->count,
                  dtype_name(d->dtype));
        const size_t size = dtype_size(h->dtype);
        for (int64_t j = 0; j < h->count; ++j) {
            const unsigned char *a = h->bytes + (size_t)j * size, *b = d->bytes + (size_t)j * size;
            if (memcmp(a, b, size) == 0 || (any_nan && is_nan(h->dtype, a) && is_nan(h->dtype, b)))
                continue;
            char on_host[96], on_device[96];
            describe(h->dtype, a, on_host, sizeof on_host);
            describe(h->dtype, b, on_device, sizeof on_device);
            CHECK_MSG(false, "%s blobs, %s: element %lld is %s on the device but %s on the host", dtype_name(dtype),
                      h->what, (long long)j, on_device, on_host);
        }
    }
}

/* ---- scenarios ------------------------------------------------------------------------------- */

/* A scenario makes its blobs in ctx, puts them where `w` says, runs operations, checks heads and
 * the double's counts, and keeps the results to compare. */
typedef void (*scenario_fn)(cblob_context *ctx, cblob_dtype dtype, where w, record *out);

static void host_and_device_agree(scenario_fn scenario)
{
    REQUIRE_GPU();
    for (int d = 0; d < NUM_DTYPES; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        record runs[2] = {{0}, {0}};
        for (where w = ON_HOST; w <= ON_DEVICE && !cbt_failed(); ++w) {
            cblob_context *ctx = NULL;
            CHECK_OK(cblob_context_create(&ctx));
            scenario(ctx, dtype, w, &runs[w]);
            cblob_context_destroy(ctx);
            if (cbt_failed())
                cbt_fail(__FILE__, __LINE__, "(the check above failed in the %s run for %s blobs)", where_name(w),
                         dtype_name(dtype));
        }
        if (!cbt_failed())
            same_results(&runs[ON_HOST], &runs[ON_DEVICE], dtype);
        record_free(&runs[ON_HOST]);
        record_free(&runs[ON_DEVICE]);
        if (cbt_failed())
            return;
    }
}

#define SCENARIO(name) \
    static void name##_run(cblob_context *ctx, cblob_dtype dtype, where w, record *out); \
    TEST(name) { host_and_device_agree(name##_run); } \
    static void name##_run(cblob_context *ctx, cblob_dtype dtype, where w, record *out)

/* Where the run's results must be: AT_GPU on the device, AT_CPU on the host. */
#define CHECK_WHERE(blob, part, w) \
    CHECK_EQ_INT(head_of((blob), (part)), (w) == ON_DEVICE ? CBLOB_HEAD_AT_GPU : CBLOB_HEAD_AT_CPU)

/* Since `since`, on the double: nothing crossed between host and device, and the device run did
 * `work` pieces of device work, kernels or copies on the device (the copy engines move contiguous
 * and strided copies: cuda/cuda_copy.c); the host run none. */
#define CHECK_RAN_IN_PLACE(since, w, work) \
    do { \
        CHECK_TRANSFERS((since), 0, 0, gpu_counters().device_to_device - (since).device_to_device); \
        CHECK_EQ_INT(gpu_counters().launches - (since).launches + gpu_counters().device_to_device - \
                         (since).device_to_device, \
                     gpu_is_fake() && (w) == ON_DEVICE ? (work) : 0); \
    } while (0)

#define KEEP(what, blob, part) CHECK_MSG(keep(out, (what), (blob), (part)), "cannot keep %s", (what))

/* Puts a part where the run wants it: on the device (mutable_gpu_ptr: head AT_GPU), or left on
 * the host. */
static bool put(cblob_blob *blob, cblob_part part, where w)
{
    int64_t count = 0;
    void *ptr;
    return w == ON_HOST || (cblob_blob_count(blob, &count) == CBLOB_OK &&
                            (count == 0 || cblob_blob_mutable_gpu_ptr(blob, part, &ptr) == CBLOB_OK));
}

/* A blob of `dims` with tagged values (data tag, diff tag + 1), both parts put where the run
 * wants them; NULL on failure. */
static cblob_blob *made(cblob_context *ctx, cblob_dtype dtype, int32_t num_axes, const int64_t *dims, int tag, where w)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create(ctx, dtype, num_axes, dims, &blob) != CBLOB_OK)
        return NULL;
    if (!fill_tagged(blob, DATA, tag) || !fill_tagged(blob, DIFF, tag + 1) || !put(blob, DATA, w) || !put(blob, DIFF, w)) {
        cblob_blob_destroy(blob);
        return NULL;
    }
    return blob;
}

/* Values that exercise every conversion rule (cblob.h, "Conversions") and integer wrapping:
 * ties, signed zeros, subnormals, the edges of every integer range and of float32's, and
 * infinities and NaN. */
static const float special_f32[] = {
    0.0f, -0.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0x1p-149f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN,
    2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f, 4294967040.0f, 4294967296.0f, 16777216.0f, 3.3f,
    -7.75f};
static const double special_f64[] = {
    0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 0x1p-1074, 1e-320, DBL_MAX, -1e300, INFINITY, -INFINITY, NAN,
    2147483646.5, 2147483647.5, -2147483648.5, -2147483647.5, 4294967294.5, 4294967295.5,
    0x1.ffffffp+127,  /* FLT_MAX plus half its last place: a tie that rounds to infinity */
    0x1.fffffefffffffp+127, FLT_MAX, 16777217.0, 16777219.0, 0.1, -7.75,
    0x1p-149, 0x1p-150, /* float32's smallest subnormal, and half of it: a tie that rounds to 0 */
    0x1.8p-149};
static const int32_t special_i32[] = {0, 1, -1, INT32_MIN, INT32_MAX, INT32_MIN + 1, 16777217, 16777219, -16777217,
                                      2147483584, 123456789, -5};
static const uint32_t special_u32[] = {0, 1, UINT32_MAX, 2147483647u, 2147483648u, 16777217u, 16777219u,
                                       4294967040u, 4294967168u, 4294967167u, 3000000000u, 5};

static const void *specials(cblob_dtype dtype, int64_t *count)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: *count = sizeof special_f32 / sizeof special_f32[0]; return special_f32;
    case CBLOB_DTYPE_FLOAT64: *count = sizeof special_f64 / sizeof special_f64[0]; return special_f64;
    case CBLOB_DTYPE_INT32: *count = sizeof special_i32 / sizeof special_i32[0]; return special_i32;
    default: *count = sizeof special_u32 / sizeof special_u32[0]; return special_u32;
    }
}

/* Element i of the array is the special value (i + shift) mod their number. */
static void special_array(cblob_dtype dtype, int64_t count, int64_t shift, void *array)
{
    int64_t known;
    const unsigned char *values = specials(dtype, &known);
    const size_t size = dtype_size(dtype);
    for (int64_t i = 0; i < count; ++i)
        memcpy((unsigned char *)array + (size_t)i * size, values + (size_t)((i + shift) % known) * size, size);
}

#define SPECIAL_COUNT 41 /* longer than every list, and a multiple of nothing a kernel might assume */

/* A vector of SPECIAL_COUNT special values (diff shifted by `shift` against data), put where the
 * run wants it; NULL on failure. */
static cblob_blob *made_special(cblob_context *ctx, cblob_dtype dtype, int64_t shift, where w)
{
    cblob_blob *blob = NULL;
    unsigned char array[SPECIAL_COUNT * sizeof(double)];
    const int64_t count = SPECIAL_COUNT;
    if (cblob_blob_create(ctx, dtype, 1, &count, &blob) != CBLOB_OK)
        return NULL;
    special_array(dtype, SPECIAL_COUNT, 0, array);
    bool ok = cblob_blob_copy_in(blob, DATA, dtype, array, SPECIAL_COUNT) == CBLOB_OK;
    special_array(dtype, SPECIAL_COUNT, shift, array);
    ok = ok && cblob_blob_copy_in(blob, DIFF, dtype, array, SPECIAL_COUNT) == CBLOB_OK;
    if (!ok || !put(blob, DATA, w) || !put(blob, DIFF, w)) {
        cblob_blob_destroy(blob);
        return NULL;
    }
    return blob;
}

/* A fill value that needs the kernel's conversion from double: inexact in float32, the far end
 * of each integer range. */
static double fill_value(cblob_dtype dtype)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return 0.1;
    case CBLOB_DTYPE_FLOAT64: return -0.1;
    case CBLOB_DTYPE_INT32: return -2147483648.0;
    default: return 4294967295.0;
    }
}

static void destroy_all(cblob_blob **blobs, int count)
{
    for (int i = 0; i < count; ++i)
        cblob_blob_destroy(blobs[i]);
}

/* ---- blobs larger than a grid ------------------------------------------------------------------- */

SCENARIO(neoml_gpu_blobs_larger_than_the_grid_are_covered)
{
    /* The launcher caps the grid (16 blocks of 256 threads per multiprocessor; the double reports
     * 4), so with more elements than threads each twin must stride over the rest. */
    const int64_t dims[2] = {211, 199}; /* 41989 elements */
    cblob_blob *a = made(ctx, dtype, 2, dims, 1, w), *b = made(ctx, dtype, 2, dims, 2, w), *t = NULL, *c = NULL;
    CHECK(a != NULL && b != NULL);
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_add(a, b, DATA));
    CHECK_OK(cblob_blob_fill(b, DIFF, fill_value(dtype)));
    CHECK_OK(cblob_blob_transposed(a, 0, 1, &t));
    CHECK_OK(cblob_blob_clone(a, dtype == CBLOB_DTYPE_FLOAT64 ? CBLOB_DTYPE_UINT32 : CBLOB_DTYPE_FLOAT64, &c));
    CHECK_RAN_IN_PLACE(before, w, 6);
    KEEP("sum", a, DATA);
    KEEP("filled", b, DIFF);
    KEEP("transposed data", t, DATA);
    KEEP("transposed diff", t, DIFF);
    KEEP("converted data", c, DATA);
    KEEP("converted diff", c, DIFF);
    cblob_blob *all[] = {a, b, t, c};
    destroy_all(all, 4);
}

/* ---- fill, clear, add ------------------------------------------------------------------------ */

SCENARIO(neoml_gpu_fill_and_clear_whole_blobs_and_objects)
{
    const int64_t dims[7] = {2, 3, 1, 2, 2, 1, 3}; /* 6 objects of 12 elements */
    cblob_blob *blob = made(ctx, dtype, 7, dims, 1, w);
    CHECK(blob != NULL);
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_fill(blob, DATA, fill_value(dtype)));
    CHECK_OK(cblob_blob_fill_object(blob, DATA, 2, 5));
    CHECK_OK(cblob_blob_clear_object(blob, DATA, 4));
    CHECK_OK(cblob_blob_clear(blob, DIFF));
    CHECK_OK(cblob_blob_fill_object(blob, DIFF, 5, fill_value(dtype)));
    CHECK_RAN_IN_PLACE(before, w, 5);
    CHECK_WHERE(blob, DATA, w);
    CHECK_WHERE(blob, DIFF, w);
    KEEP("data", blob, DATA);
    KEEP("diff", blob, DIFF);
    cblob_blob_destroy(blob);
}

SCENARIO(neoml_gpu_mode_fills_memory_never_accessed_on_the_device)
{
    if (w == ON_DEVICE)
        CHECK_OK(cblob_context_set_mode(ctx, CBLOB_MODE_GPU));
    cblob_blob *blob;
    CHECK_OK(cblob_blob_create_vector(ctx, dtype, 37, &blob));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_fill(blob, DATA, fill_value(dtype)));
    CHECK_OK(cblob_blob_clear(blob, DIFF));
    CHECK_RAN_IN_PLACE(before, w, 2);
    CHECK_WHERE(blob, DATA, w);
    CHECK_WHERE(blob, DIFF, w);
    KEEP("data", blob, DATA);
    KEEP("diff", blob, DIFF);
    cblob_blob_destroy(blob);
}

SCENARIO(neoml_gpu_add_wraps_integers_and_adds_a_blob_to_itself)
{
    cblob_blob *a = made_special(ctx, dtype, 5, w), *b = made_special(ctx, dtype, 11, w);
    CHECK(a != NULL && b != NULL);
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_add(a, b, DATA));
    CHECK_OK(cblob_blob_add(a, a, DIFF)); /* the one overlap add allows */
    CHECK_OK(cblob_blob_add(b, a, DIFF));
    CHECK_RAN_IN_PLACE(before, w, 3);
    CHECK_WHERE(a, DATA, w);
    CHECK_WHERE(b, DIFF, w);
    KEEP("a data", a, DATA);
    KEEP("a diff", a, DIFF);
    KEEP("b diff", b, DIFF);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
}

/* ---- copies, clones, conversions --------------------------------------------------------------- */

SCENARIO(neoml_gpu_typed_copies_move_exactly_the_blob)
{
    const int64_t dims[2] = {5, 7};
    cblob_blob *blob = made(ctx, dtype, 2, dims, 1, w);
    CHECK(blob != NULL);
    const size_t bytes = 35 * dtype_size(dtype);
    unsigned char in[35 * sizeof(double)], copied[35 * sizeof(double)];
    special_array(dtype, 35, 3, in);
    fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_copy_in(blob, DIFF, dtype, in, 35));
    CHECK_TRANSFERS(before, w == ON_DEVICE ? 1 : 0, 0, 0);
    CHECK_COUNTER_DELTA(before, host_to_device_bytes, w == ON_DEVICE ? bytes : 0);
    CHECK_WHERE(blob, DIFF, w);
    before = gpu_counters();
    CHECK_OK(cblob_blob_copy_out(blob, DATA, dtype, copied, 35));
    CHECK_TRANSFERS(before, 0, w == ON_DEVICE ? 1 : 0, 0);
    CHECK_COUNTER_DELTA(before, device_to_host_bytes, w == ON_DEVICE ? bytes : 0);
    CHECK_WHERE(blob, DATA, w); /* reading the device copy out does not make the host's current */
    CHECK_MSG(keep_array(out, "copy_out", dtype, 35, copied), "cannot keep copy_out");
    KEEP("diff after copy_in", blob, DIFF);
    CHECK(memcmp(out->items[out->count - 1].bytes, in, bytes) == 0);
    cblob_blob_destroy(blob);
}

SCENARIO(neoml_gpu_deep_copies_and_clones_to_every_dtype_are_made_on_the_device)
{
    cblob_blob *source = made_special(ctx, dtype, 7, w), *half;
    CHECK(source != NULL);
    CHECK_OK(cblob_blob_create_vector(ctx, dtype, SPECIAL_COUNT, &half)); /* its diff is never accessed */
    CHECK(fill_tagged(half, DATA, 3) && put(half, DATA, w));
    cblob_blob *made_blobs[NUM_DTYPES + 2] = {NULL};
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_deep_copy(source, &made_blobs[0]));
    for (int t = 0; t < NUM_DTYPES; ++t)
        CHECK_OK(cblob_blob_clone(source, all_dtypes[t], &made_blobs[1 + t]));
    CHECK_OK(cblob_blob_clone(half, dtype == CBLOB_DTYPE_INT32 ? CBLOB_DTYPE_FLOAT32 : CBLOB_DTYPE_INT32,
                              &made_blobs[NUM_DTYPES + 1]));
    CHECK_RAN_IN_PLACE(before, w, 2 + 2 * NUM_DTYPES + 1);
    for (int i = 0; i < NUM_DTYPES + 2; ++i) {
        CHECK_WHERE(made_blobs[i], DATA, w);
        char what[64];
        snprintf(what, sizeof what, "copy %d data", i);
        KEEP(what, made_blobs[i], DATA);
        if (i == NUM_DTYPES + 1)
            continue;
        CHECK_WHERE(made_blobs[i], DIFF, w);
        snprintf(what, sizeof what, "copy %d diff", i);
        KEEP(what, made_blobs[i], DIFF);
    }
    CHECK_EQ_INT(head_of(made_blobs[NUM_DTYPES + 1], DIFF), CBLOB_HEAD_UNINITIALIZED);
    destroy_all(made_blobs, NUM_DTYPES + 2);
    cblob_blob_destroy(half);
    cblob_blob_destroy(source);
}

typedef cblob_status (*convert_fn)(cblob_blob *blob, cblob_blob *source, cblob_part part);

/* Special values of `dtype` converted to every dtype with `convert`, one launch per part. */
static void convert_to_every_dtype(cblob_context *ctx, cblob_dtype dtype, where w, record *out, convert_fn convert)
{
    cblob_blob *source = made_special(ctx, dtype, 9, w), *targets[NUM_DTYPES] = {NULL};
    CHECK(source != NULL);
    const int64_t count = SPECIAL_COUNT;
    for (int t = 0; t < NUM_DTYPES; ++t)
        CHECK((targets[t] = made(ctx, all_dtypes[t], 1, &count, 4, w)) != NULL);
    const fake_cuda_counters before = gpu_counters();
    for (int t = 0; t < NUM_DTYPES; ++t) {
        CHECK_OK(convert(targets[t], source, DATA));
        CHECK_OK(convert(targets[t], source, DIFF));
    }
    CHECK_OK(convert(source, source, DATA)); /* the very same elements: nothing to do */
    CHECK_RAN_IN_PLACE(before, w, 2 * NUM_DTYPES);
    for (int t = 0; t < NUM_DTYPES; ++t) {
        CHECK_WHERE(targets[t], DATA, w);
        char what[64];
        snprintf(what, sizeof what, "to %s data", dtype_name(all_dtypes[t]));
        KEEP(what, targets[t], DATA);
        snprintf(what, sizeof what, "to %s diff", dtype_name(all_dtypes[t]));
        KEEP(what, targets[t], DIFF);
    }
    KEEP("source", source, DATA);
    destroy_all(targets, NUM_DTYPES);
    cblob_blob_destroy(source);
}

SCENARIO(neoml_gpu_convert_from_every_dtype)
{
    convert_to_every_dtype(ctx, dtype, w, out, cblob_blob_convert_from);
}

/* NeoML's truncation: the truncate_to_* families from float types, convert_to_* otherwise. */
SCENARIO(neoml_gpu_convert_from_truncating_every_dtype)
{
    convert_to_every_dtype(ctx, dtype, w, out, cblob_blob_convert_from_truncating);
}

/* ---- transposes --------------------------------------------------------------------------------- */

SCENARIO(neoml_gpu_transposes_every_kind_of_axis_pair)
{
    const int64_t dims[5] = {2, 3, 1, 4, 5};
    /* Seen as [outer, rows, middle, cols, inner]: inner > 1, middle > 1, rows of 1 with a middle
     * (the kernel), a swap that keeps the order (a copy), equal axes (a copy), negative axes. */
    static const int32_t pairs[][2] = {{0, 1}, {0, 4}, {1, 3}, {2, 4}, {2, 3}, {3, 3}, {-1, -2}};
    enum { PAIRS = sizeof pairs / sizeof pairs[0] };
    cblob_blob *source = made(ctx, dtype, 5, dims, 1, w);
    CHECK(source != NULL);
    const int64_t swapped[5] = {2, 5, 1, 4, 3}, same[5] = {2, 3, 1, 4, 5};
    cblob_blob *into = made(ctx, dtype, 5, swapped, 7, w), *copied_into = made(ctx, dtype, 5, same, 9, w);
    CHECK(into != NULL && copied_into != NULL);
    cblob_blob *results[PAIRS] = {NULL};
    const fake_cuda_counters before = gpu_counters();
    for (int p = 0; p < PAIRS; ++p)
        CHECK_OK(cblob_blob_transposed(source, pairs[p][0], pairs[p][1], &results[p]));
    CHECK_OK(cblob_blob_transpose_from(into, source, DATA, 1, 4));
    CHECK_OK(cblob_blob_transpose_from(copied_into, source, DIFF, 2, 2));
    CHECK_RAN_IN_PLACE(before, w, 2 * PAIRS + 2);
    for (int p = 0; p < PAIRS; ++p) {
        CHECK_WHERE(results[p], DATA, w);
        CHECK_WHERE(results[p], DIFF, w);
        char what[64];
        snprintf(what, sizeof what, "transposed %d %d data", (int)pairs[p][0], (int)pairs[p][1]);
        KEEP(what, results[p], DATA);
        snprintf(what, sizeof what, "transposed %d %d diff", (int)pairs[p][0], (int)pairs[p][1]);
        KEEP(what, results[p], DIFF);
    }
    CHECK_WHERE(into, DATA, w);
    KEEP("transpose_from", into, DATA);
    KEEP("transpose_from equal axes", copied_into, DIFF);
    destroy_all(results, PAIRS);
    cblob_blob_destroy(copied_into);
    cblob_blob_destroy(into);
    cblob_blob_destroy(source);
}

/* ---- merge and split ---------------------------------------------------------------------------- */

/* Splits `whole` into pieces, merges them back into a fresh blob, both parts, and keeps it all.
 * A piece without elements (width 0) is left alone. */
static void split_and_merge(where w, record *out, int32_t axis, int32_t num, cblob_blob *whole, cblob_blob **pieces,
                            cblob_blob *merged)
{
    int kernels = 0;
    for (int32_t i = 0; i < num; ++i) {
        int64_t count = 0;
        cblob_blob_count(pieces[i], &count);
        kernels += count > 0 ? 4 : 0; /* split and merge, data and diff */
    }
    const fake_cuda_counters before = gpu_counters();
    for (cblob_part part = DATA; part <= DIFF; ++part) {
        if (axis < 0) {
            CHECK_OK(cblob_blob_split_objects(whole, part, num, pieces));
            CHECK_OK(cblob_blob_merge_objects(merged, part, num, pieces));
        } else {
            CHECK_OK(cblob_blob_split(whole, part, axis, num, pieces));
            CHECK_OK(cblob_blob_merge(merged, part, axis, num, pieces));
        }
    }
    CHECK_RAN_IN_PLACE(before, w, kernels);
    for (int32_t i = 0; i < num; ++i) {
        char what[64];
        snprintf(what, sizeof what, "axis %d piece %d data", (int)axis, (int)i);
        KEEP(what, pieces[i], DATA);
        snprintf(what, sizeof what, "axis %d piece %d diff", (int)axis, (int)i);
        KEEP(what, pieces[i], DIFF);
    }
    CHECK_WHERE(merged, DATA, w);
    CHECK_WHERE(merged, DIFF, w);
    KEEP("merged data", merged, DATA);
    KEEP("merged diff", merged, DIFF);
}

SCENARIO(neoml_gpu_merges_and_splits_along_every_axis)
{
    const int64_t dims[4] = {4, 3, 5, 2};
    for (int32_t axis = 0; axis < 4; ++axis) {
        cblob_blob *whole = made(ctx, dtype, 4, dims, 1, w), *merged = made(ctx, dtype, 4, dims, 2, w);
        CHECK(whole != NULL && merged != NULL);
        cblob_blob *pieces[3] = {NULL};
        /* One row, none, the rest: the empty piece sits between two others. */
        const int64_t widths[3] = {1, 0, dims[axis] - 1};
        for (int i = 0; i < 3; ++i) {
            int64_t piece_dims[4];
            memcpy(piece_dims, dims, sizeof piece_dims);
            piece_dims[axis] = widths[i];
            CHECK((pieces[i] = made(ctx, dtype, 4, piece_dims, 10 + i, w)) != NULL);
        }
        split_and_merge(w, out, axis, 3, whole, pieces, merged);
        destroy_all(pieces, 3);
        cblob_blob_destroy(merged);
        cblob_blob_destroy(whole);
        if (cbt_failed())
            return;
    }
}

SCENARIO(neoml_gpu_merges_and_splits_objects)
{
    const int64_t dims[7] = {2, 3, 1, 2, 2, 1, 3}, small[7] = {2, 3, 1, 1, 1, 1, 4}, large[7] = {2, 3, 1, 2, 2, 1, 2};
    cblob_blob *whole = made(ctx, dtype, 7, dims, 1, w), *merged = made(ctx, dtype, 7, dims, 2, w);
    cblob_blob *pieces[2] = {made(ctx, dtype, 7, small, 3, w), made(ctx, dtype, 7, large, 4, w)};
    CHECK(whole != NULL && merged != NULL && pieces[0] != NULL && pieces[1] != NULL);
    split_and_merge(w, out, -1, 2, whole, pieces, merged);
    destroy_all(pieces, 2);
    cblob_blob_destroy(merged);
    cblob_blob_destroy(whole);
}

/* ---- windows ------------------------------------------------------------------------------------- */

SCENARIO(neoml_gpu_operations_on_windows_reach_the_parents_rows)
{
    const int64_t dims[3] = {5, 3, 4}, rows2[3] = {2, 3, 4}, narrow[3] = {2, 3, 1}, wide[3] = {2, 3, 3},
                  row1[3] = {1, 3, 4};
    cblob_blob *parent = made(ctx, dtype, 3, dims, 1, w), *other = made(ctx, dtype, 3, rows2, 2, w);
    cblob_blob *source = made(ctx, dtype, 3, dims, 3, w), *target = made(ctx, dtype, 3, dims, 4, w);
    cblob_blob *inputs[2] = {made(ctx, dtype, 3, narrow, 5, w), made(ctx, dtype, 3, wide, 6, w)};
    cblob_blob *outputs[2] = {made(ctx, dtype, 3, row1, 7, w), made(ctx, dtype, 3, row1, 8, w)};
    CHECK(parent != NULL && other != NULL && source != NULL && target != NULL);
    CHECK(inputs[0] != NULL && inputs[1] != NULL && outputs[0] != NULL && outputs[1] != NULL);
    cblob_blob *window, *nested, *first, *rest, *transposed = NULL, *copy = NULL;
    CHECK_OK(cblob_window_create(parent, 2, &window));
    CHECK_OK(cblob_window_set_position(window, 1));
    CHECK_OK(cblob_window_create(window, 1, &nested));
    CHECK_OK(cblob_window_set_position(nested, 1)); /* the parent's row 2 */
    CHECK_OK(cblob_window_create(target, 2, &first));
    CHECK_OK(cblob_window_create(target, 3, &rest));
    CHECK_OK(cblob_window_set_position(rest, 2));
    cblob_blob *split_into[2] = {first, rest};

    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_fill(window, DIFF, fill_value(dtype)));
    CHECK_OK(cblob_blob_add(window, other, DATA));
    CHECK_OK(cblob_blob_fill(nested, DATA, 5));
    CHECK_OK(cblob_blob_transposed(window, 1, 2, &transposed)); /* data and diff */
    CHECK_OK(cblob_blob_deep_copy(nested, &copy));                /* data and diff */
    CHECK_OK(cblob_blob_merge(window, DIFF, 2, 2, inputs));       /* one kernel per input */
    CHECK_OK(cblob_blob_split(window, DATA, 0, 2, outputs));
    CHECK_OK(cblob_blob_split(source, DATA, 0, 2, split_into)); /* windows as outputs */
    CHECK_RAN_IN_PLACE(before, w, 3 + 2 + 2 + 2 + 2 + 2);
    CHECK_WHERE(parent, DATA, w);
    CHECK_WHERE(parent, DIFF, w);
    CHECK_WHERE(target, DATA, w);
    KEEP("parent data", parent, DATA);
    KEEP("parent diff", parent, DIFF);
    KEEP("transposed window data", transposed, DATA);
    KEEP("transposed window diff", transposed, DIFF);
    KEEP("copy of the nested window", copy, DATA);
    KEEP("split of the window 0", outputs[0], DATA);
    KEEP("split of the window 1", outputs[1], DATA);
    KEEP("split into windows", target, DATA);
    cblob_blob *all[] = {copy, transposed, rest, first, nested, window, outputs[0], outputs[1], inputs[0], inputs[1],
                         target, source, other, parent};
    destroy_all(all, (int)(sizeof all / sizeof all[0]));
}

/* ---- mappings ---------------------------------------------------------------------------------- */

/* On the double: since `since`, `to_host` and `to_device` elements of `dtype` crossed, in as many
 * copies as are not 0 (one per staged range). */
#define CHECK_STAGED(since, w, dtype, to_host, to_device) \
    do { \
        const bool dev_ = (w) == ON_DEVICE; \
        CHECK_TRANSFERS((since), dev_ ? ((to_device) > 0) : 0, dev_ ? ((to_host) > 0) : 0, 0); \
        CHECK_COUNTER_DELTA((since), device_to_host_bytes, dev_ ? (to_host) * dtype_size(dtype) : 0); \
        CHECK_COUNTER_DELTA((since), host_to_device_bytes, dev_ ? (to_device) * dtype_size(dtype) : 0); \
    } while (0)

SCENARIO(neoml_2G_37_device_mappings_stage_exactly_their_range)
{
    const int64_t ten = 10;
    cblob_blob *blob = made(ctx, dtype, 1, &ten, 1, w);
    CHECK(blob != NULL);
    cblob_buffer *read, *write, *read_write;
    void *r, *wr, *rw;

    fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_map(blob, DATA, 5, 3, CBLOB_ACCESS_READ, &read, &r));
    CHECK_STAGED(before, w, dtype, 3, 0); /* from position 5, where NeoML reads from element 0 */
    CHECK_MSG(keep_array(out, "read map", dtype, 3, r), "cannot keep the read map");
    CHECK_OK(cblob_buffer_unmap(read));
    CHECK_STAGED(before, w, dtype, 3, 0); /* read only: nothing goes back */
    CHECK_WHERE(blob, DATA, w);

    before = gpu_counters();
    CHECK_OK(cblob_blob_map(blob, DATA, 2, 2, CBLOB_ACCESS_WRITE, &write, &wr));
    CHECK_STAGED(before, w, dtype, 0, 0); /* write only: nothing read */
    set_value(wr, dtype, 0, 7);
    set_value(wr, dtype, 1, 8);
    CHECK_OK(cblob_blob_map(blob, DATA, 4, 2, CBLOB_ACCESS_READ_WRITE, &read_write, &rw));
    CHECK_STAGED(before, w, dtype, 2, 0);
    set_value(rw, dtype, 1, value_at(rw, dtype, 1) + 1000);
    CHECK_ERROR(cblob_buffer_unmap(write), CBLOB_ERR_STATE); /* out of order: refused, nothing written */
    CHECK_STAGED(before, w, dtype, 2, 0);
    CHECK_OK(cblob_buffer_unmap(read_write));
    CHECK_STAGED(before, w, dtype, 2, 2);
    CHECK_OK(cblob_buffer_unmap(write));
    CHECK_COUNTER_DELTA(before, host_to_device, w == ON_DEVICE ? 2 : 0);
    CHECK_COUNTER_DELTA(before, host_to_device_bytes, w == ON_DEVICE ? 4 * dtype_size(dtype) : 0);
    CHECK_WHERE(blob, DATA, w);
    KEEP("data after the write maps", blob, DATA);
    cblob_blob_destroy(blob);
}

SCENARIO(neoml_2G_37_device_mappings_of_a_window_stage_the_parents_rows)
{
    const int64_t dims[3] = {4, 1, 3};
    cblob_blob *parent = made(ctx, dtype, 3, dims, 1, w), *window;
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 2, &window));
    CHECK_OK(cblob_window_set_position(window, 1));
    cblob_buffer *buffer;
    void *ptr;
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_map(window, DIFF, 1, 4, CBLOB_ACCESS_READ_WRITE, &buffer, &ptr));
    CHECK_STAGED(before, w, dtype, 4, 0);
    CHECK_MSG(keep_array(out, "window map", dtype, 4, ptr), "cannot keep the window map");
    for (int i = 0; i < 4; ++i)
        set_value(ptr, dtype, i, 90 + i);
    CHECK_OK(cblob_buffer_unmap(buffer));
    CHECK_STAGED(before, w, dtype, 4, 4);
    CHECK_WHERE(parent, DIFF, w);
    KEEP("parent diff", parent, DIFF);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
}

/* ---- where operations run when the parts are in different places --------------------------------- */

SCENARIO(neoml_gpu_writes_run_where_the_written_blob_is)
{
    /* On the device run only the written blobs are on the device; their sources stay on the
     * host and move to the device (one copy per source part), which then holds both (SYNCED). */
    const int64_t dims[3] = {2, 3, 4}, part_dims[3] = {2, 1, 4}, rest_dims[3] = {2, 2, 4}, swapped[3] = {4, 3, 2};
    cblob_blob *sum = made(ctx, dtype, 3, dims, 1, w), *merged = made(ctx, dtype, 3, dims, 2, w);
    cblob_blob *flipped = made(ctx, dtype, 3, swapped, 3, w);
    cblob_blob *source = made(ctx, dtype, 3, dims, 4, ON_HOST);
    cblob_blob *inputs[2] = {made(ctx, dtype, 3, part_dims, 5, ON_HOST), made(ctx, dtype, 3, rest_dims, 6, ON_HOST)};
    CHECK(sum != NULL && merged != NULL && flipped != NULL && source != NULL && inputs[0] != NULL && inputs[1] != NULL);
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_add(sum, source, DATA));
    CHECK_OK(cblob_blob_transpose_from(flipped, source, DATA, 0, 2));
    CHECK_OK(cblob_blob_merge(merged, DIFF, 1, 2, inputs));
    /* The add and the transpose are kernels. The merge copies rows of 4 and of 8 elements, each
     * input by the strided-copy kernel, whatever the rows' width (cuda/cuda_copy.h). */
    CHECK_TRANSFERS(before, w == ON_DEVICE ? 3 : 0, 0, 0);
    CHECK_COUNTER_DELTA(before, launches, w == ON_DEVICE ? 4 : 0);
    CHECK_EQ_INT(head_of(source, DATA), w == ON_DEVICE ? CBLOB_HEAD_SYNCED : CBLOB_HEAD_AT_CPU);
    CHECK_EQ_INT(head_of(inputs[1], DIFF), w == ON_DEVICE ? CBLOB_HEAD_SYNCED : CBLOB_HEAD_AT_CPU);
    CHECK_WHERE(sum, DATA, w);
    CHECK_WHERE(flipped, DATA, w);
    CHECK_WHERE(merged, DIFF, w);
    KEEP("sum", sum, DATA);
    KEEP("transposed", flipped, DATA);
    KEEP("merged", merged, DIFF);
    cblob_blob *all[] = {sum, merged, flipped, source, inputs[0], inputs[1]};
    destroy_all(all, 6);
}

SCENARIO(neoml_gpu_synced_parts_are_read_on_the_host_and_written_on_the_device)
{
    const int64_t dims[2] = {3, 4};
    cblob_blob *blob = made(ctx, dtype, 2, dims, 1, ON_HOST), *clone = NULL;
    CHECK(blob != NULL);
    const void *device_ptr;
    if (w == ON_DEVICE)
        CHECK_OK(cblob_blob_gpu_ptr(blob, DATA, &device_ptr)); /* AT_CPU -> SYNCED */
    unsigned char values[12 * sizeof(double)];
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_copy_out(blob, DATA, dtype, values, 12));
    CHECK_OK(cblob_blob_clone(blob, CBLOB_DTYPE_FLOAT64, &clone));
    CHECK_RAN_IN_PLACE(before, w, 0); /* both read the host copy */
    CHECK_EQ_INT(head_of(clone, DATA), CBLOB_HEAD_AT_CPU);
    CHECK_OK(cblob_blob_fill(blob, DATA, 6));
    CHECK_RAN_IN_PLACE(before, w, 1);
    CHECK_WHERE(blob, DATA, w);
    CHECK_MSG(keep_array(out, "copy_out", dtype, 12, values), "cannot keep copy_out");
    KEEP("clone", clone, DATA);
    KEEP("filled", blob, DATA);
    cblob_blob_destroy(clone);
    cblob_blob_destroy(blob);
}

SCENARIO(neoml_gpu_operations_reach_blobs_of_another_context_on_the_same_device)
{
    /* Blobs of two contexts, all on the one device: an operation reads the others through the
     * device of the blob it writes, and nothing moves. */
    cblob_context *other_ctx = NULL;
    CHECK_OK(cblob_context_create(&other_ctx));
    const int64_t dims[2] = {3, 4}, swapped[2] = {4, 3}, rows1[2] = {1, 4}, rows2[2] = {2, 4};
    cblob_blob *sum = made(ctx, dtype, 2, dims, 1, w), *flipped = made(ctx, dtype, 2, swapped, 2, w);
    cblob_blob *converted = made(ctx, CBLOB_DTYPE_FLOAT64, 2, dims, 3, w);
    cblob_blob *source = made(other_ctx, dtype, 2, dims, 4, w);
    cblob_blob *inputs[2] = {made(other_ctx, dtype, 2, rows1, 5, w), made(other_ctx, dtype, 2, rows2, 6, w)};
    CHECK(sum != NULL && flipped != NULL && converted != NULL && source != NULL && inputs[0] != NULL &&
          inputs[1] != NULL);
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_add(sum, source, DATA));
    CHECK_OK(cblob_blob_transpose_from(flipped, source, DIFF, 0, 1));
    CHECK_OK(cblob_blob_convert_from(converted, source, DATA));
    CHECK_OK(cblob_blob_merge(source, DIFF, 0, 2, inputs)); /* writing the other context's blob */
    CHECK_RAN_IN_PLACE(before, w, 5);
    KEEP("sum", sum, DATA);
    KEEP("transposed", flipped, DIFF);
    KEEP("converted", converted, DATA);
    KEEP("merged", source, DIFF);
    cblob_blob *all[] = {sum, flipped, converted, source, inputs[0], inputs[1]};
    destroy_all(all, 6);
    cblob_context_destroy(other_ctx);
}
