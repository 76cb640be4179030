/* SPDX-License-Identifier: BSD-2-Clause */
/* A layer as JSON, written as it is made: a writer over the layer's own bytes, driven by the
 * protobuf-c descriptors of proto/caffe_params.proto. Nothing is unpacked and no tree is built, so
 * the memory a layer's JSON takes does not grow with the layer (issue 32: 1 MiB of include rules
 * once took 130 bytes of memory per byte of input, through protobuf-c's unpack and a Jansson tree).
 *
 * protobuf lets a message's fields come in any order: a repeated field's elements may be spread
 * between other fields, and a message field given twice is the merge of both (protobuf-c merges
 * them, as if their bytes were concatenated). A message is rendered in field-number order, so the
 * writer reads its bytes once to learn which fields it holds (and to summarise the fields no schema
 * knows), then once more for each field it holds, taking that field's elements wherever they lie.
 * A message given in several pieces (a field given twice, at any depth) is read as the pieces its
 * parent's pieces give: a "source" names it by its parent and its field number, down to the layer,
 * and is walked again rather than gathered. The passes are bounded by the number of fields of the
 * schema's messages on the path (a constant), so time stays linear in the layer and memory is the
 * writer's buffer, a few words per field of each message on the path, and one entry per distinct
 * unknown (field, wire type) of each message on it.
 *
 * Jansson formats single numbers (so that floats print as they always have); it builds no
 * container. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "caffe_fields.h"
#include "alloc.h"
#include "caffe_params.pb-c.h"
#include "export_common.h"
#include "model_json.h"
#include "model_layers.h"
#include "model_values.h"
#include "sink.h"
#include "status.h"
#include "utf8.h"
#include "varint.h"
#include "wire.h"

#define CB_JSON_FLAGS (CBLOB_JSON_DEFAULTS)
/* How numbers are formatted (Jansson's compact form, reals with 15 digits). */
#define CB_JSON_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY)
/* Nesting of the output: messages in messages (Caffe's schema nests a few deep) and their arrays. */
#define CB_JSON_MAX_DEPTH 128

/* ---- the writer ------------------------------------------------------------------------------- */

/* JSON text as Jansson's JSON_COMPACT writes it, into a sink (a counter, a caller's buffer, a
 * caller's function): the separators of the objects and arrays it is inside, and their nesting.
 * Failures are the sink's (its status): once one happens nothing more is written. */
typedef struct cb_json_writer {
    cb_sink *sink;
    cb_json_out out;
    int depth;
    bool after_key; /* a key was written: its value comes next, with no separator */
    bool has_items[CB_JSON_MAX_DEPTH];
} cb_json_writer;

static void jw_begin(cb_json_writer *w, cb_sink *sink)
{
    *w = (cb_json_writer){.sink = sink, .out = {.sink = sink, .quoting = 0}};
}

static bool jw_ok(const cb_json_writer *w)
{
    return w->sink->status == CBLOB_OK;
}

static void jw_fail(cb_json_writer *w, cblob_status status)
{
    cb_sink_fail(w->sink, status);
}

static void jw_raw(cb_json_writer *w, const char *text, size_t size)
{
    cb_sink_write(w->sink, text, size);
}

/* The separator before an item of the object or array being written. */
static void jw_item(cb_json_writer *w)
{
    if (w->depth > 0 && !w->after_key && w->has_items[w->depth - 1])
        jw_raw(w, ",", 1);
    if (w->depth > 0)
        w->has_items[w->depth - 1] = true;
    w->after_key = false;
}

static void jw_open(cb_json_writer *w, char bracket)
{
    jw_item(w);
    jw_raw(w, &bracket, 1);
    if (w->depth == CB_JSON_MAX_DEPTH) {
        jw_fail(w, cb_fail(CBLOB_ERR_PARSE, "malformed input: parameters nested more than %d deep", CB_JSON_MAX_DEPTH / 2));
        return;
    }
    w->has_items[w->depth++] = false;
}

static void jw_close(cb_json_writer *w, char bracket)
{
    jw_raw(w, &bracket, 1);
    if (w->depth > 0)
        --w->depth;
}

/* A key of the object being written: a schema's field name or one of ours (nothing to escape). */
static void jw_key(cb_json_writer *w, const char *key)
{
    jw_item(w);
    jw_raw(w, "\"", 1);
    jw_raw(w, key, strlen(key));
    jw_raw(w, "\":", 2);
    w->after_key = true;
}

