/* SPDX-License-Identifier: BSD-2-Clause */
/* One rule for axes (docs/neoml.md, "Axes"): every function that takes an axis or a named dimension
 * takes it as Caffe's CanonicalAxisIndex does, -num_axes to num_axes - 1 with a negative axis
 * counted from the end (a bound of a range of axes up to num_axes). Each function here is called
 * with every axis in range, negative and not, and must do exactly what it does with the same
 * axis counted from the front; one step outside the range on either side is refused and changes
 * nothing. */
#include "neoml_test.h"

#define AXES 4
static const int64_t shape4[AXES] = {2, 3, 4, 5};

/* Where an axis counted either way lands, or -1 outside [-n, n + past_end). */
static int32_t front(int32_t axis, int32_t n, int32_t past_end)
{
    if (axis < -n || axis >= n + past_end)
        return -1;
    return axis < 0 ? axis + n : axis;
}

static cblob_blob *tagged_blob(cblob_context *ctx, cblob_dtype dtype, int32_t num_axes, const int64_t *dims, int tag)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create(ctx, dtype, num_axes, dims, &blob) != CBLOB_OK || !fill_tagged(blob, CBLOB_PART_DATA, tag) ||
        !fill_tagged(blob, CBLOB_PART_DIFF, tag + 1)) {
        cblob_blob_destroy(blob);
        return NULL;
    }
    return blob;
}

/* Both parts of two blobs hold the same shape and values. */
static int same_blob(cblob_blob *a, cblob_blob *b)
{
    int equal = 0;
    int32_t same_shape = 0;
    int64_t count = 0;
    if (cblob_blob_equal_shape(a, b, &same_shape) != CBLOB_OK || !same_shape || cblob_blob_count(a, &count) != CBLOB_OK)
        return 0;
    for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
        double *x = read_values(a, part), *y = read_values(b, part);
        equal = x != NULL && y != NULL && memcmp(x, y, (size_t)count * sizeof *x) == 0;
        free(x);
        free(y);
        if (!equal)
            return 0;
    }
    return 1;
}

