/* SPDX-License-Identifier: BSD-2-Clause */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "model_layers.h"
#include "neoml/neoml.h"
#include "status.h"

/* ---- PyTorch names ------------------------------------------------------------------------------ */

typedef struct torch_type_names {
    const char *type;
    const char *names[2];
} torch_type_names;

/* Layer types (V2 and V1 spellings) whose blobs PyTorch names. */
static const torch_type_names torch_types[] = {
    {"Convolution", {"weight", "bias"}}, {"Deconvolution", {"weight", "bias"}}, {"InnerProduct", {"weight", "bias"}},
    {"CONVOLUTION", {"weight", "bias"}}, {"DECONVOLUTION", {"weight", "bias"}}, {"INNER_PRODUCT", {"weight", "bias"}},
    {"Scale", {"weight", "bias"}},       {"PReLU", {"weight", NULL}},            {"BatchNorm", {"running_mean", "running_var"}},
};

const char *cb_torch_name(const char *type, int64_t index)
{
    for (size_t i = 0; i < sizeof torch_types / sizeof *torch_types; ++i)
        if (strcmp(torch_types[i].type, type) == 0)
            return index >= 0 && index < 2 ? torch_types[i].names[index] : NULL;
    return NULL;
}

static bool is_batch_norm(const char *type)
{
    return strcmp(type, "BatchNorm") == 0;
}

/* Whether blob `index` of a layer is exported: BatchNorm's scale factor (blob 2) is applied to
 * the statistics, not exported, when PyTorch names are asked for. */
static bool exported(const char *type, int64_t index, bool torch_names)
{
    return !(torch_names && is_batch_norm(type) && index == 2);
}

CBLOB_API cblob_status cblob_model_torch_unmapped(const cblob_model *model, int64_t *out_layers, int64_t max_layers,
                                                  int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_count);
    if (max_layers < 0 || (max_layers > 0 && out_layers == NULL))
        return cb_fail(max_layers < 0 ? CBLOB_ERR_OUT_OF_RANGE : CBLOB_ERR_INVALID_ARGUMENT,
                       "out_layers has room for %" PRId64 " layers", max_layers);
    int64_t count = 0;
    for (int64_t i = 0; i < model->num_layers; ++i) {
        const uint8_t *record = model->layers[i];
        const char *type = cb_record_type(record);
        bool unmapped = false;
        for (int64_t j = 0; j < cb_record_num_blobs(record); ++j)
            unmapped = unmapped || (exported(type, j, true) && cb_torch_name(type, j) == NULL);
        if (unmapped)
            ++count;
    }
    if (out_layers != NULL && count > max_layers)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "out_layers has room for %" PRId64 " of %" PRId64 " layers", max_layers,
                       count);
    if (out_layers != NULL) {
        int64_t written = 0;
        for (int64_t i = 0; i < model->num_layers; ++i) {
            const uint8_t *record = model->layers[i];
            bool unmapped = false;
            for (int64_t j = 0; j < cb_record_num_blobs(record); ++j)
                unmapped = unmapped || (exported(cb_record_type(record), j, true) &&
                                        cb_torch_name(cb_record_type(record), j) == NULL);
            if (unmapped)
                out_layers[written++] = i;
        }
    }
    *out_count = count;
    return CBLOB_OK;
}

/* ---- the list of tensors ------------------------------------------------------------------------ */

void cb_tensor_list_free(cb_tensor_list *list)
{
    for (int64_t i = 0; i < list->count; ++i)
        free(list->items[i].key);
    free(list->items);
    *list = (cb_tensor_list){0};
}

