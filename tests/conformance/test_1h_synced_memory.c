/* SPDX-License-Identifier: BSD-2-Clause */
/* conformance.md 1.H: the SyncedMemory state machine, as far as it shows on the CPU.
 *
 * Items that do not apply here (each needs a device; the GPU issue tests them with its test
 * double):
 *   54 (the device half: first device access allocates with cudaMalloc + memset, AT_GPU)
 *   55 cpu_data from AT_GPU;  56 gpu_data from AT_CPU;  57 mutable_gpu_data and the stale host
 *      copy (the host half of 57, mutable_cpu_data forcing AT_CPU, is checked in 1H_54)
 *   58 (the device half: set_cpu_data keeps the device buffer, the next gpu_data copies p in)
 *   59 set_gpu_data;  60 pinned host memory in GPU mode;  61 async_gpu_push
 *   63 GPU operations in a CPU-only build: the ABI's only such entry point so far is
 *      cblob_context_set_mode(GPU), checked in 1A_7; the accessors come with the GPU issue.
 *   64 device copies through cudaMemcpyDefault;  65 the DEBUG-build device checks.
 *
 * Caffe's set_cpu_data given the blob's own buffer frees it and keeps the dangling pointer;
 * cblob refuses it: difference_set_cpu_data_refuses_the_blobs_own_buffer. */
#include "conformance.h"

TEST(caffe_1H_53_construction_allocates_nothing_and_size_is_fixed)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        /* 2^40 elements: only lazy allocation lets this succeed. */
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 1 << 20, 1 << 20);
        CHECK(blob != NULL);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_UNINITIALIZED);
        CHECK_EQ_INT(capacity_of(blob), 1LL << 40);
        /* The memories' size never changes while they live: shrinking and growing back within
         * it keeps the capacity. */
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(3)));
        CHECK_EQ_INT(capacity_of(blob), 1LL << 40);
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(1LL << 40)));
        CHECK_EQ_INT(capacity_of(blob), 1LL << 40);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1H_54_first_host_access_zero_fills)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 64);
        CHECK(blob != NULL);
        /* Read-only access: allocated and zeroed, head AT_CPU (not SYNCED). */
        const void *data = host_ptr(blob, CBLOB_PART_DATA);
        CHECK(data != NULL);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
        CHECK(part_all(blob, CBLOB_PART_DATA, 64, 0));
        /* Writable access: the same, through mutable_cpu_data. */
        void *diff = NULL;
        CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DIFF, &diff));
        CHECK(diff != NULL && diff != data);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_AT_CPU);
        CHECK(part_all(blob, CBLOB_PART_DIFF, 64, 0));
        /* Later accesses are no-ops on the same buffer (item 57's host half: mutable keeps
         * AT_CPU). */
        CHECK(host_ptr(blob, CBLOB_PART_DATA) == data);
        void *again = NULL;
        CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &again));
        CHECK(again == data);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1H_58_set_cpu_data_and_its_release_callback)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    float first[6] = {1, 2, 3, 4, 5, 6}, second[6] = {7, 8, 9, 10, 11, 12};
    release_log first_log = {0, NULL}, second_log = {0, NULL};

    /* From UNINITIALIZED: head AT_CPU, the buffer is used as is. Destroying the blob lets go of
     * it: the callback runs once, with the buffer and user_data. */
    cblob_blob *blob = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 6);
    CHECK(blob != NULL);
    CHECK_OK(cblob_blob_set_cpu_data(blob, first, sizeof first, count_release, &first_log));
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
    CHECK(part_holds(blob, CBLOB_PART_DATA, 6, 1));
    CHECK_EQ_INT(first_log.calls, 0);
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(first_log.calls, 1);
    CHECK(first_log.last_ptr == first);

    /* An owned host buffer is freed when a caller's buffer replaces it (ASan: no leak); a
     * caller's buffer replaced by another is released then, once. */
    first_log.calls = 0;
    blob = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 6);
    CHECK(blob != NULL);
    CHECK(fill_part(blob, CBLOB_PART_DATA, 6, 50));
    CHECK_OK(cblob_blob_set_cpu_data(blob, first, sizeof first, count_release, &first_log));
    CHECK(part_holds(blob, CBLOB_PART_DATA, 6, 1));
    CHECK_OK(cblob_blob_set_cpu_data(blob, second, sizeof second, count_release, &second_log));
    CHECK_EQ_INT(first_log.calls, 1);
    CHECK_EQ_INT(second_log.calls, 0);
    /* Handing back the buffer in use does not release it. */
    CHECK_OK(cblob_blob_set_cpu_data(blob, second, sizeof second, count_release, &second_log));
    CHECK_EQ_INT(second_log.calls, 0);
    CHECK(part_holds(blob, CBLOB_PART_DATA, 6, 7));

    /* A reshape past capacity drops the storage, and with it the buffer. */
    CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(7)));
    CHECK_EQ_INT(second_log.calls, 1);
    CHECK(second_log.last_ptr == second);
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(second_log.calls, 1);

    /* Shared storage lets go of the buffer when the last of its holders goes, whichever that is. */
    first_log.calls = 0;
    cblob_blob *a = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 6);
    cblob_blob *b = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 2, 3);
    cblob_blob *c = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 3, 2);
    CHECK(a != NULL && b != NULL && c != NULL);
    CHECK_OK(cblob_blob_set_cpu_data(a, first, sizeof first, count_release, &first_log));
    CHECK_OK(cblob_blob_share(b, a, CBLOB_PART_DATA));
    CHECK_OK(cblob_blob_share(c, b, CBLOB_PART_DATA));
    CHECK_OK(cblob_blob_retain(c));
    cblob_blob_destroy(a);
    cblob_blob_destroy(c);
    CHECK_EQ_INT(first_log.calls, 0);
    CHECK(part_holds(c, CBLOB_PART_DATA, 6, 1));
    cblob_blob_destroy(c);
    CHECK_EQ_INT(first_log.calls, 0);
    cblob_blob_destroy(b);
    CHECK_EQ_INT(first_log.calls, 1);

    /* set_cpu_data replacing a storage that does not hold exactly count elements (item 31)
     * releases the old buffer with the old storage. */
    first_log.calls = 0;
    second_log.calls = 0;
    blob = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 6);
    CHECK(blob != NULL);
    CHECK_OK(cblob_blob_set_cpu_data(blob, first, sizeof first, count_release, &first_log));
    CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(4)));
    CHECK_EQ_INT(first_log.calls, 0);
    CHECK_OK(cblob_blob_set_cpu_data(blob, second, 4 * sizeof(float), count_release, &second_log));
    CHECK_EQ_INT(first_log.calls, 1);
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(second_log.calls, 1);

    /* A failed call neither keeps nor releases the buffer: it stays the caller's. */
    first_log.calls = 0;
    blob = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 6);
    CHECK(blob != NULL);
    CHECK(fill_part(blob, CBLOB_PART_DATA, 6, 30));
    CHECK_REJECTED(cblob_blob_set_cpu_data(blob, first, 5 * sizeof(float), count_release, &first_log),
                   CBLOB_ERR_INVALID_ARGUMENT, blob);
    CHECK_EQ_INT(first_log.calls, 0);
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(first_log.calls, 0);
    cblob_context_destroy(ctx);
}

