/* SPDX-License-Identifier: BSD-2-Clause */
/* Models: the data (model.h), its lifetime, creating models and layers, reading blobs' frames,
 * and writing a layer's bytes back. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caffe_fields.h"
#include "alloc.h"
#include "host_memory.h"
#include "io.h"
#include "model.h"
#include "status.h"
#include "varint.h"
#include "wire.h"

/* ---- growable bytes ------------------------------------------------------------------------- */

cblob_status cb_bytes_reserve(cb_bytes *bytes, size_t size)
{
    if (size <= bytes->capacity - bytes->size)
        return CBLOB_OK;
    if (size > SIZE_MAX / 2 - bytes->size)
        return cb_fail(CBLOB_ERR_OVERFLOW, "%zu more bytes do not fit in memory", size);
    size_t capacity = bytes->capacity > 0 ? bytes->capacity : 256;
    while (capacity < bytes->size + size)
        capacity *= 2;
    uint8_t *grown = cb_realloc(bytes->data, capacity);
    if (grown == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu bytes", capacity);
    bytes->data = grown;
    bytes->capacity = capacity;
    return CBLOB_OK;
}

cblob_status cb_bytes_append(cb_bytes *bytes, const void *data, size_t size)
{
    CB_TRY(cb_bytes_reserve(bytes, size));
    if (size > 0)
        memcpy(bytes->data + bytes->size, data, size);
    bytes->size += size;
    return CBLOB_OK;
}

cblob_status cb_bytes_put_varint(cb_bytes *bytes, uint64_t value)
{
    uint8_t encoded[CB_VARINT_MAX_BYTES];
    return cb_bytes_append(bytes, encoded, cb_varint_encode(encoded, value));
}

void cb_bytes_free(cb_bytes *bytes)
{
    free(bytes->data);
    *bytes = (cb_bytes){0};
}

/* ---- the arena ------------------------------------------------------------------------------ */

struct cb_arena_chunk {
    cb_arena_chunk *next;
    size_t size, used;
    uint8_t *bytes; /* the chunk's own bytes (after it), or a buffer taken over */
    bool taken;
};

/* Staged bytes of at least this size are taken over as they are, not copied. */
#define CB_ARENA_TAKE_OVER ((size_t)64 << 10)

/* Chunks grow with the arena (an eighth of it, from 64 KiB to 8 MiB), so a model of many small
 * layers makes few allocations and wastes at most a chunk's tail. */
static size_t next_chunk_size(const cb_arena *arena, size_t needed)
{
    size_t size = arena->total / 8;
    size = size < (64u << 10) ? (64u << 10) : size > (8u << 20) ? (8u << 20) : size;
    return needed > size ? needed : size;
}

static cblob_status new_chunk(cb_arena *arena, size_t size)
{
    if (size > SIZE_MAX - sizeof(cb_arena_chunk) - 16)
        return cb_fail(CBLOB_ERR_OVERFLOW, "%zu bytes of a model do not fit in memory", size);
    cb_arena_chunk *chunk = cb_malloc(sizeof *chunk + size);
    if (chunk == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu bytes of a model", size);
    *chunk = (cb_arena_chunk){.next = arena->chunks, .size = size, .bytes = (uint8_t *)(chunk + 1)};
    arena->chunks = chunk;
    return CBLOB_OK;
}

cblob_status cb_arena_reserve(cb_arena *arena, size_t size, size_t align, void **out)
{
    cb_arena_chunk *chunk = arena->chunks;
    size_t at = chunk != NULL ? (chunk->used + align - 1) & ~(align - 1) : 0;
    if (chunk == NULL || chunk->taken || at > chunk->size || chunk->size - at < size) {
        CB_TRY(new_chunk(arena, next_chunk_size(arena, size + align)));
        chunk = arena->chunks;
        at = 0; /* malloc's memory is aligned for any type */
    }
    *out = chunk->bytes + at;
    chunk->used = at + size;
    arena->total += size;
    return CBLOB_OK;
}

cblob_status cb_arena_keep(cb_arena *arena, cb_bytes *bytes, size_t align, const uint8_t **out)
{
    if (bytes->size < CB_ARENA_TAKE_OVER) {
        void *copy = NULL;
        CB_TRY(cb_arena_reserve(arena, bytes->size, align, &copy));
        if (bytes->size > 0)
            memcpy(copy, bytes->data, bytes->size);
        *out = copy;
        bytes->size = 0;
        return CBLOB_OK;
    }
    cb_arena_chunk *chunk = cb_malloc(sizeof *chunk);
    if (chunk == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu bytes of a model", bytes->size);
    uint8_t *kept = cb_realloc(bytes->data, bytes->size); /* the capacity past it goes back */
    kept = kept != NULL ? kept : bytes->data;
    /* A taken-over chunk stands behind the current one, which stays the one that fills. */
    cb_arena_chunk **at = arena->chunks != NULL ? &arena->chunks->next : &arena->chunks;
    *chunk = (cb_arena_chunk){.next = *at, .size = bytes->size, .used = bytes->size, .bytes = kept, .taken = true};
    *at = chunk;
    arena->total += bytes->size;
    *out = kept;
    *bytes = (cb_bytes){0};
    return CBLOB_OK;
}

void cb_arena_free(cb_arena *arena)
{
    for (cb_arena_chunk *chunk = arena->chunks, *next; chunk != NULL; chunk = next) {
        next = chunk->next;
        if (chunk->taken)
            free(chunk->bytes);
        free(chunk);
    }
    *arena = (cb_arena){0};
}

/* ---- lifetime -------------------------------------------------------------------------------- */

cblob_status cb_model_new(cblob_context *context, cblob_net_format format, cblob_model **out)
{
    cblob_model *model = cb_calloc(1, sizeof *model);
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
    model->name_nul = SIZE_MAX;
    *out = model;
    return CBLOB_OK;
}

size_t cb_model_blob_part_bytes(const cb_model_blob *blob, cblob_part part)
{
    const uint8_t dtype = part == CBLOB_PART_DATA ? blob->dtype : blob->diff_dtype;
    return dtype == 0 ? 0 : (size_t)cb_model_blob_count(blob) * cb_dtype_find((cblob_dtype)dtype)->size;
}

void cb_model_blob_free_arrays(cb_model_blob *blob)
{
    if (blob->flags & CB_BLOB_DATA_HOST)
        cb_host_free(blob->data, cb_model_blob_part_bytes(blob, CBLOB_PART_DATA));
    if (blob->flags & CB_BLOB_DIFF_HOST)
        cb_host_free(blob->diff, cb_model_blob_part_bytes(blob, CBLOB_PART_DIFF));
    blob->data = blob->diff = NULL;
    blob->flags &= (uint8_t) ~(CB_BLOB_DATA_HOST | CB_BLOB_DIFF_HOST);
}

static void free_blobs(cb_model_blob *blobs, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        cb_model_blob_free_arrays(&blobs[i]);
        cb_blob_release(blobs[i].handle);
    }
}

void cb_model_free(cblob_model *model)
{
    cb_input_file_close(model->file);
    for (int64_t i = 0; i < model->num_layers; ++i)
        free_blobs(model->layers[i].blobs, model->layers[i].num_blobs);
    for (int64_t i = 0; i < model->num_indexes; ++i)
        free(model->indexes[i]); /* one block each (model_layers.c) */
    free(model->indexes);
    free(model->layers);
    cb_arena_free(&model->arena);
    cb_bytes_free(&model->top);
    pthread_mutex_destroy(&model->lock);
    cb_context_release(model->context);
    free(model);
}

void cb_model_lock(const cblob_model *model)
{
    pthread_mutex_lock(&((cblob_model *)model)->lock);
}

void cb_model_unlock(const cblob_model *model)
{
    pthread_mutex_unlock(&((cblob_model *)model)->lock);
}

/* ---- finding layers and blobs ------------------------------------------------------------------ */

cblob_status cb_model_layer(const cblob_model *model, int64_t layer, const cb_layer **out)
{
    if (layer < 0 || layer >= model->num_layers)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "layer %" PRId64 " is outside [0, %" PRId64 ")", layer,
                       model->num_layers);
    *out = &model->layers[layer];
    return CBLOB_OK;
}

cblob_status cb_model_blob_at(const cblob_model *model, int64_t layer, int64_t index, cb_model_blob **out)
{
    const cb_layer *found = NULL;
    CB_TRY(cb_model_layer(model, layer, &found));
    if (index < 0 || index >= (int64_t)found->num_blobs)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "blob %" PRId64 " is outside [0, %" PRId64 ") for layer %" PRId64 " (%s)",
                       index, (int64_t)found->num_blobs, layer, found->name);
    *out = &found->blobs[index];
    return CBLOB_OK;
}

