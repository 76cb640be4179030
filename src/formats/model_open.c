/* SPDX-License-Identifier: BSD-2-Clause */
/* Opening a model: one pass over a NetParameter that checks every field it relies on and turns
 * each layer into a record (model.h). Layer and blob paths in messages are as they were:
 * "NetParameter.layer[3](conv1).blobs[0].data at byte N". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "proto_blob.h"
#include "proto_net.h"
#include "host_memory.h"
#include "status.h"
#include "threads.h"

/* Blobs whose values take more bytes than this keep them in arrays of their own, which a handle
 * adopts without a copy; smaller ones keep them inline in the record, beside their fields. */
#define CB_INLINE_VALUES_MAX 4096
/* How much of a huge value field is copied before the input behind it is let go. */
#define CB_COPY_STEP ((size_t)4 << 20)
/* How much of the input is read before it is let go of. */
#define CB_RELEASE_STEP ((size_t)1 << 20)

typedef struct builder {
    const uint8_t *input;
    cblob_model *model;    /* NULL: only check the input */
    bool lazy;             /* values kept in arrays stay in the file (cb_model_build_lazy) */
    cb_bytes record;       /* the layer being built */
    size_t run_start;      /* the start of fields kept as bytes and not yet written */
    cb_done_with_fn *done_with;
    void *done_context;
    cb_bytes arrays;       /* value arrays of the layer being built, freed if it is not kept */
    size_t released;       /* the input before this was let go of */
} builder;

static void let_go(const builder *b, size_t offset, size_t length)
{
    if (b->done_with != NULL)
        b->done_with(b->done_context, offset, length);
}

/* Lets go of the input read so far, a few MiB at a time: layers smaller than a page would
 * otherwise keep every page of a file of many tiny layers. */
static void let_go_upto(builder *b, size_t end)
{
    if (end - b->released >= CB_RELEASE_STEP) {
        let_go(b, b->released, end - b->released);
        b->released = end;
    }
}

/* ---- writing operations --------------------------------------------------------------------- */

static cblob_status put_raw(builder *b, size_t from, size_t to)
{
    return cb_bytes_append(&b->record, b->input + from, to - from);
}

/* Writes the kept fields [run_start, upto) as one BYTES operation. */
static cblob_status flush_run(builder *b, size_t upto)
{
    if (upto > b->run_start) {
        CB_TRY(cb_bytes_put_u8(&b->record, CB_OP_BYTES));
        CB_TRY(cb_bytes_put_varint(&b->record, upto - b->run_start));
        CB_TRY(put_raw(b, b->run_start, upto));
    }
    b->run_start = upto;
    return CBLOB_OK;
}

/* The raw tag and length of a length-delimited field. */
static cblob_status put_prefix(builder *b, const cb_wire_field *field)
{
    return put_raw(b, field->offset, field->payload);
}

static uint64_t record_offset(const builder *b)
{
    return b->record.size;
}

/* A string field kept as TEXT; *offset (when not NULL) is where its text lies in the record. */
static cblob_status put_text(builder *b, const cb_wire_field *field, uint64_t *offset)
{
    CB_TRY(flush_run(b, field->offset));
    CB_TRY(cb_bytes_put_u8(&b->record, CB_OP_TEXT));
    CB_TRY(put_prefix(b, field));
    if (offset != NULL)
        *offset = record_offset(b);
    CB_TRY(put_raw(b, field->payload, field->payload + field->length));
    CB_TRY(cb_bytes_put_u8(&b->record, 0));
    b->run_start = field->payload + field->length;
    return CBLOB_OK;
}

static cblob_status begin_nested(builder *b, const cb_wire_field *field, uint8_t code)
{
    CB_TRY(flush_run(b, field->offset));
    CB_TRY(cb_bytes_put_u8(&b->record, code));
    CB_TRY(put_prefix(b, field));
    b->run_start = field->payload;
    return CBLOB_OK;
}

