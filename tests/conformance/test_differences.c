/* SPDX-License-Identifier: BSD-2-Clause */
/* The deliberate differences from Caffe (DESIGN.md "Deliberate differences from Caffe" and the
 * table in docs/differences.md), one test each: what cblob does, and in a comment what Caffe does instead.
 *
 * Not here: "Caffe's ToProto can leave stale fields in a reused message; cblob always writes a
 * fresh message" is a proto difference, tested with the formats issue. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "conformance.h"

/* Caffe: bad input trips a CHECK or LOG(FATAL), which aborts the process.
 * cblob: every such case returns a status and a message of its own, changes nothing, and
 * prints nothing (stderr is captured around the calls to check that). */
TEST(difference_bad_input_returns_an_error_and_changes_nothing)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    cblob_blob *blob = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 2, 3);
    cblob_blob *other = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 7);
    cblob_blob *integers = BLOB(ctx, CBLOB_DTYPE_INT32, 2, 3);
    cblob_blob *fresh = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 2, 3);
    CHECK(blob != NULL && other != NULL && integers != NULL && fresh != NULL);
    CHECK(fill_part(blob, CBLOB_PART_DATA, 6, 1));
    CHECK(fill_part(blob, CBLOB_PART_DIFF, 6, 10));
    CHECK(fill_part(other, CBLOB_PART_DATA, 7, 20));
    int64_t ones[CBLOB_MAX_AXES + 1];
    for (int i = 0; i <= CBLOB_MAX_AXES; ++i)
        ones[i] = 1;

    fflush(stderr);
    const int saved_stderr = dup(STDERR_FILENO);
    char path[] = "/tmp/cblob_conformance_stderr_XXXXXX";
    const int capture = mkstemp(path);
    CHECK(saved_stderr >= 0 && capture >= 0);
    unlink(path);
    dup2(capture, STDERR_FILENO);

    /* Each is fatal in Caffe (conformance.md item in brackets). */
    int64_t out64 = -1;
    int32_t out32 = -1;
    double sum = -1;
    const struct {
        const char *call;
        cblob_status got, expected;
    } cases[] = {
#define CASE(call, expected) {#call, (call), (expected)}
        CASE(cblob_blob_reshape(blob, CBLOB_MAX_AXES + 1, ones), CBLOB_ERR_SHAPE),           /* [1] */
        CASE(cblob_blob_reshape(blob, 2, DIMS(3, -1)), CBLOB_ERR_SHAPE),                     /* [9] */
        CASE(cblob_blob_reshape(blob, 2, DIMS(INT64_MAX, 2)), CBLOB_ERR_OVERFLOW),           /* [10] */
        CASE(cblob_blob_count_range(blob, 2, 1, &out64), CBLOB_ERR_OUT_OF_RANGE),            /* [23] */
        CASE(cblob_blob_canonical_axis(blob, 2, &out32), CBLOB_ERR_OUT_OF_RANGE),            /* [24] */
        CASE(cblob_blob_legacy_shape(blob, 4, &out64), CBLOB_ERR_OUT_OF_RANGE),              /* [25] */
        CASE(cblob_blob_offset(blob, 3, DIMS(0, 0, 0), &out64), CBLOB_ERR_OUT_OF_RANGE),     /* [29] */
        CASE(cblob_blob_set_cpu_data(blob, NULL, 24, NULL, NULL), CBLOB_ERR_INVALID_ARGUMENT), /* [31] */
        CASE(cblob_blob_share(blob, other, CBLOB_PART_DATA), CBLOB_ERR_SHAPE),               /* [34] */
        CASE(cblob_blob_copy_from(blob, other, CBLOB_PART_DATA, 0), CBLOB_ERR_SHAPE),        /* [35] */
        CASE(cblob_blob_update(fresh), CBLOB_ERR_STATE),                                     /* [39] */
        CASE(cblob_blob_asum(integers, CBLOB_PART_DATA, &sum), CBLOB_ERR_NOT_IMPLEMENTED),   /* [43] */
#undef CASE
    };

    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    const off_t printed = lseek(capture, 0, SEEK_END);
    close(capture);
    CHECK_MSG(printed == 0, "the library printed %lld bytes on stderr", (long long)printed);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        CHECK_MSG(cases[i].got == cases[i].expected, "%s returned %s, expected %s", cases[i].call,
                  cblob_status_name(cases[i].got), cblob_status_name(cases[i].expected));
    CHECK(out64 == -1 && out32 == -1 && sum == -1);

    /* One at a time, each with its own message and nothing changed. */
    CHECK_REJECTED(cblob_blob_reshape(blob, CBLOB_MAX_AXES + 1, ones), CBLOB_ERR_SHAPE, blob);
    CHECK_REJECTED(cblob_blob_share(blob, other, CBLOB_PART_DIFF), CBLOB_ERR_SHAPE, blob, other);
    CHECK_REJECTED(cblob_blob_copy_from(blob, other, CBLOB_PART_DATA, 0), CBLOB_ERR_SHAPE, blob, other);
    CHECK_REJECTED(cblob_blob_update(fresh), CBLOB_ERR_STATE, fresh);
    CHECK_REJECTED(cblob_blob_scale(integers, CBLOB_PART_DIFF, 2), CBLOB_ERR_NOT_IMPLEMENTED, integers);
    CHECK(part_holds(blob, CBLOB_PART_DATA, 6, 1));
    CHECK(part_holds(blob, CBLOB_PART_DIFF, 6, 10));
    cblob_blob_destroy(blob);
    cblob_blob_destroy(other);
    cblob_blob_destroy(integers);
    cblob_blob_destroy(fresh);
    cblob_context_destroy(ctx);
}

