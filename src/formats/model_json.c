/* SPDX-License-Identifier: BSD-2-Clause */
/* A layer as JSON (jansson): its structure, its blobs, and its parameters rendered from the
 * protobuf-c descriptors of proto/caffe_params.proto by one generic renderer. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "caffe_fields.h"
#include "alloc.h"
#include "caffe_params.pb-c.h"
#include "model_json.h"
#include "model_layers.h"
#include "model_values.h"
#include "status.h"
#include "utf8.h"
#include "varint.h"
#include "wire.h"

#define CB_JSON_FLAGS (CBLOB_JSON_DEFAULTS)

/* ---- values ----------------------------------------------------------------------------------- */

/* JSON text of bytes that may not be UTF-8: each byte of a bad sequence becomes U+FFFD. */
json_t *cb_json_text(const char *bytes, size_t length)
{
    if (cb_utf8_valid(bytes, length))
        return json_stringn(bytes, length);
    const size_t size = cb_utf8_repaired_length(bytes, length);
    char *text = cb_malloc(size + 1);
    if (text == NULL)
        return NULL;
    cb_utf8_repair(bytes, length, text);
    json_t *value = json_stringn(text, size);
    free(text);
    return value;
}

/* A float as the shortest decimal that reads back to it (dumped with 15 digits, which keep it). */
static json_t *float_value(float value)
{
    if (isnan(value))
        return json_string("nan");
    if (isinf(value))
        return json_string(value > 0 ? "inf" : "-inf");
    char text[32];
    for (int digits = 1; digits <= 9; ++digits) {
        snprintf(text, sizeof text, "%.*g", digits, (double)value);
        if (strtof(text, NULL) == value)
            break;
    }
    return json_real(strtod(text, NULL));
}

static json_t *double_value(double value)
{
    if (isnan(value))
        return json_string("nan");
    if (isinf(value))
        return json_string(value > 0 ? "inf" : "-inf");
    return json_real(value);
}

static json_t *render_message(const ProtobufCMessage *message, bool defaults);

static json_t *enum_value(const ProtobufCFieldDescriptor *field, int value)
{
    const ProtobufCEnumValue *known = protobuf_c_enum_descriptor_get_value(field->descriptor, value);
    return known != NULL ? json_string(known->name) : json_integer(value);
}

/* One element of a field, at `at`. */
static json_t *element(const ProtobufCFieldDescriptor *field, const void *at, bool defaults)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: return json_integer(*(const int32_t *)at);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: return json_integer(*(const uint32_t *)at);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: return json_integer(*(const int64_t *)at);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: return json_integer((json_int_t) * (const uint64_t *)at);
    case PROTOBUF_C_TYPE_FLOAT: return float_value(*(const float *)at);
    case PROTOBUF_C_TYPE_DOUBLE: return double_value(*(const double *)at);
    case PROTOBUF_C_TYPE_BOOL: return json_boolean(*(const protobuf_c_boolean *)at);
    case PROTOBUF_C_TYPE_ENUM: return enum_value(field, *(const int *)at);
    case PROTOBUF_C_TYPE_STRING: {
        const char *text = *(char *const *)at;
        return cb_json_text(text != NULL ? text : "", text != NULL ? strlen(text) : 0);
    }
    case PROTOBUF_C_TYPE_BYTES: return json_pack("{s:I}", "bytes", (json_int_t)((const ProtobufCBinaryData *)at)->len);
    case PROTOBUF_C_TYPE_MESSAGE: return render_message(*(ProtobufCMessage *const *)at, defaults);
    }
    return json_null();
}

static size_t element_size(const ProtobufCFieldDescriptor *field)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE: return 8;
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_MESSAGE: return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    default: return 4;
    }
}

