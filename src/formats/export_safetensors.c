/* SPDX-License-Identifier: BSD-2-Clause */
/* safetensors (https://github.com/huggingface/safetensors, format of 0.4): an 8-byte little-endian
 * header length, a JSON header padded with spaces to 8 bytes, then every tensor's bytes with no
 * holes. Tensors are written 8-byte ones first, so that every tensor starts aligned to its
 * element, as the reference writer does. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "export.h"
#include "identify.h"
#include "half.h"
#include "model_layers.h"
#include "proto_io.h"
#include "status.h"

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

/* "layer_types": each exported layer's type, by the layer part of its keys. */
static json_t *metadata(const cblob_model *model)
{
    uint8_t *repeats = NULL;
    if (cb_model_repeats(model, &repeats) != CBLOB_OK)
        return NULL;
    json_t *types = json_object();
    for (int64_t i = 0; types != NULL && i < model->num_layers; ++i) {
        const char *name = cb_record_name(model->layers[i]), *type = cb_record_type(model->layers[i]);
        if (cb_record_num_blobs(model->layers[i]) == 0)
            continue;
        char *key = malloc(strlen(name) + 24);
        if (key != NULL) {
            sprintf(key, repeats[i] ? "%s@%" PRId64 : "%s", name, i);
            json_t *text = cb_json_text(key, strlen(key));
            json_object_set_new(types, json_string_value(text), cb_json_text(type, strlen(type)));
            json_decref(text);
        }
        free(key);
    }
    free(repeats);
    char *text = types != NULL ? json_dumps(types, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(types);
    const char *name = model->name != NULL ? model->name : "";
    json_t *meta = text != NULL ? json_pack("{s:o,s:s,s:s}", "name", cb_json_text(name, strlen(name)), "format",
                                            model->format == CBLOB_NET_FORMAT_V1 ? "V1" : "V2", "layer_types", text)
                                : NULL;
    free(text);
    return meta;
}

/* The order tensors are written in: 8-byte elements first, then the others, each in list order. */
static bool in_pass(const cb_tensor *tensor, int pass)
{
    return (cb_dtype_find(tensor->facts.dtype)->size == 8) == (pass == 0);
}

static cblob_status header_text(const cblob_model *model, const cb_tensor_list *list, char **out)
{
    json_t *header = json_object();
    json_t *meta = metadata(model);
    if (header == NULL || meta == NULL || json_object_set_new(header, "__metadata__", meta) != 0) {
        json_decref(header);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the safetensors header");
    }
    /* Data in the order of the passes, keys in the model's order (a reader sees the layers as
     * they were). */
    uint64_t *offsets = malloc(((size_t)list->count + 1) * sizeof *offsets), offset = 0;
    if (offsets == NULL) {
        json_decref(header);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the safetensors header");
    }
    for (int pass = 0; pass < 2; ++pass)
        for (int64_t i = 0; i < list->count; ++i)
            if (in_pass(&list->items[i], pass)) {
                offsets[i] = offset;
                offset += list->items[i].bytes;
            }
    for (int64_t i = 0; i < list->count; ++i) {
        const cb_tensor *t = &list->items[i];
        json_t *shape = json_array();
        for (int32_t a = 0; a < t->facts.num_axes; ++a)
            json_array_append_new(shape, json_integer(t->facts.dims[a]));
        json_t *entry = json_pack("{s:s,s:o,s:[I,I]}", "dtype", dtype_name(t->facts.dtype), "shape", shape,
                                  "data_offsets", (json_int_t)offsets[i], (json_int_t)(offsets[i] + t->bytes));
        json_t *key = cb_json_text(t->key, strlen(t->key));
        if (entry == NULL || key == NULL || json_object_set_new(header, json_string_value(key), entry) != 0) {
            json_decref(key);
            json_decref(header);
            free(offsets);
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the safetensors header");
        }
        json_decref(key);
    }
    free(offsets);
    *out = json_dumps(header, JSON_COMPACT);
    json_decref(header);
    return *out != NULL ? CBLOB_OK : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the safetensors header");
}

static cblob_status emit_safetensors(const void *what, cb_sink *sink)
{
    const safetensors_output *output = what;
    cb_tensor_list list;
    CB_TRY(cb_tensor_list_make(output->model, '.', output->flags & CBLOB_EXPORT_TORCH_NAMES,
                               output->flags & CBLOB_EXPORT_DIFF, &list));
    char *header = NULL;
    cblob_status status = header_text(output->model, &list, &header);
    if (status == CBLOB_OK) {
        const size_t length = strlen(header), padded = (length + 7) / 8 * 8;
        const uint64_t size = padded;
        uint64_t total = 8 + padded;
        for (int64_t i = 0; i < list.count; ++i)
            total += list.items[i].bytes;
        cb_sink_expect(sink, total);
        uint8_t size_bytes[8];
        for (int i = 0; i < 8; ++i)
            size_bytes[i] = (uint8_t)(size >> (8 * i));
        cb_sink_write(sink, size_bytes, 8);
        cb_sink_write(sink, header, length);
        cb_sink_write(sink, "        ", padded - length);
    }
    for (int pass = 0; pass < 2 && status == CBLOB_OK; ++pass)
        for (int64_t i = 0; i < list.count && status == CBLOB_OK; ++i)
            if (in_pass(&list.items[i], pass))
                status = cb_tensor_write(output->model, &list.items[i], sink);
    free(header);
    cb_tensor_list_free(&list);
    return status;
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

/* The tensor's shape, checked against its data_offsets and the data's size. */
static cblob_status tensor_shape(const char *key, json_t *entry, const tensor_entry *dtype, uint64_t data_size,
                                 cb_shape *shape, uint64_t *begin)
{
    json_t *dims = json_object_get(entry, "shape"), *offsets = json_object_get(entry, "data_offsets");
    if (!json_is_array(dims) || json_array_size(dims) > CBLOB_MAX_AXES || !json_is_array(offsets) ||
        json_array_size(offsets) != 2)
        return parse_fail(key, "needs \"shape\" (at most 32 dims) and two \"data_offsets\"");
    int64_t values[CBLOB_MAX_AXES];
    for (size_t i = 0; i < json_array_size(dims); ++i) {
        json_t *dim = json_array_get(dims, i);
        if (!json_is_integer(dim) || json_integer_value(dim) < 0)
            return parse_fail(key, "a dim is not a non-negative integer");
        values[i] = json_integer_value(dim);
    }
    if (cb_shape_make((int32_t)json_array_size(dims), values, dtype->element, shape) != CBLOB_OK)
        return parse_fail(key, "the dims' product overflows");
    json_t *first = json_array_get(offsets, 0), *last = json_array_get(offsets, 1);
    if (!json_is_integer(first) || !json_is_integer(last) || json_integer_value(first) < 0 ||
        json_integer_value(last) < json_integer_value(first) || (uint64_t)json_integer_value(last) > data_size)
        return parse_fail(key, "data_offsets are not inside the data");
    if ((uint64_t)(json_integer_value(last) - json_integer_value(first)) != (uint64_t)shape->count * dtype->element)
        return parse_fail(key, "data_offsets do not span the shape's values");
    *begin = (uint64_t)json_integer_value(first);
    return CBLOB_OK;
}

static cblob_status read_tensor(cblob_context *context, const char *key, json_t *entry, const uint8_t *data,
                                uint64_t data_size, cblob_blob **out)
{
    json_t *dtype_text = json_object_get(entry, "dtype");
    tensor_entry dtype;
    if (!json_is_object(entry) || !json_is_string(dtype_text))
        return parse_fail(key, "needs a \"dtype\"");
    if (!known_dtype(json_string_value(dtype_text), &dtype))
        return cb_fail(CBLOB_ERR_PARSE, "safetensors tensor \"%.64s\": dtype %.16s is none of F32, F64, I32, U32, F16, BF16",
                       key, json_string_value(dtype_text));
    cb_shape shape;
    uint64_t begin = 0;
    CB_TRY(tensor_shape(key, entry, &dtype, data_size, &shape, &begin));
    cblob_blob *blob;
    CB_TRY(cb_blob_create(context, dtype.dtype, shape.num_axes, shape.dims, &blob));
    void *host = NULL;
    cblob_status status = shape.count > 0 ? cb_blob_host(blob, CBLOB_PART_DATA, true, &host) : CBLOB_OK;
    if (status == CBLOB_OK && dtype.source == 0 && shape.count > 0)
        memcpy(host, data + begin, (size_t)shape.count * dtype.element);
    for (int64_t i = 0; status == CBLOB_OK && dtype.source != 0 && i < shape.count; ++i) {
        uint16_t half;
        memcpy(&half, data + begin + 2 * (uint64_t)i, 2);
        ((float *)host)[i] = dtype.source == 17 ? cb_bfloat16_to_float(half) : cb_half_to_float(half);
    }
    if (status != CBLOB_OK) {
        cb_blob_release(blob);
        return status;
    }
    *out = blob;
    return CBLOB_OK;
}

static const char *type_of_layer(void *types, const char *layer)
{
    return json_string_value(json_object_get(types, layer));
}

static cblob_status parse_header(const uint8_t *bytes, size_t size, json_t **out, uint64_t *data_start)
{
    if (size < 8)
        return cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: %zu bytes, fewer than the 8 of the header length", size);
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = (length << 8) | bytes[i];
    if (length > size - 8 || length > CB_SAFETENSORS_MAX_HEADER)
        return cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: a %llu-byte header in %zu bytes",
                       (unsigned long long)length, size);
    json_error_t error;
    json_t *header = json_loadb((const char *)bytes + 8, (size_t)length, JSON_REJECT_DUPLICATES, &error);
    if (!json_is_object(header)) {
        json_decref(header);
        return cb_fail(CBLOB_ERR_PARSE, "malformed safetensors: the header is not a JSON object (%.100s at byte %d)",
                       error.text, error.position + 8);
    }
    *out = header;
    *data_start = 8 + length;
    return CBLOB_OK;
}

cblob_status cb_model_open_safetensors_bytes(cblob_context *context, const uint8_t *bytes, size_t size, cblob_model **out)
{
    json_t *header = NULL;
    uint64_t start = 0;
    CB_TRY(parse_header(bytes, size, &header, &start));
    cb_tensor_set set = {0};
    cblob_status status = CBLOB_OK;
    const char *key;
    json_t *entry;
    json_object_foreach(header, key, entry)
    {
        if (status != CBLOB_OK || strcmp(key, "__metadata__") == 0)
            continue;
        size_t layer_length = 0;
        int64_t index = 0;
        bool diff = false, running = false;
        const int kind = split_key(key, &layer_length, &index, &diff, &running);
        if (kind < 0)
            status = cb_fail(CBLOB_ERR_PARSE, "safetensors key \"%.64s\" is not <layer>.<index> nor a PyTorch name", key);
        if (kind <= 0)
            continue;
        cblob_blob *blob = NULL;
        status = read_tensor(context, key, entry, bytes + start, size - start, &blob);
        if (status == CBLOB_OK)
            status = cb_tensor_set_add(&set, key, layer_length, index, diff, running, blob, key);
    }
    json_t *meta = json_object_get(header, "__metadata__");
    json_t *types = json_is_string(json_object_get(meta, "layer_types"))
                        ? json_loads(json_string_value(json_object_get(meta, "layer_types")), 0, NULL)
                        : NULL;
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (status == CBLOB_OK)
        status = cb_tensor_set_model(context, &set, name, json_is_object(types) ? type_of_layer : NULL, types, out);
    json_decref(types);
    json_decref(header);
    cb_tensor_set_free(&set);
    return status;
}

CBLOB_API cblob_status cblob_model_open_safetensors(cblob_context *context, const uint8_t *bytes, size_t size,
                                                    cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_model);
    return cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_SAFETENSORS,
                            cb_model_open_safetensors_bytes(context, bytes, size, out_model));
}

CBLOB_API cblob_status cblob_model_open_safetensors_file(cblob_context *context, const char *path,
                                                         cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_input input;
    CB_TRY(cb_read_file(context, path, &input));
    const cblob_status status = cb_explain_bytes(path, input.bytes, input.size, CBLOB_FILE_SAFETENSORS,
                                                 cb_model_open_safetensors_bytes(context, input.bytes, input.size, out_model));
    cb_input_close(&input);
    return status;
}