/* Caffe: offset(n, c, h, w) accepts n == num(), c == channels(), h == height(), w == width()
 * (inclusive upper bounds) and any negative c, h or w (it tests channels() >= 0 instead of
 * c >= 0), returning offsets outside the blob.
 * cblob: every index must satisfy 0 <= index < dim. */
TEST(difference_offset_legacy_checks_every_index)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    cblob_blob *blob = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 4, 5);
    CHECK(blob != NULL);
    int64_t offset = -1;
    CHECK_OK(cblob_blob_offset_legacy(blob, 1, 2, 3, 4, &offset)); /* the last element */
    CHECK_EQ_INT(offset, 119);
    offset = -1;
    /* One past the end on each axis. */
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, 2, 0, 0, 0, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    CHECK(strstr(cblob_last_error_message(), "n = 2") != NULL);
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, 0, 3, 0, 0, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, 0, 0, 4, 0, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, 0, 0, 0, 5, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    /* Negative c, h, w (and n). */
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, 1, -1, 0, 0, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    CHECK(strstr(cblob_last_error_message(), "c = -1") != NULL);
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, 1, 0, -1, 0, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, 1, 0, 0, -1, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, -1, 0, 0, 0, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    /* Padding axes are 1 wide: only index 0 is inside them. */
    CHECK_OK(cblob_blob_reshape(blob, 2, DIMS(3, 2)));
    CHECK_REJECTED(cblob_blob_offset_legacy(blob, 0, 0, 1, 0, &offset), CBLOB_ERR_OUT_OF_RANGE, blob);
    CHECK(offset == -1);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* Caffe: dims and counts are int. Reshape(BlobShape) narrows int64 dims silently (2^32 + 3
 * becomes 3) and counts above INT_MAX abort ("blob size exceeds INT_MAX").
 * cblob: dims and counts are int64_t, kept as given; only a count whose byte size does not fit
 * a ptrdiff_t is refused, with CBLOB_ERR_OVERFLOW. */
TEST(difference_dims_are_int64)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], (int64_t)INT_MAX + 1);
        CHECK(blob != NULL);
        CHECK(count_of(blob) == (int64_t)INT_MAX + 1);
        CHECK_OK(cblob_blob_reshape(blob, 3, DIMS(1LL << 32, 3, 5)));
        CHECK(count_of(blob) == 15LL << 32);
        int64_t dim = 0;
        CHECK_OK(cblob_blob_shape_at(blob, 0, &dim));
        CHECK(dim == 1LL << 32);
        int64_t range = 0;
        CHECK_OK(cblob_blob_count_range(blob, 0, 2, &range));
        CHECK(range == 3LL << 32);
        const int64_t most = PTRDIFF_MAX / (int64_t)dtype_size(all_dtypes[d]);
        CHECK_REJECTED(cblob_blob_reshape(blob, 2, DIMS(most, 2)), CBLOB_ERR_OVERFLOW, blob);
        CHECK(strstr(cblob_last_error_message(), "overflow") != NULL);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

