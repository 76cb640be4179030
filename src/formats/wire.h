/* SPDX-License-Identifier: BSD-2-Clause */
/* The protobuf wire format, read by hand: every field's tag, wire type, bounds and byte offset.
 *
 * protobuf-c reports only that a message failed to unpack, not where or why, and keeps ~32
 * bytes of bookkeeping per element of an unpacked repeated field. This reader walks a message
 * without copying anything, checks that every length stays inside its parent, and turns any
 * problem into CBLOB_ERR_PARSE with a message naming the field (as a path from the top-level
 * message, with protobuf-c's own field names) and its byte offset from the start of the input.
 * The walker (walk.h) reads Caffe's messages with it.
 *
 * The input need not be in memory whole: a cursor may carry a `need` hook, which it calls before it
 * reads a field's tag and length (or a fixed or varint value), so that a file is read as the walk
 * goes (source.h). Payloads of length-delimited fields are the caller's to ask for. */
#ifndef CBLOB_SRC_WIRE_H
#define CBLOB_SRC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "cblob/cblob.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#  error "cblob's proto readers copy fixed32/fixed64 payloads as host floats: little-endian hosts only"
#endif

/* protobuf's limit on a serialized message, which Caffe's reader enforces (INT_MAX bytes). */
#define CB_PROTO_MAX_MESSAGE ((size_t)INT32_MAX)

enum {
    CB_WIRE_VARINT = 0,
    CB_WIRE_FIXED64 = 1,
    CB_WIRE_LENGTH = 2,
    CB_WIRE_GROUP_START = 3,
    CB_WIRE_GROUP_END = 4,
    CB_WIRE_FIXED32 = 5,
};

/* Where a message sits, for error messages: "NetParameter.layer[3](conv1).blobs[0]". Each
 * nested message adds a frame on the C stack that points at its parent. */
typedef struct cb_wire_path {
    const struct cb_wire_path *parent;
    const ProtobufCMessageDescriptor *message; /* names the message and its fields; NULL: not known yet */
    const char *field;                         /* the parent's field holding this message, or NULL at the top */
    int64_t index;                             /* its position in a repeated field, or -1 */
    const char *label;                         /* a layer name, when known; or NULL */
} cb_wire_path;

/* Makes input[from, to) readable (to clipped to the input's end). */
typedef cblob_status cb_wire_need(void *source, size_t from, size_t to);

/* A cursor over one message: offsets count from the start of the whole input. */
typedef struct cb_wire {
    const uint8_t *input;
    size_t pos;
    size_t end;
    const cb_wire_path *path;
    int depth;          /* nesting, bounded so that hostile input cannot exhaust the stack */
    bool skipped_group; /* an unknown group field was skipped (protobuf-c cannot skip those) */
    cb_wire_need *need; /* NULL: the input is all in memory */
    void *source;
} cb_wire;

/* The field number cb_wire_next gives once the message is exhausted (no field has it). */
enum { CB_WIRE_END = 0 };

/* The most bytes a field's tag and length, or its tag and fixed or varint value, take. */
#define CB_WIRE_HEADER_MAX 24

typedef struct cb_wire_field {
    uint32_t number; /* CB_WIRE_END once the message is exhausted */
    int type;        /* CB_WIRE_*; groups are skipped whole and never returned */
    size_t offset;   /* of the tag */
    uint64_t varint; /* CB_WIRE_VARINT */
    size_t payload;  /* offset of the bytes after the tag (after the length for CB_WIRE_LENGTH) */
    size_t length;   /* payload bytes: 8 for FIXED64, 4 for FIXED32, the length for LENGTH */
} cb_wire_field;

/* The path frame of a top-level message. */
cb_wire_path cb_wire_root(const ProtobufCMessageDescriptor *message);

/* A cursor over the whole input as one message. */
cb_wire cb_wire_begin(const uint8_t *input, size_t size, const cb_wire_path *path);
/* A cursor over input[offset, offset + length), a message found earlier. */
cb_wire cb_wire_range(const uint8_t *input, size_t offset, size_t length, const cb_wire_path *path);
/* A cursor over a length-delimited field's payload as a nested message with its own path frame
 * (and the parent's need hook). */
cb_wire cb_wire_nested(const cb_wire *parent, const cb_wire_field *field, const cb_wire_path *path);

/* Reads the next field (field->number is CB_WIRE_END at the end of the message). Unknown groups
 * are skipped; every length is checked against the message's end. */
cblob_status cb_wire_next(cb_wire *wire, cb_wire_field *field);

/* Fails with CBLOB_ERR_PARSE unless the field has one of the wire types a schema allows;
 * `what` names the value type for the message ("float", "BlobShape", ...). */
cblob_status cb_wire_expect(const cb_wire *wire, const cb_wire_field *field, int type, const char *what);
cblob_status cb_wire_expect_repeated(const cb_wire *wire, const cb_wire_field *field, int element_type,
                                     const char *what);

/* Makes a length-delimited field's payload readable (the need hook). */
cblob_status cb_wire_need_payload(const cb_wire *wire, const cb_wire_field *field);

/* Counts the elements of a repeated scalar field occurrence, packed or not. Packed payloads must
 * be a whole number of elements (fixed) or a sequence of complete varints. */
cblob_status cb_wire_count_elements(const cb_wire *wire, const cb_wire_field *field, int element_type,
                                    int64_t *out_count);

/* Reads the next varint of a packed varint payload at *pos (bounded by end). */
bool cb_wire_packed_varint(const uint8_t *input, size_t *pos, size_t end, uint64_t *out);

/* CBLOB_ERR_PARSE with "<path>.<field> at byte <offset>: <text>". field may be NULL (the
 * message itself). */
cblob_status cb_wire_fail(const cb_wire_path *path, const cb_wire_field *field, size_t offset, const char *format,
                          ...) __attribute__((format(printf, 4, 5)));

static inline bool cb_wire_at_end(const cb_wire_field *field)
{
    return field->number == CB_WIRE_END;
}

/* The byte after a field (its payload's end). */
static inline size_t cb_wire_field_end(const cb_wire_field *field)
{
    return field->payload + field->length;
}

/* Copies a string field into a new NUL-terminated string; a NUL byte inside is a parse error
 * (C strings cannot hold it). Its payload must be readable. */
cblob_status cb_wire_string(const cb_wire *wire, const cb_wire_field *field, char **out);

#endif
