/* SPDX-License-Identifier: BSD-2-Clause */
/* BlobProtoVector, scanned with the wire reader into BlobProto layouts, fully validated (every
 * BlobProto's shape and counts included) before any value is decoded; and telling the three kinds
 * of file apart. NetParameter is read by model_open.c. */
#ifndef CBLOB_SRC_PROTO_NET_H
#define CBLOB_SRC_PROTO_NET_H

#include "proto_blob.h"

typedef struct cb_blob_list {
    int64_t count, capacity;
    cb_blob_layout *items;
} cb_blob_list;

/* Checks a NetParameter the way opening a model does, keeping nothing (model_open.c). */
cblob_status cb_net_check(const uint8_t *input, size_t size);
/* A NetParameter reader failed with `status`: when the input is surely of another kind, says so
 * instead; otherwise returns status as it is. */
cblob_status cb_net_explain(const uint8_t *input, size_t size, cblob_status status);

cblob_status cb_vector_scan(const uint8_t *input, size_t size, cb_blob_list *out);
void cb_blob_list_free(cb_blob_list *list);

/* Checks one top-level BlobProto: scanned, shape and counts checked for its own dtype. */
cblob_status cb_blob_scan(const uint8_t *input, size_t size, cb_blob_layout *out);

/* Which of NetParameter, BlobProto or BlobProtoVector the input holds, from its top-level fields
 * (see cblob_proto_detect in the header for the rules). */
cblob_status cb_proto_detect_kind(const uint8_t *input, size_t size, cblob_proto_kind *out);
/* The same from the first bytes of a longer input: a field cut by their end ends the walk, and the
 * fields before it decide (at least one must be whole). */
cblob_status cb_proto_detect_prefix(const uint8_t *input, size_t size, cblob_proto_kind *out);

/* A BlobProto's bytes as a new blob, and a BlobProtoVector's as new blobs (an array the caller
 * frees, with each blob); formats_blob.c. */
cblob_status cb_blob_create_from_proto_bytes(cblob_context *context, const uint8_t *bytes, size_t size, cblob_blob **out);
struct cb_input;
cblob_status cb_blob_vector_read(cblob_context *context, const struct cb_input *input, cblob_blob ***out_blobs,
                                 int64_t *out_count);

/* V1LayerParameter.LayerType: the enum name of a value (NULL when unnamed), and the value of a
 * name or of a decimal number. */
const char *cb_v1_type_name(int32_t value);
bool cb_v1_type_value(const char *text, int32_t *out);

#endif
