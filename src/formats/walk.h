/* SPDX-License-Identifier: BSD-2-Clause */
/* One walk over Caffe's messages: NetParameter with its LayerParameter, V1LayerParameter and
 * V0LayerParameter layers, BlobProtoVector, and BlobProto.
 *
 * The walk reads the wire format (wire.h) from a source (source.h), checks everything a reader
 * relies on (a layer's name and type, every BlobProto's shape and value counts, Caffe's rules for
 * V1 layers and mixed nets), and reports what it finds, in file order, to one callback (libgit2's
 * config parser is the model: one parser, a call per thing found). Fields are named by protobuf-c's
 * descriptors in messages ("NetParameter.layer[3](conv1).blobs[0].data at byte N: ...") and
 * numbered by caffe_fields.h. Its callers: opening a model eagerly or lazily (model_open.c), reading
 * blob vectors (model_open.c), and detection (identify.c). Without a callback it only checks.
 *
 * What it reports, each with the bytes it covers:
 *
 *   NetParameter     KEPT* (NET_NAME KEPT*)* (LAYER_BEGIN ... LAYER_END KEPT*)*
 *   a layer          LAYER_BEGIN (KEPT | LAYER_NAME | LAYER_TYPE | blob | V0_BEGIN ... V0_END
 *                    | LAYER_LIST)* LAYER_END   (LAYER_LIST: cb_walk_layer only)
 *   a blob           BLOB_BEGIN (KEPT | BLOB_VALUES)* BLOB_END
 *   BlobProtoVector  (KEPT | blob)*
 *   a BlobProto      blob (BLOB_BEGIN has no field: the whole input is the message)
 *
 * A *_BEGIN item covers its message's field but consumes none of it: the field's tag and length
 * come next, in a KEPT run; so does a LAYER_LIST item (the whole field comes next). NET_NAME, LAYER_NAME, LAYER_TYPE and BLOB_VALUES consume their field.
 * KEPT is a run of bytes no reader looks into (parameters, bottoms, tops, rules, unknown fields of
 * forks, skipped groups), reported once per run; together, the items of a message cover every byte
 * of it in order, so a reader keeping them all keeps the file. A layer's blobs are those that stand
 * for it (a V1 layer's own, else those of its V0 layer, as Caffe's upgrade takes them); a V0 layer
 * is reported (V0_BEGIN ... V0_END) when it holds the layer's name, type or blobs, else it is KEPT.
 * BLOB_VALUES is a field of the values that count (double_data over data when it holds values, and
 * likewise for the diff), or a run of unpacked elements of one; other value fields are KEPT.
 *
 * Which bytes are readable in source->bytes when an item is reported: every field's tag and length
 * (and a fixed or varint value: an unpacked element's), and the payload of NET_NAME, LAYER_NAME
 * and a string LAYER_TYPE (checked to hold no NUL byte). KEPT bytes and packed values' payloads are
 * copied with cb_source_copy, which reads them from a file only then, straight to their place. */
#ifndef CBLOB_SRC_WALK_H
#define CBLOB_SRC_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "caffe_blobs.pb-c.h"
#include "source.h"
#include "wire.h"

/* ---- BlobProto ------------------------------------------------------------------------------------- */

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

/* The values used must number exactly shape->count (Caffe CHECKs this; here it is a parse error). */
cblob_status cb_blob_layout_check_values(const cb_blob_layout *layout, const cb_wire_path *path, const cb_shape *shape);
bool cb_blob_layout_has_legacy(const cb_blob_layout *layout);
/* The values that count: double_data when it holds values, else data (and likewise for diff). */
cb_blob_values cb_blob_layout_data_field(const cb_blob_layout *layout);
cb_blob_values cb_blob_layout_diff_field(const cb_blob_layout *layout);
uint32_t cb_blob_value_number(cb_blob_values which);
bool cb_blob_value_is_double(cb_blob_values which);

/* ---- the walk --------------------------------------------------------------------------------------- */

