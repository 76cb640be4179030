/* SPDX-License-Identifier: BSD-2-Clause */
/* Models: a Caffe net's weights (NetParameter), read from .caffemodel files and written back. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "proto_io.h"
#include "proto_net.h"
#include "status.h"

typedef struct cb_layer {
    char *name;
    char *type;
    /* In a V1 model: the LayerType value of `type`, which a V0 type string ("conv") lacks. */
    bool has_v1_type;
    int32_t v1_type;
    int64_t num_blobs;
    cblob_blob **blobs;
} cb_layer;

struct cblob_model {
    cblob_context *context;
    cblob_net_format format;
    char *name; /* NULL: the net has none */
    int64_t num_layers, capacity;
    cb_layer *layers;
};

/* ---- lifetime ---------------------------------------------------------------------------- */

static void layer_clear(cb_layer *layer)
{
    for (int64_t i = 0; i < layer->num_blobs; ++i)
        cb_blob_release(layer->blobs[i]);
    free(layer->blobs);
    free(layer->name);
    free(layer->type);
}

static void model_free(cblob_model *model)
{
    for (int64_t i = 0; i < model->num_layers; ++i)
        layer_clear(&model->layers[i]);
    free(model->layers);
    free(model->name);
    cb_context_release(model->context);
    free(model);
}

static cblob_status model_new(cblob_context *context, cblob_net_format format, cblob_model **out)
{
    cblob_model *model = calloc(1, sizeof *model);
    if (model == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a model");
    model->context = context;
    cb_context_retain(context);
    model->format = format;
    *out = model;
    return CBLOB_OK;
}

/* Room for one more layer, zeroed. */
static cblob_status reserve_layer(cblob_model *model, cb_layer **out)
{
    if (model->num_layers == model->capacity) {
        const int64_t next = model->capacity > 0 ? model->capacity * 2 : 8;
        cb_layer *grown = realloc(model->layers, (size_t)next * sizeof *grown);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", next);
        model->layers = grown;
        model->capacity = next;
    }
    *out = &model->layers[model->num_layers];
    memset(*out, 0, sizeof **out);
    return CBLOB_OK;
}

static cblob_status check_format(cblob_net_format format)
{
    if (format != CBLOB_NET_FORMAT_V1 && format != CBLOB_NET_FORMAT_V2)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "format %d is neither CBLOB_NET_FORMAT_V1 (1) nor CBLOB_NET_FORMAT_V2 (2)", (int)format);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_create(cblob_context *context, cblob_net_format format, const char *name,
                                          cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_TRY(check_format(format));
    CB_REQUIRE(out_model);
    char *copy = NULL;
    if (name != NULL && (copy = strdup(name)) == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the net's name");
    cblob_model *model = NULL;
    cblob_status status = model_new(context, format, &model);
    if (status != CBLOB_OK) {
        free(copy);
        return status;
    }
    model->name = copy;
    *out_model = model;
    return CBLOB_OK;
}

CBLOB_API void cblob_model_destroy(cblob_model *model)
{
    CB_ENTER();
    if (model != NULL)
        model_free(model);
}

/* ---- reading ------------------------------------------------------------------------------- */

/* Makes the blobs of one layer. The index was checked whole, so only memory can run out. */
static cblob_status load_layer(cblob_model *model, const cb_input *input, cb_layer_index *scanned, cb_layer *layer)
{
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    if (scanned->blobs.count > 0) {
        layer->blobs = calloc((size_t)scanned->blobs.count, sizeof *layer->blobs);
        if (layer->blobs == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " blob handles", scanned->blobs.count);
    }
    for (int64_t i = 0; i < scanned->blobs.count; ++i) {
        const cb_blob_layout *layout = &scanned->blobs.items[i];
        cblob_blob *blob;
        CB_TRY(cb_blob_new(model->context, cb_blob_layout_dtype(layout), &blob));
        cblob_status status = cb_blob_load(blob, input->bytes, layout, &root, true);
        if (status != CBLOB_OK) {
            cb_blob_release(blob);
            return status;
        }
        layer->blobs[layer->num_blobs++] = blob;
        cb_input_done_with(input, layout->offset, layout->length);
    }
    /* The strings move from the index to the layer. */
    layer->name = scanned->name;
    layer->type = scanned->type;
    scanned->name = scanned->type = NULL;
    if (model->format == CBLOB_NET_FORMAT_V1)
        layer->has_v1_type = cb_v1_type_value(layer->type, &layer->v1_type);
    return CBLOB_OK;
}

static cblob_status open_model(cblob_context *context, const cb_input *input, cblob_model **out)
{
    cb_net_index index;
    CB_TRY(cb_net_scan(input->bytes, input->size, &index));
    cblob_model *model = NULL;
    cblob_status status = model_new(context, index.format, &model);
    if (status != CBLOB_OK) {
        cb_net_index_free(&index);
        return status;
    }
    model->name = index.name;
    index.name = NULL;
    for (int64_t i = 0; status == CBLOB_OK && i < index.num_layers; ++i) {
        cb_layer *layer;
        status = reserve_layer(model, &layer);
        if (status == CBLOB_OK) {
            /* Counted before loading, so that a half-loaded layer is freed with the model. */
            ++model->num_layers;
            status = load_layer(model, input, &index.layers[i], layer);
        }
    }
    cb_net_index_free(&index);
    if (status != CBLOB_OK) {
        model_free(model);
        return status;
    }
    *out = model;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_open(cblob_context *context, const uint8_t *bytes, size_t size,
                                        cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_model);
    const cb_input input = cb_input_bytes(bytes, size);
    return open_model(context, &input, out_model);
}

CBLOB_API cblob_status cblob_model_open_file(cblob_context *context, const char *path, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_input input;
    CB_TRY(cb_input_open(path, &input));
    cblob_status status = open_model(context, &input, out_model);
    cb_input_close(&input);
    return status;
}

/* ---- queries ------------------------------------------------------------------------------ */

CBLOB_API cblob_status cblob_model_format(const cblob_model *model, cblob_net_format *out_format)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_format);
    *out_format = model->format;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_name(const cblob_model *model, const char **out_name)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    *out_name = model->name;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_num_layers(const cblob_model *model, int64_t *out_num_layers)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_num_layers);
    *out_num_layers = model->num_layers;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_find_layer(const cblob_model *model, const char *name, int64_t *out_layer)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(name);
    CB_REQUIRE(out_layer);
    int64_t found = -1;
    for (int64_t i = 0; i < model->num_layers && found < 0; ++i)
        if (strcmp(model->layers[i].name, name) == 0)
            found = i;
    *out_layer = found;
    return CBLOB_OK;
}

