/* SPDX-License-Identifier: BSD-2-Clause */
/* Protobuf's text format, written as Caffe's WriteProtoToTextFile writes it (C++ protobuf's
 * TextFormat::Print), by one generic printer driven by the protobuf-c descriptors of
 * proto/caffe_params.proto and proto/caffe_blobs.proto: the same descriptors the JSON renderer
 * uses (model_json.c), so no second description of Caffe's messages exists.
 *
 * The printer reads a message's wire bytes itself rather than unpacking them with protobuf-c:
 * protobuf-c drops unknown fields' bytes in ways text must not (groups, which it cannot skip),
 * and the printer must say what protobuf's parser would have made of each field. What it does, as
 * C++ protobuf's parser and printer do:
 * - known fields in field-number order, a repeated field's elements in order (packed or not);
 * - a singular scalar given several times: the last; a singular message: all of them merged;
 * - a field of the wrong wire type, or an enum number its enum does not name (proto2), is an
 *   unknown field; unknown fields follow the known ones, in the order they came, by number:
 *   varints in decimal, fixed32 and fixed64 as 0x and 8 or 16 hex digits, a length-delimited
 *   field as a nested block when its bytes parse as a message and as a string otherwise, a group
 *   as a nested block;
 * - strings C-escaped (\n \r \t \" \' \\ and every other byte outside printable ASCII as three
 *   octal digits): the text is ASCII whatever the names hold;
 * - floats with 6 significant digits when those read back to the same float, else 9 (doubles: 15,
 *   else 17); inf, -inf and nan as such;
 * - enums by name, bools as true and false, nested messages in braces indented by two spaces. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "caffe_blobs.pb-c.h"
#include "caffe_params.pb-c.h"
#include "model.h"
#include "model_json.h"
#include "model_text.h"
#include "sink.h"
#include "status.h"
#include "varint.h"
#include "wire.h"

/* protobuf's default recursion limit: deeper input is refused, as protobuf's parser refuses it. */
#define TEXT_MAX_DEPTH 100

/* ---- reading fields ------------------------------------------------------------------------- */

typedef struct text_field {
    uint32_t number;
    int type;        /* CB_WIRE_*; a group is CB_WIRE_GROUP_START with its body in [payload, +length) */
    bool unknown;    /* printed with the unknown fields */
    uint64_t varint; /* CB_WIRE_VARINT, and the bits of FIXED32 and FIXED64 */
    size_t payload, length;
} text_field;

typedef struct text_fields {
    text_field *items;
    size_t count, capacity;
} text_fields;

static void fields_free(text_fields *fields)
{
    free(fields->items);
    *fields = (text_fields){0};
}

