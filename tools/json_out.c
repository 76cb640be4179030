/* SPDX-License-Identifier: BSD-2-Clause */
#include "json_out.h"

#include "text.h"
#include "utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_out_start(json_out *out, json_out_write *write, void *context)
{
    out->write = write;
    out->context = context;
    out->depth = 0;
    out->after_key = out->failed = false;
    out->used = 0;
}

static void flush(json_out *out)
{
    if (!out->failed && out->used > 0 && out->write(out->pending, out->used, out->context) != 0)
        out->failed = true;
    out->used = 0;
}

static void emit(json_out *out, const char *text, size_t size)
{
    if (out->used + size > sizeof out->pending)
        flush(out);
    if (size > sizeof out->pending) {
        if (!out->failed && out->write(text, size, out->context) != 0)
            out->failed = true;
        return;
    }
    memcpy(out->pending + out->used, text, size);
    out->used += size;
}

bool json_out_finish(json_out *out)
{
    flush(out);
    return !out->failed;
}

/* The separator before an item (a value that follows its key has one already). */
static void next_item(json_out *out)
{
    if (out->depth > 0 && !out->after_key && out->has_items[out->depth - 1])
        emit(out, ", ", 2);
    if (out->depth > 0)
        out->has_items[out->depth - 1] = true;
    out->after_key = false;
}

void json_out_open(json_out *out, char bracket)
{
    next_item(out);
    emit(out, &bracket, 1);
    if (out->depth == JSON_OUT_DEPTH) {
        out->failed = true;
        return;
    }
    out->has_items[out->depth++] = false;
}

void json_out_close(json_out *out, char bracket)
{
    emit(out, &bracket, 1);
    if (out->depth > 0)
        --out->depth;
}

static int dump_text(const char *text, size_t size, void *data)
{
    json_out *out = data;
    emit(out, text, size);
    return out->failed ? -1 : 0;
}

static void dump(json_out *out, json_t *value)
{
    if (value == NULL || json_dump_callback(value, dump_text, out, TOOL_JSON_FLAGS) != 0)
        out->failed = true;
    json_decref(value);
}

void json_out_key(json_out *out, const char *key)
{
    next_item(out);
    dump(out, json_string(key));
    emit(out, ": ", 2);
    out->after_key = true;
}

void json_out_value(json_out *out, json_t *value)
{
    next_item(out);
    dump(out, value);
}

void json_out_raw_item(json_out *out)
{
    next_item(out);
}

void json_out_raw(json_out *out, const char *text, size_t size)
{
    emit(out, text, size);
}

void json_out_raw_json(json_out *out, json_t *value)
{
    dump(out, value);
}

/* ---- the library's JSON in the program's style ---------------------------------------------------- */

void json_restyle_start(json_restyle *r, json_out *out, const char *member_key, json_restyle_close_fn *close_member,
                        void *context)
{
    memset(r, 0, sizeof *r);
    r->out = out;
    r->member_key = member_key;
    r->close_member = close_member;
    r->context = context;
}

/* A number ends: an integer as it is, a real as Jansson prints the double it reads back to. */
static void end_number(json_restyle *r)
{
    if (r->number_used == 0)
        return;
    r->number[r->number_used] = '\0';
    if (strpbrk(r->number, ".eE") == NULL) {
        emit(r->out, r->number, r->number_used);
    } else {
        json_t *value = json_real(strtod(r->number, NULL));
        if (value == NULL || json_dump_callback(value, dump_text, r->out, TOOL_JSON_FLAGS) != 0)
            r->failed = true;
        json_decref(value);
    }
    r->number_used = 0;
}

/* A character past U+007F as Jansson's JSON_ENSURE_ASCII writes it: \uXXXX, a pair of them (UTF-16
 * surrogates) past U+FFFF. The library's text is valid UTF-8 (cb_utf8_decode, the one decoder). */