static cblob_status make_key(const char *layer, const char *repeat_suffix, char separator, const char *what,
                             bool diff, char **out)
{
    const size_t size = strlen(layer) + strlen(repeat_suffix) + strlen(what) + 16;
    char *key = malloc(size);
    if (key == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte key", size);
    snprintf(key, size, "%s%s%c%s%s%s", layer, repeat_suffix, separator, what, diff ? (separator == '/' ? "/" : ".") : "",
             diff ? "diff" : "");
    *out = key;
    return CBLOB_OK;
}

static cblob_status add_tensor(const cblob_model *model, int64_t layer, int64_t index, cblob_part part, char separator,
                               bool torch_names, const char *suffix, cb_tensor_list *list)
{
    const char *type = cb_record_type(model->layers[layer]);
    cb_tensor *tensor = &list->items[list->count];
    *tensor = (cb_tensor){.layer = layer, .index = index, .part = part};
    CB_TRY(cb_model_blob_facts(model, layer, index, &tensor->facts));
    const char *torch = torch_names ? cb_torch_name(type, index) : NULL;
    char number[24];
    snprintf(number, sizeof number, "%" PRId64, index);
    tensor->kind = torch != NULL && is_batch_norm(type) ? CB_TENSOR_SCALED : CB_TENSOR_PLAIN;
    tensor->bytes = (uint64_t)tensor->facts.count * cb_dtype_find(tensor->facts.dtype)->size;
    CB_TRY(make_key(cb_record_name(model->layers[layer]), suffix, separator, torch != NULL ? torch : number,
                    part == CBLOB_PART_DIFF, &tensor->key));
    ++list->count;
    return CBLOB_OK;
}

static cblob_status add_layer_tensors(const cblob_model *model, int64_t layer, bool repeat, char separator,
                                      bool torch_names, bool diffs, cb_tensor_list *list)
{
    const uint8_t *record = model->layers[layer];
    char suffix[24] = "";
    if (repeat)
        snprintf(suffix, sizeof suffix, "@%" PRId64, layer);
    for (int64_t j = 0; j < cb_record_num_blobs(record); ++j) {
        if (!exported(cb_record_type(record), j, torch_names))
            continue;
        CB_TRY(add_tensor(model, layer, j, CBLOB_PART_DATA, separator, torch_names, suffix, list));
        if (diffs && list->items[list->count - 1].facts.has_diff)
            CB_TRY(add_tensor(model, layer, j, CBLOB_PART_DIFF, separator, torch_names, suffix, list));
    }
    return CBLOB_OK;
}

cblob_status cb_tensor_list_make(const cblob_model *model, char separator, bool torch_names, bool diffs,
                                 cb_tensor_list *out)
{
    int64_t blobs = 0;
    for (int64_t i = 0; i < model->num_layers; ++i)
        blobs += cb_record_num_blobs(model->layers[i]);
    cb_tensor_list list = {.items = calloc((size_t)(diffs ? 2 * blobs : blobs) + 1, sizeof(cb_tensor))};
    uint8_t *repeats = NULL;
    cblob_status status = list.items == NULL ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " tensors", blobs)
                                             : cb_model_repeats(model, &repeats);
    for (int64_t i = 0; status == CBLOB_OK && i < model->num_layers; ++i)
        status = add_layer_tensors(model, i, repeats[i], separator, torch_names, diffs, &list);
    free(repeats);
    if (status != CBLOB_OK) {
        cb_tensor_list_free(&list);
        return status;
    }
    *out = list;
    return CBLOB_OK;
}

/* ---- a tensor's bytes --------------------------------------------------------------------------- */

#define CB_CHUNK_ELEMENTS ((int64_t)1 << 18)

/* Caffe's BatchNorm: statistics are sums, divided by the factor in blob 2 (0 gives 0). */
static cblob_status scale_factor(const cblob_model *model, const cb_tensor *tensor, double *out)
{
    cb_blob_facts facts;
    CB_TRY(cb_model_blob_facts(model, tensor->layer, 2, &facts));
    if (facts.count < 1)
        return cb_fail(CBLOB_ERR_SHAPE, "BatchNorm layer %" PRId64 "'s scale factor (blob 2) is empty", tensor->layer);
    double factor[1];
    float single[1];
    CB_TRY(cb_model_blob_read(model, tensor->layer, 2, CBLOB_PART_DATA, 0, 1,
                              facts.dtype == CBLOB_DTYPE_FLOAT64 ? (void *)factor : (void *)single));
    const double value = facts.dtype == CBLOB_DTYPE_FLOAT64 ? factor[0] : (double)single[0];
    *out = value == 0 ? 0 : 1 / value;
    return CBLOB_OK;
}

