/* SPDX-License-Identifier: BSD-2-Clause */
/* A layer as JSON (model_json.c, jansson), and JSON text of names that may not be UTF-8. */
#ifndef CBLOB_SRC_MODEL_JSON_H
#define CBLOB_SRC_MODEL_JSON_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "cblob/cblob.h"

/* Caffe's name of a field: its descriptor's, less a trailing '_' (proto/caffe_params.proto spells
 * ExpParameter's and LogParameter's `base` as `base_`, since protobuf-c's C struct has a member
 * `base` of its own): field->name, or the name written into buffer. */
#define CB_FIELD_NAME_MAX 128
const char *cb_field_name(const ProtobufCFieldDescriptor *field, char buffer[CB_FIELD_NAME_MAX]);

/* JSON text of bytes that may not be UTF-8 (bad bytes become U+FFFD), and the text convention
 * over a value (which it releases). */
typedef struct json_t json_t;
json_t *cb_json_text(const char *bytes, size_t length);
cblob_status cb_json_return(json_t *value, char *buffer, size_t buffer_size, size_t *out_length);

#endif
