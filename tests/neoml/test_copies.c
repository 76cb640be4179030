/* SPDX-License-Identifier: BSD-2-Clause */
/* Typed copies, blob-to-blob copies, deep copies and clones with conversion (conformance.md 2.C). */
#include <float.h>

#include "neoml_test.h"

TEST(neoml_2C_14_typed_copies_check_the_dtype)
{
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_INT32, 4, &blob));
    const float floats[4] = {1, 2, 3, 4};
    CHECK_ERROR(cblob_blob_copy_in(blob, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, floats, 4), CBLOB_ERR_DTYPE);
    float out[4] = {9, 9, 9, 9};
    CHECK_ERROR(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, out, 4), CBLOB_ERR_DTYPE);
    CHECK(out[0] == 9 && out[3] == 9);
    CHECK_ERROR(cblob_blob_copy_out(blob, CBLOB_PART_DATA, 7, out, 4), CBLOB_ERR_INVALID_ARGUMENT);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2C_17_copy_in_and_out_round_trip_every_dtype)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
            cblob_blob *blob;
            CHECK_OK(cblob_blob_create_list(ctx, dtype, 2, 3, 4, 5, &blob));
            unsigned char in[120 * 8], back[120 * 8];
            for (int i = 0; i < 120; ++i)
                set_value(in, dtype, i, tagged(i, 7));
            CHECK_OK(cblob_blob_copy_in(blob, part, dtype, in, 120));
            memset(back, 0, sizeof back);
            CHECK_OK(cblob_blob_copy_out(blob, part, dtype, back, 120));
            CHECK_MSG(memcmp(in, back, 120 * dtype_size(dtype)) == 0, "%s part %d", dtype_name(dtype), (int)part);
            /* The other part is untouched. */
            double *other = read_values(blob, 1 - part);
            CHECK(other != NULL && other[0] == 0 && other[119] == 0);
            free(other);
            cblob_blob_destroy(blob);
        }
    }
    cblob_context_destroy(ctx);
}

TEST(neoml_2C_18_copy_out_checks_the_size)
{
    /* NeoML's CopyTo(dst, size) copies `size` elements without checking them against the blob:
     * cblob wants the exact count, and writes nothing otherwise. */
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT64, 3, &blob));
    CHECK(fill_tagged(blob, CBLOB_PART_DATA, 1));
    double out[4] = {-1, -1, -1, -1};
    CHECK_ERROR(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT64, out, 4), CBLOB_ERR_SHAPE);
    CHECK_ERROR(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT64, out, 2), CBLOB_ERR_SHAPE);
    CHECK(strstr(cblob_last_error_message(), "3 elements") != NULL);
    CHECK(out[0] == -1 && out[1] == -1);
    CHECK_ERROR(cblob_blob_copy_in(blob, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT64, out, 4), CBLOB_ERR_SHAPE);
    CHECK_ERROR(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT64, NULL, 3), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT64, out, 3));
    CHECK(out[2] == tagged(2, 1) && out[3] == -1);
    /* An empty blob copies nothing, and takes a NULL array. */
    cblob_blob *empty;
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT64, 0, &empty));
    CHECK_OK(cblob_blob_copy_out(empty, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT64, NULL, 0));
    CHECK_OK(cblob_blob_copy_in(empty, CBLOB_PART_DIFF, CBLOB_DTYPE_FLOAT64, NULL, 0));
    cblob_blob_destroy(empty);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2C_19_blob_to_blob_copy)
{
    cblob_context *ctx;
    cblob_blob *a, *b, *c;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 4, &a));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 4, &b));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 2, 4, 3, &c));
    CHECK(fill_tagged(a, CBLOB_PART_DIFF, 2));
    CHECK_OK(cblob_blob_convert_from(b, a, CBLOB_PART_DIFF));
    double *values = read_values(b, CBLOB_PART_DIFF);
    CHECK(values != NULL && values[23] == tagged(23, 2));
    free(values);
    /* Equal counts but other dims: refused (NeoML asserts equal dims too). */
    CHECK_ERROR(cblob_blob_convert_from(c, a, CBLOB_PART_DIFF), CBLOB_ERR_SHAPE);
    /* From itself: nothing to do. */
    CHECK_OK(cblob_blob_convert_from(a, a, CBLOB_PART_DIFF));
    values = read_values(a, CBLOB_PART_DIFF);
    CHECK(values != NULL && values[5] == tagged(5, 2));
    free(values);
    /* From a window that overlaps the blob it writes (a window of itself): refused. */
    cblob_blob *window;
    const int64_t rows[1] = {24};
    cblob_blob *flat;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, rows, &flat));
    CHECK_OK(cblob_window_create(flat, 12, &window));
    cblob_blob *window2;
    CHECK_OK(cblob_window_create(flat, 12, &window2));
    CHECK_OK(cblob_window_set_position(window2, 6));
    CHECK_ERROR(cblob_blob_convert_from(window2, window, CBLOB_PART_DATA), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(cblob_window_set_position(window2, 12)); /* disjoint halves of one storage: fine */
    CHECK(fill_tagged(window, CBLOB_PART_DATA, 3));
    CHECK_OK(cblob_blob_convert_from(window2, window, CBLOB_PART_DATA));
    values = read_values(flat, CBLOB_PART_DATA);
    CHECK(values != NULL && values[13] == tagged(1, 3));
    free(values);
    cblob_blob_destroy(window2);
    cblob_blob_destroy(window);
    cblob_blob_destroy(flat);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_blob_destroy(c);
    cblob_context_destroy(ctx);
}

