/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's BlobProto: reading it into a blob (FromProto) and writing blobs into it (ToProto).
 *
 * Reading is two passes over the input. The scan (walk.h, cb_blob_layout_scan) walks the wire
 * format, records where every value lies and how many there are, and rejects malformed input with
 * the field and byte offset; nothing is copied. The load (cb_blob_load) then decodes the values that
 * count (double_data wins over data, double_diff over diff) straight from the input into the
 * storage the blob will have: packed values of the blob's dtype are copied as they are, by the
 * thread pool's threads (which first-touch the fresh storage's pages), unpacked ones element by
 * element, values of another dtype converted. No array comes in between (protobuf-c's unpacking
 * made one, whose ~10,000 fresh pages per 1e7 floats were faulted in before the copy).
 *
 * Writing builds a protobuf-c message whose arrays point at the blobs' host memory, so
 * packing copies each value once, into the output. */
#ifndef CBLOB_SRC_PROTO_BLOB_H
#define CBLOB_SRC_PROTO_BLOB_H

#include <stdbool.h>

#include "blob.h"
#include "caffe_blobs.pb-c.h"
#include "walk.h"

/* Caffe's FromProto: reshapes (or, with reshape false, requires ShapeEquals), then loads data and,
 * when present, diff. Fails without changing the blob. */
cblob_status cb_blob_load(cblob_blob *blob, const uint8_t *input, const cb_blob_layout *layout,
                          const cb_wire_path *path, bool reshape);

/* A BlobProto message over values in memory (Caffe's ToProto into a fresh message). */
typedef struct cb_blob_message {
    Caffe__BlobProto proto;
    Caffe__BlobShape shape;
    cb_shape dims;      /* the shape's dims */
    void *converted[2]; /* integer values widened to double, freed by cb_blob_message_clear */
} cb_blob_message;

/* Over a blob's host memory. Fails for a blob that never had a shape, and for values protobuf
 * cannot frame (a message over 2 GiB); `what` names the blob in those messages ("the blob",
 * "layer 3 (conv1) blob 0"). Reading host memory may sync it from the device, as Caffe's ToProto
 * does. */
cblob_status cb_blob_message_init(cb_blob_message *message, cblob_blob *blob, bool write_diff, const char *what);
/* Over values of a dtype and shape: data, and with write_diff diff, hold shape->count values each. */
cblob_status cb_blob_message_init_values(cb_blob_message *message, cblob_dtype dtype, const cb_shape *shape,
                                         const void *data, const void *diff, bool write_diff, const char *what);
void cb_blob_message_clear(cb_blob_message *message);
/* Puts Caffe's legacy num/channels/height/width (padded with 1 in front, as Caffe's LegacyShape
 * reads a shape of fewer axes) in place of `shape`, for readers that know only those fields (the
 * message's values stay): more than 4 axes is CBLOB_ERR_SHAPE, a dim over Caffe's int32 is
 * CBLOB_ERR_OVERFLOW. */
cblob_status cb_blob_message_legacy_dims(cb_blob_message *message, const cblob_blob *blob, const char *what);


#endif
