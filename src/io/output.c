/* SPDX-License-Identifier: BSD-2-Clause */
/* Writing one file: buffering, the locked temporary, and the commit that puts it in place. */
/* flock, fallocate, RENAME_NOREPLACE, dirent types. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "io_internal.h"
#include "progress.h"
#include "status.h"

struct cb_output {
    cb_output_kind kind;
    char *display;
    int dirfd;
    char *name;
    char temporary[64]; /* its name in dirfd; "" when there is none */
    int fd;             /* where the bytes go: the temporary, or the target written in place */
    int target_fd;      /* STAGED: the target */
    bool close_fd, durable, pipe;
    bool keep_attributes;
    bool private_file;
    struct stat original;
    uint64_t written;
    uint64_t writeback_from; /* durable temporaries: the bytes from here on are not yet sent to the disk */
    int error;        /* errno of the first failure; later writes do nothing */
    bool cancelled;   /* that failure: the call's progress callback said stop at an EINTR */
    const char *step; /* what failed: "write", "fsync", ... */
    size_t used;
    uint8_t pending[1 << 16];
};

const char *cb_file_kind(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a folder";
    case S_IFLNK: return "a symbolic link";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFSOCK: return "a socket";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    default: return "not a file cblob knows";
    }
}

/* Keeps the first failure: its errno and the step that met it. */
static void record(cb_output *output, const char *step, int error)
{
    if (output->error == 0) {
        output->error = error != 0 ? error : EIO;
        output->step = step;
    }
}

/* ---- temporaries ---------------------------------------------------------------------------- */

static bool same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether the name in the folder is the file open as fd. */
static bool name_is_file(int dirfd, const char *name, int fd)
{
    struct stat opened, named;
    return fstat(fd, &opened) == 0 && fstatat(dirfd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
           same_inode(&opened, &named);
}

static void remove_stale_in(int dirfd, bool everything);

/* The mark a temporary (or a staging folder) carries from its creation, where the file system keeps
 * extended attributes: a file of that name without it is not cblob's, and stays. */
#define TEMP_MARK "user.cblob.temporary"

/* Whether the name is one cblob makes: the prefix, then "<pid>-<n>" (a file) or "<pid>-s<n>" (a
 * staging folder), and nothing more. */
static bool temporary_name(const char *name)
{
    const char *p = name + strlen(CB_TEMP_PREFIX);
    if (strncmp(name, CB_TEMP_PREFIX, strlen(CB_TEMP_PREFIX)) != 0 || *p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        ++p;
    if (*p++ != '-')
        return false;
    p += *p == 's';
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        ++p;
    return *p == '\0';
}

/* A temporary or staging folder of a writer that is gone: named as cblob names them, the
 * cleaner's own (never another user's, in a shared folder), a file of one link or a folder,
 * marked where marks are kept, and unlocked (the lock is free only once its writer has closed it
 * or died). */
static bool is_stale(int fd, const struct stat *info)
{
    if (!(S_ISREG(info->st_mode) && info->st_nlink == 1) && !S_ISDIR(info->st_mode))
        return false;
    if (info->st_uid != geteuid())
        return false;
    char mark[2];
    if (fgetxattr(fd, TEMP_MARK, mark, sizeof mark) < 0 && errno != ENOTSUP)
        return false; /* a file system with marks, and none on this one: not cblob's */
    return flock(fd, LOCK_EX | LOCK_NB) == 0;
}

void cb_mark_temporary(int fd)
{
    (void)fsetxattr(fd, TEMP_MARK, "1", 1, 0); /* where the file system keeps marks */
}

static void remove_if_stale(int dirfd, const char *name)
{
    if (!temporary_name(name))
        return;
    const int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat opened;
    /* The name is checked to still be the file locked, so nothing else under it is removed. A
     * folder is an output folder's staging folder (cb_out_dir_stage): its files go with it. */
    if (fstat(fd, &opened) == 0 && is_stale(fd, &opened) && name_is_file(dirfd, name, fd)) {
        if (S_ISDIR(opened.st_mode)) {
            remove_stale_in(fd, true);
            unlinkat(dirfd, name, AT_REMOVEDIR);
        } else {
            unlinkat(dirfd, name, 0);
        }
    }
    close(fd);
}

/* The stale temporaries in a folder; everything but folders in a stale staging folder (its staged
 * files, whose writer is gone, and its temporaries, no longer locked once their writer died). */
static void remove_stale_in(int dirfd, bool everything)
{
    /* A descriptor of its own: readdir moves its offset. */
    const int scan = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (scan < 0)
        return;
    DIR *dir = fdopendir(scan);
    if (dir == NULL) {
        close(scan);
        return;
    }
    const struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strncmp(entry->d_name, CB_TEMP_PREFIX, strlen(CB_TEMP_PREFIX)) == 0)
            remove_if_stale(dirfd, entry->d_name);
        else if (everything && entry->d_type != DT_DIR)
            unlinkat(dirfd, entry->d_name, 0);
    }
    closedir(dir);
}

