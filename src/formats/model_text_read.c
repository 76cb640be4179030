/* SPDX-License-Identifier: BSD-2-Clause */
/* Protobuf's text format read into a net (a prototxt, as Caffe's ReadProtoFromTextFile reads one),
 * by the protobuf-c descriptors the text writer (model_text.c) and the JSON renderer use: the text
 * becomes the NetParameter's wire bytes, which the model reader then reads as it reads a
 * .caffemodel (so a net from text is a model like any other, without weights unless the text
 * gives a layer's `blobs`).
 *
 * What it accepts, as C++ protobuf's TextFormat::Parser does: # comments; fields by name, `:`
 * before a scalar (optional before a message); messages in { } or < >; a repeated field given
 * several times or as a list `[a, b]`; enums by name (or number, when the enum names it); strings
 * in single or double quotes, with C escapes (\n \t \\ \" \' \ooo \xhh ...), adjacent strings
 * joined; integers in decimal, hex (0x) or octal (leading 0); floats with exponent, an f suffix,
 * inf, infinity and nan; true, false, t, f, 1, 0; `,` or `;` after a field. A singular field
 * given twice, a name the message lacks, a value of the wrong type or out of its range is an error
 * naming the line and column. Fields given by number (as the writer writes fields no schema here
 * knows) are read back as protobuf writes unknown fields: an integer as a varint, 0x and 8 or 16
 * hex digits as fixed32 or fixed64, a string as bytes, a block as a nested message.
 *
 * Fields are written in the order the text gives them, repeated scalars one tag each (readers
 * take both encodings). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "caffe_blobs.pb-c.h"
#include "caffe_params.pb-c.h"
#include "model.h"
#include "model_open.h"
#include "model_json.h"
#include "model_text.h"
#include "status.h"
#include "varint.h"
#include "wire.h"

#define TEXT_MAX_DEPTH 100

typedef struct reader {
    const char *name; /* for messages: the file's name, or "the text" */
    const char *text;
    size_t size, pos;
    cblob_status status;
} reader;

/* Line and column (1-based) of a position. */
static void where(const reader *r, size_t at, int *line, int *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < at && i < r->size; ++i) {
        if (r->text[i] == '\n') {
            ++*line;
            *column = 1;
        } else {
            ++*column;
        }
    }
}

