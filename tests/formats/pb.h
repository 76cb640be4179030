/* SPDX-License-Identifier: BSD-2-Clause */
/* A minimal protobuf encoder and field lister for the format tests, written apart from the
 * library so that tests build inputs (packed, unpacked, legacy, unknown fields, broken) and check
 * outputs without trusting the code under test. Header-only; each test file includes it once. */
#ifndef CBLOB_TESTS_FORMATS_PB_H
#define CBLOB_TESTS_FORMATS_PB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_LENGTH = 2, PB_GROUP_START = 3, PB_GROUP_END = 4, PB_FIXED32 = 5 };

typedef struct pb {
    uint8_t *data;
    size_t size, capacity;
} pb;

static inline void pb_free(pb *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

static inline void pb_raw(pb *b, const void *bytes, size_t n)
{
    if (b->size + n > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 256;
        while (capacity < b->size + n)
            capacity *= 2;
        uint8_t *grown = realloc(b->data, capacity);
        if (grown == NULL)
            abort(); /* tests only: out of memory ends the test process */
        b->data = grown;
        b->capacity = capacity;
    }
    if (n > 0)
        memcpy(b->data + b->size, bytes, n);
    b->size += n;
}

static inline void pb_varint(pb *b, uint64_t v)
{
    uint8_t bytes[10];
    size_t n = 0;
    do {
        bytes[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
    } while (v != 0);
    pb_raw(b, bytes, n);
}

static inline void pb_tag(pb *b, uint32_t field, int type)
{
    pb_varint(b, (uint64_t)field << 3 | (uint64_t)type);
}

static inline void pb_int(pb *b, uint32_t field, int64_t v)
{
    pb_tag(b, field, PB_VARINT);
    pb_varint(b, (uint64_t)v);
}

static inline void pb_bytes(pb *b, uint32_t field, const void *bytes, size_t n)
{
    pb_tag(b, field, PB_LENGTH);
    pb_varint(b, n);
    pb_raw(b, bytes, n);
}

static inline void pb_string(pb *b, uint32_t field, const char *text)
{
    pb_bytes(b, field, text, strlen(text));
}

static inline void pb_message(pb *b, uint32_t field, const pb *inner)
{
    pb_bytes(b, field, inner->data, inner->size);
}

static inline void pb_floats(pb *b, uint32_t field, const float *v, size_t n, bool packed)
{
    if (packed) {
        pb_bytes(b, field, v, n * sizeof *v);
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        pb_tag(b, field, PB_FIXED32);
        pb_raw(b, &v[i], sizeof v[i]);
    }
}

static inline void pb_doubles(pb *b, uint32_t field, const double *v, size_t n, bool packed)
{
    if (packed) {
        pb_bytes(b, field, v, n * sizeof *v);
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        pb_tag(b, field, PB_FIXED64);
        pb_raw(b, &v[i], sizeof v[i]);
    }
}

/* BlobProto.shape (field 7): a BlobShape of dims, packed or not. */
static inline void pb_shape(pb *b, const int64_t *dims, size_t n, bool packed)
{
    pb shape = {0}, packed_dims = {0};
    for (size_t i = 0; i < n; ++i) {
        if (packed) {
            pb_varint(&packed_dims, (uint64_t)dims[i]);
        } else {
            pb_int(&shape, 1, dims[i]);
        }
    }
    if (packed)
        pb_message(&shape, 1, &packed_dims);
    pb_message(b, 7, &shape);
    pb_free(&shape);
    pb_free(&packed_dims);
}

/* One top-level field of a message, as the lister finds it. */
typedef struct pb_field {
    uint32_t number;
    int type;
    uint64_t varint;
    const uint8_t *payload;
    size_t length;
} pb_field;

/* Lists up to max top-level fields; returns how many, or -1 for malformed input. */
static inline int pb_list(const uint8_t *data, size_t size, pb_field *fields, int max)
{
    size_t pos = 0;
    int count = 0;
    while (pos < size) {
        uint64_t values[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            unsigned shift = 0;
            for (;;) {
                if (pos >= size || shift > 63)
                    return -1;
                const uint8_t byte = data[pos++];
                values[k] |= (uint64_t)(byte & 0x7f) << shift;
                shift += 7;
                if (!(byte & 0x80))
                    break;
            }
            const int type = (int)(values[0] & 7);
            if (k == 0 && type != PB_VARINT && type != PB_LENGTH)
                break;
        }
        pb_field f = {.number = (uint32_t)(values[0] >> 3), .type = (int)(values[0] & 7)};
        if (f.type == PB_VARINT) {
            f.varint = values[1];
        } else if (f.type == PB_LENGTH) {
            if (values[1] > size - pos)
                return -1;
            f.payload = data + pos;
            f.length = (size_t)values[1];
            pos += f.length;
        } else if (f.type == PB_FIXED32 || f.type == PB_FIXED64) {
            f.length = f.type == PB_FIXED32 ? 4 : 8;
            if (f.length > size - pos)
                return -1;
            f.payload = data + pos;
            pos += f.length;
        } else {
            return -1;
        }
        if (count < max)
            fields[count] = f;
        ++count;
    }
    return count;
}

/* The first field with the given number, or NULL. */
static inline const pb_field *pb_find(const pb_field *fields, int count, uint32_t number)
{
    for (int i = 0; i < count; ++i)
        if (fields[i].number == number)
            return &fields[i];
    return NULL;
}

#endif
