/* SPDX-License-Identifier: BSD-2-Clause */
/* safetensors (https://github.com/huggingface/safetensors, format of 0.4): an 8-byte little-endian
 * header length, a JSON header padded with spaces to 8 bytes, then every tensor's bytes with no
 * holes. Tensors are written 8-byte ones first, so that every tensor starts aligned to its
 * element, as the reference writer does.
 *
 * The header is streamed both ways: written as JSON text straight to the output (measured first:
 * its length comes before it), read in place with json_scan.h (twice: the tensors' names, then
 * their shapes and values), so neither holds a tree of the tensors. */
#define _GNU_SOURCE /* qsort_r */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "export_common.h"
#include "half.h"
#include "identify.h"
#include "json_scan.h"
#include "model_names.h"
#include "neoml/neoml.h"
#include "status.h"
#include "utf8.h"

#define CB_SAFETENSORS_FLAGS (CBLOB_EXPORT_DIFF | CBLOB_EXPORT_TORCH_NAMES)
/* The reference reader refuses headers over 100 MB. */
#define CB_SAFETENSORS_MAX_HEADER ((uint64_t)100000000)

static const char *dtype_name(cblob_dtype dtype)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT64: return "F64";
    case CBLOB_DTYPE_INT32: return "I32";
    case CBLOB_DTYPE_UINT32: return "U32";
    default: return "F32";
    }
}

/* ---- writing -------------------------------------------------------------------------------- */

typedef struct safetensors_output {
    const cblob_model *model;
    int32_t flags;
} safetensors_output;

/* A layer's key in "layer_types": its name as UTF-8, `@<index>` for a repeated name. */
typedef struct layer_keys {
    const cblob_model *model;
    const uint8_t *repeats;
    char *a, *b;
    size_t a_capacity, b_capacity;
    bool failed; /* a key found no memory while sorting */
} layer_keys;

static const char *layer_key(layer_keys *keys, int64_t layer, char **buffer, size_t *capacity)
{
    const char *name = keys->model->layers[layer].name;
    const size_t length = cb_utf8_repaired_length(name, strlen(name)), size = length + 24;
    if (size > *capacity) {
        char *grown = cb_realloc(*buffer, size);
        if (grown == NULL)
            return NULL;
        *buffer = grown;
        *capacity = size;
    }
    cb_utf8_repair(name, strlen(name), *buffer);
    (*buffer)[length] = '\0';
    if (keys->repeats[layer])
        snprintf(*buffer + length, size - length, "@%" PRId64, layer);
    return *buffer;
}

/* Jansson's JSON_SORT_KEYS order: by the keys' bytes. A key without memory fails the sort. */
static int by_key(const void *x, const void *y, void *context)
{
    layer_keys *keys = context;
    const char *a = layer_key(keys, *(const int64_t *)x, &keys->a, &keys->a_capacity);
    const char *b = layer_key(keys, *(const int64_t *)y, &keys->b, &keys->b_capacity);
    keys->failed |= a == NULL || b == NULL;
    return a == NULL || b == NULL ? 0 : strcmp(a, b);
}

/* The layers "layer_types" names, sorted by key, with room for the longest key: made before the
 * first byte is written, so that writing allocates nothing and a failure leaves a caller's
 * buffer untouched. */
typedef struct sorted_layers {
    int64_t *layers, count;
    layer_keys keys;
} sorted_layers;

static void sorted_layers_free(sorted_layers *types)
{
    free(types->keys.a);
    free(types->keys.b);
    free(types->layers);
}