/* Whether an optional field is in the message. */
static bool present(const ProtobufCMessage *message, const ProtobufCFieldDescriptor *field)
{
    const char *base = (const char *)message;
    if (field->type == PROTOBUF_C_TYPE_STRING || field->type == PROTOBUF_C_TYPE_MESSAGE) {
        const void *pointer = *(void *const *)(base + field->offset);
        return pointer != NULL && pointer != field->default_value;
    }
    return *(const protobuf_c_boolean *)(base + field->quantifier_offset);
}

/* The default of an absent optional scalar field (protobuf's zero when the schema gives none). */
static json_t *default_value(const ProtobufCFieldDescriptor *field)
{
    static const uint8_t zeros[16];
    if (field->type == PROTOBUF_C_TYPE_MESSAGE)
        return NULL;
    if (field->type == PROTOBUF_C_TYPE_STRING) {
        const char *text = field->default_value != NULL ? *(char *const *)&field->default_value : "";
        return cb_json_text(text, strlen(text));
    }
    if (field->type == PROTOBUF_C_TYPE_ENUM && field->default_value == NULL) {
        const ProtobufCEnumDescriptor *values = field->descriptor;
        return values->n_values > 0 ? json_string(values->values[0].name) : json_integer(0);
    }
    return element(field, field->default_value != NULL ? field->default_value : zeros, false);
}

/* ---- unknown fields, summarised ---------------------------------------------------------------- */

/* Fields no schema knows, one entry per (field, wire type) however many times it is given: how
 * many, their bytes together, and the first one's first bytes. A layer of millions of 2-byte unknown
 * fields makes one entry, not millions of objects (and output 20 times the input). */
#define CB_UNKNOWN_FIRST_BYTES 8

typedef struct unknown_entry {
    uint32_t field;
    int wire_type;
    int64_t count;
    uint64_t bytes;
    size_t first_size;
    uint8_t first[CB_UNKNOWN_FIRST_BYTES];
} unknown_entry;

typedef struct unknown_summary {
    unknown_entry *entries;
    size_t count, capacity;
    size_t *slots; /* open addressing over entries, by (field, wire type): 0 empty, else index + 1 */
    size_t num_slots;
    bool failed; /* no memory: the summary is incomplete, and says so by failing its rendering */
} unknown_summary;

static size_t unknown_hash(uint32_t field, int wire_type, size_t num_slots)
{
    return (size_t)((((uint64_t)field << 3 | (uint64_t)wire_type) * 0x9E3779B97F4A7C15ull) >> 20) & (num_slots - 1);
}