static cblob_status end_nested(builder *b, const cb_wire_field *field)
{
    CB_TRY(flush_run(b, field->payload + field->length));
    return cb_bytes_put_u8(&b->record, CB_OP_END);
}

/* ---- blobs ---------------------------------------------------------------------------------- */

typedef struct blob_build {
    const cb_blob_layout *layout;
    uint32_t data_field, diff_field; /* field numbers of the values that count (0: none) */
    bool arrays;
    uint8_t *array[2];    /* CB_BLOB_ARRAYS: data and diff */
    int64_t filled[2];    /* elements written so far, per part */
    size_t offset;        /* of the BlobProto's first byte in the input (the file's, when lazy) */
} blob_build;

/* An array the builder holds until its layer is kept (the record owns it then). */
typedef struct owned_array {
    void *ptr;
    size_t size;
} owned_array;

static bool field_is_double(uint32_t number)
{
    return number == 8 || number == 9;
}

/* Host memory like a storage's own (cb_host_alloc: large arrays mapped with huge pages), since a
 * handle adopts the array as its storage. */
static cblob_status allocate_array(int64_t count, uint32_t field, uint8_t **out)
{
    *out = NULL;
    if (count == 0)
        return CBLOB_OK;
    return cb_host_alloc((size_t)count * (field_is_double(field) ? 8 : 4), false, (void **)out);
}

static size_t array_size(const blob_build *blob, int part)
{
    const int64_t count = blob->layout->values[part == 0 ? (blob->data_field == 8 ? CB_VALUES_DOUBLE_DATA : CB_VALUES_DATA)
                                                        : (blob->diff_field == 9 ? CB_VALUES_DOUBLE_DIFF : CB_VALUES_DIFF)]
                              .count;
    const uint32_t field = part == 0 ? blob->data_field : blob->diff_field;
    return field == 0 ? 0 : (size_t)count * (field_is_double(field) ? 8 : 4);
}

static void free_arrays(const blob_build *blob)
{
    for (int part = 0; part < 2; ++part)
        cb_host_free(blob->array[part], array_size(blob, part));
}

static cblob_status put_blob_header(builder *b, const cb_shape *shape, blob_build *blob)
{
    const cb_blob_layout *layout = blob->layout;
    uint8_t flags = 0;
    if (cb_blob_layout_dtype(layout) == CBLOB_DTYPE_FLOAT64)
        flags |= CB_BLOB_DOUBLE;
    if (blob->diff_field != 0)
        flags |= CB_BLOB_HAS_DIFF;
    if (blob->diff_field == 9)
        flags |= CB_BLOB_DIFF_DOUBLE;
    const int64_t data_count = layout->values[blob->data_field == 8 ? CB_VALUES_DOUBLE_DATA : CB_VALUES_DATA].count;
    const int64_t diff_count = blob->diff_field == 0 ? 0 : shape->count;
    blob->arrays = !cb_model_keeps_inline(layout, shape);
    if (blob->arrays && b->lazy) {
        flags |= CB_BLOB_ARRAYS | CB_BLOB_LAZY | CB_BLOB_UNREAD;
    } else if (blob->arrays) {
        flags |= CB_BLOB_ARRAYS;
        CB_TRY(allocate_array(data_count, blob->data_field, &blob->array[0]));
        cblob_status status = allocate_array(diff_count, blob->diff_field, &blob->array[1]);
        if (status != CBLOB_OK) {
            free_arrays(blob);
            return status;
        }
    }
    CB_TRY(cb_bytes_put_u8(&b->record, flags));
    CB_TRY(cb_bytes_put_varint(&b->record, (uint64_t)shape->num_axes));
    for (int32_t i = 0; i < shape->num_axes; ++i)
        CB_TRY(cb_bytes_put_varint(&b->record, (uint64_t)shape->dims[i]));
    if (blob->arrays)
        CB_TRY(cb_bytes_append(&b->record, blob->array, sizeof blob->array));
    if (flags & CB_BLOB_LAZY)
        CB_TRY(cb_bytes_put_varint(&b->record, blob->offset));
    return CBLOB_OK;
}