static int jw_dump_piece(const char *text, size_t size, void *data)
{
    cb_json_writer *w = data;
    jw_raw(w, text, size);
    return jw_ok(w) ? 0 : -1;
}

/* A small value made by Jansson (taken over; NULL: Jansson had no memory). */
static void jw_json(cb_json_writer *w, json_t *value)
{
    jw_item(w);
    if (value == NULL) {
        jw_fail(w, cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a JSON value"));
        return;
    }
    if (json_dump_callback(value, jw_dump_piece, w, CB_JSON_DUMP_FLAGS) != 0)
        jw_fail(w, cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a JSON value"));
    json_decref(value);
}

static void jw_int(cb_json_writer *w, int64_t value)
{
    jw_item(w);
    cb_json_integer(&w->out, value);
}

/* Text that may not be UTF-8 (each byte of a bad sequence becomes U+FFFD), escaped as Jansson
 * escapes it, streamed (a string of any length takes no memory of its own). */
static void jw_text(cb_json_writer *w, const char *text, size_t length)
{
    jw_item(w);
    cb_json_string(&w->out, text, length);
}

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

static json_t *enum_value(const ProtobufCFieldDescriptor *field, int value)
{
    const ProtobufCEnumValue *known = protobuf_c_enum_descriptor_get_value(field->descriptor, value);
    return known != NULL ? json_string(known->name) : json_integer(value);
}

/* A schema default (an absent optional scalar field, with CBLOB_JSON_DEFAULTS), at `at`. */
static json_t *default_element(const ProtobufCFieldDescriptor *field, const void *at)
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
    case PROTOBUF_C_TYPE_MESSAGE: break;
    }
    return json_null();
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
    return default_element(field, field->default_value != NULL ? field->default_value : zeros);
}

/* The wire type a field's elements have. */
static int element_wire_type(const ProtobufCFieldDescriptor *field)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return CB_WIRE_FIXED32;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return CB_WIRE_FIXED64;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return CB_WIRE_LENGTH;
    default: return CB_WIRE_VARINT;
    }
}

static bool packable(const ProtobufCFieldDescriptor *field)
{
    return field->label == PROTOBUF_C_LABEL_REPEATED && element_wire_type(field) != CB_WIRE_LENGTH;
}

/* One scalar element from its bytes on the wire (a varint's value, or 4 or 8 fixed bytes), read
 * as protobuf-c reads it: 32-bit types keep the low 32 bits of a varint. */
static void jw_scalar(cb_json_writer *w, const ProtobufCFieldDescriptor *field, uint64_t varint, const uint8_t *fixed)
{
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    if (fixed != NULL) {
        memcpy(&u64, fixed, element_wire_type(field) == CB_WIRE_FIXED64 ? 8 : 4);
        u32 = (uint32_t)u64;
    } else {
        u64 = varint;
        u32 = (uint32_t)varint;
    }
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SFIXED32: jw_int(w, (int32_t)u32); return;
    case PROTOBUF_C_TYPE_SINT32: jw_int(w, (int32_t)((u32 >> 1) ^ (~(u32 & 1) + 1))); return;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: jw_int(w, u32); return;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: jw_int(w, (int64_t)u64); return;
    case PROTOBUF_C_TYPE_SINT64: jw_int(w, (int64_t)((u64 >> 1) ^ (~(u64 & 1) + 1))); return;
    case PROTOBUF_C_TYPE_FLOAT: {
        float value;
        memcpy(&value, &u32, 4);
        jw_json(w, float_value(value));
        return;
    }
    case PROTOBUF_C_TYPE_DOUBLE: {
        double value;
        memcpy(&value, &u64, 8);
        jw_json(w, double_value(value));
        return;
    }
    case PROTOBUF_C_TYPE_BOOL:
        jw_item(w);
        jw_raw(w, u64 != 0 ? "true" : "false", u64 != 0 ? 4 : 5);
        return;
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumValue *known = protobuf_c_enum_descriptor_get_value(field->descriptor, (int32_t)u32);
        if (known != NULL)
            jw_text(w, known->name, strlen(known->name));
        else
            jw_int(w, (int32_t)u32);
        return;
    }
    default: jw_json(w, json_null()); return;
    }
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