static bool unknown_rehash(unknown_summary *s)
{
    const size_t num_slots = s->num_slots == 0 ? 16 : s->num_slots * 2;
    size_t *slots = cb_calloc(num_slots, sizeof *slots);
    if (slots == NULL)
        return false;
    for (size_t i = 0; i < s->count; ++i) {
        size_t at = unknown_hash(s->entries[i].field, s->entries[i].wire_type, num_slots);
        while (slots[at] != 0)
            at = (at + 1) & (num_slots - 1);
        slots[at] = i + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->num_slots = num_slots;
    return true;
}

static void unknown_add(unknown_summary *s, uint32_t field, int wire_type, const uint8_t *data, size_t size)
{
    if (s->failed)
        return;
    if ((s->count + 1) * 2 > s->num_slots && !unknown_rehash(s)) {
        s->failed = true;
        return;
    }
    size_t at = unknown_hash(field, wire_type, s->num_slots);
    while (s->slots[at] != 0) {
        unknown_entry *entry = &s->entries[s->slots[at] - 1];
        if (entry->field == field && entry->wire_type == wire_type) {
            ++entry->count;
            entry->bytes += size;
            return;
        }
        at = (at + 1) & (s->num_slots - 1);
    }
    if (s->count == s->capacity) {
        const size_t capacity = s->capacity == 0 ? 4 : s->capacity * 2;
        unknown_entry *grown = cb_realloc(s->entries, capacity * sizeof *grown);
        if (grown == NULL) {
            s->failed = true;
            return;
        }
        s->entries = grown;
        s->capacity = capacity;
    }
    unknown_entry *entry = &s->entries[s->count];
    *entry = (unknown_entry){.field = field, .wire_type = wire_type, .count = 1, .bytes = size};
    entry->first_size = size < CB_UNKNOWN_FIRST_BYTES ? size : CB_UNKNOWN_FIRST_BYTES;
    if (entry->first_size > 0)
        memcpy(entry->first, data, entry->first_size);
    s->slots[at] = ++s->count;
}

static void unknown_free(unknown_summary *s)
{
    free(s->entries);
    free(s->slots);
    *s = (unknown_summary){0};
}

/* The summary's entries appended to list (schema 2's unknown_fields); false when memory ran out. */
static bool unknown_append(json_t *list, const unknown_summary *s)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; list != NULL && !s->failed && i < s->count; ++i) {
        const unknown_entry *entry = &s->entries[i];
        char first[2 * CB_UNKNOWN_FIRST_BYTES + 1];
        for (size_t k = 0; k < entry->first_size; ++k) {
            first[2 * k] = hex[entry->first[k] >> 4];
            first[2 * k + 1] = hex[entry->first[k] & 15];
        }
        first[2 * entry->first_size] = '\0';
        if (json_array_append_new(list, json_pack("{s:I,s:i,s:I,s:I,s:s}", "field", (json_int_t)entry->field,
                                                  "wire_type", entry->wire_type, "count", (json_int_t)entry->count,
                                                  "bytes", (json_int_t)entry->bytes, "first_bytes", first)) != 0)
            return false;
    }
    return list != NULL && !s->failed;
}

static json_t *unknown_fields(const ProtobufCMessage *message)
{
    unknown_summary summary = {0};
    for (unsigned i = 0; i < message->n_unknown_fields; ++i) {
        const ProtobufCMessageUnknownField *field = &message->unknown_fields[i];
        /* protobuf-c keeps a length-delimited field's length with its payload: the payload is
         * summarised, as at the layer's own level. */
        uint64_t length = 0;
        size_t prefix = 0;
        if (field->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED ||
            cb_varint_decode(field->data, field->len, &length, &prefix) != CB_VARINT_OK || prefix > field->len)
            prefix = 0;
        unknown_add(&summary, field->tag, (int)field->wire_type, field->data + prefix, field->len - prefix);
    }
    json_t *list = json_array();
    if (!unknown_append(list, &summary)) {
        json_decref(list);
        list = NULL; /* the object holding it fails to be made: no memory, said as such */
    }
    unknown_free(&summary);
    return list;
}

const char *cb_field_name(const ProtobufCFieldDescriptor *field, char buffer[CB_FIELD_NAME_MAX])
{
    const size_t length = strlen(field->name);
    if (length < 2 || field->name[length - 1] != '_' || length > CB_FIELD_NAME_MAX)
        return field->name;
    memcpy(buffer, field->name, length - 1);
    buffer[length - 1] = '\0';
    return buffer;
}

/* Every field the message holds, by name, in field-number order; fields no schema knows under
 * "unknown_fields". */
static json_t *render_message(const ProtobufCMessage *message, bool defaults)
{
    json_t *object = json_object();
    const ProtobufCMessageDescriptor *descriptor = message->descriptor;
    for (unsigned i = 0; object != NULL && i < descriptor->n_fields; ++i) {
        const ProtobufCFieldDescriptor *field = &descriptor->fields[i];
        char name[CB_FIELD_NAME_MAX];
        const char *base = (const char *)message;
        json_t *value = NULL;
        if (field->label == PROTOBUF_C_LABEL_REPEATED) {
            const size_t count = *(const size_t *)(base + field->quantifier_offset);
            const char *array = *(char *const *)(base + field->offset);
            if (count > 0)
                value = json_array();
            for (size_t k = 0; value != NULL && k < count; ++k)
                json_array_append_new(value, element(field, array + k * element_size(field), defaults));
        } else if (present(message, field)) {
            value = element(field, base + field->offset, defaults);
        } else if (defaults) {
            value = default_value(field);
        }
        if (value != NULL)
            json_object_set_new(object, cb_field_name(field, name), value);
    }
    if (object != NULL && message->n_unknown_fields > 0)
        json_object_set_new(object, "unknown_fields", unknown_fields(message));
    return object;
}

