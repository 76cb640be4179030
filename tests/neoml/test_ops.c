/* SPDX-License-Identifier: BSD-2-Clause */
/* In-place operations, transposes, merges and splits (conformance.md 2.D, 2.E, 2.H), with the
 * checks cblob adds where NeoML checks nothing. */
#include <float.h>

#include "neoml_test.h"

TEST(neoml_2D_22_add_elementwise_every_dtype)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        cblob_blob *a, *b;
        CHECK_OK(cblob_blob_create_data(ctx, all_dtypes[d], 2, 3, 4, &a));
        CHECK_OK(cblob_blob_create_data(ctx, all_dtypes[d], 2, 3, 4, &b));
        CHECK(fill_tagged(a, CBLOB_PART_DATA, 1));
        CHECK(fill_tagged(b, CBLOB_PART_DATA, 2));
        CHECK_OK(cblob_blob_add(a, b, CBLOB_PART_DATA));
        CHECK_OK(cblob_blob_add(b, b, CBLOB_PART_DATA)); /* a blob added to itself doubles */
        double *sum = read_values(a, CBLOB_PART_DATA), *twice = read_values(b, CBLOB_PART_DATA);
        CHECK(sum != NULL && twice != NULL);
        for (int i = 0; i < 24; ++i) {
            CHECK_MSG(sum[i] == tagged(i, 1) + tagged(i, 2), "%s element %d", dtype_name(all_dtypes[d]), i);
            CHECK_MSG(twice[i] == 2 * tagged(i, 2), "%s element %d", dtype_name(all_dtypes[d]), i);
        }
        free(sum);
        free(twice);
        cblob_blob_destroy(a);
        cblob_blob_destroy(b);
    }
    cblob_context_destroy(ctx);
}

TEST(neoml_2D_22_add_checks_dtype_and_shape)
{
    /* NeoML only presumes (in debug builds) that the sizes match. */
    cblob_context *ctx;
    cblob_blob *a, *other_shape, *other_dtype;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_matrix(ctx, CBLOB_DTYPE_FLOAT32, 2, 6, &a));
    CHECK_OK(cblob_blob_create_matrix(ctx, CBLOB_DTYPE_FLOAT32, 3, 4, &other_shape));
    CHECK_OK(cblob_blob_create_matrix(ctx, CBLOB_DTYPE_INT32, 2, 6, &other_dtype));
    CHECK(fill_tagged(a, CBLOB_PART_DATA, 1));
    CHECK_ERROR(cblob_blob_add(a, other_shape, CBLOB_PART_DATA), CBLOB_ERR_SHAPE);
    CHECK_ERROR(cblob_blob_add(a, other_dtype, CBLOB_PART_DATA), CBLOB_ERR_DTYPE);
    double *values = read_values(a, CBLOB_PART_DATA);
    CHECK(values != NULL && values[11] == tagged(11, 1));
    free(values);
    cblob_blob_destroy(a);
    cblob_blob_destroy(other_shape);
    cblob_blob_destroy(other_dtype);
    cblob_context_destroy(ctx);
}

TEST(neoml_add_integers_wrap)
{
    cblob_context *ctx;
    cblob_blob *a, *b;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_INT32, 2, &a));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_UINT32, 2, &b));
    const int32_t s[2] = {INT32_MAX, INT32_MIN};
    const uint32_t u[2] = {UINT32_MAX, 1};
    CHECK_OK(cblob_blob_copy_in(a, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, s, 2));
    CHECK_OK(cblob_blob_copy_in(b, CBLOB_PART_DATA, CBLOB_DTYPE_UINT32, u, 2));
    CHECK_OK(cblob_blob_add(a, a, CBLOB_PART_DATA));
    CHECK_OK(cblob_blob_add(b, b, CBLOB_PART_DATA));
    int32_t got_s[2];
    uint32_t got_u[2];
    CHECK_OK(cblob_blob_copy_out(a, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, got_s, 2));
    CHECK_OK(cblob_blob_copy_out(b, CBLOB_PART_DATA, CBLOB_DTYPE_UINT32, got_u, 2));
    CHECK(got_s[0] == -2 && got_s[1] == 0);
    CHECK(got_u[0] == UINT32_MAX - 1 && got_u[1] == 2);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_context_destroy(ctx);
}