TEST(neoml_2C_20_clone_of_a_window_is_a_plain_blob)
{
    cblob_context *ctx;
    cblob_blob *parent, *window, *clone;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_INT32, 5, 2, 3, &parent));
    CHECK(fill_tagged(parent, CBLOB_PART_DATA, 1));
    CHECK_OK(cblob_window_create(parent, 2, &window));
    CHECK_OK(cblob_window_set_position(window, 3));
    CHECK_OK(cblob_blob_clone(window, CBLOB_DTYPE_FLOAT64, &clone));
    int32_t is_window = -1;
    int64_t rows = -1;
    cblob_dtype dtype = 0;
    CHECK_OK(cblob_blob_is_window(clone, &is_window));
    CHECK_OK(cblob_blob_dim(clone, CBLOB_DIM_BATCH_LENGTH, &rows));
    CHECK_OK(cblob_blob_dtype(clone, &dtype));
    CHECK(is_window == 0 && rows == 2 && dtype == CBLOB_DTYPE_FLOAT64);
    double *values = read_values(clone, CBLOB_PART_DATA);
    CHECK(values != NULL && values[0] == tagged(18, 1) && values[11] == tagged(29, 1));
    free(values);
    /* The diff was never accessed: it stays so in the clone. */
    cblob_head head = -1;
    CHECK_OK(cblob_blob_head(clone, CBLOB_PART_DIFF, &head));
    CHECK_EQ_INT(head, CBLOB_HEAD_UNINITIALIZED);
    cblob_blob_destroy(clone);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

TEST(neoml_2C_21_deep_copy_is_independent)
{
    cblob_context *ctx;
    cblob_blob *blob, *copy;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_matrix(ctx, CBLOB_DTYPE_UINT32, 3, 4, &blob));
    CHECK(fill_tagged(blob, CBLOB_PART_DATA, 1));
    CHECK(fill_tagged(blob, CBLOB_PART_DIFF, 2));
    CHECK_OK(cblob_blob_deep_copy(blob, &copy));
    CHECK_OK(cblob_blob_fill(blob, CBLOB_PART_DATA, 0));
    double *data = read_values(copy, CBLOB_PART_DATA), *diff = read_values(copy, CBLOB_PART_DIFF);
    CHECK(data != NULL && diff != NULL);
    for (int i = 0; i < 12; ++i)
        CHECK(data[i] == tagged(i, 1) && diff[i] == tagged(i, 2));
    free(data);
    free(diff);
    cblob_blob_destroy(copy);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* Converts `count` doubles held in a float64 blob to `target` through cblob_blob_clone. */