static cblob_status fields_add(text_fields *fields, const text_field *field)
{
    if (fields->count == fields->capacity) {
        const size_t capacity = fields->capacity == 0 ? 16 : fields->capacity * 2;
        text_field *items = cb_realloc(fields->items, capacity * sizeof *items);
        if (items == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu fields of a message's text", capacity);
        fields->items = items;
        fields->capacity = capacity;
    }
    fields->items[fields->count++] = *field;
    return CBLOB_OK;
}

/* Reads the field at data[*pos, end): false when the bytes are no valid field (truncated, field
 * number 0, wire type 6 or 7, an end of group that was not opened). A group's body is found by
 * reading its fields up to its end tag. *end_group is set (and no field read) at an end tag. */
static bool read_field(const uint8_t *data, size_t *pos, size_t end, int depth, text_field *field,
                       uint32_t *end_group)
{
    uint64_t tag = 0, value = 0;
    size_t used = 0;
    *end_group = 0;
    if (cb_varint_decode(data + *pos, end - *pos, &tag, &used) != CB_VARINT_OK || tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
        return false;
    *pos += used;
    *field = (text_field){.number = (uint32_t)(tag >> 3), .type = (int)(tag & 7)};
    switch (field->type) {
    case CB_WIRE_VARINT:
        if (cb_varint_decode(data + *pos, end - *pos, &value, &used) != CB_VARINT_OK)
            return false;
        *pos += used;
        field->varint = value;
        return true;
    case CB_WIRE_FIXED64:
    case CB_WIRE_FIXED32: {
        const size_t size = field->type == CB_WIRE_FIXED64 ? 8 : 4;
        if (end - *pos < size)
            return false;
        memcpy(&field->varint, data + *pos, size); /* little-endian hosts only (wire.h) */
        field->payload = *pos;
        field->length = size;
        *pos += size;
        return true;
    }
    case CB_WIRE_LENGTH:
        if (cb_varint_decode(data + *pos, end - *pos, &value, &used) != CB_VARINT_OK)
            return false;
        *pos += used;
        if (value > end - *pos)
            return false;
        field->payload = *pos;
        field->length = (size_t)value;
        *pos += (size_t)value;
        return true;
    case CB_WIRE_GROUP_START: {
        if (depth >= TEXT_MAX_DEPTH)
            return false;
        field->payload = *pos;
        for (;;) {
            const size_t at = *pos;
            text_field inner;
            uint32_t closed = 0;
            if (*pos >= end || !read_field(data, pos, end, depth + 1, &inner, &closed))
                return false;
            if (closed != 0) {
                if (closed != field->number)
                    return false;
                field->length = at - field->payload;
                return true;
            }
        }
    }
    case CB_WIRE_GROUP_END:
        *end_group = field->number;
        return true;
    default: return false;
    }
}

/* Every field of a message's bytes, in order; false when they are no valid message. */
static bool read_fields(const uint8_t *data, size_t size, int depth, text_fields *fields, cblob_status *status)
{
    size_t pos = 0;
    *status = CBLOB_OK;
    while (pos < size) {
        text_field field;
        uint32_t closed = 0;
        if (!read_field(data, &pos, size, depth, &field, &closed) || closed != 0)
            return false;
        if ((*status = fields_add(fields, &field)) != CBLOB_OK)
            return false;
    }
    return true;
}

/* ---- writing values ------------------------------------------------------------------------- */

typedef struct text_writer {
    cb_bytes *out;
    cblob_status status; /* the first failure */
} text_writer;

static void put(text_writer *w, const char *text, size_t size)
{
    if (w->status == CBLOB_OK)
        w->status = cb_bytes_append(w->out, text, size);
}

static void put_text(text_writer *w, const char *text)
{
    put(w, text, strlen(text));
}

static void put_indent(text_writer *w, int indent)
{
    static const char spaces[] = "                                ";
    for (int left = indent * 2; left > 0; left -= (int)(sizeof spaces - 1))
        put(w, spaces, left < (int)(sizeof spaces - 1) ? (size_t)left : sizeof spaces - 1);
}

/* protobuf's CEscape, in double quotes. */
static void put_escaped(text_writer *w, const uint8_t *bytes, size_t size)
{
    put(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < size; ++i) {
        const uint8_t c = bytes[i];
        char escape[8];
        switch (c) {
        case '\n': strcpy(escape, "\\n"); break;
        case '\r': strcpy(escape, "\\r"); break;
        case '\t': strcpy(escape, "\\t"); break;
        case '"': strcpy(escape, "\\\""); break;
        case '\'': strcpy(escape, "\\'"); break;
        case '\\': strcpy(escape, "\\\\"); break;
        default:
            if (c >= 0x20 && c < 0x7f)
                continue;
            snprintf(escape, sizeof escape, "\\%03o", c);
        }
        put(w, (const char *)bytes + run, i - run);
        put_text(w, escape);
        run = i + 1;
    }
    put(w, (const char *)bytes + run, size - run);
    put(w, "\"", 1);
}

void cb_text_float(float value, char text[CB_TEXT_NUMBER_MAX])
{
    if (isnan(value)) {
        strcpy(text, "nan");
        return;
    }
    if (isinf(value)) {
        strcpy(text, value > 0 ? "inf" : "-inf");
        return;
    }
    snprintf(text, CB_TEXT_NUMBER_MAX, "%.*g", FLT_DIG, (double)value);
    if (strtof(text, NULL) != value)
        snprintf(text, CB_TEXT_NUMBER_MAX, "%.*g", FLT_DIG + 3, (double)value);
}

void cb_text_double(double value, char text[CB_TEXT_NUMBER_MAX])
{
    if (isnan(value)) {
        strcpy(text, "nan");
        return;
    }
    if (isinf(value)) {
        strcpy(text, value > 0 ? "inf" : "-inf");
        return;
    }
    snprintf(text, CB_TEXT_NUMBER_MAX, "%.*g", DBL_DIG, value);
    if (strtod(text, NULL) != value) /* 17 digits always read back (C++ protobuf's DBL_DIG + 2) */
        snprintf(text, CB_TEXT_NUMBER_MAX, "%.*g", DBL_DIG + 2, value);
}

/* The wire type a field's elements come in (unpacked). */
static int wire_type_of(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_FLOAT: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_SFIXED32: return CB_WIRE_FIXED32;
    case PROTOBUF_C_TYPE_DOUBLE: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_SFIXED64: return CB_WIRE_FIXED64;
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_BYTES: case PROTOBUF_C_TYPE_MESSAGE: return CB_WIRE_LENGTH;
    default: return CB_WIRE_VARINT;
    }
}

/* A scalar element's text (not strings, bytes or messages); false for an enum number its enum does
 * not name. */
static bool scalar_text(const ProtobufCFieldDescriptor *field, uint64_t bits, char text[CB_TEXT_NUMBER_MAX])
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32: snprintf(text, CB_TEXT_NUMBER_MAX, "%" PRId32, (int32_t)(uint32_t)bits); break;
    case PROTOBUF_C_TYPE_SFIXED32: snprintf(text, CB_TEXT_NUMBER_MAX, "%" PRId32, (int32_t)(uint32_t)bits); break;
    case PROTOBUF_C_TYPE_SINT32:
        snprintf(text, CB_TEXT_NUMBER_MAX, "%" PRId32,
                 (int32_t)((uint32_t)bits >> 1) ^ -(int32_t)((uint32_t)bits & 1));
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: snprintf(text, CB_TEXT_NUMBER_MAX, "%" PRIu32, (uint32_t)bits); break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SFIXED64: snprintf(text, CB_TEXT_NUMBER_MAX, "%" PRId64, (int64_t)bits); break;
    case PROTOBUF_C_TYPE_SINT64:
        snprintf(text, CB_TEXT_NUMBER_MAX, "%" PRId64, (int64_t)(bits >> 1) ^ -(int64_t)(bits & 1));
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: snprintf(text, CB_TEXT_NUMBER_MAX, "%" PRIu64, bits); break;
    case PROTOBUF_C_TYPE_BOOL: strcpy(text, bits != 0 ? "true" : "false"); break;
    case PROTOBUF_C_TYPE_FLOAT: {
        float value;
        const uint32_t low = (uint32_t)bits;
        memcpy(&value, &low, sizeof value);
        cb_text_float(value, text);
        break;
    }
    case PROTOBUF_C_TYPE_DOUBLE: {
        double value;
        memcpy(&value, &bits, sizeof value);
        cb_text_double(value, text);
        break;
    }
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumValue *known =
            protobuf_c_enum_descriptor_get_value(field->descriptor, (int32_t)(uint32_t)bits);
        if (known == NULL)
            return false;
        snprintf(text, CB_TEXT_NUMBER_MAX, "%s", known->name);
        break;
    }
    default: return false;
    }
    return true;
}

