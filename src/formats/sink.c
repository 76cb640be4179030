/* SPDX-License-Identifier: BSD-2-Clause */
#include "sink.h"

#include <string.h>

#include "status.h"

static void sink_append(ProtobufCBuffer *buffer, size_t length, const uint8_t *data)
{
    cb_sink_write((cb_sink *)buffer, data, length);
}

static void sink_init(cb_sink *sink, cb_sink_kind kind)
{
    *sink = (cb_sink){.base = {.append = sink_append}, .kind = kind};
}

void cb_sink_count(cb_sink *sink)
{
    sink_init(sink, CB_SINK_COUNT);
}

void cb_sink_buffer(cb_sink *sink, uint8_t *buffer, size_t capacity)
{
    sink_init(sink, CB_SINK_BUFFER);
    sink->buffer = buffer;
    sink->capacity = capacity;
}

void cb_sink_fail(cb_sink *sink, cblob_status status)
{
    if (sink->status == CBLOB_OK)
        sink->status = status;
}

/* Appends at the end of the file, or rewrites bytes written before (libzip goes back to a local
 * header once its entry is written). */
static void file_write(cb_sink *sink, const uint8_t *data, size_t size)
{
    if (sink->position < sink->size) {
        const size_t inside = sink->size - sink->position < size ? (size_t)(sink->size - sink->position) : size;
        cb_sink_fail(sink, cb_output_write_at(sink->output, sink->position, data, inside));
        data += inside;
        size -= inside;
    }
    if (size > 0 && sink->status == CBLOB_OK)
        cb_sink_fail(sink, cb_output_write(sink->output, data, size));
}

void cb_sink_write(cb_sink *sink, const void *data, size_t size)
{
    if (sink->status != CBLOB_OK || size == 0)
        return;
    switch (sink->kind) {
    case CB_SINK_COUNT: break;
    case CB_SINK_BUFFER:
        if (sink->position > sink->capacity || size > sink->capacity - sink->position) {
            sink->status = cb_fail(CBLOB_ERR_INTERNAL, "the output outgrew the %zu bytes measured for it", sink->capacity);
            return;
        }
        memcpy(sink->buffer + sink->position, data, size);
        break;
    case CB_SINK_FILE: file_write(sink, data, size); break;
    }
    sink->position += size;
    if (sink->position > sink->size)
        sink->size = sink->position;
}

void cb_sink_seek(cb_sink *sink, uint64_t position)
{
    sink->position = position;
}

/* ---- files -------------------------------------------------------------------------------------- */

cblob_status cb_sink_file_open(cb_sink *sink, const char *path)
{
    sink_init(sink, CB_SINK_FILE);
    return cb_output_open(path, &sink->output);
}

void cb_sink_file_abort(cb_sink *sink)
{
    cb_output_abort(sink->output);
    sink->output = NULL;
}

cblob_status cb_sink_file_commit(cb_sink *sink)
{
    /* A position past the end that was never written to would leave a hole: nothing does that. */
    if (sink->status != CBLOB_OK) {
        cb_sink_file_abort(sink);
        return sink->status;
    }
    const cblob_status status = cb_output_commit(sink->output);
    sink->output = NULL;
    return status;
}

/* ---- the two conventions ---------------------------------------------------------------------- */


cblob_status cb_emit_to_buffer(cb_emit_fn *emit, const void *what, const char *name, uint8_t *buffer,
                               size_t buffer_size, size_t *out_size)
{
    if (buffer == NULL && buffer_size > 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "buffer is NULL but buffer_size is %zu", buffer_size);
    cb_sink sink;
    cb_sink_count(&sink);
    cblob_status status = emit(what, &sink);
    if (status == CBLOB_OK)
        status = sink.status;
    if (status != CBLOB_OK)
        return status;
    if (sink.size > SIZE_MAX)
        return cb_fail(CBLOB_ERR_OVERFLOW, "the %s would take %llu bytes, more than memory can hold", name,
                       (unsigned long long)sink.size);
    const size_t size = (size_t)sink.size;
    if (buffer != NULL) {
        if (buffer_size < size)
            return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "a buffer of %zu bytes cannot hold the %zu-byte %s", buffer_size, size,
                           name);
        cb_sink_buffer(&sink, buffer, size);
        status = emit(what, &sink);
        if (status == CBLOB_OK)
            status = sink.status;
        if (status == CBLOB_OK && sink.size != size)
            status = cb_fail(CBLOB_ERR_INTERNAL, "the %s took %llu bytes, not the %zu measured", name,
                             (unsigned long long)sink.size, size);
        if (status != CBLOB_OK)
            return status;
    }
    *out_size = size;
    return CBLOB_OK;
}

cblob_status cb_emit_to_file(cb_emit_fn *emit, const void *what, const char *path)
{
    cb_sink sink;
    CB_TRY(cb_sink_file_open(&sink, path));
    const cblob_status status = emit(what, &sink);
    if (status != CBLOB_OK) {
        cb_sink_fail(&sink, status);
        cb_sink_file_abort(&sink);
        return status;
    }
    return cb_sink_file_commit(&sink);
}
