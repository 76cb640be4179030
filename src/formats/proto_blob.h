/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's BlobProto: reading it into blobs (FromProto) and writing blobs into it (ToProto).
 *
 * Reading is two passes over the input. The scan (cb_blob_layout_scan) walks the wire format,
 * records where every value lies and how many there are, and rejects malformed input with the
 * field and byte offset; nothing is copied. The load (cb_blob_load) then decodes the values that
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
#include "wire.h"

/* The four repeated value fields of a BlobProto. */
typedef enum cb_blob_values {
    CB_VALUES_DATA,        /* data = 5, float */
    CB_VALUES_DIFF,        /* diff = 6, float */
    CB_VALUES_DOUBLE_DATA, /* double_data = 8, double */
    CB_VALUES_DOUBLE_DIFF, /* double_diff = 9, double */
    CB_VALUES_FIELDS
} cb_blob_values;

typedef struct cb_blob_value_field {
    int64_t count;
    size_t offset;  /* of the field's first occurrence (for messages) */
    bool unpacked;  /* at least one element came unpacked */
} cb_blob_value_field;

/* Where a BlobProto's parts lie in the input, and what its header says. */
typedef struct cb_blob_layout {
    size_t offset, length; /* the BlobProto's bytes */
    bool legacy_present[4];
    int64_t legacy[4]; /* num, channels, height, width; unset read as 0 */
    size_t legacy_offset;
    bool has_shape;
    int32_t num_dims;  /* dims seen; more than CBLOB_MAX_AXES are counted, not kept */
    int64_t dims[CBLOB_MAX_AXES];
    size_t shape_offset;
    cb_blob_value_field values[CB_VALUES_FIELDS];
    bool has_group;       /* an unknown group field: protobuf-c cannot skip those */
    int64_t known_fields; /* BlobProto fields seen; 0 for bytes that hold none of them */
} cb_blob_layout;

/* Scans the BlobProto the cursor covers (its path names it in messages). */
cblob_status cb_blob_layout_scan(cb_wire wire, cb_blob_layout *layout);

/* The BlobProto's own shape (legacy dims give 4 axes), checked, with its values checked
 * against it: what a blob created from it gets. path names the BlobProto in messages. */
cblob_status cb_blob_layout_check(const cb_blob_layout *layout, const cb_wire_path *path, size_t element_size,
                                  cb_shape *out);

/* The dtype a blob read from the BlobProto gets: float64 when it holds double_data, else float32. */
cblob_dtype cb_blob_layout_dtype(const cb_blob_layout *layout);


/* Caffe's ShapeEquals(proto): legacy rules when any legacy dim is present, else exact. */
bool cb_blob_layout_shape_equals(const cb_blob_layout *layout, const cb_shape *shape);

/* Caffe's FromProto: reshapes (or, with reshape false, requires ShapeEquals), then loads data and,
 * when present, diff. Fails without changing the blob. */
cblob_status cb_blob_load(cblob_blob *blob, const uint8_t *input, const cb_blob_layout *layout,
                          const cb_wire_path *path, bool reshape);

/* Values already decoded into arrays (the model's, model.h): data is double_data when that is
 * non-empty, else data; diff likewise. Arrays are cb_host_alloc'ed, of count elements each. */
typedef struct cb_blob_arrays {
    void *data, *diff;
    bool data_is_double, diff_is_double;
    int64_t data_count, diff_count;
} cb_blob_arrays;

/* Gives decoded values to the blob, reshaped to target: adopted as fresh storage when the dtype
 * matches and nothing pins host memory (the array's pointer in `arrays` becomes NULL), else
 * converted into the storage. Fails without changing the blob. */
cblob_status cb_blob_fill(cblob_blob *blob, const cb_shape *target, cb_blob_arrays *arrays);

void cb_blob_arrays_free(cb_blob_arrays *arrays);

/* A BlobProto message over a blob's host memory (Caffe's ToProto into a fresh message). */
typedef struct cb_blob_message {
    Caffe__BlobProto proto;
    Caffe__BlobShape shape;
    void *converted[2]; /* integer values widened to double, freed by cb_blob_message_clear */
} cb_blob_message;

/* Fails for a blob that never had a shape, and for values protobuf cannot frame (a message
 * over 2 GiB); `what` names the blob in those messages ("the blob", "layer 3 (conv1) blob 0").
 * Reading host memory may sync it from the device, as Caffe's ToProto does. */
cblob_status cb_blob_message_init(cb_blob_message *message, cblob_blob *blob, bool write_diff, const char *what);
void cb_blob_message_clear(cb_blob_message *message);
/* Puts Caffe's legacy num/channels/height/width (padded with 1 in front, as Caffe's LegacyShape
 * reads a shape of fewer axes) in place of `shape`, for readers that know only those fields (the
 * message's values stay): more than 4 axes is CBLOB_ERR_SHAPE, a dim over Caffe's int32 is
 * CBLOB_ERR_OVERFLOW. */
cblob_status cb_blob_message_legacy_dims(cb_blob_message *message, const cblob_blob *blob, const char *what);

/* protobuf's limit on a serialized message, which Caffe's reader enforces (INT_MAX bytes). */
#define CB_PROTO_MAX_MESSAGE ((size_t)INT32_MAX)

/* The path frame of a top-level message. */
cb_wire_path cb_wire_root(const ProtobufCMessageDescriptor *message);

#endif
