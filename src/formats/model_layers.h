/* SPDX-License-Identifier: BSD-2-Clause */
/* A layer's structure (model_layers.c): its bottoms, tops, phase, rules and param specs, indexed
 * once, on the first question about the layer, from its fields (one walk over them); the structure
 * calls and the JSON renderer read the index. */
#ifndef CBLOB_SRC_MODEL_LAYERS_H
#define CBLOB_SRC_MODEL_LAYERS_H

#include "model.h"

/* A NetStateRule. */
typedef struct cb_rule {
    cblob_phase phase;
    int32_t min_level, max_level;
    int64_t num_stages, num_not_stages;
    const char **stages, **not_stages;
    const uint8_t *bytes; /* its message */
    size_t length;
} cb_rule;

/* A ParamSpec (V1: a param name, blobs_lr and weight_decay of one position). */
typedef struct cb_param_spec {
    const char *name; /* NULL: none */
    float lr_mult, decay_mult;
    const uint8_t *bytes; /* V2: its message; V1: NULL */
    size_t length;
} cb_param_spec;

/* One block (model.c frees it with the model). Texts are NUL-terminated copies: a name holding a
 * NUL byte reads up to it. */
typedef struct cb_layer_index {
    cblob_phase phase;
    int64_t num_bottoms, num_tops, num_specs, num_param_names;
    int64_t num_rules[2]; /* by cblob_rule_kind */
    const char **bottoms, **tops;
    cb_rule *rules[2];
    cb_param_spec *specs;
    /* The layer's field less its blobs, as cb_layer_bytes_without_blobs gives it (its tag and
     * length first): the rules and specs point into it, and the parameters JSON walks it. */
    const uint8_t *bytes;
    size_t size;
} cb_layer_index;

/* The layer's index, made on first use (under the model's lock). */
cblob_status cb_model_layer_index(const cblob_model *model, int64_t layer, const cb_layer_index **out);

/* The layer's field as the file has it, less its blobs (a V0 layer's framed anew): a malloc'd
 * buffer. */
cblob_status cb_layer_bytes_without_blobs(const cb_layer *layer, uint8_t **out, size_t *out_size);

#endif