/* ---- a layer's parameters ---------------------------------------------------------------------- */

/* Fields the structure calls (and the layer object) show: not parameters. */
static bool is_structure(bool v1, uint32_t number)
{
    static const uint32_t v2_fields[] = {CB_LAYER_NAME, CB_LAYER_TYPE,    CB_LAYER_BOTTOM,  CB_LAYER_TOP,
                                         CB_LAYER_PARAM, CB_LAYER_INCLUDE, CB_LAYER_EXCLUDE, CB_LAYER_PHASE};
    static const uint32_t v1_fields[] = {CB_V1_BOTTOM,  CB_V1_TOP,     CB_V1_NAME, CB_V1_TYPE,
                                         CB_V1_INCLUDE, CB_V1_EXCLUDE, CB_V1_PARAM};
    const uint32_t *list = v1 ? v1_fields : v2_fields;
    const size_t n = v1 ? sizeof v1_fields / sizeof *v1_fields : sizeof v2_fields / sizeof *v2_fields;
    for (size_t i = 0; i < n; ++i)
        if (list[i] == number)
            return true;
    return false;
}

/* Unpacks fields with the *Fields descriptor; NULL when protobuf-c refuses them (a known field of
 * the wrong wire type, say). */
static ProtobufCMessage *unpack_fields(const ProtobufCMessageDescriptor *descriptor, const uint8_t *bytes, size_t size)
{
    return protobuf_c_message_unpack(descriptor, NULL, size, size > 0 ? bytes : (const uint8_t *)"");
}

/* protobuf-c cannot skip groups (an obsolete wire type forks still use for unknown fields):
 * copies a message's body with its groups left out, and lists them in `groups`. */
static cblob_status strip_groups(const uint8_t *data, size_t size, cb_bytes *out, unknown_summary *groups)
{
    cb_wire wire = cb_wire_begin(data, size, NULL);
    size_t run = 0;
    for (;;) {
        const size_t at = wire.pos;
        wire.skipped_group = false;
        cb_wire_field inner;
        if (cb_wire_next(&wire, &inner) != CBLOB_OK)
            break;
        if (wire.skipped_group) { /* groups lie in [at, the next field) */
            const size_t group_end = !cb_wire_at_end(&inner) ? inner.offset : wire.pos;
            CB_TRY(cb_bytes_append(out, data + run, at - run));
            uint64_t tag = 0;
            size_t tag_size = 0;
            cb_varint_decode(data + at, size - at, &tag, &tag_size);
            unknown_add(groups, (uint32_t)(tag >> 3), 3, data + at, group_end - at);
            run = group_end;
        }
        if (cb_wire_at_end(&inner))
            break;
    }
    return cb_bytes_append(out, data + run, size - run);
}

/* A field with its message's groups left out. */
static cblob_status without_groups(const uint8_t *data, const cb_wire_field *field, cb_bytes *out,
                                   unknown_summary *groups)
{
    cb_bytes payload = {0};
    cblob_status status = strip_groups(data + field->payload, field->length, &payload, groups);
    uint64_t tag = 0;
    size_t tag_size = 0;
    cb_varint_decode(data + field->offset, field->payload - field->offset, &tag, &tag_size);
    if (status == CBLOB_OK)
        status = cb_bytes_append(out, data + field->offset, tag_size);
    if (status == CBLOB_OK)
        status = cb_bytes_put_varint(out, payload.size);
    if (status == CBLOB_OK)
        status = cb_bytes_append(out, payload.data, payload.size);
    cb_bytes_free(&payload);
    return status;
}

