/* SPDX-License-Identifier: BSD-2-Clause */
/* conformance.md 1.A: constants, construction, global mode.
 *
 * Items that do not apply here:
 *   5  Blob and SyncedMemory cannot be copied or assigned: a C++ rule about objects. cblob hands
 *      out opaque handles; copying the pointer copies no blob, and holders are counted
 *      explicitly (cblob_blob_retain / cblob_blob_destroy).
 *   1  (the Reshape(BlobShape) half) The proto half of the 33-axis rejection belongs to the
 *      formats issue's tests, with the other proto items.
 *   3  (the gpu_data / gpu_diff / mutable_gpu_* half) The ABI has no GPU pointer accessors yet;
 *      they come with the GPU issue and are tested there with its test double.
 *   7  (the GPU half: GPU mode pins host memory and copies on the device) is tested with the GPU
 *      issue's test double; here: the default, the per-context mode and a refused switch. */
#include "conformance.h"

TEST(caffe_1A_1_max_axes_is_32)
{
    _Static_assert(CBLOB_MAX_AXES == 32, "Caffe's kMaxBlobAxes is 32");
    int64_t ones[CBLOB_MAX_AXES + 1];
    for (int i = 0; i <= CBLOB_MAX_AXES; ++i)
        ones[i] = 1;
    ones[CBLOB_MAX_AXES - 1] = 2;
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);

    cblob_blob *blob = blob_new(ctx, CBLOB_DTYPE_FLOAT32, CBLOB_MAX_AXES, ones);
    CHECK(blob != NULL);
    int32_t axes = 0;
    CHECK_OK(cblob_blob_num_axes(blob, &axes));
    CHECK_EQ_INT(axes, 32);
    CHECK_EQ_INT(count_of(blob), 2);

    /* 33 axes: rejected by reshape (blob unchanged) and by create (out_blob untouched). */
    CHECK(fill_part(blob, CBLOB_PART_DATA, 2, 7));
    CHECK_REJECTED(cblob_blob_reshape(blob, CBLOB_MAX_AXES + 1, ones), CBLOB_ERR_SHAPE, blob);
    cblob_blob *untouched = (cblob_blob *)&axes;
    CHECK_ERROR(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, CBLOB_MAX_AXES + 1, ones, &untouched), CBLOB_ERR_SHAPE);
    CHECK(untouched == (cblob_blob *)&axes);
    CHECK(strstr(cblob_last_error_message(), "33") != NULL);

    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(caffe_1A_2_default_blob_is_empty)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = NULL;
        CHECK_OK(cblob_blob_create_empty(ctx, all_dtypes[d], &blob));
        int32_t axes = -1;
        CHECK_OK(cblob_blob_num_axes(blob, &axes));
        CHECK_EQ_INT(axes, 0);
        CHECK_EQ_INT(count_of(blob), 0);
        CHECK_EQ_INT(capacity_of(blob), 0);
        /* No storage: both memories report UNINITIALIZED and there is no host buffer. */
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_UNINITIALIZED);
        CHECK(host_ptr(blob, CBLOB_PART_DATA) == NULL);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

/* Caffe CHECKs for a SyncedMemory in every accessor and aborts; cblob gives a NULL pointer and
 * moves nothing (README: "Its pointers are NULL"). */
