/* SPDX-License-Identifier: BSD-2-Clause */
/* Files made inside an output folder, relative to the folder's descriptor. */
/* syncfs */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "io_internal.h"
#include "status.h"

struct cb_out_dir {
    int fd;
    char *path;
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
    *dir = (cb_out_dir){.fd = fd, .path = copy};
    cb_remove_stale_temporaries(fd);
    *out = dir;
    return CBLOB_OK;
}

cblob_status cb_out_dir_create(const char *path, cb_out_dir **out)
{
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot make the folder: %s", path, strerror(errno));
    return cb_out_dir_open(path, out);
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
    const int dirfd = status == CBLOB_OK ? fcntl(dir->fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (status == CBLOB_OK && dirfd < 0)
        status = cb_fail(CBLOB_ERR_IO, "%s: cannot duplicate the folder's descriptor: %s", display, strerror(errno));
    if (status == CBLOB_OK) {
        const cb_output_plan plan = {.kind = kind, .display = display, .dirfd = dirfd, .name = name, .fd = -1,
                                     .private_file = private_file};
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

void cb_out_dir_close(cb_out_dir *dir)
{
    if (dir == NULL)
        return;
    close(dir->fd);
    cb_free(dir->path);
    cb_free(dir);
}
