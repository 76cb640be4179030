/* SPDX-License-Identifier: BSD-2-Clause */
#include "proto_io.h"

#include "sink.h"
#include "status.h"
#include "wire.h"

/* ---- output ----------------------------------------------------------------------------- */

static cblob_status packed_size(const ProtobufCMessage *message, size_t *out)
{
    const size_t size = protobuf_c_message_get_packed_size(message);
    if (size > CB_PROTO_MAX_MESSAGE)
        return cb_fail(CBLOB_ERR_OVERFLOW,
                       "the %s would take %zu bytes, over protobuf's 2 GiB message limit (which Caffe enforces)",
                       message->descriptor->short_name, size);
    *out = size;
    return CBLOB_OK;
}

cblob_status cb_pack_to_buffer(const ProtobufCMessage *message, uint8_t *buffer, size_t buffer_size, size_t *out_size)
{
    if (buffer == NULL && buffer_size > 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "buffer is NULL but buffer_size is %zu", buffer_size);
    size_t size = 0;
    CB_TRY(packed_size(message, &size));
    if (buffer != NULL && buffer_size < size)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "a buffer of %zu bytes cannot hold the %zu-byte %s", buffer_size, size,
                       message->descriptor->short_name);
    if (buffer != NULL && protobuf_c_message_pack(message, buffer) != size)
        return cb_fail(CBLOB_ERR_INTERNAL, "protobuf-c packed a different size than it predicted");
    *out_size = size;
    return CBLOB_OK;
}

/* A message packed straight into a sink (the sink is protobuf-c's ProtobufCBuffer). */
static cblob_status emit_message(const void *what, cb_sink *sink)
{
    cb_sink_expect(sink, protobuf_c_message_get_packed_size(what));
    protobuf_c_message_pack_to_buffer(what, &sink->base);
    return CBLOB_OK;
}

cblob_status cb_pack_to_file(const cblob_context *context, const ProtobufCMessage *message, const char *path)
{
    size_t size = 0;
    CB_TRY(packed_size(message, &size)); /* before anything is created */
    return cb_emit_to_file(context, emit_message, message, path);
}

