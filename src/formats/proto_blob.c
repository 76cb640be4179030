/* SPDX-License-Identifier: BSD-2-Clause */
#include "proto_blob.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

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

bool cb_blob_layout_has_diff(const cb_blob_layout *layout)
{
    return layout->values[diff_field(layout)].count > 0;
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

/* ---- decode ------------------------------------------------------------------------------- */

/* protobuf-c allocates through this, so that adopted arrays are free()d like any other and an
 * allocation failure is told apart from a parse failure. */
static void *proto_alloc(void *failed, size_t size)
{
    void *ptr = malloc(size);
    if (ptr == NULL)
        *(bool *)failed = true;
    return ptr;
}

static void proto_free(void *failed, void *ptr)
{
    (void)failed;
    free(ptr);
}

/* Takes a repeated value array out of the message, so free_unpacked leaves it to us. */
static cblob_status steal(Caffe__BlobProto *message, cb_blob_values which, int64_t expected, void **out)
{
    size_t *counts[CB_VALUES_FIELDS] = {&message->n_data, &message->n_diff, &message->n_double_data,
                                        &message->n_double_diff};
    void **arrays[CB_VALUES_FIELDS] = {(void **)&message->data, (void **)&message->diff,
                                       (void **)&message->double_data, (void **)&message->double_diff};
    if ((int64_t)*counts[which] != expected)
        return cb_fail(CBLOB_ERR_INTERNAL, "protobuf-c decoded %zu values where the wire reader counted %" PRId64,
                       *counts[which], expected);
    *out = *arrays[which];
    *arrays[which] = NULL;
    *counts[which] = 0;
    return CBLOB_OK;
}

static cblob_status decode_with_protobuf_c(const uint8_t *input, const cb_blob_layout *layout, cb_blob_values used[2],
                                           void *arrays[2])
{
    bool failed = false;
    ProtobufCAllocator allocator = {.alloc = proto_alloc, .free = proto_free, .allocator_data = &failed};
    Caffe__BlobProto *message = caffe__blob_proto__unpack(&allocator, layout->length, input + layout->offset);
    if (message == NULL)
        return failed ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to unpack the BlobProto at byte %zu", layout->offset)
                      : cb_fail(CBLOB_ERR_PARSE, "protobuf-c could not unpack the BlobProto at byte %zu", layout->offset);
    cblob_status status = CBLOB_OK;
    for (int part = 0; part < 2 && status == CBLOB_OK; ++part)
        status = steal(message, used[part], layout->values[used[part]].count, &arrays[part]);
    caffe__blob_proto__free_unpacked(message, &allocator);
    return status;
}

/* Copies one value field's elements, packed or not, straight from the input. */
static cblob_status decode_with_wire(const uint8_t *input, const cb_blob_layout *layout, cb_blob_values which,
                                     void **out)
{
    const int64_t count = layout->values[which].count;
    const size_t element = value_is_double(which) ? 8 : 4;
    if (count == 0)
        return CBLOB_OK;
    uint8_t *array = malloc((size_t)count * element);
    if (array == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " values of %zu bytes", count, element);
    cb_wire wire = cb_wire_range(input, layout->offset, layout->length, NULL);
    size_t filled = 0;
    const size_t total = (size_t)count * element;
    for (;;) {
        cb_wire_field field;
        cblob_status status = cb_wire_next(&wire, &field);
        if (status != CBLOB_OK) {
            free(array);
            return status;
        }
        if (field.number == 0)
            break;
        if (field.number != value_numbers[which])
            continue;
        if (field.length > total - filled) {
            free(array);
            return cb_fail(CBLOB_ERR_INTERNAL, "the BlobProto at byte %zu changed between scan and decode", layout->offset);
        }
        memcpy(array + filled, input + field.payload, field.length);
        filled += field.length;
    }
    *out = array;
    return CBLOB_OK;
}

cblob_status cb_blob_decode(const uint8_t *input, const cb_blob_layout *layout, cb_blob_decoder decoder,
                            cb_blob_arrays *out)
{
    cb_blob_values used[2] = {data_field(layout), diff_field(layout)};
    bool any_unpacked = layout->has_group;
    for (int i = 0; i < CB_VALUES_FIELDS; ++i)
        any_unpacked = any_unpacked || layout->values[i].unpacked;
    void *arrays[2] = {NULL, NULL};
    cblob_status status = CBLOB_OK;
    if (decoder == CB_DECODER_PROTOBUF_C || (decoder == CB_DECODER_AUTO && !any_unpacked)) {
        status = decode_with_protobuf_c(input, layout, used, arrays);
    } else {
        for (int part = 0; part < 2 && status == CBLOB_OK; ++part)
            status = decode_with_wire(input, layout, used[part], &arrays[part]);
    }
    if (status != CBLOB_OK) {
        free(arrays[0]);
        free(arrays[1]);
        return status;
    }
    *out = (cb_blob_arrays){
        .data = arrays[0],
        .diff = arrays[1],
        .data_is_double = value_is_double(used[0]),
        .diff_is_double = value_is_double(used[1]),
        .data_count = layout->values[used[0]].count,
        .diff_count = layout->values[used[1]].count,
    };
    return CBLOB_OK;
}

void cb_blob_arrays_free(cb_blob_arrays *arrays)
{
    free(arrays->data);
    free(arrays->diff);
    arrays->data = arrays->diff = NULL;
}

/* ---- load (FromProto) ----------------------------------------------------------------------- */

static double value_at(const void *values, bool is_double, int64_t i)
{
    return is_double ? ((const double *)values)[i] : (double)((const float *)values)[i];
}

/* Integer blobs take values truncated toward zero, as Caffe's static_cast does; a value whose
 * truncation does not fit (or NaN) is refused instead of being undefined behaviour. */
static cblob_status check_integer_range(const cb_dtype_info *dtype, const void *values, bool is_double, int64_t count,
                                        const char *part)
{
    const double low = dtype->dtype == CBLOB_DTYPE_INT32 ? -2147483649.0 : -1.0;
    const double high = dtype->dtype == CBLOB_DTYPE_INT32 ? 2147483648.0 : 4294967296.0;
    for (int64_t i = 0; i < count; ++i) {
        const double v = value_at(values, is_double, i);
        if (!(v > low && v < high))
            return cb_fail(CBLOB_ERR_OVERFLOW, "%s value %" PRId64 " is %g, which does not fit in %s", part, i, v,
                           dtype->name);
    }
    return CBLOB_OK;
}

static void convert_values(void *dst, cblob_dtype dtype, const void *src, bool src_double, int64_t count)
{
    if ((dtype == CBLOB_DTYPE_FLOAT32 && !src_double) || (dtype == CBLOB_DTYPE_FLOAT64 && src_double)) {
        memcpy(dst, src, (size_t)count * (src_double ? 8 : 4));
        return;
    }
    switch (dtype) {
#define CB_CONVERT(ENUM, CTYPE, SUFFIX) \
    case ENUM: \
        for (int64_t i = 0; i < count; ++i) \
            ((CTYPE *)dst)[i] = (CTYPE)value_at(src, src_double, i); \
        break;
        CB_FOR_EACH_DTYPE(CB_CONVERT)
#undef CB_CONVERT
    }
}

static void release_decoded(void *ptr, void *user_data)
{
    (void)user_data;
    free(ptr);
}

static bool same_dtype(const cblob_blob *blob, bool is_double)
{
    return blob->dtype->dtype == (is_double ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32);
}

/* Gives the decoded values to the blob under the reshape plan: adopted as fresh storage when the
 * dtype matches and nothing pins host memory, else copied (converted) into the storage. Every
 * step that can fail runs before anything changes. */
cblob_status cb_blob_fill(cblob_blob *blob, const cb_shape *target, cb_blob_arrays *arrays)
{
    void *values[CB_PARTS] = {arrays->data, arrays->diff};
    const bool is_double[CB_PARTS] = {arrays->data_is_double, arrays->diff_is_double};
    if (!blob->dtype->is_float) {
        CB_TRY(check_integer_range(blob->dtype, arrays->data, arrays->data_is_double, arrays->data_count, "data"));
        CB_TRY(check_integer_range(blob->dtype, arrays->diff, arrays->diff_is_double, arrays->diff_count, "diff"));
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
                      same_dtype(blob, is_double[part]);
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
            cb_storage_set_cpu(plan.fresh[part], values[part], (cb_release){release_decoded, NULL});
            if (part == CBLOB_PART_DATA)
                arrays->data = NULL;
            else
                arrays->diff = NULL;
        } else if (destination[part] != NULL) {
            convert_values(destination[part], blob->dtype->dtype, values[part], is_double[part], target->count);
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
        CB_TRY(check_values(layout, path, &target));
    }
    cb_blob_arrays arrays;
    CB_TRY(cb_blob_decode(input, layout, CB_DECODER_AUTO, &arrays));
    cblob_status status = cb_blob_fill(blob, &target, &arrays);
    cb_blob_arrays_free(&arrays);
    return status;
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

void cb_blob_message_clear(cb_blob_message *message)
{
    free(message->converted[0]);
    free(message->converted[1]);
    message->converted[0] = message->converted[1] = NULL;
}
