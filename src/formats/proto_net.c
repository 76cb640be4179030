/* SPDX-License-Identifier: BSD-2-Clause */
#include "proto_net.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "varint.h"

/* ---- growable arrays ------------------------------------------------------------------------ */

static cblob_status grow(void **items, int64_t *capacity, int64_t needed, size_t item_size)
{
    if (needed <= *capacity)
        return CBLOB_OK;
    const int64_t next = *capacity > 0 ? *capacity * 2 : 8;
    void *grown = realloc(*items, (size_t)next * item_size);
    if (grown == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to index %" PRId64 " entries", next);
    *items = grown;
    *capacity = next;
    return CBLOB_OK;
}

void cb_blob_list_free(cb_blob_list *list)
{
    free(list->items);
    *list = (cb_blob_list){0};
}

/* Scans the BlobProto in a repeated `blobs` field and checks its shape and counts for the dtype
 * it will be read as. */
static cblob_status scan_blob_field(const cb_wire *wire, const cb_wire_field *field, const char *field_name,
                                    cb_blob_list *list)
{
    CB_TRY(cb_wire_expect(wire, field, CB_WIRE_LENGTH, "BlobProto"));
    const cb_wire_path path = {.parent = wire->path, .message = &caffe__blob_proto__descriptor, .field = field_name,
                               .index = list->count};
    cb_blob_layout layout;
    CB_TRY(cb_blob_layout_scan(cb_wire_nested(wire, field, &path), &layout));
    cb_shape shape;
    const cb_dtype_info *dtype = cb_dtype_find(cb_blob_layout_dtype(&layout));
    CB_TRY(cb_blob_layout_check(&layout, &path, dtype->size, &shape));
    CB_TRY(grow((void **)&list->items, &list->capacity, list->count + 1, sizeof *list->items));
    list->items[list->count++] = layout;
    return CBLOB_OK;
}

static cblob_status detect(const uint8_t *input, size_t size, bool prefix, cblob_proto_kind *out, bool *sure);

/* Bytes of another kind can be valid protobuf for this one too, only empty (a vector's blobs
 * read as a net's name, a net's layers as a vector's unknown fields), or fail in a way that says
 * little (a net's name as a blob's legacy dim). When a reader fails or finds nothing, detection
 * says whether the input is surely something else; if not, the reader's own result stands. */
static cblob_status explain_kind(const uint8_t *input, size_t size, const cb_wire_path *root,
                                 cblob_proto_kind expected, cblob_status result)
{
    static const char *const names[4] = {"", "NetParameter", "BlobProto", "BlobProtoVector"};
    cb_saved_error saved;
    cb_error_save(&saved);
    cblob_proto_kind kind;
    bool sure = false;
    if (size > 0 && detect(input, size, false, &kind, &sure) == CBLOB_OK && sure && kind != expected)
        return cb_wire_fail(root, NULL, 0, "the input holds a %s, not a %s", names[kind], names[expected]);
    cb_error_restore(&saved);
    return result;
}

/* ---- NetParameter ---------------------------------------------------------------------------- */

const char *cb_v1_type_name(int32_t value)
{
    const ProtobufCEnumValue *known =
        protobuf_c_enum_descriptor_get_value(&caffe__v1_layer_parameter__layer_type__descriptor, value);
    return known != NULL ? known->name : NULL;
}

bool cb_v1_type_value(const char *text, int32_t *out)
{
    const ProtobufCEnumValue *known =
        protobuf_c_enum_descriptor_get_value_by_name(&caffe__v1_layer_parameter__layer_type__descriptor, text);
    if (known != NULL) {
        *out = known->value;
        return true;
    }
    /* A value this enum does not name (a fork's layer type) reads back as its decimal number. */
    char *end;
    const long long value = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || value < INT32_MIN || value > INT32_MAX)
        return false;
    *out = (int32_t)value;
    return true;
}

cblob_status cb_net_explain(const uint8_t *input, size_t size, cblob_status status)
{
    const cb_wire_path root = cb_wire_root(&caffe__net_parameter__descriptor);
    return explain_kind(input, size, &root, CBLOB_PROTO_NET, status);
}

/* ---- BlobProtoVector and BlobProto --------------------------------------------------------- */