static cblob_status sorted_layers_make(const cblob_model *model, const uint8_t *repeats, sorted_layers *out)
{
    sorted_layers types = {.layers = cb_malloc(((size_t)model->num_layers + 1) * sizeof *types.layers),
                         .keys = {.model = model, .repeats = repeats}};
    if (types.layers == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", model->num_layers);
    for (int64_t i = 0; i < model->num_layers; ++i)
        if (model->layers[i].num_blobs > 0)
            types.layers[types.count++] = i;
    qsort_r(types.layers, (size_t)types.count, sizeof *types.layers, by_key, &types.keys);
    for (int64_t i = 0; i < types.count && !types.keys.failed; ++i)
        types.keys.failed = layer_key(&types.keys, types.layers[i], &types.keys.a, &types.keys.a_capacity) == NULL;
    if (types.keys.failed) {
        sorted_layers_free(&types);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the layers' keys");
    }
    *out = types;
    return CBLOB_OK;
}

/* "layer_types": each exported layer's type by the layer part of its keys, as JSON text (sorted
 * by key) inside a JSON string. */
static void write_layer_types(sorted_layers *types, cb_json_out *out)
{
    cb_json_raw(out, "\"");
    ++out->quoting;
    cb_json_raw(out, "{");
    for (int64_t i = 0; i < types->count; ++i) {
        /* Room for the longest key was made: no allocation, no failure. */
        const char *key = layer_key(&types->keys, types->layers[i], &types->keys.a, &types->keys.a_capacity);
        const char *type = types->keys.model->layers[types->layers[i]].type;
        if (i > 0)
            cb_json_raw(out, ",");
        cb_json_string(out, key, strlen(key));
        cb_json_raw(out, ":");
        cb_json_string(out, type, strlen(type));
    }
    cb_json_raw(out, "}");
    --out->quoting;
    cb_json_raw(out, "\"");
}

/* The order tensors are written in: 8-byte elements first, then the others, each in list order. */
static bool in_first_pass(const cb_blob_facts *facts)
{
    return cb_dtype_find(facts->dtype)->size == 8;
}

static cblob_status write_entry(cb_tensor_list *list, const cb_tensor *t, const cb_blob_facts *facts, uint64_t begin,
                                uint64_t bytes, cb_json_out *out)
{
    const char *key = NULL;
    CB_TRY(cb_tensor_key(list, t, &key));
    cb_json_raw(out, ",");
    cb_json_string(out, key, strlen(key));
    cb_json_raw(out, ":{\"dtype\":\"");
    cb_json_raw(out, dtype_name(facts->dtype));
    cb_json_raw(out, "\",\"shape\":[");
    for (int32_t a = 0; a < facts->num_axes; ++a) {
        if (a > 0)
            cb_json_raw(out, ",");
        cb_json_integer(out, facts->dims[a]);
    }
    cb_json_raw(out, "],\"data_offsets\":[");
    cb_json_integer(out, (int64_t)begin);
    cb_json_raw(out, ",");
    cb_json_integer(out, (int64_t)(begin + bytes));
    cb_json_raw(out, "]}");
    return CBLOB_OK;
}

/* The header's JSON: the metadata, then each tensor (in the model's order, so that a reader sees
 * the layers as they were) with its place in the data (in the order of the passes). */
static cblob_status write_header(cb_tensor_list *list, sorted_layers *types, cb_sink *sink)
{
    const cblob_model *model = list->model;
    uint64_t first_pass = 0;
    for (int64_t i = 0; i < list->count; ++i) {
        cb_blob_facts facts;
        uint64_t bytes = 0;
        CB_TRY(cb_tensor_facts(list, &list->items[i], &facts, &bytes));
        first_pass += in_first_pass(&facts) ? bytes : 0;
    }
    cb_json_out out = {sink, 0};
    const char *name = model->name != NULL ? model->name : "";
    cb_json_raw(&out, "{\"__metadata__\":{\"name\":");
    cb_json_string(&out, name, strlen(name));
    cb_json_raw(&out, model->format == CBLOB_NET_FORMAT_V1 ? ",\"format\":\"V1\",\"layer_types\":"
                                                           : ",\"format\":\"V2\",\"layer_types\":");
    write_layer_types(types, &out);
    cb_json_raw(&out, "}");
    uint64_t offsets[2] = {0, first_pass};
    for (int64_t i = 0; i < list->count; ++i) {
        cb_blob_facts facts;
        uint64_t bytes = 0;
        CB_TRY(cb_tensor_facts(list, &list->items[i], &facts, &bytes));
        uint64_t *offset = &offsets[in_first_pass(&facts) ? 0 : 1];
        CB_TRY(write_entry(list, &list->items[i], &facts, *offset, bytes, &out));
        *offset += bytes;
    }
    cb_json_raw(&out, "}");
    return sink->status;
}

static cblob_status emit_safetensors(const void *what, cb_sink *sink)
{
    const safetensors_output *output = what;
    cb_tensor_list list;
    CB_TRY(cb_tensor_list_make(output->model, '.', output->flags & CBLOB_EXPORT_TORCH_NAMES,
                               output->flags & CBLOB_EXPORT_DIFF, &list));
    sorted_layers types;
    cblob_status status = sorted_layers_make(output->model, list.repeats, &types);
    if (status != CBLOB_OK) {
        cb_tensor_list_free(&list);
        return status;
    }
    cb_sink counter;
    cb_sink_count(&counter);
    status = write_header(&list, &types, &counter);
    if (status == CBLOB_OK && (counter.size + 7) / 8 * 8 > CB_SAFETENSORS_MAX_HEADER)
        /* Readers (cblob's, the reference one) refuse such a file: it is not written. */
        status = cb_fail(CBLOB_ERR_OVERFLOW, "the safetensors header would take %llu bytes, more than the %llu a "
                         "reader takes (%lld tensors)", (unsigned long long)counter.size,
                         (unsigned long long)CB_SAFETENSORS_MAX_HEADER, (long long)list.count);
    if (status == CBLOB_OK) {
        const uint64_t length = counter.size, padded = (length + 7) / 8 * 8;
        if (sink->progress != NULL) { /* the call's progress is told the file's size */
            uint64_t total = 8 + padded;
            for (int64_t i = 0; i < list.count && status == CBLOB_OK; ++i) {
                cb_blob_facts facts;
                uint64_t bytes = 0;
                status = cb_tensor_facts(&list, &list.items[i], &facts, &bytes);
                total += bytes;
            }
            cb_sink_expect(sink, total);
        }
        uint8_t size_bytes[8];
        for (int i = 0; i < 8; ++i)
            size_bytes[i] = (uint8_t)(padded >> (8 * i));
        cb_sink_write(sink, size_bytes, 8);
        status = write_header(&list, &types, sink);
        cb_sink_write(sink, "        ", (size_t)(padded - length));
    }
    for (int pass = 0; pass < 2 && status == CBLOB_OK; ++pass)
        for (int64_t i = 0; i < list.count && status == CBLOB_OK; ++i) {
            cb_blob_facts facts;
            uint64_t bytes = 0;
            status = cb_tensor_facts(&list, &list.items[i], &facts, &bytes);
            if (status == CBLOB_OK && in_first_pass(&facts) == (pass == 0))
                status = cb_tensor_write(&list, output->model, &list.items[i], &facts, sink);
        }
    sorted_layers_free(&types);
    cb_tensor_list_free(&list);
    return status == CBLOB_OK ? sink->status : status;
}

static cblob_status check_flags(int32_t flags, int32_t allowed)
{
    if (flags & ~allowed)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "flags 0x%x has bits this export does not take", (unsigned)flags);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_to_safetensors(const cblob_model *model, int32_t flags, uint8_t *buffer,
                                                  size_t buffer_size, size_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags, CB_SAFETENSORS_FLAGS));
    CB_REQUIRE(out_size);
    const safetensors_output output = {model, flags};
    return cb_emit_to_buffer(emit_safetensors, &output, "safetensors", buffer, buffer_size, out_size);
}

