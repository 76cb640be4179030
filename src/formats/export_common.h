/* SPDX-License-Identifier: BSD-2-Clause */
/* What the exports (safetensors, npz, .npy folders) share: the list of tensors a model exports,
 * their keys, streaming a tensor's bytes and JSON text to a sink; and making a model from named
 * tensors read back.
 *
 * Memory: the list holds 16 bytes per tensor (keys and shapes are made when asked for, not kept)
 * and a chunk to convert values in (8 bytes per element of the largest tensor, 2 MiB at most);
 * checking that keys are unique takes 16 bytes per tensor more while it runs. */
#ifndef CBLOB_SRC_EXPORT_COMMON_H
#define CBLOB_SRC_EXPORT_COMMON_H

#include "model.h"
#include "model_values.h"
#include "name_index.h"
#include "source.h"

/* ---- the tensors of a model ---------------------------------------------------------------------- */

typedef enum cb_tensor_kind {
    CB_TENSOR_PLAIN,  /* a blob's part as it is */
    CB_TENSOR_SCALED, /* BatchNorm's running statistics: divided by Caffe's scale factor */
} cb_tensor_kind;

typedef struct cb_tensor {
    int64_t layer;
    uint32_t index;
    uint8_t part;  /* cblob_part */
    uint8_t kind;  /* cb_tensor_kind */
    uint8_t torch; /* named and shaped as PyTorch names it */
} cb_tensor;

typedef struct cb_tensor_list {
    const cblob_model *model;
    char separator;
    cb_tensor *items;
    int64_t count;
    uint8_t *repeats; /* per layer: it repeats an earlier layer's name (keys `<name>@<index>`) */
    char *key;        /* the last key made */
    size_t key_capacity;
    /* Room to convert values in (cb_tensor_write), made with the list: writing allocates nothing
     * once the first byte is out, so that a failure leaves a caller's buffer untouched. */
    void *chunk;
    int64_t chunk_elements; /* of 8 bytes */
} cb_tensor_list;

/* The tensors of a model, keyed for safetensors (separator '.', PyTorch names when asked) or npz
 * (separator '/'); diffs too when asked. Fails when two tensors would get one key. */
cblob_status cb_tensor_list_make(const cblob_model *model, char separator, bool torch_names, bool diffs,
                                 cb_tensor_list *out);
void cb_tensor_list_free(cb_tensor_list *list);
/* A tensor's key (always UTF-8): valid until the next call on the list. */
cblob_status cb_tensor_key(cb_tensor_list *list, const cb_tensor *tensor, const char **out);
/* A tensor's shape and dtype (PyTorch's shape for a PyTorch name), and its bytes. */
cblob_status cb_tensor_facts(const cb_tensor_list *list, const cb_tensor *tensor, cb_blob_facts *out, uint64_t *bytes);
/* Streams a tensor's bytes (its values, little-endian) to the sink; a counting sink only counts.
 * Values that must be converted go through list->chunk; without a list (NULL), through a chunk
 * of its own. */
cblob_status cb_tensor_write(const cb_tensor_list *list, const cblob_model *model, const cb_tensor *tensor,
                             const cb_blob_facts *facts, cb_sink *sink);

/* ---- JSON text, streamed ----------------------------------------------------------------------- */

/* JSON text written to a sink as Jansson's JSON_COMPACT writes it. `quoting` levels of string
 * escaping apply to everything written (1: the text is itself the content of a JSON string). */
typedef struct cb_json_out {
    cb_sink *sink;
    int quoting;
} cb_json_out;

void cb_json_raw(cb_json_out *out, const char *text);
/* A string of bytes that may not be UTF-8 (each byte of a bad sequence becomes U+FFFD), quoted. */
void cb_json_string(cb_json_out *out, const char *bytes, size_t length);
void cb_json_integer(cb_json_out *out, int64_t value);

/* ---- models from named tensors ------------------------------------------------------------------- */

/* A model made from tensors read back (npz members, safetensors entries, .npy files), in two
 * steps: every tensor is noted first (its key's layer part, blob index, and whether it is a diff
 * or a PyTorch running statistic); then the layers are laid out (one per layer name, in order of
 * first appearance, blobs by index) and each tensor is placed, data before diffs. Memory: 24 bytes
 * per tensor and a copy of each layer name while it runs, then the model's own. */
typedef struct cb_tensor_set {
    struct noted_tensor *items;
    int64_t count, capacity;
    struct tensor_group *groups;
    int64_t num_groups, group_capacity;
    char **names; /* each group's layer name */
    cb_name_index index;
    cblob_model *model;
} cb_tensor_set;

cblob_status cb_tensor_set_note(cb_tensor_set *set, const char *layer, size_t layer_length, int64_t index, bool diff,
                                bool running_stat, const char *key);
/* Makes the model (V2, named `name` when not NULL) and its layers; types (may be NULL) maps layer
 * names to types. */
typedef const char *cb_type_lookup(void *context, const char *layer);
cblob_status cb_tensor_set_layout(cb_tensor_set *set, cblob_context *context, const char *name, cb_type_lookup *types,
                                  void *types_context);
/* Tensor i (in the order noted), of dtype and shape: its blob takes them (a diff: must be its
 * data's shape), and *out is where its values go, in *out_dtype (a diff: its data's dtype). Place
 * every data tensor before any diff. */
cblob_status cb_tensor_set_place(cb_tensor_set *set, int64_t i, cblob_dtype dtype, int32_t num_axes,
                                 const int64_t *dims, void **out, cblob_dtype *out_dtype);
/* Whether tensor i is a diff. */
bool cb_tensor_set_is_diff(const cb_tensor_set *set, int64_t i);
/* Data tensor i (not a diff), of dtype and shape, stays in the file the model will keep (a lazy
 * open): its blob is UNREAD, its values at file_offset as file_flags say (model.h's
 * CB_BLOB_FILE_*; crc: their CRC-32 with CB_BLOB_FILE_CRC; compressed and skip: the deflated
 * member's sizes with CB_BLOB_FILE_DEFLATED, else 0). */
cblob_status cb_tensor_set_defer(cb_tensor_set *set, int64_t i, cblob_dtype dtype, int32_t num_axes,
                                 const int64_t *dims, uint64_t file_offset, uint8_t file_flags, uint32_t crc,
                                 uint64_t compressed, uint64_t skip);
/* Every blob has values or is UNREAD: the model is the caller's. */
cblob_status cb_tensor_set_finish(cb_tensor_set *set, cblob_model **out);
void cb_tensor_set_free(cb_tensor_set *set);

/* The readers of the single-file exports (export_npz.c, export_safetensors.c), from a source;
 * npz's .npy members convert to dtype (0: their own). name names the input in refusals. */
/* lazy: a tensor of more than CB_LAZY_VALUES_MIN bytes that a file source holds as the blob's
 * values are (safetensors: as is, F16 or BF16; npz: a member of the blob's dtype, stored or
 * deflated) stays in the file, its blob UNREAD; diffs are read at open. The caller gives the model the file
 * (cb_model_keep_file). */
cblob_status cb_model_open_npz_source(cblob_context *context, cb_source *source, const char *name, cblob_dtype dtype,
                                      bool lazy, cblob_model **out);
cblob_status cb_model_open_safetensors_source(cblob_context *context, cb_source *source, const char *name, bool lazy,
                                              cblob_model **out);

#endif