bool cb_model_keeps_inline(const cb_blob_layout *layout, const cb_shape *shape)
{
    const bool data_double = layout->values[CB_VALUES_DOUBLE_DATA].count > 0;
    const int64_t data_count = layout->values[data_double ? CB_VALUES_DOUBLE_DATA : CB_VALUES_DATA].count;
    const bool diff_double = layout->values[CB_VALUES_DOUBLE_DIFF].count > 0;
    const bool has_diff = diff_double || layout->values[CB_VALUES_DIFF].count > 0;
    const size_t value_bytes = (size_t)data_count * (data_double ? 8 : 4) +
                               (has_diff ? (size_t)shape->count * (diff_double ? 8 : 4) : 0);
    return value_bytes <= CB_INLINE_VALUES_MAX;
}

/* Copies payload bytes into a part's array, letting go of the input behind them as it goes. */
static void copy_into_array(const builder *b, blob_build *blob, int part, size_t from, size_t length)
{
    const size_t element = field_is_double(part == 0 ? blob->data_field : blob->diff_field) ? 8 : 4;
    const int64_t first = blob->filled[part];
    blob->filled[part] += (int64_t)(length / element);
    if (b->lazy) /* the values stay in the file */
        return;
    uint8_t *to = blob->array[part] + (size_t)first * element;
    for (size_t done = 0; done < length;) {
        const size_t step = length - done < CB_COPY_STEP ? length - done : CB_COPY_STEP;
        cb_parallel_copy(to + done, b->input + from + done, step); /* first touches spread over threads */
        if (step == CB_COPY_STEP)
            let_go(b, from + done, step);
        done += step;
    }
}

static cblob_status put_payload(builder *b, blob_build *blob, int part, size_t from, size_t length)
{
    if (!blob->arrays)
        return put_raw(b, from, from + length);
    CB_TRY(cb_bytes_put_varint(&b->record, (uint64_t)blob->filled[part]));
    copy_into_array(b, blob, part, from, length);
    return CBLOB_OK;
}

/* A packed value field: one VALUES operation. */
static cblob_status put_packed(builder *b, blob_build *blob, int part, const cb_wire_field *field)
{
    CB_TRY(cb_bytes_put_u8(&b->record, CB_OP_VALUES));
    CB_TRY(cb_bytes_put_u8(&b->record, (uint8_t)((part ? CB_VALUES_OF_DIFF : 0) |
                                                 (field_is_double(field->number) ? CB_VALUES_DOUBLE : 0))));
    CB_TRY(put_prefix(b, field));
    return put_payload(b, blob, part, field->payload, field->length);
}

/* Unpacked elements that follow each other behind the same raw tag: one VALUES operation. The
 * cursor moves past the run. */
static cblob_status put_unpacked_run(builder *b, blob_build *blob, int part, cb_wire *wire, const cb_wire_field *first)
{
    const size_t tag_size = first->payload - first->offset;
    int64_t count = 1;
    size_t end = first->payload + first->length;
    for (;;) {
        cb_wire peek = *wire;
        cb_wire_field next;
        /* The blob was checked whole, so reading on cannot fail; a skipped group ends the run. */
        if (cb_wire_next(&peek, &next) != CBLOB_OK || next.offset != end || next.number != first->number ||
            next.type != first->type || next.payload - next.offset != tag_size ||
            memcmp(b->input + next.offset, b->input + first->offset, tag_size) != 0)
            break;
        *wire = peek;
        end = next.payload + next.length;
        ++count;
    }
    CB_TRY(cb_bytes_put_u8(&b->record, CB_OP_VALUES));
    CB_TRY(cb_bytes_put_u8(&b->record, (uint8_t)(CB_VALUES_UNPACKED | (part ? CB_VALUES_OF_DIFF : 0) |
                                                 (field_is_double(first->number) ? CB_VALUES_DOUBLE : 0))));
    CB_TRY(put_raw(b, first->offset, first->payload));
    CB_TRY(cb_bytes_put_varint(&b->record, (uint64_t)count));
    if (blob->arrays)
        CB_TRY(cb_bytes_put_varint(&b->record, (uint64_t)blob->filled[part]));
    const size_t element = first->length;
    for (size_t at = first->payload; at < end; at += tag_size + element) {
        if (blob->arrays)
            copy_into_array(b, blob, part, at, element);
        else
            CB_TRY(put_raw(b, at, at + element));
    }
    return CBLOB_OK;
}

