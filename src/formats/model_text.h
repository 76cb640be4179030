/* SPDX-License-Identifier: BSD-2-Clause */
/* Protobuf's text format as Caffe's WriteProtoToTextFile writes it (model_text.c). */
#ifndef CBLOB_SRC_MODEL_TEXT_H
#define CBLOB_SRC_MODEL_TEXT_H

#include <protobuf-c/protobuf-c.h>

#include "model.h"

/* Room for a number's text (a double with 17 digits and its exponent, an enum name). */
#define CB_TEXT_NUMBER_MAX 64

/* A float or double as C++ protobuf's text printer writes it. */
void cb_text_float(float value, char text[CB_TEXT_NUMBER_MAX]);
void cb_text_double(double value, char text[CB_TEXT_NUMBER_MAX]);

/* Appends the text of a message's bytes, read by the descriptor, to out. */
cblob_status cb_text_message(const ProtobufCMessageDescriptor *descriptor, const uint8_t *data, size_t size,
                             cb_bytes *out);

/* The text of the model's NetParameter with every layer's blobs left out (a prototxt). */
cblob_status cb_model_definition_text(const cblob_model *model, cb_bytes *out);

/* Text (a prototxt) to a NetParameter's wire bytes, appended to out (model_text_read.c); errors
 * say "<name>:<line>:<column>: ...". */
cblob_status cb_prototxt_to_net_bytes(const char *name, const char *text, size_t size, cb_bytes *out);
/* A BlobProto's text to its wire bytes, appended to out, errors as cb_prototxt_to_net_bytes's. */
cblob_status cb_text_to_blob_bytes(const char *name, const char *text, size_t size, cb_bytes *out);
/* What the calls do with a text made whole (`made`: the status of making it; either way the text
 * is freed): write it into a sink (a _file call), or hand it out with its NUL in the two-call
 * convention (cb_return_text). */
struct cb_sink;
cblob_status cb_text_emit(cblob_status made, cb_bytes *text, struct cb_sink *sink);
cblob_status cb_text_return(cblob_status made, cb_bytes *text, char *buffer, size_t buffer_size, size_t *out_length);
/* The text of a blob's BlobProto (what cblob_blob_to_proto writes), appended to out. */
cblob_status cb_blob_text(cblob_blob *blob, bool write_diff, cb_bytes *out);
/* A model from a net's text. */
cblob_status cb_model_open_prototxt(cblob_context *context, const char *name, const char *text, size_t size,
                                    cblob_model **out_model);
struct cb_source;
/* A model from the size bytes of a source holding a net's text (file.c). */
cblob_status cb_model_open_text_source(cblob_context *context, const char *name, struct cb_source *source,
                                       uint64_t size, cblob_model **out_model);
/* A BlobProto's text held by a source: its blob as a model of one layer (as cb_read_blobs makes
 * one), errors naming the line and column (file.c). */
cblob_status cb_blob_open_text_source(cblob_context *context, const char *name, struct cb_source *source,
                                      uint64_t size, cblob_model **out_blobs);
/* A file of text read whole by one of the two openers above, refused if it changed while it was
 * read; *out is written only on success (file.c). */
typedef cblob_status cb_text_opener(cblob_context *context, const char *name, struct cb_source *source, uint64_t size,
                                    cblob_model **out);
cblob_status cb_open_text_file(cblob_context *context, const char *path, cb_text_opener *open, cblob_model **out);

#endif
