/* SPDX-License-Identifier: BSD-2-Clause */
#include "wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "varint.h"

/* Deeper nesting than any Caffe message needs; groups of unknown fields count too. */
#define CB_WIRE_MAX_DEPTH 64
#define CB_WIRE_MAX_FIELD_NUMBER ((1u << 29) - 1)

static const char *const wire_type_names[8] = {
    "varint", "fixed64", "length-delimited", "group start", "group end", "fixed32", "type 6", "type 7",
};

cb_wire_path cb_wire_root(const ProtobufCMessageDescriptor *message)
{
    return (cb_wire_path){.parent = NULL, .message = message, .field = NULL, .index = -1, .label = NULL};
}

cb_wire cb_wire_begin(const uint8_t *input, size_t size, const cb_wire_path *path)
{
    return (cb_wire){.input = input, .pos = 0, .end = size, .path = path};
}

cb_wire cb_wire_range(const uint8_t *input, size_t offset, size_t length, const cb_wire_path *path)
{
    return (cb_wire){.input = input, .pos = offset, .end = offset + length, .path = path};
}

cb_wire cb_wire_nested(const cb_wire *parent, const cb_wire_field *field, const cb_wire_path *path)
{
    return (cb_wire){.input = parent->input,
                     .pos = field->payload,
                     .end = field->payload + field->length,
                     .path = path,
                     .depth = parent->depth + 1,
                     .need = parent->need,
                     .source = parent->source};
}

/* Appends "text" to buffer at *used, never past its end. */
static void append(char *buffer, size_t size, size_t *used, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buffer, size_t size, size_t *used, const char *format, ...)
{
    if (*used >= size)
        return;
    va_list args;
    va_start(args, format);
    int n = vsnprintf(buffer + *used, size - *used, format, args);
    va_end(args);
    if (n > 0)
        *used = *used + (size_t)n < size ? *used + (size_t)n : size;
}

static void format_path(const cb_wire_path *path, char *buffer, size_t size, size_t *used)
{
    if (path == NULL)
        return;
    if (path->parent == NULL) {
        if (path->message != NULL) /* an input of unknown kind has no name yet */
            append(buffer, size, used, "%s", path->message->short_name);
        return;
    }
    format_path(path->parent, buffer, size, used);
    append(buffer, size, used, ".%s", path->field);
    if (path->index >= 0)
        append(buffer, size, used, "[%lld]", (long long)path->index);
    if (path->label != NULL)
        append(buffer, size, used, "(%.64s)", path->label);
}

cblob_status cb_wire_fail(const cb_wire_path *path, const cb_wire_field *field, size_t offset, const char *format,
                          ...)
{
    char where[512];
    size_t used = 0;
    where[0] = '\0';
    format_path(path, where, sizeof where, &used);
    if (field != NULL && !cb_wire_at_end(field)) {
        const ProtobufCFieldDescriptor *known =
            path != NULL && path->message != NULL ? protobuf_c_message_descriptor_get_field(path->message, field->number)
                                                  : NULL;
        const char *dot = used > 0 ? "." : "";
        if (known != NULL)
            append(where, sizeof where, &used, "%s%s", dot, known->name);
        else
            append(where, sizeof where, &used, "%sfield %u", dot, (unsigned)field->number);
    }
    if (used == 0)
        append(where, sizeof where, &used, "the input");
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return cb_fail(CBLOB_ERR_PARSE, "malformed input: %s at byte %zu: %s", where, offset, text);
}

/* Reads a varint at *pos; false when it runs past end or past 10 bytes. */
static bool read_varint(const uint8_t *input, size_t *pos, size_t end, uint64_t *out, bool *too_long)
{
    size_t length = 0;
    const cb_varint_result result = cb_varint_decode(input + *pos, end - *pos, out, &length);
    *too_long = result == CB_VARINT_TOO_LONG;
    *pos += result == CB_VARINT_OK ? length : 0;
    return result == CB_VARINT_OK;
}

