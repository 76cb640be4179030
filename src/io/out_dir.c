/* SPDX-License-Identifier: BSD-2-Clause */
/* Files made inside an output folder, relative to the folder's descriptor; and files staged there
 * to appear together. */
/* syncfs, RENAME_NOREPLACE */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "io_internal.h"
#include "status.h"

/* A file made in the staging folder, and how it takes its name in the folder. */
typedef struct staged_file {
    char *name;
    bool replace; /* a regular file or a link was there when it was opened (else the name must be free) */
} staged_file;

struct cb_out_dir {
    int fd;
    char *path;
    bool created; /* cb_out_dir_create made the folder */
    /* cb_out_dir_stage: the staging folder (a locked temporary folder in it), its files */
    int stage_fd;
    char stage_name[64];
    staged_file *staged;
    size_t num_staged, staged_capacity;
};

cblob_status cb_out_dir_open(const char *path, cb_out_dir **out)
{
    const int fd = io_openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open the folder: %s", path, strerror(errno));
    cb_out_dir *dir = cb_malloc(sizeof *dir);
    char *copy = cb_strdup(path);
    if (dir == NULL || copy == NULL) {
        cb_free(dir);
        cb_free(copy);
        close(fd);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write into %s", path);
    }
    *dir = (cb_out_dir){.fd = fd, .path = copy, .stage_fd = -1};
    cb_remove_stale_temporaries(fd);
    *out = dir;
    return CBLOB_OK;
}

cblob_status cb_out_dir_create(const char *path, cb_out_dir **out)
{
    const bool made = mkdir(path, 0777) == 0;
    if (!made && errno != EEXIST)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot make the folder: %s", path, strerror(errno));
    const cblob_status status = cb_out_dir_open(path, out);
    if (status == CBLOB_OK)
        (*out)->created = made;
    else if (made)
        rmdir(path);
    return status;
}

static cblob_status check_name(const cb_out_dir *dir, const char *name)
{
    if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/') != NULL ||
        strncmp(name, CB_TEMP_PREFIX, strlen(CB_TEMP_PREFIX)) == 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "\"%s\" cannot name a file in %s: it must be one path component, not \".\", \"..\" or a "
                       "name starting with \"" CB_TEMP_PREFIX "\"",
                       name, dir->path);
    return CBLOB_OK;
}

