/* SPDX-License-Identifier: BSD-2-Clause */
#include "json_scan.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "utf8.h"

#define CB_JSON_MAX_DEPTH 64

void cb_json_scan_begin(cb_json_scan *scan, const char *text, size_t size)
{
    *scan = (cb_json_scan){.text = text, .size = size};
}

static bool fail(cb_json_scan *scan, const char *error)
{
    if (scan->error == NULL) {
        scan->error = error;
        scan->error_at = scan->pos;
    }
    return false;
}

static void skip_space(cb_json_scan *scan)
{
    while (scan->pos < scan->size && (scan->text[scan->pos] == ' ' || scan->text[scan->pos] == '\t' ||
                                      scan->text[scan->pos] == '\n' || scan->text[scan->pos] == '\r'))
        ++scan->pos;
}

/* The next character after white space, or 0 at the end (or after a fault). */
static char peek(cb_json_scan *scan)
{
    if (scan->error != NULL)
        return 0;
    skip_space(scan);
    return scan->pos < scan->size ? scan->text[scan->pos] : 0;
}

static bool take(cb_json_scan *scan, char c, const char *error)
{
    if (peek(scan) != c)
        return fail(scan, error);
    ++scan->pos;
    return true;
}

bool cb_json_next_is(cb_json_scan *scan, char first)
{
    return peek(scan) == first;
}

static bool grow(char **text, size_t *capacity, size_t needed)
{
    if (needed <= *capacity)
        return true;
    size_t next = *capacity > 0 ? *capacity : 64;
    while (next < needed)
        next *= 2;
    char *grown = cb_realloc(*text, next);
    if (grown == NULL)
        return false;
    *text = grown;
    *capacity = next;
    return true;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool hex4(cb_json_scan *scan, uint32_t *out)
{
    if (scan->size - scan->pos < 4)
        return fail(scan, "a \\u escape is cut short");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
        const int digit = hex_digit(scan->text[scan->pos + (size_t)i]);
        if (digit < 0)
            return fail(scan, "a \\u escape holds a character that is not a hex digit");
        value = value << 4 | (uint32_t)digit;
    }
    scan->pos += 4;
    *out = value;
    return true;
}

