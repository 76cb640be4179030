/* SPDX-License-Identifier: BSD-2-Clause */
/* SHA-256 (FIPS 180-4), for the kernel cache's keys and entry checksums (src/util: any part of cblob may hash). */
#ifndef CBLOB_UTIL_SHA256_H
#define CBLOB_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define CB_SHA256_BYTES 32

typedef struct cb_sha256 {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    unsigned char block[64];
    size_t used;     /* bytes waiting in block */
} cb_sha256;

void cb_sha256_init(cb_sha256 *hash);
void cb_sha256_update(cb_sha256 *hash, const void *data, size_t size);
void cb_sha256_final(cb_sha256 *hash, unsigned char digest[CB_SHA256_BYTES]);
void cb_sha256_digest(const void *data, size_t size, unsigned char digest[CB_SHA256_BYTES]);

#endif
