/* SPDX-License-Identifier: BSD-2-Clause */
/* The CRC-32 of zip archives and zlib (polynomial 0x04C11DB7, bit-reflected), fast (crc32.c). */
#ifndef CBLOB_SRC_CRC32_H
#define CBLOB_SRC_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* zlib's crc32(crc, bytes, size), over any number of bytes: the CRC-32 of bytes that follow bytes
 * whose CRC-32 is crc (0 to start). */
uint32_t cb_crc32(uint32_t crc, const void *bytes, size_t size);
/* zlib's crc32_combine: the CRC-32 of A then B, from A's, B's and B's size (and the CRC-32 of B,
 * from A B's, A's and B's size: the sum is its own inverse). */
uint32_t cb_crc32_combine(uint32_t first, uint32_t second, uint64_t second_size);

#endif
