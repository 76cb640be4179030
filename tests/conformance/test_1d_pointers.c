/* SPDX-License-Identifier: BSD-2-Clause */
/* conformance.md 1.D: pointer accessors and external buffers.
 *
 * Items that do not apply here:
 *   32 Blob::set_gpu_data: the ABI has no device-buffer setter yet; it comes with the GPU issue
 *      and is tested there with its test double.
 *   31 (capacity) Caffe leaves capacity stale after set_cpu_data replaces the storage; cblob
 *      reports the new one: difference_set_cpu_data_updates_capacity. The size argument and
 *      the release callback are cblob's own: difference_set_cpu_data_takes_size_and_release. */
#include "conformance.h"

TEST(caffe_1D_31_set_cpu_data)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        double storage[16]; /* room for 16 elements of any dtype */
        for (int i = 0; i < 16; ++i)
            value_set(storage, dtype, i, 100 + i);
        cblob_blob *blob = BLOB(ctx, dtype, 10);
        CHECK(blob != NULL);
        CHECK(fill_part(blob, CBLOB_PART_DIFF, 10, 1));

        /* A NULL buffer is refused. */
        CHECK_REJECTED(cblob_blob_set_cpu_data(blob, NULL, sizeof storage, NULL, NULL), CBLOB_ERR_INVALID_ARGUMENT,
                       blob);

        /* Storage of exactly count elements: the buffer becomes the data, head AT_CPU, and the
         * diff is untouched. */
        CHECK_OK(cblob_blob_set_cpu_data(blob, storage, 10 * dtype_size(dtype), NULL, NULL));
        CHECK(host_ptr(blob, CBLOB_PART_DATA) == storage);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
        CHECK(part_holds(blob, CBLOB_PART_DATA, 10, 100));
        CHECK(part_holds(blob, CBLOB_PART_DIFF, 10, 1));

        /* After a shrinking reshape the storage holds more than count elements: data and diff
         * are replaced by storage of exactly count elements first. The diff is lost. */
        CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(2, 3)));
        CHECK_OK(cblob_blob_set_cpu_data(blob, (char *)storage + 2 * dtype_size(dtype), 6 * dtype_size(dtype), NULL,
                                         NULL));
        CHECK(part_holds(blob, CBLOB_PART_DATA, 6, 102));
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_UNINITIALIZED);
        CHECK(part_all(blob, CBLOB_PART_DIFF, 6, 0));
        CHECK_EQ_INT(capacity_of(blob), 6);

        /* Writes through the blob land in the caller's buffer. */
        void *data = NULL;
        CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &data));
        value_set(data, dtype, 0, 7);
        CHECK(value_at(storage, dtype, 2) == 7);

        /* On a blob with no elements (Caffe dereferences a NULL SyncedMemory) it is an error. */
        cblob_blob *empty = NULL;
        CHECK_OK(cblob_blob_create_empty(ctx, dtype, &empty));
        CHECK_REJECTED(cblob_blob_set_cpu_data(empty, storage, sizeof storage, NULL, NULL), CBLOB_ERR_SHAPE, empty);
        cblob_blob_destroy(empty);
        cblob_blob_destroy(blob);
        /* cblob never frees a caller's buffer: it is still ours (ASan would report it). */
        CHECK(value_at(storage, dtype, 2) == 7);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1D_33_set_cpu_data_is_seen_by_sharing_blobs)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        double storage[6];
        for (int i = 0; i < 6; ++i)
            value_set(storage, dtype, i, 50 + i);
        cblob_blob *owner = BLOB(ctx, dtype, 2, 3);
        cblob_blob *sharer = BLOB(ctx, dtype, 6);
        CHECK(owner != NULL && sharer != NULL);
        CHECK_OK(cblob_blob_share(sharer, owner, CBLOB_PART_DATA));
        CHECK_OK(cblob_blob_set_cpu_data(sharer, storage, 6 * dtype_size(dtype), NULL, NULL));
        CHECK(host_ptr(owner, CBLOB_PART_DATA) == storage);
        CHECK(part_holds(owner, CBLOB_PART_DATA, 6, 50));
        CHECK_EQ_INT(head_of(owner, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
        cblob_blob_destroy(owner);
        cblob_blob_destroy(sharer);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1D_34_share_data_and_diff)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
            const cblob_part other_part = 1 - part;
            cblob_blob *owner = BLOB(ctx, dtype, 2, 3);
            cblob_blob *sharer = BLOB(ctx, dtype, 3, 2); /* same count, another shape: allowed */
            CHECK(owner != NULL && sharer != NULL);
            CHECK(fill_part(sharer, part, 6, 90));       /* released by the sharing (ASan: no leak) */
            CHECK(fill_part(sharer, other_part, 6, 70)); /* kept: only one part is shared */
            CHECK_OK(cblob_blob_share(sharer, owner, part));

            /* One memory, one head: owner was never accessed, so neither was the shared memory. */
            CHECK_EQ_INT(head_of(sharer, part), CBLOB_HEAD_UNINITIALIZED);
            CHECK(fill_part(sharer, part, 6, 1));
            CHECK_EQ_INT(head_of(owner, part), CBLOB_HEAD_AT_CPU);
            CHECK(host_ptr(owner, part) == host_ptr(sharer, part));
            CHECK(part_holds(owner, part, 6, 1));
            CHECK(part_holds(sharer, other_part, 6, 70));
            CHECK_EQ_INT(head_of(owner, other_part), CBLOB_HEAD_UNINITIALIZED);
            CHECK_SHAPE(sharer, 3, 2);
            /* Sharing what is already shared changes nothing. */
            CHECK_OK(cblob_blob_share(sharer, owner, part));
            CHECK(part_holds(sharer, part, 6, 1));

            /* Lifetime is shared: the memory outlives the blob it came from. */
            cblob_blob_destroy(owner);
            CHECK(part_holds(sharer, part, 6, 1));

            /* Counts must match; so must dtypes (Caffe's templates make that a compile error). */
            cblob_blob *longer = BLOB(ctx, dtype, 7);
            cblob_blob *other_type = BLOB(ctx, all_dtypes[(d + 1) % DTYPE_COUNT], 6);
            cblob_blob *empty = NULL;
            CHECK_OK(cblob_blob_create_empty(ctx, dtype, &empty));
            CHECK(longer != NULL && other_type != NULL);
            CHECK_REJECTED(cblob_blob_share(sharer, longer, part), CBLOB_ERR_SHAPE, sharer, longer);
            CHECK_REJECTED(cblob_blob_share(sharer, other_type, part), CBLOB_ERR_DTYPE, sharer, other_type);
            CHECK_REJECTED(cblob_blob_share(sharer, empty, part), CBLOB_ERR_SHAPE, sharer, empty);
            /* Other has no memory at all (Caffe: CHECK on other's SyncedMemory). */
            cblob_blob *also_empty = NULL;
            CHECK_OK(cblob_blob_create_empty(ctx, dtype, &also_empty));
            CHECK_REJECTED(cblob_blob_share(also_empty, empty, part), CBLOB_ERR_STATE, also_empty, empty);
            cblob_blob *twin = BLOB(ctx, dtype, 6);
            CHECK(twin != NULL);
            CHECK_REJECTED(cblob_blob_share(sharer, twin, 2), CBLOB_ERR_INVALID_ARGUMENT, sharer, twin);
            cblob_blob_destroy(twin);
            cblob_blob_destroy(also_empty);
            cblob_blob_destroy(empty);
            cblob_blob_destroy(longer);
            cblob_blob_destroy(other_type);
            cblob_blob_destroy(sharer);
        }
    }
    /* ShareData releases the blob's previous data: a caller buffer given with set_cpu_data is
     * let go then, and its release callback runs exactly once. */
    cblob_blob *owner = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 4);
    cblob_blob *sharer = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 4);
    CHECK(owner != NULL && sharer != NULL);
    float buffer[4] = {1, 2, 3, 4};
    release_log log = {0, NULL};
    CHECK_OK(cblob_blob_set_cpu_data(sharer, buffer, sizeof buffer, count_release, &log));
    CHECK_OK(cblob_blob_share(sharer, owner, CBLOB_PART_DATA));
    CHECK_EQ_INT(log.calls, 1);
    CHECK(log.last_ptr == buffer);
    cblob_blob_destroy(sharer);
    cblob_blob_destroy(owner);
    CHECK_EQ_INT(log.calls, 1);
    cblob_context_destroy(ctx);
}
