/* SPDX-License-Identifier: BSD-2-Clause */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_common.h"
#include "alloc.h"
#include "model_names.h"
#include "neoml/neoml.h"
#include "status.h"
#include "utf8.h"

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
    if ((int64_t)model->layers[layer].num_blobs != 3)
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
    const char *type = model->layers[layer].type;
    if (is_batch_norm(type) && !batch_norm_fits(model, layer))
        return NULL;
    return type_torch_name(type, index);
}

/* Whether blob `index` of a layer is exported: BatchNorm's scale factor (blob 2) is applied to
 * the statistics, not exported, when PyTorch names are asked for. */
static bool exported(const cblob_model *model, int64_t layer, int64_t index, bool torch_names)
{
    return !(torch_names && index == 2 && is_batch_norm(model->layers[layer].type) &&
             batch_norm_fits(model, layer));
}

static bool torch_unmapped(const cblob_model *model, int64_t layer)
{
    for (int64_t j = 0; j < (int64_t)model->layers[layer].num_blobs; ++j)
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

/* ---- keys -------------------------------------------------------------------------------------- */

/* A key, always UTF-8 (safetensors' JSON and the npz members' names need it): a byte of a layer
 * name that is not becomes U+FFFD, as the readers' matching (cb_model_layer_for_key) expects. */
static cblob_status make_key(cb_tensor_list *list, const cb_tensor *t, char **key, size_t *capacity)
{
    const cb_layer *layer = &list->model->layers[t->layer];
    const char *torch = t->torch ? type_torch_name(layer->type, t->index) : NULL;
    const size_t name_size = cb_utf8_repaired_length(layer->name, strlen(layer->name));
    const size_t size = name_size + (torch != NULL ? strlen(torch) : 0) + 64;
    if (size > *capacity) {
        char *grown = cb_realloc(*key, size);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte key", size);
        *key = grown;
        *capacity = size;
    }
    cb_utf8_repair(layer->name, strlen(layer->name), *key);
    char *at = *key + name_size;
    const size_t room = size - name_size;
    int used = list->repeats[t->layer] ? snprintf(at, room, "@%" PRId64, t->layer) : 0;
    if (torch != NULL)
        used += snprintf(at + used, room - (size_t)used, "%c%s", list->separator, torch);
    else
        used += snprintf(at + used, room - (size_t)used, "%c%" PRIu32, list->separator, t->index);
    if (t->part == CBLOB_PART_DIFF)
        snprintf(at + used, room - (size_t)used, "%sdiff", list->separator == '/' ? "/" : ".");
    return CBLOB_OK;
}

cblob_status cb_tensor_key(cb_tensor_list *list, const cb_tensor *tensor, const char **out)
{
    CB_TRY(make_key(list, tensor, &list->key, &list->key_capacity));
    *out = list->key;
    return CBLOB_OK;
}

static uint32_t key_hash(const char *key)
{
    uint32_t hash = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; ++p)
        hash = (hash ^ *p) * 16777619u;
    return hash;
}

/* A key's slot: its hash, and 1 + the tensor's position (0: a free slot). */
typedef struct key_slot {
    uint32_t hash, tensor;
} key_slot;

/* Two tensors of one key would lose one in the file (a layer named "conv@3" beside a repeated
 * "conv" at layer 3; two names that differ only in bytes that are not UTF-8): refused. Keys are
 * made again to compare them, not kept. */