/* The summary's entries as schema 2's unknown_fields (an array); no memory for the summary is a
 * failure, not a shorter list. */
static void jw_unknown(cb_json_writer *w, const unknown_summary *s)
{
    static const char hex[] = "0123456789abcdef";
    if (s->failed) {
        jw_fail(w, cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a layer's unknown fields"));
        return;
    }
    jw_key(w, "unknown_fields");
    jw_open(w, '[');
    for (size_t i = 0; i < s->count && jw_ok(w); ++i) {
        const unknown_entry *entry = &s->entries[i];
        char first[2 * CB_UNKNOWN_FIRST_BYTES + 1];
        for (size_t k = 0; k < entry->first_size; ++k) {
            first[2 * k] = hex[entry->first[k] >> 4];
            first[2 * k + 1] = hex[entry->first[k] & 15];
        }
        first[2 * entry->first_size] = '\0';
        jw_open(w, '{');
        jw_key(w, "field");
        jw_int(w, entry->field);
        jw_key(w, "wire_type");
        jw_int(w, entry->wire_type);
        jw_key(w, "count");
        jw_int(w, entry->count);
        jw_key(w, "bytes");
        jw_int(w, (int64_t)entry->bytes);
        jw_key(w, "first_bytes");
        jw_text(w, first, strlen(first));
        jw_close(w, '}');
    }
    jw_close(w, ']');
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

/* ---- what protobuf-c would take ------------------------------------------------------------------ */

static bool valid_message(const uint8_t *data, size_t offset, size_t length, const ProtobufCMessageDescriptor *descriptor,
                          int depth);

/* Whether protobuf-c takes a field of a known number: a wire type its type allows (a repeated
 * scalar also packed, in whole elements), and a message's bytes valid as that message. */
static bool valid_field(const cb_wire *wire, const cb_wire_field *field, const ProtobufCFieldDescriptor *descriptor,
                        int depth)
{
    if (field->type == CB_WIRE_LENGTH && packable(descriptor)) {
        int64_t count = 0;
        return cb_wire_count_elements(wire, field, element_wire_type(descriptor), &count) == CBLOB_OK;
    }
    if (field->type != element_wire_type(descriptor))
        return false;
    return descriptor->type != PROTOBUF_C_TYPE_MESSAGE ||
           valid_message(wire->input, field->payload, field->length, descriptor->descriptor, depth + 1);
}

/* valid_field, keeping the calling thread's error message: a refused field is no failure of the
 * call (the walker's messages for it are not the caller's to read). */
static bool valid_field_quietly(const cb_wire *wire, const cb_wire_field *field,
                                const ProtobufCFieldDescriptor *descriptor)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    const bool valid = valid_field(wire, field, descriptor, 0);
    cb_error_restore(&saved);
    return valid;
}

/* Whether protobuf-c would unpack data[offset, offset + length) as the message: the renderer shows
 * only what it would (a field it refuses is listed as unknown, as it always was). One difference:
 * groups, which protobuf-c cannot skip, are taken at any depth and listed as unknown fields (wire
 * type 3), where they once were only at a parameter message's top level. */
static bool valid_message(const uint8_t *data, size_t offset, size_t length, const ProtobufCMessageDescriptor *descriptor,
                          int depth)
{
    if (depth > CB_JSON_MAX_DEPTH / 4) /* Caffe's messages nest a few deep: not a schema's */
        return false;
    cb_wire wire = cb_wire_range(data, offset, length, NULL);
    for (;;) {
        cb_wire_field field;
        if (cb_wire_next(&wire, &field) != CBLOB_OK)
            return false;
        if (cb_wire_at_end(&field))
            return true;
        const ProtobufCFieldDescriptor *known = protobuf_c_message_descriptor_get_field(descriptor, field.number);
        if (known != NULL && !valid_field(&wire, &field, known, depth))
            return false;
    }
}

/* ---- messages in pieces ------------------------------------------------------------------------ */

/* Called for each field of a message's pieces, in the order of the bytes; a skipped group comes as
 * a field of type CB_WIRE_GROUP_START whose bytes (tags included) are [payload, payload + length). */
typedef cblob_status field_fn(void *context, const cb_wire *wire, const cb_wire_field *field);

/* A message, as the pieces that make it up: at the root, the bytes data[offset, offset + length)
 * (fields whose offset is marked in `refused`, when given, are not part of it); below, every
 * length-delimited field `number` of the parent's pieces, merged as protobuf merges them. */
typedef struct source {
    const struct source *parent;
    uint32_t number;
    const uint8_t *data;
    size_t offset, length;
    const uint8_t *refused; /* a bit per byte offset into data; NULL: none */
} source;

static bool refused_at(const uint8_t *refused, size_t offset)
{
    return refused != NULL && (refused[offset >> 3] >> (offset & 7) & 1) != 0;
}

static cblob_status walk_range(const uint8_t *data, size_t offset, size_t length, const uint8_t *refused, field_fn *fn,
                               void *context)
{
    cb_wire wire = cb_wire_range(data, offset, length, NULL);
    for (;;) {
        const size_t at = wire.pos;
        wire.skipped_group = false;
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (wire.skipped_group) { /* groups lie in [at, the next field) */
            const size_t group_end = !cb_wire_at_end(&field) ? field.offset : wire.pos;
            uint64_t tag = 0;
            size_t tag_size = 0;
            cb_varint_decode(data + at, group_end - at, &tag, &tag_size);
            const cb_wire_field group = {.number = (uint32_t)(tag >> 3), .type = CB_WIRE_GROUP_START, .offset = at,
                                         .payload = at, .length = group_end - at};
            CB_TRY(fn(context, &wire, &group));
        }
        if (cb_wire_at_end(&field))
            return CBLOB_OK;
        if (!refused_at(refused, field.offset))
            CB_TRY(fn(context, &wire, &field));
    }
}

typedef struct descend {
    const source *child;
    field_fn *fn;
    void *context;
} descend;

static cblob_status descend_into(void *context, const cb_wire *wire, const cb_wire_field *field)
{
    const descend *d = context;
    if (field->number != d->child->number || field->type != CB_WIRE_LENGTH)
        return CBLOB_OK;
    return walk_range(wire->input, field->payload, field->length, NULL, d->fn, d->context);
}

/* Calls fn for every field of the message's pieces, in order. */
static cblob_status each_field(const source *s, field_fn *fn, void *context)
{
    if (s->parent == NULL)
        return walk_range(s->data, s->offset, s->length, s->refused, fn, context);
    descend d = {.child = s, .fn = fn, .context = context};
    return each_field(s->parent, descend_into, &d);
}

/* ---- a message rendered ------------------------------------------------------------------------- */

static void render_message(cb_json_writer *w, const source *s, const ProtobufCMessageDescriptor *descriptor,
                           bool defaults);

/* Which of the message's fields its pieces hold (a repeated one: with an element), and those no
 * schema knows, summarised. */
typedef struct message_scan {
    const ProtobufCMessageDescriptor *descriptor;
    bool *present;
    unknown_summary unknown;
} message_scan;

static cblob_status scan_field(void *context, const cb_wire *wire, const cb_wire_field *field)
{
    message_scan *m = context;
    const ProtobufCFieldDescriptor *known =
        field->type == CB_WIRE_GROUP_START ? NULL : protobuf_c_message_descriptor_get_field(m->descriptor, field->number);
    if (known == NULL) {
        unknown_add(&m->unknown, field->number, field->type, wire->input + field->payload, field->length);
        return CBLOB_OK;
    }
    int64_t count = 1;
    if (field->type == CB_WIRE_LENGTH && packable(known))
        CB_TRY(cb_wire_count_elements(wire, field, element_wire_type(known), &count));
    if (count > 0)
        m->present[known - m->descriptor->fields] = true;
    return CBLOB_OK;
}

/* One field's value of a single occurrence: a scalar, a string (up to a NUL, as protobuf-c's C
 * string holds it), bytes ({"bytes": length}), or a message of this one occurrence. */
static void render_element(cb_json_writer *w, const ProtobufCFieldDescriptor *field, const cb_wire *wire,
                           const cb_wire_field *at, bool defaults)
{
    const uint8_t *payload = wire->input + at->payload;
    switch (field->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const void *nul = memchr(payload, 0, at->length);
        jw_text(w, (const char *)payload, nul != NULL ? (size_t)((const uint8_t *)nul - payload) : at->length);
        return;
    }
    case PROTOBUF_C_TYPE_BYTES:
        jw_open(w, '{');
        jw_key(w, "bytes");
        jw_int(w, (int64_t)at->length);
        jw_close(w, '}');
        return;
    case PROTOBUF_C_TYPE_MESSAGE: {
        const source one = {.data = wire->input, .offset = at->payload, .length = at->length};
        render_message(w, &one, field->descriptor, defaults);
        return;
    }
    default:
        jw_scalar(w, field, at->varint, at->type == CB_WIRE_VARINT ? NULL : payload);
    }
}

