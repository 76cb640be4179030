/* SPDX-License-Identifier: BSD-2-Clause */
/* UTF-8 (src/util): the one validator of cblob, for the names a file may hold in any bytes. The
 * library's JSON, safetensors keys and npz member names replace each byte of a bad sequence with
 * U+FFFD; the program escapes what a terminal should not see. Nothing here fails through the
 * error core, so the program may link this alone. */
#ifndef CBLOB_UTIL_UTF8_H
#define CBLOB_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The valid UTF-8 character at bytes[0, available): its length (1 to 4) and code point, or 0
 * when the bytes there are not one (a bad lead byte, a cut or overlong sequence, a surrogate, a
 * point past U+10FFFF). */
size_t cb_utf8_decode(const uint8_t *bytes, size_t available, uint32_t *point);

bool cb_utf8_valid(const char *text, size_t length);

/* A code point (at most U+10FFFF, no surrogate) as UTF-8 into out: its length (1 to 4). */
size_t cb_utf8_encode(uint32_t point, char out[4]);

/* The length of text[0, length) with every byte of a bad sequence replaced by U+FFFD (3 bytes). */
size_t cb_utf8_repaired_length(const char *text, size_t length);
/* Writes that repair into out (room for cb_utf8_repaired_length bytes; no NUL is added). */
void cb_utf8_repair(const char *text, size_t length, char *out);

#endif
