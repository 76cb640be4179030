/* SPDX-License-Identifier: BSD-2-Clause */
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"

/* Large enough that write(2) runs at its full speed; writes this large skip the copy. */
#define CB_SINK_PENDING (4u << 20)

/* The writer thread: writes one buffer at a time while the sink fills the other. */
typedef struct cb_sink_writer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    const uint8_t *job; /* NULL: idle */
    size_t job_size;
    uint64_t job_at;
    int error;          /* errno of a failed write; later jobs are dropped */
    bool stop;
} cb_sink_writer;

static void sink_append(ProtobufCBuffer *buffer, size_t length, const uint8_t *data)
{
    cb_sink_write((cb_sink *)buffer, data, length);
}

static void sink_init(cb_sink *sink, cb_sink_kind kind)
{
    *sink = (cb_sink){.base = {.append = sink_append}, .kind = kind, .fd = -1};
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

static void fail_errno(cb_sink *sink, int error)
{
    if (sink->status == CBLOB_OK)
        sink->status = cb_fail(CBLOB_ERR_IO, "%s: cannot write: %s", sink->path, strerror(error));
}

static int pwrite_all(int fd, const uint8_t *data, size_t length, uint64_t offset)
{
    while (length > 0) {
        const ssize_t n = pwrite(fd, data, length, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        data += n;
        offset += (uint64_t)n;
        length -= (size_t)n;
    }
    return 0;
}

static void write_at(cb_sink *sink, uint64_t offset, const uint8_t *data, size_t length)
{
    const int error = sink->status == CBLOB_OK ? pwrite_all(sink->fd, data, length, offset) : 0;
    if (error != 0)
        fail_errno(sink, error);
}

static void *writer_main(void *argument)
{
    cb_sink *sink = argument;
    cb_sink_writer *w = sink->writer;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->job == NULL && !w->stop)
            pthread_cond_wait(&w->changed, &w->lock);
        if (w->job == NULL)
            break;
        const uint8_t *job = w->job;
        const size_t size = w->job_size;
        const uint64_t at = w->job_at;
        pthread_mutex_unlock(&w->lock);
        const int error = pwrite_all(sink->fd, job, size, at);
        pthread_mutex_lock(&w->lock);
        if (w->error == 0)
            w->error = error;
        w->job = NULL;
        pthread_cond_broadcast(&w->changed);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Waits until the writer is idle, and takes its failure over. */
static void wait_writer(cb_sink *sink)
{
    cb_sink_writer *w = sink->writer;
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    while (w->job != NULL)
        pthread_cond_wait(&w->changed, &w->lock);
    const int error = w->error;
    pthread_mutex_unlock(&w->lock);
    if (error != 0)
        fail_errno(sink, error);
}

/* Hands the pending bytes to the writer and fills the other buffer meanwhile (written in place
 * when there is no writer). */
static void flush_pending(cb_sink *sink)
{
    if (sink->pending_used == 0)
        return;
    cb_sink_writer *w = sink->writer;
    if (w == NULL) {
        write_at(sink, sink->pending_at, sink->pending, sink->pending_used);
        sink->pending_used = 0;
        return;
    }
    wait_writer(sink);
    pthread_mutex_lock(&w->lock);
    w->job = sink->pending;
    w->job_size = sink->pending_used;
    w->job_at = sink->pending_at;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    uint8_t *filled = sink->pending;
    sink->pending = sink->spare;
    sink->spare = filled;
    sink->pending_used = 0;
}

static void start_writer(cb_sink *sink)
{
    cb_sink_writer *w = calloc(1, sizeof *w);
    sink->spare = malloc(CB_SINK_PENDING);
    if (w == NULL || sink->spare == NULL || pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w);
        return; /* written in place, one buffer at a time */
    }
    pthread_cond_init(&w->changed, NULL);
    sink->writer = w;
    if (pthread_create(&w->thread, NULL, writer_main, sink) != 0) {
        pthread_cond_destroy(&w->changed);
        pthread_mutex_destroy(&w->lock);
        free(w);
        sink->writer = NULL;
    }
}

static void stop_writer(cb_sink *sink)
{
    cb_sink_writer *w = sink->writer;
    if (w == NULL)
        return;
    wait_writer(sink);
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
    free(w);
    sink->writer = NULL;
}

static void file_write(cb_sink *sink, const uint8_t *data, size_t size)
{
    /* Pending bytes are contiguous from pending_at: a write elsewhere flushes them first. */
    if (sink->pending_used > 0 && sink->pending_at + sink->pending_used != sink->position)
        flush_pending(sink);
    if (sink->pending_used == 0)
        sink->pending_at = sink->position;
    if (size <= CB_SINK_PENDING - sink->pending_used) {
        memcpy(sink->pending + sink->pending_used, data, size);
        sink->pending_used += size;
        return;
    }
    flush_pending(sink);
    wait_writer(sink); /* in order: a large write goes straight from the caller's memory */
    write_at(sink, sink->position, data, size);
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
    /* Unique among threads and processes writing beside each other. */
    static atomic_uint serial;
    const size_t temporary_size = strlen(path) + 64;
    sink->path = strdup(path);
    sink->temporary = malloc(temporary_size);
    sink->pending = malloc(CB_SINK_PENDING);
    if (sink->path == NULL || sink->temporary == NULL || sink->pending == NULL) {
        cb_sink_file_abort(sink);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write %s", path);
    }
    snprintf(sink->temporary, temporary_size, "%s.tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&serial, 1));
    sink->fd = open(sink->temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (sink->fd < 0) {
        const int error = errno;
        cb_sink_file_abort(sink);
        return cb_fail(CBLOB_ERR_IO, "%s: cannot create: %s", path, strerror(error));
    }
    start_writer(sink);
    return CBLOB_OK;
}

static void release_file(cb_sink *sink, bool remove)
{
    stop_writer(sink);
    if (sink->fd >= 0)
        close(sink->fd);
    if (remove && sink->temporary != NULL)
        unlink(sink->temporary);
    free(sink->path);
    free(sink->temporary);
    free(sink->pending);
    free(sink->spare);
    sink->fd = -1;
    sink->path = sink->temporary = NULL;
    sink->pending = sink->spare = NULL;
}

void cb_sink_file_abort(cb_sink *sink)
{
    release_file(sink, sink->fd >= 0);
}

cblob_status cb_sink_file_commit(cb_sink *sink)
{
    flush_pending(sink);
    stop_writer(sink);
    /* Bytes seeked past and never written would read as zeros: the file ends at its size. */
    if (sink->status == CBLOB_OK && ftruncate(sink->fd, (off_t)sink->size) != 0)
        fail_errno(sink, errno);
    if (sink->status == CBLOB_OK) {
        const int fd = sink->fd;
        sink->fd = -1;
        if (close(fd) != 0)
            fail_errno(sink, errno);
    }
    if (sink->status == CBLOB_OK && rename(sink->temporary, sink->path) != 0)
        fail_errno(sink, errno);
    const cblob_status status = sink->status;
    release_file(sink, status != CBLOB_OK);
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