typedef struct field_render {
    cb_json_writer *w;
    const ProtobufCFieldDescriptor *field;
    bool defaults;
    bool found;          /* a non-repeated field: the last occurrence so far */
    cb_wire last_wire;
    cb_wire_field last;
} field_render;

/* A repeated field's elements from one occurrence (packed or not). */
static cblob_status render_elements(void *context, const cb_wire *wire, const cb_wire_field *field)
{
    field_render *r = context;
    if (field->number != r->field->id || field->type == CB_WIRE_GROUP_START)
        return CBLOB_OK;
    const int type = element_wire_type(r->field);
    if (field->type == CB_WIRE_LENGTH && type != CB_WIRE_LENGTH) {
        const uint8_t *input = wire->input;
        const size_t end = field->payload + field->length;
        for (size_t pos = field->payload; pos < end && jw_ok(r->w);) {
            uint64_t value = 0;
            if (type == CB_WIRE_VARINT) {
                if (!cb_wire_packed_varint(input, &pos, end, &value))
                    return cb_fail(CBLOB_ERR_INTERNAL, "a packed field checked whole did not read back");
                jw_scalar(r->w, r->field, value, NULL);
            } else {
                jw_scalar(r->w, r->field, 0, input + pos);
                pos += type == CB_WIRE_FIXED32 ? 4 : 8;
            }
        }
        return CBLOB_OK;
    }
    if (field->type == type)
        render_element(r->w, r->field, wire, field, r->defaults);
    return jw_ok(r->w) ? CBLOB_OK : r->w->sink->status;
}