/* A parameter field unpacked (with its groups left out when protobuf-c refuses them), or NULL. */
static ProtobufCMessage *unpack_field(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                                      const cb_wire_field *field, unknown_summary *groups)
{
    const size_t size = field->payload + field->length - field->offset;
    ProtobufCMessage *message = unpack_fields(descriptor, data + field->offset, size);
    if (message != NULL || field->type != CB_WIRE_LENGTH)
        return message;
    cb_bytes stripped = {0};
    if (without_groups(data, field, &stripped, groups) == CBLOB_OK && groups->count > 0)
        message = unpack_fields(descriptor, stripped.data, stripped.size);
    cb_bytes_free(&stripped);
    return message;
}

/* Groups left out of a message join the unknown fields of its rendered object. */
static void add_unknown_groups(json_t *object, const unknown_summary *groups)
{
    if (groups->count == 0)
        return;
    json_t *unknown = json_object_get(object, "unknown_fields");
    if (unknown == NULL)
        json_object_set_new(object, "unknown_fields", unknown = json_array());
    unknown_append(unknown, groups);
}

/* Groups left out of a field's message join the unknown fields of the message rendered. */
static void add_groups(json_t *rendered, const unknown_summary *groups)
{
    const char *key;
    json_t *value;
    json_object_foreach(rendered, key, value)
    {
        if (json_is_object(value))
            add_unknown_groups(value, groups);
    }
}

/* Renders what protobuf-c unpacked, leaving out structure fields; a field it cannot unpack is
 * shown as an unknown one. */
static cblob_status render_params(const cblob_model *model, const cb_bytes *fields, int32_t flags, json_t *params)
{
    const bool v1 = model->format == CBLOB_NET_FORMAT_V1;
    const ProtobufCMessageDescriptor *descriptor =
        v1 ? &caffe__v1_layer_parameter_fields__descriptor : &caffe__layer_parameter_fields__descriptor;
    cb_wire wire = cb_wire_begin(fields->data, fields->size, NULL);
    unknown_summary unknown = {0};
    for (;;) {
        cb_wire_field field;
        if (cb_wire_next(&wire, &field) != CBLOB_OK || cb_wire_at_end(&field))
            break;
        if (is_structure(v1, field.number))
            continue;
        unknown_summary groups = {0};
        ProtobufCMessage *message = protobuf_c_message_descriptor_get_field(descriptor, field.number) != NULL
                                        ? unpack_field(descriptor, fields->data, &field, &groups)
                                        : NULL;
        if (message == NULL) {
            unknown_free(&groups);
            unknown_add(&unknown, field.number, field.type, fields->data + field.payload, field.length);
            continue;
        }
        json_t *rendered = render_message(message, (flags & CBLOB_JSON_DEFAULTS) != 0);
        add_groups(rendered, &groups);
        unknown_free(&groups);
        const char *key;
        json_t *value;
        json_object_foreach(rendered, key, value)
        {
            json_t *existing = json_object_get(params, key);
            /* Repeated fields given in several pieces, or a message given twice: one entry. */
            if (json_is_array(existing) && json_is_array(value))
                json_array_extend(existing, value);
            else if (json_is_object(existing) && json_is_object(value))
                json_object_update(existing, value);
            else
                json_object_set(params, key, value);
        }
        json_decref(rendered);
        protobuf_c_message_free_unpacked(message, NULL);
    }
    bool listed = true;
    if (unknown.count > 0 || unknown.failed) {
        json_t *list = json_array();
        listed = unknown_append(list, &unknown) && json_object_set_new(params, "unknown_fields", json_incref(list)) == 0;
        json_decref(list);
    }
    unknown_free(&unknown);
    return listed ? CBLOB_OK : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a layer's unknown fields");
}

