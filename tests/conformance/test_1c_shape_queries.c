/* SPDX-License-Identifier: BSD-2-Clause */
/* conformance.md 1.C: shape queries, axis canonicalisation, legacy accessors, offsets.
 *
 * Items that do not apply here:
 *   28 (the loose bounds) Caffe's offset(n,c,h,w) accepts one past the end and negative c, h, w;
 *      cblob checks every index strictly: difference_offset_legacy_checks_every_index.
 *   30 (the GPU half: data_at syncs a memory whose head is on the GPU, AT_GPU -> SYNCED) is
 *      tested with the GPU issue's test double; here: it reads through the host copy. */
#include "conformance.h"

static bool shape_string_is(const cblob_blob *blob, const char *expected)
{
    char text[128];
    size_t length = 0;
    if (cblob_blob_shape_string(blob, text, sizeof text, &length) != CBLOB_OK || strcmp(text, expected) != 0 ||
        length != strlen(expected)) {
        cbt_fail(__FILE__, __LINE__, "shape string \"%s\" (length %zu), expected \"%s\"", text, length, expected);
        return false;
    }
    return true;
}

TEST(caffe_1C_21_shape_string)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = NULL;
        CHECK_OK(cblob_blob_create_empty(ctx, all_dtypes[d], &blob));
        CHECK(shape_string_is(blob, "(0)"));
        CHECK_OK(cblob_blob_reshape(blob, 4, DIMS(2, 3, 4, 5)));
        CHECK(shape_string_is(blob, "2 3 4 5 (120)"));
        CHECK_OK(cblob_blob_reshape(blob, 0, NULL));
        CHECK(shape_string_is(blob, "(1)"));
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(7, 0)));
        CHECK(shape_string_is(blob, "7 0 (0)"));
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS((1LL << 32) + 3)));
        CHECK(shape_string_is(blob, "4294967299 (4294967299)"));
        cblob_blob_destroy(blob);
    }

    /* The buffer protocol: ask for the length, then a buffer that just fits; one byte less is an
     * error that leaves the buffer alone. */
    cblob_blob *blob = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 4, 5);
    CHECK(blob != NULL);
    size_t length = 0;
    CHECK_OK(cblob_blob_shape_string(blob, NULL, 0, &length));
    CHECK_EQ_INT(length, strlen("2 3 4 5 (120)"));
    char exact[14];
    CHECK_OK(cblob_blob_shape_string(blob, exact, sizeof exact, &length));
    CHECK(strcmp(exact, "2 3 4 5 (120)") == 0);
    char small[13];
    memset(small, 'x', sizeof small);
    size_t untouched = 99;
    CHECK_ERROR(cblob_blob_shape_string(blob, small, sizeof small, &untouched), CBLOB_ERR_OUT_OF_RANGE);
    CHECK(untouched == 99 && small[0] == 'x' && small[12] == 'x');
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_22_num_axes_count_and_shape_of_axis)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3, 4);
        CHECK(blob != NULL);
        int32_t axes = 0;
        CHECK_OK(cblob_blob_num_axes(blob, &axes));
        CHECK_EQ_INT(axes, 3);
        CHECK_EQ_INT(count_of(blob), 24);
        const int64_t expected[3] = {2, 3, 4};
        for (int32_t axis = -3; axis < 3; ++axis) {
            int64_t dim = -1;
            CHECK_OK(cblob_blob_shape_at(blob, axis, &dim));
            CHECK_EQ_INT(dim, expected[axis < 0 ? axis + 3 : axis]);
        }
        /* shape(i) canonicalises first, so it fails where CanonicalAxisIndex does. */
        int64_t dim = -1;
        CHECK_REJECTED(cblob_blob_shape_at(blob, 3, &dim), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_shape_at(blob, -4, &dim), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK(dim == -1);
        /* The whole shape at once; too small an array is an error, a count-only query is not. */
        int64_t dims[CBLOB_MAX_AXES];
        int32_t got = -1;
        CHECK_OK(cblob_blob_shape(blob, 0, NULL, &got));
        CHECK_EQ_INT(got, 3);
        CHECK_REJECTED(cblob_blob_shape(blob, 2, dims, &got), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_OK(cblob_blob_shape(blob, 3, dims, &got));
        CHECK(dims[0] == 2 && dims[1] == 3 && dims[2] == 4);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_23_count_of_an_axis_range)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3, 4, 5);
        CHECK(blob != NULL);
        int64_t count = -1;
        CHECK_OK(cblob_blob_count_range(blob, 0, 4, &count));
        CHECK_EQ_INT(count, 120);
        CHECK_OK(cblob_blob_count_range(blob, 1, 3, &count));
        CHECK_EQ_INT(count, 12);
        CHECK_OK(cblob_blob_count_range(blob, 2, 2, &count)); /* empty range */
        CHECK_EQ_INT(count, 1);
        CHECK_OK(cblob_blob_count_range(blob, 4, 4, &count)); /* count(num_axes()) */
        CHECK_EQ_INT(count, 1);
        CHECK_OK(cblob_blob_count_range(blob, 1, 4, &count)); /* count(1) */
        CHECK_EQ_INT(count, 60);
        count = -1;
        CHECK_REJECTED(cblob_blob_count_range(blob, 3, 2, &count), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_count_range(blob, -1, 2, &count), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_count_range(blob, 0, 5, &count), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_count_range(blob, 5, 5, &count), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK(count == -1);
        cblob_blob_destroy(blob);
    }
    /* A scalar: the only range is [0, 0), of product 1. */
    cblob_blob *scalar = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 0, NULL, &scalar));
    int64_t count = -1;
    CHECK_OK(cblob_blob_count_range(scalar, 0, 0, &count));
    CHECK_EQ_INT(count, 1);
    CHECK_REJECTED(cblob_blob_count_range(scalar, 0, 1, &count), CBLOB_ERR_OUT_OF_RANGE, scalar);
    cblob_blob_destroy(scalar);
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_24_canonical_axis_index)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 3, 2);
        CHECK(blob != NULL);
        int32_t axis = -1;
        CHECK_OK(cblob_blob_canonical_axis(blob, 0, &axis));
        CHECK_EQ_INT(axis, 0);
        CHECK_OK(cblob_blob_canonical_axis(blob, 1, &axis));
        CHECK_EQ_INT(axis, 1);
        CHECK_OK(cblob_blob_canonical_axis(blob, -1, &axis));
        CHECK_EQ_INT(axis, 1);
        CHECK_OK(cblob_blob_canonical_axis(blob, -2, &axis));
        CHECK_EQ_INT(axis, 0);
        axis = 77;
        CHECK_REJECTED(cblob_blob_canonical_axis(blob, 2, &axis), CBLOB_ERR_OUT_OF_RANGE, blob);
        /* Caffe's message: "axis 2 out of range for 2-D Blob with shape 3 2 (6)". */
        CHECK(strstr(cblob_last_error_message(), "axis 2 out of range for 2-D blob with shape 3 2 (6)") != NULL);
        CHECK_REJECTED(cblob_blob_canonical_axis(blob, -3, &axis), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_canonical_axis(blob, INT32_MIN, &axis), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_canonical_axis(blob, INT32_MAX, &axis), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK(axis == 77);

        /* On a 0-axis blob every index is out of range. */
        CHECK_OK(cblob_blob_reshape(blob, 0, NULL));
        CHECK_REJECTED(cblob_blob_canonical_axis(blob, 0, &axis), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_canonical_axis(blob, -1, &axis), CBLOB_ERR_OUT_OF_RANGE, blob);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_25_legacy_shape)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3, 4, 5, 6);
        CHECK(blob != NULL);
        int64_t dim = -1;
        /* More than 4 axes: every legacy accessor refuses. */
        CHECK_REJECTED(cblob_blob_legacy_shape(blob, 0, &dim), CBLOB_ERR_SHAPE, blob);
        CHECK(strstr(cblob_last_error_message(), "legacy") != NULL);
        CHECK_REJECTED(cblob_blob_num(blob, &dim), CBLOB_ERR_SHAPE, blob);
        CHECK_REJECTED(cblob_blob_channels(blob, &dim), CBLOB_ERR_SHAPE, blob);
        CHECK_REJECTED(cblob_blob_height(blob, &dim), CBLOB_ERR_SHAPE, blob);
        CHECK_REJECTED(cblob_blob_width(blob, &dim), CBLOB_ERR_SHAPE, blob);
        CHECK(dim == -1);

        /* -4 <= index < 4; indices past the axes read as 1. */
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(3, 2)));
        CHECK_REJECTED(cblob_blob_legacy_shape(blob, 4, &dim), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_legacy_shape(blob, -5, &dim), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_OK(cblob_blob_legacy_shape(blob, 2, &dim));
        CHECK_EQ_INT(dim, 1);
        CHECK_OK(cblob_blob_legacy_shape(blob, 3, &dim));
        CHECK_EQ_INT(dim, 1);
        CHECK_OK(cblob_blob_legacy_shape(blob, 1, &dim));
        CHECK_EQ_INT(dim, 2);

        /* Exactly 4 axes is fine; a scalar reads as all ones. */
        CHECK_OK(cblob_blob_reshape(blob, 4, DIMS(2, 3, 4, 5)));
        CHECK_OK(cblob_blob_legacy_shape(blob, -1, &dim));
        CHECK_EQ_INT(dim, 5);
        CHECK_OK(cblob_blob_reshape(blob, 0, NULL));
        for (int32_t index = -4; index < 4; ++index) {
            CHECK_OK(cblob_blob_legacy_shape(blob, index, &dim));
            CHECK_EQ_INT(dim, 1);
        }
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_26_legacy_accessors_are_left_aligned)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 3, 2);
        CHECK(blob != NULL);
        int64_t n = 0, c = 0, h = 0, w = 0;
        CHECK_OK(cblob_blob_num(blob, &n));
        CHECK_OK(cblob_blob_channels(blob, &c));
        CHECK_OK(cblob_blob_height(blob, &h));
        CHECK_OK(cblob_blob_width(blob, &w));
        CHECK(n == 3 && c == 2 && h == 1 && w == 1);
        CHECK_OK(cblob_blob_reshape(blob, 4, DIMS(2, 3, 4, 5)));
        CHECK_OK(cblob_blob_num(blob, &n));
        CHECK_OK(cblob_blob_channels(blob, &c));
        CHECK_OK(cblob_blob_height(blob, &h));
        CHECK_OK(cblob_blob_width(blob, &w));
        CHECK(n == 2 && c == 3 && h == 4 && w == 5);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_27_negative_legacy_indices_are_right_aligned)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 3, 2);
        CHECK(blob != NULL);
        const int64_t expected[4] = {1, 1, 3, 2}; /* LegacyShape(-4 .. -1) */
        for (int32_t index = -4; index < 0; ++index) {
            int64_t dim = -1;
            CHECK_OK(cblob_blob_legacy_shape(blob, index, &dim));
            CHECK_EQ_INT(dim, expected[index + 4]);
        }
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_28_legacy_offset)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3, 4, 5);
        CHECK(blob != NULL);
        int64_t offset = -1;
        CHECK_OK(cblob_blob_offset_legacy(blob, 1, 2, 3, 4, &offset));
        CHECK_EQ_INT(offset, ((1 * 3 + 2) * 4 + 3) * 5 + 4);
        CHECK_OK(cblob_blob_offset_legacy(blob, 0, 0, 0, 0, &offset));
        CHECK_EQ_INT(offset, 0);
        /* C, H, W come from the legacy accessors: a (3, 2) blob is (3, 2, 1, 1). */
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(3, 2)));
        CHECK_OK(cblob_blob_offset_legacy(blob, 2, 1, 0, 0, &offset));
        CHECK_EQ_INT(offset, 5);
        /* Which is why more than 4 axes is refused. */
        CHECK_OK(cblob_blob_reshape(blob, 5, DIMS(1, 1, 1, 1, 2)));
        offset = -1;
        CHECK_REJECTED(cblob_blob_offset_legacy(blob, 0, 0, 0, 0, &offset), CBLOB_ERR_SHAPE, blob);
        CHECK(offset == -1);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_29_offset_of_indices)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3, 4, 5, 6);
        CHECK(blob != NULL);
        int64_t offset = -1;
        CHECK_OK(cblob_blob_offset(blob, 5, DIMS(1, 2, 3, 4, 5), &offset));
        CHECK_EQ_INT(offset, (((1 * 3 + 2) * 4 + 3) * 5 + 4) * 6 + 5);
        /* Missing trailing indices count as 0. */
        CHECK_OK(cblob_blob_offset(blob, 2, DIMS(1, 2), &offset));
        CHECK_EQ_INT(offset, (1 * 3 + 2) * 4 * 5 * 6);
        CHECK_OK(cblob_blob_offset(blob, 0, NULL, &offset));
        CHECK_EQ_INT(offset, 0);
        /* Strict bounds on every index given, and no more indices than axes. */
        offset = -1;
        CHECK_REJECTED(cblob_blob_offset(blob, 2, DIMS(2, 0), &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_offset(blob, 2, DIMS(0, -1), &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_offset(blob, 5, DIMS(0, 0, 0, 0, 6), &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_offset(blob, 6, DIMS(0, 0, 0, 0, 0, 0), &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_offset(blob, -1, NULL, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK(offset == -1);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1C_30_read_element_reads_the_host_copy)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3);
        CHECK(blob != NULL);
        /* First read of a never-touched memory goes through cpu_data: zero-filled, head AT_CPU. */
        double value = -1;
        CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DIFF, 2, DIMS(1, 2), &value));
        CHECK(value == 0);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_AT_CPU);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);

        CHECK(fill_part(blob, CBLOB_PART_DATA, 6, 10));
        CHECK(fill_part(blob, CBLOB_PART_DIFF, 6, 20));
        CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DATA, 2, DIMS(1, 2), &value));
        CHECK(value == 15);
        CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DIFF, 1, DIMS(1), &value)); /* (1, 0) */
        CHECK(value == 23);
        value = -1;
        CHECK_REJECTED(cblob_blob_read_element(blob, CBLOB_PART_DATA, 2, DIMS(2, 0), &value), CBLOB_ERR_OUT_OF_RANGE,
                       blob);
        CHECK_REJECTED(cblob_blob_read_element(blob, 2, 2, DIMS(0, 0), &value), CBLOB_ERR_INVALID_ARGUMENT, blob);
        CHECK(value == -1);
        cblob_blob_destroy(blob);
    }
    /* Values that need every bit of their dtype come back exactly. */
    cblob_blob *wide = BLOB(ctx, CBLOB_DTYPE_UINT32, 2);
    CHECK(wide != NULL);
    uint32_t *words = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(wide, CBLOB_PART_DATA, (void **)&words));
    words[0] = UINT32_MAX;
    words[1] = 0x80000001u;
    double value = 0;
    CHECK_OK(cblob_blob_read_element(wide, CBLOB_PART_DATA, 1, DIMS(0), &value));
    CHECK(value == 4294967295.0);
    CHECK_OK(cblob_blob_read_element(wide, CBLOB_PART_DATA, 1, DIMS(1), &value));
    CHECK(value == 2147483649.0);
    cblob_blob_destroy(wide);
    cblob_context_destroy(ctx);
}