int64_t cb_model_blob_count(const cb_model_blob *blob)
{
    if (blob->dims == NULL)
        return blob->handle != NULL ? blob->handle->shape.count : 0;
    /* A shape with a 0 among its dims holds nothing, whatever the others say: the walk accepts
     * huge dims beside a 0 (Caffe does), whose product must not be formed (fuzz_blob_vector). */
    for (int32_t i = 0; i < blob->num_axes; ++i)
        if (blob->dims[i] == 0)
            return 0;
    int64_t count = 1;
    for (int32_t i = 0; i < blob->num_axes; ++i)
        count *= blob->dims[i];
    return count;
}

/* ---- building layers ------------------------------------------------------------------------- */

void cb_layer_draft_init(cb_layer_draft *draft)
{
    *draft = (cb_layer_draft){.name_at = SIZE_MAX, .type_at = SIZE_MAX};
}

void cb_layer_draft_free(cb_layer_draft *draft)
{
    free_blobs((cb_model_blob *)draft->blobs.data, draft->blobs.size / sizeof(cb_model_blob));
    cb_bytes_free(&draft->bytes);
    cb_bytes_free(&draft->blobs);
    cb_bytes_free(&draft->frames);
    cb_bytes_free(&draft->frame);
    cb_layer_draft_init(draft);
}