/* ---- messages ------------------------------------------------------------------------------- */

static void print_message(text_writer *w, const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                          size_t size, int indent, int depth);

static void print_scalar(text_writer *w, const ProtobufCFieldDescriptor *field, const char *text, int indent)
{
    char name[CB_FIELD_NAME_MAX];
    put_indent(w, indent);
    put_text(w, cb_field_name(field, name));
    put(w, ": ", 2);
    put_text(w, text);
    put(w, "\n", 1);
}

static void print_nested(text_writer *w, const char *name, const ProtobufCMessageDescriptor *descriptor,
                         const uint8_t *data, size_t size, int indent, int depth)
{
    put_indent(w, indent);
    put_text(w, name);
    put(w, " {\n", 3);
    print_message(w, descriptor, data, size, indent + 1, depth + 1);
    put_indent(w, indent);
    put(w, "}\n", 2);
}

/* The elements of a packed occurrence of a repeated scalar field; false (nothing printed) when its
 * payload is no whole number of elements, or names an enum number its enum does not. */
static bool print_packed(text_writer *w, const ProtobufCFieldDescriptor *field, const uint8_t *data,
                         const text_field *occurrence, int indent)
{
    const int element = wire_type_of(field->type);
    const size_t end = occurrence->payload + occurrence->length;
    for (int pass = 0; pass < 2; ++pass) { /* checked first, then printed */
        size_t pos = occurrence->payload;
        while (pos < end) {
            uint64_t bits = 0;
            if (element == CB_WIRE_VARINT) {
                size_t used = 0;
                if (cb_varint_decode(data + pos, end - pos, &bits, &used) != CB_VARINT_OK)
                    return false;
                pos += used;
            } else {
                const size_t width = element == CB_WIRE_FIXED64 ? 8 : 4;
                if (end - pos < width)
                    return false;
                memcpy(&bits, data + pos, width);
                pos += width;
            }
            char text[CB_TEXT_NUMBER_MAX];
            if (!scalar_text(field, bits, text))
                return false; /* protobuf keeps the whole run as an unknown field then */
            if (pass == 1)
                print_scalar(w, field, text, indent);
        }
    }
    return true;
}

