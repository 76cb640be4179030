/* SPDX-License-Identifier: BSD-2-Clause */
#include "proto_blob.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_memory.h"
#include "status.h"
#include "threads.h"

/* Field numbers of the value fields, in cb_blob_values order. */
static const uint32_t value_numbers[CB_VALUES_FIELDS] = {5, 6, 8, 9};
static const char *const legacy_names[4] = {"num", "channels", "height", "width"};

static bool value_is_double(cb_blob_values which)
{
    return which == CB_VALUES_DOUBLE_DATA || which == CB_VALUES_DOUBLE_DIFF;
}

cb_wire_path cb_wire_root(const ProtobufCMessageDescriptor *message)
{
    return (cb_wire_path){.parent = NULL, .message = message, .field = NULL, .index = -1, .label = NULL};
}

/* ---- scan ------------------------------------------------------------------------------- */

static void add_dim(cb_blob_layout *layout, int64_t dim)
{
    if (layout->num_dims < CBLOB_MAX_AXES)
        layout->dims[layout->num_dims] = dim;
    if (layout->num_dims <= CBLOB_MAX_AXES)
        ++layout->num_dims; /* one past the maximum is enough to report "too many" */
}

/* BlobShape: repeated int64 dim = 1, packed or not. A second shape field merges into the first,
 * as proto2 merges repeated occurrences of a message field. */
static cblob_status scan_shape(const cb_wire *outer, const cb_wire_field *field, cb_blob_layout *layout)
{
    CB_TRY(cb_wire_expect(outer, field, CB_WIRE_LENGTH, "BlobShape"));
    const cb_wire_path path = {.parent = outer->path, .message = &caffe__blob_shape__descriptor, .field = "shape",
                               .index = -1};
    cb_wire wire = cb_wire_nested(outer, field, &path);
    if (!layout->has_shape)
        layout->shape_offset = field->offset;
    layout->has_shape = true;
    for (;;) {
        cb_wire_field dim;
        CB_TRY(cb_wire_next(&wire, &dim));
        if (dim.number == 0)
            break;
        if (dim.number != 1)
            continue;
        CB_TRY(cb_wire_expect_repeated(&wire, &dim, CB_WIRE_VARINT, "int64"));
        if (dim.type == CB_WIRE_VARINT) {
            add_dim(layout, (int64_t)dim.varint);
            continue;
        }
        int64_t count;
        CB_TRY(cb_wire_count_elements(&wire, &dim, CB_WIRE_VARINT, &count));
        size_t pos = dim.payload;
        for (int64_t i = 0; i < count; ++i) {
            uint64_t value = 0;
            cb_wire_packed_varint(wire.input, &pos, dim.payload + dim.length, &value);
            add_dim(layout, (int64_t)value);
        }
    }
    layout->has_group = layout->has_group || wire.skipped_group;
    return CBLOB_OK;
}

static cblob_status scan_values(const cb_wire *wire, const cb_wire_field *field, cb_blob_values which,
                                cb_blob_layout *layout)
{
    const bool is_double = value_is_double(which);
    const int element_type = is_double ? CB_WIRE_FIXED64 : CB_WIRE_FIXED32;
    CB_TRY(cb_wire_expect_repeated(wire, field, element_type, is_double ? "double" : "float"));
    int64_t count;
    CB_TRY(cb_wire_count_elements(wire, field, element_type, &count));
    cb_blob_value_field *values = &layout->values[which];
    if (values->count == 0 && !values->unpacked)
        values->offset = field->offset;
    values->count += count;
    values->unpacked = values->unpacked || field->type != CB_WIRE_LENGTH;
    return CBLOB_OK;
}

cblob_status cb_blob_layout_scan(cb_wire wire, cb_blob_layout *layout)
{
    memset(layout, 0, sizeof *layout);
    layout->offset = wire.pos;
    layout->length = wire.end - wire.pos;
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        switch (field.number) {
        case 0:
            layout->has_group = layout->has_group || wire.skipped_group;
            return CBLOB_OK;
        case 1: case 2: case 3: case 4:
            CB_TRY(cb_wire_expect(&wire, &field, CB_WIRE_VARINT, "legacy dimension (int32)"));
            if (!layout->legacy_present[0] && !layout->legacy_present[1] && !layout->legacy_present[2] &&
                !layout->legacy_present[3])
                layout->legacy_offset = field.offset;
            layout->legacy_present[field.number - 1] = true;
            layout->legacy[field.number - 1] = (int64_t)field.varint; /* proto2: the last one wins */
            break;
        case 5: CB_TRY(scan_values(&wire, &field, CB_VALUES_DATA, layout)); break;
        case 6: CB_TRY(scan_values(&wire, &field, CB_VALUES_DIFF, layout)); break;
        case 8: CB_TRY(scan_values(&wire, &field, CB_VALUES_DOUBLE_DATA, layout)); break;
        case 9: CB_TRY(scan_values(&wire, &field, CB_VALUES_DOUBLE_DIFF, layout)); break;
        case 7: CB_TRY(scan_shape(&wire, &field, layout)); break;
        default: continue; /* unknown fields (Caffe forks add some) are skipped */
        }
        ++layout->known_fields;
    }
}