static cblob_status note_last(void *context, const cb_wire *wire, const cb_wire_field *field)
{
    field_render *r = context;
    if (field->number == r->field->id && field->type == element_wire_type(r->field)) {
        r->found = true;
        r->last_wire = *wire;
        r->last = *field;
    }
    return CBLOB_OK;
}

/* A field the message's pieces hold: a repeated one's elements wherever they lie, a message's
 * pieces merged, a scalar's last occurrence (protobuf's rules). */
static void render_field(cb_json_writer *w, const source *s, const ProtobufCFieldDescriptor *field, bool defaults)
{
    field_render r = {.w = w, .field = field, .defaults = defaults};
    cblob_status status = CBLOB_OK;
    if (field->label == PROTOBUF_C_LABEL_REPEATED) {
        jw_open(w, '[');
        status = each_field(s, render_elements, &r);
        jw_close(w, ']');
    } else if (field->type == PROTOBUF_C_TYPE_MESSAGE) {
        const source merged = {.parent = s, .number = field->id};
        render_message(w, &merged, field->descriptor, defaults);
    } else {
        status = each_field(s, note_last, &r);
        if (status == CBLOB_OK && r.found)
            render_element(w, field, &r.last_wire, &r.last, defaults);
    }
    if (status != CBLOB_OK)
        jw_fail(w, status);
}

/* Every field the message holds, by name, in field-number order; fields no schema knows under
 * "unknown_fields". With `defaults`, absent optional scalars with their defaults. */
