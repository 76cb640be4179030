/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers for the conformance suite: one test per item of conformance.md section 1 (Caffe's Blob
 * and SyncedMemory) that applies on the CPU, and one per deliberate difference from Caffe. Tests
 * go through the public header and the shared library only, as a user would.
 *
 * Where Caffe is fatal, cblob must fail with a status and a message and change nothing:
 * CHECK_REJECTED asserts all three, comparing each blob's shape, capacity, heads, host pointers
 * and bytes before and after the call. */
#ifndef CBLOB_TESTS_CONFORMANCE_H
#define CBLOB_TESTS_CONFORMANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "harness.h"

#define DTYPE_COUNT 4
extern const cblob_dtype all_dtypes[DTYPE_COUNT];
const char *dtype_label(cblob_dtype dtype);
size_t dtype_size(cblob_dtype dtype);

/* A context, or NULL after reporting why (the caller CHECKs it). */
cblob_context *context_new(void);
/* A blob of the given shape, or NULL after reporting why. */
cblob_blob *blob_new(cblob_context *context, cblob_dtype dtype, int32_t num_axes, const int64_t *dims);
#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int32_t)(sizeof DIMS(__VA_ARGS__) / sizeof(int64_t)))
/* blob_new(ctx, dtype, 2, DIMS(3, 2)) without counting the dims by hand. */
#define BLOB(context, dtype, ...) blob_new((context), (dtype), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* Element i of a host buffer of the given dtype, as a double (exact for the small values used). */
double value_at(const void *base, cblob_dtype dtype, int64_t i);
void value_set(void *base, cblob_dtype dtype, int64_t i, double value);

/* Writes first + i into the first n elements of a part through its mutable host pointer. */
bool fill_part(cblob_blob *blob, cblob_part part, int64_t n, double first);
/* Whether the first n elements of a part read first + i through its read-only host pointer. */
bool part_holds(cblob_blob *blob, cblob_part part, int64_t n, double first);
/* Whether the first n elements of a part are all `value`. */
bool part_all(cblob_blob *blob, cblob_part part, int64_t n, double value);

/* Getters that report and return a sentinel on failure, for use inside CHECKs. */
int64_t count_of(const cblob_blob *blob);
int64_t capacity_of(const cblob_blob *blob);
cblob_head head_of(const cblob_blob *blob, cblob_part part);
const void *host_ptr(cblob_blob *blob, cblob_part part);
/* Whether the blob's shape is exactly dims. */
bool shape_is(const cblob_blob *blob, int32_t num_axes, const int64_t *dims);
#define CHECK_SHAPE(blob, ...) CHECK(shape_is((blob), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__)))
#define CHECK_SCALAR_SHAPE(blob) CHECK(shape_is((blob), 0, NULL))

/* Whether the thread's last error message is "<function>: <text>" with a non-empty text, the
 * function being the one `call_text` (a stringified call) names. */
bool message_from(const char *call_text);

/* Everything observable about a blob without moving a head: what a failed call must leave as it
 * was. Bytes are read only where the host copy is current. */
typedef struct blob_state {
    cblob_dtype dtype;
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count;
    int64_t capacity;
    cblob_head head[2];
    const void *ptr[2];
    unsigned char *bytes[2];
    size_t byte_count;
} blob_state;

bool state_take(cblob_blob *blob, blob_state *state);
/* Reports each difference; frees the snapshot. */
bool state_unchanged(cblob_blob *blob, blob_state *state, const char *label);

/* The call fails with `expected`, a message of its own, and leaves every listed blob as it was. */
#define CHECK_REJECTED(call, expected, ...) \
    do { \
        cblob_blob *const rej_blobs_[] = {__VA_ARGS__}; \
        blob_state rej_before_[sizeof rej_blobs_ / sizeof rej_blobs_[0]]; \
        for (size_t rej_i_ = 0; rej_i_ < sizeof rej_blobs_ / sizeof rej_blobs_[0]; ++rej_i_) \
            CHECK(state_take(rej_blobs_[rej_i_], &rej_before_[rej_i_])); \
        const cblob_status rej_got_ = (call); \
        const bool rej_named_ = message_from(#call); \
        bool rej_same_ = true; \
        for (size_t rej_i_ = 0; rej_i_ < sizeof rej_blobs_ / sizeof rej_blobs_[0]; ++rej_i_) \
            rej_same_ = state_unchanged(rej_blobs_[rej_i_], &rej_before_[rej_i_], #__VA_ARGS__) && rej_same_; \
        CHECK_MSG(rej_got_ == (expected), "%s returned %s, expected %s (message: %s)", #call, \
                  cblob_status_name(rej_got_), cblob_status_name(expected), cblob_last_error_message()); \
        CHECK_MSG(rej_named_, "%s left no message of its own (message: \"%s\")", #call, cblob_last_error_message()); \
        CHECK_MSG(rej_same_, "%s failed but changed a blob", #call); \
    } while (0)

/* Counts the calls of a release callback; user_data points at one of these. */
typedef struct release_log {
    int calls;
    void *last_ptr;
} release_log;
void count_release(void *ptr, void *user_data);

#endif
