/* SPDX-License-Identifier: BSD-2-Clause */
#include "text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* ---- text --------------------------------------------------------------------------------- */

/* The code point of the valid UTF-8 sequence at text (NUL-terminated) and its length, or length 0. */
static size_t utf8_decode(const unsigned char *text, uint32_t *out)
{
    return cb_utf8_decode(text, strnlen((const char *)text, 4), out);
}

size_t tool_utf8_length(const unsigned char *text)
{
    uint32_t point;
    return text[0] < 0x80 ? 1 : utf8_decode(text, &point);
}

char *tool_utf8(const char *text)
{
    char *out = malloc(strlen(text) * 3 + 1);
    if (out == NULL)
        return NULL;
    size_t used = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        uint32_t point;
        const size_t length = *p < 0x80 ? 1 : utf8_decode(p, &point);
        if (length == 0) {
            memcpy(out + used, "\xef\xbf\xbd", 3);
            used += 3;
            ++p;
        } else {
            memcpy(out + used, p, length);
            used += length;
            p += length;
        }
    }
    out[used] = '\0';
    return out;
}

/* The escape of the character at text into out (at most 11 bytes), or "" when it shows as it is;
 * *length is how many bytes of text it covers. */
static void escape_at(const unsigned char *text, char *out, size_t *length)
{
    static const char *const named[] = {['\t'] = "\\t", ['\n'] = "\\n", ['\r'] = "\\r", ['\\'] = "\\\\"};
    uint32_t point = text[0];
    *length = point < 0x80 ? 1 : utf8_decode(text, &point);
    out[0] = '\0';
    if (*length == 0) {
        *length = 1;
        snprintf(out, 11, "\\x%02x", text[0]);
    } else if (point < sizeof named / sizeof named[0] && named[point] != NULL) {
        snprintf(out, 11, "%s", named[point]);
    } else if (point < 0x20 || point == 0x7f) {
        snprintf(out, 11, "\\x%02x", (unsigned)point);
    } else if ((point >= 0x80 && point <= 0x9f) || (point >= 0x202a && point <= 0x202e) ||
               (point >= 0x2066 && point <= 0x2069)) {
        snprintf(out, 11, "\\u%04x", (unsigned)point);
    }
}

int tool_escaped_width(const char *text)
{
    int width = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        char escape[12];
        size_t length;
        escape_at(p, escape, &length);
        width += escape[0] != '\0' ? (int)strlen(escape) : 1;
        p += length;
    }
    return width;
}

void tool_print_escaped(FILE *out, const char *text, int width)
{
    int used = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        char escape[12];
        size_t length;
        escape_at(p, escape, &length);
        if (escape[0] != '\0') {
            fputs(escape, out);
            used += (int)strlen(escape);
        } else {
            fwrite(p, 1, length, out);
            ++used;
        }
        p += length;
    }
    for (; used < width; ++used)
        fputc(' ', out);
}

/* One unit of escaped text: a character as it is, or its escape (never cut apart). */
typedef struct text_unit {
    const char *bytes;
    size_t size;
    int width;
    char escape[12];
} text_unit;

/* The unit at p (NUL-terminated text); *next is where the next one starts. */
static void unit_at(const unsigned char *p, text_unit *unit, const unsigned char **next)
{
    size_t length;
    escape_at(p, unit->escape, &length);
    if (unit->escape[0] != '\0') {
        unit->bytes = unit->escape;
        unit->size = strlen(unit->escape);
        unit->width = (int)unit->size;
    } else {
        unit->bytes = (const char *)p;
        unit->size = length;
        unit->width = 1;
    }
    *next = p + length;
}

int tool_escape_into(const char *text, int columns, char *out, size_t size)
{
    const bool cut = tool_escaped_width(text) > columns;
    const int room = cut ? columns - 3 : columns;
    size_t used = 0;
    int width = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        text_unit unit;
        unit_at(p, &unit, &p);
        if (width + unit.width > room || used + unit.size + 4 > size)
            break;
        memcpy(out + used, unit.bytes, unit.size);
        used += unit.size;
        width += unit.width;
    }
    if (cut && used + 4 <= size) {
        memcpy(out + used, "...", 3);
        used += 3;
        width += 3;
    }
    out[used] = '\0';
    return width;
}

bool tool_lines_wrap(const char *raw, int width, tool_lines *out)
{
    *out = (tool_lines){0};
    /* Escapes are at most 6 times as wide as the bytes they stand for; a line break adds a NUL. */
    const size_t room = strlen(raw) * 6 + 2;
    out->text = malloc(room);
    out->starts = malloc((strlen(raw) + 1) * sizeof *out->starts);
    if (out->text == NULL || out->starts == NULL) {
        tool_lines_free(out);
        return false;
    }
    size_t used = 0;
    const unsigned char *p = (const unsigned char *)raw;
    do {
        /* One line: units while they fit, remembering the last place after a space. */
        const unsigned char *line = p, *cursor = p, *break_at = NULL;
        int columns = 0;
        while (*cursor != '\0') {
            text_unit unit;
            const unsigned char *next;
            unit_at(cursor, &unit, &next);
            if (columns + unit.width > width && cursor != line)
                break;
            columns += unit.width;
            cursor = next;
            if (unit.bytes[0] == ' ' && unit.size == 1)
                break_at = cursor;
        }
        const unsigned char *end = *cursor == '\0' || break_at == NULL ? cursor : break_at;
        out->starts[out->count++] = (int)used;
        for (const unsigned char *q = line; q < end;) {
            text_unit unit;
            unit_at(q, &unit, &q);
            memcpy(out->text + used, unit.bytes, unit.size);
            used += unit.size;
        }
        while (used > (size_t)out->starts[out->count - 1] && out->text[used - 1] == ' ')
            --used; /* the space a line breaks after */
        out->text[used++] = '\0';
        p = end;
    } while (*p != '\0');
    return true;
}

const char *tool_lines_get(const tool_lines *lines, int i)
{
    return i < lines->count ? lines->text + lines->starts[i] : "";
}

void tool_lines_free(tool_lines *lines)
{
    free(lines->text);
    free(lines->starts);
    *lines = (tool_lines){0};
}
