/* SPDX-License-Identifier: BSD-2-Clause */
/* Property tests against naive references: random shapes of up to 7 axes, random axis pairs for
 * transposes, random splits that must merge back to the original bytes, random conversions, for
 * every dtype. Seeds are fixed; a failure prints the seed that reproduces it. */
#include "neoml_test.h"

#define TRIALS 40
#define MAX_COUNT 3000

typedef struct random_shape {
    int32_t num_axes;
    int64_t dims[CBLOB_NEOML_AXES];
    int64_t count;
} random_shape;

/* 1 to 7 axes of 1 to 6, with at most MAX_COUNT elements; `allow_zero` lets a dimension be 0. */
static random_shape make_shape(rng *r, int allow_zero)
{
    random_shape s;
    s.num_axes = (int32_t)rng_range(r, 1, CBLOB_NEOML_AXES);
    s.count = 1;
    for (int32_t i = 0; i < s.num_axes; ++i) {
        int64_t dim = rng_range(r, allow_zero && rng_range(r, 0, 9) == 0 ? 0 : 1, 6);
        while (dim > 1 && s.count * dim > MAX_COUNT)
            --dim;
        s.dims[i] = dim;
        s.count *= dim;
    }
    return s;
}

/* A blob of the shape with random bytes in both parts (NaN patterns included: copies keep bits). */
static cblob_blob *random_blob(cblob_context *ctx, cblob_dtype dtype, const random_shape *s, rng *r)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create(ctx, dtype, s->num_axes, s->dims, &blob) != CBLOB_OK)
        return NULL;
    const size_t bytes = (size_t)s->count * dtype_size(dtype);
    unsigned char *raw = malloc(bytes + 8);
    for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
        for (size_t i = 0; i < bytes; ++i)
            raw[i] = (unsigned char)rng_next(r);
        if (cblob_blob_copy_in(blob, part, dtype, raw, s->count) != CBLOB_OK) {
            free(raw);
            cblob_blob_destroy(blob);
            return NULL;
        }
    }
    free(raw);
    return blob;
}

/* The part's raw bytes (malloc'd). */
static unsigned char *raw_bytes(cblob_blob *blob, cblob_part part)
{
    cblob_dtype dtype;
    int64_t count;
    cblob_blob_dtype(blob, &dtype);
    cblob_blob_count(blob, &count);
    unsigned char *raw = malloc((size_t)count * dtype_size(dtype) + 8);
    if (cblob_blob_copy_out(blob, part, dtype, raw, count) != CBLOB_OK) {
        free(raw);
        return NULL;
    }
    return raw;
}

/* The naive transpose: unravel every source index, swap two coordinates, ravel in the target. */
static void reference_transpose(const random_shape *s, int32_t a, int32_t b, size_t element, const unsigned char *from,
                                unsigned char *to)
{
    int64_t target_dims[CBLOB_NEOML_AXES];
    memcpy(target_dims, s->dims, sizeof target_dims);
    target_dims[a] = s->dims[b];
    target_dims[b] = s->dims[a];
    for (int64_t i = 0; i < s->count; ++i) {
        int64_t index[CBLOB_NEOML_AXES], rest = i;
        for (int32_t k = s->num_axes - 1; k >= 0; --k) {
            index[k] = rest % s->dims[k];
            rest /= s->dims[k];
        }
        const int64_t swap = index[a];
        index[a] = index[b];
        index[b] = swap;
        int64_t j = 0;
        for (int32_t k = 0; k < s->num_axes; ++k)
            j = j * target_dims[k] + index[k];
        memcpy(to + (size_t)j * element, from + (size_t)i * element, element);
    }
}