/* Whether bytes parse as a message (protobuf prints such an unknown field as a nested block). */
static bool parses_as_message(const uint8_t *data, size_t size, int depth)
{
    if (size == 0 || depth >= TEXT_MAX_DEPTH)
        return false;
    text_fields fields = {0};
    cblob_status status;
    const bool ok = read_fields(data, size, depth, &fields, &status);
    fields_free(&fields);
    return ok;
}

static void print_unknown_fields(text_writer *w, const uint8_t *data, const text_fields *fields, bool all,
                                 int indent, int depth);

/* An unknown field's body as protobuf prints an UnknownFieldSet nested in it. */
static void print_unknown_block(text_writer *w, const uint8_t *data, size_t size, int indent, int depth)
{
    text_fields inner = {0};
    cblob_status status;
    if (!read_fields(data, size, depth, &inner, &status) && w->status == CBLOB_OK)
        w->status = status != CBLOB_OK ? status : cb_fail(CBLOB_ERR_PARSE, "an unknown field's bytes stopped parsing");
    print_unknown_fields(w, data, &inner, true, indent, depth + 1);
    fields_free(&inner);
}

static void print_unknown_fields(text_writer *w, const uint8_t *data, const text_fields *fields, bool all,
                                 int indent, int depth)
{
    for (size_t i = 0; i < fields->count && w->status == CBLOB_OK; ++i) {
        const text_field *f = &fields->items[i];
        if (!all && !f->unknown)
            continue;
        char text[48];
        put_indent(w, indent);
        snprintf(text, sizeof text, "%" PRIu32, f->number);
        put_text(w, text);
        switch (f->type) {
        case CB_WIRE_VARINT: snprintf(text, sizeof text, ": %" PRIu64 "\n", f->varint); break;
        case CB_WIRE_FIXED32: snprintf(text, sizeof text, ": 0x%08" PRIx32 "\n", (uint32_t)f->varint); break;
        case CB_WIRE_FIXED64: snprintf(text, sizeof text, ": 0x%016" PRIx64 "\n", f->varint); break;
        case CB_WIRE_LENGTH:
            if (parses_as_message(data + f->payload, f->length, depth + 1)) {
                put(w, " {\n", 3);
                print_unknown_block(w, data + f->payload, f->length, indent + 1, depth + 1);
                put_indent(w, indent);
                strcpy(text, "}\n");
            } else {
                put(w, ": ", 2);
                put_escaped(w, data + f->payload, f->length);
                strcpy(text, "\n");
            }
            break;
        default: /* a group */
            put(w, " {\n", 3);
            print_unknown_block(w, data + f->payload, f->length, indent + 1, depth + 1);
            put_indent(w, indent);
            strcpy(text, "}\n");
        }
        put_text(w, text);
    }
}