/* The BlobProto's fields: values that count become VALUES, everything else is kept as bytes. */
static cblob_status put_blob_fields(builder *b, const cb_wire_field *outer, blob_build *blob)
{
    cb_wire wire = cb_wire_range(b->input, outer->payload, outer->length, NULL);
    b->run_start = outer->payload;
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (field.number == 0)
            break;
        const int part = field.number == blob->data_field ? 0 : field.number == blob->diff_field ? 1 : -1;
        if (part < 0)
            continue;
        CB_TRY(flush_run(b, field.offset));
        CB_TRY(field.type == CB_WIRE_LENGTH ? put_packed(b, blob, part, &field)
                                            : put_unpacked_run(b, blob, part, &wire, &field));
        b->run_start = wire.pos;
    }
    return end_nested(b, outer);
}

/* The field numbers whose values a blob takes (proto_blob.h: double_data wins over data when it
 * holds values, and likewise for the diff). */
static void choose_fields(const cb_blob_layout *layout, blob_build *blob)
{
    blob->data_field = layout->values[CB_VALUES_DOUBLE_DATA].count > 0 ? 8 : 5;
    blob->diff_field = layout->values[CB_VALUES_DOUBLE_DIFF].count > 0 ? 9
                       : layout->values[CB_VALUES_DIFF].count > 0  ? 6
                                                                   : 0;
}

static cblob_status check_blob(const cb_wire *wire, const cb_wire_field *field, const char *field_name, int64_t index,
                               cb_blob_layout *layout, cb_shape *shape)
{
    CB_TRY(cb_wire_expect(wire, field, CB_WIRE_LENGTH, "BlobProto"));
    const cb_wire_path path = {.parent = wire->path, .message = &caffe__blob_proto__descriptor, .field = field_name,
                               .index = index};
    CB_TRY(cb_blob_layout_scan(cb_wire_nested(wire, field, &path), layout));
    const cb_dtype_info *dtype = cb_dtype_find(cb_blob_layout_dtype(layout));
    return cb_blob_layout_check(layout, &path, dtype->size, shape);
}

static cblob_status put_raw_blob(builder *b, const cb_wire_field *field)
{
    CB_TRY(flush_run(b, field->offset));
    CB_TRY(cb_bytes_put_u8(&b->record, CB_OP_BLOB));
    CB_TRY(put_prefix(b, field));
    CB_TRY(cb_bytes_put_u8(&b->record, CB_BLOB_RAW));
    CB_TRY(put_raw(b, field->payload, field->payload + field->length));
    b->run_start = field->payload + field->length;
    return CBLOB_OK;
}

/* A blob of the layer: checked whole, then written as a BLOB operation. */
static cblob_status put_blob(builder *b, const cb_wire *wire, const cb_wire_field *field, const char *field_name,
                             int64_t *index)
{
    cb_blob_layout layout;
    cb_shape shape;
    CB_TRY(check_blob(wire, field, field_name, (*index)++, &layout, &shape));
    if (b->model == NULL)
        return CBLOB_OK;
    if (shape.count == 0) /* nothing to decode: the bytes are all it takes */
        return put_raw_blob(b, field);
    blob_build blob = {.layout = &layout, .offset = field->payload};
    choose_fields(&layout, &blob);
    CB_TRY(begin_nested(b, field, CB_OP_BLOB));
    CB_TRY(put_blob_header(b, &shape, &blob));
    cblob_status status = put_blob_fields(b, field, &blob);
    const owned_array owned[2] = {{blob.array[0], array_size(&blob, 0)}, {blob.array[1], array_size(&blob, 1)}};
    if (status == CBLOB_OK)
        status = cb_bytes_append(&b->arrays, owned, sizeof owned);
    if (status != CBLOB_OK) {
        free_arrays(&blob);
        return status;
    }
    let_go(b, field->offset, field->payload + field->length - field->offset);
    b->run_start = field->payload + field->length;
    return CBLOB_OK;
}