TEST(neoml_property_transpose_matches_reference)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        const size_t element = dtype_size(dtype);
        for (uint64_t seed = 1; seed <= TRIALS; ++seed) {
            rng r = {seed * 7919 + (uint64_t)d};
            const random_shape s = make_shape(&r, 1);
            const int32_t a = (int32_t)rng_range(&r, 0, s.num_axes - 1), b = (int32_t)rng_range(&r, 0, s.num_axes - 1);
            cblob_blob *source = random_blob(ctx, dtype, &s, &r), *transposed = NULL, *into = NULL;
            CHECK_MSG(source != NULL, "seed %llu", (unsigned long long)seed);
            CHECK_MSG(cblob_blob_transposed(source, a, b, &transposed) == CBLOB_OK, "seed %llu: %s",
                      (unsigned long long)seed, cblob_last_error_message());
            CHECK_OK(cblob_blob_create_like(transposed, dtype, &into));
            CHECK_MSG(cblob_blob_transpose_from(into, source, CBLOB_PART_DATA, a, b) == CBLOB_OK, "seed %llu: %s",
                      (unsigned long long)seed, cblob_last_error_message());
            for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
                unsigned char *from = raw_bytes(source, part), *got = raw_bytes(transposed, part);
                unsigned char *want = malloc((size_t)s.count * element + 8);
                CHECK(from != NULL && got != NULL);
                reference_transpose(&s, a, b, element, from, want);
                CHECK_MSG(memcmp(got, want, (size_t)s.count * element) == 0,
                          "seed %llu, %s, %d axes, swapping %d and %d: part %d differs from the reference",
                          (unsigned long long)seed, dtype_name(dtype), (int)s.num_axes, (int)a, (int)b, (int)part);
                if (part == CBLOB_PART_DATA) {
                    unsigned char *from_into = raw_bytes(into, part);
                    CHECK(from_into != NULL);
                    CHECK_MSG(memcmp(from_into, want, (size_t)s.count * element) == 0,
                              "seed %llu, %s: transpose_from differs from the reference", (unsigned long long)seed,
                              dtype_name(dtype));
                    free(from_into);
                }
                free(from);
                free(got);
                free(want);
            }
            cblob_blob_destroy(into);
            cblob_blob_destroy(transposed);
            cblob_blob_destroy(source);
        }
    }
    cblob_context_destroy(ctx);
}

TEST(neoml_property_large_transpose_crosses_tiles)
{
    /* Shapes larger than the kernel's tiles (64 x 64 for 4-byte dtypes, 16 x 16 for 8-byte ones),
     * with uneven edges, and a middle axis between the swapped ones, against the reference; the
     * last two cross the kernel's groups of 512 rows and chunks of 512 columns, with partial
     * groups and chunks at the edges (and, for 8-byte dtypes, reach its non-temporal stores). */
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    const random_shape shapes[] = {{2, {67, 45}, 67 * 45},          {3, {3, 70, 33}, 3 * 70 * 33},
                                   {4, {2, 40, 3, 37}, 2 * 40 * 3 * 37}, {3, {33, 2, 65}, 33 * 2 * 65},
                                   {2, {130, 70}, 130 * 70},        {4, {2, 65, 3, 129}, 2 * 65 * 3 * 129},
                                   {2, {1100, 530}, 1100 * 530},    {3, {520, 3, 600}, 520 * 3 * 600}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k) {
        for (int d = 0; d < NUM_DTYPES; ++d) {
            const cblob_dtype dtype = all_dtypes[d];
            const random_shape *s = &shapes[k];
            rng r = {k + 1};
            cblob_blob *source = random_blob(ctx, dtype, s, &r), *transposed;
            CHECK(source != NULL);
            const int32_t a = 0, b = s->num_axes - 1;
            CHECK_OK(cblob_blob_transposed(source, a, b, &transposed));
            unsigned char *from = raw_bytes(source, CBLOB_PART_DATA), *got = raw_bytes(transposed, CBLOB_PART_DATA);
            unsigned char *want = malloc((size_t)s->count * dtype_size(dtype));
            CHECK(from != NULL && got != NULL);
            reference_transpose(s, a, b, dtype_size(dtype), from, want);
            CHECK_MSG(memcmp(got, want, (size_t)s->count * dtype_size(dtype)) == 0, "shape %zu, %s", k, dtype_name(dtype));
            free(from);
            free(got);
            free(want);
            cblob_blob_destroy(transposed);
            cblob_blob_destroy(source);
        }
    }
    cblob_context_destroy(ctx);
}

/* Cuts dim into `pieces` random non-negative sizes that add up to it. */
static void random_cut(rng *r, int64_t dim, int pieces, int64_t *sizes)
{
    int64_t left = dim;
    for (int i = 0; i < pieces - 1; ++i) {
        sizes[i] = rng_range(r, 0, left);
        left -= sizes[i];
    }
    sizes[pieces - 1] = left;
}