static void fail_at(reader *r, size_t at, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(reader *r, size_t at, const char *format, ...)
{
    if (r->status != CBLOB_OK)
        return;
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    int line, column;
    where(r, at, &line, &column);
    r->status = cb_fail(CBLOB_ERR_PARSE, "%s:%d:%d: %s", r->name, line, column, text);
}

/* Caffe's name of a message: LayerParameterFields is caffe.LayerParameter. */
static void message_name(const ProtobufCMessageDescriptor *descriptor, char *out, size_t size)
{
    const char *name = descriptor->name;
    size_t length = strlen(name);
    if (length > 6 && strcmp(name + length - 6, "Fields") == 0)
        length -= 6;
    snprintf(out, size, "%.*s", (int)length, name);
}

/* ---- tokens ------------------------------------------------------------------------------------- */

/* A field's name as Caffe spells it, for messages (cb_field_name: `base_` is `base`). */
static const char *caffe_name(const ProtobufCFieldDescriptor *field)
{
    static _Thread_local char buffer[CB_FIELD_NAME_MAX];
    return cb_field_name(field, buffer);
}

static void skip_space(reader *r)
{
    while (r->pos < r->size) {
        const char c = r->text[r->pos];
        if (c == '#') {
            while (r->pos < r->size && r->text[r->pos] != '\n')
                ++r->pos;
        } else if (isspace((unsigned char)c)) {
            ++r->pos;
        } else {
            return;
        }
    }
}

static bool at_end(reader *r)
{
    skip_space(r);
    return r->pos >= r->size;
}

static bool peek(reader *r, char c)
{
    skip_space(r);
    return r->pos < r->size && r->text[r->pos] == c;
}

static bool accept(reader *r, char c)
{
    if (!peek(r, c))
        return false;
    ++r->pos;
    return true;
}

/* An identifier or a number's text: letters, digits, '_' and '.', a leading '-', and a sign right
 * after the exponent's e of a decimal number. */
static bool word(reader *r, size_t *start, size_t *length)
{
    skip_space(r);
    *start = r->pos;
    size_t at = r->pos;
    if (at < r->size && r->text[at] == '-')
        ++at;
    const bool hex = at + 1 < r->size && r->text[at] == '0' && (r->text[at + 1] == 'x' || r->text[at + 1] == 'X');
    while (at < r->size) {
        const char c = r->text[at];
        const bool sign = (c == '+' || c == '-') && !hex && at > *start && isdigit((unsigned char)r->text[*start + (r->text[*start] == '-')]) &&
                          (r->text[at - 1] == 'e' || r->text[at - 1] == 'E');
        if (!isalnum((unsigned char)c) && c != '_' && c != '.' && !sign)
            break;
        ++at;
    }
    *length = at - *start;
    r->pos = at;
    return *length > 0;
}

static int hex_value(char c)
{
    return isdigit((unsigned char)c) ? c - '0' : isxdigit((unsigned char)c) ? tolower((unsigned char)c) - 'a' + 10 : -1;
}

/* One or more quoted strings, joined, their escapes undone, appended to out. */
static bool string_value(reader *r, cb_bytes *out)
{
    skip_space(r);
    if (r->pos >= r->size || (r->text[r->pos] != '"' && r->text[r->pos] != '\'')) {
        fail_at(r, r->pos, "expected a string");
        return false;
    }
    while (r->pos < r->size && (r->text[r->pos] == '"' || r->text[r->pos] == '\'')) {
        const size_t open = r->pos;
        const char quote = r->text[r->pos++];
        for (;;) {
            if (r->pos >= r->size || r->text[r->pos] == '\n') {
                fail_at(r, open, "a string that does not end on its line");
                return false;
            }
            char c = r->text[r->pos++];
            if (c == quote)
                break;
            if (c == '\\') {
                if (r->pos >= r->size) {
                    fail_at(r, open, "a string that does not end");
                    return false;
                }
                const size_t escape = r->pos - 1;
                c = r->text[r->pos++];
                switch (c) {
                case 'n': c = '\n'; break;
                case 'r': c = '\r'; break;
                case 't': c = '\t'; break;
                case 'a': c = '\a'; break;
                case 'b': c = '\b'; break;
                case 'f': c = '\f'; break;
                case 'v': c = '\v'; break;
                case '\\': case '\'': case '"': case '?': break;
                case 'x': case 'X': {
                    int value = 0, digits = 0;
                    while (digits < 2 && r->pos < r->size && hex_value(r->text[r->pos]) >= 0)
                        value = value * 16 + hex_value(r->text[r->pos++]), ++digits;
                    if (digits == 0) {
                        fail_at(r, escape, "\\x without hex digits");
                        return false;
                    }
                    c = (char)value;
                    break;
                }
                default:
                    if (c >= '0' && c <= '7') {
                        int value = c - '0', digits = 1;
                        while (digits < 3 && r->pos < r->size && r->text[r->pos] >= '0' && r->text[r->pos] <= '7')
                            value = value * 8 + (r->text[r->pos++] - '0'), ++digits;
                        c = (char)value;
                        break;
                    }
                    fail_at(r, escape, "invalid escape \\%c", c);
                    return false;
                }
            }
            if ((r->status = cb_bytes_append(out, &c, 1)) != CBLOB_OK)
                return false;
        }
        skip_space(r);
    }
    return true;
}

/* ---- values ------------------------------------------------------------------------------------- */

/* An integer's text (decimal, 0x hex, 0 octal) with its sign. */
static bool parse_integer(const char *text, size_t length, bool *negative, uint64_t *magnitude)
{
    char buffer[72];
    if (length == 0 || length >= sizeof buffer)
        return false;
    memcpy(buffer, text, length);
    buffer[length] = '\0';
    const char *digits = buffer;
    *negative = *digits == '-';
    digits += *negative;
    if (!isdigit((unsigned char)*digits))
        return false;
    int base = 10;
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
        base = 16;
        digits += 2;
        if (*digits == '\0')
            return false;
    } else if (digits[0] == '0' && digits[1] != '\0') {
        base = 8;
    }
    errno = 0;
    char *end = NULL;
    *magnitude = strtoull(digits, &end, base);
    return errno == 0 && *end == '\0' && isalnum((unsigned char)*digits);
}

