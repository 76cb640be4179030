/* SPDX-License-Identifier: BSD-2-Clause */
/* Smoke tests of the public API through the shared library: the paths every user takes first. */
#include <stdint.h>

#include "harness.h"

TEST(versions_are_consistent)
{
    CHECK(cblob_version() != NULL && cblob_version()[0] != '\0');
    CHECK_EQ_INT(cblob_abi_version() >> 16, CBLOB_ABI_VERSION_MAJOR);
    CHECK(cblob_abi_version() >= ((uint32_t)CBLOB_ABI_VERSION_MAJOR << 16 | CBLOB_ABI_VERSION_MINOR));
    CHECK(strstr(cblob_blas_info(), "BLIS") != NULL);
    CHECK(strstr(cblob_cpu_features(), "kernels:") != NULL);
}

TEST(status_names_cover_every_status)
{
    CHECK(strcmp(cblob_status_name(CBLOB_OK), "CBLOB_OK") == 0);
    CHECK(strcmp(cblob_status_name(CBLOB_ERR_NOT_IMPLEMENTED), "CBLOB_ERR_NOT_IMPLEMENTED") == 0);
    CHECK(strcmp(cblob_status_name(-7), "CBLOB_ERR_UNKNOWN") == 0);
}

TEST(last_error_message_is_per_thread_and_never_null)
{
    CHECK(cblob_last_error_message() != NULL);
    CHECK_ERROR(cblob_context_create(NULL), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "cblob_context_create") != NULL);
    CHECK(strstr(cblob_last_error_message(), "out_context") != NULL);
}

/* cpu_ptr, mutable_cpu_ptr and a reshape to the current shape return on their hot path before
 * naming the call (src/core/blob.c): a success there leaves the thread's message alone, and a
 * failure right after still names its own call, never the one before. */
TEST(hot_paths_name_the_call_that_fails)
{
    cblob_context *ctx = NULL;
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t shape[2] = {2, 3}, same[2] = {2, 3}, bad[2] = {-1, 3};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, shape, &blob));
    void *data = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &data)); /* allocates: the slow path */
    CHECK(data != NULL);
    int64_t count = 0;
    CHECK_ERROR(cblob_blob_count_range(blob, 1, 0, &count), CBLOB_ERR_OUT_OF_RANGE);
    char before[1024];
    snprintf(before, sizeof before, "%s", cblob_last_error_message());
    CHECK(strncmp(before, "cblob_blob_count_range: ", 24) == 0);

    const void *read = NULL;
    void *written = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &read));
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &written));
    CHECK_OK(cblob_blob_reshape(blob, 2, same));
    CHECK(read == data && written == data);
    CHECK(strcmp(cblob_last_error_message(), before) == 0);

    const void *untouched = &count;
    CHECK(cblob_blob_cpu_ptr(blob, (cblob_part)7, &untouched) != CBLOB_OK);
    CHECK(strncmp(cblob_last_error_message(), "cblob_blob_cpu_ptr: ", 20) == 0);
    CHECK(untouched == &count);
    CHECK_ERROR(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, NULL), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strncmp(cblob_last_error_message(), "cblob_blob_mutable_cpu_ptr: ", 28) == 0);
    CHECK(strstr(cblob_last_error_message(), "out_ptr") != NULL);
    CHECK_ERROR(cblob_blob_cpu_ptr(NULL, CBLOB_PART_DATA, &untouched), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strncmp(cblob_last_error_message(), "cblob_blob_cpu_ptr: blob", 24) == 0);
    CHECK(untouched == &count);
    CHECK(cblob_blob_reshape(blob, 2, bad) != CBLOB_OK);
    CHECK(strncmp(cblob_last_error_message(), "cblob_blob_reshape: ", 20) == 0);
    CHECK_ERROR(cblob_blob_reshape(NULL, 2, same), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strncmp(cblob_last_error_message(), "cblob_blob_reshape: blob", 24) == 0);

    CHECK_OK(cblob_blob_reshape_legacy(blob, 1, 1, 2, 3)); /* a new shape: the slow path */
    CHECK_OK(cblob_blob_count_range(blob, 0, 4, &count));
    CHECK_EQ_INT(count, 6);
    CHECK_ERROR(cblob_blob_count_range(blob, 1, 0, &count), CBLOB_ERR_OUT_OF_RANGE);
    snprintf(before, sizeof before, "%s", cblob_last_error_message());
    CHECK_OK(cblob_blob_reshape_legacy(blob, 1, 1, 2, 3)); /* the same: the hot path */
    CHECK(strcmp(cblob_last_error_message(), before) == 0);
    CHECK(cblob_blob_reshape_legacy(blob, -1, 1, 2, 3) != CBLOB_OK);
    CHECK(strncmp(cblob_last_error_message(), "cblob_blob_reshape_legacy: ", 27) == 0);
    int32_t axes = 0;
    CHECK_OK(cblob_blob_num_axes(blob, &axes));
    CHECK_EQ_INT(axes, 4); /* the failed reshape changed nothing */

    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(create_fill_update_and_sum)
{
    cblob_context *ctx = NULL;
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t shape[2] = {3, 4};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, shape, &blob));
    float *data = NULL, *diff = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, (void **)&data));
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DIFF, (void **)&diff));
    for (int i = 0; i < 12; ++i) {
        data[i] = (float)i;
        diff[i] = 0.5f;
    }
    CHECK_OK(cblob_blob_update(blob));
    double asum = 0, sumsq = 0;
    CHECK_OK(cblob_blob_asum(blob, CBLOB_PART_DATA, &asum));
    CHECK_OK(cblob_blob_sumsq(blob, CBLOB_PART_DIFF, &sumsq));
    CHECK_NEAR(asum, 0.5 + 66 - 11 * 0.5 - 0.5 + 0.5, 1e-6); /* |-0.5| + sum(i - 0.5 for i=1..11) */
    CHECK_NEAR(sumsq, 12 * 0.25, 1e-9);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}