cblob_status cb_model_keep_dims(cblob_model *model, const int64_t *dims, int32_t num_axes, const int64_t **out)
{
    void *kept = NULL;
    CB_TRY(cb_arena_reserve(&model->arena, (size_t)num_axes * sizeof *dims, 8, &kept));
    if (num_axes > 0)
        memcpy(kept, dims, (size_t)num_axes * sizeof *dims);
    *out = kept;
    return CBLOB_OK;
}

/* Arrays up to this size live in the arena: a blob of a few values costs no allocation of its own
 * (a handle copies them instead of adopting them). */
#define CB_ARENA_ARRAY_MAX ((size_t)4096)

cblob_status cb_model_alloc_array(cblob_model *model, size_t bytes, uint8_t host_flag, void **out, uint8_t *flags)
{
    *out = NULL;
    if (bytes == 0)
        return CBLOB_OK;
    if (bytes <= CB_ARENA_ARRAY_MAX)
        return cb_arena_reserve(&model->arena, bytes, 8, out);
    CB_TRY(cb_host_alloc(bytes, false, out));
    *flags |= host_flag;
    return CBLOB_OK;
}

/* Inserts a NUL byte at `at` of the draft's bytes: positions from it on move one byte. */
static void insert_nul(cb_layer_draft *draft, size_t at)
{
    memmove(draft->bytes.data + at + 1, draft->bytes.data + at, draft->bytes.size - at);
    draft->bytes.data[at] = '\0';
    ++draft->bytes.size;
    cb_model_blob *blobs = (cb_model_blob *)draft->blobs.data;
    for (size_t i = 0; i < draft->blobs.size / sizeof *blobs; ++i)
        blobs[i].at += blobs[i].at >= at;
    cb_frame *frames = (cb_frame *)draft->frames.data;
    for (size_t i = 0; i < draft->frames.size / sizeof *frames; ++i) {
        frames[i].at += frames[i].at >= at;
        frames[i].end += frames[i].end >= at;
    }
    /* Text starts after a field's tag: never at a NUL's place, but an empty text's NUL is its start. */
    draft->name_at += draft->name_at != SIZE_MAX && draft->name_at > at;
    draft->type_at += draft->type_at != SIZE_MAX && draft->type_at > at;
}