CBLOB_API cblob_status cblob_model_to_safetensors_file(const cblob_model *model, int32_t flags, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags, CB_SAFETENSORS_FLAGS));
    CB_REQUIRE(path);
    const safetensors_output output = {model, flags};
    return cb_emit_to_file(model->context, emit_safetensors, &output, path);
}

/* ---- reading ---------------------------------------------------------------------------------- */

typedef struct tensor_entry {
    cblob_dtype dtype;   /* what the blob is */
    int source;          /* 0 as is, 16 float16, 17 bfloat16 */
    size_t element;      /* bytes of an element in the file */
} tensor_entry;

static bool known_dtype(const char *name, tensor_entry *out)
{
    static const struct {
        const char *name;
        tensor_entry entry;
    } table[] = {{"F32", {CBLOB_DTYPE_FLOAT32, 0, 4}}, {"F64", {CBLOB_DTYPE_FLOAT64, 0, 8}},
                 {"I32", {CBLOB_DTYPE_INT32, 0, 4}},   {"U32", {CBLOB_DTYPE_UINT32, 0, 4}},
                 {"F16", {CBLOB_DTYPE_FLOAT32, 16, 2}}, {"BF16", {CBLOB_DTYPE_FLOAT32, 17, 2}}};
    for (size_t i = 0; i < sizeof table / sizeof *table; ++i)
        if (strcmp(table[i].name, name) == 0) {
            *out = table[i].entry;
            return true;
        }
    return false;
}

/* A key's layer, index and whether it is a diff: `<layer>.<index>` or a PyTorch name, with an
 * optional `.diff`. Returns 0 for a key to skip, 1 for a tensor, -1 for a key of another form. */