TEST(neoml_2D_23_clear)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        cblob_blob *blob;
        CHECK_OK(cblob_blob_create_list(ctx, all_dtypes[d], 2, 2, 2, 3, &blob));
        CHECK(fill_tagged(blob, CBLOB_PART_DIFF, 5));
        CHECK_OK(cblob_blob_clear(blob, CBLOB_PART_DIFF));
        double *values = read_values(blob, CBLOB_PART_DIFF);
        CHECK(values != NULL);
        for (int i = 0; i < 24; ++i)
            CHECK(values[i] == 0);
        free(values);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(neoml_2D_24_clear_object)
{
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_image2d(ctx, CBLOB_DTYPE_FLOAT64, 2, 2, 2, 1, 3, &blob)); /* 4 objects of 6 */
    CHECK(fill_tagged(blob, CBLOB_PART_DATA, 1));
    CHECK_OK(cblob_blob_clear_object(blob, CBLOB_PART_DATA, 2));
    CHECK_ERROR(cblob_blob_clear_object(blob, CBLOB_PART_DATA, 4), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_blob_clear_object(blob, CBLOB_PART_DATA, -1), CBLOB_ERR_OUT_OF_RANGE);
    double *values = read_values(blob, CBLOB_PART_DATA);
    CHECK(values != NULL);
    for (int i = 0; i < 24; ++i)
        CHECK_EQ_INT(values[i], i >= 12 && i < 18 ? 0 : tagged(i, 1));
    free(values);
    /* Objects belong to 7-axis blobs. */
    cblob_blob *plain;
    const int64_t dims[2] = {4, 6};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT64, 2, dims, &plain));
    CHECK_ERROR(cblob_blob_clear_object(plain, CBLOB_PART_DATA, 0), CBLOB_ERR_SHAPE);
    cblob_blob_destroy(plain);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2D_25_fill_and_fill_object_every_dtype)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        cblob_blob *blob;
        CHECK_OK(cblob_blob_create_list(ctx, all_dtypes[d], 3, 1, 1, 4, &blob)); /* 3 objects of 4 */
        CHECK_OK(cblob_blob_fill(blob, CBLOB_PART_DATA, 42));
        CHECK_OK(cblob_blob_fill_object(blob, CBLOB_PART_DATA, 1, 7));
        double *values = read_values(blob, CBLOB_PART_DATA);
        CHECK(values != NULL);
        for (int i = 0; i < 12; ++i)
            CHECK_MSG(values[i] == (i >= 4 && i < 8 ? 7 : 42), "%s element %d is %g", dtype_name(all_dtypes[d]), i,
                      values[i]);
        free(values);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(neoml_fill_value_must_fit_the_dtype)
{
    cblob_context *ctx;
    cblob_blob *i32, *u32, *f32, *f64;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_INT32, 2, &i32));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_UINT32, 2, &u32));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT32, 2, &f32));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT64, 2, &f64));
    CHECK_ERROR(cblob_blob_fill(i32, CBLOB_PART_DATA, 2.5), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_fill(i32, CBLOB_PART_DATA, NAN), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_fill(i32, CBLOB_PART_DATA, 2147483648.0), CBLOB_ERR_OVERFLOW);
    CHECK_ERROR(cblob_blob_fill(u32, CBLOB_PART_DATA, -1), CBLOB_ERR_OVERFLOW);
    CHECK_ERROR(cblob_blob_fill(u32, CBLOB_PART_DATA, INFINITY), CBLOB_ERR_OVERFLOW);
    CHECK_ERROR(cblob_blob_fill(f32, CBLOB_PART_DATA, 1e39), CBLOB_ERR_OVERFLOW);
    CHECK_OK(cblob_blob_fill(i32, CBLOB_PART_DATA, -2147483648.0));
    CHECK_OK(cblob_blob_fill(u32, CBLOB_PART_DATA, 4294967295.0));
    CHECK_OK(cblob_blob_fill(f32, CBLOB_PART_DATA, INFINITY));
    CHECK_OK(cblob_blob_fill(f32, CBLOB_PART_DIFF, FLT_MAX));
    /* Just above FLT_MAX still rounds to it; half its last place above rounds to infinity. */
    CHECK_OK(cblob_blob_fill(f32, CBLOB_PART_DIFF, (double)FLT_MAX + ldexp(1, 102)));
    CHECK_ERROR(cblob_blob_fill(f32, CBLOB_PART_DIFF, -((double)FLT_MAX + ldexp(1, 103))), CBLOB_ERR_OVERFLOW);
    double *diff = read_values(f32, CBLOB_PART_DIFF);
    CHECK(diff != NULL && diff[0] == FLT_MAX);
    free(diff);
    CHECK_OK(cblob_blob_fill(f64, CBLOB_PART_DATA, 1e300));
    double *a = read_values(i32, CBLOB_PART_DATA), *b = read_values(u32, CBLOB_PART_DATA),
           *c = read_values(f32, CBLOB_PART_DATA), *e = read_values(f64, CBLOB_PART_DATA);
    CHECK(a != NULL && b != NULL && c != NULL && e != NULL);
    CHECK(a[1] == -2147483648.0 && b[1] == 4294967295.0 && isinf(c[1]) && e[1] == 1e300);
    free(a);
    free(b);
    free(c);
    free(e);
    cblob_blob_destroy(i32);
    cblob_blob_destroy(u32);
    cblob_blob_destroy(f32);
    cblob_blob_destroy(f64);
    cblob_context_destroy(ctx);
}

