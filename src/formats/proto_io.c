/* SPDX-License-Identifier: BSD-2-Clause */
/* madvise and MADV_DONTNEED (posix_madvise's POSIX_MADV_DONTNEED does nothing on Linux). */
#define _DEFAULT_SOURCE
#include "proto_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto_blob.h"
#include "status.h"

/* ---- input ------------------------------------------------------------------------------ */

cb_input cb_input_bytes(const uint8_t *bytes, size_t size)
{
    return (cb_input){.bytes = bytes, .size = size};
}

static cblob_status read_whole(int fd, const char *path, size_t size, cb_input *out)
{
    uint8_t *copy = malloc(size > 0 ? size : 1);
    if (copy == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to read the %zu bytes of %s", size, path);
    size_t done = 0;
    while (done < size) {
        ssize_t n = read(fd, copy + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const int error = n < 0 ? errno : 0;
            free(copy);
            return cb_fail(CBLOB_ERR_IO, "%s: cannot read: %s", path, error ? strerror(error) : "the file got shorter");
        }
        done += (size_t)n;
    }
    *out = (cb_input){.bytes = copy, .size = size, .owned_copy = copy};
    return CBLOB_OK;
}

cblob_status cb_input_open(const char *path, cb_input *out)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fd, &info) != 0) {
        const int error = errno;
        close(fd);
        return cb_fail(CBLOB_ERR_IO, "%s: cannot stat: %s", path, strerror(error));
    }
    if (!S_ISREG(info.st_mode)) {
        close(fd);
        return cb_fail(CBLOB_ERR_IO, "%s: not a regular file", path);
    }
    const size_t size = (size_t)info.st_size;
    cblob_status status = CBLOB_OK;
    if (size == 0) {
        *out = (cb_input){.bytes = (const uint8_t *)"", .size = 0};
    } else {
        void *mapping = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapping != MAP_FAILED) {
            /* Read front to back once: let the kernel read ahead. */
            madvise(mapping, size, MADV_SEQUENTIAL);
            *out = (cb_input){.bytes = mapping, .size = size, .mapping = mapping};
        } else {
            status = read_whole(fd, path, size, out); /* file systems that cannot map */
        }
    }
    close(fd);
    return status;
}

void cb_input_close(cb_input *input)
{
    if (input->mapping != NULL)
        munmap(input->mapping, input->size);
    free(input->owned_copy);
    *input = (cb_input){0};
}

void cb_input_done_with(const cb_input *input, size_t offset, size_t length)
{
    if (input->mapping == NULL)
        return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = ((uintptr_t)input->bytes + offset + page - 1) & ~(page - 1);
    const uintptr_t end = ((uintptr_t)input->bytes + offset + length) & ~(page - 1);
    /* Only whole pages inside the range: their neighbours may still be read. */
    if (end > start)
        madvise((void *)start, end - start, MADV_DONTNEED);
}

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

/* A ProtobufCBuffer that gathers small pieces (tags, lengths) and writes large ones (value
 * arrays) straight from the caller's memory. */
typedef struct file_sink {
    ProtobufCBuffer base;
    int fd;
    int error; /* errno of the first failed write; later appends do nothing */
    size_t used;
    uint8_t pending[1 << 16];
} file_sink;

static void write_all(file_sink *sink, const uint8_t *data, size_t length)
{
    while (length > 0 && sink->error == 0) {
        ssize_t n = write(sink->fd, data, length);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            sink->error = errno;
            return;
        }
        data += n;
        length -= (size_t)n;
    }
}

static void flush_pending(file_sink *sink)
{
    write_all(sink, sink->pending, sink->used);
    sink->used = 0;
}

static void sink_append(ProtobufCBuffer *buffer, size_t length, const uint8_t *data)
{
    file_sink *sink = (file_sink *)buffer;
    if (length <= sizeof sink->pending - sink->used) {
        memcpy(sink->pending + sink->used, data, length);
        sink->used += length;
        return;
    }
    flush_pending(sink);
    if (length < sizeof sink->pending) {
        memcpy(sink->pending, data, length);
        sink->used = length;
    } else {
        write_all(sink, data, length);
    }
}

cblob_status cb_pack_to_file(const ProtobufCMessage *message, const char *path)
{
    size_t size = 0;
    CB_TRY(packed_size(message, &size));
    /* Unique among threads and processes writing beside each other. */
    static atomic_uint serial;
    const size_t temporary_size = strlen(path) + 64;
    char *temporary = malloc(temporary_size);
    file_sink *sink = malloc(sizeof *sink);
    if (temporary == NULL || sink == NULL) {
        free(temporary);
        free(sink);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write %s", path);
    }
    snprintf(temporary, temporary_size, "%s.tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&serial, 1));
    cblob_status status = CBLOB_OK;
    const int fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        status = cb_fail(CBLOB_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    } else {
        *sink = (file_sink){.base = {.append = sink_append}, .fd = fd};
        protobuf_c_message_pack_to_buffer(message, &sink->base);
        flush_pending(sink);
        if (sink->error == 0 && close(fd) != 0)
            sink->error = errno;
        else if (sink->error != 0)
            close(fd);
        if (sink->error == 0 && rename(temporary, path) != 0)
            sink->error = errno;
        if (sink->error != 0) {
            status = cb_fail(CBLOB_ERR_IO, "%s: cannot write: %s", path, strerror(sink->error));
            unlink(temporary);
        }
    }
    free(sink);
    free(temporary);
    return status;
}