static cblob_status find_layer(const cblob_model *model, int64_t layer, const cb_layer **out)
{
    if (layer < 0 || layer >= model->num_layers)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "layer %" PRId64 " is outside [0, %" PRId64 ")", layer,
                       model->num_layers);
    *out = &model->layers[layer];
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_name(const cblob_model *model, int64_t layer, const char **out_name)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    const cb_layer *found = NULL;
    CB_TRY(find_layer(model, layer, &found));
    *out_name = found->name;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_type(const cblob_model *model, int64_t layer, const char **out_type)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_type);
    const cb_layer *found = NULL;
    CB_TRY(find_layer(model, layer, &found));
    *out_type = found->type;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_num_blobs(const cblob_model *model, int64_t layer, int64_t *out_num_blobs)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_num_blobs);
    const cb_layer *found = NULL;
    CB_TRY(find_layer(model, layer, &found));
    *out_num_blobs = found->num_blobs;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_blob(const cblob_model *model, int64_t layer, int64_t index,
                                              cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_blob);
    const cb_layer *found = NULL;
    CB_TRY(find_layer(model, layer, &found));
    if (index < 0 || index >= found->num_blobs)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "blob %" PRId64 " is outside [0, %" PRId64 ") for layer %" PRId64 " (%s)",
                       index, found->num_blobs, layer, found->name);
    cblob_blob *blob = found->blobs[index];
    cb_blob_retain(blob);
    *out_blob = blob;
    return CBLOB_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

CBLOB_API cblob_status cblob_model_add_layer(cblob_model *model, const char *name, const char *type,
                                             cblob_blob *const *blobs, int64_t num_blobs)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(name);
    CB_REQUIRE(type);
    CB_TRY(cb_check_blob_array("blobs", blobs, num_blobs));
    int32_t v1_type = 0;
    if (model->format == CBLOB_NET_FORMAT_V1 && !cb_v1_type_value(type, &v1_type))
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "type \"%.64s\" is not a V1LayerParameter.LayerType name (such as CONVOLUTION) or number", type);
    cb_layer *layer;
    CB_TRY(reserve_layer(model, &layer));
    layer->name = strdup(name);
    layer->type = strdup(type);
    layer->blobs = num_blobs > 0 ? malloc((size_t)num_blobs * sizeof *layer->blobs) : NULL;
    if (layer->name == NULL || layer->type == NULL || (num_blobs > 0 && layer->blobs == NULL)) {
        layer_clear(layer);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for layer \"%.64s\"", name);
    }
    layer->v1_type = v1_type;
    layer->has_v1_type = model->format == CBLOB_NET_FORMAT_V1;
    for (int64_t i = 0; i < num_blobs; ++i) {
        cb_blob_retain(blobs[i]);
        layer->blobs[i] = blobs[i];
    }
    layer->num_blobs = num_blobs;
    ++model->num_layers;
    return CBLOB_OK;
}

