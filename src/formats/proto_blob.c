/* SPDX-License-Identifier: BSD-2-Clause */
#include "proto_blob.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caffe_fields.h"
#include "status.h"
#include "threads.h"

/* "legacy 1 3 32 32" or "shape 2 3" (as the file has it, for messages). */
static void describe_dims(const cb_blob_layout *layout, char *text, size_t size)
{
    size_t used = 0;
    const bool legacy = cb_blob_layout_has_legacy(layout);
    const int32_t n = legacy ? 4 : (layout->num_dims < CBLOB_MAX_AXES ? layout->num_dims : CBLOB_MAX_AXES);
    int written = snprintf(text, size, "%s", legacy ? "legacy num/channels/height/width" : "shape");
    used = written > 0 ? (size_t)written : 0;
    for (int32_t i = 0; i < n && used < size; ++i) {
        written = snprintf(text + used, size - used, " %" PRId64, legacy ? layout->legacy[i] : layout->dims[i]);
        used += written > 0 ? (size_t)written : 0;
    }
    if (!legacy && n == 0 && used < size)
        snprintf(text + used, size - used, " () (a scalar)");
}

/* ---- load (FromProto) ----------------------------------------------------------------------- */

/* The values of one value field, piece by piece as the input holds them: a packed field's
 * payload whole, an unpacked element alone. The layout was scanned, so the walk cannot fail. */
typedef cblob_status (*cb_piece_fn)(void *context, const uint8_t *bytes, int64_t count);

static cblob_status for_each_piece(const uint8_t *input, const cb_blob_layout *layout, cb_blob_values which,
                                   cb_piece_fn piece, void *context)
{
    const size_t element = cb_blob_value_is_double(which) ? 8 : 4;
    cb_wire wire = cb_wire_range(input, layout->offset, layout->length, NULL);
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (cb_wire_at_end(&field))
            return CBLOB_OK;
        if (field.number == cb_blob_value_number(which))
            CB_TRY(piece(context, input + field.payload, (int64_t)(field.length / element)));
    }
}