/* The layer's fields, less its blobs: its field's payload. */
static cblob_status layer_fields(const cb_layer *layer, cb_bytes *out)
{
    uint8_t *bytes = NULL;
    size_t size = 0;
    CB_TRY(cb_layer_bytes_without_blobs(layer, &bytes, &size));
    uint64_t value = 0;
    size_t pos = 0, used = 0;
    cb_varint_decode(bytes, size, &value, &used); /* the field's tag and length */
    pos += used;
    cb_varint_decode(bytes + pos, size - pos, &value, &used);
    pos += used;
    memmove(bytes, bytes + pos, size - pos);
    *out = (cb_bytes){.data = bytes, .size = size - pos, .capacity = size};
    return CBLOB_OK;
}

static cblob_status layer_params(const cblob_model *model, int64_t layer, int32_t flags, json_t **out)
{
    const cb_layer *found = NULL;
    CB_TRY(cb_model_layer(model, layer, &found));
    cb_bytes fields = {0};
    cblob_status status = layer_fields(found, &fields);
    json_t *params = json_object();
    if (status == CBLOB_OK && params == NULL)
        status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a JSON object");
    if (status == CBLOB_OK)
        status = render_params(model, &fields, flags, params);
    cb_bytes_free(&fields);
    if (status != CBLOB_OK) {
        json_decref(params);
        return status;
    }
    *out = params;
    return CBLOB_OK;
}

/* ---- the layer object ------------------------------------------------------------------------- */

static json_t *phase_value(cblob_phase phase)
{
    return phase == CBLOB_PHASE_TRAIN ? json_string("TRAIN") : phase == CBLOB_PHASE_TEST ? json_string("TEST")
           : phase == CBLOB_PHASE_NONE ? json_null() : json_integer(phase);
}

static json_t *text_value(const char *text)
{
    return cb_json_text(text, strlen(text));
}

/* A nested NetStateRule or ParamSpec, rendered from its own bytes (groups left out and listed). */
static json_t *nested_value(const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *descriptor)
{
    cb_bytes stripped = {0};
    json_t *value = NULL;
    unknown_summary groups = {0};
    ProtobufCMessage *message = unpack_fields(descriptor, data, size);
    if (message == NULL && strip_groups(data, size, &stripped, &groups) == CBLOB_OK)
        message = unpack_fields(descriptor, stripped.data, stripped.size);
    value = message != NULL ? render_message(message, false) : NULL;
    if (message != NULL)
        protobuf_c_message_free_unpacked(message, NULL);
    if (value != NULL)
        add_unknown_groups(value, &groups);
    unknown_free(&groups);
    cb_bytes_free(&stripped);
    return value != NULL ? value : json_object();
}

typedef struct structure_json {
    json_t *bottoms, *tops, *include, *exclude, *param;
} structure_json;

/* The structure fields of a layer, from its index. */
static void gather_structure(const cb_layer_index *index, bool v1, structure_json *s)
{
    for (int64_t i = 0; i < index->num_bottoms; ++i)
        json_array_append_new(s->bottoms, text_value(index->bottoms[i]));
    for (int64_t i = 0; i < index->num_tops; ++i)
        json_array_append_new(s->tops, text_value(index->tops[i]));
    for (int kind = 0; kind < 2; ++kind)
        for (int64_t i = 0; i < index->num_rules[kind]; ++i)
            json_array_append_new(kind == CBLOB_RULE_INCLUDE ? s->include : s->exclude,
                                  nested_value(index->rules[kind][i].bytes, index->rules[kind][i].length,
                                               &caffe__net_state_rule__descriptor));
    if (v1) {
        for (int64_t i = 0; i < index->num_param_names; ++i)
            json_array_append_new(s->param, json_pack("{s:o}", "name", text_value(index->specs[i].name)));
        return;
    }
    for (int64_t i = 0; i < index->num_specs; ++i)
        json_array_append_new(s->param, nested_value(index->specs[i].bytes, index->specs[i].length,
                                                     &caffe__param_spec__descriptor));
}

