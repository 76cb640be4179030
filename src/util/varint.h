/* SPDX-License-Identifier: BSD-2-Clause */
/* Protobuf's base-128 varints (src/util): the one decoder and the one encoder of cblob. */
#ifndef CBLOB_UTIL_VARINT_H
#define CBLOB_UTIL_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* A varint is at most 10 bytes (a 64-bit value). */
#define CB_VARINT_MAX_BYTES 10

typedef enum cb_varint_result {
    CB_VARINT_OK,
    CB_VARINT_TRUNCATED, /* the bytes end before the varint does */
    CB_VARINT_TOO_LONG,  /* more than CB_VARINT_MAX_BYTES bytes */
} cb_varint_result;

/* Decodes the varint at bytes[0, available): its value into *out and its length into *length
 * (both only on CB_VARINT_OK). Bits past the 64th are dropped, as protobuf does. */
cb_varint_result cb_varint_decode(const uint8_t *bytes, size_t available, uint64_t *out, size_t *length);

/* Writes value as a varint into out; returns its length (1 to CB_VARINT_MAX_BYTES). */
size_t cb_varint_encode(uint8_t out[CB_VARINT_MAX_BYTES], uint64_t value);
/* The length cb_varint_encode writes for value. */
size_t cb_varint_size(uint64_t value);

#endif
