/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_blob_convert_from_truncating (cblob.h, "Conversions"): NeoML's float-to-integer rule,
 * toward zero, with cblob's saturation and NaN rules, checked for every pair of dtypes against a
 * reference written here with C's own conversions on values that tell the rules apart: ties,
 * fractions on both sides of zero, signed zeros, subnormals, the edges of every range, values
 * past them, infinities and NaN. The GPU path is checked against this host path by
 * tests/gpu/test_gpu_neoml.c. */
#include <float.h>

#include "neoml_test.h"

static const float f32_values[] = {
    0.0f, -0.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.7f, -2.7f, 0.99999994f, -0.99999994f, 0x1p-149f,
    -0x1p-149f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN, -NAN, 2147483520.0f, 2147483648.0f, -2147483648.0f,
    -2147483904.0f, 4294967040.0f, 4294967296.0f, 16777216.0f, 8388607.5f, -8388607.5f, 1e10f, -1e10f, -1.0f};
static const double f64_values[] = {
    0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.7, -2.7, 0.9999999999999999, -0.9999999999999999, 0x1p-1074,
    -0x1p-1074, DBL_MAX, -DBL_MAX, INFINITY, -INFINITY, NAN, 2147483646.5, 2147483647.5, 2147483647.9999998,
    2147483648.0, -2147483648.5, -2147483648.9999998, -2147483649.0, 4294967294.5, 4294967295.5, 4294967296.0,
    -0.9999, -1.0, 1e300, -1e300, 0x1.ffffffp+127, 0x1p-150, 16777217.0, 16777219.0, 0.1};
static const int32_t i32_values[] = {0, 1, -1, INT32_MIN, INT32_MAX, INT32_MIN + 1, 16777217, 16777219, -16777217,
                                     2147483584, 123456789, -5};
static const uint32_t u32_values[] = {0, 1, UINT32_MAX, 2147483647u, 2147483648u, 16777217u, 16777219u,
                                      4294967040u, 4294967168u, 4294967167u, 3000000000u, 5};

static const void *values_of(cblob_dtype dtype, int64_t *count)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: *count = sizeof f32_values / sizeof f32_values[0]; return f32_values;
    case CBLOB_DTYPE_FLOAT64: *count = sizeof f64_values / sizeof f64_values[0]; return f64_values;
    case CBLOB_DTYPE_INT32: *count = sizeof i32_values / sizeof i32_values[0]; return i32_values;
    default: *count = sizeof u32_values / sizeof u32_values[0]; return u32_values;
    }
}

/* The reference: C's casts where they are defined, and the saturation and NaN rules at the
 * edges. Floats truncate toward zero as C's float-to-integer cast does; a value whose truncation
 * is outside the target's range saturates. */
static int32_t reference_i32(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 2147483648.0)
        return INT32_MAX;
    if (v <= -2147483649.0)
        return INT32_MIN;
    return (int32_t)v; /* in (-2^31 - 1, 2^31): the truncation fits */
}

static uint32_t reference_u32(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 4294967296.0)
        return UINT32_MAX;
    if (v <= -1.0)
        return 0;
    return (uint32_t)v; /* in (-1, 2^32): the truncation fits */
}

/* Element i of `source` (of `from`) converted to `to`, written at `out`. Every source value is
 * exact in double, so the reference reads it as one. */
static void reference(cblob_dtype from, const void *source, int64_t i, cblob_dtype to, void *out)
{
    const double v = value_at(source, from, i);
    switch (to) {
    case CBLOB_DTYPE_FLOAT32:
        /* float32 to float32 keeps the bits (NaN payload, -0); others round to nearest. */
        *(float *)out = from == CBLOB_DTYPE_FLOAT32 ? ((const float *)source)[i] : (float)v;
        break;
    case CBLOB_DTYPE_FLOAT64: *(double *)out = v; break;
    case CBLOB_DTYPE_INT32: *(int32_t *)out = reference_i32(v); break;
    default: *(uint32_t *)out = reference_u32(v); break;
    }
}

static int is_float(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT32 || dtype == CBLOB_DTYPE_FLOAT64;
}

static cblob_blob *vector_of(cblob_context *ctx, cblob_dtype dtype, int64_t count, const void *values)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create_vector(ctx, dtype, count, &blob) != CBLOB_OK ||
        (values != NULL && cblob_blob_copy_in(blob, CBLOB_PART_DATA, dtype, values, count) != CBLOB_OK)) {
        cblob_blob_destroy(blob);
        return NULL;
    }
    return blob;
}

static int same_element(cblob_dtype dtype, const void *a, const void *b)
{
    if (dtype == CBLOB_DTYPE_FLOAT32 && isnan(*(const float *)a))
        return isnan(*(const float *)b);
    if (dtype == CBLOB_DTYPE_FLOAT64 && isnan(*(const double *)a))
        return isnan(*(const double *)b);
    return memcmp(a, b, dtype_size(dtype)) == 0; /* -0 and +0 differ */
}