TEST(axes_shape_at_and_canonical_axis)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blob = tagged_blob(ctx, CBLOB_DTYPE_FLOAT32, AXES, shape4, 1);
    CHECK(blob != NULL);
    for (int32_t axis = -AXES - 2; axis <= AXES + 1; ++axis) {
        const int32_t expected = front(axis, AXES, 0);
        int64_t dim = -7;
        int32_t canonical = -7;
        if (expected < 0) {
            CHECK_ERROR(cblob_blob_shape_at(blob, axis, &dim), CBLOB_ERR_OUT_OF_RANGE);
            CHECK_ERROR(cblob_blob_canonical_axis(blob, axis, &canonical), CBLOB_ERR_OUT_OF_RANGE);
            CHECK(dim == -7 && canonical == -7);
            continue;
        }
        CHECK_OK(cblob_blob_shape_at(blob, axis, &dim));
        CHECK_OK(cblob_blob_canonical_axis(blob, axis, &canonical));
        CHECK_EQ_INT(dim, shape4[expected]);
        CHECK_EQ_INT(canonical, expected);
    }
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(axes_count_range_takes_bounds_counted_from_either_end)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blob = tagged_blob(ctx, CBLOB_DTYPE_FLOAT32, AXES, shape4, 1);
    CHECK(blob != NULL);
    for (int32_t start = -AXES - 1; start <= AXES + 1; ++start) {
        for (int32_t end = -AXES - 1; end <= AXES + 1; ++end) {
            const int32_t from = front(start, AXES, 1), to = front(end, AXES, 1);
            int64_t count = -7;
            if (from < 0 || to < 0 || from > to) {
                CHECK_ERROR(cblob_blob_count_range(blob, start, end, &count), CBLOB_ERR_OUT_OF_RANGE);
                CHECK_EQ_INT(count, -7);
                continue;
            }
            CHECK_OK(cblob_blob_count_range(blob, start, end, &count));
            CHECK_MSG(count == shape_count(to - from, shape4 + from), "count_range(%d, %d) gave %lld", (int)start,
                      (int)end, (long long)count);
        }
    }
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(axes_named_dims_count_from_either_end)
{
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_image3d(ctx, CBLOB_DTYPE_INT32, 2, 3, 4, 5, 6, 7, &blob));
    const int64_t dims[CBLOB_NEOML_AXES] = {2, 3, 1, 4, 5, 6, 7};
    for (int32_t dim = -CBLOB_NEOML_AXES - 1; dim <= CBLOB_NEOML_AXES; ++dim) {
        const int32_t expected = front(dim, CBLOB_NEOML_AXES, 0);
        int64_t size = -7;
        if (expected < 0) {
            CHECK_ERROR(cblob_blob_dim(blob, (cblob_dim)dim, &size), CBLOB_ERR_INVALID_ARGUMENT);
            CHECK_EQ_INT(size, -7);
            continue;
        }
        CHECK_OK(cblob_blob_dim(blob, (cblob_dim)dim, &size));
        CHECK_EQ_INT(size, dims[expected]);
    }
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* Each blob counts a negative axis from its own end: -1 compares the last dimensions. */
TEST(axes_equal_dims_count_from_each_blobs_end)
{
    cblob_context *ctx;
    cblob_blob *four, *other, *two;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, AXES, shape4, &four));
    const int64_t differs_on_1[AXES] = {2, 9, 4, 5}, last_two[2] = {4, 5};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, AXES, differs_on_1, &other));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, last_two, &two));
    for (int32_t axis = -AXES - 1; axis <= AXES; ++axis) {
        const int32_t expected = front(axis, AXES, 0);
        int32_t equal = -7;
        if (expected < 0) {
            CHECK_ERROR(cblob_blob_equal_dims(four, other, 1, &axis, &equal), CBLOB_ERR_OUT_OF_RANGE);
            CHECK_EQ_INT(equal, -7);
            continue;
        }
        CHECK_OK(cblob_blob_equal_dims(four, other, 1, &axis, &equal));
        CHECK_EQ_INT(equal, expected != 1);
    }
    const int32_t last[2] = {-1, -2}, first[1] = {0}, third[1] = {-3};
    int32_t equal = -7;
    CHECK_OK(cblob_blob_equal_dims(four, two, 2, last, &equal));
    CHECK_EQ_INT(equal, 1);
    CHECK_OK(cblob_blob_equal_dims(four, two, 1, first, &equal));
    CHECK_EQ_INT(equal, 0); /* 2 against 4 */
    equal = -7;
    CHECK_ERROR(cblob_blob_equal_dims(four, two, 1, third, &equal), CBLOB_ERR_OUT_OF_RANGE); /* not an axis of two */
    CHECK_EQ_INT(equal, -7);
    cblob_blob_destroy(four);
    cblob_blob_destroy(other);
    cblob_blob_destroy(two);
    cblob_context_destroy(ctx);
}