static int split_key(const char *key, size_t *layer_length, int64_t *index, bool *diff, bool *running)
{
    size_t length = strlen(key);
    *diff = length > 5 && strcmp(key + length - 5, ".diff") == 0;
    if (*diff)
        length -= 5;
    size_t dot = length;
    while (dot > 0 && key[dot - 1] != '.')
        --dot;
    if (dot == 0)
        return -1;
    const char *suffix = key + dot;
    const size_t suffix_length = length - dot;
    static const struct {
        const char *name;
        int64_t index;
        bool running;
    } torch[] = {{"weight", 0, false}, {"bias", 1, false}, {"running_mean", 0, true}, {"running_var", 1, true}};
    *layer_length = dot - 1;
    *running = false;
    if (suffix_length == strlen("num_batches_tracked") && memcmp(suffix, "num_batches_tracked", suffix_length) == 0)
        return 0;
    for (size_t i = 0; i < sizeof torch / sizeof *torch; ++i)
        if (suffix_length == strlen(torch[i].name) && memcmp(suffix, torch[i].name, suffix_length) == 0) {
            *index = torch[i].index;
            *running = torch[i].running;
            return 1;
        }
    int64_t value = 0;
    for (size_t i = 0; i < suffix_length; ++i) {
        if (suffix[i] < '0' || suffix[i] > '9' || value > (INT64_MAX - 9) / 10 || suffix_length > 18)
            return -1;
        value = value * 10 + (suffix[i] - '0');
    }
    *index = value;
    return suffix_length > 0 ? 1 : -1;
}

static cblob_status parse_fail(const char *key, const char *what)
{
    return cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: tensor \"%.64s\": %s", key, what);
}

/* A reading of the header: its text (in the source), where the data starts, and scratch. */
typedef struct header_reader {
    cb_source *source;
    const char *text;
    size_t length;
    uint64_t data_start, data_size;
    cb_json_scan scan;
    char *key, *value;
    size_t key_length, key_capacity, value_length, value_capacity;
} header_reader;

static cblob_status json_fault(const header_reader *r)
{
    if (r->scan.out_of_memory)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a string of the safetensors header at byte %zu",
                       r->scan.error_at + 8);
    return cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: the header is not a JSON object (%.100s at byte %zu)",
                   r->scan.error != NULL ? r->scan.error : "it is not an object", r->scan.error_at + 8);
}

static cblob_status read_length(cb_source *source, header_reader *r)
{
    if (source->size < 8)
        return cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: %zu bytes, fewer than the 8 of the header length",
                       source->size);
    CB_TRY(cb_source_need(source, 0, 8));
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = (length << 8) | source->bytes[i];
    if (length > source->size - 8 || length > CB_SAFETENSORS_MAX_HEADER)
        return cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: a %llu-byte header in %zu bytes",
                       (unsigned long long)length, source->size);
    CB_TRY(cb_source_need(source, 8, 8 + (size_t)length));
    if (length == 0 || source->bytes[8] != '{')
        return cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: the header is not a JSON object (it does not start with "
                       "'{' at byte 8)");
    *r = (header_reader){.source = source, .text = (const char *)source->bytes + 8, .length = (size_t)length,
                         .data_start = 8 + length, .data_size = source->size - 8 - length};
    return CBLOB_OK;
}

/* Starts a walk of the header's top-level object. */
static cblob_status begin_walk(header_reader *r)
{
    cb_json_scan_begin(&r->scan, r->text, r->length);
    if (!cb_json_object_begin(&r->scan))
        return json_fault(r);
    return CBLOB_OK;
}

/* The next key of the top-level object (false at its end); a fault is a failure. */
static cblob_status next_key(header_reader *r, bool *more)
{
    *more = cb_json_member(&r->scan, &r->key, &r->key_length, &r->key_capacity);
    if (!*more && (r->scan.error != NULL || !cb_json_end(&r->scan)))
        return json_fault(r);
    return CBLOB_OK;
}

/* ---- the first walk: names -------------------------------------------------------------------- */

/* What __metadata__ says: the net's name and the layers' types (JSON text in a string). */
typedef struct metadata {
    char *name;
    char *layer_types;
    size_t layer_types_length;
} metadata;

static cblob_status read_metadata(header_reader *r, metadata *out)
{
    if (!cb_json_next_is(&r->scan, '{'))
        return cb_json_skip(&r->scan) ? CBLOB_OK : json_fault(r);
    cb_json_object_begin(&r->scan);
    char *key = NULL;
    size_t key_length = 0, key_capacity = 0;
    cblob_status status = CBLOB_OK;
    while (status == CBLOB_OK && cb_json_member(&r->scan, &key, &key_length, &key_capacity)) {
        const bool name = strcmp(key, "name") == 0, types = strcmp(key, "layer_types") == 0;
        if ((name || types) && cb_json_next_is(&r->scan, '"')) {
            char *text = NULL;
            size_t length = 0, capacity = 0;
            if (!cb_json_string_value(&r->scan, &text, &length, &capacity)) {
                free(text);
                break;
            }
            char **slot = name ? &out->name : &out->layer_types;
            free(*slot);
            *slot = text;
            if (types)
                out->layer_types_length = length;
        } else if (!cb_json_skip(&r->scan)) {
            break;
        }
    }
    free(key);
    return r->scan.error != NULL ? json_fault(r) : status;
}

