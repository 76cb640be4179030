/* SPDX-License-Identifier: BSD-2-Clause */
/* Models are containers of bytes (DESIGN.md, "Design for the 1.1 work").
 *
 * A model keeps each layer of the file as a record: the layer's fields in their order, as
 * operations that re-emit them. Fields nobody looks into (parameters, unknown fields of forks)
 * are kept as their bytes; strings the structure calls hand out (name, type, bottoms, tops,
 * parameter and stage names) are kept once, NUL-terminated; nested messages that hold blobs (the
 * layer itself, the V0 layer inside a V1 one) keep their tag and length bytes and are re-framed
 * only when their content changed size; and every BlobProto keeps its fields in order with its
 * values decoded (into arrays of its own, or inline for small blobs). Saving re-emits the
 * operations: a model opened and saved unchanged is the same bytes; a blob whose values changed
 * changes only its value bytes; a blob whose shape changed is re-encoded as Caffe's ToProto
 * writes it.
 *
 * Blob handles are made on first access (cblob_model_layer_blob): until then a blob costs its
 * decoded values and a few bytes, so files of many tiny layers or many empty blobs cost about
 * their own size. A handle made from decoded arrays adopts them (no copy). The record of a blob
 * (its header and operations) is all a later lazy open needs: values could as well be read
 * from the file on first access.
 *
 * Records live in an arena of chunks that never move, so the text the structure calls return
 * stays valid until the model is destroyed. */
#ifndef CBLOB_SRC_MODEL_H
#define CBLOB_SRC_MODEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "cblob/cblob.h"
#include "sink.h"
#include "varint.h"

/* ---- growable bytes and the arena ------------------------------------------------------------ */

typedef struct cb_bytes {
    uint8_t *data;
    size_t size, capacity;
} cb_bytes;

cblob_status cb_bytes_append(cb_bytes *bytes, const void *data, size_t size);
cblob_status cb_bytes_put_u8(cb_bytes *bytes, uint8_t value);
cblob_status cb_bytes_put_varint(cb_bytes *bytes, uint64_t value);
void cb_bytes_free(cb_bytes *bytes);

typedef struct cb_arena_chunk cb_arena_chunk;
typedef struct cb_arena {
    cb_arena_chunk *chunks; /* newest first */
    size_t total;           /* bytes stored, for the next chunk's size */
} cb_arena;

/* Room for size bytes in the arena, which never moves. */
cblob_status cb_arena_reserve(cb_arena *arena, size_t size, uint8_t **out);
void cb_arena_free(cb_arena *arena);

/* ---- varints ---------------------------------------------------------------------------------- */

/* Records hold varints checked when they were read from the file (src/util/varint.h decodes and
 * encodes them): these read one known to be well formed. */
uint64_t cb_varint_read(const uint8_t **cursor);
/* The bytes of the varint at p (well formed). */
size_t cb_varint_length(const uint8_t *p);

/* ---- records ---------------------------------------------------------------------------------- */

/* Operation codes of a layer record. Raw tags and lengths are the file's own bytes (a varint may
 * be written longer than it needs: it is kept as it was). */
enum {
    CB_OP_END = 0,
    CB_OP_BYTES = 1,   /* varint n, n bytes: fields kept as they are */
    CB_OP_TEXT = 2,    /* raw tag, raw length, the string's bytes, NUL */
    CB_OP_MESSAGE = 3, /* raw tag, raw length, inner operations, END: a nested message */
    CB_OP_BLOB = 4,    /* raw tag, raw length, blob header, inner operations (BYTES, VALUES), END */
    CB_OP_VALUES = 5,  /* flags, raw tag, raw length (packed) or varint count (unpacked), payload */
    CB_OP_NEW_BLOB = 6 /* raw tag: a blob given to cblob_model_add_layer, written as ToProto does */
};

/* Blob header flags. */
enum {
    CB_BLOB_DOUBLE = 1,   /* the values that count are double_data: a float64 blob */
    CB_BLOB_ARRAYS = 2,   /* values live in arrays (two pointers follow the dims), not inline */
    CB_BLOB_HAS_DIFF = 4, /* the BlobProto holds a diff (diff or double_diff) */
    CB_BLOB_DIFF_DOUBLE = 8, /* that diff is double_diff */
    CB_BLOB_RAW = 16, /* a blob without values (a zero dimension): no dims nor inner operations, its
                       * BlobProto's bytes follow as they are (dims are read from them) */
    CB_BLOB_LAZY = 32,   /* ARRAYS of a lazily opened model: a varint follows the two pointers, the
                          * file offset of the BlobProto's first byte; the inner operations then
                          * give every value's offset (model_lazy.c) */
    CB_BLOB_UNREAD = 64, /* LAZY values still in the file: the arrays are not made yet */
};

