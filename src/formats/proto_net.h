/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's NetParameter (current `layer` = 100 and V1 `layers` = 2, with the V0 layer nested in
 * V1) and BlobProtoVector: scanned with the wire reader into an index of layers and BlobProto
 * layouts, fully validated (every BlobProto's shape and counts included) before any value is
 * decoded. Also tells the three kinds of file apart. */
#ifndef CBLOB_SRC_PROTO_NET_H
#define CBLOB_SRC_PROTO_NET_H

#include "proto_blob.h"

typedef struct cb_blob_list {
    int64_t count, capacity;
    cb_blob_layout *items;
} cb_blob_list;

typedef struct cb_layer_index {
    char *name; /* never NULL once scanned ("" when the file has none) */
    char *type; /* V2: the type string; V1: the LayerType enum name (a number when unnamed) */
    cb_blob_list blobs;
} cb_layer_index;

typedef struct cb_net_index {
    char *name; /* NULL when the file has none */
    cblob_net_format format;
    int64_t num_layers, capacity;
    cb_layer_index *layers;
} cb_net_index;

cblob_status cb_net_scan(const uint8_t *input, size_t size, cb_net_index *out);
void cb_net_index_free(cb_net_index *index);

cblob_status cb_vector_scan(const uint8_t *input, size_t size, cb_blob_list *out);
void cb_blob_list_free(cb_blob_list *list);

/* Checks one top-level BlobProto: scanned, shape and counts checked for its own dtype. */
cblob_status cb_blob_scan(const uint8_t *input, size_t size, cb_blob_layout *out);

/* Which of NetParameter, BlobProto or BlobProtoVector the input holds, from its top-level fields
 * (see cblob_proto_detect in the header for the rules). */
cblob_status cb_proto_detect_kind(const uint8_t *input, size_t size, cblob_proto_kind *out);

/* V1LayerParameter.LayerType: the enum name of a value (NULL when unnamed), and the value of a
 * name or of a decimal number. */
const char *cb_v1_type_name(int32_t value);
bool cb_v1_type_value(const char *text, int32_t *out);

#endif
