/* SPDX-License-Identifier: BSD-2-Clause */
/* S_ISVTX, syncfs (io_internal.h) */
#define _GNU_SOURCE
/* A named output path: links followed to the target, and the way the target's kind is written. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "alloc.h"
#include "io_internal.h"
#include "status.h"

/* As many links as the kernel follows in one path (MAXSYMLINKS). */
#define MAX_LINKS 40

/* The path a link at `link` points to: its text, relative to the link's folder unless absolute. */
static char *link_destination(const char *link, const char *text)
{
    const char *slash = strrchr(link, '/');
    if (text[0] == '/' || slash == NULL)
        return cb_strdup(text);
    const int folder = (int)(slash - link);
    const size_t size = (size_t)folder + strlen(text) + 2;
    char *joined = cb_malloc(size);
    if (joined != NULL)
        snprintf(joined, size, "%.*s/%s", folder, link, text);
    return joined;
}

/* The kernel's rule for following links (fs.protected_symlinks, on by default on Debian, Ubuntu
 * and Fedora): a link in a sticky folder that others may write (/tmp) is followed only when the
 * follower owns it, or the folder's owner does. cblob follows the links of an output's path
 * itself (to replace the target atomically), so it applies the rule itself: without it root
 * saving to /tmp/x would write wherever another user's link named x points. */
