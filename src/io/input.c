/* SPDX-License-Identifier: BSD-2-Clause */
/* Reading files: the type checked before opening, pread into private memory, one snapshot. */
/* mremap, MADV_DONTNEED (posix_madvise's POSIX_MADV_DONTNEED does nothing on Linux). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "alloc.h"
#include "io_internal.h"
#include "progress.h"
#include "status.h"

void (*cb_io_after_read_hook)(int fd, size_t done);

/* A stream's buffer starts here and doubles. */
#define STREAM_FIRST_SIZE ((size_t)1 << 20)

cb_input cb_input_bytes(const uint8_t *bytes, size_t size)
{
    return (cb_input){.bytes = bytes, .size = size};
}

static const cb_input empty_input = {.bytes = (const uint8_t *)"", .size = 0};

/* Private, zero-filled memory that cb_input_done_with can hand back page by page. */
static cblob_status map_memory(size_t size, const char *name, void **out)
{
    void *memory = cb_alloc_refused() ? MAP_FAILED : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to read the %zu bytes of %s", size, name);
    *out = memory;
    return CBLOB_OK;
}

static bool same_snapshot(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Fills bytes[0, size) from the file at start, piece by piece, telling progress (may be NULL). */
static cblob_status read_pieces(int fd, const char *name, uint8_t *bytes, size_t size, off_t start,
                                cb_progress *progress)
{
    size_t done = 0;
    while (done < size) {
        const size_t piece = size - done < CB_READ_PIECE ? size - done : CB_READ_PIECE;
        const ssize_t n = io_pread(fd, bytes + done, piece, start + (off_t)done);
        if (n < 0 && errno == EINTR) {
            CB_TRY(cb_progress_interrupted());
            continue;
        }
        if (n < 0)
            return cb_fail(CBLOB_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
        if (n == 0)
            return cb_fail(CBLOB_ERR_IO, "%s: the file got shorter while it was read (%zu of %zu bytes read)", name,
                           done, size);
        done += (size_t)n;
        if (cb_io_after_read_hook != NULL)
            cb_io_after_read_hook(fd, done);
        CB_TRY(cb_progress_add(progress, (uint64_t)n));
    }
    return CBLOB_OK;
}

/* The file read at end has nothing more, and is still the file `before` describes. */
static cblob_status check_unchanged(int fd, const char *name, const struct stat *before, off_t end)
{
    uint8_t extra;
    ssize_t n;
    while ((n = io_pread(fd, &extra, 1, end)) < 0 && errno == EINTR)
        continue;
    if (n < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
    if (n > 0)
        return cb_fail(CBLOB_ERR_IO, "%s: the file grew while it was read", name);
    struct stat after;
    if (fstat(fd, &after) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot stat: %s", name, strerror(errno));
    if (!same_snapshot(before, &after))
        return cb_fail(CBLOB_ERR_IO, "%s: the file changed while it was read (another process wrote it)", name);
    return CBLOB_OK;
}

/* Reads the regular file `before` describes from start to its end, as one snapshot. */
static cblob_status read_snapshot(int fd, const char *name, const struct stat *before, off_t start, cb_input *out)
{
    if (before->st_size < start || (uint64_t)(before->st_size - start) > SIZE_MAX)
        return cb_fail(CBLOB_ERR_IO, "%s: the file is too large to read", name);
    const size_t size = (size_t)(before->st_size - start);
    /* A read of a whole file is the work of the call reading it (a call's progress, progress.h). */
    cb_progress *progress = cb_progress_current(CB_PROGRESS_READING);
    CB_TRY(cb_progress_size(progress, (int64_t)size));
    void *memory = NULL;
    if (size > 0)
        CB_TRY(map_memory(size, name, &memory));
    cblob_status status = read_pieces(fd, name, memory, size, start, progress);
    if (status == CBLOB_OK)
        status = check_unchanged(fd, name, before, start + (off_t)size);
    if (status != CBLOB_OK) {
        if (memory != NULL)
            munmap(memory, size);
        return status;
    }
    *out = size > 0 ? (cb_input){.bytes = memory, .size = size, .memory = memory, .memory_size = size} : empty_input;
    return CBLOB_OK;
}

/* Opens the regular file at path, checked before it is opened; *opened is what it is. */
static cblob_status open_regular(const char *path, int *fd_out, struct stat *opened)
{
    struct stat checked;
    if (stat(path, &checked) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(checked.st_mode))
        return cb_fail(CBLOB_ERR_IO, "%s is %s, not a regular file", path, cb_file_kind(checked.st_mode));
    /* O_NONBLOCK: should the path become a FIFO after the check, opening it does not block. */
    const int fd = io_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    cblob_status status = CBLOB_OK;
    if (fstat(fd, opened) != 0)
        status = cb_fail(CBLOB_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (opened->st_dev != checked.st_dev || opened->st_ino != checked.st_ino)
        status = cb_fail(CBLOB_ERR_IO, "%s was replaced while it was being opened", path);
    if (status != CBLOB_OK) {
        close(fd);
        return status;
    }
    *fd_out = fd;
    return CBLOB_OK;
}

cblob_status cb_input_open(const char *path, cb_input *out)
{
    int fd;
    struct stat opened;
    CB_TRY(open_regular(path, &fd, &opened));
    const cblob_status status = read_snapshot(fd, path, &opened, 0, out);
    close(fd);
    return status;
}

/* ---- files read range by range ------------------------------------------------------------ */

struct cb_input_file {
    int fd;
    struct stat opened;
    char *path;       /* as given, for messages */
    int folder;       /* the folder the path named when the file was opened (O_PATH) ... */
    const char *base; /* ... and the file's name in it (in path): checked there, whatever chdir does */
};

/* The folder of a path (its part before the last '/', or "."), opened to look names up in, and
 * the name after it. */
static cblob_status open_folder_of(const char *path, int *folder, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash != NULL ? slash + 1 : path;
    char *name = slash == NULL ? strdup(".") : slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
    if (name == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to keep %s open", path);
    *folder = open(name, O_PATH | O_DIRECTORY | O_CLOEXEC);
    const int error = errno;
    free(name);
    if (*folder < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open its folder: %s", path, strerror(error));
    return CBLOB_OK;
}

cblob_status cb_input_file_open(const char *path, cb_input_file **out)
{
    cb_input_file *file = cb_calloc(1, sizeof *file);
    if (file == NULL || (file->path = cb_strdup(path)) == NULL) {
        cb_free(file);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to keep %s open", path);
    }
    file->fd = file->folder = -1;
    cblob_status status = open_regular(path, &file->fd, &file->opened);
    if (status == CBLOB_OK)
        status = open_folder_of(file->path, &file->folder, &file->base);
    if (status != CBLOB_OK) {
        cb_input_file_close(file);
        return status;
    }
    /* Reads jump from one blob's header to the next, then read whole blobs when asked: the
     * kernel's read-ahead would only read what nobody asked for. */
    (void)posix_fadvise(file->fd, 0, 0, POSIX_FADV_RANDOM);
    *out = file;
    return CBLOB_OK;
}

uint64_t cb_input_file_size(const cb_input_file *file)
{
    return (uint64_t)file->opened.st_size;
}

/* The file opened is unchanged (written in place or truncated, it is not), and it is still the
 * file at its path (replaced by another, a rename over it, it is not: the values read so far
 * would then be another file's than those read next). The path is looked up in the folder it
 * named when the file was opened, so a chdir since changes nothing. */
static cblob_status check_still_the_file(const cb_input_file *file)
{
    struct stat now, named;
    if (fstat(file->fd, &now) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot stat: %s", file->path, strerror(errno));
    if (!same_snapshot(&file->opened, &now) || fstatat(file->folder, file->base, &named, 0) != 0 ||
        named.st_dev != now.st_dev || named.st_ino != now.st_ino)
        return cb_fail(CBLOB_ERR_IO, "%s changed while it was read: it was written, truncated, removed or replaced "
                       "since it was opened", file->path);
    return CBLOB_OK;
}

cblob_status cb_input_file_read_unchecked(const cb_input_file *file, uint64_t offset, void *to, size_t length)
{
    if (offset > cb_input_file_size(file) || length > cb_input_file_size(file) - offset)
        return cb_fail(CBLOB_ERR_IO, "%s: bytes [%llu, +%zu) lie past its end", file->path,
                       (unsigned long long)offset, length);
    return read_pieces(file->fd, file->path, to, length, (off_t)offset, NULL);
}

cblob_status cb_input_file_check(const cb_input_file *file)
{
    return check_still_the_file(file);
}

cblob_status cb_input_file_read(const cb_input_file *file, uint64_t offset, void *to, size_t length)
{
    CB_TRY(check_still_the_file(file));
    CB_TRY(cb_input_file_read_unchecked(file, offset, to, length));
    return check_still_the_file(file);
}

cblob_status cb_input_file_image(const cb_input_file *file, cb_input *out)
{
    const uint64_t size = cb_input_file_size(file);
    if (size > SIZE_MAX)
        return cb_fail(CBLOB_ERR_IO, "%s: the file is too large to read", file->path);
    if (size == 0) {
        *out = empty_input;
        return CBLOB_OK;
    }
    void *memory = NULL;
    CB_TRY(map_memory((size_t)size, file->path, &memory));
    *out = (cb_input){.bytes = memory, .size = (size_t)size, .memory = memory, .memory_size = (size_t)size};
    return CBLOB_OK;
}

cblob_status cb_input_file_read_all(const cb_input_file *file, cb_input *out)
{
    CB_TRY(check_still_the_file(file));
    return read_snapshot(file->fd, file->path, &file->opened, 0, out);
}

int cb_path_is_folder(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

void cb_input_file_close(cb_input_file *file)
{
    if (file == NULL)
        return;
    if (file->fd >= 0)
        close(file->fd);
    if (file->folder >= 0)
        close(file->folder);
    cb_free(file->path);
    cb_free(file);
}

/* The check of a stream's head, once it is read (or the stream ended first). */
typedef struct stream_limit {
    cb_stream_check *check;
    void *context;
    bool checked;
    size_t limit;
} stream_limit;

static cblob_status check_head(stream_limit *limit, const uint8_t *bytes, size_t size, bool complete)
{
    if (limit->checked || limit->check == NULL || (!complete && size < CB_STREAM_HEAD))
        return CBLOB_OK;
    limit->checked = true;
    return limit->check(limit->context, bytes, size, complete, &limit->limit);
}

/* One read of a stream into [size, capacity), told to the progress callback (a read a signal
 * interrupts asks it whether to go on: a program reading a terminal stops at Ctrl-C); *n is what
 * was read (0 at the end). */
static cblob_status read_some(int fd, const char *name, cb_progress *progress, uint8_t *to, size_t room, ssize_t *n)
{
    for (;;) {
        *n = io_read(fd, to, room);
        if (*n >= 0)
            return *n > 0 ? cb_progress_add(progress, (uint64_t)*n) : CBLOB_OK;
        if (errno != EINTR)
            return cb_fail(CBLOB_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
        CB_TRY(cb_progress_interrupted());
    }
}

/* Reads a pipe, a terminal or a socket until end of file, doubling the buffer as it fills; its
 * head is checked (limit) before more is read. */
static cblob_status read_stream(int fd, const char *name, stream_limit *limit, cb_input *out)
{
    size_t capacity = STREAM_FIRST_SIZE, size = 0;
    cb_progress *progress = cb_progress_current(CB_PROGRESS_READING);
    CB_TRY(cb_progress_size(progress, -1));
    void *memory = NULL;
    CB_TRY(map_memory(capacity, name, &memory));
    cblob_status status = CBLOB_OK;
    for (;;) {
        if (size == capacity) {
            void *grown = cb_alloc_refused() ? MAP_FAILED : mremap(memory, capacity, capacity * 2, MREMAP_MAYMOVE);
            if (grown == MAP_FAILED) {
                status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to read more than %zu bytes of %s", size, name);
                break;
            }
            memory = grown;
            capacity *= 2;
        }
        ssize_t n = 0;
        if ((status = read_some(fd, name, progress, (uint8_t *)memory + size, capacity - size, &n)) != CBLOB_OK)
            break;
        size += (size_t)n;
        if ((status = check_head(limit, memory, size, n == 0)) != CBLOB_OK)
            break;
        if (limit->checked && size > limit->limit) {
            status = cb_fail(CBLOB_ERR_IO, "%s: more than %zu bytes, more than what it holds can be", name, limit->limit);
            break;
        }
        if (n == 0)
            break;
    }
    if (status != CBLOB_OK) {
        munmap(memory, capacity);
        return status;
    }
    *out = (cb_input){.bytes = memory, .size = size, .memory = memory, .memory_size = capacity};
    return CBLOB_OK;
}

cblob_status cb_input_read_fd(int fd, const char *name, cb_stream_check *check, void *context, cb_input *out)
{
    struct stat info;
    if (fstat(fd, &info) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot stat: %s", name, strerror(errno));
    if (S_ISDIR(info.st_mode))
        return cb_fail(CBLOB_ERR_IO, "%s is %s, not a file", name, cb_file_kind(info.st_mode));
    stream_limit limit = {check, context, false, SIZE_MAX};
    if (!S_ISREG(info.st_mode))
        return read_stream(fd, name, &limit, out);
    const off_t start = lseek(fd, 0, SEEK_CUR);
    if (start < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot seek: %s", name, strerror(errno));
    CB_TRY(read_snapshot(fd, name, &info, start, out));
    const cblob_status status = check_head(&limit, out->bytes, out->size, true);
    if (status != CBLOB_OK) {
        cb_input_close(out);
        return status;
    }
    lseek(fd, start + (off_t)out->size, SEEK_SET);
    return CBLOB_OK;
}

void cb_input_done_with(const cb_input *input, size_t offset, size_t length)
{
    if (input->memory == NULL)
        return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = ((uintptr_t)input->bytes + offset + page - 1) & ~(page - 1);
    const uintptr_t end = ((uintptr_t)input->bytes + offset + length) & ~(page - 1);
    /* Only whole pages inside the range: their neighbours may still be read. */
    if (end > start)
        madvise((void *)start, end - start, MADV_DONTNEED);
}

void cb_input_close(cb_input *input)
{
    if (input->memory != NULL)
        munmap(input->memory, input->memory_size);
    *input = (cb_input){0};
}