static int convert_values(cblob_context *ctx, const double *in, int64_t count, cblob_dtype target, void *out)
{
    cblob_blob *source = NULL, *clone = NULL;
    int ok = cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT64, count, &source) == CBLOB_OK &&
             cblob_blob_copy_in(source, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT64, in, count) == CBLOB_OK &&
             cblob_blob_clone(source, target, &clone) == CBLOB_OK &&
             cblob_blob_copy_out(clone, CBLOB_PART_DATA, target, out, count) == CBLOB_OK;
    cblob_blob_destroy(clone);
    cblob_blob_destroy(source);
    return ok;
}

TEST(neoml_conversion_float_to_integer_rounds_and_saturates)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    const double in[] = {0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, -2.6, 1e10, -1e10, INFINITY, -INFINITY, NAN,
                         2147483647.4, 2147483647.5, -2147483648.6, 4294967295.4, 4294967295.6};
    const int32_t as_i32[] = {0, 2, 2, 0, -2, 2, -3, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0,
                              INT32_MAX, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MAX};
    const uint32_t as_u32[] = {0, 2, 2, 0, 0, 2, 0, UINT32_MAX, 0, UINT32_MAX, 0, 0,
                               2147483647u, 2147483648u, 0, UINT32_MAX, UINT32_MAX};
    enum { N = sizeof in / sizeof in[0] };
    int32_t got_i32[N];
    uint32_t got_u32[N];
    CHECK(convert_values(ctx, in, N, CBLOB_DTYPE_INT32, got_i32));
    CHECK(convert_values(ctx, in, N, CBLOB_DTYPE_UINT32, got_u32));
    for (int i = 0; i < N; ++i) {
        CHECK_MSG(got_i32[i] == as_i32[i], "%.17g -> int32 %d, expected %d", in[i], got_i32[i], as_i32[i]);
        CHECK_MSG(got_u32[i] == as_u32[i], "%.17g -> uint32 %u, expected %u", in[i], got_u32[i], as_u32[i]);
    }
    cblob_context_destroy(ctx);
}

TEST(neoml_conversion_between_floats_and_integers)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    /* float64 to float32: nearest; out of range is infinity; NaN stays NaN. */
    const double in[] = {0.1, 1e300, -1e300, NAN, 16777217.0};
    float got[5];
    CHECK(convert_values(ctx, in, 5, CBLOB_DTYPE_FLOAT32, got));
    CHECK(got[0] == 0.1f && got[1] == INFINITY && got[2] == -INFINITY && isnan(got[3]) && got[4] == 16777216.0f);
    /* Integers to floats: exact in float64, nearest (ties to even) in float32. */
    cblob_blob *ints, *as_f32, *as_f64;
    const int32_t values[3] = {INT32_MIN, 16777217, -7};
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_INT32, 3, &ints));
    CHECK_OK(cblob_blob_copy_in(ints, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, values, 3));
    CHECK_OK(cblob_blob_clone(ints, CBLOB_DTYPE_FLOAT32, &as_f32));
    CHECK_OK(cblob_blob_clone(ints, CBLOB_DTYPE_FLOAT64, &as_f64));
    float f32[3];
    double f64[3];
    CHECK_OK(cblob_blob_copy_out(as_f32, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, f32, 3));
    CHECK_OK(cblob_blob_copy_out(as_f64, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT64, f64, 3));
    CHECK(f32[0] == -2147483648.0f && f32[1] == 16777216.0f && f32[2] == -7.0f);
    CHECK(f64[0] == -2147483648.0 && f64[1] == 16777217.0 && f64[2] == -7.0);
    cblob_blob_destroy(ints);
    cblob_blob_destroy(as_f32);
    cblob_blob_destroy(as_f64);
    cblob_context_destroy(ctx);
}