/* ---- what the header says ----------------------------------------------------------------- */

static bool has_legacy(const cb_blob_layout *layout)
{
    return layout->legacy_present[0] || layout->legacy_present[1] || layout->legacy_present[2] ||
           layout->legacy_present[3];
}

/* The values that count: double_data when non-empty, else data (and likewise for diff). */
static cb_blob_values data_field(const cb_blob_layout *layout)
{
    return layout->values[CB_VALUES_DOUBLE_DATA].count > 0 ? CB_VALUES_DOUBLE_DATA : CB_VALUES_DATA;
}

static cb_blob_values diff_field(const cb_blob_layout *layout)
{
    return layout->values[CB_VALUES_DOUBLE_DIFF].count > 0 ? CB_VALUES_DOUBLE_DIFF : CB_VALUES_DIFF;
}

cblob_dtype cb_blob_layout_dtype(const cb_blob_layout *layout)
{
    return data_field(layout) == CB_VALUES_DOUBLE_DATA ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32;
}

static cblob_status fail_at(const cb_wire_path *path, uint32_t number, size_t offset, const char *text)
{
    const cb_wire_field field = {.number = number};
    return cb_wire_fail(path, &field, offset, "%s", text);
}

/* The dims the BlobProto asks for: its legacy dims as 4 axes (unset ones 0) when any is present,
 * else its shape (no shape: 0 axes, a scalar). */
static cblob_status layout_dims(const cb_blob_layout *layout, const cb_wire_path *path, int32_t *num_axes,
                                int64_t *dims)
{
    char text[160];
    if (has_legacy(layout)) {
        for (int i = 0; i < 4; ++i) {
            if (layout->legacy[i] < 0) {
                snprintf(text, sizeof text, "%s is %" PRId64 "; dimensions cannot be negative", legacy_names[i],
                         layout->legacy[i]);
                return fail_at(path, (uint32_t)i + 1, layout->legacy_offset, text);
            }
            dims[i] = layout->legacy[i];
        }
        *num_axes = 4;
        return CBLOB_OK;
    }
    if (layout->num_dims > CBLOB_MAX_AXES) {
        snprintf(text, sizeof text, "more than %d dims (a blob has at most %d axes)", CBLOB_MAX_AXES, CBLOB_MAX_AXES);
        return fail_at(path, 7, layout->shape_offset, text);
    }
    for (int32_t i = 0; i < layout->num_dims; ++i) {
        if (layout->dims[i] < 0) {
            snprintf(text, sizeof text, "dim[%d] is %" PRId64 "; dimensions cannot be negative", (int)i,
                     layout->dims[i]);
            return fail_at(path, 7, layout->shape_offset, text);
        }
        dims[i] = layout->dims[i];
    }
    *num_axes = layout->num_dims;
    return CBLOB_OK;
}

/* The values used must number exactly count (Caffe CHECKs this; here it is a parse error). */
static cblob_status check_values(const cb_blob_layout *layout, const cb_wire_path *path, const cb_shape *shape)
{
    const cb_blob_values used[2] = {data_field(layout), diff_field(layout)};
    for (int part = 0; part < 2; ++part) {
        const cb_blob_value_field *values = &layout->values[used[part]];
        /* A missing diff leaves the blob's diff as it is; missing data is an error unless count is 0. */
        if (values->count == shape->count || (part == CBLOB_PART_DIFF && values->count == 0))
            continue;
        char shape_text[CBLOB_MAX_AXES * 21 + 24], text[CBLOB_MAX_AXES * 21 + 128];
        cb_shape_format(shape, shape_text, sizeof shape_text);
        snprintf(text, sizeof text, "holds %" PRId64 " values but the shape %s needs %" PRId64, values->count,
                 shape_text, shape->count);
        return fail_at(path, value_numbers[used[part]], values->count > 0 ? values->offset : layout->offset, text);
    }
    return CBLOB_OK;
}

