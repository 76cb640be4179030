/* SPDX-License-Identifier: BSD-2-Clause */
#include "conformance.h"

const cblob_dtype all_dtypes[DTYPE_COUNT] = {
    CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64, CBLOB_DTYPE_INT32, CBLOB_DTYPE_UINT32};

const char *dtype_label(cblob_dtype dtype)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return "float32";
    case CBLOB_DTYPE_FLOAT64: return "float64";
    case CBLOB_DTYPE_INT32: return "int32";
    case CBLOB_DTYPE_UINT32: return "uint32";
    default: return "?";
    }
}

size_t dtype_size(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

cblob_context *context_new(void)
{
    cblob_context *context = NULL;
    cblob_status status = cblob_context_create(&context);
    if (status != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "cblob_context_create: %s", cblob_last_error_message());
        return NULL;
    }
    return context;
}

cblob_blob *blob_new(cblob_context *context, cblob_dtype dtype, int32_t num_axes, const int64_t *dims)
{
    cblob_blob *blob = NULL;
    cblob_status status = cblob_blob_create(context, dtype, num_axes, dims, &blob);
    if (status != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "cblob_blob_create (%s, %d axes): %s", dtype_label(dtype), (int)num_axes,
                 cblob_last_error_message());
        return NULL;
    }
    return blob;
}

double value_at(const void *base, cblob_dtype dtype, int64_t i)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return ((const float *)base)[i];
    case CBLOB_DTYPE_FLOAT64: return ((const double *)base)[i];
    case CBLOB_DTYPE_INT32: return ((const int32_t *)base)[i];
    case CBLOB_DTYPE_UINT32: return ((const uint32_t *)base)[i];
    default: return -1;
    }
}

void value_set(void *base, cblob_dtype dtype, int64_t i, double value)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: ((float *)base)[i] = (float)value; break;
    case CBLOB_DTYPE_FLOAT64: ((double *)base)[i] = value; break;
    case CBLOB_DTYPE_INT32: ((int32_t *)base)[i] = (int32_t)value; break;
    case CBLOB_DTYPE_UINT32: ((uint32_t *)base)[i] = (uint32_t)value; break;
    default: break;
    }
}

static cblob_dtype dtype_of(const cblob_blob *blob)
{
    cblob_dtype dtype = 0;
    if (cblob_blob_dtype(blob, &dtype) != CBLOB_OK)
        cbt_fail(__FILE__, __LINE__, "cblob_blob_dtype: %s", cblob_last_error_message());
    return dtype;
}

bool fill_part(cblob_blob *blob, cblob_part part, int64_t n, double first)
{
    void *ptr = NULL;
    if (cblob_blob_mutable_cpu_ptr(blob, part, &ptr) != CBLOB_OK || (n > 0 && ptr == NULL)) {
        cbt_fail(__FILE__, __LINE__, "no writable host pointer to fill: %s", cblob_last_error_message());
        return false;
    }
    const cblob_dtype dtype = dtype_of(blob);
    for (int64_t i = 0; i < n; ++i)
        value_set(ptr, dtype, i, first + (double)i);
    return true;
}

bool part_holds(cblob_blob *blob, cblob_part part, int64_t n, double first)
{
    const void *ptr = host_ptr(blob, part);
    if (n > 0 && ptr == NULL)
        return false;
    const cblob_dtype dtype = dtype_of(blob);
    for (int64_t i = 0; i < n; ++i) {
        if (value_at(ptr, dtype, i) != first + (double)i) {
            cbt_fail(__FILE__, __LINE__, "%s element %lld is %g, expected %g", part == CBLOB_PART_DATA ? "data" : "diff",
                     (long long)i, value_at(ptr, dtype, i), first + (double)i);
            return false;
        }
    }
    return true;
}

bool part_all(cblob_blob *blob, cblob_part part, int64_t n, double value)
{
    const void *ptr = host_ptr(blob, part);
    if (n > 0 && ptr == NULL)
        return false;
    const cblob_dtype dtype = dtype_of(blob);
    for (int64_t i = 0; i < n; ++i) {
        if (value_at(ptr, dtype, i) != value) {
            cbt_fail(__FILE__, __LINE__, "%s element %lld is %g, expected %g", part == CBLOB_PART_DATA ? "data" : "diff",
                     (long long)i, value_at(ptr, dtype, i), value);
            return false;
        }
    }
    return true;
}

int64_t count_of(const cblob_blob *blob)
{
    int64_t count = -1;
    if (cblob_blob_count(blob, &count) != CBLOB_OK)
        cbt_fail(__FILE__, __LINE__, "cblob_blob_count: %s", cblob_last_error_message());
    return count;
}

int64_t capacity_of(const cblob_blob *blob)
{
    int64_t capacity = -1;
    if (cblob_blob_capacity(blob, &capacity) != CBLOB_OK)
        cbt_fail(__FILE__, __LINE__, "cblob_blob_capacity: %s", cblob_last_error_message());
    return capacity;
}