TEST(neoml_conversion_between_integer_types_saturates)
{
    cblob_context *ctx;
    cblob_blob *signed_blob, *unsigned_blob, *to_unsigned, *to_signed;
    CHECK_OK(cblob_context_create(&ctx));
    const int32_t s[4] = {-1, INT32_MIN, 0, INT32_MAX};
    const uint32_t u[4] = {0, 2147483648u, UINT32_MAX, 5};
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_INT32, 4, &signed_blob));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_UINT32, 4, &unsigned_blob));
    CHECK_OK(cblob_blob_copy_in(signed_blob, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, s, 4));
    CHECK_OK(cblob_blob_copy_in(unsigned_blob, CBLOB_PART_DATA, CBLOB_DTYPE_UINT32, u, 4));
    CHECK_OK(cblob_blob_create_like(signed_blob, CBLOB_DTYPE_UINT32, &to_unsigned));
    CHECK_OK(cblob_blob_create_like(unsigned_blob, CBLOB_DTYPE_INT32, &to_signed));
    /* convert_from is the in-place form of clone's conversion. */
    CHECK_OK(cblob_blob_convert_from(to_unsigned, signed_blob, CBLOB_PART_DATA));
    CHECK_OK(cblob_blob_convert_from(to_signed, unsigned_blob, CBLOB_PART_DATA));
    uint32_t got_u[4];
    int32_t got_s[4];
    CHECK_OK(cblob_blob_copy_out(to_unsigned, CBLOB_PART_DATA, CBLOB_DTYPE_UINT32, got_u, 4));
    CHECK_OK(cblob_blob_copy_out(to_signed, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, got_s, 4));
    CHECK(got_u[0] == 0 && got_u[1] == 0 && got_u[2] == 0 && got_u[3] == (uint32_t)INT32_MAX);
    CHECK(got_s[0] == 0 && got_s[1] == INT32_MAX && got_s[2] == INT32_MAX && got_s[3] == 5);
    cblob_blob_destroy(signed_blob);
    cblob_blob_destroy(unsigned_blob);
    cblob_blob_destroy(to_unsigned);
    cblob_blob_destroy(to_signed);
    cblob_context_destroy(ctx);
}

TEST(neoml_conversion_round_trips_every_dtype_pair)
{
    /* Values every dtype holds exactly survive any chain of conversions. */
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    const double in[6] = {0, 1, 7, 255, 65535, 16777215};
    for (int a = 0; a < NUM_DTYPES; ++a) {
        for (int b = 0; b < NUM_DTYPES; ++b) {
            cblob_blob *first, *second, *third;
            CHECK_OK(cblob_blob_create_vector(ctx, all_dtypes[a], 6, &first));
            unsigned char raw[6 * 8];
            for (int i = 0; i < 6; ++i)
                set_value(raw, all_dtypes[a], i, in[i]);
            CHECK_OK(cblob_blob_copy_in(first, CBLOB_PART_DATA, all_dtypes[a], raw, 6));
            CHECK_OK(cblob_blob_clone(first, all_dtypes[b], &second));
            CHECK_OK(cblob_blob_clone(second, all_dtypes[a], &third));
            double *values = read_values(third, CBLOB_PART_DATA);
            CHECK(values != NULL);
            for (int i = 0; i < 6; ++i)
                CHECK_MSG(values[i] == in[i], "%s -> %s -> %s: %g became %g", dtype_name(all_dtypes[a]),
                          dtype_name(all_dtypes[b]), dtype_name(all_dtypes[a]), in[i], values[i]);
            free(values);
            cblob_blob_destroy(first);
            cblob_blob_destroy(second);
            cblob_blob_destroy(third);
        }
    }
    cblob_context_destroy(ctx);
}