TEST(caffe_1H_62_destruction_frees_owned_memory_and_releases_the_rest)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        /* Owned host buffers in both parts: freed (ASan's leak check fails the test otherwise). */
        cblob_blob *owned = BLOB(ctx, all_dtypes[d], 3, 5);
        CHECK(owned != NULL);
        CHECK(fill_part(owned, CBLOB_PART_DATA, 15, 1));
        CHECK(fill_part(owned, CBLOB_PART_DIFF, 15, 2));
        cblob_blob_destroy(owned);

        /* A caller's buffer: never freed by cblob (we free it below; a double free would be
         * reported), its callback runs once, after the last holder of the blob. */
        void *buffer = malloc(15 * dtype_size(all_dtypes[d]));
        CHECK(buffer != NULL);
        release_log log = {0, NULL};
        cblob_blob *borrowed = BLOB(ctx, all_dtypes[d], 3, 5);
        CHECK(borrowed != NULL);
        CHECK_OK(cblob_blob_set_cpu_data(borrowed, buffer, 15 * dtype_size(all_dtypes[d]), count_release, &log));
        CHECK(fill_part(borrowed, CBLOB_PART_DIFF, 15, 2));
        CHECK_OK(cblob_blob_retain(borrowed));
        cblob_blob_destroy(borrowed);
        CHECK_EQ_INT(log.calls, 0);
        cblob_blob_destroy(borrowed);
        CHECK_EQ_INT(log.calls, 1);
        CHECK(log.last_ptr == buffer);
        free(buffer);

        /* Without a callback the buffer is simply left alone. */
        double on_stack[15];
        cblob_blob *plain = BLOB(ctx, all_dtypes[d], 15);
        CHECK(plain != NULL);
        CHECK_OK(cblob_blob_set_cpu_data(plain, on_stack, sizeof on_stack, NULL, NULL));
        cblob_blob_destroy(plain);
    }
    /* Destroying NULL is a no-op. */
    cblob_blob_destroy(NULL);
    cblob_context_destroy(NULL);
    cblob_context_destroy(ctx);
}

TEST(caffe_1H_66_data_and_diff_have_independent_heads)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 4);
        CHECK(blob != NULL);
        for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
            CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(4 + 4 * part + 1))); /* fresh storage for each round */
            const cblob_part other = 1 - part;
            void *ptr = NULL;
            CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, part, &ptr));
            CHECK_EQ_INT(head_of(blob, part), CBLOB_HEAD_AT_CPU);
            CHECK_EQ_INT(head_of(blob, other), CBLOB_HEAD_UNINITIALIZED);
            CHECK(host_ptr(blob, part) == ptr);
            CHECK_EQ_INT(head_of(blob, other), CBLOB_HEAD_UNINITIALIZED);
            /* Writing one part never shows in the other. */
            CHECK(fill_part(blob, part, 4, 5));
            CHECK(part_all(blob, other, 4, 0));
            CHECK(host_ptr(blob, other) != ptr);
        }
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}