static cblob_status blobs_value(const cblob_model *model, int64_t layer, json_t **out)
{
    json_t *blobs = json_array();
    for (int64_t i = 0; blobs != NULL && i < (int64_t)model->layers[layer].num_blobs; ++i) {
        cb_blob_facts facts;
        cblob_status status = cb_model_blob_facts(model, layer, i, &facts);
        if (status != CBLOB_OK) {
            json_decref(blobs);
            return status;
        }
        json_t *shape = json_array();
        for (int32_t a = 0; a < facts.num_axes; ++a)
            json_array_append_new(shape, json_integer(facts.dims[a]));
        json_array_append_new(blobs, json_pack("{s:o,s:I,s:s,s:b}", "shape", shape, "count", (json_int_t)facts.count,
                                               "dtype", cb_dtype_find(facts.dtype)->name, "has_diff", facts.has_diff));
    }
    *out = blobs;
    return CBLOB_OK;
}

static cblob_status layer_object(const cblob_model *model, int64_t layer, int32_t flags, json_t **out)
{
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    structure_json s = {.bottoms = json_array(), .tops = json_array(), .include = json_array(),
                        .exclude = json_array(), .param = json_array()};
    gather_structure(index, model->format == CBLOB_NET_FORMAT_V1, &s);
    const cblob_phase phase = index->phase;
    json_t *params = NULL, *blobs = NULL;
    cblob_status status = layer_params(model, layer, flags, &params);
    if (status == CBLOB_OK)
        status = blobs_value(model, layer, &blobs);
    const char *name = model->layers[layer].name, *type = model->layers[layer].type;
    json_t *object = status != CBLOB_OK ? NULL
                                        : json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name",
                                                    cb_json_text(name, strlen(name)), "type", cb_json_text(type, strlen(type)),
                                                    "bottoms", s.bottoms, "tops", s.tops, "phase", phase_value(phase),
                                                    "include", s.include, "exclude", s.exclude, "param", s.param,
                                                    "params", params, "blobs", blobs);
    if (object == NULL) {
        if (status == CBLOB_OK) /* json_pack took the references it was given */
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for layer %" PRId64 "'s JSON", layer);
        json_decref(s.bottoms), json_decref(s.tops), json_decref(s.include), json_decref(s.exclude);
        json_decref(s.param), json_decref(params), json_decref(blobs);
        return status;
    }
    *out = object;
    return CBLOB_OK;
}

/* ---- the calls -------------------------------------------------------------------------------- */

static cblob_status check_flags(int32_t flags)
{
    if (flags & ~CB_JSON_FLAGS)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "flags 0x%x has bits no CBLOB_JSON_* flag names", (unsigned)flags);
    return CBLOB_OK;
}

cblob_status cb_json_return(json_t *value, char *buffer, size_t buffer_size, size_t *out_length)
{
    char *text = json_dumps(value, JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY);
    json_decref(value);
    if (text == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for JSON text");
    const cblob_status status = cb_return_text(text, buffer, buffer_size, out_length);
    free(text);
    return status;
}

CBLOB_API cblob_status cblob_model_layer_params_json(const cblob_model *model, int64_t layer, int32_t flags,
                                                     char *buffer, size_t buffer_size, size_t *out_length)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags));
    CB_REQUIRE(out_length);
    json_t *params = NULL;
    CB_TRY(layer_params(model, layer, flags, &params));
    return cb_json_return(params, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_model_layer_json(const cblob_model *model, int64_t layer, int32_t flags, char *buffer,
                                              size_t buffer_size, size_t *out_length)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags));
    CB_REQUIRE(out_length);
    json_t *object = NULL;
    CB_TRY(layer_object(model, layer, flags, &object));
    return cb_json_return(object, buffer, buffer_size, out_length);
}
