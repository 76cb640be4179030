/* SPDX-License-Identifier: BSD-2-Clause */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "model_layers.h"
#include "name_index.h"
#include "neoml/neoml.h"
#include "utf8.h"
#include "status.h"

/* ---- PyTorch names ------------------------------------------------------------------------------ */

typedef struct torch_type_names {
    const char *type;
    const char *names[2];
    int32_t ranks[2]; /* the axes PyTorch's tensor has (a V1 blob's legacy 4 axes are more) */
} torch_type_names;

/* Layer types (V2 and V1 spellings) whose blobs PyTorch names. */
static const torch_type_names torch_types[] = {
    {"Convolution", {"weight", "bias"}, {4, 1}},   {"Deconvolution", {"weight", "bias"}, {4, 1}},
    {"InnerProduct", {"weight", "bias"}, {2, 1}},  {"CONVOLUTION", {"weight", "bias"}, {4, 1}},
    {"DECONVOLUTION", {"weight", "bias"}, {4, 1}}, {"INNER_PRODUCT", {"weight", "bias"}, {2, 1}},
    {"Scale", {"weight", "bias"}, {1, 1}},         {"PReLU", {"weight", NULL}, {1, 0}},
    {"BatchNorm", {"running_mean", "running_var"}, {1, 1}},
};

static const torch_type_names *torch_type(const char *type)
{
    for (size_t i = 0; i < sizeof torch_types / sizeof *torch_types; ++i)
        if (strcmp(torch_types[i].type, type) == 0)
            return &torch_types[i];
    return NULL;
}

static const char *type_torch_name(const char *type, int64_t index)
{
    const torch_type_names *names = torch_type(type);
    return names != NULL && index >= 0 && index < 2 ? names->names[index] : NULL;
}

/* PyTorch's shape of a blob Caffe stores with legacy 4-D dims (V1 nets: an InnerProduct weight
 * (1, 1, 64, 1024) is PyTorch's (64, 1024), a bias (1, 1, 1, 64) its (64,)): the leading 1s past
 * PyTorch's rank dropped, which load_state_dict needs. cblob_model_replace_blobs takes either
 * back, as Caffe's legacy ShapeEquals does. */
static void torch_shape(const char *type, int64_t index, cb_blob_facts *facts)
{
    const torch_type_names *names = torch_type(type);
    const int32_t rank = names != NULL && index >= 0 && index < 2 ? names->ranks[index] : 0;
    int32_t drop = 0;
    while (rank > 0 && facts->num_axes - drop > rank && facts->dims[drop] == 1)
        ++drop;
    memmove(facts->dims, facts->dims + drop, (size_t)(facts->num_axes - drop) * sizeof *facts->dims);
    facts->num_axes -= drop;
}

static bool is_batch_norm(const char *type)
{
    return strcmp(type, "BatchNorm") == 0;
}

/* A BatchNorm layer PyTorch's names fit: Caffe's three float blobs (mean, variance, and a scale
 * factor with a value). Any other keeps <layer>.<index> for every blob. */
static bool batch_norm_fits(const cblob_model *model, int64_t layer)
{
    if (cb_record_num_blobs(model->layers[layer]) != 3)
        return false;
    for (int64_t j = 0; j < 3; ++j) {
        cb_blob_facts facts;
        if (cb_model_blob_facts(model, layer, j, &facts) != CBLOB_OK || !cb_dtype_find(facts.dtype)->is_float ||
            (j == 2 && facts.count < 1))
            return false;
    }
    return true;
}

/* The PyTorch name of a layer's blob, or NULL. */
static const char *torch_name(const cblob_model *model, int64_t layer, int64_t index)
{
    const char *type = cb_record_type(model->layers[layer]);
    if (is_batch_norm(type) && !batch_norm_fits(model, layer))
        return NULL;
    return type_torch_name(type, index);
}

/* Whether blob `index` of a layer is exported: BatchNorm's scale factor (blob 2) is applied to
 * the statistics, not exported, when PyTorch names are asked for. */
static bool exported(const cblob_model *model, int64_t layer, int64_t index, bool torch_names)
{
    return !(torch_names && index == 2 && is_batch_norm(cb_record_type(model->layers[layer])) &&
             batch_norm_fits(model, layer));
}

static bool torch_unmapped(const cblob_model *model, int64_t layer)
{
    for (int64_t j = 0; j < cb_record_num_blobs(model->layers[layer]); ++j)
        if (exported(model, layer, j, true) && torch_name(model, layer, j) == NULL)
            return true;
    return false;
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
    for (int64_t i = 0; i < model->num_layers; ++i)
        count += torch_unmapped(model, i);
    if (out_layers != NULL && count > max_layers)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "out_layers has room for %" PRId64 " of %" PRId64 " layers", max_layers,
                       count);
    for (int64_t i = 0, written = 0; out_layers != NULL && i < model->num_layers; ++i)
        if (torch_unmapped(model, i))
            out_layers[written++] = i;
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

