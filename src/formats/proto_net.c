/* SPDX-License-Identifier: BSD-2-Clause */
#include "proto_net.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

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

static cblob_status replace_string(const cb_wire *wire, const cb_wire_field *field, char **slot)
{
    char *text;
    CB_TRY(cb_wire_string(wire, field, &text));
    free(*slot);
    *slot = text;
    return CBLOB_OK;
}

static cblob_status detect(const uint8_t *input, size_t size, cblob_proto_kind *out, bool *sure);

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
    if (size > 0 && detect(input, size, &kind, &sure) == CBLOB_OK && sure && kind != expected)
        return cb_wire_fail(root, NULL, 0, "the input holds a %s, not a %s", names[kind], names[expected]);
    cb_error_restore(&saved);
    return result;
}

/* ---- NetParameter -------------------------------------------------------------------------- */

static void layer_free(cb_layer_index *layer)
{
    free(layer->name);
    free(layer->type);
    cb_blob_list_free(&layer->blobs);
}

void cb_net_index_free(cb_net_index *index)
{
    for (int64_t i = 0; i < index->num_layers; ++i)
        layer_free(&index->layers[i]);
    free(index->layers);
    free(index->name);
    *index = (cb_net_index){0};
}

static cblob_status copy_string(const char *text, char **out)
{
    char *copy = strdup(text);
    if (copy == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte string", strlen(text));
    free(*out);
    *out = copy;
    return CBLOB_OK;
}

/* LayerParameter: name = 1, type = 2, blobs = 7. */
static cblob_status scan_layer(cb_wire wire, cb_wire_path *path, cb_layer_index *layer)
{
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        switch (field.number) {
        case 0:
            if (layer->name == NULL)
                CB_TRY(copy_string("", &layer->name));
            if (layer->type == NULL)
                CB_TRY(copy_string("", &layer->type));
            return CBLOB_OK;
        case 1:
            CB_TRY(replace_string(&wire, &field, &layer->name));
            path->label = layer->name; /* later messages name the layer */
            break;
        case 2: CB_TRY(replace_string(&wire, &field, &layer->type)); break;
        case 7: CB_TRY(scan_blob_field(&wire, &field, "blobs", &layer->blobs)); break;
        default: break;
        }
    }
}

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

static cblob_status v1_type_text(int32_t value, char **out)
{
    const char *name = cb_v1_type_name(value);
    char number[16];
    snprintf(number, sizeof number, "%" PRId32, value);
    return copy_string(name != NULL ? name : number, out);
}

/* V0LayerParameter (nested in V1 as `layer` = 1): name = 1, type = 2, blobs = 50. */
static cblob_status scan_v0_layer(const cb_wire *outer, const cb_wire_field *field, cb_layer_index *v0)
{
    CB_TRY(cb_wire_expect(outer, field, CB_WIRE_LENGTH, "V0LayerParameter"));
    cb_wire_path path = {.parent = outer->path, .message = &caffe__v0_layer_parameter__descriptor, .field = "layer",
                         .index = -1};
    cb_wire wire = cb_wire_nested(outer, field, &path);
    for (;;) {
        cb_wire_field inner;
        CB_TRY(cb_wire_next(&wire, &inner));
        switch (inner.number) {
        case 0: return CBLOB_OK;
        case 1: CB_TRY(replace_string(&wire, &inner, &v0->name)); break;
        case 2: CB_TRY(replace_string(&wire, &inner, &v0->type)); break;
        case 50: CB_TRY(scan_blob_field(&wire, &inner, "blobs", &v0->blobs)); break;
        default: break;
        }
    }
}

/* Takes *from's value when *to has none. */
static void adopt_missing(char **to, char **from)
{
    if (*to == NULL) {
        *to = *from;
        *from = NULL;
    }
}

/* V1LayerParameter: name = 4, type = 5 (LayerType), blobs = 6, and the V0 layer it was upgraded
 * from (layer = 1), whose name, type and blobs stand in for missing V1 ones, as Caffe's upgrade
 * does. */