/* ---- transpose ---------------------------------------------------------------------------- */

TEST(neoml_2E_26_transposed_swaps_axes)
{
    cblob_context *ctx;
    cblob_blob *blob, *t;
    CHECK_OK(cblob_context_create(&ctx));
    /* A NeoML matrix (2, 3): element (r, c) = 10r + c. */
    CHECK_OK(cblob_blob_create_matrix(ctx, CBLOB_DTYPE_INT32, 2, 3, &blob));
    const int32_t m[6] = {0, 1, 2, 10, 11, 12};
    CHECK_OK(cblob_blob_copy_in(blob, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, m, 6));
    CHECK_OK(cblob_blob_transposed(blob, CBLOB_DIM_BATCH_WIDTH, CBLOB_DIM_BATCH_LENGTH, &t));
    int64_t rows = 0, cols = 0;
    CHECK_OK(cblob_blob_dim(t, CBLOB_DIM_BATCH_LENGTH, &rows));
    CHECK_OK(cblob_blob_dim(t, CBLOB_DIM_BATCH_WIDTH, &cols));
    CHECK(rows == 3 && cols == 2);
    int32_t got[6];
    CHECK_OK(cblob_blob_copy_out(t, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, got, 6));
    const int32_t want[6] = {0, 10, 1, 11, 2, 12};
    CHECK(memcmp(got, want, sizeof want) == 0);
    cblob_blob_destroy(t);
    /* Equal axes: a deep copy. */
    CHECK_OK(cblob_blob_transposed(blob, 1, 1, &t));
    CHECK_OK(cblob_blob_copy_out(t, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, got, 6));
    CHECK(memcmp(got, m, sizeof m) == 0);
    cblob_blob_destroy(t);
    /* Negative axes count from the end; an axis out of range is an error. */
    CHECK_OK(cblob_blob_transposed(blob, 0, -6, &t));
    CHECK_OK(cblob_blob_copy_out(t, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, got, 6));
    CHECK(memcmp(got, want, sizeof want) == 0);
    cblob_blob_destroy(t);
    t = NULL;
    CHECK_ERROR(cblob_blob_transposed(blob, 0, 7, &t), CBLOB_ERR_OUT_OF_RANGE);
    CHECK(t == NULL);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2E_27_transpose_from_checks_every_axis)
{
    cblob_context *ctx;
    cblob_blob *source, *good, *same_size;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t s[3] = {2, 3, 4}, g[3] = {4, 3, 2}, wrong[3] = {4, 2, 3};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, s, &source));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, g, &good));
    /* Same total size and the swapped dims in place, other dims differ: NeoML writes it anyway. */
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, wrong, &same_size));
    CHECK(fill_tagged(source, CBLOB_PART_DIFF, 1));
    CHECK_OK(cblob_blob_transpose_from(good, source, CBLOB_PART_DIFF, 0, 2));
    double *values = read_values(good, CBLOB_PART_DIFF);
    CHECK(values != NULL);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 2; ++k)
                CHECK_EQ_INT(values[(i * 3 + j) * 2 + k], tagged((k * 3 + j) * 4 + i, 1));
    free(values);
    CHECK_ERROR(cblob_blob_transpose_from(same_size, source, CBLOB_PART_DIFF, 0, 2), CBLOB_ERR_SHAPE);
    CHECK(strstr(cblob_last_error_message(), "4 3 2") != NULL);
    cblob_blob *ints;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 3, g, &ints));
    CHECK_ERROR(cblob_blob_transpose_from(ints, source, CBLOB_PART_DIFF, 0, 2), CBLOB_ERR_DTYPE);
    /* In place is refused (the copy would read what it already wrote). */
    cblob_blob *square;
    const int64_t sq[2] = {3, 3};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, sq, &square));
    CHECK_ERROR(cblob_blob_transpose_from(square, square, CBLOB_PART_DATA, 0, 1), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(cblob_blob_transpose_from(square, square, CBLOB_PART_DATA, 1, 1)); /* a copy onto itself */
    cblob_blob_destroy(square);
    cblob_blob_destroy(ints);
    cblob_blob_destroy(source);
    cblob_blob_destroy(good);
    cblob_blob_destroy(same_size);
    cblob_context_destroy(ctx);
}

