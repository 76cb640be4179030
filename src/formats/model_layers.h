/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading a layer's structure from its record (model.h): its fields one by one, whether kept as
 * bytes, text or nested messages. Shared by the structure calls, the JSON renderer and exports. */
#ifndef CBLOB_SRC_MODEL_LAYERS_H
#define CBLOB_SRC_MODEL_LAYERS_H

#include "model.h"
#include "name_index.h"

/* One field of a message in a record. */
typedef struct cb_layer_field {
    uint32_t number;
    int type;              /* CB_WIRE_* */
    uint64_t varint;       /* CB_WIRE_VARINT */
    const uint8_t *payload; /* fixed and length-delimited fields: their bytes; NULL for blobs */
    size_t length;
    const cb_op *op;       /* the TEXT, MESSAGE or BLOB operation it is; NULL for kept bytes */
} cb_layer_field;

/* Calls visit for every field of the operations (not descending into nested messages); stops
 * when visit returns false. */
typedef bool cb_field_visit(void *context, const cb_layer_field *field);
void cb_for_each_field(const uint8_t *ops, cb_field_visit *visit, void *context);

/* A layer's phase (LayerParameter.phase; CBLOB_PHASE_NONE when unset or V1). */
cblob_phase cb_record_phase(const cblob_model *model, const uint8_t *record);

/* The layer message's operation of a record. */
void cb_record_layer(const uint8_t *record, cb_op *out);

/* A model's layer names (pointing into its records), indexed: finding a layer by name is O(1). */
typedef struct cb_model_names {
    int64_t count;
    const char **names;
    cb_name_index index;
    cb_name_index with_blobs; /* the names of layers with blobs: a key finds the first of those */
    /* The names as UTF-8 (bad bytes as U+FFFD, as keys write them), indexed; NULL when all are. */
    char **repaired;
    cb_name_index repaired_index;
} cb_model_names;

cblob_status cb_model_names_make(const cblob_model *model, cb_model_names *out);
void cb_model_names_free(cb_model_names *names);

/* Which layers repeat the name of an earlier one (a malloc'd array of num_layers flags): exports
 * name those `<name>@<index>` so that every key is unique. */
cblob_status cb_model_repeats(const cblob_model *model, uint8_t **out);

/* The layer a key's layer part names: a layer of that name (the first with blobs, else the
 * first: a key never means a layer without blobs when one of its name has some), or `<name>@<index>`
 * naming the layer at that index; a name as UTF-8 (each bad byte U+FFFD, as the exports and the
 * .npy index write it) finds its layer too. -1 when none. */
int64_t cb_model_layer_for_key(const cb_model_names *names, int64_t num_layers, const char *name);

/* JSON (model_json.c): text of bytes that may not be UTF-8 (bad bytes become U+FFFD), and the
 * text convention over a value (which it releases). */
typedef struct json_t json_t;
json_t *cb_json_text(const char *bytes, size_t length);
cblob_status cb_json_return(json_t *value, char *buffer, size_t buffer_size, size_t *out_length);

#endif
