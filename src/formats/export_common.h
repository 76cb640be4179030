/* SPDX-License-Identifier: BSD-2-Clause */
/* What the single-file exports (safetensors, npz) share: the list of tensors a model exports
 * and streaming a tensor's bytes to a sink; and making a model from named tensors read back. */
#ifndef CBLOB_SRC_EXPORT_H
#define CBLOB_SRC_EXPORT_H

#include "model.h"

typedef enum cb_tensor_kind {
    CB_TENSOR_PLAIN,     /* a blob's part as it is */
    CB_TENSOR_SCALED,    /* BatchNorm's running statistics: divided by Caffe's scale factor */
} cb_tensor_kind;

typedef struct cb_tensor {
    char *key;
    int64_t layer, index;
    cblob_part part;
    cb_tensor_kind kind;
    cb_blob_facts facts;
    uint64_t bytes;
} cb_tensor;

typedef struct cb_tensor_list {
    cb_tensor *items;
    int64_t count;
} cb_tensor_list;

/* The tensors of a model, keyed for safetensors (separator '.', PyTorch names when asked) or npz
 * (separator '/'); diffs too when asked. */
cblob_status cb_tensor_list_make(const cblob_model *model, char separator, bool torch_names, bool diffs,
                                 cb_tensor_list *out);
void cb_tensor_list_free(cb_tensor_list *list);

/* Streams a tensor's bytes (its values, little-endian) to the sink; a counting sink only counts. */
cblob_status cb_tensor_write(const cblob_model *model, const cb_tensor *tensor, cb_sink *sink);

/* Models read back from named tensors: keys split into layer and index (and diff). */
typedef struct cb_named_tensor {
    char *layer;
    int64_t index;
    bool diff;
    bool running_stat; /* a PyTorch running_mean or running_var (BatchNorm) */
    cblob_blob *blob;
} cb_named_tensor;

/* Adds a tensor under a key (the key's layer part is copied); blob is taken over. */
typedef struct cb_tensor_set {
    cb_named_tensor *items;
    int64_t count, capacity;
} cb_tensor_set;

cblob_status cb_tensor_set_add(cb_tensor_set *set, const char *layer, size_t layer_length, int64_t index, bool diff,
                               bool running_stat, cblob_blob *blob, const char *key);
void cb_tensor_set_free(cb_tensor_set *set);
/* One V2 model from the tensors: layers in order of first appearance, blobs by index (a gap is
 * CBLOB_ERR_PARSE), diffs into their blobs. types (may be NULL) maps layer names to types. */
typedef const char *cb_type_lookup(void *context, const char *layer);
cblob_status cb_tensor_set_model(cblob_context *context, cb_tensor_set *set, const char *name,
                                 cb_type_lookup *types, void *types_context, cblob_model **out);

/* The readers of the single-file exports (export_npz.c, export_safetensors.c); npz's .npy members
 * convert to dtype (0: their own). */
cblob_status cb_model_open_npz_bytes(cblob_context *context, const uint8_t *bytes, size_t size, cblob_dtype dtype,
                                     cblob_model **out);
cblob_status cb_model_open_safetensors_bytes(cblob_context *context, const uint8_t *bytes, size_t size,
                                             cblob_model **out);

#endif