bool cb_wire_packed_varint(const uint8_t *input, size_t *pos, size_t end, uint64_t *out)
{
    bool too_long;
    return read_varint(input, pos, end, out, &too_long);
}

static cblob_status read_field(cb_wire *wire, cb_wire_field *field);

/* Skips a group of unknown fields up to its matching end tag. */
static cblob_status skip_group(cb_wire *wire, const cb_wire_field *start)
{
    if (wire->depth >= CB_WIRE_MAX_DEPTH)
        return cb_wire_fail(wire->path, start, start->offset, "groups nested more than %d deep", CB_WIRE_MAX_DEPTH);
    cb_wire inner = *wire;
    inner.depth = wire->depth + 1;
    for (;;) {
        cb_wire_field field;
        if (inner.pos >= inner.end)
            return cb_wire_fail(wire->path, start, start->offset, "the group has no end tag (the input is truncated)");
        CB_TRY(read_field(&inner, &field));
        if (field.type == CB_WIRE_GROUP_END) {
            if (field.number != start->number)
                return cb_wire_fail(wire->path, &field, field.offset, "group end tag for field %u inside a group of field %u",
                                    (unsigned)field.number, (unsigned)start->number);
            wire->pos = inner.pos;
            return CBLOB_OK;
        }
    }
}

/* Reads one tag and its payload bounds; returns group-end tags to the caller. */
static cblob_status read_field(cb_wire *wire, cb_wire_field *field)
{
    memset(field, 0, sizeof *field);
    field->offset = wire->pos;
    if (wire->need != NULL) {
        const size_t to = wire->end - wire->pos < CB_WIRE_HEADER_MAX ? wire->end : wire->pos + CB_WIRE_HEADER_MAX;
        CB_TRY(wire->need(wire->source, wire->pos, to));
    }
    uint64_t tag;
    bool too_long;
    if (!read_varint(wire->input, &wire->pos, wire->end, &tag, &too_long))
        return cb_wire_fail(wire->path, NULL, field->offset, too_long ? "a tag longer than 10 bytes" : "truncated tag");
    if ((tag >> 3) == CB_WIRE_END || (tag >> 3) > CB_WIRE_MAX_FIELD_NUMBER)
        return cb_wire_fail(wire->path, NULL, field->offset, "field number %llu is outside [1, %u]",
                            (unsigned long long)(tag >> 3), CB_WIRE_MAX_FIELD_NUMBER);
    field->number = (uint32_t)(tag >> 3);
    field->type = (int)(tag & 7);
    field->payload = wire->pos;
    const size_t left = wire->end - wire->pos;
    switch (field->type) {
    case CB_WIRE_VARINT:
        if (!read_varint(wire->input, &wire->pos, wire->end, &field->varint, &too_long))
            return cb_wire_fail(wire->path, field, field->offset, too_long ? "a varint longer than 10 bytes" : "truncated varint");
        field->length = wire->pos - field->payload;
        return CBLOB_OK;
    case CB_WIRE_FIXED64:
    case CB_WIRE_FIXED32:
        field->length = field->type == CB_WIRE_FIXED64 ? 8 : 4;
        if (left < field->length)
            return cb_wire_fail(wire->path, field, field->offset, "truncated: a %zu-byte value but %zu bytes left",
                                field->length, left);
        wire->pos += field->length;
        return CBLOB_OK;
    case CB_WIRE_LENGTH: {
        uint64_t length;
        if (!read_varint(wire->input, &wire->pos, wire->end, &length, &too_long))
            return cb_wire_fail(wire->path, field, field->offset, too_long ? "a length longer than 10 bytes" : "truncated length");
        field->payload = wire->pos;
        if (length > wire->end - wire->pos)
            return cb_wire_fail(wire->path, field, field->offset, "truncated: declares %llu bytes but %zu are left",
                                (unsigned long long)length, wire->end - wire->pos);
        field->length = (size_t)length;
        wire->pos += field->length;
        return CBLOB_OK;
    }
    case CB_WIRE_GROUP_START:
        CB_TRY(skip_group(wire, field));
        field->length = wire->pos - field->payload;
        return CBLOB_OK;
    case CB_WIRE_GROUP_END:
        return CBLOB_OK;
    default:
        return cb_wire_fail(wire->path, field, field->offset, "wire type %d does not exist", field->type);
    }
}