/* Descriptor fields sorted by number (protobuf-c lists them so; sorted here whatever it does). */
static int by_number(const void *a, const void *b)
{
    const ProtobufCFieldDescriptor *x = *(const ProtobufCFieldDescriptor *const *)a;
    const ProtobufCFieldDescriptor *y = *(const ProtobufCFieldDescriptor *const *)b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Prints one known field's occurrences (the fields of this number whose wire type fits); marks as
 * unknown what protobuf would keep as unknown. */
static void print_known(text_writer *w, const ProtobufCFieldDescriptor *field, const uint8_t *data,
                        text_fields *fields, int indent, int depth)
{
    char name[CB_FIELD_NAME_MAX];
    const bool repeated = field->label == PROTOBUF_C_LABEL_REPEATED;
    const int element = wire_type_of(field->type);
    const bool packable = element != CB_WIRE_LENGTH;
    text_field *last = NULL;
    cb_bytes merged = {0};
    size_t message_count = 0;
    for (size_t i = 0; i < fields->count && w->status == CBLOB_OK; ++i) {
        text_field *f = &fields->items[i];
        if (f->number != field->id)
            continue;
        const bool packed = packable && f->type == CB_WIRE_LENGTH;
        if (f->type != element && !packed) {
            f->unknown = true;
            continue;
        }
        if (packed) { /* a packed run of a singular field is of the wrong wire type */
            if (!repeated || !print_packed(w, field, data, f, indent))
                f->unknown = true;
            continue;
        }
        if (field->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (repeated) {
                print_nested(w, cb_field_name(field, name), field->descriptor, data + f->payload, f->length, indent, depth);
            } else {
                ++message_count;
                if (w->status == CBLOB_OK)
                    w->status = cb_bytes_append(&merged, data + f->payload, f->length);
            }
            continue;
        }
        char text[CB_TEXT_NUMBER_MAX];
        if (field->type != PROTOBUF_C_TYPE_STRING && field->type != PROTOBUF_C_TYPE_BYTES &&
            !scalar_text(field, f->varint, text)) {
            f->unknown = true; /* an enum number the enum does not name */
            continue;
        }
        if (!repeated) {
            last = f;
            continue;
        }
        if (field->type == PROTOBUF_C_TYPE_STRING || field->type == PROTOBUF_C_TYPE_BYTES) {
            put_indent(w, indent);
            put_text(w, cb_field_name(field, name));
            put(w, ": ", 2);
            put_escaped(w, data + f->payload, f->length);
            put(w, "\n", 1);
        } else {
            print_scalar(w, field, text, indent);
        }
    }
    if (message_count > 0)
        print_nested(w, cb_field_name(field, name), field->descriptor, merged.size > 0 ? merged.data : (const uint8_t *)"",
                     merged.size, indent, depth);
    cb_bytes_free(&merged);
    if (last == NULL)
        return;
    if (field->type == PROTOBUF_C_TYPE_STRING || field->type == PROTOBUF_C_TYPE_BYTES) {
        put_indent(w, indent);
        put_text(w, cb_field_name(field, name));
        put(w, ": ", 2);
        put_escaped(w, data + last->payload, last->length);
        put(w, "\n", 1);
        return;
    }
    char text[CB_TEXT_NUMBER_MAX];
    scalar_text(field, last->varint, text);
    print_scalar(w, field, text, indent);
}

static void print_message(text_writer *w, const ProtobufCMessageDescriptor *descriptor, const uint8_t *data,
                          size_t size, int indent, int depth)
{
    if (w->status != CBLOB_OK)
        return;
    text_fields fields = {0};
    cblob_status status = CBLOB_OK;
    if (depth >= TEXT_MAX_DEPTH || !read_fields(data, size, depth, &fields, &status)) {
        w->status = status != CBLOB_OK ? status
                                       : cb_fail(CBLOB_ERR_PARSE, "the net holds a %s whose bytes are no valid message: it has no text form",
                                                 descriptor->short_name);
        fields_free(&fields);
        return;
    }
    const ProtobufCFieldDescriptor **sorted = cb_malloc((descriptor->n_fields + 1) * sizeof *sorted);
    if (sorted == NULL) {
        w->status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %s's fields", descriptor->short_name);
        fields_free(&fields);
        return;
    }
    for (unsigned i = 0; i < descriptor->n_fields; ++i)
        sorted[i] = &descriptor->fields[i];
    qsort(sorted, descriptor->n_fields, sizeof *sorted, by_number);
    for (size_t i = 0; i < fields.count; ++i)
        fields.items[i].unknown = protobuf_c_message_descriptor_get_field(descriptor, fields.items[i].number) == NULL;
    for (unsigned i = 0; i < descriptor->n_fields && w->status == CBLOB_OK; ++i)
        print_known(w, sorted[i], data, &fields, indent, depth);
    print_unknown_fields(w, data, &fields, false, indent, depth);
    free(sorted);
    fields_free(&fields);
}

cblob_status cb_text_message(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data, size_t size,
                             cb_bytes *out)
{
    text_writer w = {.out = out, .status = CBLOB_OK};
    print_message(&w, descriptor, size > 0 ? data : (const uint8_t *)"", size, 0, 0);
    return w.status;
}

/* ---- the net's definition ------------------------------------------------------------------- */

/* The NetParameter as the model would save it with every layer's blobs left out. */
static cblob_status definition_bytes(const cblob_model *model, cb_sink *sink)
{
    size_t top = 0;
    for (int64_t i = 0; i < model->num_layers; ++i) {
        cb_model_emit_top(model, top, model->layers[i].lead_end, sink);
        top = model->layers[i].lead_end;
        CB_TRY(cb_layer_emit(&model->layers[i], NULL, NULL, sink));
    }
    cb_model_emit_top(model, top, model->top.size, sink);
    return sink->status;
}

cblob_status cb_model_definition_text(const cblob_model *model, cb_bytes *out)
{
    cb_model_lock(model);
    cb_sink counter;
    cb_sink_count(&counter);
    cblob_status status = definition_bytes(model, &counter);
    uint8_t *bytes = NULL;
    const size_t size = (size_t)counter.size;
    if (status == CBLOB_OK && (bytes = cb_malloc(size + 1)) == NULL)
        status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the net's definition (%zu bytes)", size);
    if (status == CBLOB_OK) {
        cb_sink sink;
        cb_sink_buffer(&sink, bytes, size);
        status = definition_bytes(model, &sink);
    }
    cb_model_unlock(model);
    if (status == CBLOB_OK)
        status = cb_text_message(&caffe__net_parameter_fields__descriptor, bytes, size, out);
    free(bytes);
    return status;
}

/* ---- the calls ------------------------------------------------------------------------------ */

cblob_status cb_text_emit(cblob_status made, cb_bytes *text, cb_sink *sink)
{
    if (made == CBLOB_OK) {
        cb_sink_expect(sink, text->size);
        cb_sink_write(sink, text->data, text->size);
        made = sink->status;
    }
    cb_bytes_free(text);
    return made;
}

cblob_status cb_text_return(cblob_status made, cb_bytes *text, char *buffer, size_t buffer_size, size_t *out_length)
{
    if (made == CBLOB_OK)
        made = cb_bytes_append(text, "", 1); /* its NUL: the text holds none (all escaped) */
    if (made == CBLOB_OK)
        made = cb_return_text((const char *)text->data, buffer, buffer_size, out_length);
    cb_bytes_free(text);
    return made;
}

static cblob_status emit_definition(const void *what, cb_sink *sink)
{
    cb_bytes text = {0};
    return cb_text_emit(cb_model_definition_text(what, &text), &text, sink);
}

CBLOB_API cblob_status cblob_model_to_prototxt(const cblob_model *model, char *buffer, size_t buffer_size,
                                               size_t *out_length)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_length);
    cb_bytes text = {0};
    return cb_text_return(cb_model_definition_text(model, &text), &text, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_model_to_prototxt_file(const cblob_model *model, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(path);
    return cb_emit_to_file(model->context, emit_definition, model, path);
}