static void render_message(cb_json_writer *w, const source *s, const ProtobufCMessageDescriptor *descriptor,
                           bool defaults)
{
    message_scan m = {.descriptor = descriptor, .present = cb_calloc(descriptor->n_fields + 1, sizeof(bool))};
    cblob_status status = m.present == NULL ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a message's fields")
                                            : each_field(s, scan_field, &m);
    if (status != CBLOB_OK) {
        jw_fail(w, status);
    } else {
        jw_open(w, '{');
        for (unsigned i = 0; i < descriptor->n_fields && jw_ok(w); ++i) {
            const ProtobufCFieldDescriptor *field = &descriptor->fields[i];
            char name[CB_FIELD_NAME_MAX];
            if (m.present[i]) {
                jw_key(w, cb_field_name(field, name));
                render_field(w, s, field, defaults);
            } else if (defaults && field->label != PROTOBUF_C_LABEL_REPEATED && field->type != PROTOBUF_C_TYPE_MESSAGE) {
                jw_key(w, cb_field_name(field, name));
                jw_json(w, default_value(field));
            }
        }
        if (m.unknown.count > 0 || m.unknown.failed)
            jw_unknown(w, &m.unknown);
        jw_close(w, '}');
    }
    unknown_free(&m.unknown);
    free(m.present);
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

/* The layer's parameter fields in the order they first appear (each shown once, its occurrences
 * merged), the occurrences protobuf-c would refuse (marked, and listed as unknown fields), and the
 * fields no schema knows. */
typedef struct layer_scan {
    bool v1;
    const ProtobufCMessageDescriptor *descriptor;
    size_t size;
    uint8_t *refused; /* a bit per byte offset; NULL until a field is refused */
    unsigned *order, num_order;
    bool *seen;
    unknown_summary unknown;
} layer_scan;

static cblob_status scan_layer_field(void *context, const cb_wire *wire, const cb_wire_field *field)
{
    layer_scan *l = context;
    if (field->type != CB_WIRE_GROUP_START && is_structure(l->v1, field->number))
        return CBLOB_OK;
    const ProtobufCFieldDescriptor *known =
        field->type == CB_WIRE_GROUP_START ? NULL : protobuf_c_message_descriptor_get_field(l->descriptor, field->number);
    if (known != NULL && valid_field_quietly(wire, field, known)) {
        int64_t count = 1;
        if (field->type == CB_WIRE_LENGTH && packable(known))
            CB_TRY(cb_wire_count_elements(wire, field, element_wire_type(known), &count));
        const unsigned index = (unsigned)(known - l->descriptor->fields);
        if (count > 0 && !l->seen[index]) {
            l->seen[index] = true;
            l->order[l->num_order++] = index;
        }
        return CBLOB_OK;
    }
    if (known != NULL) {
        if (l->refused == NULL && (l->refused = cb_calloc((l->size >> 3) + 1, 1)) == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to mark a layer's refused fields");
        l->refused[field->offset >> 3] |= (uint8_t)(1u << (field->offset & 7));
    }
    unknown_add(&l->unknown, field->number, field->type, wire->input + field->payload, field->length);
    return CBLOB_OK;
}

/* The parameters object of a layer whose fields (less its blobs) are data[0, size). */
static void write_params(cb_json_writer *w, const uint8_t *data, size_t size, bool v1, bool defaults)
{
    const ProtobufCMessageDescriptor *descriptor =
        v1 ? &caffe__v1_layer_parameter_fields__descriptor : &caffe__layer_parameter_fields__descriptor;
    layer_scan l = {.v1 = v1, .descriptor = descriptor, .size = size,
                    .order = cb_calloc(descriptor->n_fields + 1, sizeof(unsigned)),
                    .seen = cb_calloc(descriptor->n_fields + 1, sizeof(bool))};
    cblob_status status = l.order == NULL || l.seen == NULL
                              ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a layer's parameters")
                              : walk_range(data, 0, size, NULL, scan_layer_field, &l);
    if (status != CBLOB_OK) {
        jw_fail(w, status);
    } else {
        const source layer = {.data = data, .offset = 0, .length = size, .refused = l.refused};
        jw_open(w, '{');
        for (unsigned i = 0; i < l.num_order && jw_ok(w); ++i) {
            const ProtobufCFieldDescriptor *field = &descriptor->fields[l.order[i]];
            char name[CB_FIELD_NAME_MAX];
            jw_key(w, cb_field_name(field, name));
            render_field(w, &layer, field, defaults);
        }
        if (l.unknown.count > 0 || l.unknown.failed)
            jw_unknown(w, &l.unknown);
        jw_close(w, '}');
    }
    unknown_free(&l.unknown);
    free(l.refused);
    free(l.order);
    free(l.seen);
}

/* The parameters of a layer, walked in the bytes its index keeps (no copy of its own). */
static cblob_status layer_params(const cblob_model *model, int64_t layer, int32_t flags, cb_json_writer *w)
{
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    uint64_t value = 0;
    size_t pos = 0, used = 0;
    cb_varint_decode(index->bytes, index->size, &value, &used); /* the layer field's tag and length */
    pos += used;
    cb_varint_decode(index->bytes + pos, index->size - pos, &value, &used);
    pos += used;
    write_params(w, index->bytes + pos, index->size - pos, model->format == CBLOB_NET_FORMAT_V1,
                 (flags & CBLOB_JSON_DEFAULTS) != 0);
    return w->sink->status;
}

/* ---- the layer object ------------------------------------------------------------------------- */

static json_t *phase_value(cblob_phase phase)
{
    return phase == CBLOB_PHASE_TRAIN ? json_string("TRAIN") : phase == CBLOB_PHASE_TEST ? json_string("TEST")
           : phase == CBLOB_PHASE_NONE ? json_null() : json_integer(phase);
}

static void jw_names(cb_json_writer *w, const char *key, const char *const *names, int64_t count)
{
    jw_key(w, key);
    jw_open(w, '[');
    for (int64_t i = 0; i < count && jw_ok(w); ++i)
        jw_text(w, names[i], strlen(names[i]));
    jw_close(w, ']');
}

/* A nested NetStateRule or ParamSpec, rendered from its own bytes ({} when protobuf-c would
 * refuse them). */
static void jw_nested(cb_json_writer *w, const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *descriptor)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    const bool valid = valid_message(data, 0, size, descriptor, 0);
    cb_error_restore(&saved);
    if (!valid) {
        jw_open(w, '{');
        jw_close(w, '}');
        return;
    }
    const source one = {.data = data, .offset = 0, .length = size};
    render_message(w, &one, descriptor, false);
}

static void jw_rules(cb_json_writer *w, const cb_layer_index *index, cblob_rule_kind kind)
{
    jw_key(w, kind == CBLOB_RULE_INCLUDE ? "include" : "exclude");
    jw_open(w, '[');
    for (int64_t i = 0; i < index->num_rules[kind] && jw_ok(w); ++i)
        jw_nested(w, index->rules[kind][i].bytes, index->rules[kind][i].length, &caffe__net_state_rule__descriptor);
    jw_close(w, ']');
}

static void jw_specs(cb_json_writer *w, const cb_layer_index *index, bool v1)
{
    jw_key(w, "param");
    jw_open(w, '[');
    for (int64_t i = 0; v1 && i < index->num_param_names && jw_ok(w); ++i) {
        jw_open(w, '{');
        jw_key(w, "name");
        jw_text(w, index->specs[i].name, strlen(index->specs[i].name));
        jw_close(w, '}');
    }
    for (int64_t i = 0; !v1 && i < index->num_specs && jw_ok(w); ++i)
        jw_nested(w, index->specs[i].bytes, index->specs[i].length, &caffe__param_spec__descriptor);
    jw_close(w, ']');
}

static cblob_status jw_blobs(cb_json_writer *w, const cblob_model *model, int64_t layer)
{
    jw_key(w, "blobs");
    jw_open(w, '[');
    for (int64_t i = 0; i < (int64_t)model->layers[layer].num_blobs && jw_ok(w); ++i) {
        cb_blob_facts facts;
        CB_TRY(cb_model_blob_facts(model, layer, i, &facts));
        json_t *shape = json_array();
        for (int32_t a = 0; a < facts.num_axes; ++a)
            json_array_append_new(shape, json_integer(facts.dims[a]));
        jw_json(w, json_pack("{s:o,s:I,s:s,s:b}", "shape", shape, "count", (json_int_t)facts.count, "dtype",
                             cb_dtype_find(facts.dtype)->name, "has_diff", facts.has_diff));
    }
    jw_close(w, ']');
    return w->sink->status;
}

static cblob_status layer_object(const cblob_model *model, int64_t layer, int32_t flags, cb_json_writer *w)
{
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    const bool v1 = model->format == CBLOB_NET_FORMAT_V1;
    const char *name = model->layers[layer].name, *type = model->layers[layer].type;
    jw_open(w, '{');
    jw_key(w, "name");
    jw_text(w, name, strlen(name));
    jw_key(w, "type");
    jw_text(w, type, strlen(type));
    jw_names(w, "bottoms", index->bottoms, index->num_bottoms);
    jw_names(w, "tops", index->tops, index->num_tops);
    jw_key(w, "phase");
    jw_json(w, phase_value(index->phase));
    jw_rules(w, index, CBLOB_RULE_INCLUDE);
    jw_rules(w, index, CBLOB_RULE_EXCLUDE);
    jw_specs(w, index, v1);
    jw_key(w, "params");
    if (jw_ok(w))
        CB_TRY(layer_params(model, layer, flags, w));
    CB_TRY(jw_blobs(w, model, layer));
    jw_close(w, '}');
    return w->sink->status;
}

/* ---- the calls -------------------------------------------------------------------------------- */

static cblob_status check_flags(int32_t flags)
{
    if (flags & ~CB_JSON_FLAGS)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "flags 0x%x has bits no CBLOB_JSON_* flag names", (unsigned)flags);
    return CBLOB_OK;
}