/* The NetParameter message over the model's blobs (see cb_blob_message). */
typedef struct net_message {
    Caffe__NetParameter net;
    Caffe__LayerParameter *layers;
    Caffe__V1LayerParameter *v1_layers;
    void **layer_pointers;
    cb_blob_message *blobs;
    Caffe__BlobProto **blob_pointers;
    int64_t num_blobs; /* messages initialised so far */
} net_message;

static void net_message_clear(net_message *message)
{
    for (int64_t i = 0; i < message->num_blobs; ++i)
        cb_blob_message_clear(&message->blobs[i]);
    free(message->layers);
    free(message->v1_layers);
    free(message->layer_pointers);
    free(message->blobs);
    free(message->blob_pointers);
}

static cblob_status init_layer_blobs(net_message *message, const cb_layer *layer, int64_t layer_index, bool write_diff,
                                     Caffe__BlobProto ***out_first)
{
    *out_first = &message->blob_pointers[message->num_blobs];
    for (int64_t i = 0; i < layer->num_blobs; ++i) {
        char what[128];
        snprintf(what, sizeof what, "layer %" PRId64 " (%.64s) blob %" PRId64, layer_index, layer->name, i);
        cb_blob_message *blob = &message->blobs[message->num_blobs];
        CB_TRY(cb_blob_message_init(blob, layer->blobs[i], write_diff, what));
        message->blob_pointers[message->num_blobs++] = &blob->proto;
    }
    return CBLOB_OK;
}

static cblob_status net_message_init(net_message *message, const cblob_model *model, bool write_diff)
{
    memset(message, 0, sizeof *message);
    int64_t total = 0;
    for (int64_t i = 0; i < model->num_layers; ++i)
        total += model->layers[i].num_blobs;
    const size_t layers = (size_t)model->num_layers + 1, blobs = (size_t)total + 1;
    const bool v1 = model->format == CBLOB_NET_FORMAT_V1;
    message->layer_pointers = calloc(layers, sizeof *message->layer_pointers);
    message->blobs = calloc(blobs, sizeof *message->blobs);
    message->blob_pointers = calloc(blobs, sizeof *message->blob_pointers);
    if (v1)
        message->v1_layers = calloc(layers, sizeof *message->v1_layers);
    else
        message->layers = calloc(layers, sizeof *message->layers);
    if (message->layer_pointers == NULL || message->blobs == NULL || message->blob_pointers == NULL ||
        (v1 ? (void *)message->v1_layers : (void *)message->layers) == NULL) {
        net_message_clear(message);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a message of %" PRId64 " layers", model->num_layers);
    }
    caffe__net_parameter__init(&message->net);
    message->net.name = model->name;
    for (int64_t i = 0; i < model->num_layers; ++i) {
        const cb_layer *layer = &model->layers[i];
        Caffe__BlobProto **first;
        cblob_status status = init_layer_blobs(message, layer, i, write_diff, &first);
        if (status != CBLOB_OK) {
            net_message_clear(message);
            return status;
        }
        if (v1) {
            Caffe__V1LayerParameter *out = &message->v1_layers[i];
            caffe__v1_layer_parameter__init(out);
            out->name = layer->name;
            out->has_type = layer->has_v1_type;
            out->type = (Caffe__V1LayerParameter__LayerType)layer->v1_type;
            out->n_blobs = (size_t)layer->num_blobs;
            out->blobs = first;
            message->layer_pointers[i] = out;
        } else {
            Caffe__LayerParameter *out = &message->layers[i];
            caffe__layer_parameter__init(out);
            out->name = layer->name;
            out->type = layer->type;
            out->n_blobs = (size_t)layer->num_blobs;
            out->blobs = first;
            message->layer_pointers[i] = out;
        }
    }
    if (v1) {
        message->net.n_layers = (size_t)model->num_layers;
        message->net.layers = (Caffe__V1LayerParameter **)message->layer_pointers;
    } else {
        message->net.n_layer = (size_t)model->num_layers;
        message->net.layer = (Caffe__LayerParameter **)message->layer_pointers;
    }
    return CBLOB_OK;
}

static cblob_status write_model(const cblob_model *model, int32_t write_diff, uint8_t *buffer, size_t buffer_size,
                                size_t *out_size, const char *path)
{
    net_message message;
    CB_TRY(net_message_init(&message, model, write_diff == 1));
    cblob_status status = path != NULL ? cb_pack_to_file(&message.net.base, path)
                                       : cb_pack_to_buffer(&message.net.base, buffer, buffer_size, out_size);
    net_message_clear(&message);
    return status;
}

CBLOB_API cblob_status cblob_model_to_proto(const cblob_model *model, int32_t write_diff, uint8_t *buffer,
                                            size_t buffer_size, size_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(out_size);
    return write_model(model, write_diff, buffer, buffer_size, out_size, NULL);
}

CBLOB_API cblob_status cblob_model_to_proto_file(const cblob_model *model, int32_t write_diff, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(path);
    return write_model(model, write_diff, NULL, 0, NULL, path);
}