cblob_status cb_blob_layout_check(const cb_blob_layout *layout, const cb_wire_path *path, size_t element_size,
                                  cb_shape *out)
{
    int32_t num_axes = 0;
    int64_t dims[CBLOB_MAX_AXES];
    CB_TRY(layout_dims(layout, path, &num_axes, dims));
    cb_shape shape;
    if (cb_shape_make(num_axes, dims, element_size, &shape) != CBLOB_OK)
        return fail_at(path, has_legacy(layout) ? 1 : 7, has_legacy(layout) ? layout->legacy_offset : layout->shape_offset,
                       "the dimensions' product overflows (the byte size does not fit in memory)");
    CB_TRY(check_values(layout, path, &shape));
    *out = shape;
    return CBLOB_OK;
}

bool cb_blob_layout_shape_equals(const cb_blob_layout *layout, const cb_shape *shape)
{
    if (has_legacy(layout)) {
        if (shape->num_axes > 4)
            return false;
        for (int32_t i = 0; i < 4; ++i) {
            int64_t dim = 1;
            cb_shape_legacy_dim(shape, i - 4, &dim); /* cannot fail for at most 4 axes */
            if (dim != layout->legacy[i])
                return false;
        }
        return true;
    }
    if (layout->num_dims != shape->num_axes)
        return false;
    for (int32_t i = 0; i < shape->num_axes; ++i)
        if (layout->dims[i] != shape->dims[i])
            return false;
    return true;
}

