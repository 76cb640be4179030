/* SPDX-License-Identifier: BSD-2-Clause */
/* The values of a model's blobs (model.h): handles made on first use, values read without one,
 * and a lazily opened model's values read from its file on first access. All under the model's
 * lock. */
#ifndef CBLOB_SRC_MODEL_VALUES_H
#define CBLOB_SRC_MODEL_VALUES_H

#include "model.h"

/* Shape and dtype of a blob, made or not. */
typedef struct cb_blob_facts {
    cblob_dtype dtype;
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count;
    bool has_diff;
} cb_blob_facts;
cblob_status cb_model_blob_facts(const cblob_model *model, int64_t layer, int64_t index, cb_blob_facts *out);
/* The facts' shape; and whether two blobs' shapes are ones Caffe's ShapeEquals takes for one
 * another: equal, or equal once padded to 4 axes with leading 1s (model_replace.c). */
void cb_facts_shape(const cb_blob_facts *facts, cb_shape *out);
bool cb_facts_shape_equals(const cb_blob_facts *a, const cb_blob_facts *b);

/* The handle of blob `index`, made on first use; the model keeps it (not retained for the caller).
 * A handle adopts the blob's arrays where it can (no copy). */
cblob_status cb_model_blob_handle(const cblob_model *model, int64_t layer, int64_t index, cblob_blob **out);

/* Copies elements [start, start + count) of a blob's part, as the blob's dtype, into out; a part
 * the blob does not hold reads as zeros. Reads made handles through their host memory. */
cblob_status cb_model_blob_read(const cblob_model *model, int64_t layer, int64_t index, cblob_part part, int64_t start,
                                int64_t count, void *out);

/* A pointer to all of a part's values in the blob's dtype when they lie in one piece (a made
 * handle's host memory, or the blob's own array), else NULL (read them with cb_model_blob_read). */
cblob_status cb_model_blob_values(const cblob_model *model, int64_t layer, int64_t index, cblob_part part,
                                  const void **out);

/* Reads an UNREAD blob's values from the model's file into arrays of its own (under the lock);
 * nothing for other blobs. */
cblob_status cb_model_load_values(const cblob_model *model, cb_model_blob *blob);
/* Loads every UNREAD blob (before a save, which writes them all, or to let the file go). */
cblob_status cb_model_load_all(const cblob_model *model);

/* Copies n elements, converting between float and double as needed. */
void cb_convert_floats(void *dst, bool dst_double, const void *src, bool src_double, int64_t n);

/* Half floats (IEEE binary16, or bfloat16 when bfloat) read into the upper half of an array of
 * `count` floats (at to + 2 * count) become those floats, in place: float i is written after the
 * halves up to i were read (it ends at byte 4i + 4; half i + 1 starts at byte 2 * count + 2i + 2,
 * never before), so the file's bytes are read once, straight into the blob's memory. */
void cb_widen_halves_in_place(uint8_t *to, int64_t count, bool bfloat);

#endif