/* Caffe: the overflow guard runs over the dims in order until the running product is zero, so
 * {0, big, big} is accepted but {big, big, 0} aborts.
 * cblob: any shape with a zero dim has count 0 and is accepted, whatever the order. Queries on
 * such a shape must then cope with partial products that do not fit: a range that overflows is
 * CBLOB_ERR_OVERFLOW, and offsets are computed without overflowing (UBSan checks). */
TEST(difference_zero_dim_is_accepted_anywhere)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    const int64_t big = 1LL << 40;
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], big, big, 0);
        CHECK(blob != NULL);
        CHECK_EQ_INT(count_of(blob), 0);
        CHECK_SHAPE(blob, big, big, 0);
        CHECK_OK(cblob_blob_reshape(blob, 4, DIMS(INT64_MAX, 2, 0, INT64_MAX)));
        CHECK_EQ_INT(count_of(blob), 0);
        CHECK_EQ_INT(capacity_of(blob), 0);

        int64_t value = -1;
        CHECK_OK(cblob_blob_count_range(blob, 2, 4, &value));
        CHECK_EQ_INT(value, 0);
        CHECK_OK(cblob_blob_count_range(blob, 3, 4, &value));
        CHECK(value == INT64_MAX);
        value = -1;
        CHECK_REJECTED(cblob_blob_count_range(blob, 0, 2, &value), CBLOB_ERR_OVERFLOW, blob);
        CHECK(value == -1);

        /* The row-major offset of valid leading indices is 0 here: every stride before the zero
         * axis is 0. */
        CHECK_OK(cblob_blob_reshape(blob, 3, DIMS(big, big, 0)));
        CHECK_OK(cblob_blob_offset(blob, 2, DIMS(big - 1, big - 1), &value));
        CHECK_EQ_INT(value, 0);
        value = -1;
        CHECK_REJECTED(cblob_blob_offset(blob, 3, DIMS(big - 1, big - 1, 0), &value), CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK_REJECTED(cblob_blob_offset_legacy(blob, big - 1, big - 1, 0, 0, &value), CBLOB_ERR_OUT_OF_RANGE, blob);
        double element = -1;
        CHECK_REJECTED(cblob_blob_read_element(blob, CBLOB_PART_DATA, 2, DIMS(big - 1, big - 1), &element),
                       CBLOB_ERR_OUT_OF_RANGE, blob);
        CHECK(value == -1 && element == -1);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

/* Caffe: a blob that has never had elements has no SyncedMemory; cpu_data and the mutable
 * accessors abort, Update dereferences NULL, and CopyFrom of such blobs crashes.
 * cblob: its pointers are NULL, its sums 0, update and scale do nothing, and copies of it
 * succeed and copy nothing. */
TEST(difference_blob_without_elements_is_usable)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        const bool is_float = dtype == CBLOB_DTYPE_FLOAT32 || dtype == CBLOB_DTYPE_FLOAT64;
        cblob_blob *empty = NULL, *zero = NULL;
        CHECK_OK(cblob_blob_create_empty(ctx, dtype, &empty));
        zero = BLOB(ctx, dtype, 4, 0);
        CHECK(zero != NULL);
        cblob_blob *const blobs[2] = {empty, zero};
        for (int b = 0; b < 2; ++b) {
            cblob_blob *blob = blobs[b];
            for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
                const void *ro = &ro;
                void *rw = &rw;
                CHECK_OK(cblob_blob_cpu_ptr(blob, part, &ro));
                CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, part, &rw));
                CHECK(ro == NULL && rw == NULL);
                if (is_float) {
                    double sum = -1;
                    CHECK_OK(cblob_blob_asum(blob, part, &sum));
                    CHECK(sum == 0);
                    sum = -1;
                    CHECK_OK(cblob_blob_sumsq(blob, part, &sum));
                    CHECK(sum == 0);
                    CHECK_OK(cblob_blob_scale(blob, part, 2));
                }
                CHECK_EQ_INT(head_of(blob, part), CBLOB_HEAD_UNINITIALIZED);
            }
            if (is_float)
                CHECK_OK(cblob_blob_update(blob));
            CHECK_EQ_INT(capacity_of(blob), 0);
        }
        CHECK_OK(cblob_blob_copy_from(empty, zero, CBLOB_PART_DATA, 1));
        CHECK_SHAPE(empty, 4, 0);
        CHECK_OK(cblob_blob_copy_from(zero, empty, CBLOB_PART_DIFF, 0));
        CHECK_EQ_INT(capacity_of(empty), 0);
        CHECK_EQ_INT(capacity_of(zero), 0);

        /* Copying one into a blob with elements (with reshape) empties its shape, keeps its storage. */
        cblob_blob *full = BLOB(ctx, dtype, 3);
        CHECK(full != NULL);
        CHECK(fill_part(full, CBLOB_PART_DATA, 3, 1));
        CHECK_OK(cblob_blob_copy_from(full, zero, CBLOB_PART_DATA, 1));
        CHECK_EQ_INT(count_of(full), 0);
        CHECK_EQ_INT(capacity_of(full), 3);
        CHECK_OK(cblob_blob_reshape(full, 1, DIMS(3)));
        CHECK(part_holds(full, CBLOB_PART_DATA, 3, 1));
        cblob_blob_destroy(full);
        cblob_blob_destroy(empty);
        cblob_blob_destroy(zero);
    }
    cblob_context_destroy(ctx);
}

