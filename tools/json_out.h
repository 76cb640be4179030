/* SPDX-License-Identifier: BSD-2-Clause */
/* JSON written as it is made, for documents too large to hold whole (a net of a million layers):
 * Jansson encodes every key and value; this places them in objects and arrays, with Jansson's
 * separators (", " and ": "). Output is ASCII: other characters are \u escapes, so no byte of a
 * layer name reaches a terminal raw. */
#ifndef CBLOB_TOOLS_JSON_OUT_H
#define CBLOB_TOOLS_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Where the text goes; returns 0, or -1 on a failure (which ends the writing). */
typedef int json_out_write(const char *text, size_t size, void *context);

#define JSON_OUT_DEPTH 8

typedef struct json_out {
    json_out_write *write;
    void *context;
    int depth;
    bool has_items[JSON_OUT_DEPTH];
    bool after_key; /* a key was written: its value comes next */
    bool failed; /* a write or an encoding failed: see the sink for why */
    size_t used;  /* text gathered for the next write (Jansson hands it over a token at a time) */
    char pending[1 << 16];
} json_out;

void json_out_start(json_out *out, json_out_write *write, void *context);
/* Opens an object or array ('{' or '['), as a value of the one it is in. */
void json_out_open(json_out *out, char bracket);
void json_out_close(json_out *out, char bracket);
/* The next key of the object being written. */
void json_out_key(json_out *out, const char *key);
/* A value, taken over (NULL, from a Jansson constructor that failed, marks the output failed). */
void json_out_value(json_out *out, json_t *value);
/* Writes what is gathered; true when everything was written. */
bool json_out_finish(json_out *out);

/* Flags every dump of the program uses. */
#define TOOL_JSON_FLAGS (JSON_ENCODE_ANY | JSON_ENSURE_ASCII)

#endif
