/* SPDX-License-Identifier: BSD-2-Clause */
/* A model's layer names, indexed (model_names.c), and the keys exports write. */
#ifndef CBLOB_SRC_MODEL_NAMES_H
#define CBLOB_SRC_MODEL_NAMES_H

#include "model.h"
#include "name_index.h"

/* A model's layer names (pointing into its layers), indexed: finding a layer by name is O(1). */
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

#endif
