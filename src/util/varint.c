/* SPDX-License-Identifier: BSD-2-Clause */
#include "varint.h"

cb_varint_result cb_varint_decode(const uint8_t *bytes, size_t available, uint64_t *out, size_t *length)
{
    uint64_t value = 0;
    for (size_t i = 0; i < CB_VARINT_MAX_BYTES; ++i) {
        if (i >= available)
            return CB_VARINT_TRUNCATED;
        value |= (uint64_t)(bytes[i] & 0x7f) << (7 * i);
        if ((bytes[i] & 0x80) == 0) {
            *out = value;
            *length = i + 1;
            return CB_VARINT_OK;
        }
    }
    return CB_VARINT_TOO_LONG;
}

size_t cb_varint_encode(uint8_t out[CB_VARINT_MAX_BYTES], uint64_t value)
{
    size_t n = 0;
    while (value >= 0x80) {
        out[n++] = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    out[n++] = (uint8_t)value;
    return n;
}

size_t cb_varint_size(uint64_t value)
{
    uint8_t encoded[CB_VARINT_MAX_BYTES];
    return cb_varint_encode(encoded, value);
}