/* An escape after its backslash, decoded into out (room for 4 bytes). */
static bool unescape(cb_json_scan *scan, char *out, size_t *length)
{
    if (scan->pos >= scan->size)
        return fail(scan, "a string is cut short");
    const char c = scan->text[scan->pos++];
    static const char plain[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
    const char *which = memchr(plain, c, sizeof plain - 1);
    if (which != NULL) {
        out[0] = decoded[which - plain];
        *length = 1;
        return true;
    }
    if (c != 'u')
        return fail(scan, "a string holds an unknown escape");
    uint32_t point = 0;
    if (!hex4(scan, &point))
        return false;
    /* UTF-16 surrogates: a high one (D800 to DBFF) and a low one (DC00 to DFFF) make a pair. */
    const uint32_t surrogate_mask = 0xfc00, high = 0xd800, low_start = 0xdc00;
    if ((point & surrogate_mask) == low_start)
        return fail(scan, "a \\u escape holds a lone low surrogate");
    if ((point & surrogate_mask) == high) {
        uint32_t low = 0;
        if (scan->size - scan->pos < 2 || scan->text[scan->pos] != '\\' || scan->text[scan->pos + 1] != 'u')
            return fail(scan, "a \\u escape holds a high surrogate without its low one");
        scan->pos += 2;
        if (!hex4(scan, &low))
            return false;
        if ((low & surrogate_mask) != low_start)
            return fail(scan, "a \\u escape holds a high surrogate without its low one");
        point = 0x10000 + ((point - high) << 10) + (low - low_start);
    }
    if (point == 0)
        return fail(scan, "a string holds \\u0000");
    *length = cb_utf8_encode(point, out);
    return true;
}

bool cb_json_string_value(cb_json_scan *scan, char **text, size_t *length, size_t *capacity)
{
    if (!take(scan, '"', "a string was expected"))
        return false;
    size_t used = 0;
    for (;;) {
        if (scan->pos >= scan->size)
            return fail(scan, "a string is cut short");
        /* A run without escapes, copied at once. */
        size_t end = scan->pos;
        while (end < scan->size && scan->text[end] != '"' && scan->text[end] != '\\' &&
               (unsigned char)scan->text[end] >= 0x20)
            ++end;
        if (!cb_utf8_valid(scan->text + scan->pos, end - scan->pos))
            return fail(scan, "a string is not valid UTF-8");
        if (!grow(text, capacity, used + (end - scan->pos) + 5)) {
            scan->out_of_memory = scan->error == NULL;
            return fail(scan, "no memory for a string");
        }
        memcpy(*text + used, scan->text + scan->pos, end - scan->pos);
        used += end - scan->pos;
        scan->pos = end;
        if (end >= scan->size)
            return fail(scan, "a string is cut short");
        const char c = scan->text[scan->pos++];
        if (c == '"')
            break;
        if (c != '\\')
            return fail(scan, "a string holds a control character");
        size_t n = 0;
        if (!unescape(scan, *text + used, &n))
            return false;
        used += n;
    }
    (*text)[used] = '\0';
    *length = used;
    return true;
}

bool cb_json_object_begin(cb_json_scan *scan)
{
    if (!take(scan, '{', "an object was expected"))
        return false;
    if (++scan->depth > CB_JSON_MAX_DEPTH)
        return fail(scan, "objects and arrays nest too deep");
    return true;
}

/* After a member or element: ',' goes on, the closing character ends. */
static bool next_item(cb_json_scan *scan, char close, bool first)
{
    const char c = peek(scan);
    if (c == close) {
        ++scan->pos;
        --scan->depth;
        return false;
    }
    if (!first && !take(scan, ',', close == '}' ? "',' or '}' was expected" : "',' or ']' was expected"))
        return false;
    return true;
}

/* Whether the container just begun is at its first item: its opening character precedes it. */
static bool at_first(const cb_json_scan *scan, char open)
{
    size_t at = scan->pos;
    while (at > 0 && (scan->text[at - 1] == ' ' || scan->text[at - 1] == '\t' || scan->text[at - 1] == '\n' ||
                      scan->text[at - 1] == '\r'))
        --at;
    return at > 0 && scan->text[at - 1] == open;
}

bool cb_json_member(cb_json_scan *scan, char **key, size_t *key_length, size_t *key_capacity)
{
    skip_space(scan);
    const bool first = at_first(scan, '{');
    if (!next_item(scan, '}', first))
        return false;
    if (first && peek(scan) == ',')
        return fail(scan, "a string was expected");
    return cb_json_string_value(scan, key, key_length, key_capacity) && take(scan, ':', "':' was expected");
}

bool cb_json_array_begin(cb_json_scan *scan)
{
    if (!take(scan, '[', "an array was expected"))
        return false;
    if (++scan->depth > CB_JSON_MAX_DEPTH)
        return fail(scan, "objects and arrays nest too deep");
    return true;
}

bool cb_json_element(cb_json_scan *scan)
{
    skip_space(scan);
    return next_item(scan, ']', at_first(scan, '['));
}

/* A number's text: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; *integer when it has neither
 * fraction nor exponent. */
static bool number(cb_json_scan *scan, size_t *start, bool *integer)
{
    skip_space(scan);
    const char *t = scan->text;
    size_t at = *start = scan->pos;
    if (at < scan->size && t[at] == '-')
        ++at;
    if (at >= scan->size || t[at] < '0' || t[at] > '9')
        return fail(scan, "a value was expected");
    if (t[at] == '0')
        ++at;
    else
        while (at < scan->size && t[at] >= '0' && t[at] <= '9')
            ++at;
    *integer = true;
    if (at < scan->size && t[at] == '.') {
        *integer = false;
        if (++at >= scan->size || t[at] < '0' || t[at] > '9')
            return fail(scan, "a number's fraction has no digits");
        while (at < scan->size && t[at] >= '0' && t[at] <= '9')
            ++at;
    }
    if (at < scan->size && (t[at] == 'e' || t[at] == 'E')) {
        *integer = false;
        if (++at < scan->size && (t[at] == '+' || t[at] == '-'))
            ++at;
        if (at >= scan->size || t[at] < '0' || t[at] > '9')
            return fail(scan, "a number's exponent has no digits");
        while (at < scan->size && t[at] >= '0' && t[at] <= '9')
            ++at;
    }
    scan->pos = at;
    return true;
}

bool cb_json_integer_value(cb_json_scan *scan, int64_t *value, bool *is_integer)
{
    if (scan->error != NULL)
        return false;
    size_t start = 0;
    if (!number(scan, &start, is_integer))
        return false;
    if (!*is_integer)
        return true;
    const bool negative = scan->text[start] == '-';
    uint64_t magnitude = 0;
    for (size_t i = start + negative; i < scan->pos; ++i) {
        const unsigned digit = (unsigned)(scan->text[i] - '0');
        if (magnitude > (UINT64_MAX - digit) / 10)
            return fail(scan, "an integer is too big");
        magnitude = magnitude * 10 + digit;
    }
    if (magnitude > (uint64_t)INT64_MAX + negative)
        return fail(scan, "an integer is too big");
    *value = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    return true;
}

static bool literal(cb_json_scan *scan, const char *word)
{
    const size_t length = strlen(word);
    if (scan->size - scan->pos < length || memcmp(scan->text + scan->pos, word, length) != 0)
        return fail(scan, "a value was expected");
    scan->pos += length;
    return true;
}

bool cb_json_skip(cb_json_scan *scan)
{
    const char c = peek(scan);
    switch (c) {
    case '{': {
        if (!cb_json_object_begin(scan))
            return false;
        char *key = NULL;
        size_t length = 0, capacity = 0;
        while (cb_json_member(scan, &key, &length, &capacity))
            if (!cb_json_skip(scan))
                break;
        free(key);
        return scan->error == NULL;
    }
    case '[':
        if (!cb_json_array_begin(scan))
            return false;
        while (cb_json_element(scan))
            if (!cb_json_skip(scan))
                break;
        return scan->error == NULL;
    case '"': {
        char *text = NULL;
        size_t length = 0, capacity = 0;
        const bool ok = cb_json_string_value(scan, &text, &length, &capacity);
        free(text);
        return ok;
    }
    case 't': return literal(scan, "true");
    case 'f': return literal(scan, "false");
    case 'n': return literal(scan, "null");
    default: {
        size_t start = 0;
        bool integer = false;
        return number(scan, &start, &integer);
    }
    }
}

bool cb_json_end(cb_json_scan *scan)
{
    if (peek(scan) != 0 || scan->error != NULL)
        return fail(scan, "the text goes on after its value");
    return true;
}
