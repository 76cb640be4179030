/* SPDX-License-Identifier: BSD-2-Clause */
/* Opening models (model_open.c): a NetParameter in memory or in a file, eagerly or lazily; and
 * blobs (a BlobProtoVector's, or one BlobProto) kept as one layer of a model, whose handles are
 * made on first use. */
#ifndef CBLOB_SRC_MODEL_OPEN_H
#define CBLOB_SRC_MODEL_OPEN_H

#include "identify.h"
#include "model.h"
#include "source.h"

/* A NetParameter in memory: bytes[0, size), read by src/io when input is not NULL (its pages are
 * let go of as the walk passes them). A failure or a net of no layers that is surely another kind
 * of Caffe file says so (cb_explain_kind). */
cblob_status cb_model_build(cblob_context *context, const uint8_t *bytes, size_t size, const cb_input *input,
                            cblob_model **out);

/* The same from a source in memory, a net of no layers returned as it is. */
cblob_status cb_model_build_any(cblob_context *context, cb_source *source, cblob_model **out);

/* A NetParameter from a file being read (identify.h): its refusals say what the file is. A lazily
 * opened model takes the file over (reading->file becomes NULL) and closes it when destroyed.
 * any_layers: a net of no layers is returned as it is (else one that is surely another kind of
 * Caffe file is refused, saying so). */
cblob_status cb_model_open_reading(cblob_context *context, cb_file_reading *reading, bool lazy, bool any_layers,
                                   cblob_model **out);
/* The input a model of no layers was opened from: its top bytes, less the NUL after its name (a
 * malloc'd copy). */
cblob_status cb_model_original_top(const cblob_model *model, uint8_t **out, size_t *out_size);

/* A BlobProtoVector's blobs (vector) or one BlobProto's as a model of one layer holding them, every
 * value read. */
cblob_status cb_model_build_blobs(cblob_context *context, cb_source *source, bool vector, cblob_model **out);

#endif
