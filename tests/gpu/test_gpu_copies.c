/* SPDX-License-Identifier: BSD-2-Clause */
/* Copies on the device through the driver's copy engines (issue 13, section 3): contiguous copies
 * (a clone or conversion to the same dtype, an identity transpose) are one cuMemcpyDtoDAsync,
 * strided ones (merges and splits) the copy_strided kernel (faster than 2D copies at every width
 * measured), and so is a transpose of long runs. The values are checked through the host. */
#include <stdint.h>

#include "gpu_support.h"

static cblob_status device_blob(cblob_context *ctx, int32_t num_axes, const int64_t *dims, float base, cblob_blob **out)
{
    cblob_status status = cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, num_axes, dims, out);
    int64_t count = 0;
    float *host = NULL;
    if (status == CBLOB_OK)
        status = cblob_blob_count(*out, &count);
    if (status == CBLOB_OK)
        status = cblob_blob_mutable_cpu_ptr(*out, CBLOB_PART_DATA, (void **)&host);
    for (int64_t i = 0; status == CBLOB_OK && i < count; ++i)
        host[i] = base + (float)i;
    void *dev = NULL;
    return status == CBLOB_OK ? cblob_blob_mutable_gpu_ptr(*out, CBLOB_PART_DATA, &dev) : status;
}

/* Element i in C order, read through the host accessor. */
static float at(cblob_blob *blob, int64_t i)
{
    const float *host = NULL;
    return cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&host) == CBLOB_OK ? host[i] : -1.0f;
}

TEST(contiguous_device_copies_use_the_copy_engine)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, 1));
    const int64_t dims[1] = {1000};
    cblob_blob *source = NULL, *clone = NULL;
    CHECK_OK(device_blob(b.ctx, 1, dims, 0.5f, &source));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_clone(source, CBLOB_DTYPE_FLOAT32, &clone));
    CHECK_COUNTER_DELTA(before, launches, 0);
    CHECK_COUNTER_DELTA(before, device_to_device, 1);
    CHECK(at(clone, 999) == 999.5f);
    cblob_blob_destroy(clone);
    cblob_blob_destroy(source);
    close_blob(&b);
}

/* Merges two blobs of rows of `left` and `right` elements along axis 1, and checks the result. */
static void merge_rows(int64_t left_cols, int64_t right_cols, uint64_t launches, uint64_t copies_2d)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, 1));
    const int64_t left_dims[2] = {40, left_cols}, right_dims[2] = {40, right_cols},
                  whole_dims[2] = {40, left_cols + right_cols};
    cblob_blob *left = NULL, *right = NULL, *whole = NULL;
    CHECK_OK(device_blob(b.ctx, 2, left_dims, 0.0f, &left));
    CHECK_OK(device_blob(b.ctx, 2, right_dims, 1000.0f, &right));
    CHECK_OK(device_blob(b.ctx, 2, whole_dims, -1.0f, &whole));
    cblob_blob *inputs[2] = {left, right};
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_merge(whole, CBLOB_PART_DATA, 1, 2, inputs));
    CHECK_COUNTER_DELTA(before, launches, launches);
    CHECK_COUNTER_DELTA(before, copies_2d, copies_2d);
    const int64_t row = 17, width = left_cols + right_cols;
    CHECK(at(whole, row * width + left_cols - 1) == (float)(row * left_cols + left_cols - 1));
    CHECK(at(whole, row * width + left_cols) == 1000.0f + (float)(row * right_cols));
    cblob_blob_destroy(whole);
    cblob_blob_destroy(right);
    cblob_blob_destroy(left);
    close_blob(&b);
}

/* Strided rows of any width go to the kernel, which beat the copy engines' 2D copies at every
 * width measured on a GPU (cuda/cuda_copy.h): wide rows (64 and 160 bytes) and narrow ones. */
TEST(strided_device_copies_of_wide_rows_use_the_kernel) { merge_rows(16, 40, 2, 0); }
TEST(strided_device_copies_of_narrow_rows_use_the_kernel) { merge_rows(3, 15, 2, 0); }

/* A transpose whose inner block is long runs the kernel too, which cuts the runs into segments:
 * faster than a 2D copy per row of runs on a GPU (codegen/ops.yaml). */
TEST(transpose_of_long_runs_uses_the_kernel)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, 1));
    const int64_t dims[3] = {4, 3, 4096};
    cblob_blob *source = NULL, *swapped = NULL;
    CHECK_OK(device_blob(b.ctx, 3, dims, 0.25f, &source));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_transposed(source, 0, 1, &swapped));
    CHECK_COUNTER_DELTA(before, launches, 1);
    CHECK_COUNTER_DELTA(before, copies_2d, 0);
    /* swapped[c][r][i] = source[r][c][i] */
    for (int64_t r = 0; r < 4; ++r)
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t i = 0; i < 4096; i += 511)
                CHECK(at(swapped, (c * 4 + r) * 4096 + i) == 0.25f + (float)((r * 3 + c) * 4096 + i));
    cblob_blob_destroy(swapped);
    cblob_blob_destroy(source);
    close_blob(&b);
}

TEST(transpose_of_many_rows_of_runs_uses_the_kernel)
{
    REQUIRE_GPU();
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, 1));
    const int64_t dims[3] = {40, 30, 1024};
    cblob_blob *source = NULL, *swapped = NULL;
    CHECK_OK(device_blob(b.ctx, 3, dims, 0.0f, &source));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_transposed(source, 0, 1, &swapped));
    CHECK_COUNTER_DELTA(before, launches, 1);
    CHECK_COUNTER_DELTA(before, copies_2d, 0);
    CHECK(at(swapped, (7 * 40 + 39) * 1024 + 1000) == (float)((39 * 30 + 7) * 1024 + 1000));
    cblob_blob_destroy(swapped);
    cblob_blob_destroy(source);
    close_blob(&b);
}