static cblob_status check_unique_keys(cb_tensor_list *list)
{
    if (list->count > UINT32_MAX - 1)
        return cb_fail(CBLOB_ERR_OVERFLOW, "%" PRId64 " tensors are more than an export can name", list->count);
    size_t capacity = 16;
    while (capacity < 2 * (size_t)list->count)
        capacity *= 2;
    key_slot *slots = cb_calloc(capacity, sizeof *slots);
    char *other = NULL;
    size_t other_capacity = 0;
    cblob_status status = slots != NULL ? CBLOB_OK : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to check %" PRId64 " keys",
                                                             list->count);
    for (int64_t i = 0; status == CBLOB_OK && i < list->count; ++i) {
        const char *key = NULL;
        status = cb_tensor_key(list, &list->items[i], &key);
        const uint32_t hash = status == CBLOB_OK ? key_hash(key) : 0;
        size_t at = hash & (capacity - 1);
        for (; status == CBLOB_OK && slots[at].tensor != 0; at = (at + 1) & (capacity - 1)) {
            if (slots[at].hash != hash)
                continue;
            const cb_tensor *held = &list->items[slots[at].tensor - 1];
            status = make_key(list, held, &other, &other_capacity);
            if (status == CBLOB_OK && strcmp(other, key) == 0) {
                const cb_layer *a = &list->model->layers[held->layer], *b = &list->model->layers[list->items[i].layer];
                status = cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                                 "layer %" PRId64 " (\"%.64s\") and layer %" PRId64 " (\"%.64s\") would both be "
                                 "exported as key \"%.200s\", and one would be lost: rename one of them",
                                 held->layer, a->name, list->items[i].layer, b->name, key);
            }
        }
        if (status == CBLOB_OK)
            slots[at] = (key_slot){hash, (uint32_t)i + 1};
    }
    free(other);
    free(slots);
    return status;
}

/* ---- the list of tensors ------------------------------------------------------------------------ */

/* Values converted at a time (a chunk of 2 MiB at most). */
#define CB_CHUNK_ELEMENTS ((int64_t)1 << 18)

void cb_tensor_list_free(cb_tensor_list *list)
{
    free(list->items);
    free(list->repeats);
    free(list->key);
    free(list->chunk);
    *list = (cb_tensor_list){0};
}

cblob_status cb_tensor_facts(const cb_tensor_list *list, const cb_tensor *tensor, cb_blob_facts *out, uint64_t *bytes)
{
    CB_TRY(cb_model_blob_facts(list->model, tensor->layer, tensor->index, out));
    if (tensor->torch)
        torch_shape(list->model->layers[tensor->layer].type, tensor->index, out);
    *bytes = (uint64_t)out->count * cb_dtype_find(out->dtype)->size;
    return CBLOB_OK;
}

static cblob_status add_layer_tensors(const cblob_model *model, int64_t layer, bool torch_names, bool diffs,
                                      cb_tensor_list *list)
{
    const cb_layer *found = &model->layers[layer];
    const bool batch_norm = is_batch_norm(found->type);
    for (uint32_t j = 0; j < found->num_blobs; ++j) {
        if (!exported(model, layer, j, torch_names))
            continue;
        const bool torch = torch_names && torch_name(model, layer, j) != NULL;
        const cb_tensor data = {.layer = layer, .index = j, .part = CBLOB_PART_DATA,
                                .kind = torch && batch_norm ? CB_TENSOR_SCALED : CB_TENSOR_PLAIN, .torch = torch};
        list->items[list->count++] = data;
        cb_blob_facts facts;
        CB_TRY(cb_model_blob_facts(model, layer, j, &facts));
        if (diffs && facts.has_diff) {
            cb_tensor diff = data;
            diff.part = CBLOB_PART_DIFF;
            list->items[list->count++] = diff;
        }
    }
    return CBLOB_OK;
}

