/* SPDX-License-Identifier: BSD-2-Clause */
/* JSON written as it is made, for documents too large to hold whole (a net of a million layers):
 * Jansson encodes every key and value; this places them in objects and arrays, with Jansson's
 * separators (", " and ": "). Output is ASCII: other characters are \u escapes, so no byte of a
 * layer name reaches a terminal raw. */
#ifndef CBLOB_TOOLS_JSON_OUT_H
#define CBLOB_TOOLS_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* A name or other text as a JSON value: null for NULL, bytes that are not UTF-8 as U+FFFD (the
 * library's JSON does the same); NULL when memory ran out. */
json_t *json_text_or_null(const char *text);
/* Writes what is gathered; true when everything was written. */
bool json_out_finish(json_out *out);

/* Text written as it is, as the next item (json_out_raw_item, then json_out_raw any number of
 * times): a value the program did not make through Jansson. */
void json_out_raw_item(json_out *out);
void json_out_raw(json_out *out, const char *text, size_t size);
/* A value dumped as it is, with no separator before it (taken over, as json_out_value's). */
void json_out_raw_json(json_out *out, json_t *value);

/* The library's JSON (Jansson's compact form: UTF-8, reals with 15 digits) rewritten as it comes in
 * the program's (json_out's separators, ASCII with \u escapes, reals as Jansson prints a double),
 * exactly as parsing it whole and dumping it again would, in constant memory: the library's layer
 * JSON is streamed (cblob_model_layer_json_write) and never held. `close_member` (may be NULL) is
 * called before each object directly inside the array under key `member_key` of the outermost object
 * closes, with its index, to add members of the program's (a blob's statistics); it returns
 * CBLOB_OK or a failure that ends the rewriting. */
typedef int json_restyle_close_fn(json_out *out, int64_t index, void *context);

typedef struct json_restyle {
    json_out *out;
    bool in_string, escaped;
    unsigned char sequence[4]; /* a UTF-8 character being gathered */
    int sequence_used, sequence_size;
    char number[64];
    size_t number_used;
    int depth;            /* containers open */
    bool expect_key[64];  /* per depth: an object (its next string is a key) */
    char last_key[16];    /* the last key of the outermost object (its first 15 bytes) */
    size_t last_key_used;
    bool key_string;      /* the string being read is a key of the outermost object */
    int member_array;     /* the depth of the array under member_key, or 0 */
    int64_t member_index;
    const char *member_key;
    json_restyle_close_fn *close_member;
    void *context;
    bool failed;
} json_restyle;

void json_restyle_start(json_restyle *r, json_out *out, const char *member_key, json_restyle_close_fn *close_member,
                        void *context);
/* Takes the next piece of the library's text; 0, or -1 once the rewriting failed. */
int json_restyle_write(json_restyle *r, const char *text, size_t size);
/* True when the text ended where a value ends (nothing left half-read). */
bool json_restyle_finish(json_restyle *r);

/* Flags every dump of the program uses. */
#define TOOL_JSON_FLAGS (JSON_ENCODE_ANY | JSON_ENSURE_ASCII)

#endif