/* ---- merge and split ------------------------------------------------------------------------ */

TEST(neoml_2H_40_merge_takes_the_output_dtype)
{
    cblob_context *ctx;
    cblob_blob *out, *a, *b;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_INT32, 2, 1, 5, &out));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_INT32, 2, 1, 2, &a));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 2, 1, 3, &b));
    CHECK(fill_tagged(out, CBLOB_PART_DATA, 9));
    CHECK_ERROR(cblob_blob_merge(out, CBLOB_PART_DATA, CBLOB_DIM_CHANNELS, 2, (cblob_blob *[]){a, b}), CBLOB_ERR_DTYPE);
    CHECK(strstr(cblob_last_error_message(), "inputs[1]") != NULL);
    double *values = read_values(out, CBLOB_PART_DATA);
    CHECK(values != NULL && values[9] == tagged(9, 9)); /* untouched */
    free(values);
    CHECK_ERROR(cblob_blob_merge(out, CBLOB_PART_DATA, CBLOB_DIM_CHANNELS, 0, (cblob_blob *[]){a}),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_merge(out, CBLOB_PART_DATA, CBLOB_DIM_CHANNELS, 2, (cblob_blob *[]){a, NULL}),
                CBLOB_ERR_INVALID_ARGUMENT);
    cblob_blob_destroy(out);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_context_destroy(ctx);
}

