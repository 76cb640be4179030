/* SPDX-License-Identifier: BSD-2-Clause */
#include "sink.h"

#include <stdlib.h>
#include <string.h>


#include "alloc.h"
#include "crc32.h"
#include "context.h"
#include "status.h"
#include "threads.h"

/* Large enough that write(2) runs at full speed; appends this large skip the copy. */
#define CB_SINK_PENDING ((size_t)4 << 20)

/* The writer's job: one buffer to the output. Only the writer touches the output while a job
 * runs; the producer waits for it to be idle before anything else (rewrites, commit). A failure's
 * message is the writer thread's; the producer asks the output for it again (wait_writer). */
static bool write_job(void *output, void *job, size_t size)
{
    return cb_output_write(output, job, size) == CBLOB_OK;
}

/* Waits until the writer is idle; a write it failed fails the sink, with the output's message. */
static void wait_writer(cb_sink *sink)
{
    if (sink->writer == NULL)
        return;
    const bool failed = !cb_lane_wait(sink->writer);
    if (failed && sink->status == CBLOB_OK)
        sink->status = cb_output_write(sink->output, NULL, 0); /* the failure again, in this thread */
}

/* Hands the pending bytes to the writer (or writes them here, without one). */
static void flush_pending(cb_sink *sink)
{
    if (sink->pending_used == 0 || sink->status != CBLOB_OK)
        return;
    if (sink->writer == NULL) {
        cb_sink_fail(sink, cb_output_write(sink->output, sink->pending, sink->pending_used));
        sink->pending_used = 0;
        return;
    }
    wait_writer(sink);
    cb_lane_hand(sink->writer, sink->pending, sink->pending_used);
    uint8_t *handed = sink->pending;
    sink->pending = sink->spare;
    sink->spare = handed;
    sink->pending_used = 0;
}

/* Everything appended so far is written: the output is the producer's again. */
static void drain(cb_sink *sink)
{
    flush_pending(sink);
    wait_writer(sink);
}

static void start_writer(cb_sink *sink)
{
    sink->pending = cb_malloc(CB_SINK_PENDING);
    sink->spare = cb_malloc(CB_SINK_PENDING);
    if (sink->spare == NULL)
        return; /* without a writer, appends go straight out */
    /* The lane blocks every signal: a signal for the process reaches the caller's thread, whose
     * blocked reads and writes ask the call's progress callback whether to go on (progress.h). */
    sink->writer = cb_lane_start(write_job, sink->output);
}

static void stop_writer(cb_sink *sink)
{
    if (sink->writer != NULL) {
        wait_writer(sink);
        cb_lane_stop(sink->writer);
        sink->writer = NULL;
    }
    free(sink->pending);
    free(sink->spare);
    sink->pending = sink->spare = NULL;
}

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

#define CB_SINK_GATHERED ((size_t)64 << 10)

void cb_sink_callback(cb_sink *sink, cb_sink_callback_fn *callback, void *user_data)
{
    sink_init(sink, CB_SINK_CALLBACK);
    sink->callback = callback;
    sink->callback_data = user_data;
}

static void hand_gathered(cb_sink *sink)
{
    if (sink->gathered_used > 0 && sink->status == CBLOB_OK &&
        sink->callback(sink->callback_data, sink->gathered, sink->gathered_used) != 0)
        sink->status = cb_fail(CBLOB_ERR_CANCELLED, "the write callback asked to stop");
    sink->gathered_used = 0;
}

static void callback_write(cb_sink *sink, const uint8_t *data, size_t size)
{
    if (sink->gathered == NULL && (sink->gathered = cb_malloc(CB_SINK_GATHERED)) == NULL) {
        sink->status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a write callback's buffer");
        return;
    }
    while (size > 0 && sink->status == CBLOB_OK) {
        const size_t room = CB_SINK_GATHERED - sink->gathered_used, piece = size < room ? size : room;
        memcpy(sink->gathered + sink->gathered_used, data, piece);
        sink->gathered_used += piece;
        data += piece;
        size -= piece;
        if (sink->gathered_used == CB_SINK_GATHERED)
            hand_gathered(sink);
    }
}

cblob_status cb_sink_callback_end(cb_sink *sink)
{
    hand_gathered(sink);
    free(sink->gathered);
    sink->gathered = NULL;
    return sink->status;
}

void cb_sink_fail(cb_sink *sink, cblob_status status)
{
    if (sink->status == CBLOB_OK)
        sink->status = status;
}

static void append(cb_sink *sink, const uint8_t *data, size_t size)
{
    if (sink->pending != NULL && size <= CB_SINK_PENDING - sink->pending_used) {
        memcpy(sink->pending + sink->pending_used, data, size);
        sink->pending_used += size;
        if (sink->pending_used == CB_SINK_PENDING)
            flush_pending(sink);
        return;
    }
    drain(sink); /* in order: a large piece goes straight from the producer's memory */
    if (sink->status == CBLOB_OK)
        cb_sink_fail(sink, cb_output_write(sink->output, data, size));
}