TEST(neoml_property_split_then_merge_round_trips)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        const size_t element = dtype_size(dtype);
        for (uint64_t seed = 1; seed <= TRIALS; ++seed) {
            rng r = {seed * 104729 + (uint64_t)d};
            const random_shape s = make_shape(&r, 0);
            const int32_t axis = (int32_t)rng_range(&r, 0, s.num_axes - 1);
            const int pieces = (int)rng_range(&r, 1, 4);
            int64_t sizes[4];
            random_cut(&r, s.dims[axis], pieces, sizes);
            cblob_blob *whole = random_blob(ctx, dtype, &s, &r), *parts[4], *merged;
            CHECK(whole != NULL);
            for (int i = 0; i < pieces; ++i) {
                random_shape p = s;
                p.dims[axis] = sizes[i];
                CHECK_OK(cblob_blob_create(ctx, dtype, p.num_axes, p.dims, &parts[i]));
            }
            CHECK_MSG(cblob_blob_split(whole, CBLOB_PART_DIFF, axis, pieces, parts) == CBLOB_OK, "seed %llu: %s",
                      (unsigned long long)seed, cblob_last_error_message());
            /* Each piece against the reference: element (..., k, ...) of piece i is element
             * (..., offset_i + k, ...) of the whole. */
            unsigned char *original = raw_bytes(whole, CBLOB_PART_DIFF);
            CHECK(original != NULL);
            int64_t inner = 1, outer = 1;
            for (int32_t k = axis + 1; k < s.num_axes; ++k)
                inner *= s.dims[k];
            for (int32_t k = 0; k < axis; ++k)
                outer *= s.dims[k];
            int64_t offset = 0;
            for (int i = 0; i < pieces; ++i) {
                unsigned char *got = raw_bytes(parts[i], CBLOB_PART_DIFF);
                CHECK(got != NULL);
                const size_t row = (size_t)(sizes[i] * inner) * element;
                for (int64_t o = 0; o < outer && row > 0; ++o)
                    CHECK_MSG(memcmp(got + o * row, original + ((size_t)(o * s.dims[axis] + offset) * inner) * element,
                                     row) == 0,
                              "seed %llu, %s, axis %d: piece %d row %lld differs", (unsigned long long)seed,
                              dtype_name(dtype), (int)axis, i, (long long)o);
                offset += sizes[i];
                free(got);
            }
            CHECK_OK(cblob_blob_create(ctx, dtype, s.num_axes, s.dims, &merged));
            CHECK_MSG(cblob_blob_merge(merged, CBLOB_PART_DIFF, axis, pieces, parts) == CBLOB_OK, "seed %llu: %s",
                      (unsigned long long)seed, cblob_last_error_message());
            unsigned char *back = raw_bytes(merged, CBLOB_PART_DIFF);
            CHECK(back != NULL);
            CHECK_MSG(memcmp(back, original, (size_t)s.count * element) == 0,
                      "seed %llu, %s, %d axes, axis %d, %d pieces: merge(split(x)) != x", (unsigned long long)seed,
                      dtype_name(dtype), (int)s.num_axes, (int)axis, pieces);
            free(back);
            free(original);
            cblob_blob_destroy(merged);
            for (int i = 0; i < pieces; ++i)
                cblob_blob_destroy(parts[i]);
            cblob_blob_destroy(whole);
        }
    }
    cblob_context_destroy(ctx);
}

TEST(neoml_property_objects_split_then_merge_round_trips)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        for (uint64_t seed = 1; seed <= TRIALS; ++seed) {
            rng r = {seed * 31337 + (uint64_t)d};
            const int64_t batch[3] = {rng_range(&r, 1, 3), rng_range(&r, 1, 3), rng_range(&r, 1, 2)};
            const int pieces = (int)rng_range(&r, 1, 3);
            cblob_blob *parts[3], *back[3];
            int64_t total = 0;
            for (int i = 0; i < pieces; ++i) {
                /* Each piece has its own object geometry. */
                random_shape p = {7, {batch[0], batch[1], batch[2], rng_range(&r, 1, 3), rng_range(&r, 1, 3),
                                      rng_range(&r, 1, 2), rng_range(&r, 1, 4)}, 0};
                p.count = shape_count(7, p.dims);
                parts[i] = random_blob(ctx, dtype, &p, &r);
                CHECK(parts[i] != NULL);
                total += p.dims[3] * p.dims[4] * p.dims[5] * p.dims[6];
                CHECK_OK(cblob_blob_create_like(parts[i], dtype, &back[i]));
            }
            cblob_blob *whole;
            CHECK_OK(cblob_blob_create_list(ctx, dtype, batch[0], batch[1], batch[2], total, &whole));
            CHECK_MSG(cblob_blob_merge_objects(whole, CBLOB_PART_DATA, pieces, parts) == CBLOB_OK, "seed %llu: %s",
                      (unsigned long long)seed, cblob_last_error_message());
            CHECK_MSG(cblob_blob_split_objects(whole, CBLOB_PART_DATA, pieces, back) == CBLOB_OK, "seed %llu: %s",
                      (unsigned long long)seed, cblob_last_error_message());
            for (int i = 0; i < pieces; ++i) {
                int64_t count;
                CHECK_OK(cblob_blob_count(parts[i], &count));
                unsigned char *a = raw_bytes(parts[i], CBLOB_PART_DATA), *b = raw_bytes(back[i], CBLOB_PART_DATA);
                CHECK(a != NULL && b != NULL);
                CHECK_MSG(memcmp(a, b, (size_t)count * dtype_size(dtype)) == 0, "seed %llu, %s: piece %d",
                          (unsigned long long)seed, dtype_name(dtype), i);
                free(a);
                free(b);
                cblob_blob_destroy(parts[i]);
                cblob_blob_destroy(back[i]);
            }
            cblob_blob_destroy(whole);
        }
    }
    cblob_context_destroy(ctx);
}