static void scale(void *values, cblob_dtype dtype, int64_t n, double factor)
{
    if (dtype == CBLOB_DTYPE_FLOAT64)
        for (int64_t i = 0; i < n; ++i)
            ((double *)values)[i] *= factor;
    else
        for (int64_t i = 0; i < n; ++i)
            ((float *)values)[i] = (float)(((float *)values)[i] * factor);
}

cblob_status cb_tensor_write(const cblob_model *model, const cb_tensor *tensor, cb_sink *sink)
{
    if (sink->kind == CB_SINK_COUNT) {
        sink->position += tensor->bytes;
        sink->size = sink->position > sink->size ? sink->position : sink->size;
        return CBLOB_OK;
    }
    const void *whole = NULL;
    if (tensor->kind == CB_TENSOR_PLAIN)
        CB_TRY(cb_model_blob_values(model, tensor->layer, tensor->index, tensor->part, &whole));
    if (whole != NULL) { /* straight from the blob's memory */
        cb_sink_write(sink, whole, (size_t)tensor->bytes);
        return sink->status;
    }
    double factor = 1;
    if (tensor->kind == CB_TENSOR_SCALED)
        CB_TRY(scale_factor(model, tensor, &factor));
    const size_t element = cb_dtype_find(tensor->facts.dtype)->size;
    void *chunk = malloc((size_t)CB_CHUNK_ELEMENTS * element);
    if (chunk == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a chunk of values");
    cblob_status status = CBLOB_OK;
    for (int64_t done = 0; status == CBLOB_OK && done < tensor->facts.count; done += CB_CHUNK_ELEMENTS) {
        const int64_t n = tensor->facts.count - done < CB_CHUNK_ELEMENTS ? tensor->facts.count - done : CB_CHUNK_ELEMENTS;
        status = cb_model_blob_read(model, tensor->layer, tensor->index, tensor->part, done, n, chunk);
        if (status == CBLOB_OK && tensor->kind == CB_TENSOR_SCALED)
            scale(chunk, tensor->facts.dtype, n, factor);
        if (status == CBLOB_OK)
            cb_sink_write(sink, chunk, (size_t)n * element);
    }
    free(chunk);
    return status == CBLOB_OK ? sink->status : status;
}

/* ---- models from named tensors ------------------------------------------------------------------- */

cblob_status cb_tensor_set_add(cb_tensor_set *set, const char *layer, size_t layer_length, int64_t index, bool diff,
                               bool running_stat, cblob_blob *blob, const char *key)
{
    if (set->count == set->capacity) {
        const int64_t next = set->capacity > 0 ? 2 * set->capacity : 16;
        cb_named_tensor *grown = realloc(set->items, (size_t)next * sizeof *grown);
        if (grown == NULL) {
            cblob_blob_destroy(blob);
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " tensors", next);
        }
        set->items = grown;
        set->capacity = next;
    }
    char *copy = malloc(layer_length + 1);
    if (copy == NULL) {
        cblob_blob_destroy(blob);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for key \"%.64s\"", key);
    }
    memcpy(copy, layer, layer_length);
    copy[layer_length] = '\0';
    set->items[set->count++] = (cb_named_tensor){copy, index, diff, running_stat, blob};
    return CBLOB_OK;
}

void cb_tensor_set_free(cb_tensor_set *set)
{
    for (int64_t i = 0; i < set->count; ++i) {
        free(set->items[i].layer);
        cblob_blob_destroy(set->items[i].blob);
    }
    free(set->items);
    *set = (cb_tensor_set){0};
}

/* A diff read as its own tensor, into its blob's diff (same shape, converted to its dtype). */
static cblob_status data_into_diff(cblob_blob *from, cblob_blob *to, const char *layer, int64_t index)
{
    if (!cb_shape_equal(&from->shape, &to->shape))
        return cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" blob %" PRId64 ": the diff's shape is not the blob's", layer,
                       index);
    void *source = NULL, *target = NULL;
    CB_TRY(cb_blob_host(from, CBLOB_PART_DATA, false, &source));
    CB_TRY(cb_blob_host(to, CBLOB_PART_DIFF, true, &target));
    return cb_convert_elements(NULL, from->dtype, to->dtype, from->shape.count, source, target);
}

