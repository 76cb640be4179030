/* SPDX-License-Identifier: BSD-2-Clause */
/* What the parts of src/io share: how a planned output starts, and the temporaries' rules. */
#ifndef CBLOB_SRC_IO_INTERNAL_H
#define CBLOB_SRC_IO_INTERNAL_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h> /* renameat */
#include <sys/stat.h>
#include <sys/syscall.h> /* SYS_renameat2 */
#include <unistd.h>

#include "fault.h"
#include "io.h"

/* ---- the system calls src/io makes ----------------------------------------------------------- */

/* Each fails as the machine would when a test arms its step (src/util/fault.h): one relaxed load
 * otherwise. A short write writes half and says so, as a full disk or a signal may. Opens,
 * fsyncs and renames interrupted by a signal (EINTR) are made again, as reads and writes are by
 * their loops. */
static inline int io_injected(cb_fault_step step)
{
    const int error = cb_fault_check(step);
    if (error > 0)
        errno = error;
    return error;
}

static inline int io_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    int fd;
    do
        fd = io_injected(CB_FAULT_OPEN) > 0 ? -1 : openat(dirfd, path, flags, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
}

static inline ssize_t io_read(int fd, void *to, size_t length)
{
    return io_injected(CB_FAULT_READ) > 0 ? -1 : read(fd, to, length);
}

static inline ssize_t io_pread(int fd, void *to, size_t length, off_t offset)
{
    return io_injected(CB_FAULT_READ) > 0 ? -1 : pread(fd, to, length, offset);
}

static inline ssize_t io_write(int fd, const void *data, size_t length)
{
    const int error = io_injected(CB_FAULT_WRITE);
    if (error == CB_FAULT_SHORT && length > 1)
        return write(fd, data, length / 2);
    return error > 0 ? -1 : write(fd, data, length);
}

static inline ssize_t io_pwrite(int fd, const void *data, size_t length, off_t offset)
{
    const int error = io_injected(CB_FAULT_WRITE);
    if (error == CB_FAULT_SHORT && length > 1)
        return pwrite(fd, data, length / 2, offset);
    return error > 0 ? -1 : pwrite(fd, data, length, offset);
}

static inline int io_fsync(int fd)
{
    int result;
    do
        result = io_injected(CB_FAULT_FSYNC) > 0 ? -1 : fsync(fd);
    while (result != 0 && errno == EINTR);
    return result;
}

/* syncfs: everything of the file system that holds fd. */
static inline int io_fsync_all(int fd)
{
    int result;
    do
        result = io_injected(CB_FAULT_FSYNC) > 0 ? -1 : syncfs(fd);
    while (result != 0 && errno == EINTR);
    return result;
}

static inline int io_renameat(int from_dir, const char *from, int to_dir, const char *to)
{
    int result;
    do
        result = io_injected(CB_FAULT_RENAME) > 0 ? -1 : renameat(from_dir, from, to_dir, to);
    while (result != 0 && errno == EINTR);
    return result;
}

/* renameat2 as glibc 2.28's wrapper does it (renameat when there are no flags, else the system
 * call), without needing glibc 2.28: the binary wheel runs on glibc 2.17 (manylinux2014,
 * bindings/python/build-deps.sh). A kernel without renameat2 (before 3.15), or a file system
 * without the flag, answers ENOSYS or EINVAL, which the callers handle. */
static inline int io_renameat2(int from_dir, const char *from, int to_dir, const char *to, unsigned flags)
{
    int result;
    do
        result = io_injected(CB_FAULT_RENAME) > 0 ? -1
                 : flags == 0                      ? renameat(from_dir, from, to_dir, to)
                                                   : (int)syscall(SYS_renameat2, from_dir, from, to_dir, to, flags);
    while (result != 0 && errno == EINTR);
    return result;
}

/* What a file is, for messages: "a FIFO (named pipe)", "a folder", ... */
const char *cb_file_kind(mode_t mode);

/* How an output reaches its target. */
typedef enum cb_output_kind {
    CB_OUTPUT_REPLACE,  /* a temporary renamed over the name at commit */
    CB_OUTPUT_CREATE,   /* a temporary given the name at commit, which must still be free then */
    CB_OUTPUT_STAGED,   /* a temporary copied into the target (a file with other hard links) */
    CB_OUTPUT_IN_PLACE, /* the target itself: a device, a FIFO, a caller's descriptor */
} cb_output_kind;

/* An output to start. Every descriptor in it becomes the output's, even when starting fails. */
typedef struct cb_output_plan {
    cb_output_kind kind;
    const char *display; /* how messages name the output */
    int dirfd;           /* the target's folder, for a temporary (-1 for IN_PLACE) */
    const char *name;    /* the target's name in dirfd */
    int fd;              /* IN_PLACE: the target; STAGED: the target, opened for writing */
    bool close_fd;       /* IN_PLACE: whether the output closes fd (not a caller's) */
    bool durable;        /* fsync before the file takes its place */
    bool remove_stale;   /* remove the folder's stale temporaries first (an output folder did) */
    bool private_file;   /* a fresh file is made 0600 whatever the umask (the kernel cache's entries) */
    /* REPLACE: the file replaced, whose mode and owner the new one keeps; NULL: a fresh file */
    const struct stat *original;
} cb_output_plan;

cblob_status cb_output_start(const cb_output_plan *plan, cb_output **out);

/* Marks a temporary (or a staging folder) as cblob's, where the file system keeps extended
 * attributes: the cleaning below removes only what carries the mark there. */
void cb_mark_temporary(int fd);

/* Removes the temporaries in the folder that no writer holds any more (best effort: a folder
 * that cannot be listed, or a file that cannot be locked, is left as it is). */
void cb_remove_stale_temporaries(int dirfd);

#endif