/* VALUES flags. */
enum {
    CB_VALUES_OF_DIFF = 1,
    CB_VALUES_UNPACKED = 2, /* a run of elements, each behind the same raw tag */
    CB_VALUES_DOUBLE = 4,   /* elements are doubles (double_data, double_diff) */
};

/* A decoded operation; pointers point into the record. */
typedef struct cb_op {
    int code;
    const uint8_t *start;  /* the operation's code byte */
    const uint8_t *tag;    /* raw tag (TEXT, MESSAGE, BLOB, VALUES, NEW_BLOB) */
    size_t tag_size;
    uint32_t field;        /* the tag's field number */
    const uint8_t *length; /* raw length (TEXT, MESSAGE, BLOB, packed VALUES) */
    size_t length_size;
    uint64_t original;     /* the length the file gave (TEXT, MESSAGE, BLOB, packed VALUES) */
    const uint8_t *bytes;  /* BYTES: the bytes; TEXT: the string (NUL-terminated); raw BLOB: the BlobProto */
    size_t size;           /* BYTES, TEXT: the byte count */
    const uint8_t *inner;  /* MESSAGE, BLOB: the first inner operation */
    /* BLOB */
    uint8_t blob_flags;
    int32_t num_axes;      /* a raw blob's only once cb_op_load_dims has read them */
    int64_t dims[CBLOB_MAX_AXES];
    uint8_t *arrays;       /* where the two array pointers are stored (ARRAYS), else NULL */
    uint8_t *flags;        /* where blob_flags is stored (loading an UNREAD blob clears the flag) */
    uint64_t file_offset;  /* LAZY: the file offset of the BlobProto's first byte */
    /* VALUES */
    uint8_t values_flags;
    int64_t count;         /* elements */
    int64_t first;         /* with ARRAYS: the first element's index in the array */
    const uint8_t *payload; /* inline: the elements' bytes */
} cb_op;

/* Reads the operation at *cursor and moves past it (past a MESSAGE or BLOB's END: the inner
 * operations start at op->inner). in_blob_arrays: the enclosing blob keeps its values in arrays
 * (for VALUES operations). */
void cb_op_read(const uint8_t **cursor, bool in_blob_arrays, cb_op *op);
/* Reads a raw blob's dims from its BlobProto bytes (other blobs have them already). Apart from
 * cb_op_read, which walks past many blobs to reach one (a scan per raw blob there made a layer of
 * k empty blobs cost O(k^2) scans). */
void cb_op_load_dims(cb_op *blob);

/* Reads the two array pointers of a BLOB header with ARRAYS. */
void cb_op_arrays(const cb_op *blob, void **data, void **diff);
void cb_op_set_arrays(const cb_op *blob, void *data, void *diff);

/* A layer record: varint name offset, varint type offset (both from the body, to NUL-terminated
 * text), varint num_blobs, the slots pointer when num_blobs is not 0, then the body: operations up
 * to END, then strings the operations do not hold (a V1 type's enum name, "" for a missing name). */
int64_t cb_record_num_blobs(const uint8_t *record);
const char *cb_record_name(const uint8_t *record);
const char *cb_record_type(const uint8_t *record);
/* The handles made so far (NULL slots: not yet), or NULL when none was; under the model's lock. */
cblob_blob **cb_record_slots(const uint8_t *record);
void cb_record_set_slots(uint8_t *record, cblob_blob **slots);
/* The first operation. */
const uint8_t *cb_record_ops(const uint8_t *record);
/* Writes a record into the arena. */
cblob_status cb_record_store(cb_arena *arena, const cb_bytes *body, uint64_t name_offset, uint64_t type_offset,
                             int64_t num_blobs, uint8_t **out);

/* ---- the model ------------------------------------------------------------------------------- */

/* Where the last blob lookup stopped: reading a layer's blobs in order (exports, the cblob
 * program) then costs O(1) per blob instead of a walk from the layer's start, which made a layer
 * of k blobs cost O(k^2). */
#define CB_BLOB_WALK_DEPTH 8
typedef struct cb_blob_walk {
    const uint8_t *record; /* whose blobs; NULL: no walk */
    int64_t index;         /* the blob found last (-1 before the first) */
    cb_op op;              /* it */
    int depth;             /* MESSAGE operations open */
    const uint8_t *cursors[CB_BLOB_WALK_DEPTH]; /* where the walk goes on at each level */
} cb_blob_walk;

struct cb_input_file;

struct cblob_model {
    cblob_context *context;
    /* A lazily opened model's file, which its LAZY blobs are read from on first access; NULL. */
    struct cb_input_file *file;
    cblob_net_format format;
    char *name;      /* NULL: the net has none */
    cb_bytes head;   /* top-level fields before the first layer (the name, for a created model) */
    cb_bytes trailer; /* top-level fields after the last layer */
    int64_t num_layers, capacity;
    uint8_t **layers; /* records */
    cb_arena arena;
    /* Guards making handles (which the pure getters may do), the slots and the walk. */
    pthread_mutex_t lock;
    cb_blob_walk walk;
};

