/* SPDX-License-Identifier: BSD-2-Clause */
/* Models are containers of bytes (DESIGN.md, "One walker over Caffe's messages").
 *
 * A model keeps a net as the file has it, in plain structs:
 * - `top`: the NetParameter's fields other than layers, in order (the net's name, inputs, fields
 *   of forks), each layer's `lead_end` saying which of them come before it;
 * - a layer (cb_layer): its field as the file has it, less its blobs (cut out where they stood),
 *   with a NUL byte after the text of its name and of its type, so that both are C strings where
 *   they lie; and its blobs;
 * - a blob (cb_model_blob): its BlobProto field less the payloads of the values that count (its
 *   frame), the values decoded into arrays (or, for a lazily opened model, still in the file at
 *   `file_offset`), its shape and dtype, and its handle once one was made.
 * Saving writes the bytes back with each blob in its place: a model opened and saved unchanged is
 * the same bytes. A blob whose values changed changes only its value bytes; one whose shape
 * changed is written as Caffe's ToProto writes it (model_save.c). Blobs added as handles or as
 * arrays (cblob_model_add_layer, the readers of npz and safetensors) have no frame: ToProto too.
 *
 * Memory: a layer costs its struct (56 bytes), a blob its struct (64 bytes) and its dims (8 bytes
 * an axis), and both their bytes; values are the arrays. Everything lives in an arena of chunks
 * that never move, so the text the structure calls return stays valid until the model is
 * destroyed.
 *
 * This file is the data and its lifetime; model_values.c makes handles and reads values,
 * model_open.c builds models from files, model_save.c writes them, model_layers.c answers the
 * structure calls. */
#ifndef CBLOB_SRC_MODEL_H
#define CBLOB_SRC_MODEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "cblob/cblob.h"
#include "sink.h"

/* ---- growable bytes and the arena ------------------------------------------------------------ */

typedef struct cb_bytes {
    uint8_t *data;
    size_t size, capacity;
} cb_bytes;

cblob_status cb_bytes_append(cb_bytes *bytes, const void *data, size_t size);
/* Room for size more bytes at the end (their place: bytes->data + bytes->size, then size += n). */
cblob_status cb_bytes_reserve(cb_bytes *bytes, size_t size);
cblob_status cb_bytes_put_varint(cb_bytes *bytes, uint64_t value);
void cb_bytes_free(cb_bytes *bytes);

typedef struct cb_arena_chunk cb_arena_chunk;
typedef struct cb_arena {
    cb_arena_chunk *chunks; /* newest first */
    size_t total;           /* bytes stored, for the next chunk's size */
} cb_arena;

/* Room for size bytes aligned to `align` (a power of two, at most 8), which never moves. */
cblob_status cb_arena_reserve(cb_arena *arena, size_t size, size_t align, void **out);
/* Keeps bytes staged in `bytes` in the arena (aligned to `align`), and leaves `bytes` empty: large
 * ones are taken over as they are (no copy), small ones copied. */
cblob_status cb_arena_keep(cb_arena *arena, cb_bytes *bytes, size_t align, const uint8_t **out);
void cb_arena_free(cb_arena *arena);

/* ---- blobs, layers and the model --------------------------------------------------------------- */

/* Blob flags. */
enum {
    CB_BLOB_UNREAD = 1,     /* the values are still in the model's file, at file_offset (lazy open) */
    CB_BLOB_DATA_HOST = 2,  /* data was cb_host_alloc'ed (a handle adopts it; else freed with the model) */
    CB_BLOB_DIFF_HOST = 4,  /* the same for diff (arrays without the flag live in the arena) */
    CB_BLOB_IN_FRAME = 8,   /* the blob stands inside one of its layer's frames (a V0 layer) */
    /* An UNREAD blob without a frame (a lazily opened safetensors or npz file): its data lies at
     * file_offset as count elements of its dtype, little-endian, one after the other ... */
    CB_BLOB_FILE_HALF = 16,     /* ... or of IEEE half floats (safetensors' F16) for a float32 blob */
    CB_BLOB_FILE_BFLOAT16 = 32, /* ... or of bfloat16 (BF16) for a float32 blob */
    CB_BLOB_FILE_CRC = 64,      /* the bytes read must have CRC-32 `values_crc` (an npz member's values) */
    /* An npz member deflated: its compressed bytes lie at file_offset, dims[num_axes] of them, and
     * inflate to dims[num_axes + 1] bytes (its .npy header, dropped) and then the values. */
    CB_BLOB_FILE_DEFLATED = 128,
};