TEST(caffe_1A_3_accessors_on_blob_without_storage)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = NULL;
        CHECK_OK(cblob_blob_create_empty(ctx, all_dtypes[d], &blob));
        for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
            const void *ro = &ro;
            void *rw = &rw;
            CHECK_OK(cblob_blob_cpu_ptr(blob, part, &ro));
            CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, part, &rw));
            CHECK(ro == NULL && rw == NULL);
            CHECK_EQ_INT(head_of(blob, part), CBLOB_HEAD_UNINITIALIZED);
            /* data_at / diff_at: there is no element to read. */
            double value = 42;
            CHECK_REJECTED(cblob_blob_read_element(blob, part, 0, NULL, &value), CBLOB_ERR_OUT_OF_RANGE, blob);
            CHECK(value == 42);
        }
        CHECK_EQ_INT(capacity_of(blob), 0);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(caffe_1A_4_shaped_construction_allocates_nothing)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *legacy = NULL;
        CHECK_OK(cblob_blob_create_legacy(ctx, all_dtypes[d], 2, 3, 4, 5, &legacy));
        cblob_blob *shaped = BLOB(ctx, all_dtypes[d], 2, 3, 4, 5);
        CHECK(shaped != NULL);
        cblob_blob *both[2] = {legacy, shaped};
        for (int b = 0; b < 2; ++b) {
            CHECK_SHAPE(both[b], 2, 3, 4, 5);
            CHECK_EQ_INT(count_of(both[b]), 120);
            CHECK_EQ_INT(capacity_of(both[b]), 120);
            CHECK_EQ_INT(head_of(both[b], CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
            CHECK_EQ_INT(head_of(both[b], CBLOB_PART_DIFF), CBLOB_HEAD_UNINITIALIZED);
            int64_t dims[4];
            CHECK_OK(cblob_blob_num(both[b], &dims[0]));
            CHECK_OK(cblob_blob_channels(both[b], &dims[1]));
            CHECK_OK(cblob_blob_height(both[b], &dims[2]));
            CHECK_OK(cblob_blob_width(both[b], &dims[3]));
            CHECK(dims[0] == 2 && dims[1] == 3 && dims[2] == 4 && dims[3] == 5);
        }
        cblob_blob_destroy(legacy);
        cblob_blob_destroy(shaped);
    }
    /* Nothing is allocated at construction: a blob far larger than any memory can be made (only
     * first access would allocate; see 1H_53). */
    cblob_blob *huge = BLOB(ctx, CBLOB_DTYPE_FLOAT64, 1 << 20, 1 << 20, 1 << 16);
    CHECK(huge != NULL);
    CHECK_EQ_INT(head_of(huge, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
    cblob_blob_destroy(huge);
    cblob_context_destroy(ctx);
}

TEST(caffe_1A_6_four_dtypes)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 3);
        CHECK(blob != NULL);
        cblob_dtype dtype = -1;
        CHECK_OK(cblob_blob_dtype(blob, &dtype));
        CHECK_EQ_INT(dtype, all_dtypes[d]);
        /* Elements have the dtype's C size: the pointer steps by it. */
        CHECK(fill_part(blob, CBLOB_PART_DATA, 3, 1));
        const unsigned char *bytes = host_ptr(blob, CBLOB_PART_DATA);
        CHECK(value_at(bytes + 2 * dtype_size(dtype), dtype, 0) == 3);
        cblob_blob_destroy(blob);
    }
    /* No other dtype exists. */
    cblob_blob *untouched = NULL;
    CHECK_ERROR(cblob_blob_create(ctx, 0, 1, DIMS(3), &untouched), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_create(ctx, CBLOB_DTYPE_UINT32 + 1, 1, DIMS(3), &untouched), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_create_empty(ctx, -1, &untouched), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(untouched == NULL);
    cblob_context_destroy(ctx);
}

/* Caffe::mode() is a per-thread singleton defaulting to CPU; cblob keeps it in the context
 * (see difference_mode_lives_in_a_context). */
TEST(caffe_1A_7_mode_defaults_to_cpu)
{
    cblob_context *first = context_new();
    cblob_context *second = context_new();
    CHECK(first != NULL && second != NULL);
    cblob_mode mode = -1;
    CHECK_OK(cblob_context_mode(first, &mode));
    CHECK_EQ_INT(mode, CBLOB_MODE_CPU);

    /* Switching to GPU needs a usable GPU. Without one the call says why and nothing changes;
     * with one (a GPU machine) it switches this context only. */
    cblob_status status = cblob_context_set_mode(first, CBLOB_MODE_GPU);
    if (status == CBLOB_OK) {
        CHECK_OK(cblob_context_mode(first, &mode));
        CHECK_EQ_INT(mode, CBLOB_MODE_GPU);
        CHECK_OK(cblob_context_set_mode(first, CBLOB_MODE_CPU));
    } else {
        CHECK(status == CBLOB_ERR_NO_DRIVER || status == CBLOB_ERR_STUB_DRIVER || status == CBLOB_ERR_NO_DEVICE ||
              status == CBLOB_ERR_DRIVER_TOO_OLD || status == CBLOB_ERR_NVRTC_MISSING ||
              status == CBLOB_ERR_CUBLAS_MISSING || status == CBLOB_ERR_DEVICE);
        CHECK(message_from("cblob_context_set_mode"));
        CHECK_OK(cblob_context_mode(first, &mode));
        CHECK_EQ_INT(mode, CBLOB_MODE_CPU);
    }
    CHECK_OK(cblob_context_mode(second, &mode));
    CHECK_EQ_INT(mode, CBLOB_MODE_CPU);
    CHECK_ERROR(cblob_context_set_mode(second, 2), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(cblob_context_mode(second, &mode));
    CHECK_EQ_INT(mode, CBLOB_MODE_CPU);

    /* In CPU mode, CopyFrom takes the host path (item 36). */
    cblob_blob *source = BLOB(second, CBLOB_DTYPE_FLOAT32, 4);
    cblob_blob *target = BLOB(second, CBLOB_DTYPE_FLOAT32, 4);
    CHECK(source != NULL && target != NULL);
    CHECK(fill_part(source, CBLOB_PART_DATA, 4, 1));
    CHECK_OK(cblob_blob_copy_from(target, source, CBLOB_PART_DATA, 0));
    CHECK_EQ_INT(head_of(target, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
    cblob_blob_destroy(source);
    cblob_blob_destroy(target);
    cblob_context_destroy(first);
    cblob_context_destroy(second);
}