/* Appends at the end of the file, or rewrites bytes written before (zip.c goes back to a local
 * header once its member is written). */
static void file_write(cb_sink *sink, const uint8_t *data, size_t size)
{
    if (sink->position < sink->size) {
        drain(sink);
        const size_t inside = sink->size - sink->position < size ? (size_t)(sink->size - sink->position) : size;
        if (sink->status == CBLOB_OK)
            cb_sink_fail(sink, cb_output_write_at(sink->output, sink->position, data, inside));
        data += inside;
        size -= inside;
    }
    if (size > 0 && sink->status == CBLOB_OK)
        append(sink, data, size);
}

static void write_piece(cb_sink *sink, const uint8_t *data, size_t size)
{
    if (sink->status != CBLOB_OK || size == 0)
        return;
    if (sink->crc_on && sink->kind != CB_SINK_COUNT)
        sink->crc = cb_crc32(sink->crc, data, size);
    const uint64_t size_before = sink->size;
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
    case CB_SINK_CALLBACK: callback_write(sink, data, size); break;
    }
    sink->position += size;
    if (sink->position > sink->size)
        sink->size = sink->position;
    if (sink->size > size_before)
        cb_sink_fail(sink, cb_progress_add(sink->progress, sink->size - size_before));
}

void cb_sink_write(cb_sink *sink, const void *data, size_t size)
{
    const uint8_t *bytes = data;
    /* Pieces, so that a large array's progress is told, and a stop heard, as it is written. */
    const size_t most = sink->progress != NULL ? (size_t)CB_PROGRESS_STEP : SIZE_MAX;
    while (size > 0 && sink->status == CBLOB_OK) {
        const size_t piece = size < most ? size : most;
        write_piece(sink, bytes, piece);
        bytes += piece;
        size -= piece;
    }
}

void cb_sink_expect(cb_sink *sink, uint64_t size)
{
    cb_sink_fail(sink, cb_progress_size(sink->progress, (int64_t)size));
}

void cb_sink_seek(cb_sink *sink, uint64_t position)
{
    sink->position = position;
}

void cb_sink_skip(cb_sink *sink, uint64_t size)
{
    sink->position += size;
    if (sink->position > sink->size)
        sink->size = sink->position;
}

void cb_sink_crc(cb_sink *sink, bool on)
{
    sink->crc_on = on;
    sink->crc = 0;
}

/* ---- files -------------------------------------------------------------------------------------- */

cblob_status cb_sink_file_open(cb_sink *sink, const char *path)
{
    sink_init(sink, CB_SINK_FILE);
    sink->progress = cb_progress_current(CB_PROGRESS_WRITING);
    CB_TRY(cb_output_open(path, &sink->output));
    sink->forward_only = !cb_output_can_rewrite(sink->output);
    start_writer(sink);
    return CBLOB_OK;
}

void cb_sink_output(cb_sink *sink, cb_output *output)
{
    sink_init(sink, CB_SINK_FILE);
    sink->progress = cb_progress_current(CB_PROGRESS_WRITING);
    sink->output = output;
    sink->forward_only = !cb_output_can_rewrite(output);
}

void cb_sink_file_abort(cb_sink *sink)
{
    stop_writer(sink);
    cb_output_abort(sink->output);
    sink->output = NULL;
}

cblob_status cb_sink_file_commit(cb_sink *sink)
{
    drain(sink);
    if (sink->status != CBLOB_OK) {
        cb_sink_file_abort(sink);
        return sink->status;
    }
    stop_writer(sink);
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

static cblob_status emit_to_file(cb_emit_fn *emit, const void *what, const char *path)
{
    cb_sink sink;
    CB_TRY(cb_sink_file_open(&sink, path));
    cblob_status status = emit(what, &sink);
    if (status == CBLOB_OK)
        status = sink.status;
    /* The last word before the file takes its place: a stop here still changes nothing. */
    if (status == CBLOB_OK)
        status = cb_progress_finish(sink.progress);
    if (status != CBLOB_OK) {
        cb_sink_fail(&sink, status);
        cb_sink_file_abort(&sink);
        return status;
    }
    return cb_sink_file_commit(&sink);
}

cblob_status cb_emit_to_file(const cblob_context *context, cb_emit_fn *emit, const void *what, const char *path)
{
    cb_progress progress;
    cb_context_begin_progress(context, CB_PROGRESS_WRITING, &progress);
    return cb_progress_end(&progress, emit_to_file(emit, what, path));
}