/* Each tensor's key noted, the metadata read; the entries are only checked to be JSON. */
static cblob_status note_tensors(header_reader *r, cb_tensor_set *set, metadata *meta)
{
    CB_TRY(begin_walk(r));
    for (;;) {
        bool more = false;
        CB_TRY(next_key(r, &more));
        if (!more)
            return CBLOB_OK;
        if (strcmp(r->key, "__metadata__") == 0) {
            CB_TRY(read_metadata(r, meta));
            continue;
        }
        size_t layer_length = 0;
        int64_t index = 0;
        bool diff = false, running = false;
        const int kind = split_key(r->key, &layer_length, &index, &diff, &running);
        if (kind < 0)
            return cb_fail(CBLOB_ERR_PARSE, "safetensors key \"%.64s\" is not <layer>.<index> nor a PyTorch name", r->key);
        if (kind > 0)
            CB_TRY(cb_tensor_set_note(set, r->key, layer_length, index, diff, running, r->key));
        if (!cb_json_skip(&r->scan))
            return json_fault(r);
    }
}

/* Layer types from "layer_types" (a JSON object of strings, by layer key), when it is one. */
typedef struct layer_types {
    cb_name_index index; /* over the set's layer names */
    char **types;        /* by layer */
} layer_types;

static const char *type_of_layer(void *context, const char *layer)
{
    const layer_types *types = context;
    const int64_t at = cb_name_index_find(&types->index, layer, strlen(layer));
    return at >= 0 ? types->types[at] : NULL;
}

/* The layers' types from "layer_types" (text that is not JSON gives none, as before); no memory
 * for them is a failure, not a model without them. */
