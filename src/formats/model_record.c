/* SPDX-License-Identifier: BSD-2-Clause */
/* The bytes a model is made of: growable buffers, the arena of records, and reading records. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "proto_blob.h"
#include "status.h"

/* ---- growable bytes ------------------------------------------------------------------------- */

cblob_status cb_bytes_append(cb_bytes *bytes, const void *data, size_t size)
{
    if (size > bytes->capacity - bytes->size) {
        if (size > SIZE_MAX / 2 - bytes->size)
            return cb_fail(CBLOB_ERR_OVERFLOW, "%zu more bytes do not fit in memory", size);
        size_t capacity = bytes->capacity > 0 ? bytes->capacity : 256;
        while (capacity < bytes->size + size)
            capacity *= 2;
        uint8_t *grown = realloc(bytes->data, capacity);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu bytes", capacity);
        bytes->data = grown;
        bytes->capacity = capacity;
    }
    if (size > 0)
        memcpy(bytes->data + bytes->size, data, size);
    bytes->size += size;
    return CBLOB_OK;
}

cblob_status cb_bytes_put_u8(cb_bytes *bytes, uint8_t value)
{
    return cb_bytes_append(bytes, &value, 1);
}

cblob_status cb_bytes_put_varint(cb_bytes *bytes, uint64_t value)
{
    uint8_t encoded[10];
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
    /* Records hold array pointers, read with memcpy: no alignment is needed. */
    uint8_t bytes[];
};

/* Chunks grow with the arena (an eighth of it, from 64 KiB to 8 MiB), so a model of many small
 * layers makes few allocations and wastes at most a chunk's tail. */
static size_t next_chunk_size(const cb_arena *arena, size_t needed)
{
    size_t size = arena->total / 8;
    size = size < (64u << 10) ? (64u << 10) : size > (8u << 20) ? (8u << 20) : size;
    return needed > size ? needed : size;
}