TEST(axes_transposed_and_transpose_from)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        cblob_blob *source = tagged_blob(ctx, all_dtypes[d], AXES, shape4, 1);
        CHECK(source != NULL);
        for (int32_t a1 = -AXES - 1; a1 <= AXES; ++a1) {
            for (int32_t a2 = -AXES - 1; a2 <= AXES; ++a2) {
                const int32_t f1 = front(a1, AXES, 0), f2 = front(a2, AXES, 0);
                cblob_blob *got = NULL, *expected = NULL;
                if (f1 < 0 || f2 < 0) {
                    CHECK_ERROR(cblob_blob_transposed(source, a1, a2, &got), CBLOB_ERR_OUT_OF_RANGE);
                    CHECK(got == NULL);
                    CHECK_ERROR(cblob_blob_transpose_from(source, source, CBLOB_PART_DATA, a1, a2),
                                CBLOB_ERR_OUT_OF_RANGE);
                    continue;
                }
                CHECK_OK(cblob_blob_transposed(source, a1, a2, &got));
                CHECK_OK(cblob_blob_transposed(source, f1, f2, &expected));
                CHECK_MSG(same_blob(got, expected), "%s: transposed(%d, %d) differs from (%d, %d)",
                          dtype_name(all_dtypes[d]), (int)a1, (int)a2, (int)f1, (int)f2);
                /* transpose_from into a blob of the transposed shape, part by part. */
                CHECK_OK(cblob_blob_clear(got, CBLOB_PART_DATA));
                CHECK_OK(cblob_blob_clear(got, CBLOB_PART_DIFF));
                CHECK_OK(cblob_blob_transpose_from(got, source, CBLOB_PART_DATA, a1, a2));
                CHECK_OK(cblob_blob_transpose_from(got, source, CBLOB_PART_DIFF, a1, a2));
                CHECK(same_blob(got, expected));
                cblob_blob_destroy(got);
                cblob_blob_destroy(expected);
            }
        }
        cblob_blob_destroy(source);
    }
    cblob_context_destroy(ctx);
}

/* Merges two blobs along `axis` (given as is) and splits the result back. */
static void merge_and_split_along(cblob_context *ctx, cblob_dtype dtype, int32_t axis)
{
    const int32_t canonical = front(axis, AXES, 0);
    int64_t dims_a[AXES], dims_b[AXES], dims_whole[AXES];
    memcpy(dims_a, shape4, sizeof dims_a);
    memcpy(dims_b, shape4, sizeof dims_b);
    memcpy(dims_whole, shape4, sizeof dims_whole);
    const int32_t along = canonical < 0 ? 0 : canonical;
    dims_b[along] = 1;
    dims_whole[along] = shape4[along] + 1;
    cblob_blob *a = tagged_blob(ctx, dtype, AXES, dims_a, 1), *b = tagged_blob(ctx, dtype, AXES, dims_b, 3);
    cblob_blob *got = tagged_blob(ctx, dtype, AXES, dims_whole, 5), *expected = tagged_blob(ctx, dtype, AXES, dims_whole, 5);
    CHECK(a != NULL && b != NULL && got != NULL && expected != NULL);
    cblob_blob *const inputs[2] = {a, b};
    if (canonical < 0) {
        CHECK_ERROR(cblob_blob_merge(got, CBLOB_PART_DATA, axis, 2, inputs), CBLOB_ERR_OUT_OF_RANGE);
        CHECK_ERROR(cblob_blob_split(got, CBLOB_PART_DATA, axis, 2, inputs), CBLOB_ERR_OUT_OF_RANGE);
        CHECK(same_blob(got, expected)); /* nothing changed */
    } else {
        for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
            CHECK_OK(cblob_blob_merge(got, part, axis, 2, inputs));
            CHECK_OK(cblob_blob_merge(expected, part, canonical, 2, inputs));
        }
        CHECK_MSG(same_blob(got, expected), "%s: merge along %d differs from along %d", dtype_name(dtype), (int)axis,
                  (int)canonical);
        cblob_blob *back_a = tagged_blob(ctx, dtype, AXES, dims_a, 7), *back_b = tagged_blob(ctx, dtype, AXES, dims_b, 9);
        CHECK(back_a != NULL && back_b != NULL);
        for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part)
            CHECK_OK(cblob_blob_split(got, part, axis, 2, (cblob_blob *const[]){back_a, back_b}));
        CHECK(same_blob(back_a, a) && same_blob(back_b, b));
        cblob_blob_destroy(back_a);
        cblob_blob_destroy(back_b);
    }
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_blob_destroy(got);
    cblob_blob_destroy(expected);
}

TEST(axes_merge_and_split)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d)
        for (int32_t axis = -AXES - 1; axis <= AXES; ++axis)
            merge_and_split_along(ctx, all_dtypes[d], axis);
    cblob_context_destroy(ctx);
}