static cblob_status read_layer_types(const metadata *meta, const cb_tensor_set *set, layer_types *types)
{
    if (meta->layer_types == NULL || set->num_groups == 0)
        return CBLOB_OK;
    if ((types->types = cb_calloc((size_t)set->num_groups, sizeof *types->types)) == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers' types", set->num_groups);
    CB_TRY(cb_name_index_make((const char *const *)set->names, set->num_groups, &types->index));
    cb_json_scan scan;
    cb_json_scan_begin(&scan, meta->layer_types, meta->layer_types_length);
    char *key = NULL;
    size_t key_length = 0, key_capacity = 0;
    if (cb_json_object_begin(&scan))
        while (cb_json_member(&scan, &key, &key_length, &key_capacity)) {
            const int64_t at = cb_name_index_find(&types->index, key, key_length);
            if (at < 0 || !cb_json_next_is(&scan, '"')) {
                if (!cb_json_skip(&scan))
                    break;
                continue;
            }
            char *type = NULL;
            size_t length = 0, capacity = 0;
            if (!cb_json_string_value(&scan, &type, &length, &capacity)) {
                free(type);
                break;
            }
            free(types->types[at]);
            types->types[at] = type;
        }
    free(key);
    if (scan.out_of_memory)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the layers' types");
    if (scan.error != NULL || !cb_json_end(&scan)) /* not JSON: no types, as before */
        for (int64_t i = 0; i < set->num_groups; ++i) {
            free(types->types[i]);
            types->types[i] = NULL;
        }
    return CBLOB_OK;
}

static void layer_types_free(layer_types *types, int64_t count)
{
    for (int64_t i = 0; types->types != NULL && i < count; ++i)
        free(types->types[i]);
    free(types->types);
    cb_name_index_free(&types->index);
}

/* ---- the second walk: shapes and values ----------------------------------------------------------- */

/* An entry: {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}, checked against the data. */
typedef struct entry_facts {
    tensor_entry dtype;
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    uint64_t begin, end;
} entry_facts;

static cblob_status read_integers(header_reader *r, const char *key, int64_t *values, size_t max, size_t *count,
                                  const char *what)
{
    if (!cb_json_array_begin(&r->scan))
        return parse_fail(key, what);
    *count = 0;
    while (cb_json_element(&r->scan)) {
        int64_t value = 0;
        bool integer = false;
        if (!cb_json_integer_value(&r->scan, &value, &integer))
            return json_fault(r);
        if (!integer || value < 0 || *count >= max)
            return parse_fail(key, what);
        values[(*count)++] = value;
    }
    return r->scan.error != NULL ? json_fault(r) : CBLOB_OK;
}

static cblob_status read_entry(header_reader *r, const char *key, entry_facts *out)
{
    if (!cb_json_next_is(&r->scan, '{'))
        return parse_fail(key, "needs a \"dtype\"");
    cb_json_object_begin(&r->scan);
    char *member = NULL;
    size_t member_length = 0, member_capacity = 0;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    cblob_status status = CBLOB_OK;
    while (status == CBLOB_OK && cb_json_member(&r->scan, &member, &member_length, &member_capacity)) {
        if (strcmp(member, "dtype") == 0 && !has_dtype) {
            has_dtype = true;
            if (!cb_json_next_is(&r->scan, '"')) {
                status = parse_fail(key, "needs a \"dtype\"");
            } else if (!cb_json_string_value(&r->scan, &r->value, &r->value_length, &r->value_capacity)) {
                status = json_fault(r);
            } else if (!known_dtype(r->value, &out->dtype)) {
                status = cb_fail(CBLOB_ERR_PARSE,
                                 "safetensors tensor \"%.64s\": dtype %.16s is none of F32, F64, I32, U32, F16, BF16",
                                 key, r->value);
            }
        } else if (strcmp(member, "shape") == 0 && !has_shape) {
            has_shape = true;
            size_t count = 0;
            status = read_integers(r, key, out->dims, CBLOB_MAX_AXES, &count,
                                   "needs \"shape\" (at most 32 dims) and two \"data_offsets\"");
            out->num_axes = (int32_t)count;
        } else if (strcmp(member, "data_offsets") == 0 && !has_offsets) {
            has_offsets = true;
            int64_t offsets[2];
            size_t count = 0;
            status = read_integers(r, key, offsets, 2, &count, "data_offsets are not inside the data");
            if (status == CBLOB_OK && count != 2)
                status = parse_fail(key, "needs \"shape\" (at most 32 dims) and two \"data_offsets\"");
            out->begin = (uint64_t)offsets[0];
            out->end = (uint64_t)offsets[1];
        } else if (strcmp(member, "dtype") == 0 || strcmp(member, "shape") == 0 ||
                   strcmp(member, "data_offsets") == 0) {
            status = cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: tensor \"%.64s\" has \"%s\" twice", key, member);
        } else if (!cb_json_skip(&r->scan)) {
            status = json_fault(r);
        }
    }
    free(member);
    if (status == CBLOB_OK && r->scan.error != NULL)
        status = json_fault(r);
    if (status == CBLOB_OK && !has_dtype)
        status = parse_fail(key, "needs a \"dtype\"");
    if (status == CBLOB_OK && (!has_shape || !has_offsets))
        status = parse_fail(key, "needs \"shape\" (at most 32 dims) and two \"data_offsets\"");
    return status;
}

/* Checks the entry's offsets against its shape and the data. */
static cblob_status check_span(const header_reader *r, const char *key, const entry_facts *e, cb_shape *shape)
{
    if (cb_shape_make(e->num_axes, e->dims, e->dtype.element, shape) != CBLOB_OK)
        return parse_fail(key, "the dims' product overflows");
    if (e->end < e->begin || e->end > r->data_size)
        return parse_fail(key, "data_offsets are not inside the data");
    if (e->end - e->begin != (uint64_t)shape->count * e->dtype.element)
        return parse_fail(key, "data_offsets do not span the shape's values");
    return CBLOB_OK;
}