/* Notes a file made in the staging folder, to move into place at cb_out_dir_publish. */
static cblob_status note_staged(cb_out_dir *dir, const char *name, bool replace)
{
    if (dir->num_staged == dir->staged_capacity) {
        const size_t capacity = dir->staged_capacity > 0 ? dir->staged_capacity * 2 : 64;
        staged_file *grown = cb_realloc(dir->staged, capacity * sizeof *grown);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to note the files staged in %s", dir->path);
        dir->staged = grown;
        dir->staged_capacity = capacity;
    }
    char *copy = cb_strdup(name);
    if (copy == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to note the files staged in %s", dir->path);
    dir->staged[dir->num_staged++] = (staged_file){copy, replace};
    return CBLOB_OK;
}

static cblob_status open_in(cb_out_dir *dir, const char *name, bool private_file, cb_output **out)
{
    CB_TRY(check_name(dir, name));
    const size_t size = strlen(dir->path) + strlen(name) + 2;
    char *display = cb_malloc(size);
    if (display == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write %s in %s", name, dir->path);
    snprintf(display, size, "%s/%s", dir->path, name);
    /* A regular file or a link is replaced as an entry, never written through; a free name must
     * stay free until the file takes it. Nothing else is ours to replace. */
    struct stat existing;
    cblob_status status = CBLOB_OK;
    cb_output_kind kind = CB_OUTPUT_CREATE;
    if (fstatat(dir->fd, name, &existing, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISREG(existing.st_mode) || S_ISLNK(existing.st_mode))
            kind = CB_OUTPUT_REPLACE;
        else
            status = cb_fail(CBLOB_ERR_IO, "%s is %s; cblob replaces only regular files and symbolic links in an "
                             "output folder", display, cb_file_kind(existing.st_mode));
    } else if (errno != ENOENT) {
        status = cb_fail(CBLOB_ERR_IO, "%s: cannot stat: %s", display, strerror(errno));
    }
    /* Staged, the file takes its name in the staging folder, which is fresh: the name is free. */
    const bool staging = dir->stage_fd >= 0;
    if (status == CBLOB_OK && staging)
        status = note_staged(dir, name, kind == CB_OUTPUT_REPLACE);
    const int dirfd = status == CBLOB_OK ? fcntl(staging ? dir->stage_fd : dir->fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (status == CBLOB_OK && dirfd < 0)
        status = cb_fail(CBLOB_ERR_IO, "%s: cannot duplicate the folder's descriptor: %s", display, strerror(errno));
    if (status == CBLOB_OK) {
        const cb_output_plan plan = {.kind = staging ? CB_OUTPUT_CREATE : kind, .display = display, .dirfd = dirfd,
                                     .name = name, .fd = -1, .private_file = private_file};
        status = cb_output_start(&plan, out);
    }
    cb_free(display);
    return status;
}

cblob_status cb_output_open_in(cb_out_dir *dir, const char *name, cb_output **out)
{
    return open_in(dir, name, false, out);
}

cblob_status cb_output_open_in_private(cb_out_dir *dir, const char *name, cb_output **out)
{
    return open_in(dir, name, true, out);
}

cblob_status cb_out_dir_remove(cb_out_dir *dir, const char *name)
{
    CB_TRY(check_name(dir, name));
    struct stat existing;
    if (fstatat(dir->fd, name, &existing, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? CBLOB_OK : cb_fail(CBLOB_ERR_IO, "%s/%s: cannot stat: %s", dir->path, name, strerror(errno));
    if (!S_ISREG(existing.st_mode) && !S_ISLNK(existing.st_mode))
        return cb_fail(CBLOB_ERR_IO, "%s/%s is %s; cblob removes only regular files and symbolic links in an output "
                       "folder", dir->path, name, cb_file_kind(existing.st_mode));
    if (unlinkat(dir->fd, name, 0) != 0 && errno != ENOENT)
        return cb_fail(CBLOB_ERR_IO, "%s/%s: cannot remove: %s", dir->path, name, strerror(errno));
    return CBLOB_OK;
}

cblob_status cb_out_dir_sync(cb_out_dir *dir)
{
    if (io_fsync_all(dir->fd) != 0 || io_fsync(dir->fd) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot sync the folder: %s", dir->path, strerror(errno));
    return CBLOB_OK;
}

/* ---- staging ------------------------------------------------------------------------------ */

cblob_status cb_out_dir_stage(cb_out_dir *dir)
{
    static atomic_uint serial;
    for (int attempt = 0; attempt < 100 && dir->stage_fd < 0; ++attempt) {
        snprintf(dir->stage_name, sizeof dir->stage_name, CB_TEMP_PREFIX "%ld-s%u", (long)getpid(),
                 atomic_fetch_add(&serial, 1));
        if (io_injected(CB_FAULT_OPEN) > 0 || mkdirat(dir->fd, dir->stage_name, 0700) != 0) {
            if (errno == EEXIST)
                continue;
            return cb_fail(CBLOB_ERR_IO, "%s: cannot make a staging folder in it: %s", dir->path, strerror(errno));
        }
        const int fd = openat(dir->fd, dir->stage_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            const int error = errno;
            unlinkat(dir->fd, dir->stage_name, AT_REMOVEDIR);
            return cb_fail(CBLOB_ERR_IO, "%s: cannot open its staging folder: %s", dir->path, strerror(error));
        }
        /* Held while the folder is staged: another writer's cleaning leaves it alone (io.h). A
         * cleaner that locked it between mkdir and here removes it: this writer takes another. */
        struct stat opened, named;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
            close(fd);
            continue;
        }
        if (fstat(fd, &opened) != 0 || fstatat(dir->fd, dir->stage_name, &named, AT_SYMLINK_NOFOLLOW) != 0 ||
            opened.st_dev != named.st_dev || opened.st_ino != named.st_ino) {
            close(fd);
            continue;
        }
        cb_mark_temporary(fd);
        dir->stage_fd = fd;
    }
    return dir->stage_fd >= 0 ? CBLOB_OK : cb_fail(CBLOB_ERR_IO, "%s: no free name for a staging folder", dir->path);
}

/* Moves a staged file into the folder under its name: over what was there, or where the name must
 * still be free (as put_in_place does for a single file). */
static cblob_status move_staged(cb_out_dir *dir, const staged_file *file)
{
    int result = io_renameat2(dir->stage_fd, file->name, dir->fd, file->name, file->replace ? 0 : RENAME_NOREPLACE);
    if (result != 0 && !file->replace && (errno == EINVAL || errno == ENOSYS)) {
        result = linkat(dir->stage_fd, file->name, dir->fd, file->name, 0);
        if (result == 0)
            unlinkat(dir->stage_fd, file->name, 0);
    }
    if (result != 0)
        return cb_fail(CBLOB_ERR_IO, "%s/%s: cannot put the new file in place%s: %s", dir->path, file->name,
                       errno == EEXIST ? " (the name was taken while it was written)" : "", strerror(errno));
    return CBLOB_OK;
}

/* Empties the staging folder (its files are this writer's alone) and removes it. */
static void remove_stage(cb_out_dir *dir)
{
    if (dir->stage_fd < 0)
        return;
    for (size_t i = 0; i < dir->num_staged; ++i)
        unlinkat(dir->stage_fd, dir->staged[i].name, 0);
    cb_remove_stale_temporaries(dir->stage_fd); /* an output aborted since, and no longer locked */
    unlinkat(dir->fd, dir->stage_name, AT_REMOVEDIR);
    close(dir->stage_fd);
    dir->stage_fd = -1;
}

cblob_status cb_out_dir_publish(cb_out_dir *dir, const char *last)
{
    if (io_fsync_all(dir->stage_fd) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot sync the staged files: %s", dir->path, strerror(errno));
    const staged_file *final = NULL;
    for (size_t i = 0; i < dir->num_staged; ++i) {
        if (last != NULL && strcmp(dir->staged[i].name, last) == 0)
            final = &dir->staged[i];
        else
            CB_TRY(move_staged(dir, &dir->staged[i]));
    }
    if (final != NULL) {
        if (io_fsync(dir->fd) != 0) /* everything else first, durably */
            return cb_fail(CBLOB_ERR_IO, "%s: cannot sync the folder: %s", dir->path, strerror(errno));
        CB_TRY(move_staged(dir, final));
    }
    for (size_t i = 0; i < dir->num_staged; ++i)
        cb_free(dir->staged[i].name);
    dir->num_staged = 0;
    remove_stage(dir);
    /* Past the last move the new folder is what readers see; a failed sync now means only that it
     * may not survive a power loss, and the error says so rather than pretending nothing changed. */
    if (io_fsync(dir->fd) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: the new files are in place, but the folder could not be synced, so they "
                       "may not survive a power loss: %s", dir->path, strerror(errno));
    return CBLOB_OK;
}

static void close_dir(cb_out_dir *dir, bool abandon)
{
    if (dir == NULL)
        return;
    remove_stage(dir);
    for (size_t i = 0; i < dir->num_staged; ++i)
        cb_free(dir->staged[i].name);
    cb_free(dir->staged);
    close(dir->fd);
    if (abandon && dir->created)
        rmdir(dir->path); /* only when it is empty: nothing but what this writer made was there */
    cb_free(dir->path);
    cb_free(dir);
}

void cb_out_dir_close(cb_out_dir *dir)
{
    close_dir(dir, false);
}

void cb_out_dir_abandon(cb_out_dir *dir)
{
    close_dir(dir, true);
}