static cblob_status check_link_owner(const char *link, const char *path)
{
    struct stat link_info, folder_info;
    const char *slash = strrchr(link, '/');
    char *folder = slash == NULL ? cb_strdup(".") : slash == link ? cb_strdup("/") : cb_strndup(link, (size_t)(slash - link));
    if (folder == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to follow the links of %s", path);
    const bool known = lstat(link, &link_info) == 0 && stat(folder, &folder_info) == 0;
    cb_free(folder);
    if (!known)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot follow the path: %s", path, strerror(errno));
    const bool shared = (folder_info.st_mode & S_ISVTX) && (folder_info.st_mode & S_IWOTH);
    if (shared && link_info.st_uid != geteuid() && link_info.st_uid != folder_info.st_uid)
        return cb_fail(CBLOB_ERR_IO, "%s is a symbolic link in a sticky folder others may write, owned by neither "
                       "you nor the folder's owner: cblob does not follow it (the kernel's protected_symlinks rule)",
                       link);
    return CBLOB_OK;
}

/* Whether a link's text names no path but an object of the kernel's: /proc's links for pipes,
 * sockets and anonymous files ("pipe:[1234]", what /dev/stdout leads to when standard output is a
 * pipe). Only the kernel can follow them. */
static bool names_no_path(const char *link, const char *text)
{
    if (text[0] == '/' || strchr(text, ':') == NULL)
        return false;
    const char *slash = strrchr(link, '/');
    char *folder = slash == NULL ? cb_strdup(".") : slash == link ? cb_strdup("/") : cb_strndup(link, (size_t)(slash - link));
    struct statfs info;
    const bool proc = folder != NULL && statfs(folder, &info) == 0 && info.f_type == PROC_SUPER_MAGIC;
    cb_free(folder);
    return proc;
}

/* The descriptor of this process that a link of its /proc fd folder stands for when that
 * descriptor holds a regular file (/dev/stdout leads to /proc/self/fd/1 and /dev/fd/N to
 * /proc/self/fd/N), or -1 for any other link. */
static int own_file_descriptor(const char *link)
{
    const char *slash = strrchr(link, '/');
    char folder[PATH_MAX];
    if (slash == NULL || slash == link || (size_t)(slash - link) >= sizeof folder || slash[1] < '0' ||
        slash[1] > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    const long number = strtol(slash + 1, &end, 10);
    if (*end != '\0' || errno != 0 || number > INT_MAX)
        return -1;
    memcpy(folder, link, (size_t)(slash - link));
    folder[slash - link] = '\0';
    struct stat named, own, opened;
    const bool ours = stat(folder, &named) == 0 &&
                      ((stat("/proc/self/fd", &own) == 0 && own.st_dev == named.st_dev && own.st_ino == named.st_ino) ||
                       (stat("/proc/thread-self/fd", &own) == 0 && own.st_dev == named.st_dev &&
                        own.st_ino == named.st_ino));
    return ours && fstat((int)number, &opened) == 0 && S_ISREG(opened.st_mode) ? (int)number : -1;
}

/* Follows the path's last component while it is a symbolic link; a dangling link gives the path
 * of the file to create. A link of /proc that names no path ends the walk: *by_kernel says the
 * kernel opens it; so does a link for one of this process's descriptors holding a regular file:
 * *descriptor is that descriptor (-1 otherwise). (Links among the folders are left to the kernel,
 * which applies its rule to them.) */
static cblob_status follow_links(const char *path, char **out, bool *by_kernel, int *descriptor)
{
    *by_kernel = false;
    *descriptor = -1;
    char *current = cb_strdup(path);
    for (int hops = 0; current != NULL; ++hops) {
        char text[PATH_MAX];
        const ssize_t length = readlink(current, text, sizeof text);
        if (length < 0 && (errno == EINVAL || errno == ENOENT)) { /* not a link; nothing there */
            *out = current;
            return CBLOB_OK;
        }
        if (length >= 0) {
            const cblob_status status = check_link_owner(current, path);
            if (status != CBLOB_OK) {
                cb_free(current);
                return status;
            }
        }
        const int error = length < 0 ? errno : (size_t)length == sizeof text ? ENAMETOOLONG : hops == MAX_LINKS ? ELOOP : 0;
        if (error != 0) {
            cb_free(current);
            return cb_fail(CBLOB_ERR_IO, "%s: cannot follow the path: %s", path, strerror(error));
        }
        text[length] = '\0';
        *descriptor = own_file_descriptor(current);
        if (*descriptor >= 0 || names_no_path(current, text)) {
            *by_kernel = true;
            *out = current;
            return CBLOB_OK;
        }
        char *next = link_destination(current, text);
        cb_free(current);
        current = next;
    }
    return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to follow the links of %s", path);
}

/* Opens the target's folder and finds the target's name in it. */
static cblob_status open_folder(const char *path, const char *display, int *out_dirfd, const char **out_name)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash != NULL ? slash + 1 : path;
    if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return cb_fail(CBLOB_ERR_IO, "%s names a folder, not a file", display);
    if (strncmp(name, CB_TEMP_PREFIX, strlen(CB_TEMP_PREFIX)) == 0)
        return cb_fail(CBLOB_ERR_IO, "%s: names starting with \"" CB_TEMP_PREFIX "\" are cblob's temporary files",
                       display);
    char *folder = slash == NULL ? cb_strdup(".") : slash == path ? cb_strdup("/") : cb_strndup(path, (size_t)(slash - path));
    if (folder == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write %s", display);
    const int dirfd = io_openat(AT_FDCWD, folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    const int error = errno;
    cb_free(folder);
    if (dirfd < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open its folder: %s", display, strerror(error));
    *out_dirfd = dirfd;
    *out_name = name;
    return CBLOB_OK;
}

/* Opens the target written in place, and checks it is still the file `checked` describes.
 * O_NONBLOCK: a FIFO nobody reads fails with ENXIO instead of waiting for a reader. Writes then
 * block as usual. */
static cblob_status open_in_place(int dirfd, const char *name, const char *display, const struct stat *checked,
                                  int *out_fd)
{
    const int fd = io_openat(dirfd, name, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0 && errno == ENXIO && S_ISFIFO(checked->st_mode))
        return cb_fail(CBLOB_ERR_IO, "%s is a FIFO (named pipe) that no process is reading", display);
    if (fd < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open: %s", display, strerror(errno));
    struct stat opened;
    const int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &opened) != 0 || opened.st_dev != checked->st_dev || opened.st_ino != checked->st_ino ||
        flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        close(fd);
        return cb_fail(CBLOB_ERR_IO, "%s changed while it was being opened", display);
    }
    *out_fd = fd;
    return CBLOB_OK;
}

/* How a target that exists is written: replaced, staged and copied in (other hard links), in
 * place (devices, FIFOs), or refused. */
static cblob_status plan_existing(cb_output_plan *plan, const struct stat *target, int *out_fd)
{
    const char *display = plan->display;
    if (S_ISCHR(target->st_mode) || S_ISFIFO(target->st_mode)) {
        plan->kind = CB_OUTPUT_IN_PLACE;
        plan->close_fd = true;
        return open_in_place(plan->dirfd, plan->name, display, target, out_fd);
    }
    if (!S_ISREG(target->st_mode))
        return cb_fail(CBLOB_ERR_IO, "%s is %s; cblob writes regular files, character devices and FIFOs", display,
                       cb_file_kind(target->st_mode));
    if (faccessat(plan->dirfd, plan->name, W_OK, AT_EACCESS) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot replace it: %s", display, strerror(errno));
    if (target->st_nlink <= 1) {
        plan->kind = CB_OUTPUT_REPLACE;
        plan->original = target;
        return CBLOB_OK;
    }
    plan->kind = CB_OUTPUT_STAGED;
    const int fd = io_openat(plan->dirfd, plan->name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
    struct stat opened;
    if (fd < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open: %s", display, strerror(errno));
    if (fstat(fd, &opened) != 0 || opened.st_dev != target->st_dev || opened.st_ino != target->st_ino) {
        close(fd);
        return cb_fail(CBLOB_ERR_IO, "%s changed while it was being opened", display);
    }
    *out_fd = fd;
    return CBLOB_OK;
}

/* "path" or "path (a link to target)", for messages. */
static char *describe(const char *path, const char *target)
{
    if (strcmp(path, target) == 0)
        return cb_strdup(path);
    const size_t size = strlen(path) + strlen(target) + 16;
    char *text = cb_malloc(size);
    if (text != NULL)
        snprintf(text, size, "%s (a link to %s)", path, target);
    return text;
}

static cblob_status plan_output(const char *target, const char *display, cb_output **out)
{
    cb_output_plan plan = {.kind = CB_OUTPUT_REPLACE, .display = display, .fd = -1, .durable = true,
                            .remove_stale = true};
    CB_TRY(open_folder(target, display, &plan.dirfd, &plan.name));
    struct stat existing;
    cblob_status status = CBLOB_OK;
    if (fstatat(plan.dirfd, plan.name, &existing, AT_SYMLINK_NOFOLLOW) == 0)
        status = S_ISLNK(existing.st_mode) ? cb_fail(CBLOB_ERR_IO, "%s changed while it was being opened", display)
                                           : plan_existing(&plan, &existing, &plan.fd);
    else if (errno != ENOENT)
        status = cb_fail(CBLOB_ERR_IO, "%s: cannot stat: %s", display, strerror(errno));
    if (status != CBLOB_OK) {
        close(plan.dirfd);
        return status;
    }
    if (plan.kind == CB_OUTPUT_IN_PLACE) {
        close(plan.dirfd);
        plan.dirfd = -1;
    }
    return cb_output_start(&plan, out);
}

/* A link of /proc that names no path, opened by the kernel: a pipe (standard output, as
 * /dev/stdout) or a character device is written in place, as a named FIFO or device is. */
static cblob_status plan_by_kernel(const char *link, const char *display, cb_output **out)
{
    const int fd = io_openat(AT_FDCWD, link, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0);
    if (fd < 0 && errno == ENXIO)
        return cb_fail(CBLOB_ERR_IO, "%s is a pipe that no process is reading, or a socket", display);
    if (fd < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot open: %s", display, strerror(errno));
    struct stat opened;
    const int flags = fcntl(fd, F_GETFL);
    cblob_status status = CBLOB_OK;
    if (fstat(fd, &opened) != 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
        status = cb_fail(CBLOB_ERR_IO, "%s: cannot open: %s", display, strerror(errno));
    else if (!S_ISFIFO(opened.st_mode) && !S_ISCHR(opened.st_mode))
        status = cb_fail(CBLOB_ERR_IO, "%s is %s; cblob writes regular files, character devices and FIFOs", display,
                         cb_file_kind(opened.st_mode));
    if (status != CBLOB_OK) {
        close(fd);
        return status;
    }
    const cb_output_plan plan = {.kind = CB_OUTPUT_IN_PLACE, .display = display, .dirfd = -1, .fd = fd,
                                 .close_fd = true};
    return cb_output_start(&plan, out);
}

/* A regular file reached through one of this process's descriptors (/dev/stdout with standard
 * output redirected to a file) is written through that descriptor, from its offset on, as a
 * program writes its standard output: after what the shell or the program wrote before, at the end
 * where the descriptor appends. Replacing the file instead would leave the descriptor, and the
 * shell's redirection, on a file no name leads to any more. */
static cblob_status plan_descriptor(int descriptor, const char *display, cb_output **out)
{
    const int flags = fcntl(descriptor, F_GETFL);
    if (flags < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: descriptor %d: %s", display, descriptor, strerror(errno));
    if ((flags & O_ACCMODE) == O_RDONLY)
        return cb_fail(CBLOB_ERR_IO, "%s: descriptor %d is open for reading only", display, descriptor);
    const int fd = fcntl(descriptor, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot duplicate descriptor %d: %s", display, descriptor, strerror(errno));
    const cb_output_plan plan = {.kind = CB_OUTPUT_IN_PLACE, .display = display, .dirfd = -1, .fd = fd,
                                 .close_fd = true};
    return cb_output_start(&plan, out);
}

cblob_status cb_output_open(const char *path, cb_output **out)
{
    char *target = NULL;
    bool by_kernel = false;
    int descriptor = -1;
    CB_TRY(follow_links(path, &target, &by_kernel, &descriptor));
    char *display = describe(path, target);
    cblob_status status = display == NULL ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write %s", path)
                          : descriptor >= 0 ? plan_descriptor(descriptor, display, out)
                          : by_kernel       ? plan_by_kernel(target, display, out)
                                            : plan_output(target, display, out);
    cb_free(display);
    cb_free(target);
    return status;
}

cblob_status cb_output_open_fd(int fd, const char *name, cb_output **out)
{
    struct stat info;
    if (fstat(fd, &info) != 0)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot stat: %s", name, strerror(errno));
    if (S_ISDIR(info.st_mode))
        return cb_fail(CBLOB_ERR_IO, "%s is %s, not a file", name, cb_file_kind(info.st_mode));
    const cb_output_plan plan = {.kind = CB_OUTPUT_IN_PLACE, .display = name, .dirfd = -1, .fd = fd};
    return cb_output_start(&plan, out);
}