/* The entry's values (checked: check_span), into `to` as `to_dtype`. */
static cblob_status read_values(header_reader *r, const entry_facts *e, const cb_shape *checked, void *to,
                                cblob_dtype to_dtype)
{
    const cb_shape shape = *checked;
    const size_t from = (size_t)(r->data_start + e->begin);
    if (e->dtype.source == 0 && to_dtype == e->dtype.dtype)
        return cb_source_copy(r->source, from, (size_t)(e->end - e->begin), to);
    if (e->dtype.source != 0 && to_dtype == CBLOB_DTYPE_FLOAT32) {
        if (shape.count == 0) /* no elements: no array (to may be NULL) and nothing to read */
            return CBLOB_OK;
        /* Half floats into the array's upper half, widened there: one copy from the file. */
        CB_TRY(cb_source_copy(r->source, from, (size_t)(e->end - e->begin), (uint8_t *)to + (size_t)shape.count * 2));
        cb_widen_halves_in_place(to, shape.count, e->dtype.source == 17);
        return CBLOB_OK;
    }
    /* A diff of another dtype than its data: converted in pieces. */
    enum { PIECE = 1 << 14 };
    uint8_t piece[PIECE * 8];
    float halves[PIECE];
    const cb_dtype_info *target = cb_dtype_find(to_dtype);
    for (int64_t done = 0; done < shape.count; done += PIECE) {
        const int64_t n = shape.count - done < PIECE ? shape.count - done : PIECE;
        CB_TRY(cb_source_copy(r->source, from + (size_t)done * e->dtype.element, (size_t)n * e->dtype.element, piece));
        const void *values = piece;
        cblob_dtype dtype = e->dtype.dtype;
        if (e->dtype.source != 0) {
            for (int64_t i = 0; i < n; ++i) {
                uint16_t half;
                memcpy(&half, piece + 2 * i, 2);
                halves[i] = e->dtype.source == 17 ? cb_bfloat16_to_float(half) : cb_half_to_float(half);
            }
            values = halves;
        }
        CB_TRY(cb_convert_elements(&cb_host_device, cb_dtype_find(dtype), target, n, values,
                                   (uint8_t *)to + (size_t)done * target->size));
    }
    return CBLOB_OK;
}

/* ---- the data, covered ----------------------------------------------------------------------------- */

typedef struct data_range {
    uint64_t begin, end;
} data_range;

static int by_begin(const void *x, const void *y)
{
    const data_range *a = x, *b = y;
    return a->begin != b->begin ? (a->begin < b->begin ? -1 : 1) : (a->end > b->end) - (a->end < b->end);
}

/* The rule of the format (and of its reference reader): the tensors' data_offsets cover the data
 * exactly, every tensor's, read by cblob or not. Two tensors that overlap (one byte, two values)
 * or bytes that belong to no tensor, between them or after the last (room for a file of another
 * kind, a polyglot), are refused. A walk of its own over the header, reading data_offsets only:
 * 16 bytes a tensor while it runs. Entries that are not objects or lack offsets are the other
 * walks' to refuse. */
static cblob_status check_data_covered(header_reader *r)
{
    CB_TRY(begin_walk(r));
    data_range *ranges = NULL;
    size_t count = 0, capacity = 0;
    char *member = NULL;
    size_t member_length = 0, member_capacity = 0;
    cblob_status status = CBLOB_OK;
    for (;;) {
        bool more = false;
        status = next_key(r, &more);
        if (status != CBLOB_OK || !more)
            break;
        if (strcmp(r->key, "__metadata__") == 0 || !cb_json_next_is(&r->scan, '{')) {
            if (!cb_json_skip(&r->scan))
                status = json_fault(r);
            if (status != CBLOB_OK)
                break;
            continue;
        }
        cb_json_object_begin(&r->scan);
        while (status == CBLOB_OK && cb_json_member(&r->scan, &member, &member_length, &member_capacity)) {
            int64_t offsets[2];
            size_t got = 0;
            if (strcmp(member, "data_offsets") != 0) {
                if (!cb_json_skip(&r->scan))
                    status = json_fault(r);
                continue;
            }
            status = read_integers(r, r->key, offsets, 2, &got, "data_offsets are not inside the data");
            if (status != CBLOB_OK || got != 2 || offsets[1] < offsets[0])
                continue; /* read_entry says what is wrong, naming the tensor */
            if (count == capacity) {
                const size_t next = capacity > 0 ? 2 * capacity : 64;
                data_range *grown = cb_realloc(ranges, next * sizeof *grown);
                if (grown == NULL) {
                    status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the data ranges of %zu tensors", next);
                    break;
                }
                ranges = grown;
                capacity = next;
            }
            ranges[count++] = (data_range){(uint64_t)offsets[0], (uint64_t)offsets[1]};
        }
        if (status == CBLOB_OK && r->scan.error != NULL)
            status = json_fault(r);
        if (status != CBLOB_OK)
            break;
    }
    if (status == CBLOB_OK && count > 0)
        qsort(ranges, count, sizeof *ranges, by_begin);
    uint64_t covered = 0;
    for (size_t i = 0; status == CBLOB_OK && i < count; ++i) {
        if (ranges[i].begin < covered)
            status = cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: two tensors share data bytes %llu to %llu",
                             (unsigned long long)ranges[i].begin,
                             (unsigned long long)(ranges[i].end < covered ? ranges[i].end : covered));
        else if (ranges[i].begin > covered)
            status = cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: data bytes %llu to %llu belong to no tensor",
                             (unsigned long long)covered, (unsigned long long)ranges[i].begin);
        else
            covered = ranges[i].end;
    }
    if (status == CBLOB_OK && covered != r->data_size)
        status = covered < r->data_size
                     ? cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: %llu bytes after the last tensor's data belong "
                               "to no tensor", (unsigned long long)(r->data_size - covered))
                     : CBLOB_OK; /* past the end: read_values says which tensor */
    free(member);
    free(ranges);
    return status;
}