typedef enum cb_walk_kind {
    CB_WALK_KEPT,
    CB_WALK_NET_NAME,
    CB_WALK_LAYER_BEGIN,
    CB_WALK_LAYER_NAME,
    CB_WALK_LAYER_TYPE,
    CB_WALK_V0_BEGIN,
    CB_WALK_V0_END,
    CB_WALK_BLOB_BEGIN,
    CB_WALK_BLOB_VALUES,
    CB_WALK_BLOB_END,
    CB_WALK_LAYER_END,
    CB_WALK_LAYER_LIST, /* cb_walk_layer only: a field of one of the layer's lists (cb_layer_list) */
} cb_walk_kind;

/* The fields of a layer that make its lists, for LAYER_LIST. */
typedef enum cb_layer_list {
    CB_LIST_BOTTOM,
    CB_LIST_TOP,
    CB_LIST_INCLUDE,       /* NetStateRule */
    CB_LIST_EXCLUDE,
    CB_LIST_PARAM_SPEC,    /* ParamSpec (LayerParameter) */
    CB_LIST_PHASE,         /* LayerParameter's phase */
    CB_LIST_PARAM_NAME,    /* V1: a blob's share name (param) */
    CB_LIST_BLOBS_LR,      /* V1: blobs' lr_mult, unpacked or packed */
    CB_LIST_WEIGHT_DECAY,  /* V1: blobs' decay_mult */
} cb_layer_list;

typedef struct cb_walk_item {
    cb_walk_kind kind;
    size_t from, to;            /* the bytes it covers: a KEPT run; a field's whole extent */
    const cb_wire_field *field; /* the field (NULL for KEPT, *_END, and a whole-input BlobProto) */
    const cb_wire_path *path;   /* where it is, for messages */
    int64_t index;              /* LAYER_*: the layer's position; BLOB_*: the blob's in its layer or vector */
    cblob_net_format format;    /* LAYER_BEGIN */
    bool v1_enum;               /* LAYER_TYPE: V1's LayerType enum (value v1_type), not a string */
    int32_t v1_type;
    const cb_blob_layout *layout; /* BLOB_BEGIN: what the BlobProto holds ... */
    const cb_shape *shape;        /* ... and the shape a blob read from it gets */
    int part;                     /* BLOB_VALUES: CBLOB_PART_DATA or CBLOB_PART_DIFF */
    bool is_double;               /* BLOB_VALUES: double elements (else float) */
    int64_t count;                /* BLOB_VALUES: 1 field; or a run of `count` unpacked elements, each
                                   * behind the first's tag bytes, `stride` bytes apart (all readable) */
    size_t stride;
    cb_layer_list list;           /* LAYER_LIST */
} cb_walk_item;

/* A callback's failure ends the walk with its status. */
typedef cblob_status cb_walk_visit(void *context, const cb_walk_item *item);

/* The source's bytes as a NetParameter, a BlobProtoVector, or one BlobProto. visit may be NULL
 * (only check). The source's bytes are let go of behind the walk (cb_source_release) as they are
 * reported: the walk never looks back past what it reported. */
cblob_status cb_walk_net(cb_source *source, cb_walk_visit *visit, void *context);
cblob_status cb_walk_vector(cb_source *source, cb_walk_visit *visit, void *context);
cblob_status cb_walk_blob(cb_source *source, cb_walk_visit *visit, void *context);

/* One layer's field (its tag, length and message, as a layer's bytes are kept: model.h), walked
 * as cb_walk_net walks it, and each field of its lists marked too: a LAYER_LIST item covers the
 * field and consumes none of it (its bytes come next, in a KEPT run). A model's index of a layer's
 * lists is made from these (model_layers.c). */
cblob_status cb_walk_layer(cb_source *source, cblob_net_format format, cb_walk_visit *visit, void *context);

/* cb_walk_net over bytes in memory, keeping nothing: whether they are a NetParameter cblob reads. */
cblob_status cb_walk_check_net(const uint8_t *bytes, size_t size);

#endif