TEST(neoml_2H_41_merge_layout_every_axis)
{
    /* Inputs (2, 2, 3) and (2, 1, 3) along axis 1, and along axis 0 and 2 with matching shapes. */
    cblob_context *ctx;
    cblob_blob *a, *b, *out;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t da[3] = {2, 2, 3}, db[3] = {2, 1, 3}, dout[3] = {2, 3, 3};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, da, &a));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, db, &b));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, dout, &out));
    CHECK(fill_tagged(a, CBLOB_PART_DATA, 1));
    CHECK(fill_tagged(b, CBLOB_PART_DATA, 2));
    CHECK_OK(cblob_blob_merge(out, CBLOB_PART_DATA, 1, 2, (cblob_blob *[]){a, b}));
    double *values = read_values(out, CBLOB_PART_DATA);
    CHECK(values != NULL);
    /* Row r of the output: a's row r (6 elements) then b's row r (3 elements). */
    for (int r = 0; r < 2; ++r)
        for (int j = 0; j < 9; ++j)
            CHECK_EQ_INT(values[r * 9 + j], j < 6 ? tagged(r * 6 + j, 1) : tagged(r * 3 + j - 6, 2));
    free(values);
    /* Along axis 0 the inputs are concatenated whole. */
    const int64_t d0a[2] = {2, 3}, d0b[2] = {1, 3}, d0out[2] = {3, 3};
    cblob_blob *a0, *b0, *out0;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, d0a, &a0));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, d0b, &b0));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, d0out, &out0));
    CHECK(fill_tagged(a0, CBLOB_PART_DATA, 1));
    CHECK(fill_tagged(b0, CBLOB_PART_DATA, 2));
    CHECK_OK(cblob_blob_merge(out0, CBLOB_PART_DATA, 0, 2, (cblob_blob *[]){a0, b0}));
    values = read_values(out0, CBLOB_PART_DATA);
    CHECK(values != NULL);
    for (int i = 0; i < 9; ++i)
        CHECK_EQ_INT(values[i], i < 6 ? tagged(i, 1) : tagged(i - 6, 2));
    free(values);
    cblob_blob_destroy(a0);
    cblob_blob_destroy(b0);
    cblob_blob_destroy(out0);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_blob_destroy(out);
    cblob_context_destroy(ctx);
}

TEST(neoml_2H_42_merge_validates_every_other_dimension)
{
    /* NeoML only multiplies dims, so each of these would read or write out of bounds there. */
    cblob_context *ctx;
    cblob_blob *out, *a, *b_wide, *b_short, *b_flat;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t dout[3] = {2, 3, 4}, da[3] = {2, 1, 4}, dwide[3] = {2, 2, 5}, dshort[3] = {2, 1, 4},
                  dflat[2] = {2, 8};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, dout, &out));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, da, &a));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, dwide, &b_wide));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, dshort, &b_short));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, dflat, &b_flat));
    CHECK(fill_tagged(out, CBLOB_PART_DATA, 3));
    CHECK_ERROR(cblob_blob_merge(out, CBLOB_PART_DATA, 1, 2, (cblob_blob *[]){a, b_wide}), CBLOB_ERR_SHAPE);
    CHECK(strstr(cblob_last_error_message(), "axis 2") != NULL);
    CHECK_ERROR(cblob_blob_merge(out, CBLOB_PART_DATA, 1, 2, (cblob_blob *[]){a, b_short}), CBLOB_ERR_SHAPE);
    CHECK(strstr(cblob_last_error_message(), "add up to 2") != NULL);
    CHECK_ERROR(cblob_blob_merge(out, CBLOB_PART_DATA, 1, 2, (cblob_blob *[]){a, b_flat}), CBLOB_ERR_SHAPE);
    /* Axis 0 is validated too (NeoML ignores the output's dims there). */
    CHECK_ERROR(cblob_blob_merge(out, CBLOB_PART_DATA, 0, 2, (cblob_blob *[]){a, b_short}), CBLOB_ERR_SHAPE);
    double *values = read_values(out, CBLOB_PART_DATA);
    CHECK(values != NULL);
    for (int i = 0; i < 24; ++i)
        CHECK_EQ_INT(values[i], tagged(i, 3));
    free(values);
    cblob_blob_destroy(out);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b_wide);
    cblob_blob_destroy(b_short);
    cblob_blob_destroy(b_flat);
    cblob_context_destroy(ctx);
}