/* Caffe: set_cpu_data on a blob whose storage is not exactly count elements (after a shrinking
 * reshape) replaces data and diff with storage of count elements but leaves capacity_ at the
 * old, larger value, so a later reshape up to it reuses storage too small for it.
 * cblob: it replaces both as Caffe does and reports the new capacity (count); a later reshape
 * back up allocates. */
TEST(difference_set_cpu_data_updates_capacity)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        cblob_blob *blob = BLOB(ctx, dtype, 10);
        CHECK(blob != NULL);
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(4)));
        CHECK_EQ_INT(capacity_of(blob), 10);
        double buffer[4];
        for (int i = 0; i < 4; ++i)
            value_set(buffer, dtype, i, 1 + i);
        CHECK_OK(cblob_blob_set_cpu_data(blob, buffer, 4 * dtype_size(dtype), NULL, NULL));
        CHECK_EQ_INT(capacity_of(blob), 4);
        /* Growing back to 10 elements needs fresh storage, not the 4-element buffer. */
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(10)));
        CHECK_EQ_INT(capacity_of(blob), 10);
        CHECK_EQ_INT(head_of(blob, CBLOB_PART_DATA), CBLOB_HEAD_UNINITIALIZED);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 10, 5)); /* ASan: a write past `buffer` would be reported */
        CHECK(host_ptr(blob, CBLOB_PART_DATA) != buffer);
        CHECK(value_at(buffer, dtype, 3) == 4);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

/* Caffe: set_cpu_data takes a bare pointer, trusts it to hold count elements, and never tells
 * the caller when it stops using it.
 * cblob: it also takes the buffer's size, refused when it cannot hold count elements, and an
 * optional release callback called exactly once, with the buffer and user_data, when cblob lets
 * go of it. A larger buffer is fine. */
TEST(difference_set_cpu_data_takes_size_and_release)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        const cblob_dtype dtype = all_dtypes[d];
        const size_t bytes = 6 * dtype_size(dtype);
        double buffer[8];
        release_log log = {0, NULL};
        cblob_blob *blob = BLOB(ctx, dtype, 2, 3);
        CHECK(blob != NULL);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 6, 1));
        CHECK_REJECTED(cblob_blob_set_cpu_data(blob, buffer, bytes - 1, count_release, &log),
                       CBLOB_ERR_INVALID_ARGUMENT, blob);
        CHECK(strstr(cblob_last_error_message(), "size_bytes") != NULL);
        CHECK_REJECTED(cblob_blob_set_cpu_data(blob, buffer, 0, count_release, &log), CBLOB_ERR_INVALID_ARGUMENT,
                       blob);
        CHECK_EQ_INT(log.calls, 0);
        CHECK_OK(cblob_blob_set_cpu_data(blob, buffer, sizeof buffer, count_release, &log));
        CHECK(host_ptr(blob, CBLOB_PART_DATA) == buffer);
        CHECK_EQ_INT(capacity_of(blob), 6);
        cblob_blob_destroy(blob);
        CHECK_EQ_INT(log.calls, 1);
        CHECK(log.last_ptr == buffer);
    }
    cblob_context_destroy(ctx);
}