cblob_status cb_vector_scan(const uint8_t *input, size_t size, cb_blob_list *out)
{
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto_vector__descriptor);
    cb_wire wire = cb_wire_begin(input, size, &root);
    cb_blob_list list = {0};
    cblob_status status = CBLOB_OK;
    for (;;) {
        cb_wire_field field;
        status = cb_wire_next(&wire, &field);
        if (status != CBLOB_OK || field.number == 0)
            break;
        if (field.number == 1)
            status = scan_blob_field(&wire, &field, "blobs", &list);
        if (status != CBLOB_OK)
            break;
    }
    if (status != CBLOB_OK || list.count == 0)
        status = explain_kind(input, size, &root, CBLOB_PROTO_BLOB_VECTOR, status);
    if (status != CBLOB_OK) {
        cb_blob_list_free(&list);
        return status;
    }
    *out = list;
    return CBLOB_OK;
}

cblob_status cb_blob_scan(const uint8_t *input, size_t size, cb_blob_layout *out)
{
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_blob_layout layout;
    cblob_status status = cb_blob_layout_scan(cb_wire_begin(input, size, &root), &layout);
    if (status != CBLOB_OK || layout.known_fields == 0)
        status = explain_kind(input, size, &root, CBLOB_PROTO_BLOB, status);
    if (status != CBLOB_OK)
        return status;
    *out = layout;
    return CBLOB_OK;
}

/* ---- detection ---------------------------------------------------------------------------- */

/* Whether a top-level field is one only a BlobProto has (legacy dims are varints there, and the
 * value fields are packed or fixed-width). */
static bool is_blob_field(const cb_wire_field *field)
{
    switch (field->number) {
    case 1: case 2: case 3: case 4: return field->type == CB_WIRE_VARINT;
    case 5: case 6: return field->type == CB_WIRE_FIXED32 || field->type == CB_WIRE_LENGTH;
    case 7: return field->type == CB_WIRE_LENGTH;
    case 8: case 9: return field->type == CB_WIRE_FIXED64 || field->type == CB_WIRE_LENGTH;
    default: return false;
    }
}

/* A NetParameter field that no BlobProto has: layer, layers, input, force_backward, debug_info. */
static bool is_net_field(const cb_wire_field *field)
{
    return (field->number == 100 && field->type == CB_WIRE_LENGTH) ||
           (field->number == 2 && field->type == CB_WIRE_LENGTH) ||
           (field->number == 3 && field->type == CB_WIRE_LENGTH) ||
           (field->number == 5 && field->type == CB_WIRE_VARINT) ||
           (field->number == 7 && field->type == CB_WIRE_VARINT);
}

/* A field 1 payload that is a valid BlobProto with consistent counts: a vector's blob, not a
 * net's name. Trying a name fails on purpose, which must not replace the caller's message. */
static bool holds_blob(const uint8_t *input, const cb_wire_field *field)
{
    cb_blob_layout layout;
    cb_shape shape;
    const cb_wire_path path = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_saved_error saved;
    cb_error_save(&saved);
    const bool blob =
        cb_blob_layout_scan(cb_wire_range(input, field->payload, field->length, &path), &layout) == CBLOB_OK &&
        cb_blob_layout_check(&layout, &path, cb_dtype_find(cb_blob_layout_dtype(&layout))->size, &shape) == CBLOB_OK;
    cb_error_restore(&saved);
    return blob;
}

/* The top level is malformed. When the fields before the fault already tell the kind, that
 * kind's reader fails on the same fault with a message naming the field ("BlobProto.data"). */
static cblob_status explain_failure(const uint8_t *input, size_t size, bool net, bool blob, cblob_status status)
{
    if (net) {
        if (cb_net_check(input, size) != CBLOB_OK)
            return CBLOB_ERR_PARSE;
    } else if (blob) {
        const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
        cb_blob_layout layout;
        if (cb_blob_layout_scan(cb_wire_begin(input, size, &root), &layout) != CBLOB_OK)
            return CBLOB_ERR_PARSE;
    }
    return status;
}

