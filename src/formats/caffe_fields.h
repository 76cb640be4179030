/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's field numbers, each named as caffe.proto names it: the one place a field number is
 * written. tests/formats (caffe_field_numbers_are_the_descriptors) checks every one against
 * protobuf-c's descriptors of proto/caffe_blobs.proto and proto/caffe_params.proto, which name the
 * fields in messages; NetParameter's input, force_backward and debug_info are in neither (only
 * detection looks at them) and follow BVLC's caffe.proto. */
#ifndef CBLOB_SRC_CAFFE_FIELDS_H
#define CBLOB_SRC_CAFFE_FIELDS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <protobuf-c/protobuf-c.h>

#include "caffe_blobs.pb-c.h"

enum {
    /* NetParameter */
    CB_NET_NAME = 1,
    CB_NET_LAYERS = 2, /* V1LayerParameter */
    CB_NET_INPUT = 3,
    CB_NET_FORCE_BACKWARD = 5,
    CB_NET_DEBUG_INFO = 7,
    CB_NET_LAYER = 100, /* LayerParameter */

    /* LayerParameter */
    CB_LAYER_NAME = 1,
    CB_LAYER_TYPE = 2,
    CB_LAYER_BOTTOM = 3,
    CB_LAYER_TOP = 4,
    CB_LAYER_PARAM = 6, /* ParamSpec */
    CB_LAYER_BLOBS = 7,
    CB_LAYER_INCLUDE = 8, /* NetStateRule */
    CB_LAYER_EXCLUDE = 9,
    CB_LAYER_PHASE = 10,

    /* V1LayerParameter */
    CB_V1_LAYER = 1, /* the V0LayerParameter it was upgraded from */
    CB_V1_BOTTOM = 2,
    CB_V1_TOP = 3,
    CB_V1_NAME = 4,
    CB_V1_TYPE = 5, /* the LayerType enum */
    CB_V1_BLOBS = 6,
    CB_V1_BLOBS_LR = 7,
    CB_V1_WEIGHT_DECAY = 8,
    CB_V1_INCLUDE = 32,
    CB_V1_EXCLUDE = 33,
    CB_V1_PARAM = 1001, /* the blobs' share names */

    /* V0LayerParameter */
    CB_V0_NAME = 1,
    CB_V0_TYPE = 2,
    CB_V0_BLOBS = 50,

    /* BlobProto: legacy dims, then values and shape */
    CB_BLOB_NUM = 1,
    CB_BLOB_CHANNELS = 2,
    CB_BLOB_HEIGHT = 3,
    CB_BLOB_WIDTH = 4,
    CB_BLOB_DATA = 5,
    CB_BLOB_DIFF = 6,
    CB_BLOB_SHAPE = 7,
    CB_BLOB_DOUBLE_DATA = 8,
    CB_BLOB_DOUBLE_DIFF = 9,

    /* BlobShape */
    CB_SHAPE_DIM = 1,

    /* BlobProtoVector */
    CB_VECTOR_BLOBS = 1,

    /* NetStateRule */
    CB_RULE_PHASE = 1,
    CB_RULE_MIN_LEVEL = 2,
    CB_RULE_MAX_LEVEL = 3,
    CB_RULE_STAGE = 4,
    CB_RULE_NOT_STAGE = 5,

    /* ParamSpec */
    CB_SPEC_NAME = 1,
    CB_SPEC_LR_MULT = 3,
    CB_SPEC_DECAY_MULT = 4,
};

/* A BlobProto's legacy dims: num, channels, height, width are fields 1 to 4, in that order. */
static inline bool cb_is_legacy_dim(uint32_t number)
{
    return number >= CB_BLOB_NUM && number <= CB_BLOB_WIDTH;
}

/* The value fields of a BlobProto: data, diff, double_data, double_diff. */
static inline bool cb_is_value_field(uint32_t number)
{
    return number == CB_BLOB_DATA || number == CB_BLOB_DIFF || number == CB_BLOB_DOUBLE_DATA ||
           number == CB_BLOB_DOUBLE_DIFF;
}

static inline bool cb_is_double_field(uint32_t number)
{
    return number == CB_BLOB_DOUBLE_DATA || number == CB_BLOB_DOUBLE_DIFF;
}

/* V1LayerParameter.LayerType: the enum name of a value (NULL when unnamed). */
static inline const char *cb_v1_type_name(int32_t value)
{
    const ProtobufCEnumValue *known =
        protobuf_c_enum_descriptor_get_value(&caffe__v1_layer_parameter__layer_type__descriptor, value);
    return known != NULL ? known->name : NULL;
}

/* The value of a LayerType name, or of a decimal number (a fork's layer type reads back as its
 * number). */
static inline bool cb_v1_type_value(const char *text, int32_t *out)
{
    const ProtobufCEnumValue *known =
        protobuf_c_enum_descriptor_get_value_by_name(&caffe__v1_layer_parameter__layer_type__descriptor, text);
    if (known != NULL) {
        *out = known->value;
        return true;
    }
    char *end;
    const long long value = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || value < INT32_MIN || value > INT32_MAX)
        return false;
    *out = (int32_t)value;
    return true;
}

#endif