static cblob_status grow_layers(cblob_model *model)
{
    if (model->num_layers < model->capacity)
        return CBLOB_OK;
    const int64_t next = model->capacity > 0 ? model->capacity * 2 : 8;
    cb_layer *grown = cb_realloc(model->layers, (size_t)next * sizeof *grown);
    if (grown == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", next);
    model->layers = grown;
    model->capacity = next;
    return CBLOB_OK;
}

cblob_status cb_model_keep_layer(cblob_model *model, cb_layer_draft *draft, size_t lead_end)
{
    const size_t num_blobs = draft->blobs.size / sizeof(cb_model_blob);
    const size_t text = draft->type_text != NULL ? strlen(draft->type_text) + 1 : 0;
    if (draft->bytes.size > UINT32_MAX - 2 - text || lead_end > UINT32_MAX || num_blobs > UINT32_MAX)
        return cb_fail(CBLOB_ERR_OVERFLOW, "layer %" PRId64 " takes more than 4 GiB besides its values; Caffe reads at "
                       "most 2 GiB", model->num_layers);
    CB_TRY(grow_layers(model));
    CB_TRY(cb_bytes_reserve(&draft->bytes, 2 + text));
    /* NULs after the name's and the type's text, the later one first. */
    const size_t name_end = draft->name_at != SIZE_MAX ? draft->name_at + draft->name_length : SIZE_MAX;
    const size_t type_end = draft->type_at != SIZE_MAX ? draft->type_at + draft->type_length : SIZE_MAX;
    const bool type_later = type_end != SIZE_MAX && (name_end == SIZE_MAX || type_end > name_end);
    if (type_later)
        insert_nul(draft, type_end);
    if (name_end != SIZE_MAX)
        insert_nul(draft, name_end);
    if (type_end != SIZE_MAX && !type_later)
        insert_nul(draft, draft->type_at + draft->type_length);
    const size_t field_size = draft->bytes.size, name_at = draft->name_at, type_at = draft->type_at;
    size_t text_at = SIZE_MAX;
    if (text > 0) {
        text_at = draft->bytes.size;
        CB_TRY(cb_bytes_append(&draft->bytes, draft->type_text, text));
    }
    cb_layer layer = {.lead_end = (uint32_t)lead_end, .size = (uint32_t)field_size, .num_blobs = (uint32_t)num_blobs,
                      .num_frames = (uint32_t)(draft->frames.size / sizeof(cb_frame))};
    const uint8_t *bytes = NULL, *blobs = NULL, *frames = NULL;
    CB_TRY(cb_arena_keep(&model->arena, &draft->bytes, 1, &bytes));
    CB_TRY(cb_arena_keep(&model->arena, &draft->frames, 4, &frames));
    CB_TRY(cb_arena_keep(&model->arena, &draft->blobs, 8, &blobs)); /* the arrays are the model's from here on */
    layer.bytes = bytes;
    layer.blobs = num_blobs > 0 ? (cb_model_blob *)blobs : NULL;
    layer.frames = layer.num_frames > 0 ? (const cb_frame *)frames : NULL;
    layer.name = name_at != SIZE_MAX ? (const char *)bytes + name_at : "";
    layer.type = type_at != SIZE_MAX ? (const char *)bytes + type_at : text_at != SIZE_MAX ? (const char *)bytes + text_at : "";
    model->layers[model->num_layers++] = layer;
    draft->name_at = draft->type_at = SIZE_MAX;
    draft->type_text = NULL;
    return CBLOB_OK;
}

/* ---- creating --------------------------------------------------------------------------------- */

/* A length-delimited field's tag and length. */
static cblob_status put_prefix(cb_bytes *bytes, uint32_t field, uint64_t length)
{
    CB_TRY(cb_bytes_put_varint(bytes, ((uint64_t)field << 3) | CB_WIRE_LENGTH));
    return cb_bytes_put_varint(bytes, length);
}

cblob_status cb_model_create(cblob_context *context, cblob_net_format format, const char *name, cblob_model **out_model)
{
    cblob_model *model = NULL;
    CB_TRY(cb_model_new(context, format, &model));
    /* As Caffe writes a net: its name before its layers. */
    cblob_status status = CBLOB_OK;
    if (name != NULL) {
        status = put_prefix(&model->top, CB_NET_NAME, strlen(name));
        if (status == CBLOB_OK)
            status = cb_bytes_append(&model->top, name, strlen(name) + 1);
        if (status == CBLOB_OK) {
            model->name_nul = model->top.size - 1;
            model->name = (const char *)model->top.data + model->name_nul - strlen(name);
        }
    }
    if (status != CBLOB_OK) {
        cb_model_free(model);
        return status;
    }
    *out_model = model;
    return CBLOB_OK;
}

/* A text field of a new layer; *at is where its text starts. */
static cblob_status put_text(cb_bytes *bytes, uint32_t field, const char *text, size_t *at)
{
    CB_TRY(put_prefix(bytes, field, strlen(text)));
    *at = bytes->size;
    return cb_bytes_append(bytes, text, strlen(text));
}

cblob_status cb_model_draft_layer(const cblob_model *model, const char *name, const char *type, int64_t num_blobs,
                                  cb_layer_draft *draft)
{
    const bool v1 = model->format == CBLOB_NET_FORMAT_V1;
    int32_t v1_type = 0;
    if (v1 && !cb_v1_type_value(type, &v1_type))
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "type \"%.64s\" is not a V1LayerParameter.LayerType name (such as CONVOLUTION) or number", type);
    CB_TRY(put_prefix(&draft->bytes, v1 ? CB_NET_LAYERS : CB_NET_LAYER, 0));
    CB_TRY(put_text(&draft->bytes, v1 ? CB_V1_NAME : CB_LAYER_NAME, name, &draft->name_at));
    draft->name_length = strlen(name);
    if (v1) {
        CB_TRY(cb_bytes_put_varint(&draft->bytes, (uint64_t)CB_V1_TYPE << 3 | CB_WIRE_VARINT));
        CB_TRY(cb_bytes_put_varint(&draft->bytes, (uint64_t)(int64_t)v1_type));
        draft->type_text = type; /* as given ("CONVOLUTION" or a number) */
    } else {
        CB_TRY(put_text(&draft->bytes, CB_LAYER_TYPE, type, &draft->type_at));
        draft->type_length = strlen(type);
    }
    if (num_blobs > 0 && (uint64_t)num_blobs > SIZE_MAX / sizeof(cb_model_blob) / 2)
        return cb_fail(CBLOB_ERR_OVERFLOW, "%" PRId64 " blobs do not fit in memory", num_blobs);
    const cb_model_blob blob = {.at = (uint32_t)draft->bytes.size};
    CB_TRY(cb_bytes_reserve(&draft->blobs, (size_t)num_blobs * sizeof blob));
    for (int64_t i = 0; i < num_blobs; ++i)
        CB_TRY(cb_bytes_append(&draft->blobs, &blob, sizeof blob));
    return CBLOB_OK;
}