static bool parse_floating(const char *text, size_t length, double *out)
{
    char buffer[128];
    if (length == 0 || length >= sizeof buffer)
        return false;
    memcpy(buffer, text, length);
    buffer[length] = '\0';
    const bool negative = buffer[0] == '-';
    const char *body = buffer + negative;
    if (strcasecmp(body, "inf") == 0 || strcasecmp(body, "infinity") == 0 || strcasecmp(body, "inff") == 0 ||
        strcasecmp(body, "infinityf") == 0) {
        *out = negative ? -INFINITY : INFINITY;
        return true;
    }
    if (strcasecmp(body, "nan") == 0 || strcasecmp(body, "nanf") == 0) {
        *out = NAN;
        return true;
    }
    if (!isdigit((unsigned char)*body) && *body != '.')
        return false;
    if (body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) { /* an integer in hex */
        bool minus;
        uint64_t magnitude;
        if (!parse_integer(buffer, length, &minus, &magnitude))
            return false;
        *out = minus ? -(double)magnitude : (double)magnitude;
        return true;
    }
    size_t used = strlen(buffer);
    if (used > 1 && (buffer[used - 1] == 'f' || buffer[used - 1] == 'F'))
        buffer[--used] = '\0';
    char *end = NULL;
    *out = strtod(buffer, &end);
    return end == buffer + used;
}

typedef struct field_ref {
    uint32_t number;
    const ProtobufCFieldDescriptor *field; /* NULL: given by number, no schema here knows it */
    const ProtobufCMessageDescriptor *message; /* a layer's blobs (BlobProto): not in the *Fields messages */
    bool repeated;
    size_t seen_at; /* the text position of the name */
} field_ref;

static void put_tag(reader *r, cb_bytes *out, uint32_t number, int type)
{
    if (r->status == CBLOB_OK)
        r->status = cb_bytes_put_varint(out, (uint64_t)number << 3 | (uint64_t)type);
}

static void put_varint(reader *r, cb_bytes *out, uint64_t value)
{
    if (r->status == CBLOB_OK)
        r->status = cb_bytes_put_varint(out, value);
}

static void put_raw(reader *r, cb_bytes *out, const void *data, size_t size)
{
    if (r->status == CBLOB_OK)
        r->status = cb_bytes_append(out, data, size);
}

static void read_message(reader *r, const ProtobufCMessageDescriptor *descriptor, char close, cb_bytes *out,
                         int depth);

/* A message value, `{ ... }` or `< ... >`, as a length-delimited field. */
static void message_value(reader *r, const ProtobufCMessageDescriptor *descriptor, uint32_t number, cb_bytes *out,
                          int depth)
{
    const size_t at = r->pos;
    char close = '}';
    if (accept(r, '<'))
        close = '>';
    else if (!accept(r, '{')) {
        fail_at(r, r->pos, "expected { or < to open a message");
        return;
    }
    if (depth >= TEXT_MAX_DEPTH) {
        fail_at(r, at, "messages nested deeper than %d", TEXT_MAX_DEPTH);
        return;
    }
    cb_bytes inner = {0};
    read_message(r, descriptor, close, &inner, depth + 1);
    put_tag(r, out, number, CB_WIRE_LENGTH);
    put_varint(r, out, inner.size);
    put_raw(r, out, inner.data, inner.size);
    cb_bytes_free(&inner);
}