/* A key, always UTF-8 (safetensors' JSON and the npz members' names need it): a byte of a layer
 * name that is not becomes U+FFFD, as the readers' matching (cb_model_layer_for_key) expects. */
static cblob_status make_key(const char *layer, const char *repeat_suffix, char separator, const char *what,
                             bool diff, char **out)
{
    const size_t name_size = cb_utf8_repaired_length(layer, strlen(layer));
    const size_t size = name_size + strlen(repeat_suffix) + strlen(what) + 16;
    char *key = malloc(size);
    if (key == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte key", size);
    cb_utf8_repair(layer, strlen(layer), key);
    snprintf(key + name_size, size - name_size, "%s%c%s%s%s", repeat_suffix, separator, what,
             diff ? (separator == '/' ? "/" : ".") : "", diff ? "diff" : "");
    *out = key;
    return CBLOB_OK;
}

/* Two tensors of one key would lose one in the file (a layer named "conv@3" beside a repeated
 * "conv" at layer 3; two names that differ only in bytes that are not UTF-8): refused. */
static cblob_status check_unique_keys(const cblob_model *model, const cb_tensor_list *list)
{
    const char **keys = malloc(((size_t)list->count + 1) * sizeof *keys);
    cb_name_index index = {0};
    cblob_status status = keys != NULL ? CBLOB_OK : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " keys",
                                                            list->count);
    for (int64_t i = 0; status == CBLOB_OK && i < list->count; ++i)
        keys[i] = list->items[i].key;
    if (status == CBLOB_OK)
        status = cb_name_index_init(keys, list->count, false, &index);
    for (int64_t i = 0; status == CBLOB_OK && i < list->count; ++i) {
        const int64_t held = cb_name_index_put(&index, i);
        if (held >= 0) {
            const cb_tensor *a = &list->items[held], *b = &list->items[i];
            status = cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                             "layer %" PRId64 " (\"%.64s\") and layer %" PRId64 " (\"%.64s\") would both be "
                             "exported as key \"%.200s\", and one would be lost: rename one of them",
                             a->layer, cb_record_name(model->layers[a->layer]), b->layer,
                             cb_record_name(model->layers[b->layer]), b->key);
        }
    }
    cb_name_index_free(&index);
    free(keys);
    return status;
}

static cblob_status add_tensor(const cblob_model *model, int64_t layer, int64_t index, cblob_part part, char separator,
                               bool torch_names, const char *suffix, cb_tensor_list *list)
{
    const char *type = cb_record_type(model->layers[layer]);
    cb_tensor *tensor = &list->items[list->count];
    *tensor = (cb_tensor){.layer = layer, .index = index, .part = part};
    CB_TRY(cb_model_blob_facts(model, layer, index, &tensor->facts));
    const char *torch = torch_names ? torch_name(model, layer, index) : NULL;
    if (torch != NULL)
        torch_shape(type, index, &tensor->facts);
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
        if (!exported(model, layer, j, torch_names))
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
    if (status == CBLOB_OK)
        status = check_unique_keys(model, &list);
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
            cb_blob_release(blob);
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " tensors", next);
        }
        set->items = grown;
        set->capacity = next;
    }
    char *copy = malloc(layer_length + 1);
    if (copy == NULL) {
        cb_blob_release(blob);
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
        cb_blob_release(set->items[i].blob);
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
    return cb_convert_elements(&cb_host_device, from->dtype, to->dtype, from->shape.count, source, target);
}

/* The blobs of one layer name, by index, from its tensors (positions in the set): data tensors
 * give the blob, diff tensors its diff. */
