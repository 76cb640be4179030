/* SPDX-License-Identifier: BSD-2-Clause */
/* Models: a Caffe net (NetParameter) kept as its bytes (model.h), read from .caffemodel files,
 * built up layer by layer, and written back. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_memory.h"
#include "io.h"
#include "model.h"
#include "proto_blob.h"
#include "proto_io.h"
#include "proto_net.h"
#include "identify.h"
#include "status.h"

/* ---- lifetime ---------------------------------------------------------------------------- */

cblob_status cb_model_new(cblob_context *context, cblob_net_format format, cblob_model **out)
{
    cblob_model *model = calloc(1, sizeof *model);
    if (model == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a model");
    /* Recursive: saving holds the lock while it reads values through the calls that take it. */
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
    const int failed = pthread_mutex_init(&model->lock, &attributes);
    pthread_mutexattr_destroy(&attributes);
    if (failed != 0) {
        free(model);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no resources for a model's lock");
    }
    model->context = context;
    cb_context_retain(context);
    model->format = format;
    *out = model;
    return CBLOB_OK;
}

/* The bytes of a blob's data (or diff) array: count elements of the part's type. */
static size_t array_bytes(const cb_op *blob, bool diff)
{
    int64_t count = 1;
    for (int32_t i = 0; i < blob->num_axes; ++i)
        count *= blob->dims[i];
    const bool is_double = diff ? (blob->blob_flags & CB_BLOB_DIFF_DOUBLE) : (blob->blob_flags & CB_BLOB_DOUBLE);
    return (size_t)count * (is_double ? 8 : 4);
}

/* Frees the arrays blobs not yet made still own (their handles own the others). */
static void free_blob_arrays(const uint8_t *ops)
{
    for (const uint8_t *cursor = ops;;) {
        cb_op op;
        cb_op_read(&cursor, false, &op);
        if (op.code == CB_OP_END)
            return;
        if (op.code == CB_OP_MESSAGE)
            free_blob_arrays(op.inner);
        if (op.code == CB_OP_BLOB && op.arrays != NULL) {
            void *data, *diff;
            cb_op_arrays(&op, &data, &diff);
            cb_host_free(data, array_bytes(&op, false));
            cb_host_free(diff, array_bytes(&op, true));
        }
    }
}

static void free_record(const uint8_t *record)
{
    free_blob_arrays(cb_record_ops(record));
    cblob_blob **slots = cb_record_slots(record);
    if (slots == NULL)
        return;
    for (int64_t i = 0; i < cb_record_num_blobs(record); ++i)
        cb_blob_release(slots[i]);
    free(slots);
}

void cb_model_free(cblob_model *model)
{
    cb_input_file_close(model->file);
    for (int64_t i = 0; i < model->num_layers; ++i)
        free_record(model->layers[i]);
    free(model->layers);
    cb_arena_free(&model->arena);
    cb_bytes_free(&model->head);
    cb_bytes_free(&model->trailer);
    free(model->name);
    pthread_mutex_destroy(&model->lock);
    cb_context_release(model->context);
    free(model);
}

cblob_status cb_model_append_record(cblob_model *model, const cb_bytes *body, uint64_t name_offset,
                                    uint64_t type_offset, int64_t num_blobs)
{
    if (model->num_layers == model->capacity) {
        const int64_t next = model->capacity > 0 ? model->capacity * 2 : 8;
        uint8_t **grown = realloc(model->layers, (size_t)next * sizeof *grown);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", next);
        model->layers = grown;
        model->capacity = next;
    }
    CB_TRY(cb_record_store(&model->arena, body, name_offset, type_offset, num_blobs, &model->layers[model->num_layers]));
    ++model->num_layers;
    return CBLOB_OK;
}

/* ---- finding layers and blobs ---------------------------------------------------------------- */

cblob_status cb_model_record(const cblob_model *model, int64_t layer, const uint8_t **out)
{
    if (layer < 0 || layer >= model->num_layers)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "layer %" PRId64 " is outside [0, %" PRId64 ")", layer,
                       model->num_layers);
    *out = model->layers[layer];
    return CBLOB_OK;
}

/* The BLOB or NEW_BLOB operation that is blob *remaining of the operations, depth first. */
static bool find_blob_op(const uint8_t *ops, int64_t *remaining, cb_op *out)
{
    for (const uint8_t *cursor = ops;;) {
        cb_op op;
        cb_op_read(&cursor, false, &op);
        if (op.code == CB_OP_END)
            return false;
        if (op.code == CB_OP_MESSAGE && find_blob_op(op.inner, remaining, out))
            return true;
        if ((op.code == CB_OP_BLOB || op.code == CB_OP_NEW_BLOB) && (*remaining)-- == 0) {
            *out = op;
            return true;
        }
    }
}