/* ---- layers --------------------------------------------------------------------------------- */

/* What a layer's record says about it while it is built. */
typedef struct layer_build {
    cb_wire_path *path;
    int64_t num_blobs;     /* blobs seen so far */
    uint64_t name, type;   /* body offsets of the reported name and type text (0: none yet) */
    char *label;           /* a copy of the name, for messages */
    /* V1 */
    bool own_name, own_type, own_blobs; /* the V1 layer has them itself (else its V0 layer's count) */
    int32_t v1_type;
} layer_build;

static cblob_status put_string_field(builder *b, const cb_wire *wire, const cb_wire_field *field, uint64_t *offset,
                                     bool required)
{
    if (field->type != CB_WIRE_LENGTH) {
        if (required) /* a layer's name and type: 1.0 refused these too */
            return cb_wire_expect(wire, field, CB_WIRE_LENGTH, "string");
        return CBLOB_OK; /* kept as bytes: not a string to report */
    }
    if (required && memchr(b->input + field->payload, 0, field->length) != NULL)
        return cb_wire_fail(wire->path, field, field->offset, "the string holds a NUL byte");
    if (b->model == NULL)
        return CBLOB_OK;
    return put_text(b, field, offset);
}

/* Whether a nested message that was not checked is well formed, leaving the thread's message
 * as it was (a malformed rule or param spec is kept as bytes, not a reason to refuse a file). */
static bool well_formed(const cb_wire *outer, const cb_wire_field *field)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_wire wire = cb_wire_nested(outer, field, outer->path);
    cb_wire_field inner;
    cblob_status status;
    do
        status = cb_wire_next(&wire, &inner);
    while (status == CBLOB_OK && inner.number != 0);
    cb_error_restore(&saved);
    return status == CBLOB_OK;
}

/* A nested message whose strings the structure calls report (NetStateRule's stages, ParamSpec's
 * name): TEXT for the `strings` field numbers, bytes for the rest. */
static cblob_status put_message_with_strings(builder *b, const cb_wire *outer, const cb_wire_field *field,
                                             const uint32_t *strings, int num_strings)
{
    if (field->type != CB_WIRE_LENGTH || b->model == NULL || !well_formed(outer, field))
        return CBLOB_OK;
    CB_TRY(begin_nested(b, field, CB_OP_MESSAGE));
    cb_wire wire = cb_wire_nested(outer, field, outer->path);
    for (;;) {
        cb_wire_field inner;
        CB_TRY(cb_wire_next(&wire, &inner));
        if (inner.number == 0)
            break;
        for (int i = 0; i < num_strings; ++i)
            if (inner.number == strings[i] && inner.type == CB_WIRE_LENGTH)
                CB_TRY(put_text(b, &inner, NULL));
    }
    return end_nested(b, field);
}

/* Keeps a copy of the layer's name for messages about later fields ("layer[3](conv1)"). */
static cblob_status label_layer(const cb_wire *wire, const cb_wire_field *field, layer_build *layer)
{
    char *label;
    CB_TRY(cb_wire_string(wire, field, &label));
    free(layer->label);
    layer->label = label;
    layer->path->label = label;
    return CBLOB_OK;
}

static const uint32_t rule_strings[2] = {4, 5}; /* NetStateRule: stage, not_stage */
static const uint32_t param_strings[1] = {1};   /* ParamSpec: name */

