/* SPDX-License-Identifier: BSD-2-Clause */
/* Where serialized messages go: a caller's buffer, or a file written by src/io's rules through
 * the one sink (sink.h). Input bytes come from src/io too (cb_input). */
#ifndef CBLOB_SRC_PROTO_IO_H
#define CBLOB_SRC_PROTO_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "cblob/cblob.h"
#include "io.h"

/* Packs a message into a caller's buffer with the two-call convention: buffer NULL and
 * buffer_size 0 write only the size; a buffer too small is CBLOB_ERR_OUT_OF_RANGE. Messages
 * over protobuf's 2 GiB limit are CBLOB_ERR_OVERFLOW. */
cblob_status cb_pack_to_buffer(const ProtobufCMessage *message, uint8_t *buffer, size_t buffer_size, size_t *out_size);

/* Writes a message to a named path by src/io's rules (cb_output_open), telling the context's
 * progress callback (NULL: none). */
cblob_status cb_pack_to_file(const cblob_context *context, const ProtobufCMessage *message, const char *path);


#endif
