/* SPDX-License-Identifier: BSD-2-Clause */
/* conformance.md 1.B: reshape and capacity.
 *
 * Items that do not apply here:
 *   17 The int mirror of the shape kept for GPU kernels (shape_data_, gpu_shape()) is a Caffe
 *      implementation detail with no counterpart in the ABI: cblob's shape lives on the host and
 *      kernels get what they need as arguments. Nothing to observe.
 *   18 (the Reshape(BlobShape) half) Reading int64 dims from a proto belongs to the formats
 *      issue's tests. Here: cblob_blob_reshape takes int64 dims and never narrows them.
 *   16 (the FromProto half) belongs to the formats issue's tests. */
#include <limits.h>

#include "conformance.h"

TEST(caffe_1B_8_zero_axes_is_a_scalar)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3);
        CHECK(blob != NULL);
        CHECK_OK(cblob_blob_reshape(blob, 0, NULL));
        CHECK_SCALAR_SHAPE(blob);
        CHECK_EQ_INT(count_of(blob), 1);
        char text[16];
        size_t length = 0;
        CHECK_OK(cblob_blob_shape_string(blob, text, sizeof text, &length));
        CHECK(strcmp(text, "(1)") == 0);
        double value = -1;
        CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DATA, 0, NULL, &value));
        CHECK(value == 0);
        cblob_blob_destroy(blob);

        /* Created with no axes, too: one element of storage. */
        CHECK_OK(cblob_blob_create(ctx, all_dtypes[d], 0, NULL, &blob));
        CHECK_EQ_INT(count_of(blob), 1);
        CHECK_EQ_INT(capacity_of(blob), 1);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 1, 9));
        CHECK(part_holds(blob, CBLOB_PART_DATA, 1, 9));
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1B_9_negative_dim_is_rejected)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3);
        CHECK(blob != NULL);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 6, 1));
        CHECK(fill_part(blob, CBLOB_PART_DIFF, 6, 10));
        CHECK_REJECTED(cblob_blob_reshape(blob, 3, DIMS(2, -3, 4)), CBLOB_ERR_SHAPE, blob);
        CHECK(strstr(cblob_last_error_message(), "-3") != NULL);
        CHECK_REJECTED(cblob_blob_reshape(blob, 2, DIMS(0, -1)), CBLOB_ERR_SHAPE, blob);
        CHECK_REJECTED(cblob_blob_reshape_legacy(blob, 1, 1, 1, -1), CBLOB_ERR_SHAPE, blob);
        CHECK_REJECTED(cblob_blob_reshape(blob, 1, DIMS(INT64_MIN)), CBLOB_ERR_SHAPE, blob);
        cblob_blob *untouched = NULL;
        CHECK_ERROR(cblob_blob_create(ctx, all_dtypes[d], 1, DIMS(-1), &untouched), CBLOB_ERR_SHAPE);
        CHECK_ERROR(cblob_blob_create_legacy(ctx, all_dtypes[d], -2, 1, 1, 1, &untouched), CBLOB_ERR_SHAPE);
        CHECK(untouched == NULL);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

/* Caffe stops counts at INT_MAX ("blob size exceeds INT_MAX"); cblob's counts are int64 and its
 * guard is the byte size, which must fit a ptrdiff_t (see difference_dims_are_int64). What both
 * share: a count that fits is accepted, one that does not is a clear error, never a wrap. */