static void lock(const cblob_model *model)
{
    pthread_mutex_lock(&((cblob_model *)model)->lock);
}

static void unlock(const cblob_model *model)
{
    pthread_mutex_unlock(&((cblob_model *)model)->lock);
}

/* Moves the walk to the next blob of its record, in find_blob_op's order; false past the last, or
 * when messages nest deeper than the walk keeps. */
static bool walk_next(cb_blob_walk *walk)
{
    while (walk->depth > 0) {
        cb_op op;
        cb_op_read(&walk->cursors[walk->depth - 1], false, &op);
        if (op.code == CB_OP_END) {
            --walk->depth;
        } else if (op.code == CB_OP_MESSAGE) {
            if (walk->depth == CB_BLOB_WALK_DEPTH)
                return false;
            walk->cursors[walk->depth++] = op.inner;
        } else if (op.code == CB_OP_BLOB || op.code == CB_OP_NEW_BLOB) {
            walk->op = op;
            ++walk->index;
            return true;
        }
    }
    return false;
}

/* Blob `index` of a record through the model's walk, going on from where it stopped when it can. */
static bool walk_to(cblob_model *model, const uint8_t *record, int64_t index, cb_op *out)
{
    cb_blob_walk *walk = &model->walk;
    if (walk->record != record || index < walk->index)
        *walk = (cb_blob_walk){.record = record, .index = -1, .depth = 1, .cursors = {cb_record_ops(record)}};
    while (walk->index < index)
        if (!walk_next(walk)) {
            walk->record = NULL;
            return false;
        }
    *out = walk->op;
    return true;
}

/* Under the lock. */
static cblob_status find_blob_locked(const cblob_model *model, int64_t layer, int64_t index, cb_model_blob *out)
{
    const uint8_t *record = NULL;
    CB_TRY(cb_model_record(model, layer, &record));
    const int64_t num_blobs = cb_record_num_blobs(record);
    if (index < 0 || index >= num_blobs)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "blob %" PRId64 " is outside [0, %" PRId64 ") for layer %" PRId64 " (%s)",
                       index, num_blobs, layer, cb_record_name(record));
    int64_t remaining = index;
    if (!walk_to((cblob_model *)model, record, index, &out->op) &&
        !find_blob_op(cb_record_ops(record), &remaining, &out->op))
        return cb_fail(CBLOB_ERR_INTERNAL, "layer %" PRId64 " lost blob %" PRId64, layer, index);
    cblob_blob **slots = cb_record_slots(record);
    out->handle = slots != NULL ? slots[index] : NULL;
    return CBLOB_OK;
}

cblob_status cb_model_find_blob(const cblob_model *model, int64_t layer, int64_t index, cb_model_blob *out)
{
    lock(model);
    const cblob_status status = find_blob_locked(model, layer, index, out);
    unlock(model);
    return status;
}

/* ---- making handles --------------------------------------------------------------------------- */

static size_t element_size(bool is_double)
{
    return is_double ? 8 : 4;
}

/* Inline values of one part, gathered into a new array. */
static cblob_status gather_inline(const cb_op *blob, bool diff, int64_t count, void **out)
{
    *out = NULL;
    if (count == 0)
        return CBLOB_OK;
    const bool is_double = diff ? (blob->blob_flags & CB_BLOB_DIFF_DOUBLE) : (blob->blob_flags & CB_BLOB_DOUBLE);
    uint8_t *array = NULL;
    CB_TRY(cb_host_alloc((size_t)count * element_size(is_double), false, (void **)&array));
    size_t filled = 0;
    for (const uint8_t *cursor = blob->inner;;) {
        cb_op op;
        cb_op_read(&cursor, false, &op);
        if (op.code == CB_OP_END)
            break;
        if (op.code != CB_OP_VALUES || ((op.values_flags & CB_VALUES_OF_DIFF) != 0) != diff)
            continue;
        const size_t bytes = (size_t)op.count * element_size(op.values_flags & CB_VALUES_DOUBLE);
        memcpy(array + filled, op.payload, bytes);
        filled += bytes;
    }
    *out = array;
    return CBLOB_OK;
}