cblob_status cb_tensor_list_make(const cblob_model *model, char separator, bool torch_names, bool diffs,
                                 cb_tensor_list *out)
{
    int64_t blobs = 0;
    for (int64_t i = 0; i < model->num_layers; ++i)
        blobs += model->layers[i].num_blobs;
    cb_tensor_list list = {.model = model, .separator = separator,
                           .items = cb_malloc(((size_t)(diffs ? 2 * blobs : blobs) + 1) * sizeof(cb_tensor))};
    cblob_status status = list.items == NULL ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " tensors", blobs)
                                             : cb_model_repeats(model, &list.repeats);
    for (int64_t i = 0; status == CBLOB_OK && i < model->num_layers; ++i)
        status = add_layer_tensors(model, i, torch_names, diffs, &list);
    if (status == CBLOB_OK)
        status = check_unique_keys(&list);
    if (status == CBLOB_OK) {
        /* As many elements as the largest tensor has, up to a chunk's worth. */
        int64_t largest = 0;
        for (int64_t i = 0; status == CBLOB_OK && i < list.count; ++i) {
            cb_blob_facts facts;
            status = cb_model_blob_facts(model, list.items[i].layer, list.items[i].index, &facts);
            largest = status == CBLOB_OK && facts.count > largest ? facts.count : largest;
        }
        list.chunk_elements = largest < CB_CHUNK_ELEMENTS ? largest : CB_CHUNK_ELEMENTS;
        if (status == CBLOB_OK && (list.chunk = cb_malloc((size_t)list.chunk_elements * 8 + 8)) == NULL)
            status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a chunk of %" PRId64 " values", list.chunk_elements);
    }
    if (status != CBLOB_OK) {
        cb_tensor_list_free(&list);
        return status;
    }
    *out = list;
    return CBLOB_OK;
}

/* ---- a tensor's bytes --------------------------------------------------------------------------- */

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

cblob_status cb_tensor_write(const cb_tensor_list *list, const cblob_model *model, const cb_tensor *tensor,
                             const cb_blob_facts *facts, cb_sink *sink)
{
    const size_t element = cb_dtype_find(facts->dtype)->size;
    const uint64_t bytes = (uint64_t)facts->count * element;
    if (sink->kind == CB_SINK_COUNT) {
        cb_sink_skip(sink, bytes);
        return CBLOB_OK;
    }
    const void *whole = NULL;
    if (tensor->kind == CB_TENSOR_PLAIN)
        CB_TRY(cb_model_blob_values(model, tensor->layer, tensor->index, (cblob_part)tensor->part, &whole));
    if (whole != NULL || bytes == 0) { /* straight from the blob's memory */
        cb_sink_write(sink, whole, (size_t)bytes);
        return sink->status;
    }
    double factor = 1;
    if (tensor->kind == CB_TENSOR_SCALED)
        CB_TRY(scale_factor(model, tensor, &factor));
    void *own = list == NULL ? cb_malloc((size_t)CB_CHUNK_ELEMENTS * element) : NULL;
    void *chunk = list != NULL ? list->chunk : own;
    const int64_t room = list != NULL ? list->chunk_elements : CB_CHUNK_ELEMENTS;
    if (chunk == NULL || room <= 0)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a chunk of values");
    cblob_status status = CBLOB_OK;
    for (int64_t done = 0; status == CBLOB_OK && done < facts->count; done += room) {
        const int64_t n = facts->count - done < room ? facts->count - done : room;
        status = cb_model_blob_read(model, tensor->layer, tensor->index, (cblob_part)tensor->part, done, n, chunk);
        if (status == CBLOB_OK && tensor->kind == CB_TENSOR_SCALED)
            scale(chunk, facts->dtype, n, factor);
        if (status == CBLOB_OK)
            cb_sink_write(sink, chunk, (size_t)n * element);
    }
    free(own);
    return status == CBLOB_OK ? sink->status : status;
}

/* ---- JSON text, streamed ------------------------------------------------------------------------- */

/* One level of JSON string escaping of text[0, length), as Jansson's dump escapes (control
 * characters as \uXXXX with upper-case digits; '/' and non-ASCII as they are), into out at
 * `quoting` - 1 further levels. */
static void escape(cb_json_out *out, int level, const char *text, size_t length);

static void emit(cb_json_out *out, int level, const char *text, size_t length)
{
    if (level == 0)
        cb_sink_write(out->sink, text, length);
    else
        escape(out, level, text, length);
}