typedef cblob_status layer_writer(const cblob_model *model, int64_t layer, int32_t flags, cb_json_writer *w);

static cblob_status write_to(cb_sink *sink, layer_writer *write, const cblob_model *model, int64_t layer, int32_t flags)
{
    cb_json_writer w;
    jw_begin(&w, sink);
    const cblob_status status = write(model, layer, flags, &w);
    return status != CBLOB_OK ? status : sink->status;
}

/* The text convention (cb_return_text's) over a writer: measured first, then made in memory of
 * its own and copied into the caller's buffer only when whole, so that a failure part-way (no
 * memory) leaves the buffer as it was. (The streaming calls need neither copy.) */
static cblob_status write_text(layer_writer *write, const cblob_model *model, int64_t layer, int32_t flags,
                               char *buffer, size_t buffer_size, size_t *out_length)
{
    if (buffer == NULL && buffer_size > 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "buffer is NULL but buffer_size is %zu", buffer_size);
    cb_sink sink;
    cb_sink_count(&sink);
    CB_TRY(write_to(&sink, write, model, layer, flags));
    if (sink.size >= SIZE_MAX)
        return cb_fail(CBLOB_ERR_OVERFLOW, "the JSON would take %llu bytes, more than memory can hold",
                       (unsigned long long)sink.size);
    const size_t length = (size_t)sink.size;
    if (buffer != NULL) {
        if (buffer_size <= length)
            return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "a buffer of %zu bytes cannot hold the %zu characters and the NUL",
                           buffer_size, length);
        uint8_t *made = cb_malloc(length + 1);
        if (made == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu bytes of JSON", length + 1);
        cb_sink_buffer(&sink, made, length);
        cblob_status status = write_to(&sink, write, model, layer, flags);
        if (status == CBLOB_OK && sink.size != length)
            status = cb_fail(CBLOB_ERR_INTERNAL, "the JSON took %llu bytes, not the %zu measured",
                             (unsigned long long)sink.size, length);
        if (status == CBLOB_OK) {
            memcpy(buffer, made, length);
            buffer[length] = '\0';
        }
        free(made);
        CB_TRY(status);
    }
    *out_length = length;
    return CBLOB_OK;
}