static cblob_status scan_v1_layer(cb_wire wire, cb_wire_path *path, cb_layer_index *layer)
{
    cb_layer_index v0 = {0};
    cblob_status status = CBLOB_OK;
    for (;;) {
        cb_wire_field field;
        status = cb_wire_next(&wire, &field);
        if (status != CBLOB_OK || field.number == 0)
            break;
        switch (field.number) {
        case 4:
            status = replace_string(&wire, &field, &layer->name);
            path->label = layer->name;
            break;
        case 5:
            status = cb_wire_expect(&wire, &field, CB_WIRE_VARINT, "LayerType enum");
            if (status == CBLOB_OK)
                status = v1_type_text((int32_t)(uint32_t)field.varint, &layer->type); /* int32 varint rules */
            break;
        case 6: status = scan_blob_field(&wire, &field, "blobs", &layer->blobs); break;
        case 1: status = scan_v0_layer(&wire, &field, &v0); break;
        default: break;
        }
        if (status != CBLOB_OK)
            break;
    }
    if (status == CBLOB_OK) {
        adopt_missing(&layer->name, &v0.name);
        adopt_missing(&layer->type, &v0.type);
        if (layer->blobs.count == 0) {
            cb_blob_list_free(&layer->blobs);
            layer->blobs = v0.blobs;
            v0.blobs = (cb_blob_list){0};
        }
        if (layer->name == NULL)
            status = copy_string("", &layer->name);
        if (status == CBLOB_OK && layer->type == NULL)
            status = copy_string("NONE", &layer->type); /* the enum's default */
    }
    layer_free(&v0);
    return status;
}

static cblob_status add_layer(const cb_wire *wire, const cb_wire_field *field, cblob_net_format format,
                              cb_net_index *index)
{
    const bool v1 = format == CBLOB_NET_FORMAT_V1;
    CB_TRY(cb_wire_expect(wire, field, CB_WIRE_LENGTH, v1 ? "V1LayerParameter" : "LayerParameter"));
    if (index->num_layers > 0 && index->format != format)
        return cb_wire_fail(wire->path, field, field->offset,
                            "the net has both layer (field 100) and layers (field 2, V1); Caffe refuses such input too");
    index->format = format;
    CB_TRY(grow((void **)&index->layers, &index->capacity, index->num_layers + 1, sizeof *index->layers));
    cb_layer_index *layer = &index->layers[index->num_layers++];
    *layer = (cb_layer_index){0};
    cb_wire_path path = {.parent = wire->path,
                         .message = v1 ? &caffe__v1_layer_parameter__descriptor : &caffe__layer_parameter__descriptor,
                         .field = v1 ? "layers" : "layer",
                         .index = index->num_layers - 1};
    cb_wire nested = cb_wire_nested(wire, field, &path);
    return v1 ? scan_v1_layer(nested, &path, layer) : scan_layer(nested, &path, layer);
}

/* The scan alone; cb_net_scan adds what detection can tell about a failure. */
static cblob_status scan_net(const uint8_t *input, size_t size, const cb_wire_path *root, cb_net_index *out)
{
    cb_net_index index = {.format = CBLOB_NET_FORMAT_V2};
    cb_wire wire = cb_wire_begin(input, size, root);
    cblob_status status = CBLOB_OK;
    for (;;) {
        cb_wire_field field;
        status = cb_wire_next(&wire, &field);
        if (status != CBLOB_OK || field.number == 0)
            break;
        if (field.number == 1)
            status = replace_string(&wire, &field, &index.name);
        else if (field.number == 100)
            status = add_layer(&wire, &field, CBLOB_NET_FORMAT_V2, &index);
        else if (field.number == 2)
            status = add_layer(&wire, &field, CBLOB_NET_FORMAT_V1, &index);
        if (status != CBLOB_OK)
            break;
    }
    if (status != CBLOB_OK) {
        cb_net_index_free(&index);
        return status;
    }
    *out = index;
    return CBLOB_OK;
}

cblob_status cb_net_scan(const uint8_t *input, size_t size, cb_net_index *out)
{
    const cb_wire_path root = cb_wire_root(&caffe__net_parameter__descriptor);
    cb_net_index index = {0};
    cblob_status status = scan_net(input, size, &root, &index);
    /* A BlobProto or a BlobProtoVector is also valid protobuf of a net without layers. A net
     * with only a name that reads as a blob too stays a net: detection is not sure of it. */
    if (status != CBLOB_OK || index.num_layers == 0)
        status = explain_kind(input, size, &root, CBLOB_PROTO_NET, status);
    if (status != CBLOB_OK) {
        cb_net_index_free(&index);
        return status;
    }
    *out = index;
    return CBLOB_OK;
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
        const cb_wire_path root = cb_wire_root(&caffe__net_parameter__descriptor);
        cb_net_index index;
        if (scan_net(input, size, &root, &index) != CBLOB_OK)
            return CBLOB_ERR_PARSE;
        cb_net_index_free(&index);
    } else if (blob) {
        const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
        cb_blob_layout layout;
        if (cb_blob_layout_scan(cb_wire_begin(input, size, &root), &layout) != CBLOB_OK)
            return CBLOB_ERR_PARSE;
    }
    return status;
}

/* The kind, and whether a field only that kind has decided it (a name-only net is a guess). */
static cblob_status detect(const uint8_t *input, size_t size, cblob_proto_kind *out, bool *sure)
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
    return detect(input, size, out, &sure);
}