cblob_status cb_model_blob_shape(const cb_op *blob, cb_shape *out)
{
    cb_op loaded = *blob;
    cb_op_load_dims(&loaded);
    return cb_shape_make(loaded.num_axes, loaded.dims, element_size(blob->blob_flags & CB_BLOB_DOUBLE), out);
}

/* The values a new handle takes: the blob's arrays, or its inline values gathered. */
static cblob_status blob_arrays(const cb_op *blob, const cb_shape *shape, cb_blob_arrays *out)
{
    const bool has_diff = blob->blob_flags & CB_BLOB_HAS_DIFF;
    *out = (cb_blob_arrays){
        .data_is_double = blob->blob_flags & CB_BLOB_DOUBLE,
        .diff_is_double = blob->blob_flags & CB_BLOB_DIFF_DOUBLE,
        .data_count = shape->count,
        .diff_count = has_diff ? shape->count : 0,
    };
    if (blob->arrays != NULL) {
        cb_op_arrays(blob, &out->data, &out->diff);
        return CBLOB_OK;
    }
    CB_TRY(gather_inline(blob, false, out->data_count, &out->data));
    cblob_status status = gather_inline(blob, true, out->diff_count, &out->diff);
    if (status != CBLOB_OK)
        cb_blob_arrays_free(out);
    return status;
}

/* Makes the handle of a BLOB operation, as cblob_blob_create_from_proto makes a blob. Arrays the
 * handle adopts leave the record; so do arrays of its own dtype it copied (the handle holds the
 * values now). A diff of the other dtype stays: saving compares it with the handle's (see
 * model_save.c). */
static cblob_status make_handle(const cblob_model *model, cb_op *blob, cblob_blob **out)
{
    CB_TRY(cb_model_load_values(model, blob));
    cb_shape shape;
    CB_TRY(cb_model_blob_shape(blob, &shape));
    const cblob_dtype dtype = (blob->blob_flags & CB_BLOB_DOUBLE) ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32;
    cb_blob_arrays arrays;
    CB_TRY(blob_arrays(blob, &shape, &arrays));
    cblob_blob *handle = NULL;
    cblob_status status = cb_blob_new(model->context, dtype, &handle);
    if (status == CBLOB_OK)
        status = cb_blob_fill(handle, &shape, &arrays);
    if (status != CBLOB_OK) {
        cb_blob_release(handle);
        if (blob->arrays == NULL)
            cb_blob_arrays_free(&arrays);
        return status;
    }
    const bool diff_other_dtype = arrays.diff != NULL && arrays.diff_is_double != arrays.data_is_double;
    void *keep_diff = diff_other_dtype ? arrays.diff : NULL;
    if (diff_other_dtype)
        arrays.diff = NULL;
    cb_blob_arrays_free(&arrays);
    if (blob->arrays != NULL)
        cb_op_set_arrays(blob, NULL, keep_diff);
    else
        cb_host_free(keep_diff, (size_t)arrays.diff_count * element_size(arrays.diff_is_double)); /* an inline diff stays in the record */
    *out = handle;
    return CBLOB_OK;
}

static cblob_status handle_locked(const cblob_model *model, int64_t layer, int64_t index, cblob_blob **out)
{
    cb_model_blob found;
    CB_TRY(find_blob_locked(model, layer, index, &found));
    if (found.handle != NULL) {
        *out = found.handle;
        return CBLOB_OK;
    }
    uint8_t *record = model->layers[layer];
    cblob_blob **slots = cb_record_slots(record);
    if (slots == NULL) {
        slots = calloc((size_t)cb_record_num_blobs(record), sizeof *slots);
        if (slots == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the blob handles of layer %" PRId64, layer);
        cb_record_set_slots(record, slots);
    }
    CB_TRY(make_handle(model, &found.op, &slots[index]));
    *out = slots[index];
    return CBLOB_OK;
}

cblob_status cb_model_blob_handle(const cblob_model *model, int64_t layer, int64_t index, cblob_blob **out)
{
    lock(model);
    const cblob_status status = handle_locked(model, layer, index, out);
    unlock(model);
    return status;
}

/* ---- creating ------------------------------------------------------------------------------ */

static cblob_status check_format(cblob_net_format format)
{
    if (format != CBLOB_NET_FORMAT_V1 && format != CBLOB_NET_FORMAT_V2)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "format %d is neither CBLOB_NET_FORMAT_V1 (1) nor CBLOB_NET_FORMAT_V2 (2)", (int)format);
    return CBLOB_OK;
}