/* "legacy 1 3 32 32" or "shape 2 3" (as the file has it, for messages). */
static void describe_dims(const cb_blob_layout *layout, char *text, size_t size)
{
    size_t used = 0;
    const bool legacy = has_legacy(layout);
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
    const size_t element = value_is_double(which) ? 8 : 4;
    cb_wire wire = cb_wire_range(input, layout->offset, layout->length, NULL);
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (field.number == 0)
            return CBLOB_OK;
        if (field.number == value_numbers[which])
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
    const cb_blob_values used[CB_PARTS] = {data_field(layout), diff_field(layout)};
    const bool present[CB_PARTS] = {layout->values[used[0]].count > 0, layout->values[used[1]].count > 0};
    if (!blob->dtype->is_float) {
        for (int part = 0; part < CB_PARTS; ++part) {
            cb_range_check check = {blob->dtype, value_is_double(used[part]), part == 0 ? "data" : "diff", 0};
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
        cb_values_writer writer = {destination[part], blob->dtype, value_is_double(used[part]), 0};
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

static void release_values(void *ptr, void *size)
{
    cb_host_free(ptr, (size_t)(uintptr_t)size);
}

/* Gives decoded values to the blob under the reshape plan: adopted as fresh storage when the
 * dtype matches and nothing pins host memory, else copied (converted) into the storage. Every
 * step that can fail runs before anything changes. */
cblob_status cb_blob_fill(cblob_blob *blob, const cb_shape *target, cb_blob_arrays *arrays)
{
    void *values[CB_PARTS] = {arrays->data, arrays->diff};
    const bool is_double[CB_PARTS] = {arrays->data_is_double, arrays->diff_is_double};
    const int64_t counts[CB_PARTS] = {arrays->data_count, arrays->diff_count};
    if (!blob->dtype->is_float) {
        for (int part = 0; part < CB_PARTS; ++part) {
            cb_range_check check = {blob->dtype, is_double[part], part == 0 ? "data" : "diff", 0};
            CB_TRY(check_piece(&check, values[part], counts[part]));
        }
    }
    cb_reshape plan;
    CB_TRY(cb_reshape_prepare(blob, target->num_axes, target->dims, &plan));
    /* The data head becomes AT_CPU even without values (Caffe's mutable_cpu_data). */
    CB_TRY(cb_reshape_ensure_storage(blob, &plan));
    const cb_device *pinning = cb_context_pinning_device(blob->context);
    void *destination[CB_PARTS] = {NULL, NULL};
    bool adopt[CB_PARTS] = {false, false};
    for (int part = 0; part < CB_PARTS; ++part) {
        if (values[part] == NULL && part == CBLOB_PART_DIFF)
            continue; /* no diff in the proto: the diff stays as it is */
        adopt[part] = values[part] != NULL && plan.fresh[part] != NULL && pinning == NULL &&
                      same_dtype(blob->dtype, is_double[part]);
        if (adopt[part])
            continue;
        void *base;
        cblob_status status = cb_storage_mutable_cpu(cb_reshape_storage(blob, &plan, part), pinning, &base);
        if (status != CBLOB_OK) {
            cb_reshape_abandon(&plan);
            return status;
        }
        if (values[part] != NULL)
            destination[part] = (char *)base + (plan.fresh[part] != NULL ? 0 : blob->offset_bytes);
    }
    for (int part = 0; part < CB_PARTS; ++part) {
        if (adopt[part]) {
            const size_t size = (size_t)counts[part] * blob->dtype->size;
            cb_storage_set_cpu(plan.fresh[part], values[part], (cb_release){release_values, (void *)(uintptr_t)size});
            if (part == CBLOB_PART_DATA)
                arrays->data = NULL;
            else
                arrays->diff = NULL;
        } else if (destination[part] != NULL) {
            cb_values_writer writer = {destination[part], blob->dtype, is_double[part], 0};
            write_piece(&writer, values[part], target->count);
        }
    }
    cb_reshape_commit(blob, &plan);
    return CBLOB_OK;
}

void cb_blob_arrays_free(cb_blob_arrays *arrays)
{
    cb_host_free(arrays->data, (size_t)arrays->data_count * (arrays->data_is_double ? 8 : 4));
    cb_host_free(arrays->diff, (size_t)arrays->diff_count * (arrays->diff_is_double ? 8 : 4));
    arrays->data = arrays->diff = NULL;
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
        CB_TRY(check_values(layout, path, &target));
    }
    cb_context_use_threads(blob->context);
    return load_values(blob, input, layout, &target);
}

/* ---- write (ToProto) ------------------------------------------------------------------------ */

/* Integer blobs are written as double_data/double_diff, which hold every int32 and uint32 exactly. */
static cblob_status widen_to_double(const cblob_blob *blob, const void *values, double **out)
{
    const int64_t count = blob->shape.count;
    double *wide = malloc((size_t)count * sizeof *wide);
    if (wide == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to widen %" PRId64 " values to double", count);
    for (int64_t i = 0; i < count; ++i)
        wide[i] = blob->dtype->dtype == CBLOB_DTYPE_INT32 ? (double)((const int32_t *)values)[i]
                                                          : (double)((const uint32_t *)values)[i];
    *out = wide;
    return CBLOB_OK;
}

static cblob_status set_values(cb_blob_message *message, cblob_blob *blob, cblob_part part)
{
    void *host;
    CB_TRY(cb_blob_host(blob, part, false, &host));
    const size_t count = (size_t)blob->shape.count;
    const bool diff = part == CBLOB_PART_DIFF;
    switch (blob->dtype->dtype) {
    case CBLOB_DTYPE_FLOAT32:
        *(diff ? &message->proto.n_diff : &message->proto.n_data) = count;
        *(diff ? &message->proto.diff : &message->proto.data) = host;
        return CBLOB_OK;
    case CBLOB_DTYPE_FLOAT64:
        *(diff ? &message->proto.n_double_diff : &message->proto.n_double_data) = count;
        *(diff ? &message->proto.double_diff : &message->proto.double_data) = host;
        return CBLOB_OK;
    default: {
        double *wide = NULL;
        if (count > 0)
            CB_TRY(widen_to_double(blob, host, &wide));
        message->converted[part] = wide;
        *(diff ? &message->proto.n_double_diff : &message->proto.n_double_data) = count;
        *(diff ? &message->proto.double_diff : &message->proto.double_data) = wide;
        return CBLOB_OK;
    }
    }
}

cblob_status cb_blob_message_init(cb_blob_message *message, cblob_blob *blob, bool write_diff, const char *what)
{
    memset(message, 0, sizeof *message);
    if (blob->shape.num_axes == 0 && blob->shape.count == 0)
        return cb_fail(CBLOB_ERR_STATE, "%s has never had a shape, so there is nothing to write", what);
    const size_t element = blob->dtype->dtype == CBLOB_DTYPE_FLOAT32 ? 4 : 8;
    const size_t parts = write_diff ? 2 : 1;
    /* The shape and the framing take at most a few hundred bytes more. */
    if ((size_t)blob->shape.count > (CB_PROTO_MAX_MESSAGE - 1024) / element / parts)
        return cb_fail(CBLOB_ERR_OVERFLOW,
                       "%s: %" PRId64 " values of %zu bytes%s exceed protobuf's 2 GiB message limit (which Caffe enforces)",
                       what, blob->shape.count, element, write_diff ? " in data and diff" : "");
    caffe__blob_proto__init(&message->proto);
    caffe__blob_shape__init(&message->shape);
    /* As Caffe's ToProto: a blob with no axes writes no shape (it reads back as a scalar). */
    if (blob->shape.num_axes > 0) {
        message->shape.n_dim = (size_t)blob->shape.num_axes;
        message->shape.dim = blob->shape.dims;
        message->proto.shape = &message->shape;
    }
    cblob_status status = set_values(message, blob, CBLOB_PART_DATA);
    if (status == CBLOB_OK && write_diff)
        status = set_values(message, blob, CBLOB_PART_DIFF);
    if (status != CBLOB_OK)
        cb_blob_message_clear(message);
    return status;
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