/* The blobs of one layer name, by index: data tensors give the blob, diff tensors its diff. */
static cblob_status gather_layer(cblob_context *context, cb_tensor_set *set, const char *layer, cblob_blob ***out,
                                 int64_t *out_count)
{
    int64_t count = 0;
    bool running = false;
    for (int64_t i = 0; i < set->count; ++i)
        if (strcmp(set->items[i].layer, layer) == 0) {
            count = set->items[i].index + 1 > count ? set->items[i].index + 1 : count;
            running = running || set->items[i].running_stat;
        }
    if (running && count < 3)
        count = 3; /* BatchNorm's scale factor, 1: the statistics are plain values */
    cblob_blob **blobs = calloc((size_t)count + 1, sizeof *blobs);
    if (blobs == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " blobs", count);
    cblob_status status = CBLOB_OK;
    for (int64_t i = 0; status == CBLOB_OK && i < set->count; ++i) {
        cb_named_tensor *t = &set->items[i];
        if (strcmp(t->layer, layer) != 0 || t->diff)
            continue;
        if (blobs[t->index] != NULL) {
            status = cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has blob %" PRId64 " twice", layer, t->index);
            break;
        }
        blobs[t->index] = t->blob; /* the layer's now */
        t->blob = NULL;
    }
    if (status == CBLOB_OK && running && blobs[2] == NULL) {
        status = cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){1}, &blobs[2]);
        if (status == CBLOB_OK)
            status = cblob_blob_fill(blobs[2], CBLOB_PART_DATA, 1.0);
    }
    for (int64_t i = 0; status == CBLOB_OK && i < set->count; ++i) {
        const cb_named_tensor *t = &set->items[i];
        if (strcmp(t->layer, layer) != 0 || !t->diff)
            continue;
        if (blobs[t->index] == NULL)
            status = cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has a diff for blob %" PRId64 " but no blob", layer, t->index);
        else
            status = data_into_diff(t->blob, blobs[t->index], layer, t->index);
    }
    for (int64_t i = 0; status == CBLOB_OK && i < count; ++i)
        if (blobs[i] == NULL)
            status = cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has blob %" PRId64 " but no blob %" PRId64, layer,
                             count - 1, i);
    if (status != CBLOB_OK) {
        for (int64_t i = 0; i < count; ++i)
            cblob_blob_destroy(blobs[i]);
        free(blobs);
        return status;
    }
    *out = blobs;
    *out_count = count;
    return CBLOB_OK;
}

cblob_status cb_tensor_set_model(cblob_context *context, cb_tensor_set *set, const char *name, cb_type_lookup *types,
                                 void *types_context, cblob_model **out)
{
    cblob_model *model = NULL;
    CB_TRY(cblob_model_create(context, CBLOB_NET_FORMAT_V2, name, &model));
    cblob_status status = CBLOB_OK;
    for (int64_t i = 0; status == CBLOB_OK && i < set->count; ++i) {
        const char *layer = set->items[i].layer;
        bool seen = false;
        for (int64_t k = 0; k < i && !seen; ++k)
            seen = strcmp(set->items[k].layer, layer) == 0;
        if (seen)
            continue;
        cblob_blob **blobs = NULL;
        int64_t count = 0;
        status = gather_layer(context, set, layer, &blobs, &count);
        const char *type = types != NULL ? types(types_context, layer) : NULL;
        if (status == CBLOB_OK)
            status = cblob_model_add_layer(model, layer, type != NULL ? type : "", blobs, count);
        for (int64_t k = 0; k < count; ++k)
            cblob_blob_destroy(blobs[k]);
        free(blobs);
    }
    if (status != CBLOB_OK) {
        cblob_model_destroy(model);
        return status;
    }
    *out = model;
    return CBLOB_OK;
}