TEST(neoml_2H_43_split_mirrors_merge_including_axis_0)
{
    cblob_context *ctx;
    cblob_blob *whole, *p1, *p2;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t dwhole[2] = {5, 2}, d1[2] = {2, 2}, d2[2] = {3, 2};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_UINT32, 2, dwhole, &whole));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_UINT32, 2, d1, &p1));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_UINT32, 2, d2, &p2));
    CHECK(fill_tagged(whole, CBLOB_PART_DATA, 4));
    CHECK_OK(cblob_blob_split(whole, CBLOB_PART_DATA, 0, 2, (cblob_blob *[]){p1, p2}));
    double *v1 = read_values(p1, CBLOB_PART_DATA), *v2 = read_values(p2, CBLOB_PART_DATA);
    CHECK(v1 != NULL && v2 != NULL);
    for (int i = 0; i < 4; ++i)
        CHECK_EQ_INT(v1[i], tagged(i, 4));
    for (int i = 0; i < 6; ++i)
        CHECK_EQ_INT(v2[i], tagged(4 + i, 4));
    free(v1);
    free(v2);
    /* Outputs that share memory (the same blob twice) are refused. */
    CHECK_ERROR(cblob_blob_split(whole, CBLOB_PART_DATA, 0, 3, (cblob_blob *[]){p1, p1, p1}), CBLOB_ERR_SHAPE);
    cblob_blob *half;
    const int64_t dhalf[2] = {5, 1};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_UINT32, 2, dhalf, &half));
    CHECK_ERROR(cblob_blob_split(whole, CBLOB_PART_DATA, 1, 2, (cblob_blob *[]){half, half}),
                CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(cblob_blob_merge(whole, CBLOB_PART_DATA, 1, 2, (cblob_blob *[]){half, half})); /* reading twice is fine */
    cblob_blob_destroy(half);
    cblob_blob_destroy(whole);
    cblob_blob_destroy(p1);
    cblob_blob_destroy(p2);
    cblob_context_destroy(ctx);
}

TEST(neoml_2H_44_merge_and_split_by_object)
{
    /* Two inputs with different object geometry: (2,1,1, 1,1,1,3) and (2,1,1, 2,2,1,1): each
     * output object is 3 + 4 elements. */
    cblob_context *ctx;
    cblob_blob *a, *b, *out, *a_back, *b_back;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 2, 1, 3, &a));
    CHECK_OK(cblob_blob_create_image2d(ctx, CBLOB_DTYPE_FLOAT32, 2, 1, 2, 2, 1, &b));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 2, 1, 7, &out));
    CHECK(fill_tagged(a, CBLOB_PART_DATA, 1));
    CHECK(fill_tagged(b, CBLOB_PART_DATA, 2));
    CHECK_OK(cblob_blob_merge_objects(out, CBLOB_PART_DATA, 2, (cblob_blob *[]){a, b}));
    double *values = read_values(out, CBLOB_PART_DATA);
    CHECK(values != NULL);
    for (int object = 0; object < 2; ++object)
        for (int j = 0; j < 7; ++j)
            CHECK_EQ_INT(values[object * 7 + j], j < 3 ? tagged(object * 3 + j, 1) : tagged(object * 4 + j - 3, 2));
    free(values);
    CHECK_OK(cblob_blob_create_like(a, CBLOB_DTYPE_FLOAT32, &a_back));
    CHECK_OK(cblob_blob_create_like(b, CBLOB_DTYPE_FLOAT32, &b_back));
    CHECK_OK(cblob_blob_split_objects(out, CBLOB_PART_DATA, 2, (cblob_blob *[]){a_back, b_back}));
    double *ra = read_values(a_back, CBLOB_PART_DATA), *rb = read_values(b_back, CBLOB_PART_DATA);
    CHECK(ra != NULL && rb != NULL);
    for (int i = 0; i < 6; ++i)
        CHECK_EQ_INT(ra[i], tagged(i, 1));
    for (int i = 0; i < 8; ++i)
        CHECK_EQ_INT(rb[i], tagged(i, 2));
    free(ra);
    free(rb);
    /* Object counts must match, and the object sizes must add up. */
    cblob_blob *three_objects;
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 3, 1, 3, &three_objects));
    CHECK_ERROR(cblob_blob_merge_objects(out, CBLOB_PART_DATA, 2, (cblob_blob *[]){three_objects, b}), CBLOB_ERR_SHAPE);
    CHECK_ERROR(cblob_blob_merge_objects(out, CBLOB_PART_DATA, 1, (cblob_blob *[]){a}), CBLOB_ERR_SHAPE);
    cblob_blob_destroy(three_objects);
    cblob_blob_destroy(a_back);
    cblob_blob_destroy(b_back);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_blob_destroy(out);
    cblob_context_destroy(ctx);
}