/* The kind a prefix's first field tells when it runs past the prefix (a blob of a vector, a layer,
 * values larger than the prefix): its tag decides, as the fields before a cut field do. A field 1
 * that long is a vector's blob rather than a net's name. */
static cblob_status detect_cut_field(const uint8_t *input, size_t size, cblob_proto_kind *out, bool *sure)
{
    uint64_t tag = 0;
    size_t length = 0;
    if (cb_varint_decode(input, size, &tag, &length) != CB_VARINT_OK || (tag & 7) != CB_WIRE_LENGTH)
        return CBLOB_ERR_PARSE;
    const cb_wire_field field = {.number = (uint32_t)(tag >> 3), .type = CB_WIRE_LENGTH};
    *sure = false;
    if (is_net_field(&field))
        *out = CBLOB_PROTO_NET;
    else if (field.number == 1)
        *out = CBLOB_PROTO_BLOB_VECTOR;
    else if (is_blob_field(&field))
        *out = CBLOB_PROTO_BLOB;
    else
        return CBLOB_ERR_PARSE;
    return CBLOB_OK;
}

/* The kind, and whether a field only that kind has decided it (a name-only net is a guess). A
 * prefix is the start of a longer input: a field cut by its end ends the walk, and the fields
 * before it decide. */
static cblob_status detect(const uint8_t *input, size_t size, bool prefix, cblob_proto_kind *out, bool *sure)
{
    const cb_wire_path root = {.parent = NULL, .message = NULL, .index = -1};
    if (size == 0)
        return cb_wire_fail(&root, NULL, 0, "the input is empty");
    cb_wire wire = cb_wire_begin(input, size, &root);
    bool net = false, blob = false, named = false, all_blobs = true, has_layers = false, has_values = false;
    bool unnameable = false;
    int64_t fields = 0, entries = 0;
    for (;;) {
        cb_wire_field field;
        const cblob_status status = cb_wire_next(&wire, &field);
        if (status != CBLOB_OK && prefix && fields > 0)
            break;
        if (status != CBLOB_OK && prefix && detect_cut_field(input, size, out, sure) == CBLOB_OK)
            return CBLOB_OK;
        if (status != CBLOB_OK)
            return explain_failure(input, size, net, blob, status);
        if (field.number == 0)
            break;
        ++fields;
        net = net || is_net_field(&field);
        blob = blob || is_blob_field(&field);
        /* Layers make a net certain; values or a shape make a blob certain. The other fields of
         * either are single varints or strings that the other kind could hold too. */
        has_layers = has_layers || ((field.number == 100 || field.number == 2) && field.type == CB_WIRE_LENGTH);
        has_values = has_values || (field.number >= 5 && is_blob_field(&field));
        const bool entry = field.number == 1 && field.type == CB_WIRE_LENGTH;
        const bool entry_is_blob = entry && holds_blob(input, &field);
        all_blobs = all_blobs && entry_is_blob;
        named = named || (entry && !entry_is_blob);
        entries += entry;
        /* A net's name holds no NUL byte (its reader refuses one). */
        unnameable = unnameable || (entry && memchr(input + field.payload, 0, field.length) != NULL);
    }
    *sure = true;
    if (net)
        *out = CBLOB_PROTO_NET, *sure = has_layers;
    else if (blob) /* a BlobProto's field 1 is a varint, never a net's name */
        *out = CBLOB_PROTO_BLOB, *sure = has_values && entries == 0;
    else if (fields > 0 && all_blobs) /* one blob may be a net's name that reads as a blob too */
        *out = CBLOB_PROTO_BLOB_VECTOR, *sure = entries > 1 || unnameable;
    else if (named)
        *out = CBLOB_PROTO_NET, *sure = false; /* a net with a name and no layers */
    else
        return cb_wire_fail(&root, NULL, 0,
                            "holds none of the fields of a NetParameter, BlobProto or BlobProtoVector");
    return CBLOB_OK;
}

cblob_status cb_proto_detect_kind(const uint8_t *input, size_t size, cblob_proto_kind *out)
{
    bool sure;
    return detect(input, size, false, out, &sure);
}

cblob_status cb_proto_detect_prefix(const uint8_t *input, size_t size, cblob_proto_kind *out)
{
    bool sure;
    return detect(input, size, true, out, &sure);
}