cblob_status cb_model_add_layer(cblob_model *model, const char *name, const char *type, cblob_blob *const *blobs,
                                int64_t num_blobs)
{
    cb_layer_draft draft;
    cb_layer_draft_init(&draft);
    cb_model_lock(model);
    cblob_status status = cb_model_draft_layer(model, name, type, num_blobs, &draft);
    cb_model_blob *records = (cb_model_blob *)draft.blobs.data;
    for (int64_t i = 0; status == CBLOB_OK && i < num_blobs; ++i)
        records[i].handle = blobs[i];
    if (status == CBLOB_OK)
        status = cb_model_keep_layer(model, &draft, model->top.size);
    if (status == CBLOB_OK)
        for (int64_t i = 0; i < num_blobs; ++i)
            cb_blob_retain(blobs[i]);
    cb_model_unlock(model);
    draft.blobs.size = 0; /* the handles are the caller's until kept */
    cb_layer_draft_free(&draft);
    return status;
}

/* ---- frames ---------------------------------------------------------------------------------- */

static uint64_t read_varint(const uint8_t *bytes, size_t *pos, size_t end)
{
    uint64_t value = 0;
    size_t length = 0;
    cb_varint_decode(bytes + *pos, end - *pos, &value, &length); /* checked when the file was read */
    *pos += length;
    return value;
}