TEST(neoml_2H_45_merge_and_split_integers)
{
    cblob_context *ctx;
    cblob_blob *a, *b, *out;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_INT32, 1, 2, 2, &a));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_INT32, 1, 3, 2, &b));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_INT32, 1, 5, 2, &out));
    const int32_t va[4] = {-1, -2, -3, -4}, vb[6] = {5, 6, 7, 8, 9, 10};
    CHECK_OK(cblob_blob_copy_in(a, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, va, 4));
    CHECK_OK(cblob_blob_copy_in(b, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, vb, 6));
    CHECK_OK(cblob_blob_merge(out, CBLOB_PART_DATA, CBLOB_DIM_BATCH_WIDTH, 2, (cblob_blob *[]){a, b}));
    int32_t got[10];
    CHECK_OK(cblob_blob_copy_out(out, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, got, 10));
    const int32_t want[10] = {-1, -2, -3, -4, 5, 6, 7, 8, 9, 10};
    CHECK(memcmp(got, want, sizeof want) == 0);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_blob_destroy(out);
    cblob_context_destroy(ctx);
}

/* NeoML's math engines take at most 32 blobs per merge or split (MaxBlobDescs); cblob has no
 * such limit. */
TEST(neoml_merge_and_split_take_any_number_of_blobs)
{
    enum { PIECES = 100 };
    cblob_context *ctx;
    cblob_blob *whole, *back, *pieces[PIECES], *again[PIECES];
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t row[2] = {1, 3}, all[2] = {PIECES, 3};
    for (int i = 0; i < PIECES; ++i) {
        CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 2, row, &pieces[i]));
        CHECK_OK(cblob_blob_fill(pieces[i], CBLOB_PART_DATA, i));
        CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 2, row, &again[i]));
    }
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 2, all, &whole));
    CHECK_OK(cblob_blob_merge(whole, CBLOB_PART_DATA, 0, PIECES, pieces));
    double *values = read_values(whole, CBLOB_PART_DATA);
    CHECK(values != NULL);
    for (int i = 0; i < PIECES * 3; ++i)
        CHECK_EQ_INT(values[i], i / 3);
    free(values);
    CHECK_OK(cblob_blob_split(whole, CBLOB_PART_DATA, -2, PIECES, again));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 2, all, &back));
    CHECK_OK(cblob_blob_merge(back, CBLOB_PART_DATA, 0, PIECES, again));
    double *a = read_values(whole, CBLOB_PART_DATA), *b = read_values(back, CBLOB_PART_DATA);
    CHECK(a != NULL && b != NULL && memcmp(a, b, PIECES * 3 * sizeof *a) == 0);
    free(a);
    free(b);
    for (int i = 0; i < PIECES; ++i) {
        cblob_blob_destroy(pieces[i]);
        cblob_blob_destroy(again[i]);
    }
    cblob_blob_destroy(whole);
    cblob_blob_destroy(back);
    cblob_context_destroy(ctx);
}