/* A lazily opened file's blobs of at most this many bytes of values are read at open, with its
 * structure (a read each on access would cost more than the bytes); larger ones stay in the file. */
#define CB_LAZY_VALUES_MIN ((size_t)4096)

typedef struct cb_model_blob {
    /* The BlobProto field as the file has it (tag, length, fields) less the payloads of the values
     * that count (double_data or data, double_diff or diff): cb_frame_next reads it. NULL for a
     * blob without one (added as a handle or as arrays). */
    const uint8_t *frame;
    const int64_t *dims;    /* num_axes dims; NULL for a blob added as a handle (its shape is the handle's) */
    void *data, *diff;      /* the values: data in dtype, diff in diff_dtype; NULL: none, or not read yet */
    cblob_blob *handle;     /* made on first use (model_values.c); NULL until then */
    uint64_t file_offset;   /* CB_BLOB_UNREAD: the file offset of the frame's first byte (no frame: of the data) */
    union {
        uint32_t frame_size;
        uint32_t values_crc; /* no frame, CB_BLOB_FILE_CRC: the CRC-32 of the data's bytes in the file */
    };
    uint32_t at;            /* where the blob's field stands in its layer's bytes */
    uint8_t num_axes;
    uint8_t dtype;          /* cblob_dtype of the values (0: a handle's) */
    uint8_t diff_dtype;     /* 0: no diff */
    uint8_t flags;
} cb_model_blob;

/* A V0 layer inside a V1 one that holds the layer's name, type or blobs: a nested message whose
 * length is written anew when what it holds changes size. Positions in the layer's bytes. */
typedef struct cb_frame {
    uint32_t at, end; /* its tag, and the byte after its last field */
} cb_frame;

struct cb_layer_index; /* model_layers.c */

typedef struct cb_layer {
    /* Its field in the NetParameter: tag, length, fields (blobs cut out), with a NUL after the
     * name's and the type's text (when they are text in it); then texts it does not hold (a V1
     * type's enum name). */
    const uint8_t *bytes;
    const char *name, *type; /* never NULL ("" when the layer names none) */
    cb_model_blob *blobs;
    const cb_frame *frames;
    uint32_t lead_end; /* the model's top bytes before this position come before this layer */
    uint32_t size;     /* of the field (texts it does not hold follow) */
    uint32_t num_blobs, num_frames;
} cb_layer;

struct cb_input_file;

struct cblob_model {
    cblob_context *context;
    /* A lazily opened model's file, which its UNREAD blobs are read from on first access; NULL. */
    struct cb_input_file *file;
    cblob_net_format format;
    const char *name; /* NULL: the net has none; else in `top`, NUL-terminated */
    cb_bytes top;     /* the top-level fields other than layers, in order */
    size_t name_nul;  /* the NUL after the name's text in `top` (SIZE_MAX: none) */
    int64_t num_layers, capacity;
    cb_layer *layers;
    /* Each layer's bottoms, tops, rules and param specs, indexed on the first question about it
     * (model_layers.c, one block each): NULL until a question is asked of any layer. */
    struct cb_layer_index **indexes;
    int64_t num_indexes;
    cb_arena arena;
    /* Guards making handles and indexes (which the pure getters may do) and loading values. */
    pthread_mutex_t lock;
};

cblob_status cb_model_new(cblob_context *context, cblob_net_format format, cblob_model **out);
void cb_model_free(cblob_model *model);
void cb_model_lock(const cblob_model *model);
void cb_model_unlock(const cblob_model *model);

/* cblob_model_create for internal callers (arguments checked). */
cblob_status cb_model_create(cblob_context *context, cblob_net_format format, const char *name, cblob_model **out);
/* cblob_model_add_layer for internal callers: the handles are retained. */
cblob_status cb_model_add_layer(cblob_model *model, const char *name, const char *type, cblob_blob *const *blobs,
                                int64_t num_blobs);

/* The layer, or CBLOB_ERR_OUT_OF_RANGE. */
cblob_status cb_model_layer(const cblob_model *model, int64_t layer, const cb_layer **out);
/* Blob `index` of a layer, or CBLOB_ERR_OUT_OF_RANGE. */
cblob_status cb_model_blob_at(const cblob_model *model, int64_t layer, int64_t index, cb_model_blob **out);

/* ---- building layers ------------------------------------------------------------------------- */

/* A layer being built (the walk of a file, cblob_model_add_layer, the readers of named tensors):
 * staged here, then kept by cb_model_keep_layer. Positions count in `bytes`. */