/* Moves past a field of a frame whose tag was read (fields were checked when the file was read). */
static void skip_field(const uint8_t *bytes, size_t *pos, size_t end, uint64_t tag)
{
    switch (tag & 7) {
    case CB_WIRE_VARINT: (void)read_varint(bytes, pos, end); break;
    case CB_WIRE_FIXED64: *pos += 8; break;
    case CB_WIRE_FIXED32: *pos += 4; break;
    case CB_WIRE_LENGTH: {
        const uint64_t length = read_varint(bytes, pos, end);
        *pos += (size_t)length;
        break;
    }
    case CB_WIRE_GROUP_START:
        for (;;) {
            const uint64_t inner = read_varint(bytes, pos, end);
            if ((inner & 7) == CB_WIRE_GROUP_END)
                break;
            skip_field(bytes, pos, end, inner);
        }
        break;
    default: break;
    }
}

size_t cb_frame_body(const cb_model_blob *blob)
{
    size_t pos = 0;
    (void)read_varint(blob->frame, &pos, blob->frame_size);
    (void)read_varint(blob->frame, &pos, blob->frame_size);
    return pos;
}

bool cb_frame_next(const cb_model_blob *blob, size_t *pos, cb_frame_piece *out)
{
    const uint8_t *frame = blob->frame;
    const size_t end = blob->frame_size;
    if (*pos == 0)
        *pos = cb_frame_body(blob);
    if (*pos >= end)
        return false;
    const uint32_t data = blob->dtype == CBLOB_DTYPE_FLOAT64 ? CB_BLOB_DOUBLE_DATA : CB_BLOB_DATA;
    const uint32_t diff = blob->diff_dtype == 0 ? CB_WIRE_END
                          : blob->diff_dtype == CBLOB_DTYPE_FLOAT64 ? CB_BLOB_DOUBLE_DIFF
                                                                    : CB_BLOB_DIFF;
    const size_t start = *pos;
    for (size_t at = start; at < end;) {
        size_t after = at;
        const uint64_t tag = read_varint(frame, &after, end);
        const uint32_t number = (uint32_t)(tag >> 3);
        if (number != data && number != diff) {
            skip_field(frame, &after, end, tag);
            at = after;
            continue;
        }
        if (at > start) { /* the kept bytes before it first */
            *out = (cb_frame_piece){.bytes = frame + start, .size = at - start};
            *pos = at;
            return true;
        }
        const bool packed = (tag & 7) == CB_WIRE_LENGTH;
        const bool is_double = cb_is_double_field(number);
        int64_t count = 1;
        if (packed) {
            count = (int64_t)(read_varint(frame, &after, end) / (is_double ? 8 : 4));
        } else { /* unpacked elements of the field in a row: the same tag, again and again */
            const size_t tag_size = after - at;
            size_t next = after;
            while (next + tag_size <= end && memcmp(frame + next, frame + at, tag_size) == 0)
                next += tag_size, ++count;
            *out = (cb_frame_piece){.bytes = frame + at, .size = tag_size, .values = true, .packed = false,
                                    .part = number == data ? CBLOB_PART_DATA : CBLOB_PART_DIFF,
                                    .is_double = is_double, .count = count};
            *pos = next;
            return true;
        }
        *out = (cb_frame_piece){.bytes = frame + at, .size = after - at, .values = true, .packed = packed,
                                .part = number == data ? CBLOB_PART_DATA : CBLOB_PART_DIFF, .is_double = is_double,
                                .count = count};
        *pos = after;
        return true;
    }
    *out = (cb_frame_piece){.bytes = frame + start, .size = end - start};
    *pos = end;
    return true;
}