/* A scalar value of a known field. */
static void scalar_value(reader *r, const ProtobufCFieldDescriptor *field, cb_bytes *out)
{
    if (field->type == PROTOBUF_C_TYPE_STRING || field->type == PROTOBUF_C_TYPE_BYTES) {
        if (!peek(r, '"') && !peek(r, '\'')) {
            fail_at(r, r->pos, "%s takes a string in quotes", caffe_name(field));
            return;
        }
        cb_bytes text = {0};
        if (string_value(r, &text)) {
            put_tag(r, out, field->id, CB_WIRE_LENGTH);
            put_varint(r, out, text.size);
            put_raw(r, out, text.data, text.size);
        }
        cb_bytes_free(&text);
        return;
    }
    size_t start, length;
    if (!word(r, &start, &length)) {
        fail_at(r, r->pos, "expected a value for %s", caffe_name(field));
        return;
    }
    const char *text = r->text + start;
    bool negative = false;
    uint64_t magnitude = 0;
    switch (field->type) {
    case PROTOBUF_C_TYPE_BOOL: {
        static const char *const yes[] = {"true", "True", "t", "1"}, *const no[] = {"false", "False", "f", "0"};
        int value = -1;
        for (int i = 0; i < 4; ++i) {
            if (strlen(yes[i]) == length && memcmp(text, yes[i], length) == 0)
                value = 1;
            if (strlen(no[i]) == length && memcmp(text, no[i], length) == 0)
                value = 0;
        }
        if (value < 0) {
            fail_at(r, start, "%s takes true or false, not \"%.*s\"", caffe_name(field), (int)length, text);
            return;
        }
        put_tag(r, out, field->id, CB_WIRE_VARINT);
        put_varint(r, out, (uint64_t)value);
        return;
    }
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumDescriptor *values = field->descriptor;
        const ProtobufCEnumValue *found = NULL;
        for (unsigned i = 0; found == NULL && i < values->n_values; ++i)
            if (strlen(values->values[i].name) == length && memcmp(values->values[i].name, text, length) == 0)
                found = &values->values[i];
        if (found == NULL && parse_integer(text, length, &negative, &magnitude) && magnitude <= INT32_MAX)
            found = protobuf_c_enum_descriptor_get_value(values, negative ? -(int32_t)magnitude : (int32_t)magnitude);
        if (found == NULL) {
            char enum_name[128];
            snprintf(enum_name, sizeof enum_name, "%s", values->name);
            fail_at(r, start, "unknown value \"%.*s\" of enum %s (field %s)", (int)length, text, enum_name,
                    caffe_name(field));
            return;
        }
        put_tag(r, out, field->id, CB_WIRE_VARINT);
        put_varint(r, out, (uint64_t)(int64_t)found->value);
        return;
    }
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        double value = 0;
        if (!parse_floating(text, length, &value)) {
            fail_at(r, start, "%s takes a number, not \"%.*s\"", caffe_name(field), (int)length, text);
            return;
        }
        if (field->type == PROTOBUF_C_TYPE_FLOAT) {
            const float single = (float)value; /* as protobuf: rounded, out of range to infinity */
            put_tag(r, out, field->id, CB_WIRE_FIXED32);
            put_raw(r, out, &single, 4);
        } else {
            put_tag(r, out, field->id, CB_WIRE_FIXED64);
            put_raw(r, out, &value, 8);
        }
        return;
    }
    default: break;
    }
    if (!parse_integer(text, length, &negative, &magnitude)) {
        fail_at(r, start, "%s takes an integer, not \"%.*s\"", caffe_name(field), (int)length, text);
        return;
    }
    bool is_signed = false;
    uint64_t limit = UINT64_MAX;
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
        is_signed = true, limit = (uint64_t)INT32_MAX; break;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        is_signed = true, limit = (uint64_t)INT64_MAX; break;
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: limit = UINT32_MAX; break;
    default: break;
    }
    if ((negative && !is_signed) || magnitude > limit + (negative ? 1 : 0)) {
        fail_at(r, start, "%.*s is out of the range of %s", (int)length, text, caffe_name(field));
        return;
    }
    const uint64_t bits = negative ? (uint64_t)0 - magnitude : magnitude;
    switch (field->type) {
    case PROTOBUF_C_TYPE_SINT32: {
        const int32_t v = (int32_t)bits;
        put_tag(r, out, field->id, CB_WIRE_VARINT);
        put_varint(r, out, (uint32_t)((uint32_t)v << 1 ^ (uint32_t)(v >> 31)));
        return;
    }
    case PROTOBUF_C_TYPE_SINT64: {
        const int64_t v = (int64_t)bits;
        put_tag(r, out, field->id, CB_WIRE_VARINT);
        put_varint(r, out, (uint64_t)v << 1 ^ (uint64_t)(v >> 63));
        return;
    }
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32: {
        const uint32_t v = (uint32_t)bits;
        put_tag(r, out, field->id, CB_WIRE_FIXED32);
        put_raw(r, out, &v, 4);
        return;
    }
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
        put_tag(r, out, field->id, CB_WIRE_FIXED64);
        put_raw(r, out, &bits, 8);
        return;
    default: /* int32 negatives take 10 bytes, as protobuf writes them */
        put_tag(r, out, field->id, CB_WIRE_VARINT);
        put_varint(r, out, bits);
    }
}