/* A length-delimited field's tag and length (the length of a fresh message is written when the
 * message is, so 0 stands in for it). */
static cblob_status put_field_prefix(cb_bytes *bytes, uint32_t field, uint64_t length)
{
    CB_TRY(cb_bytes_put_varint(bytes, ((uint64_t)field << 3) | 2));
    return cb_bytes_put_varint(bytes, length);
}

static cblob_status put_string(cb_bytes *bytes, uint32_t field, const char *text, uint64_t *offset)
{
    CB_TRY(cb_bytes_put_u8(bytes, CB_OP_TEXT));
    CB_TRY(put_field_prefix(bytes, field, strlen(text)));
    *offset = bytes->size;
    return cb_bytes_append(bytes, text, strlen(text) + 1);
}

cblob_status cb_model_create(cblob_context *context, cblob_net_format format, const char *name, cblob_model **out_model)
{
    char *copy = NULL;
    if (name != NULL && (copy = strdup(name)) == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the net's name");
    cblob_model *model = NULL;
    cblob_status status = cb_model_new(context, format, &model);
    if (status != CBLOB_OK) {
        free(copy);
        return status;
    }
    model->name = copy;
    /* As Caffe writes a net: its name (field 1) before its layers. */
    if (name != NULL) {
        status = put_field_prefix(&model->head, 1, strlen(name));
        if (status == CBLOB_OK)
            status = cb_bytes_append(&model->head, name, strlen(name));
    }
    if (status != CBLOB_OK) {
        cb_model_free(model);
        return status;
    }
    *out_model = model;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_create(cblob_context *context, cblob_net_format format, const char *name,
                                          cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_TRY(check_format(format));
    CB_REQUIRE(out_model);
    return cb_model_create(context, format, name, out_model);
}

/* A layer given to cblob_model_add_layer, in Caffe's field order: V2 name 1, type 2, blobs 7; V1
 * name 4, type 5 (LayerType), blobs 6. */
static cblob_status new_record(const cblob_model *model, const char *name, const char *type, int32_t v1_type,
                               int64_t num_blobs, cb_bytes *body, uint64_t *name_offset, uint64_t *type_offset)
{
    const bool v1 = model->format == CBLOB_NET_FORMAT_V1;
    CB_TRY(cb_bytes_put_u8(body, CB_OP_MESSAGE));
    CB_TRY(put_field_prefix(body, v1 ? 2 : 100, 0));
    CB_TRY(put_string(body, v1 ? 4 : 1, name, name_offset));
    if (v1) {
        CB_TRY(cb_bytes_put_u8(body, CB_OP_BYTES));
        uint8_t field[11];
        field[0] = 5 << 3; /* varint */
        const size_t size = 1 + cb_varint_encode(field + 1, (uint64_t)(int64_t)v1_type);
        CB_TRY(cb_bytes_put_varint(body, size));
        CB_TRY(cb_bytes_append(body, field, size));
    } else {
        CB_TRY(put_string(body, 2, type, type_offset));
    }
    for (int64_t i = 0; i < num_blobs; ++i) {
        CB_TRY(cb_bytes_put_u8(body, CB_OP_NEW_BLOB));
        CB_TRY(cb_bytes_put_varint(body, ((uint64_t)(v1 ? 6 : 7) << 3) | 2));
    }
    CB_TRY(cb_bytes_put_u8(body, CB_OP_END));
    CB_TRY(cb_bytes_put_u8(body, CB_OP_END));
    if (v1) { /* the type as given ("CONVOLUTION" or a number) */
        *type_offset = body->size;
        CB_TRY(cb_bytes_append(body, type, strlen(type) + 1));
    }
    return CBLOB_OK;
}

cblob_status cb_model_add_layer(cblob_model *model, const char *name, const char *type, cblob_blob *const *blobs,
                                int64_t num_blobs)
{
    int32_t v1_type = 0;
    if (model->format == CBLOB_NET_FORMAT_V1 && !cb_v1_type_value(type, &v1_type))
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "type \"%.64s\" is not a V1LayerParameter.LayerType name (such as CONVOLUTION) or number", type);
    cb_bytes record = {0};
    uint64_t name_offset = 0, type_offset = 0;
    cblob_blob **slots = num_blobs > 0 ? calloc((size_t)num_blobs, sizeof *slots) : NULL;
    cblob_status status = num_blobs > 0 && slots == NULL
                              ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for layer \"%.64s\"", name)
                              : new_record(model, name, type, v1_type, num_blobs, &record, &name_offset, &type_offset);
    if (status == CBLOB_OK) {
        lock(model);
        status = cb_model_append_record(model, &record, name_offset, type_offset, num_blobs);
        if (status == CBLOB_OK && num_blobs > 0) {
            for (int64_t i = 0; i < num_blobs; ++i) {
                cb_blob_retain(blobs[i]);
                slots[i] = blobs[i];
            }
            cb_record_set_slots(model->layers[model->num_layers - 1], slots);
            slots = NULL;
        }
        unlock(model);
    }
    free(slots);
    cb_bytes_free(&record);
    return status;
}