void cb_remove_stale_temporaries(int dirfd)
{
    remove_stale_in(dirfd, false);
}

/* Locks a new temporary and checks that its name is still its own: a cleaner that locked it in
 * the moment between its creation and the lock removes it, and the writer takes another name. */
static bool lock_temporary(int dirfd, const char *name, int fd)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return name_is_file(dirfd, name, fd);
    /* Someone else holds it: the writer lets the name go. */
    if (errno == EWOULDBLOCK) {
        if (name_is_file(dirfd, name, fd))
            unlinkat(dirfd, name, 0);
        return false;
    }
    /* A file system without locks: cleaners cannot lock there either, so they leave it. */
    return true;
}

static cblob_status create_temporary(cb_output *output, mode_t mode)
{
    static atomic_uint serial;
    for (int attempt = 0; attempt < 100; ++attempt) {
        snprintf(output->temporary, sizeof output->temporary, CB_TEMP_PREFIX "%ld-%u", (long)getpid(),
                 atomic_fetch_add(&serial, 1));
        const int fd = io_openat(output->dirfd, output->temporary,
                              O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0) {
            const int error = errno;
            output->temporary[0] = '\0';
            return cb_fail(CBLOB_ERR_IO, "%s: cannot create a temporary file beside it: %s", output->display,
                           strerror(error));
        }
        if (lock_temporary(output->dirfd, output->temporary, fd)) {
            cb_mark_temporary(fd);
            output->fd = fd;
            return CBLOB_OK;
        }
        close(fd);
    }
    output->temporary[0] = '\0';
    return cb_fail(CBLOB_ERR_IO, "%s: no free name for a temporary file beside it", output->display);
}

/* ---- start -------------------------------------------------------------------------------- */

static void output_free(cb_output *output)
{
    if (output->close_fd && output->fd >= 0)
        close(output->fd);
    if (output->target_fd >= 0)
        close(output->target_fd);
    if (output->temporary[0] != '\0')
        unlinkat(output->dirfd, output->temporary, 0);
    if (output->dirfd >= 0)
        close(output->dirfd);
    cb_free(output->display);
    cb_free(output->name);
    cb_free(output);
}

static bool is_pipe(int fd)
{
    struct stat info;
    return fstat(fd, &info) == 0 && (S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode));
}

static void close_plan(const cb_output_plan *plan)
{
    if (plan->fd >= 0 && (plan->kind != CB_OUTPUT_IN_PLACE || plan->close_fd))
        close(plan->fd);
    if (plan->dirfd >= 0)
        close(plan->dirfd);
}