/* LayerParameter: name 1, type 2, bottom 3, top 4, param 6, blobs 7, include 8, exclude 9. */
static cblob_status put_v2_field(builder *b, const cb_wire *wire, const cb_wire_field *field, layer_build *layer)
{
    switch (field->number) {
    case 1:
        CB_TRY(put_string_field(b, wire, field, &layer->name, true));
        return label_layer(wire, field, layer);
    case 2: return put_string_field(b, wire, field, &layer->type, true);
    case 3: case 4: return put_string_field(b, wire, field, NULL, false);
    case 6: return put_message_with_strings(b, wire, field, param_strings, 1);
    case 7: return put_blob(b, wire, field, "blobs", &layer->num_blobs);
    case 8: case 9: return put_message_with_strings(b, wire, field, rule_strings, 2);
    default: return CBLOB_OK;
    }
}

/* V0LayerParameter (V1's `layer` = 1): name 1, type 2, blobs 50. Its name, type and blobs stand
 * in for the V1 layer's missing ones, as Caffe's upgrade does; its blobs are checked either way. */
static cblob_status put_v0_layer(builder *b, const cb_wire *outer, const cb_wire_field *field, layer_build *layer)
{
    CB_TRY(cb_wire_expect(outer, field, CB_WIRE_LENGTH, "V0LayerParameter"));
    cb_wire_path path = {.parent = outer->path, .message = &caffe__v0_layer_parameter__descriptor, .field = "layer",
                         .index = -1};
    if (b->model != NULL)
        CB_TRY(begin_nested(b, field, CB_OP_MESSAGE));
    cb_wire wire = cb_wire_nested(outer, field, &path);
    int64_t v0_blobs = 0;
    for (;;) {
        cb_wire_field inner;
        CB_TRY(cb_wire_next(&wire, &inner));
        if (inner.number == 0)
            break;
        if (inner.number == 1)
            CB_TRY(put_string_field(b, &wire, &inner, layer->own_name ? NULL : &layer->name, true));
        else if (inner.number == 2)
            CB_TRY(put_string_field(b, &wire, &inner, layer->own_type ? NULL : &layer->type, true));
        else if (inner.number == 50 && !layer->own_blobs)
            CB_TRY(put_blob(b, &wire, &inner, "blobs", &layer->num_blobs));
        else if (inner.number == 50) {
            cb_blob_layout layout;
            cb_shape shape;
            CB_TRY(check_blob(&wire, &inner, "blobs", v0_blobs++, &layout, &shape));
        }
    }
    return b->model != NULL ? end_nested(b, field) : CBLOB_OK;
}

/* V1LayerParameter: bottom 2, top 3, name 4, type 5 (LayerType), blobs 6, param 1001 (names),
 * include 32, exclude 33, and the V0 layer (1). */
static cblob_status put_v1_field(builder *b, const cb_wire *wire, const cb_wire_field *field, layer_build *layer)
{
    switch (field->number) {
    case 4:
        CB_TRY(put_string_field(b, wire, field, &layer->name, true));
        return label_layer(wire, field, layer);
    case 5:
        CB_TRY(cb_wire_expect(wire, field, CB_WIRE_VARINT, "LayerType enum"));
        layer->v1_type = (int32_t)(uint32_t)field->varint; /* int32 varint rules */
        return CBLOB_OK;
    case 2: case 3: case 1001: return put_string_field(b, wire, field, NULL, false);
    case 6: return put_blob(b, wire, field, "blobs", &layer->num_blobs);
    case 32: case 33: return put_message_with_strings(b, wire, field, rule_strings, 2);
    case 1: return put_v0_layer(b, wire, field, layer);
    default: return CBLOB_OK;
    }
}

/* Counts what a layer holds before it is written: its blobs (a V1 layer's own, else its V0
 * layer's), and which of name, type and blobs a V1 layer has itself. Malformed bytes stop the
 * count; the walk that follows reports them. */