static void ascii_escape(json_restyle *r)
{
    uint32_t point = 0;
    if (cb_utf8_decode(r->sequence, (size_t)r->sequence_size, &point) != (size_t)r->sequence_size) {
        r->failed = true;
        return;
    }
    char text[16];
    int size;
    if (point < 0x10000) {
        size = snprintf(text, sizeof text, "\\u%04X", (unsigned)point);
    } else {
        const uint32_t above = point - 0x10000;
        size = snprintf(text, sizeof text, "\\u%04X\\u%04X", (unsigned)(0xD800 + above / 1024),
                        (unsigned)(0xDC00 + above % 1024));
    }
    emit(r->out, text, (size_t)size);
}

static void string_byte(json_restyle *r, unsigned char c)
{
    if (r->sequence_size > 0) { /* inside a character (the library's text is valid UTF-8) */
        r->sequence[r->sequence_used++] = c;
        if (r->sequence_used == r->sequence_size) {
            ascii_escape(r);
            r->sequence_size = 0;
        }
        return;
    }
    if (c >= 0x80) {
        r->sequence[0] = c;
        r->sequence_used = 1;
        r->sequence_size = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        return;
    }
    if (r->key_string && r->last_key_used + 1 < sizeof r->last_key && !r->escaped && c != '"')
        r->last_key[r->last_key_used++] = (char)c;
    const char byte = (char)c;
    emit(r->out, &byte, 1);
    if (r->escaped)
        r->escaped = false;
    else if (c == '\\')
        r->escaped = true;
    else if (c == '"')
        r->in_string = false;
}

static void structure_byte(json_restyle *r, char c)
{
    const bool digit = c >= '0' && c <= '9';
    if (r->number_used > 0 ? digit || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' : digit || c == '-') {
        if (r->number_used + 1 < sizeof r->number) {
            r->number[r->number_used++] = c;
            return;
        }
        r->failed = true;
        return;
    }
    end_number(r);
    switch (c) {
    case '"':
        r->in_string = true;
        r->key_string = r->depth == 1 && r->expect_key[0];
        if (r->key_string)
            r->last_key_used = 0;
        emit(r->out, &c, 1);
        return;
    case ',':
        emit(r->out, ", ", 2);
        if (r->depth == 1)
            r->expect_key[0] = true;
        return;
    case ':':
        emit(r->out, ": ", 2);
        if (r->depth == 1) {
            r->last_key[r->last_key_used] = '\0';
            r->expect_key[0] = false;
        }
        return;
    case '{':
    case '[':
        if (r->depth == 64) {
            r->failed = true;
            return;
        }
        if (c == '[' && r->depth == 1 && r->member_key != NULL && strcmp(r->last_key, r->member_key) == 0)
            r->member_array = r->depth + 1;
        r->expect_key[r->depth++] = c == '{';
        emit(r->out, &c, 1);
        return;
    case '}':
    case ']':
        if (c == '}' && r->close_member != NULL && r->member_array > 0 && r->depth == r->member_array + 1)
            if (r->close_member(r->out, r->member_index++, r->context) != 0) {
                r->failed = true; /* nothing more: what was written stays a prefix of the whole */
                return;
            }
        if (r->depth > 0 && --r->depth < r->member_array)
            r->member_array = 0;
        if (r->depth == 1)
            r->expect_key[0] = false;
        emit(r->out, &c, 1);
        return;
    default: emit(r->out, &c, 1); return; /* true, false, null */
    }
}

int json_restyle_write(json_restyle *r, const char *text, size_t size)
{
    for (size_t i = 0; i < size && !r->failed && !r->out->failed; ++i) {
        if (r->in_string)
            string_byte(r, (unsigned char)text[i]);
        else
            structure_byte(r, text[i]);
    }
    return r->failed || r->out->failed ? -1 : 0;
}

bool json_restyle_finish(json_restyle *r)
{
    end_number(r);
    return !r->failed && !r->in_string && r->depth == 0;
}

json_t *json_text_or_null(const char *text)
{
    if (text == NULL)
        return json_null();
    char *valid = tool_utf8(text);
    json_t *value = valid != NULL ? json_string(valid) : NULL;
    free(valid);
    return value;
}