TEST(truncating_conversion_matches_the_reference_for_every_pair)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int f = 0; f < NUM_DTYPES; ++f) {
        const cblob_dtype from = all_dtypes[f];
        int64_t count;
        const void *values = values_of(from, &count);
        cblob_blob *source = vector_of(ctx, from, count, values);
        CHECK(source != NULL);
        for (int t = 0; t < NUM_DTYPES; ++t) {
            const cblob_dtype to = all_dtypes[t];
            cblob_blob *target = vector_of(ctx, to, count, NULL);
            CHECK(target != NULL);
            CHECK_OK(cblob_blob_convert_from_truncating(target, source, CBLOB_PART_DATA));
            unsigned char got[64 * sizeof(double)];
            CHECK_OK(cblob_blob_copy_out(target, CBLOB_PART_DATA, to, got, count));
            for (int64_t i = 0; i < count; ++i) {
                unsigned char expected[sizeof(double)];
                reference(from, values, i, to, expected);
                const unsigned char *element = got + (size_t)i * dtype_size(to);
                CHECK_MSG(same_element(to, expected, element), "%s %.17g to %s: got %.17g, expected %.17g",
                          dtype_name(from), value_at(values, from, i), dtype_name(to), value_at(element, to, 0),
                          value_at(expected, to, 0));
            }
            cblob_blob_destroy(target);
        }
        cblob_blob_destroy(source);
    }
    cblob_context_destroy(ctx);
}

/* Only float-to-integer pairs differ from cblob_blob_convert_from, on values with a fraction. */
TEST(truncating_conversion_differs_from_the_default_only_on_fractions)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int f = 0; f < NUM_DTYPES; ++f) {
        const cblob_dtype from = all_dtypes[f];
        int64_t count;
        const void *values = values_of(from, &count);
        cblob_blob *source = vector_of(ctx, from, count, values);
        CHECK(source != NULL);
        for (int t = 0; t < NUM_DTYPES; ++t) {
            const cblob_dtype to = all_dtypes[t];
            cblob_blob *truncated = vector_of(ctx, to, count, NULL), *rounded = vector_of(ctx, to, count, NULL);
            CHECK(truncated != NULL && rounded != NULL);
            CHECK_OK(cblob_blob_convert_from_truncating(truncated, source, CBLOB_PART_DATA));
            CHECK_OK(cblob_blob_convert_from(rounded, source, CBLOB_PART_DATA));
            double *a = read_values(truncated, CBLOB_PART_DATA), *b = read_values(rounded, CBLOB_PART_DATA);
            CHECK(a != NULL && b != NULL);
            int differ = 0;
            for (int64_t i = 0; i < count; ++i) {
                const double v = value_at(values, from, i);
                const int may_differ = is_float(from) && !is_float(to) && v != trunc(v);
                differ += a[i] != b[i];
                CHECK_MSG(may_differ || a[i] == b[i] || (isnan(a[i]) && isnan(b[i])),
                          "%s %.17g to %s: truncating gave %.17g, the default %.17g", dtype_name(from), v,
                          dtype_name(to), a[i], b[i]);
            }
            if (is_float(from) && !is_float(to))
                CHECK_MSG(differ > 0, "%s to %s: truncating changed nothing", dtype_name(from), dtype_name(to));
            free(a);
            free(b);
            cblob_blob_destroy(truncated);
            cblob_blob_destroy(rounded);
        }
        cblob_blob_destroy(source);
    }
    cblob_context_destroy(ctx);
}

/* It is convert_from in everything but the rounding: diff too, shapes checked, the very same
 * elements a no-op, overlapping memory refused, a failed call changes nothing. */
TEST(truncating_conversion_follows_convert_from_rules)
{
    cblob_context *ctx;
    cblob_blob *source, *target, *other_shape, *rows, *first, *second;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t dims[2] = {2, 3}, flipped[2] = {3, 2}, three_rows[2] = {3, 3};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, dims, &source));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 2, dims, &target));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 2, flipped, &other_shape));
    const float diff[6] = {-3.9f, -0.1f, 0.9f, 1.5f, 7.99f, -7.5f};
    CHECK_OK(cblob_blob_copy_in(source, CBLOB_PART_DIFF, CBLOB_DTYPE_FLOAT32, diff, 6));
    CHECK_OK(cblob_blob_convert_from_truncating(target, source, CBLOB_PART_DIFF));
    int32_t got[6];
    CHECK_OK(cblob_blob_copy_out(target, CBLOB_PART_DIFF, CBLOB_DTYPE_INT32, got, 6));
    CHECK(got[0] == -3 && got[1] == 0 && got[2] == 0 && got[3] == 1 && got[4] == 7 && got[5] == -7);

    CHECK(fill_tagged(other_shape, CBLOB_PART_DATA, 3));
    CHECK_ERROR(cblob_blob_convert_from_truncating(other_shape, source, CBLOB_PART_DATA), CBLOB_ERR_SHAPE);
    CHECK(strstr(cblob_last_error_message(), "cblob_blob_convert_from_truncating") != NULL);
    double *kept = read_values(other_shape, CBLOB_PART_DATA);
    CHECK(kept != NULL && kept[5] == tagged(5, 3));
    free(kept);
    CHECK_OK(cblob_blob_convert_from_truncating(source, source, CBLOB_PART_DIFF)); /* the same elements */

    /* Two windows of two rows, one row apart, share a row. */
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT64, 2, three_rows, &rows));
    CHECK_OK(cblob_window_create(rows, 2, &first));
    CHECK_OK(cblob_window_create(rows, 2, &second));
    CHECK_OK(cblob_window_set_position(second, 1));
    CHECK_ERROR(cblob_blob_convert_from_truncating(first, second, CBLOB_PART_DATA), CBLOB_ERR_INVALID_ARGUMENT);

    cblob_blob_destroy(first);
    cblob_blob_destroy(second);
    cblob_blob_destroy(rows);
    cblob_blob_destroy(source);
    cblob_blob_destroy(target);
    cblob_blob_destroy(other_shape);
    cblob_context_destroy(ctx);
}