static void survey_layer(const builder *b, const cb_wire_field *field, bool v1, layer_build *layer,
                         int64_t *num_blobs)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_wire wire = cb_wire_range(b->input, field->payload, field->length, NULL);
    int64_t own = 0, nested = 0;
    cb_wire_field inner;
    while (cb_wire_next(&wire, &inner) == CBLOB_OK && inner.number != 0) {
        own += inner.number == (v1 ? 6u : 7u);
        layer->own_name = layer->own_name || (v1 && inner.number == 4);
        layer->own_type = layer->own_type || (v1 && inner.number == 5);
        if (!v1 || inner.number != 1 || inner.type != CB_WIRE_LENGTH)
            continue;
        cb_wire v0 = cb_wire_range(b->input, inner.payload, inner.length, NULL);
        cb_wire_field blob;
        while (cb_wire_next(&v0, &blob) == CBLOB_OK && blob.number != 0)
            nested += blob.number == 50;
    }
    cb_error_restore(&saved);
    layer->own_blobs = own > 0;
    *num_blobs = own > 0 || !v1 ? own : nested;
}

static cblob_status put_string_area(cb_bytes *record, const char *text, uint64_t *offset)
{
    *offset = record->size;
    return cb_bytes_append(record, text, strlen(text) + 1);
}

/* The reported name and type: the layer's own, or text added after the operations. */
static cblob_status finish_record(builder *b, bool v1, layer_build *layer)
{
    CB_TRY(cb_bytes_put_u8(&b->record, CB_OP_END));
    if (layer->name == 0)
        CB_TRY(put_string_area(&b->record, "", &layer->name));
    if (v1 && layer->own_type) {
        const char *known = cb_v1_type_name(layer->v1_type);
        char number[16];
        snprintf(number, sizeof number, "%" PRId32, layer->v1_type);
        return put_string_area(&b->record, known != NULL ? known : number, &layer->type);
    }
    if (layer->type == 0)
        return put_string_area(&b->record, v1 ? "NONE" : "", &layer->type); /* V1: the enum's default */
    return CBLOB_OK;
}

/* Starts a record's body: the top-level fields kept since the last layer, then the layer. */
static cblob_status begin_record(builder *b, const cb_wire_field *field)
{
    b->record.size = 0;
    CB_TRY(flush_run(b, field->offset));
    return begin_nested(b, field, CB_OP_MESSAGE);
}

/* Frees the value arrays of a layer that will not be kept. */
static void drop_arrays(builder *b)
{
    const owned_array *arrays = (const owned_array *)b->arrays.data;
    for (size_t i = 0; i < b->arrays.size / sizeof *arrays; ++i)
        cb_host_free(arrays[i].ptr, arrays[i].size);
    b->arrays.size = 0;
}

static cblob_status walk_layer(builder *b, cb_wire *nested, bool v1, layer_build *layer)
{
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(nested, &field));
        if (field.number == 0)
            return CBLOB_OK;
        CB_TRY(v1 ? put_v1_field(b, nested, &field, layer) : put_v2_field(b, nested, &field, layer));
    }
}

static cblob_status add_layer(builder *b, const cb_wire *wire, const cb_wire_field *field, bool v1, int64_t index)
{
    CB_TRY(cb_wire_expect(wire, field, CB_WIRE_LENGTH, v1 ? "V1LayerParameter" : "LayerParameter"));
    cb_wire_path path = {.parent = wire->path,
                         .message = v1 ? &caffe__v1_layer_parameter__descriptor : &caffe__layer_parameter__descriptor,
                         .field = v1 ? "layers" : "layer",
                         .index = index};
    layer_build layer = {.path = &path};
    int64_t num_blobs = 0;
    survey_layer(b, field, v1, &layer, &num_blobs);
    cblob_status status = b->model != NULL ? begin_record(b, field) : CBLOB_OK;
    cb_wire nested = cb_wire_nested(wire, field, &path);
    if (status == CBLOB_OK)
        status = walk_layer(b, &nested, v1, &layer);
    if (status == CBLOB_OK && layer.num_blobs != num_blobs)
        status = cb_fail(CBLOB_ERR_INTERNAL, "layer %" PRId64 " held %" PRId64 " blobs, then %" PRId64, index,
                         num_blobs, layer.num_blobs);
    free(layer.label);
    if (status == CBLOB_OK && b->model != NULL) {
        status = end_nested(b, field);
        if (status == CBLOB_OK)
            status = finish_record(b, v1, &layer);
        if (status == CBLOB_OK)
            status = cb_model_append_record(b->model, &b->record, layer.name, layer.type, num_blobs);
    }
    if (status != CBLOB_OK)
        drop_arrays(b);
    b->arrays.size = 0; /* the record owns them now */
    let_go_upto(b, field->payload + field->length);
    return status;
}