cblob_status cb_output_start(const cb_output_plan *plan, cb_output **out)
{
    const bool in_place = plan->kind == CB_OUTPUT_IN_PLACE;
    cb_output *output = cb_malloc(sizeof *output);
    if (output == NULL) {
        close_plan(plan);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write %s", plan->display);
    }
    *output = (cb_output){
        .kind = plan->kind,
        .display = cb_strdup(plan->display),
        .dirfd = plan->dirfd,
        .name = plan->name != NULL ? cb_strdup(plan->name) : NULL,
        .fd = in_place ? plan->fd : -1,
        .target_fd = plan->kind == CB_OUTPUT_STAGED ? plan->fd : -1,
        .close_fd = !in_place || plan->close_fd,
        .durable = plan->durable,
        .pipe = in_place && is_pipe(plan->fd),
        .keep_attributes = plan->original != NULL,
        .private_file = plan->private_file,
    };
    if (plan->original != NULL)
        output->original = *plan->original;
    if (output->display == NULL || (plan->name != NULL && output->name == NULL)) {
        output_free(output);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write %s", plan->display);
    }
    if (!in_place) {
        if (plan->remove_stale)
            cb_remove_stale_temporaries(output->dirfd);
        /* A file whose mode will be copied stays private until then; a fresh one takes the umask. */
        const cblob_status status =
            create_temporary(output, output->keep_attributes || output->private_file ? 0600 : 0666);
        if (status != CBLOB_OK) {
            output_free(output);
            return status;
        }
    }
    *out = output;
    return CBLOB_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* write(2) to a FIFO or socket whose reader is gone raises SIGPIPE, which kills the process by
 * default. The library installs no handler: it blocks SIGPIPE in this thread for the call and
 * takes back the one the call raised, so the caller gets EPIPE. (A write that the reader's going
 * cut short returns its count and raises SIGPIPE too: the next one returns EPIPE.) */
static bool sigpipe_pending(void)
{
    sigset_t pending;
    return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

static ssize_t write_without_sigpipe(int fd, const void *data, size_t length)
{
    sigset_t sigpipe, old;
    sigemptyset(&sigpipe);
    sigaddset(&sigpipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigpipe, &old);
    const bool was_pending = sigpipe_pending();
    const ssize_t n = io_write(fd, data, length);
    const int error = errno;
    if (!was_pending && sigpipe_pending()) {
        static const struct timespec now = {0, 0};
        sigtimedwait(&sigpipe, NULL, &now);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = error;
    return n;
}

/* A durable temporary's bytes go to the disk from the moment each CB_WRITEBACK_BYTES of them is
 * written (sync_file_range starts the writeback and waits for none of it), so that the fsync at
 * commit finds most of the file already written instead of writing all of it then: the disk works
 * while the rest is still being written. The fsync alone still makes the file durable; a failure
 * here is left for it to report. */
#define CB_WRITEBACK_BYTES ((uint64_t)8 << 20)

static void start_writeback(cb_output *output)
{
    if (!output->durable || output->kind == CB_OUTPUT_IN_PLACE || output->written - output->writeback_from < CB_WRITEBACK_BYTES)
        return;
    (void)sync_file_range(output->fd, (off_t)output->writeback_from, (off_t)(output->written - output->writeback_from),
                          SYNC_FILE_RANGE_WRITE);
    output->writeback_from = output->written;
}

static void write_all(cb_output *output, const uint8_t *data, size_t length)
{
    while (length > 0 && output->error == 0) {
        const ssize_t n = output->pipe ? write_without_sigpipe(output->fd, data, length) : io_write(output->fd, data, length);
        /* A write that blocks (a FIFO, a pipe) and a signal interrupts: the caller may want to stop. */
        if (n < 0 && errno == EINTR && cb_progress_interrupted() != CBLOB_OK) {
            output->cancelled = true;
            record(output, "write", ECANCELED);
            return;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            record(output, "write", errno);
            return;
        }
        data += n;
        length -= (size_t)n;
        output->written += (uint64_t)n;
    }
    start_writeback(output);
}

static void flush_pending(cb_output *output)
{
    write_all(output, output->pending, output->used);
    output->used = 0;
}

static cblob_status write_failure(const cb_output *output)
{
    if (output->cancelled)
        return cb_fail(CBLOB_ERR_CANCELLED, "%s: stopped by the progress callback while it was written", output->display);
    return cb_fail(CBLOB_ERR_IO, "%s: cannot %s: %s", output->display, output->step, strerror(output->error));
}

/* Small pieces (tags, lengths) are gathered; large ones (value arrays) go straight out. */
cblob_status cb_output_write(cb_output *output, const void *bytes, size_t size)
{
    if (output->error == 0 && size <= sizeof output->pending - output->used) {
        memcpy(output->pending + output->used, bytes, size);
        output->used += size;
    } else if (output->error == 0) {
        flush_pending(output);
        if (size < sizeof output->pending) {
            memcpy(output->pending, bytes, size);
            output->used = size;
        } else {
            write_all(output, bytes, size);
        }
    }
    return output->error == 0 ? CBLOB_OK : write_failure(output);
}

bool cb_output_can_rewrite(const cb_output *output)
{
    return output->kind != CB_OUTPUT_IN_PLACE;
}

static bool pwrite_all(int fd, const uint8_t *data, size_t length, off_t offset);

cblob_status cb_output_write_at(cb_output *output, uint64_t offset, const void *bytes, size_t size)
{
    if (output->error == 0 && output->kind == CB_OUTPUT_IN_PLACE)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot go back to byte %llu (it is written in place, not a regular file)",
                       output->display, (unsigned long long)offset);
    flush_pending(output);
    if (output->error == 0 && (offset > output->written || size > output->written - offset))
        return cb_fail(CBLOB_ERR_INTERNAL, "%s: rewrites bytes past the %llu written", output->display,
                       (unsigned long long)output->written);
    if (output->error == 0 && !pwrite_all(output->fd, bytes, size, (off_t)offset))
        record(output, "write", errno);
    return output->error == 0 ? CBLOB_OK : write_failure(output);
}

/* ---- commit ------------------------------------------------------------------------------- */

/* The replaced file's owner and group where the writer may set them, then its mode, made no more
 * permissive where they could not be kept. chown first: it clears setuid and setgid. */
static void keep_attributes(cb_output *output)
{
    const struct stat *original = &output->original;
    struct stat now;
    if (fstat(output->fd, &now) != 0) {
        record(output, "stat", errno);
        return;
    }
    const uid_t uid = original->st_uid != now.st_uid ? original->st_uid : (uid_t)-1;
    const gid_t gid = original->st_gid != now.st_gid ? original->st_gid : (gid_t)-1;
    if ((uid != (uid_t)-1 || gid != (gid_t)-1) && fchown(output->fd, uid, gid) != 0 && uid != (uid_t)-1 &&
        gid != (gid_t)-1)
        (void)!fchown(output->fd, (uid_t)-1, gid); /* the group alone may be the writer's to give */
    if (fstat(output->fd, &now) != 0) {
        record(output, "stat", errno);
        return;
    }
    mode_t mode = original->st_mode & 07777;
    if (now.st_uid != original->st_uid)
        mode &= ~(mode_t)(S_ISUID | S_ISGID);
    if (now.st_gid != original->st_gid) {
        /* Members of the new group had at most the others' access before. */
        mode &= ~(mode_t)(S_ISGID | S_IRWXG);
        mode |= (mode & S_IRWXO) << 3;
    }
    if (fchmod(output->fd, mode) != 0)
        record(output, "set the new file's mode", errno);
}

/* The target gets the new name's place: replaced, or created where the name must still be free
 * (renameat2 refuses a taken name; where a file system lacks it, a hard link does the same). */
static void put_in_place(cb_output *output)
{
    if (output->kind == CB_OUTPUT_REPLACE) {
        if (io_renameat(output->dirfd, output->temporary, output->dirfd, output->name) != 0)
            record(output, "put the new file in place", errno);
        else
            output->temporary[0] = '\0';
        return;
    }
    if (io_renameat2(output->dirfd, output->temporary, output->dirfd, output->name, RENAME_NOREPLACE) == 0) {
        output->temporary[0] = '\0';
        return;
    }
    if (errno != EINVAL && errno != ENOSYS) {
        record(output, errno == EEXIST ? "create it (the name was taken while it was written)" : "put the new file in place", errno);
        return;
    }
    if (linkat(output->dirfd, output->temporary, output->dirfd, output->name, 0) != 0)
        record(output, errno == EEXIST ? "create it (the name was taken while it was written)" : "put the new file in place", errno);
}

/* Closes the temporary, reporting what close finds (NFS writes back there), while a duplicate
 * keeps it locked until it has its name. */
static void close_keeping_lock(cb_output *output)
{
    const int keep = dup(output->fd);
    if (keep < 0) {
        record(output, "duplicate a descriptor", errno);
        return;
    }
    if (close(output->fd) != 0)
        record(output, "close", errno);
    output->fd = keep;
}

static void commit_temporary(cb_output *output)
{
    if (output->keep_attributes && output->error == 0)
        keep_attributes(output);
    if (output->durable && output->error == 0 && io_fsync(output->fd) != 0)
        record(output, "fsync", errno);
    if (output->error == 0)
        close_keeping_lock(output);
    if (output->error == 0)
        put_in_place(output);
}

static bool pwrite_all(int fd, const uint8_t *data, size_t length, off_t offset)
{
    while (length > 0) {
        const ssize_t n = io_pwrite(fd, data, length, offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            errno = n < 0 ? errno : EIO;
            return false;
        }
        data += n, length -= (size_t)n, offset += n;
    }
    return true;
}

/* Copies the staged bytes into the target, after reserving the room they need, so running out of
 * space fails before the target is touched. */
static void copy_staged(cb_output *output)
{
    const off_t size = (off_t)output->written;
    if (size > 0 && (io_injected(CB_FAULT_WRITE) > 0 || fallocate(output->target_fd, FALLOC_FL_KEEP_SIZE, 0, size) != 0) &&
        errno != EOPNOTSUPP &&
        errno != ENOSYS) {
        record(output, "reserve space", errno);
        return;
    }
    for (off_t done = 0; done < size && output->error == 0;) {
        const size_t piece = size - done < (off_t)sizeof output->pending ? (size_t)(size - done) : sizeof output->pending;
        const ssize_t got = io_pread(output->fd, output->pending, piece, done);
        if (got <= 0) {
            if (got < 0 && errno == EINTR)
                continue;
            record(output, "read back the staged copy", got < 0 ? errno : EIO);
            break;
        }
        if (!pwrite_all(output->target_fd, output->pending, (size_t)got, done))
            record(output, "write", errno);
        done += got;
    }
    if (output->error == 0 && (io_injected(CB_FAULT_WRITE) > 0 || ftruncate(output->target_fd, size) != 0))
        record(output, "truncate", errno);
    if (output->error == 0 && io_fsync(output->target_fd) != 0)
        record(output, "fsync", errno);
    if (close(output->target_fd) != 0)
        record(output, "close", errno);
    output->target_fd = -1;
}

cblob_status cb_output_commit(cb_output *output)
{
    flush_pending(output);
    if (output->kind == CB_OUTPUT_STAGED && output->error == 0)
        copy_staged(output);
    else if (output->kind != CB_OUTPUT_IN_PLACE)
        commit_temporary(output);
    if (output->kind == CB_OUTPUT_IN_PLACE && output->close_fd && output->error == 0) {
        if (close(output->fd) != 0)
            record(output, "close", errno);
        output->fd = -1;
    }
    const cblob_status status = output->error == 0 ? CBLOB_OK : write_failure(output);
    output_free(output);
    return status;
}

void cb_output_abort(cb_output *output)
{
    if (output != NULL)
        output_free(output);
}