TEST(caffe_1B_10_overflow_guard)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        /* A count of exactly INT_MAX is allowed, as in Caffe. */
        cblob_blob *blob = BLOB(ctx, dtype, INT_MAX);
        CHECK(blob != NULL);
        CHECK_EQ_INT(count_of(blob), INT_MAX);

        /* The largest count whose bytes fit is accepted; one more element is not. */
        const int64_t most = PTRDIFF_MAX / (int64_t)dtype_size(dtype);
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(most)));
        CHECK_EQ_INT(count_of(blob), most);
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(2, 3)));
        CHECK_REJECTED(cblob_blob_reshape(blob, 1, DIMS(most + 1)), CBLOB_ERR_OVERFLOW, blob);
        CHECK_REJECTED(cblob_blob_reshape(blob, 2, DIMS(most / 2 + 1, 2)), CBLOB_ERR_OVERFLOW, blob);
        /* Products that wrap int64 itself. */
        CHECK_REJECTED(cblob_blob_reshape(blob, 3, DIMS(1LL << 31, 1LL << 31, 1LL << 31)), CBLOB_ERR_OVERFLOW, blob);
        CHECK_REJECTED(cblob_blob_reshape(blob, 2, DIMS(INT64_MAX, INT64_MAX)), CBLOB_ERR_OVERFLOW, blob);
        CHECK_REJECTED(cblob_blob_reshape_legacy(blob, 1LL << 20, 1LL << 20, 1LL << 20, 1LL << 20), CBLOB_ERR_OVERFLOW,
                       blob);
        CHECK_SHAPE(blob, 2, 3);
        cblob_blob *untouched = NULL;
        CHECK_ERROR(cblob_blob_create(ctx, dtype, 1, DIMS(most + 1), &untouched), CBLOB_ERR_OVERFLOW);
        CHECK(untouched == NULL);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1B_11_zero_dim_skips_the_guard)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 0, INT_MAX, INT_MAX);
        CHECK(blob != NULL);
        CHECK_EQ_INT(count_of(blob), 0);
        CHECK_SHAPE(blob, 0, INT_MAX, INT_MAX);
        /* Even dims whose product wraps int64 are fine after a zero. */
        CHECK_OK(cblob_blob_reshape(blob, 3, DIMS(0, INT64_MAX, INT64_MAX)));
        CHECK_EQ_INT(count_of(blob), 0);
        CHECK_EQ_INT(capacity_of(blob), 0);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1B_12_zero_dim_gives_count_zero)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 0, 5);
        CHECK(blob != NULL);
        CHECK_EQ_INT(count_of(blob), 0);
        CHECK_SHAPE(blob, 0, 5);
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(5, 0)));
        CHECK_EQ_INT(count_of(blob), 0);
        int64_t dim = -1;
        CHECK_OK(cblob_blob_shape_at(blob, 0, &dim));
        CHECK_EQ_INT(dim, 5);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1B_13_growing_past_capacity_replaces_storage)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 3);
        cblob_blob *sharer = BLOB(ctx, all_dtypes[d], 6);
        CHECK(blob != NULL && sharer != NULL);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 6, 1));
        CHECK(fill_part(blob, CBLOB_PART_DIFF, 6, 20));
        /* Another blob holds the old data: it must survive the reshape (buffers are freed only
         * when nobody shares them; ASan reports a use after free or a leak otherwise). */
        CHECK_OK(cblob_blob_share(sharer, blob, CBLOB_PART_DATA));

        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(3, 3)));
        CHECK_EQ_INT(capacity_of(blob), 9);
        /* Both memories are fresh: UNINITIALIZED, and zero on first access. */
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_UNINITIALIZED);
        CHECK(part_all(blob, CBLOB_PART_DATA, 9, 0));
        CHECK(part_all(blob, CBLOB_PART_DIFF, 9, 0));
        CHECK(host_ptr(blob, CBLOB_PART_DATA) != host_ptr(sharer, CBLOB_PART_DATA));
        CHECK(part_holds(sharer, CBLOB_PART_DATA, 6, 1));
        cblob_blob_destroy(blob);
        cblob_blob_destroy(sharer);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1B_14_reshape_within_capacity_keeps_storage)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 4, 3);
        CHECK(blob != NULL);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 12, 1));
        const void *data = host_ptr(blob, CBLOB_PART_DATA);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_UNINITIALIZED);

        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(5)));
        CHECK_EQ_INT(capacity_of(blob), 12);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_UNINITIALIZED);
        CHECK(host_ptr(blob, CBLOB_PART_DATA) == data);

        /* Growing back up to the capacity does not reallocate: all 12 values are still there. */
        CHECK_OK(cblob_blob_reshape(blob, 3, DIMS(2, 2, 3)));
        CHECK_EQ_INT(capacity_of(blob), 12);
        CHECK(host_ptr(blob, CBLOB_PART_DATA) == data);
        CHECK(part_holds(blob, CBLOB_PART_DATA, 12, 1));
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(0)));
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(12)));
        CHECK(host_ptr(blob, CBLOB_PART_DATA) == data);
        CHECK(part_holds(blob, CBLOB_PART_DATA, 12, 1));
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1B_15_shrinking_keeps_the_larger_capacity)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 10);
        CHECK(blob != NULL);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 10, 1));
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(2, 2)));
        CHECK_EQ_INT(count_of(blob), 4);
        CHECK_EQ_INT(capacity_of(blob), 10);
        /* The bytes past count are still the blob's: the host buffer holds capacity elements. */
        CHECK(part_holds(blob, CBLOB_PART_DATA, 10, 1));
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

/* Caffe allocates no SyncedMemory here and then aborts in cpu_data and crashes in CopyFrom;
 * cblob gives NULL pointers and copies nothing (difference_blob_without_elements_is_usable). */
