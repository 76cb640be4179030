/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_model_upgrade: a V0 or V1 net turned into the current format, as BVLC Caffe's
 * UpgradeNetAsNeeded (src/caffe/util/upgrade_proto.cpp) turns one, which its tools
 * upgrade_net_proto_text and upgrade_net_proto_binary run:
 *
 *   1. V0 -> V1 (UpgradeV0Net): padding layers folded into the pad of the convolution or pooling
 *      layer they feed (UpgradeV0PaddingLayers), each V0 layer's fields mapped to V1's typed
 *      parameter messages and its type name to V1's LayerType (UpgradeV0LayerParameter);
 *   2. data transformation fields of data layers moved to transform_param
 *      (UpgradeNetDataTransformation);
 *   3. V1 -> current (UpgradeV1Net): LayerType -> type string, blobs_lr, weight_decay, param and
 *      blob_share_mode -> ParamSpec, every V1 parameter message to the LayerParameter field of
 *      the same message;
 *   4. the net's input fields -> an Input layer first (UpgradeNetInput);
 *   5. BatchNorm layers that declare three param specs get lr_mult and decay_mult 0
 *      (UpgradeNetBatchNorm).
 *
 * It works on the serialized NetParameter (the model's own writer, model_save.c), message by
 * message on the wire: a message that changes is parsed into its fields (slices of the input, or
 * messages built here) and written again in field-number order, as Caffe's serializer writes a
 * message; every BlobProto is copied as the bytes it was, so the weights (values, diffs, dtype,
 * shape and legacy num/channels/height/width) are the same bits. The result is read as a new
 * model (model_open.c). Where Caffe stops (LOG(FATAL), a failed CHECK) or reports an
 * incompatibility (a V0 parameter its layer type does not take), cblob refuses with
 * CBLOB_ERR_PARSE naming the layer, and the caller's model is untouched either way.
 *
 * Field numbers here follow BVLC's caffe.proto (third_party/caffe/caffe.proto); the fixtures of
 * tests/formats/upgrade (Caffe's own test_upgrade_proto.cpp vectors) check them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "caffe_fields.h"
#include "model.h"
#include "model_open.h"
#include "status.h"
#include "varint.h"
#include "wire.h"

/* ---- messages as fields ---------------------------------------------------------------------- */

typedef struct up_msg up_msg;

typedef struct up_field {
    uint32_t number;
    uint8_t wire;          /* CB_WIRE_VARINT, _FIXED64, _LENGTH or _FIXED32 */
    uint64_t value;        /* a varint's value, or a fixed field's bits */
    const uint8_t *data;   /* CB_WIRE_LENGTH: the payload (when child is NULL) */
    size_t size;
    up_msg *child;         /* CB_WIRE_LENGTH: a message built or edited here, written instead of data */
} up_field;

struct up_msg {
    up_field *fields;
    size_t count, capacity;
    uint8_t *bytes;     /* a payload made here (packed values), freed with the message; or NULL */
    up_msg *next_owned; /* every message of an upgrade, freed together */
};

typedef struct upgrader {
    up_msg *owned;
    /* Texts made here (the Input layer's name and type are static; nothing else is). */
    const char *layer_name; /* the layer being upgraded, for messages; NULL: none */
    int64_t layer_index;
} upgrader;

static cblob_status no_memory(void)
{
    return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to upgrade the net");
}

static cblob_status refuse(const upgrader *u, const char *format, const char *detail)
{
    if (u->layer_name != NULL)
        return cb_fail(CBLOB_ERR_PARSE, "cannot upgrade layer %lld (\"%s\"): %s%s", (long long)u->layer_index,
                       u->layer_name, format, detail != NULL ? detail : "");
    return cb_fail(CBLOB_ERR_PARSE, "cannot upgrade the net: %s%s", format, detail != NULL ? detail : "");
}

static up_msg *msg_new(upgrader *u)
{
    up_msg *msg = cb_calloc(1, sizeof *msg);
    if (msg == NULL)
        return NULL;
    msg->next_owned = u->owned;
    u->owned = msg;
    return msg;
}

static void free_owned(upgrader *u)
{
    for (up_msg *msg = u->owned, *next; msg != NULL; msg = next) {
        next = msg->next_owned;
        cb_free(msg->fields);
        cb_free(msg->bytes);
        cb_free(msg);
    }
    u->owned = NULL;
}

static cblob_status msg_append(up_msg *msg, const up_field *field)
{
    if (msg->count == msg->capacity) {
        const size_t capacity = msg->capacity == 0 ? 8 : msg->capacity * 2;
        up_field *grown = cb_realloc(msg->fields, capacity * sizeof *grown);
        if (grown == NULL)
            return no_memory();
        msg->fields = grown;
        msg->capacity = capacity;
    }
    msg->fields[msg->count++] = *field;
    return CBLOB_OK;
}

static void msg_remove(up_msg *msg, uint32_t number)
{
    size_t kept = 0;
    for (size_t i = 0; i < msg->count; ++i)
        if (msg->fields[i].number != number)
            msg->fields[kept++] = msg->fields[i];
    msg->count = kept;
}

/* The last occurrence of a field (a singular field's value, as protobuf's parser keeps it). */
static up_field *msg_last(up_msg *msg, uint32_t number)
{
    for (size_t i = msg->count; i-- > 0;)
        if (msg->fields[i].number == number)
            return &msg->fields[i];
    return NULL;
}

static size_t msg_count(const up_msg *msg, uint32_t number)
{
    size_t n = 0;
    for (size_t i = 0; i < msg->count; ++i)
        n += msg->fields[i].number == number;
    return n;
}

/* Sets a singular field (set_x): any earlier occurrence goes. */
static cblob_status msg_set(up_msg *msg, const up_field *field)
{
    msg_remove(msg, field->number);
    return msg_append(msg, field);
}

static cblob_status msg_set_varint(up_msg *msg, uint32_t number, uint64_t value)
{
    return msg_set(msg, &(up_field){.number = number, .wire = CB_WIRE_VARINT, .value = value});
}

static cblob_status msg_set_float(up_msg *msg, uint32_t number, uint32_t bits)
{
    return msg_set(msg, &(up_field){.number = number, .wire = CB_WIRE_FIXED32, .value = bits});
}

static cblob_status msg_add_text(up_msg *msg, uint32_t number, const char *text, size_t size)
{
    return msg_append(msg, &(up_field){.number = number, .wire = CB_WIRE_LENGTH, .data = (const uint8_t *)text,
                                       .size = size});
}

/* Parses a message's bytes into fields (slices of them), by the one field reader (wire.h). Groups,
 * which it skips, are refused: the upgrade would lose them. */
static cblob_status msg_parse(upgrader *u, const uint8_t *bytes, size_t size, const char *what, up_msg **out)
{
    up_msg *msg = msg_new(u);
    if (msg == NULL)
        return no_memory();
    cb_wire wire = cb_wire_range(bytes, 0, size, NULL);
    for (;;) {
        cb_wire_field f;
        if (cb_wire_next(&wire, &f) != CBLOB_OK)
            return refuse(u, "malformed bytes in ", what);
        if (wire.skipped_group)
            return refuse(u, "a group in ", what);
        if (cb_wire_at_end(&f))
            break;
        up_field field = {.number = f.number, .wire = (uint8_t)f.type};
        if (f.type == CB_WIRE_LENGTH) {
            field.data = bytes + f.payload;
            field.size = f.length;
        } else if (f.type == CB_WIRE_VARINT) {
            field.value = f.varint;
        } else {
            memcpy(&field.value, bytes + f.payload, f.length);
        }
        CB_TRY(msg_append(msg, &field));
    }
    *out = msg;
    return CBLOB_OK;
}

/* A message field as a message to edit (mutable_x()): the last occurrence parsed, or a new one.
 * Occurrences before it are merged into it, as protobuf's parser merges them. */
static cblob_status msg_mutable(upgrader *u, up_msg *msg, uint32_t number, const char *what, up_msg **out)
{
    up_msg *child = NULL;
    for (size_t i = 0; i < msg->count; ++i) {
        up_field *field = &msg->fields[i];
        if (field->number != number)
            continue;
        if (field->wire != CB_WIRE_LENGTH)
            return refuse(u, "a message field of another wire type: ", what);
        up_msg *part = field->child;
        if (part == NULL)
            CB_TRY(msg_parse(u, field->data, field->size, what, &part));
        if (child == NULL) {
            child = part;
        } else {
            for (size_t j = 0; j < part->count; ++j)
                CB_TRY(msg_append(child, &part->fields[j]));
        }
    }
    if (child == NULL && (child = msg_new(u)) == NULL)
        return no_memory();
    msg_remove(msg, number);
    CB_TRY(msg_append(msg, &(up_field){.number = number, .wire = CB_WIRE_LENGTH, .child = child}));
    *out = child;
    return CBLOB_OK;
}

/* The elements of a repeated scalar field, packed or not, each as a field of `wire`. */
static cblob_status msg_elements(const upgrader *u, const up_msg *msg, uint32_t number, uint8_t wire,
                                 const char *what, up_field *out, size_t capacity, size_t *count)
{
    size_t n = 0;
    for (size_t i = 0; i < msg->count; ++i) {
        const up_field *field = &msg->fields[i];
        if (field->number != number)
            continue;
        if (field->wire == wire) {
            if (out != NULL && n < capacity)
                out[n] = *field;
            ++n;
            continue;
        }
        if (field->wire != CB_WIRE_LENGTH)
            return refuse(u, "a field of the wrong wire type: ", what);
        for (size_t pos = 0; pos < field->size;) {
            up_field element = {.number = number, .wire = wire};
            if (wire == CB_WIRE_VARINT) {
                size_t used;
                if (cb_varint_decode(field->data + pos, field->size - pos, &element.value, &used) != CB_VARINT_OK)
                    return refuse(u, "a malformed packed field: ", what);
                pos += used;
            } else {
                const size_t width = wire == CB_WIRE_FIXED32 ? 4 : 8;
                if (field->size - pos < width)
                    return refuse(u, "a malformed packed field: ", what);
                memcpy(&element.value, field->data + pos, width);
                pos += width;
            }
            if (out != NULL && n < capacity)
                out[n] = element;
            ++n;
        }
    }
    *count = n;
    return CBLOB_OK;
}

/* Repeated scalar elements, into an array of their own (cb_malloc'd; *out NULL when none). */
static cblob_status msg_elements_alloc(const upgrader *u, const up_msg *msg, uint32_t number, uint8_t wire,
                                       const char *what, up_field **out, size_t *count)
{
    *out = NULL;
    CB_TRY(msg_elements(u, msg, number, wire, what, NULL, 0, count));
    if (*count == 0)
        return CBLOB_OK;
    if ((*out = cb_malloc(*count * sizeof **out)) == NULL)
        return no_memory();
    size_t again;
    const cblob_status status = msg_elements(u, msg, number, wire, what, *out, *count, &again);
    if (status != CBLOB_OK) {
        cb_free(*out);
        *out = NULL;
    }
    return status;
}

/* ---- writing ---------------------------------------------------------------------------------- */

/* Field-number order, repeated fields in their order (a stable insertion sort: messages are
 * mostly in order already). */
static void msg_sort(up_msg *msg)
{
    for (size_t i = 1; i < msg->count; ++i) {
        const up_field field = msg->fields[i];
        size_t j = i;
        while (j > 0 && msg->fields[j - 1].number > field.number) {
            msg->fields[j] = msg->fields[j - 1];
            --j;
        }
        msg->fields[j] = field;
    }
}

static size_t msg_size(up_msg *msg);

static size_t field_payload_size(up_field *field)
{
    if (field->child != NULL)
        field->size = msg_size(field->child);
    return field->size;
}

static size_t msg_size(up_msg *msg)
{
    size_t size = 0;
    for (size_t i = 0; i < msg->count; ++i) {
        up_field *field = &msg->fields[i];
        size += cb_varint_size((uint64_t)field->number << 3 | field->wire);
        switch (field->wire) {
        case CB_WIRE_VARINT: size += cb_varint_size(field->value); break;
        case CB_WIRE_FIXED32: size += 4; break;
        case CB_WIRE_FIXED64: size += 8; break;
        default: {
            const size_t payload = field_payload_size(field);
            size += cb_varint_size(payload) + payload;
        }
        }
    }
    return size;
}

static uint8_t *put_varint(uint8_t *to, uint64_t value)
{
    return to + cb_varint_encode(to, value);
}

/* Writes a message whose sizes msg_size has just computed. */
static uint8_t *msg_write(const up_msg *msg, uint8_t *to)
{
    for (size_t i = 0; i < msg->count; ++i) {
        const up_field *field = &msg->fields[i];
        to = put_varint(to, (uint64_t)field->number << 3 | field->wire);
        switch (field->wire) {
        case CB_WIRE_VARINT: to = put_varint(to, field->value); break;
        case CB_WIRE_FIXED32: memcpy(to, &field->value, 4); to += 4; break;
        case CB_WIRE_FIXED64: memcpy(to, &field->value, 8); to += 8; break;
        default:
            to = put_varint(to, field->size);
            if (field->child != NULL) {
                to = msg_write(field->child, to);
            } else if (field->size > 0) {
                memcpy(to, field->data, field->size);
                to += field->size;
            }
        }
    }
    return to;
}

/* Sorts the messages built or edited here (not the ones kept as bytes), deepest first. */
static void msg_sort_deep(up_msg *msg)
{
    for (size_t i = 0; i < msg->count; ++i)
        if (msg->fields[i].child != NULL)
            msg_sort_deep(msg->fields[i].child);
    msg_sort(msg);
}

/* ---- Caffe's field numbers (caffe.proto) and names ----------------------------------------------- */

enum {
    NET_NAME = 1, NET_LAYERS = 2, NET_INPUT = 3, NET_INPUT_DIM = 4, NET_FORCE_BACKWARD = 5,
    NET_INPUT_SHAPE = 8, NET_LAYER = 100,

    V1_LAYER = 1, V1_BOTTOM = 2, V1_TOP = 3, V1_NAME = 4, V1_TYPE = 5, V1_BLOBS = 6, V1_BLOBS_LR = 7,
    V1_WEIGHT_DECAY = 8, V1_CONCAT = 9, V1_CONVOLUTION = 10, V1_DATA = 11, V1_DROPOUT = 12, V1_HDF5_DATA = 13,
    V1_HDF5_OUTPUT = 14, V1_IMAGE_DATA = 15, V1_INFOGAIN_LOSS = 16, V1_INNER_PRODUCT = 17, V1_LRN = 18,
    V1_POOLING = 19, V1_WINDOW_DATA = 20, V1_LOSS_WEIGHT = 35, V1_TRANSFORM = 36, V1_PARAM = 1001,
    V1_BLOB_SHARE_MODE = 1002,

    /* V1 LayerType values */
    V1T_DATA = 5, V1T_IMAGE_DATA = 12, V1T_WINDOW_DATA = 24,

    V0_NAME = 1, V0_TYPE = 2, V0_POOL = 11, V0_BLOBS = 50, V0_BLOBS_LR = 51, V0_WEIGHT_DECAY = 52, V0_PAD = 7,

    LAYER_NAME = 1, LAYER_TYPE = 2, LAYER_TOP = 4, LAYER_PARAM = 6, LAYER_INPUT_PARAM = 143,
    SPEC_NAME = 1, SPEC_SHARE_MODE = 2, SPEC_LR_MULT = 3, SPEC_DECAY_MULT = 4,
    TRANSFORM_SCALE = 1, TRANSFORM_MIRROR = 2, TRANSFORM_CROP_SIZE = 3, TRANSFORM_MEAN_FILE = 4,
    DATA_SCALE = 2, DATA_MEAN_FILE = 3, DATA_CROP_SIZE = 5, DATA_MIRROR = 6, /* the same in the three */
    SHAPE_DIM = 1,
};

/* V0 type names and their V1 LayerType (UpgradeV0LayerType). */
static const struct { const char *name; int type; } v0_types[] = {
    {"accuracy", 1}, {"bnll", 2}, {"concat", 3}, {"conv", 4}, {"data", 5}, {"dropout", 6},
    {"euclidean_loss", 7}, {"flatten", 8}, {"hdf5_data", 9}, {"hdf5_output", 10}, {"im2col", 11},
    {"images", 12}, {"infogain_loss", 13}, {"innerproduct", 14}, {"lrn", 15},
    {"multinomial_logistic_loss", 16}, {"pool", 17}, {"relu", 18}, {"sigmoid", 19}, {"softmax", 20},
    {"softmax_loss", 21}, {"split", 22}, {"tanh", 23}, {"window_data", 24},
};

/* V1 LayerType -> the current type string (UpgradeV1LayerType). */
static const struct { int type; const char *name; } v1_types[] = {
    {0, ""}, {35, "AbsVal"}, {1, "Accuracy"}, {30, "ArgMax"}, {2, "BNLL"}, {3, "Concat"},
    {37, "ContrastiveLoss"}, {4, "Convolution"}, {39, "Deconvolution"}, {5, "Data"}, {6, "Dropout"},
    {32, "DummyData"}, {7, "EuclideanLoss"}, {25, "Eltwise"}, {38, "Exp"}, {8, "Flatten"}, {9, "HDF5Data"},
    {10, "HDF5Output"}, {28, "HingeLoss"}, {11, "Im2col"}, {12, "ImageData"}, {13, "InfogainLoss"},
    {14, "InnerProduct"}, {15, "LRN"}, {29, "MemoryData"}, {16, "MultinomialLogisticLoss"}, {34, "MVN"},
    {17, "Pooling"}, {26, "Power"}, {18, "ReLU"}, {19, "Sigmoid"}, {27, "SigmoidCrossEntropyLoss"},
    {36, "Silence"}, {20, "Softmax"}, {21, "SoftmaxWithLoss"}, {22, "Split"}, {33, "Slice"}, {23, "TanH"},
    {24, "WindowData"}, {31, "Threshold"},
};

/* V1LayerParameter's parameter messages and the LayerParameter fields of the same messages. */
static const struct { uint32_t v1, current; } v1_params[] = {
    {27, 102}, {23, 103}, {9, 104},   {40, 105}, {10, 106}, {11, 107}, {12, 108}, {26, 109}, {24, 110},
    {41, 111}, {13, 112}, {14, 113},  {29, 114}, {15, 115}, {16, 116}, {17, 117}, {18, 118}, {22, 119},
    {34, 120}, {19, 121}, {21, 122},  {30, 123}, {38, 124}, {39, 125}, {31, 126}, {37, 127}, {25, 128},
    {20, 129}, {36, 100}, {42, 101},  {35, 5},
};

/* UpgradeV0LayerParameter's mapping: a V0 field, for a V0 type (NULL: any), goes to field `into`
 * of V1 parameter message `message`. A V0 field of a type no entry names is an incompatibility. */
static const struct {
    uint32_t v0;
    const char *field; /* its name, for messages */
    const char *type;
    uint32_t message, into;
} v0_params[] = {
    {3, "num_output", "conv", V1_CONVOLUTION, 1}, {3, "num_output", "innerproduct", V1_INNER_PRODUCT, 1},
    {4, "biasterm", "conv", V1_CONVOLUTION, 2}, {4, "biasterm", "innerproduct", V1_INNER_PRODUCT, 2},
    {5, "weight_filler", "conv", V1_CONVOLUTION, 7}, {5, "weight_filler", "innerproduct", V1_INNER_PRODUCT, 3},
    {6, "bias_filler", "conv", V1_CONVOLUTION, 8}, {6, "bias_filler", "innerproduct", V1_INNER_PRODUCT, 4},
    {7, "pad", "conv", V1_CONVOLUTION, 3}, {7, "pad", "pool", V1_POOLING, 4},
    {8, "kernelsize", "conv", V1_CONVOLUTION, 4}, {8, "kernelsize", "pool", V1_POOLING, 2},
    {9, "group", "conv", V1_CONVOLUTION, 5},
    {10, "stride", "conv", V1_CONVOLUTION, 6}, {10, "stride", "pool", V1_POOLING, 3},
    {11, "pool", "pool", V1_POOLING, 1},
    {12, "dropout_ratio", "dropout", V1_DROPOUT, 1},
    {13, "local_size", "lrn", V1_LRN, 1}, {14, "alpha", "lrn", V1_LRN, 2}, {15, "beta", "lrn", V1_LRN, 3},
    {22, "k", "lrn", V1_LRN, 5},
    {16, "source", "data", V1_DATA, 1}, {16, "source", "hdf5_data", V1_HDF5_DATA, 1},
    {16, "source", "images", V1_IMAGE_DATA, 1}, {16, "source", "window_data", V1_WINDOW_DATA, 1},
    {16, "source", "infogain_loss", V1_INFOGAIN_LOSS, 1},
    {17, "scale", NULL, V1_TRANSFORM, TRANSFORM_SCALE}, {18, "meanfile", NULL, V1_TRANSFORM, TRANSFORM_MEAN_FILE},
    {19, "batchsize", "data", V1_DATA, 4}, {19, "batchsize", "hdf5_data", V1_HDF5_DATA, 2},
    {19, "batchsize", "images", V1_IMAGE_DATA, 4}, {19, "batchsize", "window_data", V1_WINDOW_DATA, 4},
    {20, "cropsize", NULL, V1_TRANSFORM, TRANSFORM_CROP_SIZE}, {21, "mirror", NULL, V1_TRANSFORM, TRANSFORM_MIRROR},
    {53, "rand_skip", "data", V1_DATA, 7}, {53, "rand_skip", "images", V1_IMAGE_DATA, 7},
    {64, "shuffle_images", "images", V1_IMAGE_DATA, 8},
    {62, "new_height", "images", V1_IMAGE_DATA, 9}, {63, "new_width", "images", V1_IMAGE_DATA, 10},
    {65, "concat_dim", "concat", V1_CONCAT, 1},
    {54, "det_fg_threshold", "window_data", V1_WINDOW_DATA, 7},
    {55, "det_bg_threshold", "window_data", V1_WINDOW_DATA, 8},
    {56, "det_fg_fraction", "window_data", V1_WINDOW_DATA, 9},
    {58, "det_context_pad", "window_data", V1_WINDOW_DATA, 10},
    {59, "det_crop_mode", "window_data", V1_WINDOW_DATA, 11},
};
#define V0_HDF5_OUTPUT_PARAM 1001u /* copied whole into hdf5_output_param */

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static bool text_is(const up_field *field, const char *text)
{
    return field != NULL && field->wire == CB_WIRE_LENGTH && field->size == strlen(text) &&
           memcmp(field->data, text, field->size) == 0;
}

/* A text field's value for a message (printable, cut at 200 bytes). */
static void text_of(const up_field *field, char *out, size_t capacity)
{
    size_t n = 0;
    if (field != NULL && field->wire == CB_WIRE_LENGTH)
        for (size_t i = 0; i < field->size && n + 1 < capacity && n < 200; ++i)
            out[n++] = field->data[i] >= 0x20 && field->data[i] < 0x7f ? (char)field->data[i] : '?';
    out[n] = '\0';
}

/* ---- V0 -> V1 ------------------------------------------------------------------------------------ */

typedef struct v0_layer {
    up_msg *wrapper; /* the V1LayerParameter */
    up_msg *v0;      /* its `layer`, or NULL */
    /* The V0 type field, by value (its text lies in the input's bytes, which never move; a
     * pointer into the V0 message's fields would not survive the pad being set there), or
     * number 0: none. */
    up_field type_field;
} v0_layer;

static const up_field *v0_type(const v0_layer *layer)
{
    return layer->type_field.number != 0 ? &layer->type_field : NULL;
}

static bool is_padding(const v0_layer *layer)
{
    return text_is(v0_type(layer), "padding");
}

static void name_layer(upgrader *u, const up_msg *v0, int64_t index, char *buffer, size_t capacity)
{
    text_of(v0 != NULL ? msg_last((up_msg *)v0, V0_NAME) : NULL, buffer, capacity);
    u->layer_name = buffer;
    u->layer_index = index;
}

/* UpgradeV0PaddingLayers: each padding layer's pad goes to the convolution or pooling layer it
 * feeds, which then reads the padding layer's bottom; the padding layers go. */
static cblob_status fold_padding(upgrader *u, const v0_layer *layers, size_t count, const up_msg *net, v0_layer *kept,
                                 size_t *num_kept)
{
    /* Which layer last wrote each blob name: -1 for the net's inputs. A small net: a linear
     * search over the names seen, as the layers go. */
    typedef struct { const uint8_t *name; size_t size; int64_t layer; } writer;
    size_t capacity = 16, used = 0;
    writer *writers = cb_malloc(capacity * sizeof *writers);
    if (writers == NULL)
        return no_memory();
    cblob_status status = CBLOB_OK;
#define FIND(data_, size_, out_) \
    do { \
        (out_) = SIZE_MAX; \
        for (size_t k_ = used; k_-- > 0;) \
            if (writers[k_].size == (size_) && memcmp(writers[k_].name, (data_), (size_)) == 0) { \
                (out_) = k_; \
                break; \
            } \
    } while (0)
#define NOTE(data_, size_, layer_) \
    do { \
        size_t at_; \
        FIND(data_, size_, at_); \
        if (at_ != SIZE_MAX) { \
            writers[at_].layer = (layer_); \
        } else { \
            if (used == capacity) { \
                writer *grown_ = cb_realloc(writers, 2 * capacity * sizeof *writers); \
                if (grown_ == NULL) { \
                    status = no_memory(); \
                    goto done; \
                } \
                writers = grown_; \
                capacity *= 2; \
            } \
            writers[used++] = (writer){(data_), (size_), (layer_)}; \
        } \
    } while (0)
    for (size_t i = 0; i < net->count; ++i)
        if (net->fields[i].number == NET_INPUT && net->fields[i].wire == CB_WIRE_LENGTH)
            NOTE(net->fields[i].data, net->fields[i].size, -1);
    size_t out = 0;
    char name[256];
    for (size_t i = 0; i < count; ++i) {
        const v0_layer original = layers[i];
        name_layer(u, original.v0, (int64_t)i, name, sizeof name);
        v0_layer *target = NULL;
        if (!is_padding(&original)) {
            target = &kept[out++];
            *target = original;
        }
        for (size_t f = 0; f < original.wrapper->count; ++f) {
            up_field *bottom = &original.wrapper->fields[f];
            if (bottom->number != V1_BOTTOM)
                continue;
            size_t at;
            FIND(bottom->data, bottom->size, at);
            if (at == SIZE_MAX) {
                char blob[256];
                text_of(bottom, blob, sizeof blob);
                status = refuse(u, "unknown blob input ", blob);
                goto done;
            }
            const int64_t source = writers[at].layer;
            if (source < 0 || !is_padding(&layers[source]))
                continue;
            const v0_layer *pad = &layers[source];
            if (!text_is(v0_type(&original), "conv") && !text_is(v0_type(&original), "pool")) {
                char type[256];
                text_of(v0_type(&original), type, sizeof type);
                status = refuse(u, "a padding layer feeds a layer that is not a convolution or pooling layer: ", type);
                goto done;
            }
            if (msg_count(original.wrapper, V1_BOTTOM) != 1 || msg_count(pad->wrapper, V1_BOTTOM) != 1 ||
                msg_count(pad->wrapper, V1_TOP) != 1) {
                status = refuse(u, "a padding layer and the layer it feeds must each take a single blob, and the "
                                   "padding layer produce one", NULL);
                goto done;
            }
            if (target == NULL)
                continue;
            up_field *pad_value = pad->v0 != NULL ? msg_last(pad->v0, V0_PAD) : NULL;
            if ((status = msg_set(target->v0, pad_value != NULL ? pad_value
                                                                : &(up_field){.number = V0_PAD, .wire = CB_WIRE_VARINT}))
                != CBLOB_OK)
                goto done;
            *bottom = *msg_last(pad->wrapper, V1_BOTTOM);
        }
        for (size_t f = 0; f < original.wrapper->count; ++f) {
            const up_field *top = &original.wrapper->fields[f];
            if (top->number == V1_TOP)
                NOTE(top->data, top->size, (int64_t)i);
        }
    }
    *num_kept = out;
done:
#undef FIND
#undef NOTE
    cb_free(writers);
    u->layer_name = NULL;
    return status;
}

/* UpgradeV0LayerParameter: a V1 layer of the V0 layer's name, type, blobs and parameters. */
static cblob_status upgrade_v0_layer(upgrader *u, const v0_layer *layer, up_msg **out)
{
    up_msg *v1 = msg_new(u);
    if (v1 == NULL)
        return no_memory();
    for (size_t i = 0; i < layer->wrapper->count; ++i) {
        const up_field *field = &layer->wrapper->fields[i];
        if (field->number == V1_BOTTOM || field->number == V1_TOP)
            CB_TRY(msg_append(v1, field));
    }
    *out = v1;
    if (layer->v0 == NULL)
        return CBLOB_OK;
    up_msg *v0 = layer->v0;
    const up_field *type = v0_type(layer);
    if (type != NULL) {
        size_t t = 0;
        while (t < COUNT(v0_types) && !text_is(type, v0_types[t].name))
            ++t;
        if (t == COUNT(v0_types)) {
            char text[256];
            text_of(type, text, sizeof text);
            return refuse(u, "unknown V0 layer type ", text);
        }
        CB_TRY(msg_set_varint(v1, V1_TYPE, (uint64_t)v0_types[t].type));
    }
    for (size_t i = 0; i < v0->count; ++i) {
        const up_field *field = &v0->fields[i];
        switch (field->number) {
        case V0_NAME: CB_TRY(msg_set(v1, &(up_field){.number = V1_NAME, .wire = field->wire, .data = field->data,
                                                     .size = field->size, .value = field->value}));
            continue;
        case V0_TYPE: continue;
        case V0_BLOBS: case V0_BLOBS_LR: case V0_WEIGHT_DECAY: {
            up_field moved = *field;
            moved.number = field->number == V0_BLOBS ? V1_BLOBS : field->number == V0_BLOBS_LR ? V1_BLOBS_LR
                                                                                                 : V1_WEIGHT_DECAY;
            CB_TRY(msg_append(v1, &moved));
            continue;
        }
        default: break;
        }
        if (field->number == V0_HDF5_OUTPUT_PARAM) {
            if (!text_is(type, "hdf5_output"))
                return refuse(u, "V0 parameter hdf5_output_param is not one of layer type ", "hdf5_output");
            up_field copied = *field;
            copied.number = V1_HDF5_OUTPUT;
            CB_TRY(msg_set(v1, &copied));
            continue;
        }
        size_t p = 0;
        bool known = false;
        for (; p < COUNT(v0_params); ++p) {
            if (v0_params[p].v0 != field->number)
                continue;
            known = true;
            if (v0_params[p].type == NULL || text_is(type, v0_params[p].type))
                break;
        }
        if (!known)
            continue; /* a field UpgradeV0LayerParameter does not look at (new_num, new_channels, ...) */
        if (p == COUNT(v0_params)) {
            char text[256], message[400];
            text_of(type, text, sizeof text);
            size_t q = 0;
            while (v0_params[q].v0 != field->number)
                ++q;
            snprintf(message, sizeof message, "V0 parameter %s is not one of layer type \"%s\" (Caffe drops it)",
                     v0_params[q].field, text);
            return refuse(u, message, NULL);
        }
        if (field->number == V0_POOL && field->value > 2) {
            char value[32];
            snprintf(value, sizeof value, "%llu", (unsigned long long)field->value);
            return refuse(u, "unknown V0 pool method ", value);
        }
        up_msg *param = NULL;
        CB_TRY(msg_mutable(u, v1, v0_params[p].message, "a V1 parameter message", &param));
        up_field moved = *field;
        moved.number = v0_params[p].into;
        CB_TRY(msg_set(param, &moved));
    }
    return CBLOB_OK;
}

/* UpgradeV0Net: the net's name, its layers upgraded, its inputs, input_dim and force_backward
 * (nothing else of a V0 net is kept, as Caffe keeps nothing else). */
static cblob_status upgrade_v0_net(upgrader *u, up_msg *net, up_msg **out)
{
    size_t count = msg_count(net, NET_LAYERS);
    v0_layer *layers = cb_calloc(count + 1, sizeof *layers);
    v0_layer *kept = cb_calloc(count + 1, sizeof *kept);
    cblob_status status = layers == NULL || kept == NULL ? no_memory() : CBLOB_OK;
    size_t n = 0;
    for (size_t i = 0; status == CBLOB_OK && i < net->count; ++i) {
        const up_field *field = &net->fields[i];
        if (field->number != NET_LAYERS)
            continue;
        if (field->wire != CB_WIRE_LENGTH) {
            status = refuse(u, "a layers field that is not a message", NULL);
            break;
        }
        v0_layer *layer = &layers[n++];
        status = msg_parse(u, field->data, field->size, "a V1 layer", &layer->wrapper);
        if (status == CBLOB_OK && msg_last(layer->wrapper, V1_LAYER) != NULL)
            status = msg_mutable(u, layer->wrapper, V1_LAYER, "a V0 layer", &layer->v0);
        const up_field *type = status == CBLOB_OK && layer->v0 != NULL ? msg_last(layer->v0, V0_TYPE) : NULL;
        if (type != NULL)
            layer->type_field = *type;
    }
    size_t num_kept = 0;
    if (status == CBLOB_OK)
        status = fold_padding(u, layers, n, net, kept, &num_kept);
    up_msg *v1_net = status == CBLOB_OK ? msg_new(u) : NULL;
    if (status == CBLOB_OK && v1_net == NULL)
        status = no_memory();
    char name[256];
    for (size_t i = 0; status == CBLOB_OK && i < num_kept; ++i) {
        name_layer(u, kept[i].v0, (int64_t)i, name, sizeof name);
        up_msg *v1 = NULL;
        status = upgrade_v0_layer(u, &kept[i], &v1);
        if (status == CBLOB_OK)
            status = msg_append(v1_net, &(up_field){.number = NET_LAYERS, .wire = CB_WIRE_LENGTH, .child = v1});
    }
    u->layer_name = NULL;
    for (size_t i = 0; status == CBLOB_OK && i < net->count; ++i) {
        const uint32_t number = net->fields[i].number;
        if (number == NET_INPUT || number == NET_INPUT_DIM)
            status = msg_append(v1_net, &net->fields[i]);
    }
    const up_field *name_field = msg_last(net, NET_NAME), *force = msg_last(net, NET_FORCE_BACKWARD);
    if (status == CBLOB_OK && name_field != NULL)
        status = msg_append(v1_net, name_field);
    if (status == CBLOB_OK && force != NULL)
        status = msg_append(v1_net, force);
    cb_free(layers);
    cb_free(kept);
    if (status == CBLOB_OK)
        *out = v1_net;
    return status;
}

/* ---- data transformation, V1 -> current, inputs, batch norm -------------------------------------- */

/* A net's layers (V1 `layers` or current `layer`) as messages to edit, in place. */
static cblob_status edit_layers(upgrader *u, up_msg *net, uint32_t number)
{
    for (size_t i = 0; i < net->count; ++i) {
        up_field *field = &net->fields[i];
        if (field->number != number || field->child != NULL)
            continue;
        if (field->wire != CB_WIRE_LENGTH)
            return refuse(u, "a layer field that is not a message", NULL);
        CB_TRY(msg_parse(u, field->data, field->size, "a layer", &field->child));
    }
    return CBLOB_OK;
}

/* A V1 data layer's parameter field (data_param, image_data_param, window_data_param), or 0. */
static uint32_t data_param_field(const up_msg *layer)
{
    const up_field *type = msg_last((up_msg *)layer, V1_TYPE);
    if (type == NULL || type->wire != CB_WIRE_VARINT)
        return 0;
    return type->value == V1T_DATA ? V1_DATA : type->value == V1T_IMAGE_DATA ? V1_IMAGE_DATA
                                          : type->value == V1T_WINDOW_DATA ? V1_WINDOW_DATA : 0;
}

/* UpgradeNetDataTransformation: when a V1 data layer has scale, mean_file, crop_size or mirror in
 * its data parameters (NetNeedsDataUpgrade), every data layer's move to its transform_param. As
 * Caffe's mutable_*_param() calls do, each data layer then has both messages (empty ones made). */
static cblob_status upgrade_data_transformation(upgrader *u, up_msg *net)
{
    static const struct { uint32_t from, to; } moves[] = {
        {DATA_SCALE, TRANSFORM_SCALE}, {DATA_MEAN_FILE, TRANSFORM_MEAN_FILE},
        {DATA_CROP_SIZE, TRANSFORM_CROP_SIZE}, {DATA_MIRROR, TRANSFORM_MIRROR},
    };
    bool needed = false;
    for (size_t i = 0; !needed && i < net->count; ++i) {
        if (net->fields[i].number != NET_LAYERS)
            continue;
        up_msg *layer = net->fields[i].child;
        const uint32_t param_field = data_param_field(layer);
        if (param_field == 0 || msg_last(layer, param_field) == NULL)
            continue;
        up_msg *param = NULL;
        CB_TRY(msg_mutable(u, layer, param_field, "a data layer's parameters", &param));
        for (size_t m = 0; m < COUNT(moves); ++m)
            needed |= msg_last(param, moves[m].from) != NULL;
    }
    for (size_t i = 0; needed && i < net->count; ++i) {
        if (net->fields[i].number != NET_LAYERS)
            continue;
        up_msg *layer = net->fields[i].child;
        const uint32_t param_field = data_param_field(layer);
        if (param_field == 0)
            continue;
        up_msg *param = NULL, *transform = NULL;
        CB_TRY(msg_mutable(u, layer, param_field, "a data layer's parameters", &param));
        CB_TRY(msg_mutable(u, layer, V1_TRANSFORM, "a transform_param", &transform));
        for (size_t m = 0; m < COUNT(moves); ++m) {
            up_field *value = msg_last(param, moves[m].from);
            if (value == NULL)
                continue;
            up_field set = *value;
            set.number = moves[m].to;
            msg_remove(param, moves[m].from);
            CB_TRY(msg_set(transform, &set));
        }
    }
    return CBLOB_OK;
}

/* UpgradeV1LayerParameter. */
static cblob_status upgrade_v1_layer(upgrader *u, up_msg *v1, up_msg **out)
{
    up_msg *layer = msg_new(u);
    if (layer == NULL)
        return no_memory();
    /* The param specs: one per index of param, blob_share_mode, blobs_lr and weight_decay. */
    up_field *modes = NULL, *lrs = NULL, *decays = NULL;
    size_t num_modes = 0, num_lrs = 0, num_decays = 0;
    cblob_status status = msg_elements_alloc(u, v1, V1_BLOB_SHARE_MODE, CB_WIRE_VARINT, "blob_share_mode", &modes,
                                             &num_modes);
    if (status == CBLOB_OK)
        status = msg_elements_alloc(u, v1, V1_BLOBS_LR, CB_WIRE_FIXED32, "blobs_lr", &lrs, &num_lrs);
    if (status == CBLOB_OK)
        status = msg_elements_alloc(u, v1, V1_WEIGHT_DECAY, CB_WIRE_FIXED32, "weight_decay", &decays, &num_decays);
    size_t num_names = msg_count(v1, V1_PARAM);
    size_t num_specs = num_names;
    if (num_modes > num_specs) num_specs = num_modes;
    if (num_lrs > num_specs) num_specs = num_lrs;
    if (num_decays > num_specs) num_specs = num_decays;
    up_msg **specs = status == CBLOB_OK ? cb_calloc(num_specs + 1, sizeof *specs) : NULL;
    if (status == CBLOB_OK && specs == NULL)
        status = no_memory();
    for (size_t i = 0; status == CBLOB_OK && i < num_specs; ++i)
        if ((specs[i] = msg_new(u)) == NULL)
            status = no_memory();
    for (size_t i = 0; status == CBLOB_OK && i < num_modes; ++i) {
        if (modes[i].value > 1) {
            char value[32];
            snprintf(value, sizeof value, "%llu", (unsigned long long)modes[i].value);
            status = refuse(u, "unknown blob_share_mode ", value);
            break;
        }
        status = msg_set_varint(specs[i], SPEC_SHARE_MODE, modes[i].value);
    }
    for (size_t i = 0; status == CBLOB_OK && i < num_lrs; ++i)
        status = msg_set_float(specs[i], SPEC_LR_MULT, (uint32_t)lrs[i].value);
    for (size_t i = 0; status == CBLOB_OK && i < num_decays; ++i)
        status = msg_set_float(specs[i], SPEC_DECAY_MULT, (uint32_t)decays[i].value);
    size_t name_index = 0;
    for (size_t i = 0; status == CBLOB_OK && i < v1->count; ++i) {
        const up_field *field = &v1->fields[i];
        up_field moved = *field;
        switch (field->number) {
        case V1_BOTTOM: moved.number = 3; break;
        case V1_TOP: moved.number = 4; break;
        case V1_NAME: moved.number = LAYER_NAME; break;
        case 32: moved.number = 8; break; /* include */
        case 33: moved.number = 9; break; /* exclude */
        case V1_BLOBS: moved.number = 7; break;
        case V1_PARAM:
            status = msg_set(specs[name_index++], &(up_field){.number = SPEC_NAME, .wire = CB_WIRE_LENGTH,
                                                              .data = field->data, .size = field->size});
            continue;
        case V1_TYPE: {
            size_t t = 0;
            while (t < COUNT(v1_types) && (uint64_t)(int64_t)v1_types[t].type != field->value)
                ++t;
            if (t == COUNT(v1_types)) {
                char value[32];
                snprintf(value, sizeof value, "%lld", (long long)field->value);
                status = refuse(u, "unknown V1 layer type ", value);
                continue;
            }
            status = msg_set(layer, &(up_field){.number = LAYER_TYPE, .wire = CB_WIRE_LENGTH,
                                                .data = (const uint8_t *)v1_types[t].name,
                                                .size = strlen(v1_types[t].name)});
            continue;
        }
        case V1_LAYER:
            status = refuse(u, "a V1 layer that still holds a V0 layer", NULL);
            continue;
        default: {
            size_t p = 0;
            while (p < COUNT(v1_params) && v1_params[p].v1 != field->number)
                ++p;
            if (p == COUNT(v1_params))
                continue; /* blobs_lr, weight_decay, blob_share_mode above; fields Caffe does not copy */
            moved.number = v1_params[p].current;
        }
        }
        if (status == CBLOB_OK)
            status = msg_append(layer, &moved);
    }
    for (size_t i = 0; status == CBLOB_OK && i < num_specs; ++i)
        status = msg_append(layer, &(up_field){.number = LAYER_PARAM, .wire = CB_WIRE_LENGTH, .child = specs[i]});
    cb_free(modes);
    cb_free(lrs);
    cb_free(decays);
    cb_free(specs);
    if (status == CBLOB_OK)
        *out = layer;
    return status;
}

/* UpgradeV1Net: the net's fields but `layers`, then each V1 layer as a LayerParameter. */
static cblob_status upgrade_v1_net(upgrader *u, up_msg *net)
{
    if (msg_last(net, NET_LAYER) != NULL)
        return refuse(u, "the net has both 'layer' and 'layers' fields (Caffe refuses such a net too: switch the "
                         "definition to the 'layer' format by hand)", NULL);
    char name[256];
    int64_t index = 0;
    for (size_t i = 0; i < net->count; ++i) {
        up_field *field = &net->fields[i];
        if (field->number != NET_LAYERS)
            continue;
        text_of(msg_last(field->child, V1_NAME), name, sizeof name);
        u->layer_name = name;
        u->layer_index = index++;
        up_msg *layer = NULL;
        CB_TRY(upgrade_v1_layer(u, field->child, &layer));
        *field = (up_field){.number = NET_LAYER, .wire = CB_WIRE_LENGTH, .child = layer};
    }
    u->layer_name = NULL;
    return CBLOB_OK;
}

/* UpgradeNetInput: input with input_shape or input_dim becomes an Input layer, first; the input
 * fields go. */
static cblob_status upgrade_input(upgrader *u, up_msg *net)
{
    const size_t num_inputs = msg_count(net, NET_INPUT), num_shapes = msg_count(net, NET_INPUT_SHAPE);
    up_field *dims = NULL;
    size_t num_dims = 0;
    CB_TRY(msg_elements_alloc(u, net, NET_INPUT_DIM, CB_WIRE_VARINT, "input_dim", &dims, &num_dims));
    cblob_status status = CBLOB_OK;
    if (num_shapes > 0 || num_dims > 0) {
        if (num_shapes > 0 ? num_shapes < num_inputs : num_dims < 4 * num_inputs) {
            status = refuse(u, num_shapes > 0 ? "fewer input_shape fields than inputs"
                                              : "fewer than 4 input_dim values per input", NULL);
            goto done;
        }
        up_msg *layer = msg_new(u), *input_param = msg_new(u);
        if (layer == NULL || input_param == NULL) {
            status = no_memory();
            goto done;
        }
        if ((status = msg_add_text(layer, LAYER_NAME, "input", 5)) != CBLOB_OK ||
            (status = msg_add_text(layer, LAYER_TYPE, "Input", 5)) != CBLOB_OK)
            goto done;
        size_t input = 0, shape = 0;
        for (size_t i = 0; i < net->count; ++i) {
            const up_field *field = &net->fields[i];
            if (field->number == NET_INPUT) {
                if ((status = msg_append(layer, &(up_field){.number = LAYER_TOP, .wire = field->wire,
                                                            .data = field->data, .size = field->size,
                                                            .value = field->value})) != CBLOB_OK)
                    goto done;
                if (num_shapes == 0) {
                    up_msg *legacy = msg_new(u);
                    if (legacy == NULL) {
                        status = no_memory();
                        goto done;
                    }
                    /* BlobShape's dim is [packed = true]: one field holding the four varints,
                     * as Caffe's protobuf writes it (upgrade_net_proto_binary's bytes). */
                    if ((legacy->bytes = cb_malloc(4 * CB_VARINT_MAX_BYTES)) == NULL) {
                        status = no_memory();
                        goto done;
                    }
                    uint8_t *end = legacy->bytes;
                    for (size_t d = 4 * input; d < 4 * input + 4; ++d)
                        end = put_varint(end, dims[d].value);
                    if ((status = msg_append(legacy, &(up_field){.number = SHAPE_DIM, .wire = CB_WIRE_LENGTH,
                                                                 .data = legacy->bytes,
                                                                 .size = (size_t)(end - legacy->bytes)})) != CBLOB_OK)
                        goto done;
                    if ((status = msg_append(input_param, &(up_field){.number = 1, .wire = CB_WIRE_LENGTH,
                                                                      .child = legacy})) != CBLOB_OK)
                        goto done;
                }
                ++input;
            }
        }
        /* With input_shape: the first num_inputs shapes, in order. */
        for (size_t i = 0; num_shapes > 0 && i < net->count && shape < num_inputs; ++i) {
            up_field field = net->fields[i];
            if (field.number != NET_INPUT_SHAPE)
                continue;
            field.number = 1;
            if ((status = msg_append(input_param, &field)) != CBLOB_OK)
                goto done;
            ++shape;
        }
        if ((status = msg_append(layer, &(up_field){.number = LAYER_INPUT_PARAM, .wire = CB_WIRE_LENGTH,
                                                    .child = input_param})) != CBLOB_OK)
            goto done;
        /* First among the layers: placed before the first `layer` field (fields of the net sort
         * by number when written, layers keeping their order). */
        size_t first = net->count;
        for (size_t i = 0; i < net->count; ++i)
            if (net->fields[i].number == NET_LAYER) {
                first = i;
                break;
            }
        if ((status = msg_append(net, &(up_field){0})) != CBLOB_OK)
            goto done;
        memmove(&net->fields[first + 1], &net->fields[first], (net->count - 1 - first) * sizeof *net->fields);
        net->fields[first] = (up_field){.number = NET_LAYER, .wire = CB_WIRE_LENGTH, .child = layer};
    }
    msg_remove(net, NET_INPUT);
    msg_remove(net, NET_INPUT_SHAPE);
    msg_remove(net, NET_INPUT_DIM);
done:
    cb_free(dims);
    return status;
}

/* UpgradeNetBatchNorm: a BatchNorm layer with three param specs gets lr_mult and decay_mult 0 in
 * each (its blobs are statistics, not learned). True when one did. */
static cblob_status upgrade_batch_norm(upgrader *u, up_msg *net)
{
    for (size_t i = 0; i < net->count; ++i) {
        up_field *field = &net->fields[i];
        if (field->number != NET_LAYER)
            continue;
        up_msg *layer = field->child;
        if (layer == NULL) {
            /* a layer kept as bytes: parsed only when it is a BatchNorm layer with 3 specs */
            up_msg *peek = NULL;
            CB_TRY(msg_parse(u, field->data, field->size, "a layer", &peek));
            if (!text_is(msg_last(peek, LAYER_TYPE), "BatchNorm") || msg_count(peek, LAYER_PARAM) != 3)
                continue;
            field->child = layer = peek;
        } else if (!text_is(msg_last(layer, LAYER_TYPE), "BatchNorm") || msg_count(layer, LAYER_PARAM) != 3) {
            continue;
        }
        for (size_t f = 0; f < layer->count; ++f) {
            up_field *spec_field = &layer->fields[f];
            if (spec_field->number != LAYER_PARAM)
                continue;
            up_msg *spec = spec_field->child;
            if (spec == NULL)
                CB_TRY(msg_parse(u, spec_field->data, spec_field->size, "a param spec", &spec));
            spec_field->child = spec;
            CB_TRY(msg_set_float(spec, SPEC_LR_MULT, 0));
            CB_TRY(msg_set_float(spec, SPEC_DECAY_MULT, 0));
        }
    }
    return CBLOB_OK;
}

/* ---- the call ------------------------------------------------------------------------------------ */

static bool has_v0_layer(upgrader *u, const up_msg *net, cblob_status *status)
{
    for (size_t i = 0; i < net->count; ++i) {
        const up_field *field = &net->fields[i];
        if (field->number != NET_LAYERS || field->wire != CB_WIRE_LENGTH)
            continue;
        up_msg *v1 = NULL;
        if ((*status = msg_parse(u, field->data, field->size, "a V1 layer", &v1)) != CBLOB_OK)
            return false;
        if (msg_last(v1, V1_LAYER) != NULL)
            return true;
    }
    return false;
}

/* UpgradeNetAsNeeded over a serialized NetParameter: *changed false when no step applies (the
 * output is then the input's bytes). */
static cblob_status upgrade_bytes(upgrader *u, const uint8_t *bytes, size_t size, uint8_t **out, size_t *out_size,
                                  bool *changed)
{
    up_msg *net;
    CB_TRY(msg_parse(u, bytes, size, "the NetParameter", &net));
    cblob_status status = CBLOB_OK;
    *changed = false;
    if (has_v0_layer(u, net, &status)) {
        CB_TRY(upgrade_v0_net(u, net, &net));
        *changed = true;
    }
    CB_TRY(status);
    if (msg_last(net, NET_LAYERS) != NULL) {
        CB_TRY(edit_layers(u, net, NET_LAYERS));
        CB_TRY(upgrade_data_transformation(u, net));
        CB_TRY(upgrade_v1_net(u, net));
        *changed = true;
    }
    if (msg_last(net, NET_INPUT) != NULL) {
        CB_TRY(upgrade_input(u, net));
        *changed = true;
    }
    CB_TRY(upgrade_batch_norm(u, net));
    /* a BatchNorm layer edited parsed its specs (new messages); a peek alone leaves no child */
    for (size_t i = 0; !*changed && i < net->count; ++i)
        *changed = net->fields[i].child != NULL;
    if (!*changed) {
        *out = NULL;
        *out_size = size;
        return CBLOB_OK;
    }
    msg_sort_deep(net);
    const size_t total = msg_size(net);
    if (total > CB_PROTO_MAX_MESSAGE)
        return cb_fail(CBLOB_ERR_OVERFLOW,
                       "the upgraded NetParameter would take %zu bytes, over protobuf's 2 GiB message limit", total);
    uint8_t *written = cb_malloc(total + 1);
    if (written == NULL)
        return no_memory();
    msg_write(net, written);
    *out = written;
    *out_size = total;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_upgrade(const cblob_model *model, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_model);
    uint8_t *bytes = NULL, *upgraded = NULL;
    size_t size = 0, upgraded_size = 0;
    upgrader u = {0};
    bool changed = false;
    cblob_status status = cb_model_serialize(model, &bytes, &size);
    if (status == CBLOB_OK)
        status = upgrade_bytes(&u, bytes, size, &upgraded, &upgraded_size, &changed);
    free_owned(&u);
    if (changed) { /* the upgraded bytes hold copies of everything they took from the input's */
        cb_free(bytes);
        bytes = NULL;
    }
    cblob_model *result = NULL;
    if (status == CBLOB_OK)
        status = cb_model_build(model->context, changed ? upgraded : bytes, changed ? upgraded_size : size, NULL,
                                &result);
    cb_free(bytes);
    cb_free(upgraded);
    if (status == CBLOB_OK)
        *out_model = result;
    return status;
}