cblob_status cb_model_new(cblob_context *context, cblob_net_format format, cblob_model **out);
/* cblob_model_create and cblob_model_add_layer for internal callers (arguments checked). */
cblob_status cb_model_create(cblob_context *context, cblob_net_format format, const char *name, cblob_model **out);
cblob_status cb_model_add_layer(cblob_model *model, const char *name, const char *type, cblob_blob *const *blobs,
                                int64_t num_blobs);
void cb_model_free(cblob_model *model);
/* Appends a layer: its record's body (copied into the arena), the offsets of its name and type
 * text in the body, and its blob count. */
cblob_status cb_model_append_record(cblob_model *model, const cb_bytes *body, uint64_t name_offset,
                                    uint64_t type_offset, int64_t num_blobs);

/* Builds a model from a NetParameter; the whole input is checked. done_with (may be NULL) is
 * told each range of the input that will not be read again. */
typedef void cb_done_with_fn(void *context, size_t offset, size_t length);
cblob_status cb_model_build(cblob_context *context, const uint8_t *input, size_t size, cb_done_with_fn *done_with,
                            void *done_context, cblob_model **out);

/* Opens a model reading only its structure from the file (the blobs' values stay there until
 * first access); model_lazy.c. */
cblob_status cb_model_open_lazy(cblob_context *context, const char *path, cblob_model **out);
/* The same over a file opened already, which the model keeps on success. A file the survey finds no
 * layer in (a blob, a vector, a net of only a name) is CBLOB_ERR_PARSE with no message: the
 * caller reads it whole to tell what it is. */
cblob_status cb_model_open_lazy_file(cblob_context *context, struct cb_input_file *file, cblob_model **out);
/* Reads an UNREAD blob's values from the model's file into arrays of its own (and clears the flag,
 * in the record and in *blob); does nothing for other blobs. Under the model's lock. */
cblob_status cb_model_load_values(const cblob_model *model, cb_op *blob);
/* Loads every UNREAD blob (before a save, which writes them all). */
cblob_status cb_model_load_all(const cblob_model *model);

/* cb_model_build over an image of the file (io.h, cb_input_file_image) in which only the structure
 * was read: blobs whose values are kept in arrays become LAZY and UNREAD, their values left in the
 * file. Blobs kept inline (cb_model_keeps_inline) need their values in the image. */
cblob_status cb_model_build_lazy(cblob_context *context, const uint8_t *image, size_t size, cblob_model **out);
/* Whether a blob's values are kept inline in its record (small ones), not in arrays. */
struct cb_blob_layout;
bool cb_model_keeps_inline(const struct cb_blob_layout *layout, const cb_shape *shape);

/* The layer's record, or CBLOB_ERR_OUT_OF_RANGE. */
cblob_status cb_model_record(const cblob_model *model, int64_t layer, const uint8_t **out);

/* Blob `index` of a layer: its BLOB (or NEW_BLOB) operation, and the handle when one was made. */
typedef struct cb_model_blob {
    cb_op op;
    cblob_blob *handle; /* NULL: not made yet */
} cb_model_blob;
cblob_status cb_model_find_blob(const cblob_model *model, int64_t layer, int64_t index, cb_model_blob *out);
/* The handle of blob `index`, made on first use; the model keeps it (not retained for the caller). */
cblob_status cb_model_blob_handle(const cblob_model *model, int64_t layer, int64_t index, cblob_blob **out);

/* The shape a BLOB operation's header gives. */
cblob_status cb_model_blob_shape(const cb_op *blob, cb_shape *out);

/* Copies n elements, converting between float and double as needed. */
void cb_convert_floats(void *dst, bool dst_double, const void *src, bool src_double, int64_t n);

/* Shape and dtype of a blob, made or not. */
typedef struct cb_blob_facts {
    cblob_dtype dtype;
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count;
    bool has_diff;
} cb_blob_facts;
cblob_status cb_model_blob_facts(const cblob_model *model, int64_t layer, int64_t index, cb_blob_facts *out);

/* Copies elements [start, start + count) of a blob's part, as the blob's dtype, into out; a part
 * the file does not hold reads as zeros. Reads made handles through their host memory. */
cblob_status cb_model_blob_read(const cblob_model *model, int64_t layer, int64_t index, cblob_part part, int64_t start,
                                int64_t count, void *out);

/* A pointer to all of a part's values in the blob's dtype when they lie in one piece (a made
 * handle's host memory, or a blob's own array), else NULL (read them with cb_model_blob_read). */
cblob_status cb_model_blob_values(const cblob_model *model, int64_t layer, int64_t index, cblob_part part,
                                  const void **out);

/* Writes the model as a NetParameter to the sink. */
cblob_status cb_model_emit(const cblob_model *model, bool write_diff, cb_sink *sink);

#endif