/* The conversion rules, written out independently of the kernels. */
static double reference_convert(double v, cblob_dtype target)
{
    if (target == CBLOB_DTYPE_FLOAT32)
        return (float)v;
    if (target == CBLOB_DTYPE_FLOAT64)
        return v;
    const double low = target == CBLOB_DTYPE_INT32 ? -2147483648.0 : 0.0;
    const double high = target == CBLOB_DTYPE_INT32 ? 2147483647.0 : 4294967295.0;
    if (isnan(v))
        return 0;
    double r = floor(v);
    const double fraction = v - r;
    if (fraction > 0.5 || (fraction == 0.5 && fmod(r, 2.0) != 0))
        r += 1; /* nearest, ties to even */
    return r < low ? low : r > high ? high : r;
}

TEST(neoml_property_conversions_match_reference)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int from = 0; from < NUM_DTYPES; ++from) {
        for (int to = 0; to < NUM_DTYPES; ++to) {
            rng r = {(uint64_t)(from * 4 + to + 1)};
            enum { N = 500 };
            unsigned char raw[N * 8];
            double source_values[N];
            for (int i = 0; i < N; ++i) {
                /* Any value of an integer source; for float sources, wide-ranging values of both
                 * signs with fractions, exact halves, infinities and NaN. */
                double v;
                if (all_dtypes[from] == CBLOB_DTYPE_INT32)
                    v = (double)((int64_t)(rng_next(&r) >> 32) - (INT64_C(1) << 31));
                else if (all_dtypes[from] == CBLOB_DTYPE_UINT32)
                    v = (double)(rng_next(&r) >> 32);
                else if (i % 50 == 0)
                    v = i % 100 == 0 ? NAN : -INFINITY;
                else if (i % 7 == 0)
                    v = (double)rng_range(&r, -3, 3) + 0.5;
                else
                    v = (double)((int64_t)(rng_next(&r) >> 20) - (INT64_C(1) << 43)) /
                        (double)(INT64_C(1) << rng_range(&r, 0, 12));
                set_value(raw, all_dtypes[from], i, v);
                source_values[i] = value_at(raw, all_dtypes[from], i);
            }
            cblob_blob *source, *converted;
            CHECK_OK(cblob_blob_create_vector(ctx, all_dtypes[from], N, &source));
            CHECK_OK(cblob_blob_copy_in(source, CBLOB_PART_DATA, all_dtypes[from], raw, N));
            CHECK_OK(cblob_blob_clone(source, all_dtypes[to], &converted));
            double *got = read_values(converted, CBLOB_PART_DATA);
            CHECK(got != NULL);
            for (int i = 0; i < N; ++i) {
                const double want = reference_convert(source_values[i], all_dtypes[to]);
                CHECK_MSG(got[i] == want || (isnan(got[i]) && isnan(want)), "%s -> %s: %.17g gave %.17g, expected %.17g", dtype_name(all_dtypes[from]),
                          dtype_name(all_dtypes[to]), source_values[i], got[i], want);
            }
            free(got);
            cblob_blob_destroy(converted);
            cblob_blob_destroy(source);
        }
    }
    cblob_context_destroy(ctx);
}