TEST(caffe_1B_16_count_zero_reshape_allocates_no_storage)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = NULL, *other = NULL;
        CHECK_OK(cblob_blob_create_empty(ctx, all_dtypes[d], &blob));
        CHECK_OK(cblob_blob_create_empty(ctx, all_dtypes[d], &other));
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(0, 3)));
        CHECK_OK(cblob_blob_reshape(other, 2, DIMS(0, 3)));
        CHECK_EQ_INT(capacity_of(blob), 0);
        void *rw = &rw;
        CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &rw));
        CHECK(rw == NULL);
        CHECK(host_ptr(blob, CBLOB_PART_DIFF) == NULL);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
        CHECK_OK(cblob_blob_copy_from(blob, other, CBLOB_PART_DATA, 0));
        CHECK_OK(cblob_blob_copy_from(other, blob, CBLOB_PART_DIFF, 1));
        CHECK_EQ_INT(capacity_of(blob), 0);
        CHECK_EQ_INT(capacity_of(other), 0);
        CHECK_SHAPE(other, 0, 3);
        cblob_blob_destroy(blob);
        cblob_blob_destroy(other);
    }
    cblob_context_destroy(ctx);
}

/* Caffe's Reshape(BlobShape) narrows an int64 dim of 2^32 + 3 to 3 (the proto half is the formats
 * issue's); cblob's reshape takes int64 dims and keeps them as given. */
TEST(caffe_1B_18_int64_dims_are_not_narrowed)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    const int64_t wide = (1LL << 32) + 3;
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 1);
        CHECK(blob != NULL);
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(2, wide)));
        int64_t dim = 0;
        CHECK_OK(cblob_blob_shape_at(blob, 1, &dim));
        CHECK(dim == wide);
        CHECK(count_of(blob) == 2 * wide);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1B_19_reshape_like_takes_the_other_shape)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        for (int o = 0; o < DTYPE_COUNT; ++o) {
            cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2);
            cblob_blob *model = BLOB(ctx, all_dtypes[o], 3, 1, 4);
            CHECK(blob != NULL && model != NULL);
            CHECK(fill_part(blob, CBLOB_PART_DATA, 2, 5));
            CHECK_OK(cblob_blob_reshape_like(blob, model));
            CHECK_SHAPE(blob, 3, 1, 4);
            CHECK_EQ_INT(capacity_of(blob), 12); /* grew, as Reshape(model.shape()) would */
            CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
            /* and within capacity it keeps storage, as Reshape does. */
            CHECK(fill_part(blob, CBLOB_PART_DATA, 12, 1));
            CHECK_OK(cblob_blob_reshape(model, 1, DIMS(3)));
            CHECK_OK(cblob_blob_reshape_like(blob, model));
            CHECK_SHAPE(blob, 3);
            CHECK_EQ_INT(capacity_of(blob), 12);
            CHECK(part_holds(blob, CBLOB_PART_DATA, 12, 1));
            /* Like itself: nothing changes. */
            CHECK_OK(cblob_blob_reshape_like(blob, blob));
            CHECK_SHAPE(blob, 3);
            /* A default blob has no axes: like it, a scalar. */
            cblob_blob *empty = NULL;
            CHECK_OK(cblob_blob_create_empty(ctx, all_dtypes[o], &empty));
            CHECK_OK(cblob_blob_reshape_like(blob, empty));
            CHECK_SCALAR_SHAPE(blob);
            CHECK_EQ_INT(count_of(blob), 1);
            cblob_blob_destroy(empty);
            cblob_blob_destroy(blob);
            cblob_blob_destroy(model);
        }
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1B_20_growing_ends_sharing)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *owner = BLOB(ctx, all_dtypes[d], 2, 3);
        cblob_blob *sharer = BLOB(ctx, all_dtypes[d], 3, 2);
        CHECK(owner != NULL && sharer != NULL);
        CHECK(fill_part(owner, CBLOB_PART_DATA, 6, 1));
        CHECK_OK(cblob_blob_share(sharer, owner, CBLOB_PART_DATA));

        /* Not growing keeps the sharing: a write through one is seen through the other. */
        CHECK_OK(cblob_blob_reshape(sharer, 1, DIMS(6)));
        CHECK_OK(cblob_blob_reshape(sharer, 1, DIMS(4)));
        CHECK(host_ptr(sharer, CBLOB_PART_DATA) == host_ptr(owner, CBLOB_PART_DATA));
        CHECK(fill_part(sharer, CBLOB_PART_DATA, 4, 30));
        CHECK(part_holds(owner, CBLOB_PART_DATA, 4, 30));

        /* Growing gives the sharer fresh storage; the owner keeps its values. */
        CHECK_OK(cblob_blob_reshape(sharer, 1, DIMS(7)));
        CHECK_EQ_INT(head_of(sharer, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
        CHECK(fill_part(sharer, CBLOB_PART_DATA, 7, 100));
        CHECK(host_ptr(sharer, CBLOB_PART_DATA) != host_ptr(owner, CBLOB_PART_DATA));
        CHECK(part_holds(owner, CBLOB_PART_DATA, 4, 30));
        cblob_blob_destroy(sharer);
        CHECK(part_holds(owner, CBLOB_PART_DATA, 4, 30));
        cblob_blob_destroy(owner);
    }
    cblob_context_destroy(ctx);
}