/* Places the tensors of one kind (data, then diffs), in the order noted; lazy: large data tensors
 * of a file stay in it. */
static cblob_status place_tensors(header_reader *r, cb_tensor_set *set, bool diffs, bool lazy)
{
    CB_TRY(begin_walk(r));
    for (int64_t noted = 0;;) {
        bool more = false;
        CB_TRY(next_key(r, &more));
        if (!more)
            return CBLOB_OK;
        size_t layer_length = 0;
        int64_t index = 0;
        bool diff = false, running = false;
        if (strcmp(r->key, "__metadata__") == 0 || split_key(r->key, &layer_length, &index, &diff, &running) <= 0) {
            if (!cb_json_skip(&r->scan))
                return json_fault(r);
            continue;
        }
        const int64_t i = noted++;
        if (diff != diffs) {
            if (!cb_json_skip(&r->scan))
                return json_fault(r);
            continue;
        }
        entry_facts e;
        cb_shape shape;
        CB_TRY(read_entry(r, r->key, &e));
        CB_TRY(check_span(r, r->key, &e, &shape));
        if (lazy && !diffs && r->source->file != NULL &&
            (size_t)shape.count * cb_dtype_find(e.dtype.dtype)->size > CB_LAZY_VALUES_MIN) {
            const uint8_t file_flags = e.dtype.source == 16   ? CB_BLOB_FILE_HALF
                                       : e.dtype.source == 17 ? CB_BLOB_FILE_BFLOAT16
                                                              : 0;
            CB_TRY(cb_tensor_set_defer(set, i, e.dtype.dtype, e.num_axes, e.dims, r->data_start + e.begin, file_flags,
                                       0, 0, 0));
            continue;
        }
        void *to = NULL;
        cblob_dtype to_dtype = 0;
        CB_TRY(cb_tensor_set_place(set, i, e.dtype.dtype, e.num_axes, e.dims, &to, &to_dtype));
        CB_TRY(read_values(r, &e, &shape, to, to_dtype));
    }
}

cblob_status cb_model_open_safetensors_source(cblob_context *context, cb_source *source, const char *name, bool lazy,
                                              cblob_model **out)
{
    (void)name;
    header_reader r;
    CB_TRY(read_length(source, &r));
    cb_tensor_set set = {0};
    metadata meta = {0};
    layer_types types = {0};
    cblob_status status = note_tensors(&r, &set, &meta);
    if (status == CBLOB_OK)
        status = check_data_covered(&r);
    if (status == CBLOB_OK)
        status = read_layer_types(&meta, &set, &types);
    if (status == CBLOB_OK) {
        status = cb_tensor_set_layout(&set, context, meta.name, types.types != NULL ? type_of_layer : NULL, &types);
    }
    if (status == CBLOB_OK)
        status = place_tensors(&r, &set, false, lazy);
    if (status == CBLOB_OK)
        status = place_tensors(&r, &set, true, false);
    if (status == CBLOB_OK)
        status = cb_tensor_set_finish(&set, out);
    layer_types_free(&types, set.num_groups);
    cb_tensor_set_free(&set);
    free(meta.name);
    free(meta.layer_types);
    free(r.key);
    free(r.value);
    return status;
}

CBLOB_API cblob_status cblob_model_open_safetensors(cblob_context *context, const uint8_t *bytes, size_t size,
                                                    cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_model);
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    return cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_SAFETENSORS,
                            cb_model_open_safetensors_source(context, &source, "the bytes", false, out_model));
}

CBLOB_API cblob_status cblob_model_open_safetensors_file(cblob_context *context, const char *path,
                                                         cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    cb_file_reading file;
    CB_TRY(cb_file_reading_open(context, path, &file));
    cblob_model *model = NULL;
    const cblob_status status =
        cb_file_reading_finish(&file, CBLOB_FILE_SAFETENSORS, cb_model_open_safetensors_source(context, &file.source, path, false, &model));
    cb_file_reading_close(&file);
    if (status != CBLOB_OK) {
        if (model != NULL)
            cb_model_free(model);
        return status;
    }
    *out_model = model;
    return CBLOB_OK;
}