static void escape(cb_json_out *out, int level, const char *text, size_t length)
{
    size_t run = 0;
    for (size_t i = 0; i < length; ++i) {
        const unsigned char c = (unsigned char)text[i];
        char sequence[8];
        const char *replaced = NULL;
        switch (c) {
        case '\\': replaced = "\\\\"; break;
        case '"': replaced = "\\\""; break;
        case '\b': replaced = "\\b"; break;
        case '\f': replaced = "\\f"; break;
        case '\n': replaced = "\\n"; break;
        case '\r': replaced = "\\r"; break;
        case '\t': replaced = "\\t"; break;
        default:
            if (c < 0x20) {
                snprintf(sequence, sizeof sequence, "\\u%04X", (unsigned)c);
                replaced = sequence;
            }
        }
        if (replaced == NULL)
            continue;
        emit(out, level - 1, text + run, i - run);
        emit(out, level - 1, replaced, strlen(replaced));
        run = i + 1;
    }
    emit(out, level - 1, text + run, length - run);
}

void cb_json_raw(cb_json_out *out, const char *text)
{
    emit(out, out->quoting, text, strlen(text));
}

void cb_json_string(cb_json_out *out, const char *bytes, size_t length)
{
    emit(out, out->quoting, "\"", 1);
    if (cb_utf8_valid(bytes, length)) {
        escape(out, out->quoting + 1, bytes, length);
    } else {
        /* Repaired in pieces: a bad byte's U+FFFD is never split from its neighbours' escaping. */
        char repaired[3 * 256];
        for (size_t done = 0; done < length;) {
            size_t n = length - done < 256 ? length - done : 256;
            while (n < length - done && n > 0 && ((unsigned char)bytes[done + n] & 0xc0) == 0x80)
                --n; /* a character is not cut */
            if (n == 0)
                n = length - done < 4 ? length - done : 4;
            const size_t size = cb_utf8_repaired_length(bytes + done, n);
            cb_utf8_repair(bytes + done, n, repaired);
            escape(out, out->quoting + 1, repaired, size);
            done += n;
        }
    }
    emit(out, out->quoting, "\"", 1);
}

void cb_json_integer(cb_json_out *out, int64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRId64, value);
    cb_json_raw(out, text);
}

/* ---- models from named tensors ------------------------------------------------------------------- */

typedef struct noted_tensor {
    int64_t group, index;
    bool diff, running_stat;
} noted_tensor;

typedef struct tensor_group {
    int64_t blobs;   /* 1 + the highest index of its tensors */
    int64_t values;  /* its data tensors */
    bool running;    /* a PyTorch running statistic among them */
} tensor_group;

cblob_status cb_tensor_set_note(cb_tensor_set *set, const char *layer, size_t layer_length, int64_t index, bool diff,
                                bool running_stat, const char *key)
{
    if (memchr(layer, 0, layer_length) != NULL)
        return cb_fail(CBLOB_ERR_PARSE, "key \"%.64s\": its layer name holds a NUL byte", key);
    if (set->count == set->capacity) {
        const int64_t next = set->capacity > 0 ? 2 * set->capacity : 16;
        noted_tensor *grown = cb_realloc(set->items, (size_t)next * sizeof *grown);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " tensors", next);
        set->items = grown;
        set->capacity = next;
    }
    if (set->num_groups == set->group_capacity) {
        const int64_t next = set->group_capacity > 0 ? 2 * set->group_capacity : 16;
        tensor_group *grown = cb_realloc(set->groups, (size_t)next * sizeof *grown);
        char **names = grown != NULL ? cb_realloc(set->names, (size_t)next * sizeof *names) : NULL;
        if (grown != NULL)
            set->groups = grown;
        if (names == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", next);
        set->names = names;
        set->group_capacity = next;
        /* The index points at the names' array: made again over the grown one. */
        cb_name_index grown_index;
        CB_TRY(cb_name_index_init((const char *const *)set->names, next, false, &grown_index));
        for (int64_t g = 0; g < set->num_groups; ++g)
            (void)cb_name_index_put(&grown_index, g);
        cb_name_index_free(&set->index);
        set->index = grown_index;
    }
    int64_t group = cb_name_index_find(&set->index, layer, layer_length);
    if (group < 0) {
        group = set->num_groups;
        char *name = cb_malloc(layer_length + 1);
        if (name == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for key \"%.64s\"", key);
        memcpy(name, layer, layer_length);
        name[layer_length] = '\0';
        set->names[group] = name;
        set->groups[group] = (tensor_group){0};
        ++set->num_groups;
        (void)cb_name_index_put(&set->index, group);
    }
    tensor_group *g = &set->groups[group];
    g->blobs = index + 1 > g->blobs ? index + 1 : g->blobs;
    g->values += !diff;
    g->running = g->running || running_stat;
    set->items[set->count++] = (noted_tensor){group, index, diff, running_stat};
    return CBLOB_OK;
}