cblob_head head_of(const cblob_blob *blob, cblob_part part)
{
    cblob_head head = -1;
    if (cblob_blob_head(blob, part, &head) != CBLOB_OK)
        cbt_fail(__FILE__, __LINE__, "cblob_blob_head: %s", cblob_last_error_message());
    return head;
}

const void *host_ptr(cblob_blob *blob, cblob_part part)
{
    const void *ptr = NULL;
    if (cblob_blob_cpu_ptr(blob, part, &ptr) != CBLOB_OK)
        cbt_fail(__FILE__, __LINE__, "cblob_blob_cpu_ptr: %s", cblob_last_error_message());
    return ptr;
}

bool shape_is(const cblob_blob *blob, int32_t num_axes, const int64_t *dims)
{
    int64_t got[CBLOB_MAX_AXES];
    int32_t got_axes = -1;
    if (cblob_blob_shape(blob, CBLOB_MAX_AXES, got, &got_axes) != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "cblob_blob_shape: %s", cblob_last_error_message());
        return false;
    }
    if (got_axes != num_axes || (num_axes > 0 && memcmp(got, dims, (size_t)num_axes * sizeof dims[0]) != 0)) {
        char text[256];
        size_t length = 0;
        cblob_blob_shape_string(blob, text, sizeof text, &length);
        cbt_fail(__FILE__, __LINE__, "the shape is %s, expected %d axes", text, (int)num_axes);
        return false;
    }
    return true;
}

bool message_from(const char *call_text)
{
    const char *message = cblob_last_error_message();
    size_t name_length = strcspn(call_text, " (");
    return strncmp(message, call_text, name_length) == 0 && strncmp(message + name_length, ": ", 2) == 0 &&
           message[name_length + 2] != '\0';
}

/* Reads a part's bytes only where that moves nothing: the host copy is current. */
static bool host_is_current(cblob_head head)
{
    return head == CBLOB_HEAD_AT_CPU || head == CBLOB_HEAD_SYNCED;
}

bool state_take(cblob_blob *blob, blob_state *state)
{
    memset(state, 0, sizeof *state);
    if (cblob_blob_dtype(blob, &state->dtype) != CBLOB_OK ||
        cblob_blob_shape(blob, CBLOB_MAX_AXES, state->dims, &state->num_axes) != CBLOB_OK ||
        cblob_blob_count(blob, &state->count) != CBLOB_OK || cblob_blob_capacity(blob, &state->capacity) != CBLOB_OK) {
        cbt_fail(__FILE__, __LINE__, "cannot read the blob's state: %s", cblob_last_error_message());
        return false;
    }
    state->byte_count = (size_t)state->capacity * dtype_size(state->dtype);
    for (int p = 0; p < 2; ++p) {
        state->head[p] = head_of(blob, p);
        if (!host_is_current(state->head[p]))
            continue;
        state->ptr[p] = host_ptr(blob, p);
        if (state->ptr[p] == NULL)
            continue;
        state->bytes[p] = malloc(state->byte_count);
        if (state->bytes[p] == NULL) {
            cbt_fail(__FILE__, __LINE__, "no memory for a snapshot of %zu bytes", state->byte_count);
            return false;
        }
        memcpy(state->bytes[p], state->ptr[p], state->byte_count);
    }
    return true;
}

bool state_unchanged(cblob_blob *blob, blob_state *before, const char *label)
{
    blob_state after;
    bool same = state_take(blob, &after);
    static const char *const parts[2] = {"data", "diff"};
    if (same && (after.dtype != before->dtype || after.num_axes != before->num_axes ||
                 memcmp(after.dims, before->dims, sizeof after.dims) != 0 || after.count != before->count)) {
        cbt_fail(__FILE__, __LINE__, "%s: the shape changed", label);
        same = false;
    }
    if (same && after.capacity != before->capacity) {
        cbt_fail(__FILE__, __LINE__, "%s: capacity changed from %lld to %lld", label, (long long)before->capacity,
                 (long long)after.capacity);
        same = false;
    }
    for (int p = 0; same && p < 2; ++p) {
        if (after.head[p] != before->head[p]) {
            cbt_fail(__FILE__, __LINE__, "%s: the %s head changed from %d to %d", label, parts[p], (int)before->head[p],
                     (int)after.head[p]);
            same = false;
        } else if (after.ptr[p] != before->ptr[p]) {
            cbt_fail(__FILE__, __LINE__, "%s: the %s host pointer changed", label, parts[p]);
            same = false;
        } else if (before->bytes[p] != NULL && memcmp(after.bytes[p], before->bytes[p], before->byte_count) != 0) {
            cbt_fail(__FILE__, __LINE__, "%s: the %s bytes changed", label, parts[p]);
            same = false;
        }
    }
    for (int p = 0; p < 2; ++p) {
        free(before->bytes[p]);
        free(after.bytes[p]);
        before->bytes[p] = NULL;
    }
    return same;
}

void count_release(void *ptr, void *user_data)
{
    release_log *log = user_data;
    log->calls += 1;
    log->last_ptr = ptr;
}