cblob_status cb_arena_reserve(cb_arena *arena, size_t size, uint8_t **out)
{
    cb_arena_chunk *chunk = arena->chunks;
    if (chunk == NULL || chunk->size - chunk->used < size) {
        const size_t chunk_size = next_chunk_size(arena, size);
        if (chunk_size > SIZE_MAX - sizeof *chunk)
            return cb_fail(CBLOB_ERR_OVERFLOW, "a %zu-byte record does not fit in memory", size);
        chunk = malloc(sizeof *chunk + chunk_size);
        if (chunk == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu bytes of layers", chunk_size);
        *chunk = (cb_arena_chunk){.next = arena->chunks, .size = chunk_size};
        arena->chunks = chunk;
    }
    *out = chunk->bytes + chunk->used;
    chunk->used += size;
    arena->total += size;
    return CBLOB_OK;
}

void cb_arena_free(cb_arena *arena)
{
    for (cb_arena_chunk *chunk = arena->chunks, *next; chunk != NULL; chunk = next) {
        next = chunk->next;
        free(chunk);
    }
    *arena = (cb_arena){0};
}

/* ---- varints -------------------------------------------------------------------------------- */

uint64_t cb_varint_read(const uint8_t **cursor)
{
    uint64_t value = 0;
    size_t length = 0;
    cb_varint_decode(*cursor, CB_VARINT_MAX_BYTES, &value, &length);
    *cursor += length;
    return value;
}

size_t cb_varint_length(const uint8_t *p)
{
    uint64_t value = 0;
    size_t length = 0;
    cb_varint_decode(p, CB_VARINT_MAX_BYTES, &value, &length);
    return length;
}

/* ---- operations ----------------------------------------------------------------------------- */

static void read_tag(const uint8_t **cursor, cb_op *op)
{
    op->tag = *cursor;
    op->field = (uint32_t)(cb_varint_read(cursor) >> 3);
    op->tag_size = (size_t)(*cursor - op->tag);
}

static void read_length(const uint8_t **cursor, cb_op *op)
{
    op->length = *cursor;
    op->original = cb_varint_read(cursor);
    op->length_size = (size_t)(*cursor - op->length);
}

/* Moves past inner operations up to and including their END. */
static void skip_inner(const uint8_t **cursor, bool in_blob_arrays)
{
    for (;;) {
        cb_op inner;
        cb_op_read(cursor, in_blob_arrays, &inner);
        if (inner.code == CB_OP_END)
            return;
    }
}

/* A raw blob's dims, from its bytes (checked when the model was opened). */
void cb_op_load_dims(cb_op *op)
{
    if (!(op->blob_flags & CB_BLOB_RAW))
        return;
    cb_blob_layout layout;
    cb_shape shape = {0};
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    if (cb_blob_layout_scan(cb_wire_range(op->bytes, 0, op->size, &root), &layout) == CBLOB_OK)
        cb_blob_layout_check(&layout, &root, 4, &shape);
    op->num_axes = shape.num_axes;
    memcpy(op->dims, shape.dims, sizeof op->dims);
}

static void read_blob_header(const uint8_t **cursor, cb_op *op)
{
    op->flags = (uint8_t *)*cursor;
    op->blob_flags = *(*cursor)++;
    if (op->blob_flags & CB_BLOB_RAW) {
        op->bytes = *cursor;
        op->size = (size_t)op->original;
        *cursor += op->size;
        op->arrays = NULL;
        op->inner = NULL;
        op->num_axes = 0;
        return;
    }
    op->num_axes = (int32_t)cb_varint_read(cursor);
    for (int32_t i = 0; i < op->num_axes; ++i)
        op->dims[i] = (int64_t)cb_varint_read(cursor);
    op->arrays = NULL;
    if (op->blob_flags & CB_BLOB_ARRAYS) {
        op->arrays = (uint8_t *)*cursor;
        *cursor += 2 * sizeof(void *);
    }
    op->file_offset = 0;
    if (op->blob_flags & CB_BLOB_LAZY)
        op->file_offset = cb_varint_read(cursor);
}

static void read_values(const uint8_t **cursor, bool in_blob_arrays, cb_op *op)
{
    op->values_flags = *(*cursor)++;
    read_tag(cursor, op);
    const size_t element = (op->values_flags & CB_VALUES_DOUBLE) ? 8 : 4;
    if (op->values_flags & CB_VALUES_UNPACKED) {
        op->count = (int64_t)cb_varint_read(cursor);
    } else {
        read_length(cursor, op);
        op->count = (int64_t)(op->original / element);
    }
    if (in_blob_arrays) {
        op->first = (int64_t)cb_varint_read(cursor);
        op->payload = NULL;
    } else {
        op->payload = *cursor;
        *cursor += (size_t)op->count * element;
    }
}

void cb_op_read(const uint8_t **cursor, bool in_blob_arrays, cb_op *op)
{
    op->start = *cursor;
    op->code = *(*cursor)++;
    switch (op->code) {
    case CB_OP_BYTES:
        op->size = (size_t)cb_varint_read(cursor);
        op->bytes = *cursor;
        *cursor += op->size;
        break;
    case CB_OP_TEXT:
        read_tag(cursor, op);
        read_length(cursor, op);
        op->bytes = *cursor;
        op->size = (size_t)op->original;
        *cursor += op->size + 1;
        break;
    case CB_OP_MESSAGE:
        read_tag(cursor, op);
        read_length(cursor, op);
        op->inner = *cursor;
        skip_inner(cursor, false);
        break;
    case CB_OP_BLOB:
        read_tag(cursor, op);
        read_length(cursor, op);
        read_blob_header(cursor, op);
        if (!(op->blob_flags & CB_BLOB_RAW)) {
            op->inner = *cursor;
            skip_inner(cursor, op->arrays != NULL);
        }
        break;
    case CB_OP_VALUES: read_values(cursor, in_blob_arrays, op); break;
    case CB_OP_NEW_BLOB: read_tag(cursor, op); break;
    default: break; /* CB_OP_END */
    }
}

void cb_op_arrays(const cb_op *blob, void **data, void **diff)
{
    memcpy(data, blob->arrays, sizeof *data);
    memcpy(diff, blob->arrays + sizeof *data, sizeof *diff);
}

void cb_op_set_arrays(const cb_op *blob, void *data, void *diff)
{
    memcpy(blob->arrays, &data, sizeof data);
    memcpy(blob->arrays + sizeof data, &diff, sizeof diff);
}

/* ---- layer records -------------------------------------------------------------------------- */

typedef struct record_header {
    uint64_t name_offset, type_offset;
    int64_t num_blobs;
    uint8_t *slots; /* where the slots pointer is stored, or NULL */
    const uint8_t *body;
} record_header;

static record_header read_header(const uint8_t *record)
{
    record_header header;
    const uint8_t *cursor = record;
    header.name_offset = cb_varint_read(&cursor);
    header.type_offset = cb_varint_read(&cursor);
    header.num_blobs = (int64_t)cb_varint_read(&cursor);
    header.slots = header.num_blobs > 0 ? (uint8_t *)cursor : NULL;
    header.body = header.num_blobs > 0 ? cursor + sizeof(cblob_blob **) : cursor;
    return header;
}

int64_t cb_record_num_blobs(const uint8_t *record)
{
    return read_header(record).num_blobs;
}

const char *cb_record_name(const uint8_t *record)
{
    const record_header header = read_header(record);
    return (const char *)header.body + header.name_offset;
}

const char *cb_record_type(const uint8_t *record)
{
    const record_header header = read_header(record);
    return (const char *)header.body + header.type_offset;
}

cblob_blob **cb_record_slots(const uint8_t *record)
{
    const record_header header = read_header(record);
    cblob_blob **slots = NULL;
    if (header.slots != NULL)
        memcpy(&slots, header.slots, sizeof slots);
    return slots;
}

void cb_record_set_slots(uint8_t *record, cblob_blob **slots)
{
    memcpy(read_header(record).slots, &slots, sizeof slots);
}

const uint8_t *cb_record_ops(const uint8_t *record)
{
    return read_header(record).body;
}

cblob_status cb_record_store(cb_arena *arena, const cb_bytes *body, uint64_t name_offset, uint64_t type_offset,
                             int64_t num_blobs, uint8_t **out)
{
    uint8_t header[3 * 10 + sizeof(cblob_blob **)];
    size_t size = cb_varint_encode(header, name_offset);
    size += cb_varint_encode(header + size, type_offset);
    size += cb_varint_encode(header + size, (uint64_t)num_blobs);
    if (num_blobs > 0) {
        memset(header + size, 0, sizeof(cblob_blob **)); /* no handles yet */
        size += sizeof(cblob_blob **);
    }
    if (body->size > SIZE_MAX - size)
        return cb_fail(CBLOB_ERR_OVERFLOW, "a %zu-byte layer does not fit in memory", body->size);
    uint8_t *record;
    CB_TRY(cb_arena_reserve(arena, size + body->size, &record));
    memcpy(record, header, size);
    memcpy(record + size, body->data, body->size);
    *out = record;
    return CBLOB_OK;
}
