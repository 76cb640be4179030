/* SPDX-License-Identifier: BSD-2-Clause */
/* A layer as JSON (model_json.c, jansson), and JSON text of names that may not be UTF-8. */
#ifndef CBLOB_SRC_MODEL_JSON_H
#define CBLOB_SRC_MODEL_JSON_H

#include <stddef.h>

#include "cblob/cblob.h"

/* JSON text of bytes that may not be UTF-8 (bad bytes become U+FFFD), and the text convention
 * over a value (which it releases). */
typedef struct json_t json_t;
json_t *cb_json_text(const char *bytes, size_t length);
cblob_status cb_json_return(json_t *value, char *buffer, size_t buffer_size, size_t *out_length);

#endif
