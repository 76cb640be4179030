/* SPDX-License-Identifier: BSD-2-Clause */
/* conformance.md 1.F: arithmetic helpers and type restrictions.
 *
 * Items that do not apply here:
 *   39-42 (the GPU halves: a head AT_GPU or SYNCED runs the math on the device and leaves the
 *      head AT_GPU) are tested with the GPU issue's test double; here: the CPU paths and the
 *      never-accessed cases.
 *   39 (no data SyncedMemory) Caffe dereferences NULL; cblob's blob that never had elements has
 *      nothing to update and succeeds: difference_blob_without_elements_is_usable.
 *   43 (FromProto / ToProto) belongs to the formats issue's tests. */
#include <math.h>

#include "conformance.h"

static const cblob_dtype float_dtypes[2] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64};

TEST(caffe_1F_39_update_subtracts_diff_from_data)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < 2; ++d) {
        cblob_blob *blob = BLOB(ctx, float_dtypes[d], 3, 4);
        CHECK(blob != NULL);

        /* Data never accessed: "Syncedmem not initialized", an error that changes nothing. */
        CHECK(fill_part(blob, CBLOB_PART_DIFF, 12, 1));
        CHECK_REJECTED(cblob_blob_update(blob), CBLOB_ERR_STATE, blob);

        /* Data AT_CPU: on the CPU, over count elements; data stays AT_CPU. */
        CHECK(fill_part(blob, CBLOB_PART_DATA, 12, 10));
        CHECK_OK(cblob_blob_update(blob));
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
        CHECK(part_all(blob, CBLOB_PART_DATA, 12, 9)); /* (10 + i) - (1 + i) */
        CHECK(part_holds(blob, CBLOB_PART_DIFF, 12, 1));

        /* A diff never accessed is synced to the host (zero) first: data unchanged, diff AT_CPU. */
        cblob_blob *fresh_diff = BLOB(ctx, float_dtypes[d], 5);
        CHECK(fresh_diff != NULL);
        CHECK(fill_part(fresh_diff, CBLOB_PART_DATA, 5, -2));
        CHECK_OK(cblob_blob_update(fresh_diff));
        CHECK_EQ_INT(head_of(fresh_diff, CBLOB_PART_DIFF), CBLOB_HEAD_AT_CPU);
        CHECK(part_holds(fresh_diff, CBLOB_PART_DATA, 5, -2));

        /* Only count elements, not capacity. */
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(5)));
        CHECK_OK(cblob_blob_update(blob));
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(12)));
        const void *data = host_ptr(blob, CBLOB_PART_DATA);
        for (int64_t i = 0; i < 12; ++i)
            CHECK(value_at(data, float_dtypes[d], i) == (i < 5 ? 8 - i : 9));
        cblob_blob_destroy(fresh_diff);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

/* asum (item 40) and sumsq (item 41) follow the same rules; `sum` is one of them and `of` maps an
 * element to its term. */
typedef cblob_status (*sum_fn)(const cblob_blob *, cblob_part, double *);

static bool sum_follows_caffe(cblob_context *ctx, sum_fn sum, double (*of)(double))
{
    for (int d = 0; d < 2; ++d) {
        for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
            /* Never accessed: 0, nothing allocated, head unchanged; no storage at all: 0 too. */
            cblob_blob *blob = BLOB(ctx, float_dtypes[d], 6);
            cblob_blob *empty = NULL;
            if (blob == NULL || cblob_blob_create_empty(ctx, float_dtypes[d], &empty) != CBLOB_OK)
                return false;
            double total = -1;
            if (sum(blob, part, &total) != CBLOB_OK || total != 0 ||
                head_of(blob, part) != CBLOB_HEAD_UNINITIALIZED) {
                cbt_fail(__FILE__, __LINE__, "never accessed: %g, head %d", total, (int)head_of(blob, part));
                return false;
            }
            total = -1;
            if (sum(empty, part, &total) != CBLOB_OK || total != 0) {
                cbt_fail(__FILE__, __LINE__, "no storage: %g", total);
                return false;
            }
            /* AT_CPU: over count elements of -3 + i (negative values too), head unchanged. */
            if (!fill_part(blob, part, 6, -3))
                return false;
            if (cblob_blob_reshape(blob, 1, DIMS(4)) != CBLOB_OK) /* only -3 .. 0 count */
                return false;
            double expected = 0;
            for (int i = 0; i < 4; ++i)
                expected += of(-3 + i);
            if (sum(blob, part, &total) != CBLOB_OK || total != expected ||
                head_of(blob, part) != CBLOB_HEAD_AT_CPU || head_of(blob, 1 - part) != CBLOB_HEAD_UNINITIALIZED) {
                cbt_fail(__FILE__, __LINE__, "at cpu: %g, expected %g", total, expected);
                return false;
            }
            cblob_blob_destroy(empty);
            cblob_blob_destroy(blob);
        }
    }
    return true;
}