/* ---- the net ------------------------------------------------------------------------------- */

static cblob_status replace_name(const cb_wire *wire, const cb_wire_field *field, cblob_model *model)
{
    char *name;
    CB_TRY(cb_wire_string(wire, field, &name));
    if (model == NULL) {
        free(name);
        return CBLOB_OK;
    }
    free(model->name);
    model->name = name;
    return CBLOB_OK;
}

/* NetParameter: name 1, layers 2 (V1), layer 100; other fields are kept as they are. */
static cblob_status walk_net(builder *b, size_t size, cblob_net_format *format)
{
    const cb_wire_path root = cb_wire_root(&caffe__net_parameter__descriptor);
    cb_wire wire = cb_wire_begin(b->input, size, &root);
    int64_t layers = 0;
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (field.number == 0)
            break;
        if (field.number == 1) {
            CB_TRY(replace_name(&wire, &field, b->model));
        } else if (field.number == 100 || field.number == 2) {
            const cblob_net_format kind = field.number == 2 ? CBLOB_NET_FORMAT_V1 : CBLOB_NET_FORMAT_V2;
            if (layers > 0 && kind != *format)
                return cb_wire_fail(&root, &field, field.offset,
                                    "the net has both layer (field 100) and layers (field 2, V1); Caffe refuses such input too");
            *format = kind;
            if (b->model != NULL)
                b->model->format = kind;
            CB_TRY(add_layer(b, &wire, &field, kind == CBLOB_NET_FORMAT_V1, layers++));
            b->run_start = wire.pos;
        }
    }
    if (b->model != NULL)
        CB_TRY(cb_bytes_append(&b->model->trailer, b->input + b->run_start, size - b->run_start));
    return CBLOB_OK;
}

static cblob_status build(cblob_context *context, const uint8_t *input, size_t size, bool lazy,
                          cb_done_with_fn *done_with, void *done_context, cblob_model **out)
{
    builder b = {.input = input, .lazy = lazy, .done_with = done_with, .done_context = done_context};
    if (context != NULL)
        CB_TRY(cb_model_new(context, CBLOB_NET_FORMAT_V2, &b.model));
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    cblob_status status = walk_net(&b, size, &format);
    drop_arrays(&b);
    cb_bytes_free(&b.arrays);
    cb_bytes_free(&b.record);
    if (status != CBLOB_OK) {
        if (b.model != NULL)
            cb_model_free(b.model);
        return status;
    }
    if (out != NULL)
        *out = b.model;
    return CBLOB_OK;
}

cblob_status cb_model_build(cblob_context *context, const uint8_t *input, size_t size, cb_done_with_fn *done_with,
                            void *done_context, cblob_model **out)
{
    cblob_model *model = NULL;
    cblob_status status = build(context, input, size, false, done_with, done_context, &model);
    /* A BlobProto or a BlobProtoVector is also valid protobuf of a net without layers. A net
     * with only a name that reads as a blob too stays a net: detection is not sure of it. */
    if (status != CBLOB_OK || (model != NULL && model->num_layers == 0))
        status = cb_net_explain(input, size, status);
    if (status != CBLOB_OK) {
        if (model != NULL)
            cb_model_free(model);
        return status;
    }
    *out = model;
    return CBLOB_OK;
}

cblob_status cb_model_build_lazy(cblob_context *context, const uint8_t *image, size_t size, cblob_model **out)
{
    return build(context, image, size, true, NULL, NULL, out);
}

cblob_status cb_net_check(const uint8_t *input, size_t size)
{
    return build(NULL, input, size, false, NULL, NULL, NULL);
}