/* Caffe: no release callback (above).
 * cblob: each hand-over of a buffer is released once. Handing the buffer in use back with the
 * same callback and user_data continues that hand-over; with another callback or user_data it
 * ends the first one, whose callback runs then, and the buffer stays in use under the second. */
TEST(difference_set_cpu_data_releases_each_hand_over_once)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    float buffer[6] = {1, 2, 3, 4, 5, 6};
    release_log first = {0, NULL}, second = {0, NULL};
    cblob_blob *blob = BLOB(ctx, CBLOB_DTYPE_FLOAT32, 6);
    CHECK(blob != NULL);
    CHECK_OK(cblob_blob_set_cpu_data(blob, buffer, sizeof buffer, count_release, &first));
    CHECK_OK(cblob_blob_set_cpu_data(blob, buffer, sizeof buffer, count_release, &first));
    CHECK_EQ_INT(first.calls, 0);
    CHECK_OK(cblob_blob_set_cpu_data(blob, buffer, sizeof buffer, count_release, &second));
    CHECK_EQ_INT(first.calls, 1);
    CHECK(first.last_ptr == buffer);
    CHECK_EQ_INT(second.calls, 0);
    CHECK(host_ptr(blob, CBLOB_PART_DATA) == buffer);
    CHECK(part_holds(blob, CBLOB_PART_DATA, 6, 1));
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(first.calls, 1);
    CHECK_EQ_INT(second.calls, 1);
    CHECK(second.last_ptr == buffer);
    cblob_context_destroy(ctx);
}

/* Caffe: set_cpu_data frees the SyncedMemory's owned host buffer and then stores the pointer it
 * was given, so passing back the blob's own buffer (from mutable_cpu_data) leaves it using freed
 * memory.
 * cblob: a pointer into a buffer the blob allocated, data or diff, is refused with
 * CBLOB_ERR_INVALID_ARGUMENT and nothing changes (ASan reports the use after free otherwise). */
TEST(difference_set_cpu_data_refuses_the_blobs_own_buffer)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    cblob_blob *blob = BLOB(ctx, CBLOB_DTYPE_FLOAT64, 8);
    CHECK(blob != NULL);
    CHECK(fill_part(blob, CBLOB_PART_DATA, 8, 1));
    CHECK(fill_part(blob, CBLOB_PART_DIFF, 8, 20));
    void *own_data = NULL, *own_diff = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &own_data));
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DIFF, &own_diff));
    release_log log = {0, NULL};
    CHECK_REJECTED(cblob_blob_set_cpu_data(blob, own_data, 8 * sizeof(double), count_release, &log),
                   CBLOB_ERR_INVALID_ARGUMENT, blob);
    CHECK(strstr(cblob_last_error_message(), "own data buffer") != NULL);
    CHECK_REJECTED(cblob_blob_set_cpu_data(blob, own_diff, 8 * sizeof(double), NULL, NULL),
                   CBLOB_ERR_INVALID_ARGUMENT, blob);
    /* Also a pointer inside it, after a shrinking reshape (where the storage would be replaced
     * first). */
    CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(4)));
    CHECK_REJECTED(cblob_blob_set_cpu_data(blob, (double *)own_data + 4, 4 * sizeof(double), count_release, &log),
                   CBLOB_ERR_INVALID_ARGUMENT, blob);
    CHECK_EQ_INT(log.calls, 0);
    /* A buffer of the caller's is still taken. */
    double outside[4] = {0};
    CHECK_OK(cblob_blob_set_cpu_data(blob, outside, sizeof outside, NULL, NULL));
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(log.calls, 0);
    cblob_context_destroy(ctx);
}

/* Caffe: ShareData swaps in the other blob's SyncedMemory but keeps this blob's capacity_, so
 * after sharing a smaller memory a reshape up to the old capacity does not reallocate and runs
 * past the shared memory.
 * cblob: capacity is what the blob's storage holds, so such a reshape gives the blob fresh
 * storage instead (and ends the sharing). */