/* A field given by number, as the writer writes unknown fields. */
static void unknown_value(reader *r, uint32_t number, cb_bytes *out, int depth)
{
    if (peek(r, '{') || peek(r, '<')) {
        message_value(r, NULL, number, out, depth);
        return;
    }
    if (!accept(r, ':')) {
        fail_at(r, r->pos, "expected : after field %" PRIu32, number);
        return;
    }
    if (peek(r, '{') || peek(r, '<')) {
        message_value(r, NULL, number, out, depth);
        return;
    }
    if (peek(r, '"') || peek(r, '\'')) {
        cb_bytes text = {0};
        if (string_value(r, &text)) {
            put_tag(r, out, number, CB_WIRE_LENGTH);
            put_varint(r, out, text.size);
            put_raw(r, out, text.data, text.size);
        }
        cb_bytes_free(&text);
        return;
    }
    size_t start, length;
    bool negative = false;
    uint64_t value = 0;
    if (!word(r, &start, &length) || !parse_integer(r->text + start, length, &negative, &value)) {
        fail_at(r, start, "field %" PRIu32 " (no schema here names it) takes an integer, 0x and 8 or 16 hex digits, a "
                "string or a message", number);
        return;
    }
    const char *text = r->text + start;
    const bool hex = length > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    if (hex && length == 10) {
        const uint32_t bits = (uint32_t)value;
        put_tag(r, out, number, CB_WIRE_FIXED32);
        put_raw(r, out, &bits, 4);
    } else if (hex && length == 18) {
        put_tag(r, out, number, CB_WIRE_FIXED64);
        put_raw(r, out, &value, 8);
    } else {
        put_tag(r, out, number, CB_WIRE_VARINT);
        put_varint(r, out, negative ? (uint64_t)0 - value : value);
    }
}

/* A layer's blobs are BlobProtos, which the *Fields messages leave out. */
static const ProtobufCMessageDescriptor *blobs_of(const ProtobufCMessageDescriptor *message, const char *name,
                                                 size_t length, uint32_t *number)
{
    if (length != 5 || memcmp(name, "blobs", 5) != 0)
        return NULL;
    if (message == &caffe__layer_parameter_fields__descriptor)
        *number = 7;
    else if (message == &caffe__v1_layer_parameter_fields__descriptor)
        *number = 6;
    else if (message == &caffe__v0_layer_parameter_fields__descriptor)
        *number = 50;
    else
        return NULL;
    return &caffe__blob_proto__descriptor;
}

/* The field a name (or number) names in the message. */
static bool find_field(reader *r, const ProtobufCMessageDescriptor *descriptor, field_ref *ref)
{
    size_t start, length;
    skip_space(r);
    ref->seen_at = r->pos;
    if (!word(r, &start, &length) || r->text[start] == '-') {
        fail_at(r, start, "expected a field name");
        return false;
    }
    const char *name = r->text + start;
    *ref = (field_ref){.seen_at = start};
    if (isdigit((unsigned char)name[0])) {
        bool negative;
        uint64_t number;
        if (!parse_integer(name, length, &negative, &number) || negative || number == 0 || number > 0x1fffffff) {
            fail_at(r, start, "\"%.*s\" is no field name or number", (int)length, name);
            return false;
        }
        /* As the writer writes what protobuf keeps as unknown (a field no schema here knows, or a
         * known number with a wire type or an enum number its schema does not allow): raw. */
        ref->number = (uint32_t)number;
        ref->repeated = true;
        return true;
    }
    if (descriptor == NULL) {
        fail_at(r, start, "field %.*s inside a field given by number: its fields have numbers only", (int)length, name);
        return false;
    }
    for (unsigned i = 0; i < descriptor->n_fields; ++i) {
        const ProtobufCFieldDescriptor *field = &descriptor->fields[i];
        char caffe_name[CB_FIELD_NAME_MAX];
        const char *known = cb_field_name(field, caffe_name);
        if (strlen(known) == length && memcmp(known, name, length) == 0) {
            ref->number = field->id;
            ref->field = field;
            ref->repeated = field->label == PROTOBUF_C_LABEL_REPEATED;
            return true;
        }
    }
    if ((ref->message = blobs_of(descriptor, name, length, &ref->number)) != NULL) {
        ref->repeated = true;
        return true;
    }
    char message[128];
    message_name(descriptor, message, sizeof message);
    fail_at(r, start, "message %s has no field named \"%.*s\"%s", message, (int)length, name,
            descriptor == &caffe__net_parameter_fields__descriptor ? ": not a net's text (a solver's?)" : "");
    return false;
}

/* One value of a field (the field's name and the ':' read). */
static void field_value(reader *r, const field_ref *ref, cb_bytes *out, int depth)
{
    if (ref->message != NULL)
        message_value(r, ref->message, ref->number, out, depth);
    else if (ref->field->type == PROTOBUF_C_TYPE_MESSAGE)
        message_value(r, ref->field->descriptor, ref->number, out, depth);
    else
        scalar_value(r, ref->field, out);
}

