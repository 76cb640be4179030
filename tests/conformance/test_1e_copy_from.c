/* SPDX-License-Identifier: BSD-2-Clause */
/* conformance.md 1.E: CopyFrom.
 *
 * Items that do not apply here:
 *   36 (the GPU half: GPU mode reads the source's device copy and writes the device copy, head
 *      AT_GPU) is tested with the GPU issue's test double; here: the CPU-mode path. */
#include "conformance.h"

TEST(caffe_1E_35_copy_needs_equal_shapes_or_reshape)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        cblob_blob *source = BLOB(ctx, dtype, 2, 3);
        cblob_blob *target = BLOB(ctx, dtype, 3, 2);
        cblob_blob *small = BLOB(ctx, dtype, 4);
        CHECK(source != NULL && target != NULL && small != NULL);
        CHECK(fill_part(source, CBLOB_PART_DATA, 6, 1));
        CHECK(fill_part(source, CBLOB_PART_DIFF, 6, 11));
        CHECK(fill_part(target, CBLOB_PART_DATA, 6, 40));
        CHECK(fill_part(small, CBLOB_PART_DATA, 4, 60));

        /* Same count, another shape: refused without reshape ("Trying to copy blobs of
         * different sizes"); so is another count. Neither blob changes. */
        CHECK_REJECTED(cblob_blob_copy_from(target, source, CBLOB_PART_DATA, 0), CBLOB_ERR_SHAPE, target, source);
        CHECK_REJECTED(cblob_blob_copy_from(small, source, CBLOB_PART_DIFF, 0), CBLOB_ERR_SHAPE, small, source);
        CHECK_REJECTED(cblob_blob_copy_from(source, small, CBLOB_PART_DATA, 0), CBLOB_ERR_SHAPE, small, source);
        /* reshape is a boolean; another dtype cannot be copied. */
        CHECK_REJECTED(cblob_blob_copy_from(target, source, CBLOB_PART_DATA, 2), CBLOB_ERR_INVALID_ARGUMENT, target,
                       source);
        cblob_blob *other_type = BLOB(ctx, all_dtypes[(d + 1) % DTYPE_COUNT], 2, 3);
        CHECK(other_type != NULL);
        CHECK_REJECTED(cblob_blob_copy_from(other_type, source, CBLOB_PART_DATA, 1), CBLOB_ERR_DTYPE, other_type,
                       source);

        /* With reshape: same count keeps the storage, a larger count grows it. */
        const void *before = host_ptr(target, CBLOB_PART_DATA);
        CHECK_OK(cblob_blob_copy_from(target, source, CBLOB_PART_DATA, 1));
        CHECK_SHAPE(target, 2, 3);
        CHECK(host_ptr(target, CBLOB_PART_DATA) == before);
        CHECK(part_holds(target, CBLOB_PART_DATA, 6, 1));
        CHECK_OK(cblob_blob_copy_from(small, source, CBLOB_PART_DIFF, 1));
        CHECK_SHAPE(small, 2, 3);
        CHECK_EQ_INT(capacity_of(small), 6);
        CHECK(part_holds(small, CBLOB_PART_DIFF, 6, 11));
        /* and a smaller one shrinks the shape within capacity. */
        CHECK_OK(cblob_blob_reshape(small, 1, DIMS(2)));
        CHECK(fill_part(small, CBLOB_PART_DATA, 2, 80));
        CHECK_OK(cblob_blob_copy_from(target, small, CBLOB_PART_DATA, 1));
        CHECK_SHAPE(target, 2);
        CHECK_EQ_INT(capacity_of(target), 6);
        CHECK(part_holds(target, CBLOB_PART_DATA, 2, 80));
        cblob_blob_destroy(other_type);
        cblob_blob_destroy(source);
        cblob_blob_destroy(target);
        cblob_blob_destroy(small);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1E_36_cpu_mode_copies_on_the_host)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *source = BLOB(ctx, all_dtypes[d], 5);
        cblob_blob *target = BLOB(ctx, all_dtypes[d], 5);
        CHECK(source != NULL && target != NULL);
        /* Both never accessed: the source is read through cpu_data (allocated, zero, AT_CPU) and
         * the target written through mutable_cpu_data (AT_CPU). */
        CHECK_OK(cblob_blob_copy_from(target, source, CBLOB_PART_DIFF, 0));
        CHECK_EQ_INT(head_of(source, CBLOB_PART_DIFF), CBLOB_HEAD_AT_CPU);
        CHECK_EQ_INT(head_of(target, CBLOB_PART_DIFF), CBLOB_HEAD_AT_CPU);
        CHECK(part_all(target, CBLOB_PART_DIFF, 5, 0));

        CHECK(fill_part(source, CBLOB_PART_DATA, 5, 3));
        CHECK_OK(cblob_blob_copy_from(target, source, CBLOB_PART_DATA, 0));
        CHECK_EQ_INT(head_of(target, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
        CHECK(part_holds(target, CBLOB_PART_DATA, 5, 3));
        /* A copy, not a share. */
        CHECK(host_ptr(target, CBLOB_PART_DATA) != host_ptr(source, CBLOB_PART_DATA));
        cblob_blob_destroy(source);
        cblob_blob_destroy(target);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1E_37_copy_moves_one_part_only)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *source = BLOB(ctx, all_dtypes[d], 4);
        cblob_blob *target = BLOB(ctx, all_dtypes[d], 4);
        CHECK(source != NULL && target != NULL);
        CHECK(fill_part(source, CBLOB_PART_DATA, 4, 1));
        CHECK(fill_part(source, CBLOB_PART_DIFF, 4, 10));
        CHECK(fill_part(target, CBLOB_PART_DIFF, 4, 20));

        CHECK_OK(cblob_blob_copy_from(target, source, CBLOB_PART_DATA, 0));
        CHECK(part_holds(target, CBLOB_PART_DATA, 4, 1));
        CHECK(part_holds(target, CBLOB_PART_DIFF, 4, 20));

        /* A never-touched part stays never touched. */
        cblob_blob *fresh = BLOB(ctx, all_dtypes[d], 4);
        CHECK(fresh != NULL);
        CHECK_OK(cblob_blob_copy_from(fresh, source, CBLOB_PART_DIFF, 0));
        CHECK_EQ_INT(head_of(fresh, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
        CHECK(part_holds(fresh, CBLOB_PART_DIFF, 4, 10));

        /* Two calls copy both (as Net does). */
        CHECK_OK(cblob_blob_copy_from(target, source, CBLOB_PART_DIFF, 0));
        CHECK(part_holds(target, CBLOB_PART_DIFF, 4, 10));
        cblob_blob_destroy(fresh);
        cblob_blob_destroy(source);
        cblob_blob_destroy(target);
    }
    cblob_context_destroy(ctx);
}

/* caffe_copy does nothing when source and destination are the same memory (a memcpy onto itself
 * is undefined behaviour, which sanitizers tolerate, so what shows is the result): the call
 * succeeds and the memory, its sharing and the shape are as they were. */
TEST(caffe_1E_38_copy_onto_itself_does_nothing)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 2, 4);
        cblob_blob *sharer = BLOB(ctx, all_dtypes[d], 8);
        CHECK(blob != NULL && sharer != NULL);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 8, 1));
        CHECK_OK(cblob_blob_copy_from(blob, blob, CBLOB_PART_DATA, 0));
        CHECK(part_holds(blob, CBLOB_PART_DATA, 8, 1));
        CHECK_OK(cblob_blob_copy_from(blob, blob, CBLOB_PART_DATA, 1));
        CHECK_SHAPE(blob, 2, 4);

        CHECK_OK(cblob_blob_share(sharer, blob, CBLOB_PART_DATA));
        CHECK_OK(cblob_blob_copy_from(sharer, blob, CBLOB_PART_DATA, 1)); /* reshapes to (2, 4), copies nothing */
        CHECK_SHAPE(sharer, 2, 4);
        CHECK(host_ptr(sharer, CBLOB_PART_DATA) == host_ptr(blob, CBLOB_PART_DATA));
        CHECK(part_holds(sharer, CBLOB_PART_DATA, 8, 1));
        cblob_blob_destroy(sharer);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}