/* The writer's text handed to a caller's function as it is made. */
static cblob_status write_out(layer_writer *write, const cblob_model *model, int64_t layer, int32_t flags,
                              cblob_write_fn callback, void *user_data)
{
    cb_sink sink;
    cb_sink_callback(&sink, (cb_sink_callback_fn *)callback, user_data);
    const cblob_status status = write_to(&sink, write, model, layer, flags);
    const cblob_status ended = cb_sink_callback_end(&sink);
    return status != CBLOB_OK ? status : ended;
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
    return write_text(layer_params, model, layer, flags, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_model_layer_json(const cblob_model *model, int64_t layer, int32_t flags, char *buffer,
                                              size_t buffer_size, size_t *out_length)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags));
    CB_REQUIRE(out_length);
    return write_text(layer_object, model, layer, flags, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_model_layer_params_json_write(const cblob_model *model, int64_t layer, int32_t flags,
                                                           cblob_write_fn write, void *user_data)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags));
    CB_REQUIRE(write);
    return write_out(layer_params, model, layer, flags, write, user_data);
}

CBLOB_API cblob_status cblob_model_layer_json_write(const cblob_model *model, int64_t layer, int32_t flags,
                                                    cblob_write_fn write, void *user_data)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags));
    CB_REQUIRE(write);
    return write_out(layer_object, model, layer, flags, write, user_data);
}