/* Element i of little-endian values on the wire, as double (the wire is not aligned). */
static double wire_value(const uint8_t *bytes, bool is_double, int64_t i)
{
    if (is_double) {
        uint64_t bits = 0;
        for (int b = 7; b >= 0; --b)
            bits = bits << 8 | bytes[i * 8 + b];
        double value;
        memcpy(&value, &bits, sizeof value);
        return value;
    }
    uint32_t bits = 0;
    for (int b = 3; b >= 0; --b)
        bits = bits << 8 | bytes[i * 4 + b];
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* Integer blobs take values truncated toward zero, as Caffe's static_cast does; a value whose
 * truncation does not fit (or NaN) is refused instead of being undefined behaviour. */
typedef struct cb_range_check {
    const cb_dtype_info *dtype;
    bool is_double;
    const char *part;
    int64_t seen;
} cb_range_check;

static cblob_status check_piece(void *context, const uint8_t *bytes, int64_t count)
{
    cb_range_check *check = context;
    const double low = check->dtype->dtype == CBLOB_DTYPE_INT32 ? -2147483649.0 : -1.0;
    const double high = check->dtype->dtype == CBLOB_DTYPE_INT32 ? 2147483648.0 : 4294967296.0;
    for (int64_t i = 0; i < count; ++i, ++check->seen) {
        const double v = wire_value(bytes, check->is_double, i);
        if (!(v > low && v < high))
            return cb_fail(CBLOB_ERR_OVERFLOW, "%s value %" PRId64 " is %g, which does not fit in %s", check->part,
                           check->seen, v, check->dtype->name);
    }
    return CBLOB_OK;
}

/* Writes pieces of values into a part's memory, converting to the blob's dtype. */
typedef struct cb_values_writer {
    uint8_t *to;
    const cb_dtype_info *dtype;
    bool is_double; /* of the values on the wire */
    int64_t filled;
} cb_values_writer;

static bool same_dtype(const cb_dtype_info *dtype, bool is_double)
{
    return dtype->dtype == (is_double ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32);
}

static cblob_status write_piece(void *context, const uint8_t *bytes, int64_t count)
{
    cb_values_writer *writer = context;
    uint8_t *to = writer->to + (size_t)writer->filled * writer->dtype->size;
    writer->filled += count;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* The wire's values are the blob's own: the bytes go straight into its memory. */
    if (same_dtype(writer->dtype, writer->is_double)) {
        const size_t size = (size_t)count * writer->dtype->size;
        if (count > 1)
            cb_parallel_copy(to, bytes, size);
        else
            memcpy(to, bytes, size);
        return CBLOB_OK;
    }
#endif
    for (int64_t i = 0; i < count; ++i) {
        const double value = wire_value(bytes, writer->is_double, i);
        switch (writer->dtype->dtype) {
#define CB_STORE(ENUM, CTYPE, SUFFIX) \
    case ENUM: { \
        const CTYPE converted = (CTYPE)value; \
        memcpy(to + (size_t)i * sizeof(CTYPE), &converted, sizeof converted); \
        break; \
    }
            CB_FOR_EACH_DTYPE(CB_STORE)
#undef CB_STORE
        }
    }
    return CBLOB_OK;
}

/* Loads the BlobProto's values into the blob reshaped to target: decoded straight from the input
 * into the storage the blob will have (fresh storage comes zeroed from the kernel, and its pages
 * are first touched by the threads that copy into it, cb_parallel_copy), with no array in
 * between. Every step that can fail runs before anything changes. */
static cblob_status load_values(cblob_blob *blob, const uint8_t *input, const cb_blob_layout *layout,
                                const cb_shape *target)
{
    const cb_blob_values used[CB_PARTS] = {cb_blob_layout_data_field(layout), cb_blob_layout_diff_field(layout)};
    const bool present[CB_PARTS] = {layout->values[used[0]].count > 0, layout->values[used[1]].count > 0};
    if (!blob->dtype->is_float) {
        for (int part = 0; part < CB_PARTS; ++part) {
            cb_range_check check = {blob->dtype, cb_blob_value_is_double(used[part]), part == 0 ? "data" : "diff", 0};
            if (present[part])
                CB_TRY(for_each_piece(input, layout, used[part], check_piece, &check));
        }
    }
    cb_reshape plan;
    CB_TRY(cb_reshape_prepare(blob, target->num_axes, target->dims, &plan));
    /* The data head becomes AT_CPU even without values (Caffe's mutable_cpu_data). */
    CB_TRY(cb_reshape_ensure_storage(blob, &plan));
    const cb_device *pinning = cb_context_pinning_device(blob->context);
    uint8_t *destination[CB_PARTS] = {NULL, NULL};
    for (int part = 0; part < CB_PARTS; ++part) {
        if (!present[part] && part == CBLOB_PART_DIFF)
            continue; /* no diff in the proto: the diff stays as it is */
        void *base;
        cblob_status status = cb_storage_mutable_cpu(cb_reshape_storage(blob, &plan, part), pinning, &base);
        if (status != CBLOB_OK) {
            cb_reshape_abandon(&plan);
            return status;
        }
        if (present[part])
            destination[part] = (uint8_t *)base + (plan.fresh[part] != NULL ? 0 : blob->offset_bytes);
    }
    for (int part = 0; part < CB_PARTS; ++part) {
        cb_values_writer writer = {destination[part], blob->dtype, cb_blob_value_is_double(used[part]), 0};
        cblob_status status = destination[part] != NULL
                                  ? for_each_piece(input, layout, used[part], write_piece, &writer)
                                  : CBLOB_OK;
        if (status != CBLOB_OK) { /* a scanned layout cannot fail here */
            cb_reshape_abandon(&plan);
            return status;
        }
    }
    cb_reshape_commit(blob, &plan);
    return CBLOB_OK;
}

cblob_status cb_blob_load(cblob_blob *blob, const uint8_t *input, const cb_blob_layout *layout,
                          const cb_wire_path *path, bool reshape)
{
    cb_shape target;
    if (reshape) {
        CB_TRY(cb_blob_layout_check(layout, path, blob->dtype->size, &target));
    } else {
        if (!cb_blob_layout_shape_equals(layout, &blob->shape)) {
            char blob_text[CBLOB_MAX_AXES * 21 + 24], proto_text[CBLOB_MAX_AXES * 21 + 64];
            cb_shape_format(&blob->shape, blob_text, sizeof blob_text);
            describe_dims(layout, proto_text, sizeof proto_text);
            return cb_fail(CBLOB_ERR_SHAPE, "shape mismatch (reshape not set): the blob is %s but the BlobProto has %s",
                           blob_text, proto_text);
        }
        target = blob->shape;
        CB_TRY(cb_blob_layout_check_values(layout, path, &target));
    }
    cb_context_use_threads(blob->context);
    return load_values(blob, input, layout, &target);
}

/* ---- write (ToProto) ------------------------------------------------------------------------ */

/* Integer values are written as double_data/double_diff, which hold every int32 and uint32 exactly. */
static cblob_status widen_to_double(cblob_dtype dtype, int64_t count, const void *values, double **out)
{
    double *wide = malloc((size_t)count * sizeof *wide);
    if (wide == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to widen %" PRId64 " values to double", count);
    for (int64_t i = 0; i < count; ++i)
        wide[i] = dtype == CBLOB_DTYPE_INT32 ? (double)((const int32_t *)values)[i] : (double)((const uint32_t *)values)[i];
    *out = wide;
    return CBLOB_OK;
}

static cblob_status set_values(cb_blob_message *message, cblob_dtype dtype, int64_t count, const void *values,
                               cblob_part part)
{
    const bool diff = part == CBLOB_PART_DIFF;
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32:
        *(diff ? &message->proto.n_diff : &message->proto.n_data) = (size_t)count;
        *(diff ? &message->proto.diff : &message->proto.data) = (float *)values;
        return CBLOB_OK;
    case CBLOB_DTYPE_FLOAT64:
        *(diff ? &message->proto.n_double_diff : &message->proto.n_double_data) = (size_t)count;
        *(diff ? &message->proto.double_diff : &message->proto.double_data) = (double *)values;
        return CBLOB_OK;
    default: {
        double *wide = NULL;
        if (count > 0)
            CB_TRY(widen_to_double(dtype, count, values, &wide));
        message->converted[part] = wide;
        *(diff ? &message->proto.n_double_diff : &message->proto.n_double_data) = (size_t)count;
        *(diff ? &message->proto.double_diff : &message->proto.double_data) = wide;
        return CBLOB_OK;
    }
    }
}

cblob_status cb_blob_message_init_values(cb_blob_message *message, cblob_dtype dtype, const cb_shape *shape,
                                         const void *data, const void *diff, bool write_diff, const char *what)
{
    memset(message, 0, sizeof *message);
    const size_t element = dtype == CBLOB_DTYPE_FLOAT32 ? 4 : 8;
    const size_t parts = write_diff ? 2 : 1;
    /* The shape and the framing take at most a few hundred bytes more. */
    if ((size_t)shape->count > (CB_PROTO_MAX_MESSAGE - 1024) / element / parts)
        return cb_fail(CBLOB_ERR_OVERFLOW,
                       "%s: %" PRId64 " values of %zu bytes%s exceed protobuf's 2 GiB message limit (which Caffe enforces)",
                       what, shape->count, element, write_diff ? " in data and diff" : "");
    caffe__blob_proto__init(&message->proto);
    caffe__blob_shape__init(&message->shape);
    message->dims = *shape;
    /* As Caffe's ToProto: a blob with no axes writes no shape (it reads back as a scalar). */
    if (shape->num_axes > 0) {
        message->shape.n_dim = (size_t)shape->num_axes;
        message->shape.dim = message->dims.dims;
        message->proto.shape = &message->shape;
    }
    cblob_status status = set_values(message, dtype, shape->count, data, CBLOB_PART_DATA);
    if (status == CBLOB_OK && write_diff)
        status = set_values(message, dtype, shape->count, diff, CBLOB_PART_DIFF);
    if (status != CBLOB_OK)
        cb_blob_message_clear(message);
    return status;
}

cblob_status cb_blob_message_init(cb_blob_message *message, cblob_blob *blob, bool write_diff, const char *what)
{
    memset(message, 0, sizeof *message);
    if (blob->shape.num_axes == 0 && blob->shape.count == 0)
        return cb_fail(CBLOB_ERR_STATE, "%s has never had a shape, so there is nothing to write", what);
    void *data = NULL, *diff = NULL;
    CB_TRY(cb_blob_host(blob, CBLOB_PART_DATA, false, &data));
    if (write_diff)
        CB_TRY(cb_blob_host(blob, CBLOB_PART_DIFF, false, &diff));
    return cb_blob_message_init_values(message, blob->dtype->dtype, &blob->shape, data, diff, write_diff, what);
}

cblob_status cb_blob_message_legacy_dims(cb_blob_message *message, const cblob_blob *blob, const char *what)
{
    const int32_t axes = blob->shape.num_axes;
    if (axes > 4)
        return cb_fail(CBLOB_ERR_SHAPE, "%s has %d axes; legacy dims hold at most 4", what, (int)axes);
    int64_t dims[4] = {1, 1, 1, 1};
    for (int32_t i = 0; i < axes; ++i) {
        dims[4 - axes + i] = blob->shape.dims[i];
        if (blob->shape.dims[i] > INT32_MAX)
            return cb_fail(CBLOB_ERR_OVERFLOW, "%s: dimension %d is %" PRId64 "; Caffe's legacy dims are int32", what,
                           (int)i, blob->shape.dims[i]);
    }
    message->proto.shape = NULL;
    message->proto.has_num = message->proto.has_channels = message->proto.has_height = message->proto.has_width = 1;
    message->proto.num = dims[0];
    message->proto.channels = dims[1];
    message->proto.height = dims[2];
    message->proto.width = dims[3];
    return CBLOB_OK;
}

void cb_blob_message_clear(cb_blob_message *message)
{
    free(message->converted[0]);
    free(message->converted[1]);
    message->converted[0] = message->converted[1] = NULL;
}