typedef struct cb_layer_draft {
    cb_bytes bytes;  /* the layer's field: tag, length and fields, less its blobs */
    cb_bytes blobs;  /* cb_model_blob records, `at` set */
    cb_bytes frames; /* cb_frame */
    size_t name_at, name_length; /* the reported name's text in bytes (name_at SIZE_MAX: none) */
    size_t type_at, type_length; /* the same for the type */
    const char *type_text;       /* a type not in bytes (V1's enum name), or NULL */
    char type_number[16];        /* a V1 type the enum does not name, as text */
    cb_bytes frame;  /* the frame of the blob being built */
} cb_layer_draft;

void cb_layer_draft_init(cb_layer_draft *draft);
/* Frees what the draft holds, the arrays of its blobs included (a layer not kept). */
void cb_layer_draft_free(cb_layer_draft *draft);
/* Makes the draft the model's next layer, after the top bytes up to lead_end; the draft is empty
 * again afterwards (its blobs' arrays are the model's). */
cblob_status cb_model_keep_layer(cblob_model *model, cb_layer_draft *draft, size_t lead_end);
/* Drafts a new layer as cblob_model_add_layer writes one: its name, its type (V1: the LayerType
 * enum, from its name or number), then num_blobs blobs, whose records are empty. */
cblob_status cb_model_draft_layer(const cblob_model *model, const char *name, const char *type, int64_t num_blobs,
                                  cb_layer_draft *draft);
/* Copies dims into the model's arena for a blob record. */
cblob_status cb_model_keep_dims(cblob_model *model, const int64_t *dims, int32_t num_axes, const int64_t **out);
/* Room for a blob's array of `bytes` bytes: from the arena when small (flags 0), else host memory a
 * handle can adopt (*host_flag set to the part's CB_BLOB_*_HOST). */
cblob_status cb_model_alloc_array(cblob_model *model, size_t bytes, uint8_t host_flag, void **out, uint8_t *flags);
/* Frees a blob record's host arrays (the arena's are freed with the model). */
void cb_model_blob_free_arrays(cb_model_blob *blob);

/* ---- reading frames and writing layers ----------------------------------------------------------- */

/* The values of a blob: count elements from its shape. */
int64_t cb_model_blob_count(const cb_model_blob *blob);
size_t cb_model_blob_part_bytes(const cb_model_blob *blob, cblob_part part);

/* A piece of a blob's frame, in order: kept bytes, or a field of values (its tag, and length when
 * packed, in `bytes`; its payload, count elements of the part, is not in the frame), or a run of
 * `count` unpacked elements of one field (`bytes` holds one element's tag: each element is that
 * tag and the element, the elements not in the frame). */
typedef struct cb_frame_piece {
    const uint8_t *bytes;
    size_t size;
    bool values;
    bool packed;
    int part;          /* CBLOB_PART_DATA or CBLOB_PART_DIFF */
    bool is_double;    /* the field's elements (else float) */
    int64_t count;
} cb_frame_piece;

/* Where the BlobProto's fields start in a frame (after the field's tag and length). */
size_t cb_frame_body(const cb_model_blob *blob);
/* The piece at *pos of the frame (start at 0: its body); false past its end. */
bool cb_frame_next(const cb_model_blob *blob, size_t *pos, cb_frame_piece *out);

/* Writes blob `index` of a layer to the sink, as its field (tag, length, BlobProto); the sink may
 * be a counter. */
typedef cblob_status cb_blob_writer(void *context, int64_t index, const cb_model_blob *blob, cb_sink *sink);

/* Writes a layer's field: its bytes with each blob written by `write` where it stands (NULL: blobs
 * left out), lengths of the field and of its V0 layers written anew when their content changed
 * size. */
cblob_status cb_layer_emit(const cb_layer *layer, cb_blob_writer *write, void *context, cb_sink *sink);
/* Writes layer `layer` of the model as a save writes it (model_save.c: its blobs in place, diffs
 * with write_diff), the model locked and its values loaded (cb_model_load_all). */
cblob_status cb_model_emit_layer(const cblob_model *model, int64_t layer, bool write_diff, cb_sink *sink);
/* The top-level bytes [from, to) of the model (the name's NUL left out). */
void cb_model_emit_top(const cblob_model *model, size_t from, size_t to, cb_sink *sink);

/* The model as cblob_model_to_proto writes it (diffs included), in memory of its own (cb_malloc'd;
 * model_save.c). */
cblob_status cb_model_serialize(const cblob_model *model, uint8_t **out, size_t *out_size);

#endif