/* ---- writing a layer ---------------------------------------------------------------------------- */

/* The tag and length at `at` of a layer's bytes: their sizes and the length's value. */
typedef struct field_header {
    size_t tag_size, length_size;
    uint64_t length;
} field_header;

static field_header header_at(const uint8_t *bytes, size_t at, size_t end)
{
    field_header header;
    size_t pos = at;
    (void)read_varint(bytes, &pos, end);
    header.tag_size = pos - at;
    header.length = read_varint(bytes, &pos, end);
    header.length_size = pos - at - header.tag_size;
    return header;
}

/* A layer's bytes while they are written: where its NULs are, and each blob's size. */
typedef struct layer_writer {
    const cb_layer *layer;
    cb_blob_writer *write;
    void *context;
    size_t nul[2];          /* the NULs after the name and the type (SIZE_MAX: none) */
    uint64_t *frame_blobs;  /* per frame: the size of the blobs it holds */
    uint64_t frame_growth;  /* how much longer the frames' length varints got in total */
    uint64_t blobs;         /* the size of all blobs */
} layer_writer;

static size_t nul_of(const cb_layer *layer, const char *text)
{
    const uint8_t *at = (const uint8_t *)text;
    if (at < layer->bytes || at >= layer->bytes + layer->size)
        return SIZE_MAX;
    return (size_t)(at - layer->bytes) + strlen(text);
}

/* The frame a blob stands in, or -1 (a blob at a frame's end may stand just inside or just after
 * it: its flag tells). */
static int64_t frame_of(const cb_layer *layer, const cb_model_blob *blob)
{
    for (uint32_t i = 0; (blob->flags & CB_BLOB_IN_FRAME) && i < layer->num_frames; ++i)
        if (blob->at > layer->frames[i].at && blob->at <= layer->frames[i].end)
            return i;
    return -1;
}

static uint64_t nuls_in(const layer_writer *w, size_t from, size_t to)
{
    return (w->nul[0] >= from && w->nul[0] < to) + (w->nul[1] >= from && w->nul[1] < to);
}

/* The size each frame's content and the layer's content take as written. */
static cblob_status measure(layer_writer *w)
{
    const cb_layer *layer = w->layer;
    for (uint32_t i = 0; w->write != NULL && i < layer->num_blobs; ++i) {
        cb_sink counter;
        cb_sink_count(&counter);
        CB_TRY(w->write(w->context, i, &layer->blobs[i], &counter));
        CB_TRY(counter.status);
        const int64_t frame = frame_of(layer, &layer->blobs[i]);
        if (frame >= 0)
            w->frame_blobs[frame] += counter.size;
        w->blobs += counter.size;
    }
    for (uint32_t i = 0; i < layer->num_frames; ++i) {
        const cb_frame *frame = &layer->frames[i];
        const field_header header = header_at(layer->bytes, frame->at, layer->size);
        const size_t body = frame->at + header.tag_size + header.length_size;
        const uint64_t content = frame->end - body - nuls_in(w, body, frame->end) + w->frame_blobs[i];
        /* As write_header writes it: the length's own bytes kept while it is unchanged, however
         * long they are (a zero written in two bytes stays two: fuzz_model). */
        if (content != header.length)
            w->frame_growth += cb_varint_size(content) - header.length_size;
        w->frame_blobs[i] = content; /* from here on: the frame's content size */
    }
    return CBLOB_OK;
}

/* Writes a field's tag and its length: the bytes as they were when the length is unchanged. */
static void write_header(cb_sink *sink, const uint8_t *at, const field_header *header, uint64_t length)
{
    cb_sink_write(sink, at, header->tag_size);
    if (length == header->length) {
        cb_sink_write(sink, at + header->tag_size, header->length_size);
    } else {
        uint8_t encoded[CB_VARINT_MAX_BYTES];
        cb_sink_write(sink, encoded, cb_varint_encode(encoded, length));
    }
}

/* The layer's bytes [from, size): runs of bytes, NULs left out, frames' headers written anew and
 * blobs in their places. */
