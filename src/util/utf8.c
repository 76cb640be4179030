/* SPDX-License-Identifier: BSD-2-Clause */
#include "utf8.h"

#include <string.h>

size_t cb_utf8_decode(const uint8_t *bytes, size_t available, uint32_t *point)
{
    if (available == 0)
        return 0;
    const uint8_t c = bytes[0];
    if (c < 0x80) {
        *point = c;
        return 1;
    }
    const size_t length = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (length == 0 || length > available)
        return 0;
    uint32_t value = length == 2 ? c & 0x1fu : length == 3 ? c & 0x0fu : c & 0x07u;
    for (size_t i = 1; i < length; ++i) {
        if ((bytes[i] & 0xc0) != 0x80)
            return 0;
        value = value << 6 | (bytes[i] & 0x3fu);
    }
    /* Overlong forms, surrogates and points past U+10FFFF are not UTF-8. */
    if ((length == 3 && (value < 0x800 || (value >= 0xd800 && value <= 0xdfff))) ||
        (length == 4 && (value < 0x10000 || value > 0x10ffff)))
        return 0;
    *point = value;
    return length;
}

bool cb_utf8_valid(const char *text, size_t length)
{
    const uint8_t *bytes = (const uint8_t *)text;
    for (size_t i = 0; i < length;) {
        uint32_t point;
        const size_t n = cb_utf8_decode(bytes + i, length - i, &point);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

size_t cb_utf8_encode(uint32_t point, char out[4])
{
    if (point < 0x80) {
        out[0] = (char)point;
        return 1;
    }
    if (point < 0x800) {
        out[0] = (char)(0xc0 | point >> 6);
        out[1] = (char)(0x80 | (point & 0x3f));
        return 2;
    }
    if (point < 0x10000) {
        out[0] = (char)(0xe0 | point >> 12);
        out[1] = (char)(0x80 | (point >> 6 & 0x3f));
        out[2] = (char)(0x80 | (point & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | point >> 18);
    out[1] = (char)(0x80 | (point >> 12 & 0x3f));
    out[2] = (char)(0x80 | (point >> 6 & 0x3f));
    out[3] = (char)(0x80 | (point & 0x3f));
    return 4;
}

size_t cb_utf8_repaired_length(const char *text, size_t length)
{
    const uint8_t *bytes = (const uint8_t *)text;
    size_t total = 0;
    for (size_t i = 0; i < length;) {
        uint32_t point;
        const size_t n = cb_utf8_decode(bytes + i, length - i, &point);
        total += n > 0 ? n : 3;
        i += n > 0 ? n : 1;
    }
    return total;
}

void cb_utf8_repair(const char *text, size_t length, char *out)
{
    const uint8_t *bytes = (const uint8_t *)text;
    for (size_t i = 0; i < length;) {
        uint32_t point;
        const size_t n = cb_utf8_decode(bytes + i, length - i, &point);
        if (n > 0) {
            memcpy(out, bytes + i, n);
            out += n;
            i += n;
        } else {
            memcpy(out, "\xef\xbf\xbd", 3);
            out += 3;
            ++i;
        }
    }
}