void cb_tensor_set_free(cb_tensor_set *set)
{
    for (int64_t g = 0; g < set->num_groups; ++g)
        free(set->names[g]);
    free(set->names);
    free(set->groups);
    free(set->items);
    cb_name_index_free(&set->index);
    if (set->model != NULL)
        cb_model_free(set->model);
    *set = (cb_tensor_set){0};
}

/* The blobs of a layer: numbered from 0 without gaps. An index past the layer's tensors names a
 * blob that cannot be there, and must not size anything ("a.2000000000" in a 97-byte file). A
 * BatchNorm of PyTorch's running statistics gets Caffe's scale factor as blob 2. */
static cblob_status layer_blobs(const cb_tensor_set *set, int64_t g, int64_t *out)
{
    const tensor_group *group = &set->groups[g];
    int64_t count = group->blobs;
    if (count > group->values + (group->running ? 1 : 0) && count > (group->running ? 3 : 0))
        return cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has blob %" PRId64 " but only %" PRId64 " tensor%s",
                       set->names[g], count - 1, group->values, group->values == 1 ? "" : "s");
    if (group->running && count < 3)
        count = 3;
    *out = count;
    return CBLOB_OK;
}

cblob_status cb_tensor_set_layout(cb_tensor_set *set, cblob_context *context, const char *name, cb_type_lookup *types,
                                  void *types_context)
{
    CB_TRY(cb_model_create(context, CBLOB_NET_FORMAT_V2, name, &set->model));
    cb_layer_draft draft;
    cb_layer_draft_init(&draft);
    cblob_status status = CBLOB_OK;
    for (int64_t g = 0; status == CBLOB_OK && g < set->num_groups; ++g) {
        int64_t count = 0;
        status = layer_blobs(set, g, &count);
        const char *type = types != NULL ? types(types_context, set->names[g]) : NULL;
        if (status == CBLOB_OK)
            status = cb_model_draft_layer(set->model, set->names[g], type != NULL ? type : "", count, &draft);
        if (status == CBLOB_OK)
            status = cb_model_keep_layer(set->model, &draft, set->model->top.size);
    }
    cb_layer_draft_free(&draft);
    return status;
}

/* Data tensor i's blob takes its dtype and shape; `kept` values of dims are kept (num_axes, and
 * more where the blob's flags say what follows them). */
static cblob_status take_shape(cb_tensor_set *set, int64_t i, cblob_dtype dtype, int32_t num_axes, const int64_t *dims,
                               int32_t kept, cb_model_blob **out)
{
    const noted_tensor *t = &set->items[i];
    cb_model_blob *blob = &set->model->layers[t->group].blobs[t->index];
    if (blob->dtype != 0)
        return cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has blob %" PRId64 " twice", set->names[t->group], t->index);
    blob->dtype = (uint8_t)dtype;
    blob->num_axes = (uint8_t)num_axes;
    CB_TRY(cb_model_keep_dims(set->model, dims, kept, &blob->dims));
    *out = blob;
    return CBLOB_OK;
}

bool cb_tensor_set_is_diff(const cb_tensor_set *set, int64_t i)
{
    return set->items[i].diff;
}