static cblob_status gather_layer(cblob_context *context, cb_tensor_set *set, const int64_t *members, int64_t n,
                                 cblob_blob ***out, int64_t *out_count)
{
    const char *layer = set->items[members[0]].layer;
    int64_t count = 0, values = 0;
    bool running = false;
    for (int64_t m = 0; m < n; ++m) {
        const cb_named_tensor *t = &set->items[members[m]];
        count = t->index + 1 > count ? t->index + 1 : count;
        running = running || t->running_stat;
        values += !t->diff;
    }
    /* Blobs are numbered from 0 without gaps: an index past the layer's tensors names a blob that
     * cannot be there, and must not size anything ("a.2000000000" in a 97-byte file). */
    if (count > values + (running ? 1 : 0) && count > (running ? 3 : 0))
        return cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has blob %" PRId64 " but only %" PRId64 " tensor%s", layer,
                       count - 1, values, values == 1 ? "" : "s");
    if (running && count < 3)
        count = 3; /* BatchNorm's scale factor, 1: the statistics are plain values */
    cblob_blob **blobs = calloc((size_t)count + 1, sizeof *blobs);
    if (blobs == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " blobs", count);
    cblob_status status = CBLOB_OK;
    for (int64_t m = 0; status == CBLOB_OK && m < n; ++m) {
        cb_named_tensor *t = &set->items[members[m]];
        if (t->diff)
            continue;
        if (blobs[t->index] != NULL) {
            status = cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has blob %" PRId64 " twice", layer, t->index);
            break;
        }
        blobs[t->index] = t->blob; /* the layer's now */
        t->blob = NULL;
    }
    if (status == CBLOB_OK && running && blobs[2] == NULL) {
        void *factor = NULL;
        status = cb_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){1}, &blobs[2]);
        if (status == CBLOB_OK)
            status = cb_blob_host(blobs[2], CBLOB_PART_DATA, true, &factor);
        if (status == CBLOB_OK)
            *(float *)factor = 1.0f;
    }
    for (int64_t m = 0; status == CBLOB_OK && m < n; ++m) {
        const cb_named_tensor *t = &set->items[members[m]];
        if (!t->diff)
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
            cb_blob_release(blobs[i]);
        free(blobs);
        return status;
    }
    *out = blobs;
    *out_count = count;
    return CBLOB_OK;
}

/* The set's tensors grouped by layer name, in order of each name's first tensor: members holds
 * the positions of group g's tensors at [start[g], start[g + 1]). Linear in the tensors. */
typedef struct tensor_groups {
    int64_t count;
    int64_t *start, *members;
} tensor_groups;

static cblob_status group_tensors(const cb_tensor_set *set, tensor_groups *out)
{
    const size_t n = (size_t)set->count + 1;
    const char **names = malloc(n * sizeof *names);
    int64_t *group = malloc(n * sizeof *group), *start = calloc(n + 1, sizeof *start), *members = malloc(n * sizeof *members);
    cb_name_index index = {0};
    cblob_status status = names != NULL && group != NULL && start != NULL && members != NULL
                              ? CBLOB_OK
                              : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to group %" PRId64 " tensors", set->count);
    for (int64_t i = 0; status == CBLOB_OK && i < set->count; ++i)
        names[i] = set->items[i].layer;
    if (status == CBLOB_OK)
        status = cb_name_index_make(names, set->count, &index);
    int64_t groups = 0;
    /* A name's group is numbered at its first tensor, which the index finds from any of them. */
    for (int64_t i = 0; status == CBLOB_OK && i < set->count; ++i) {
        const int64_t first = cb_name_index_find(&index, names[i], strlen(names[i]));
        group[i] = first == i ? groups++ : group[first];
        ++start[group[i] + 1];
    }
    /* Counting sort: start[g] walks through group g's places as its tensors take them, in set
     * order, and is moved back after. */
    for (int64_t g = 0; status == CBLOB_OK && g < groups; ++g)
        start[g + 1] += start[g];
    for (int64_t i = 0; status == CBLOB_OK && i < set->count; ++i)
        members[start[group[i]]++] = i;
    for (int64_t g = groups; status == CBLOB_OK && g > 0; --g)
        start[g] = start[g - 1];
    if (start != NULL)
        start[0] = 0;
    cb_name_index_free(&index);
    free(names);
    free(group);
    if (status != CBLOB_OK) {
        free(start);
        free(members);
        return status;
    }
    *out = (tensor_groups){groups, start, members};
    return CBLOB_OK;
}

cblob_status cb_tensor_set_model(cblob_context *context, cb_tensor_set *set, const char *name, cb_type_lookup *types,
                                 void *types_context, cblob_model **out)
{
    cblob_model *model = NULL;
    CB_TRY(cb_model_create(context, CBLOB_NET_FORMAT_V2, name, &model));
    tensor_groups groups = {0};
    cblob_status status = group_tensors(set, &groups);
    for (int64_t g = 0; status == CBLOB_OK && g < groups.count; ++g) {
        const int64_t *members = groups.members + groups.start[g];
        const char *layer = set->items[members[0]].layer;
        cblob_blob **blobs = NULL;
        int64_t count = 0;
        status = gather_layer(context, set, members, groups.start[g + 1] - groups.start[g], &blobs, &count);
        const char *type = types != NULL ? types(types_context, layer) : NULL;
        if (status == CBLOB_OK)
            status = cb_model_add_layer(model, layer, type != NULL ? type : "", blobs, count);
        for (int64_t k = 0; k < count; ++k)
            cb_blob_release(blobs[k]);
        free(blobs);
    }
    free(groups.start);
    free(groups.members);
    if (status != CBLOB_OK) {
        cb_model_free(model);
        return status;
    }
    *out = model;
    return CBLOB_OK;
}