static double absolute(double x)
{
    return fabs(x);
}

static double square(double x)
{
    return x * x;
}

TEST(caffe_1F_40_asum)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    CHECK(sum_follows_caffe(ctx, cblob_blob_asum, absolute));
    cblob_context_destroy(ctx);
}

TEST(caffe_1F_41_sumsq)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    CHECK(sum_follows_caffe(ctx, cblob_blob_sumsq, square));
    cblob_context_destroy(ctx);
}

TEST(caffe_1F_42_scale)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < 2; ++d) {
        for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
            cblob_blob *blob = BLOB(ctx, float_dtypes[d], 6);
            cblob_blob *empty = NULL;
            CHECK(blob != NULL);
            CHECK_OK(cblob_blob_create_empty(ctx, float_dtypes[d], &empty));
            /* Never accessed and no storage: nothing happens, nothing is allocated. */
            CHECK_OK(cblob_blob_scale(blob, part, 3));
            CHECK_EQ_INT(head_of(blob, part), CBLOB_HEAD_UNINITIALIZED);
            CHECK_OK(cblob_blob_scale(empty, part, 3));
            CHECK_EQ_INT(head_of(empty, part), CBLOB_HEAD_UNINITIALIZED);

            /* AT_CPU: x = s * x over count elements; head AT_CPU; the other part untouched. */
            CHECK(fill_part(blob, part, 6, 1));
            CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(4)));
            CHECK_OK(cblob_blob_scale(blob, part, -0.5));
            CHECK_EQ_INT(head_of(blob, part), CBLOB_HEAD_AT_CPU);
            CHECK_EQ_INT(head_of(blob, 1 - part), CBLOB_HEAD_UNINITIALIZED);
            CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(6)));
            const void *x = host_ptr(blob, part);
            for (int64_t i = 0; i < 6; ++i)
                CHECK(value_at(x, float_dtypes[d], i) == (i < 4 ? -0.5 * (double)(1 + i) : (double)(1 + i)));
            CHECK_OK(cblob_blob_scale(blob, part, 0));
            CHECK(part_all(blob, part, 6, 0));
            cblob_blob_destroy(empty);
            cblob_blob_destroy(blob);
        }
    }
    cblob_context_destroy(ctx);
}

/* Caffe's Blob<int> and Blob<unsigned int> abort with "Not Implemented Yet" in Update, asum_*,
 * sumsq_* and scale_*; cblob returns CBLOB_ERR_NOT_IMPLEMENTED whatever state the memory is in
 * (no storage, never accessed, on the host) and changes nothing. Everything else works for
 * them: the other tests of this suite run over all four dtypes. */
TEST(caffe_1F_43_integer_math_is_not_implemented)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    const cblob_dtype int_dtypes[2] = {CBLOB_DTYPE_INT32, CBLOB_DTYPE_UINT32};
    for (int d = 0; d < 2; ++d) {
        cblob_blob *empty = NULL, *fresh = NULL, *written = NULL;
        CHECK_OK(cblob_blob_create_empty(ctx, int_dtypes[d], &empty));
        fresh = BLOB(ctx, int_dtypes[d], 2, 3);
        written = BLOB(ctx, int_dtypes[d], 2, 3);
        CHECK(fresh != NULL && written != NULL);
        CHECK(fill_part(written, CBLOB_PART_DATA, 6, 1));
        CHECK(fill_part(written, CBLOB_PART_DIFF, 6, 1));
        cblob_blob *const blobs[3] = {empty, fresh, written};
        for (int b = 0; b < 3; ++b) {
            cblob_blob *blob = blobs[b];
            CHECK_REJECTED(cblob_blob_update(blob), CBLOB_ERR_NOT_IMPLEMENTED, blob);
            for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
                double sum = 1234;
                CHECK_REJECTED(cblob_blob_asum(blob, part, &sum), CBLOB_ERR_NOT_IMPLEMENTED, blob);
                CHECK_REJECTED(cblob_blob_sumsq(blob, part, &sum), CBLOB_ERR_NOT_IMPLEMENTED, blob);
                CHECK(sum == 1234);
                CHECK_REJECTED(cblob_blob_scale(blob, part, 2), CBLOB_ERR_NOT_IMPLEMENTED, blob);
            }
        }
        CHECK(strstr(cblob_last_error_message(), dtype_label(int_dtypes[d])) != NULL);
        CHECK(part_holds(written, CBLOB_PART_DATA, 6, 1));
        cblob_blob_destroy(empty);
        cblob_blob_destroy(fresh);
        cblob_blob_destroy(written);
    }
    cblob_context_destroy(ctx);
}