CBLOB_API cblob_status cblob_model_add_layer(cblob_model *model, const char *name, const char *type,
                                             cblob_blob *const *blobs, int64_t num_blobs)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(name);
    CB_REQUIRE(type);
    CB_TRY(cb_check_blob_array("blobs", blobs, num_blobs));
    return cb_model_add_layer(model, name, type, blobs, num_blobs);
}

CBLOB_API void cblob_model_destroy(cblob_model *model)
{
    CB_ENTER();
    if (model != NULL)
        cb_model_free(model);
}

/* ---- reading ------------------------------------------------------------------------------- */

CBLOB_API cblob_status cblob_model_open(cblob_context *context, const uint8_t *bytes, size_t size,
                                        cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    return cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_NET,
                            cb_model_build(context, bytes, size, NULL, NULL, out_model));
}

/* Opened as the lazy open opens, then every value read at once, straight from the file into the
 * arrays the blobs will adopt (on the pool's threads, which first-touch their pages): one copy, where
 * reading the file into memory first and decoding it from there made two, and the file's pages
 * were faulted in twice. Then the file is let go: the model does not depend on it. */
CBLOB_API cblob_status cblob_model_open_file(cblob_context *context, const char *path, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    cb_progress progress;
    cb_context_begin_progress(context, CB_PROGRESS_READING, &progress);
    cblob_model *model = NULL;
    cblob_status status = cb_model_open_lazy(context, path, &model);
    if (status != CBLOB_OK)
        return cb_progress_end(&progress, status);
    status = cb_model_load_all(model);
    cb_input_file_close(model->file);
    model->file = NULL;
    if (status == CBLOB_OK)
        status = cb_progress_finish(&progress);
    if (status != CBLOB_OK) {
        cb_model_free(model);
        return cb_progress_end(&progress, status);
    }
    *out_model = model;
    return cb_progress_end(&progress, CBLOB_OK);
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
    lock(model);
    *out_num_layers = model->num_layers;
    unlock(model);
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
        if (strcmp(cb_record_name(model->layers[i]), name) == 0)
            found = i;
    *out_layer = found;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_name(const cblob_model *model, int64_t layer, const char **out_name)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    const uint8_t *record = NULL;
    CB_TRY(cb_model_record(model, layer, &record));
    *out_name = cb_record_name(record);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_type(const cblob_model *model, int64_t layer, const char **out_type)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_type);
    const uint8_t *record = NULL;
    CB_TRY(cb_model_record(model, layer, &record));
    *out_type = cb_record_type(record);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_num_blobs(const cblob_model *model, int64_t layer, int64_t *out_num_blobs)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_num_blobs);
    const uint8_t *record = NULL;
    CB_TRY(cb_model_record(model, layer, &record));
    *out_num_blobs = cb_record_num_blobs(record);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_blob(const cblob_model *model, int64_t layer, int64_t index,
                                              cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_blob);
    cblob_blob *blob;
    CB_TRY(cb_model_blob_handle(model, layer, index, &blob));
    cb_blob_retain(blob);
    *out_blob = blob;
    return CBLOB_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct model_output {
    const cblob_model *model;
    bool write_diff;
} model_output;

static cblob_status emit_model(const void *what, cb_sink *sink)
{
    const model_output *output = what;
    return cb_model_emit(output->model, output->write_diff, sink);
}

CBLOB_API cblob_status cblob_model_to_proto(const cblob_model *model, int32_t write_diff, uint8_t *buffer,
                                            size_t buffer_size, size_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(out_size);
    const model_output output = {model, write_diff == 1};
    return cb_emit_to_buffer(emit_model, &output, "NetParameter", buffer, buffer_size, out_size);
}

CBLOB_API cblob_status cblob_model_to_proto_file(const cblob_model *model, int32_t write_diff, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(path);
    const model_output output = {model, write_diff == 1};
    return cb_emit_to_file(model->context, emit_model, &output, path);
}