cblob_status cb_wire_next(cb_wire *wire, cb_wire_field *field)
{
    if (wire->depth > CB_WIRE_MAX_DEPTH)
        return cb_wire_fail(wire->path, NULL, wire->pos, "messages nested more than %d deep", CB_WIRE_MAX_DEPTH);
    for (;;) {
        if (wire->pos >= wire->end) {
            memset(field, 0, sizeof *field);
            field->offset = wire->pos;
            return CBLOB_OK;
        }
        CB_TRY(read_field(wire, field));
        if (field->type == CB_WIRE_GROUP_END)
            return cb_wire_fail(wire->path, field, field->offset, "a group end tag outside any group");
        if (field->type != CB_WIRE_GROUP_START)
            return CBLOB_OK;
        /* A group is an unknown field to every Caffe message: skipped whole, never returned. */
        wire->skipped_group = true;
    }
}

cblob_status cb_wire_expect(const cb_wire *wire, const cb_wire_field *field, int type, const char *what)
{
    if (field->type != type)
        return cb_wire_fail(wire->path, field, field->offset, "wire type %s, but a %s is %s",
                            wire_type_names[field->type & 7], what, wire_type_names[type]);
    return CBLOB_OK;
}

cblob_status cb_wire_expect_repeated(const cb_wire *wire, const cb_wire_field *field, int element_type,
                                     const char *what)
{
    if (field->type != element_type && field->type != CB_WIRE_LENGTH)
        return cb_wire_fail(wire->path, field, field->offset, "wire type %s, but a repeated %s is %s or packed",
                            wire_type_names[field->type & 7], what, wire_type_names[element_type]);
    return CBLOB_OK;
}

cblob_status cb_wire_need_payload(const cb_wire *wire, const cb_wire_field *field)
{
    return wire->need != NULL ? wire->need(wire->source, field->payload, cb_wire_field_end(field)) : CBLOB_OK;
}

cblob_status cb_wire_count_elements(const cb_wire *wire, const cb_wire_field *field, int element_type,
                                    int64_t *out_count)
{
    if (field->type != CB_WIRE_LENGTH) {
        *out_count = 1;
        return CBLOB_OK;
    }
    if (element_type == CB_WIRE_FIXED32 || element_type == CB_WIRE_FIXED64) {
        const size_t size = element_type == CB_WIRE_FIXED32 ? 4 : 8;
        if (field->length % size != 0)
            return cb_wire_fail(wire->path, field, field->offset,
                                "packed length %zu is not a whole number of %zu-byte values", field->length, size);
        *out_count = (int64_t)(field->length / size);
        return CBLOB_OK;
    }
    CB_TRY(cb_wire_need_payload(wire, field));
    int64_t count = 0;
    size_t pos = field->payload;
    const size_t end = field->payload + field->length;
    while (pos < end) {
        uint64_t ignored;
        const size_t at = pos;
        if (!cb_wire_packed_varint(wire->input, &pos, end, &ignored))
            return cb_wire_fail(wire->path, field, at, "packed varint element %lld is truncated or longer than 10 bytes",
                                (long long)count);
        ++count;
    }
    *out_count = count;
    return CBLOB_OK;
}

cblob_status cb_wire_string(const cb_wire *wire, const cb_wire_field *field, char **out)
{
    CB_TRY(cb_wire_expect(wire, field, CB_WIRE_LENGTH, "string"));
    CB_TRY(cb_wire_need_payload(wire, field));
    const uint8_t *bytes = wire->input + field->payload;
    if (memchr(bytes, 0, field->length) != NULL)
        return cb_wire_fail(wire->path, field, field->offset, "the string holds a NUL byte");
    char *text = malloc(field->length + 1);
    if (text == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte string", field->length);
    memcpy(text, bytes, field->length);
    text[field->length] = '\0';
    *out = text;
    return CBLOB_OK;
}
