/* SPDX-License-Identifier: BSD-2-Clause */
/* BlobProto and BlobProtoVector files (formats_blob.c). */
#ifndef CBLOB_SRC_FORMATS_BLOB_H
#define CBLOB_SRC_FORMATS_BLOB_H

#include "model.h"
#include "source.h"

/* A BlobProto's (vector false) or a BlobProtoVector's blobs, every value read from the source into
 * a model of one layer holding them (handles made on first use): an input surely of another kind
 * of Caffe file is refused saying so, from its first bytes head[0, head_size). */
cblob_status cb_read_blobs(cblob_context *context, cb_source *source, bool vector, const uint8_t *head,
                           size_t head_size, cblob_model **out);

#endif
