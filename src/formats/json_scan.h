/* SPDX-License-Identifier: BSD-2-Clause */
/* JSON text read in place, value by value (RFC 8259, as strictly as Jansson reads it: UTF-8 only,
 * no NUL in strings, integers that fit in 64 bits, nesting at most 64 deep). The safetensors reader
 * walks its header with it, twice, instead of building a tree: a tree of 200,000 tensors cost
 * about 2 KB each. */
#ifndef CBLOB_SRC_JSON_SCAN_H
#define CBLOB_SRC_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cb_json_scan {
    const char *text;
    size_t size, pos;
    int depth;
    const char *error; /* the first fault (then every call fails), at error_at */
    size_t error_at;
} cb_json_scan;

void cb_json_scan_begin(cb_json_scan *scan, const char *text, size_t size);

/* Whether the next value is an object / an array / a string (after white space). */
bool cb_json_next_is(cb_json_scan *scan, char first);
/* An object: begin, then members until cb_json_member gives false (the object's end, or a fault). */
bool cb_json_object_begin(cb_json_scan *scan);
/* The next member's key (decoded as cb_json_string_value decodes) and the ':' after it; false at
 * the object's end or on a fault. */
bool cb_json_member(cb_json_scan *scan, char **key, size_t *key_length, size_t *key_capacity);
/* An array: begin, then cb_json_element before each element, false at its end. */
bool cb_json_array_begin(cb_json_scan *scan);
bool cb_json_element(cb_json_scan *scan);
/* A string value, decoded into a buffer that grows as needed (NUL-terminated). */
bool cb_json_string_value(cb_json_scan *scan, char **text, size_t *length, size_t *capacity);
/* An integer (a number without fraction or exponent that fits in int64). *is_integer is false for
 * another number (which is skipped); false for anything else. */
bool cb_json_integer_value(cb_json_scan *scan, int64_t *value, bool *is_integer);
/* Skips any value. */
bool cb_json_skip(cb_json_scan *scan);
/* Nothing but white space is left. */
bool cb_json_end(cb_json_scan *scan);

#endif