cblob_status cb_tensor_set_defer(cb_tensor_set *set, int64_t i, cblob_dtype dtype, int32_t num_axes,
                                 const int64_t *dims, uint64_t file_offset, uint8_t file_flags, uint32_t crc,
                                 uint64_t compressed, uint64_t skip)
{
    if (set->items[i].diff)
        return cb_fail(CBLOB_ERR_INTERNAL, "a diff left in the file");
    if (compressed > INT64_MAX || skip > INT64_MAX || num_axes > CBLOB_MAX_AXES)
        return cb_fail(CBLOB_ERR_INTERNAL, "a deflated member's sizes do not fit");
    int64_t kept[CBLOB_MAX_AXES + 2];
    if (num_axes > 0)
        memcpy(kept, dims, (size_t)num_axes * sizeof *kept);
    kept[num_axes] = (int64_t)compressed;
    kept[num_axes + 1] = (int64_t)skip;
    cb_model_blob *blob = NULL;
    CB_TRY(take_shape(set, i, dtype, num_axes, kept, num_axes + (file_flags & CB_BLOB_FILE_DEFLATED ? 2 : 0), &blob));
    blob->file_offset = file_offset;
    blob->values_crc = crc;
    blob->flags |= (uint8_t)(CB_BLOB_UNREAD | file_flags);
    return CBLOB_OK;
}

cblob_status cb_tensor_set_place(cb_tensor_set *set, int64_t i, cblob_dtype dtype, int32_t num_axes,
                                 const int64_t *dims, void **out, cblob_dtype *out_dtype)
{
    const noted_tensor *t = &set->items[i];
    cblob_model *model = set->model;
    cb_model_blob *blob = &model->layers[t->group].blobs[t->index];
    const char *layer = set->names[t->group];
    if (!t->diff) {
        CB_TRY(take_shape(set, i, dtype, num_axes, dims, num_axes, &blob));
        CB_TRY(cb_model_alloc_array(model, cb_model_blob_part_bytes(blob, CBLOB_PART_DATA), CB_BLOB_DATA_HOST,
                                    &blob->data, &blob->flags));
        *out = blob->data;
        *out_dtype = dtype;
        return CBLOB_OK;
    }
    if (blob->dtype == 0)
        return cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has a diff for blob %" PRId64 " but no blob", layer, t->index);
    bool same = num_axes == blob->num_axes;
    for (int32_t a = 0; same && a < num_axes; ++a)
        same = dims[a] == blob->dims[a];
    if (!same)
        return cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" blob %" PRId64 ": the diff's shape is not the blob's", layer,
                       t->index);
    if (blob->diff == NULL) {
        blob->diff_dtype = blob->dtype;
        CB_TRY(cb_model_alloc_array(model, cb_model_blob_part_bytes(blob, CBLOB_PART_DIFF), CB_BLOB_DIFF_HOST,
                                    &blob->diff, &blob->flags));
    }
    *out = blob->diff;
    *out_dtype = (cblob_dtype)blob->dtype;
    return CBLOB_OK;
}

cblob_status cb_tensor_set_finish(cb_tensor_set *set, cblob_model **out)
{
    cblob_model *model = set->model;
    for (int64_t g = 0; g < model->num_layers; ++g) {
        cb_layer *layer = &model->layers[g];
        for (uint32_t j = 0; j < layer->num_blobs; ++j) {
            cb_model_blob *blob = &layer->blobs[j];
            if (blob->dtype != 0)
                continue;
            if (!set->groups[g].running || j != 2)
                return cb_fail(CBLOB_ERR_PARSE, "layer \"%.64s\" has blob %" PRId64 " but no blob %" PRIu32,
                               layer->name, set->groups[g].blobs - 1, j);
            /* BatchNorm's scale factor, 1: the statistics are plain values. */
            static const int64_t one[1] = {1};
            blob->dtype = CBLOB_DTYPE_FLOAT32;
            blob->num_axes = 1;
            CB_TRY(cb_model_keep_dims(model, one, 1, &blob->dims));
            CB_TRY(cb_model_alloc_array(model, 4, CB_BLOB_DATA_HOST, &blob->data, &blob->flags));
            *(float *)blob->data = 1.0f;
        }
    }
    *out = model;
    set->model = NULL;
    return CBLOB_OK;
}
