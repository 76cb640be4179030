/* SPDX-License-Identifier: BSD-2-Clause */
/* Where serialized messages come from and go to: a caller's bytes, a mapped file, a caller's
 * buffer, or a file written atomically. */
#ifndef CBLOB_SRC_PROTO_IO_H
#define CBLOB_SRC_PROTO_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "cblob/cblob.h"

/* Input bytes: borrowed from the caller, or a file mapped read-only (read into memory where it
 * cannot be mapped). */
typedef struct cb_input {
    const uint8_t *bytes;
    size_t size;
    void *mapping;    /* non-NULL when the file is mapped */
    void *owned_copy; /* non-NULL when the file was read into memory */
} cb_input;

cb_input cb_input_bytes(const uint8_t *bytes, size_t size);
/* CBLOB_ERR_IO (naming the path and the system's reason) when the file cannot be opened, is not
 * a regular file, or cannot be read. */
cblob_status cb_input_open(const char *path, cb_input *out);
void cb_input_close(cb_input *input);
/* Tells the system that input[offset, offset + length) will not be read again, so a mapped
 * file's pages leave the process's resident memory as soon as they are used: loading a model
 * then holds about one copy of it, not two. */
void cb_input_done_with(const cb_input *input, size_t offset, size_t length);

/* Packs a message into a caller's buffer with the two-call convention: buffer NULL and
 * buffer_size 0 write only the size; a buffer too small is CBLOB_ERR_OUT_OF_RANGE. Messages
 * over protobuf's 2 GiB limit are CBLOB_ERR_OVERFLOW. */
cblob_status cb_pack_to_buffer(const ProtobufCMessage *message, uint8_t *buffer, size_t buffer_size, size_t *out_size);

/* Writes a message to path through a temporary file in the same folder that is renamed over
 * path only once complete, so a failed save never leaves a partial file. The bytes stream
 * straight from the message's arrays to the file. */
cblob_status cb_pack_to_file(const ProtobufCMessage *message, const char *path);

#endif