TEST(difference_share_capacity_is_the_shared_storage)
{
    cblob_context *ctx = context_new();
    CHECK(ctx != NULL);
    for (int d = 0; d < DTYPE_COUNT; ++d) {
        cblob_blob *small = BLOB(ctx, all_dtypes[d], 4);
        cblob_blob *blob = BLOB(ctx, all_dtypes[d], 12);
        CHECK(small != NULL && blob != NULL);
        CHECK(fill_part(small, CBLOB_PART_DATA, 4, 1));
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(4)));
        CHECK_EQ_INT(capacity_of(blob), 12);
        CHECK_OK(cblob_blob_share(blob, small, CBLOB_PART_DATA));
        CHECK_EQ_INT(capacity_of(blob), 4);
        CHECK_OK(cblob_blob_reshape(blob, 1, DIMS(12)));
        CHECK_EQ_INT(capacity_of(blob), 12);
        CHECK(fill_part(blob, CBLOB_PART_DATA, 12, 100)); /* ASan: writing 12 into 4 would be reported */
        CHECK(part_holds(small, CBLOB_PART_DATA, 4, 1));
        cblob_blob_destroy(small);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

typedef struct mode_probe {
    cblob_context *context;
    cblob_blob *target, *source;
    cblob_mode mode;
    cblob_status mode_status, copy_status;
} mode_probe;

static void *probe_mode(void *arg)
{
    mode_probe *probe = arg;
    probe->mode_status = cblob_context_mode(probe->context, &probe->mode);
    probe->copy_status = cblob_blob_copy_from(probe->target, probe->source, CBLOB_PART_DATA, 0);
    return NULL;
}

/* Caffe: Caffe::mode() is a thread-specific singleton: every thread starts in CPU mode and a
 * mode set in one thread is not seen by another.
 * cblob: the mode lives in a context handle that every blob holds (and keeps alive): any
 * thread working with the context's blobs sees its mode, and two contexts are independent. */
TEST(difference_mode_lives_in_a_context)
{
    cblob_context *ctx = context_new();
    cblob_context *other = context_new();
    CHECK(ctx != NULL && other != NULL);
    /* On a machine with a GPU the context switches and other threads see GPU mode; without one
     * the switch is refused and it stays CPU. Either way the thread sees the context's mode. */
    const cblob_mode expected = cblob_context_set_mode(ctx, CBLOB_MODE_GPU) == CBLOB_OK ? CBLOB_MODE_GPU : CBLOB_MODE_CPU;
    cblob_mode other_mode = -1;
    CHECK_OK(cblob_context_mode(other, &other_mode));
    CHECK_EQ_INT(other_mode, CBLOB_MODE_CPU);

    mode_probe probe = {ctx, BLOB(ctx, CBLOB_DTYPE_FLOAT32, 3), BLOB(ctx, CBLOB_DTYPE_FLOAT32, 3), -1, -1, -1};
    CHECK(probe.target != NULL && probe.source != NULL);
    CHECK(fill_part(probe.source, CBLOB_PART_DATA, 3, 4));
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, probe_mode, &probe) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_OK(probe.mode_status);
    CHECK_EQ_INT(probe.mode, expected);
    CHECK_OK(probe.copy_status);
    const cblob_head written = expected == CBLOB_MODE_GPU ? CBLOB_HEAD_AT_GPU : CBLOB_HEAD_AT_CPU;
    CHECK_EQ_INT(head_of(probe.target, CBLOB_PART_DATA), written);
    CHECK(part_holds(probe.target, CBLOB_PART_DATA, 3, 4));

    /* The blobs hold the context: after the caller lets go of it, they still copy by its mode
     * (ASan reports a use after free otherwise). */
    cblob_context_destroy(ctx);
    CHECK(fill_part(probe.source, CBLOB_PART_DIFF, 3, 8));
    CHECK_OK(cblob_blob_copy_from(probe.target, probe.source, CBLOB_PART_DIFF, 0));
    CHECK_EQ_INT(head_of(probe.target, CBLOB_PART_DIFF), written);
    CHECK(part_holds(probe.target, CBLOB_PART_DIFF, 3, 8));
    cblob_blob_destroy(probe.target);
    cblob_blob_destroy(probe.source);
    cblob_context_destroy(other);
}