static cblob_status write_body(const layer_writer *w, size_t from, cb_sink *sink)
{
    const cb_layer *layer = w->layer;
    uint32_t blob = 0, frame = 0;
    while (blob < layer->num_blobs && layer->blobs[blob].at < from)
        ++blob;
    for (size_t at = from; at <= layer->size;) {
        size_t next = layer->size;
        for (int i = 0; i < 2; ++i)
            next = w->nul[i] >= at && w->nul[i] < next ? w->nul[i] : next;
        if (frame < layer->num_frames && layer->frames[frame].at < next)
            next = layer->frames[frame].at;
        if (blob < layer->num_blobs && layer->blobs[blob].at < next)
            next = layer->blobs[blob].at;
        cb_sink_write(sink, layer->bytes + at, next - at);
        at = next;
        if (blob < layer->num_blobs && layer->blobs[blob].at == at) {
            if (w->write != NULL)
                CB_TRY(w->write(w->context, blob, &layer->blobs[blob], sink));
            ++blob;
        } else if (frame < layer->num_frames && layer->frames[frame].at == at) {
            const field_header header = header_at(layer->bytes, at, layer->size);
            write_header(sink, layer->bytes + at, &header, w->frame_blobs[frame]);
            at += header.tag_size + header.length_size;
            ++frame;
        } else if (at < layer->size) { /* a NUL */
            ++at;
        } else {
            break;
        }
    }
    return sink->status;
}

cblob_status cb_layer_emit(const cb_layer *layer, cb_blob_writer *write, void *context, cb_sink *sink)
{
    uint64_t frame_sizes[4] = {0};
    layer_writer w = {.layer = layer, .write = write, .context = context,
                      .nul = {nul_of(layer, layer->name), nul_of(layer, layer->type)}, .frame_blobs = frame_sizes};
    if (layer->num_frames > sizeof frame_sizes / sizeof *frame_sizes &&
        (w.frame_blobs = cb_calloc(layer->num_frames, sizeof *w.frame_blobs)) == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write a layer of %u V0 layers", layer->num_frames);
    cblob_status status = measure(&w);
    if (status == CBLOB_OK) {
        const field_header header = header_at(layer->bytes, 0, layer->size);
        const size_t body = header.tag_size + header.length_size;
        const uint64_t content = layer->size - body - nuls_in(&w, body, layer->size) + w.blobs + w.frame_growth;
        write_header(sink, layer->bytes, &header, content);
        status = write_body(&w, body, sink);
    }
    if (w.frame_blobs != frame_sizes)
        free(w.frame_blobs);
    return status;
}

void cb_model_emit_top(const cblob_model *model, size_t from, size_t to, cb_sink *sink)
{
    if (from >= to) /* nothing, and a net made empty has no top bytes at all */
        return;
    if (model->name_nul >= from && model->name_nul < to) {
        cb_sink_write(sink, model->top.data + from, model->name_nul - from);
        from = model->name_nul + 1;
    }
    cb_sink_write(sink, model->top.data + from, to - from);
}

/* ---- the public calls: creating, and the net's structure ----------------------------------------- */

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
    return cb_model_create(context, format, name, out_model);
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
    cb_model_lock(model);
    *out_num_layers = model->num_layers;
    cb_model_unlock(model);
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

CBLOB_API cblob_status cblob_model_layer_name(const cblob_model *model, int64_t layer, const char **out_name)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    const cb_layer *found = NULL;
    CB_TRY(cb_model_layer(model, layer, &found));
    *out_name = found->name;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_type(const cblob_model *model, int64_t layer, const char **out_type)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_type);
    const cb_layer *found = NULL;
    CB_TRY(cb_model_layer(model, layer, &found));
    *out_type = found->type;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_num_blobs(const cblob_model *model, int64_t layer, int64_t *out_num_blobs)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_num_blobs);
    const cb_layer *found = NULL;
    CB_TRY(cb_model_layer(model, layer, &found));
    *out_num_blobs = found->num_blobs;
    return CBLOB_OK;
}