static void read_field(reader *r, const ProtobufCMessageDescriptor *descriptor, uint64_t *seen, cb_bytes *out,
                       int depth)
{
    field_ref ref;
    if (!find_field(r, descriptor, &ref))
        return;
    if (ref.field == NULL && ref.message == NULL) {
        unknown_value(r, ref.number, out, depth);
        return;
    }
    const bool message = ref.message != NULL || ref.field->type == PROTOBUF_C_TYPE_MESSAGE;
    if (!ref.repeated) {
        const size_t index = (size_t)(ref.field - descriptor->fields);
        if (seen[index / 64] >> (index % 64) & 1) {
            fail_at(r, ref.seen_at, "%s is given twice, and is not a repeated field", caffe_name(ref.field));
            return;
        }
        seen[index / 64] |= (uint64_t)1 << (index % 64);
    }
    const bool colon = accept(r, ':');
    if (!colon && !message) {
        fail_at(r, r->pos, "expected : after %s", caffe_name(ref.field));
        return;
    }
    if (colon && ref.repeated && accept(r, '[')) { /* a list */
        if (accept(r, ']'))
            return;
        do
            field_value(r, &ref, out, depth);
        while (r->status == CBLOB_OK && accept(r, ','));
        if (r->status == CBLOB_OK && !accept(r, ']'))
            fail_at(r, r->pos, "expected , or ] in the list of %s", ref.field != NULL ? caffe_name(ref.field) : "blobs");
        return;
    }
    field_value(r, &ref, out, depth);
}

static void read_message(reader *r, const ProtobufCMessageDescriptor *descriptor, char close, cb_bytes *out,
                         int depth)
{
    uint64_t seen[8] = {0}; /* singular fields given so far, by descriptor index (messages have < 512) */
    if (descriptor != NULL && descriptor->n_fields > 64 * 8) {
        r->status = cb_fail(CBLOB_ERR_INTERNAL, "message %s has %u fields", descriptor->name, descriptor->n_fields);
        return;
    }
    while (r->status == CBLOB_OK) {
        if (at_end(r)) {
            if (close != '\0')
                fail_at(r, r->pos, "the text ends before the message's %c", close);
            return;
        }
        if (close != '\0' && accept(r, close))
            return;
        read_field(r, descriptor, seen, out, depth);
        if (!accept(r, ','))
            accept(r, ';');
    }
}

static cblob_status text_to_bytes(const ProtobufCMessageDescriptor *descriptor, const char *what, const char *name,
                                  const char *text, size_t size, cb_bytes *out)
{
    reader r = {.name = name, .text = text, .size = size, .status = CBLOB_OK};
    if (size >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) /* a UTF-8 byte order mark */
        r.pos = 3;
    read_message(&r, descriptor, '\0', out, 0);
    if (r.status == CBLOB_OK && out->size > CB_PROTO_MAX_MESSAGE)
        r.status = cb_fail(CBLOB_ERR_OVERFLOW, "%s: the %s is %zu bytes, over protobuf's limit", name, what, out->size);
    return r.status;
}

cblob_status cb_prototxt_to_net_bytes(const char *name, const char *text, size_t size, cb_bytes *out)
{
    return text_to_bytes(&caffe__net_parameter_fields__descriptor, "net", name, text, size, out);
}

cblob_status cb_text_to_blob_bytes(const char *name, const char *text, size_t size, cb_bytes *out)
{
    return text_to_bytes(&caffe__blob_proto__descriptor, "blob", name, text, size, out);
}

static cblob_status open_text(cblob_context *context, const char *name, const char *text, size_t size,
                              cblob_model **out_model)
{
    cb_bytes bytes = {0};
    cblob_status status = cb_prototxt_to_net_bytes(name, text, size, &bytes);
    if (status == CBLOB_OK)
        status = cb_model_build(context, bytes.size > 0 ? bytes.data : (const uint8_t *)"", bytes.size, NULL,
                                out_model);
    cb_bytes_free(&bytes);
    return status;
}

cblob_status cb_model_open_prototxt(cblob_context *context, const char *name, const char *text, size_t size,
                                    cblob_model **out_model)
{
    return open_text(context, name, text, size, out_model);
}

CBLOB_API cblob_status cblob_model_open_prototxt(cblob_context *context, const uint8_t *text, size_t size,
                                                 cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(text);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    return open_text(context, "the text", (const char *)text, size, out_model);
}
