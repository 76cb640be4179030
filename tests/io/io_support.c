/* SPDX-License-Identifier: BSD-2-Clause */
/* unshare, CLONE_*, nftw's FTW_ACTIONRETVAL-free flags, makedev. */
#define _GNU_SOURCE
#include "io_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "support.h"

bool io_temp_folder(char *folder, size_t size)
{
    const char *base = getenv("TMPDIR");
    snprintf(folder, size, "%s/cblob-io-XXXXXX", base != NULL && base[0] != '\0' ? base : "/tmp");
    return mkdtemp(folder) != NULL;
}

static int remove_entry(const char *path, const struct stat *info, int type, struct FTW *where)
{
    (void)info, (void)where;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* A test may have left a folder read-only. */
static int open_folder_up(const char *path, const struct stat *info, int type, struct FTW *where)
{
    (void)where;
    if (type == FTW_D && (info->st_mode & 0700) != 0700)
        chmod(path, 0700);
    return 0;
}

void io_remove_tree(const char *folder)
{
    /* Links are removed, never followed; a mount point's contents are left to the mount. */
    chmod(folder, 0700);
    nftw(folder, open_folder_up, 16, FTW_PHYS | FTW_MOUNT);
    nftw(folder, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

const char *io_path(int slot, const char *folder, const char *name)
{
    static char paths[8][1024];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", folder, name);
    return paths[slot];
}

bool io_payload_make(io_payload *payload, int64_t count, int seed)
{
    *payload = (io_payload){0};
    if (cblob_context_create(&payload->context) != CBLOB_OK)
        return false;
    payload->blob = ft_blob(payload->context, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){count}, seed, false);
    payload->bytes = payload->blob != NULL ? ft_to_proto(payload->blob, false, &payload->size) : NULL;
    return payload->bytes != NULL;
}

cblob_status io_payload_save(const io_payload *payload, const char *path)
{
    return cblob_blob_to_proto_file(payload->blob, 0, path);
}

void io_payload_free(io_payload *payload)
{
    free(payload->bytes);
    cblob_blob_destroy(payload->blob);
    cblob_context_destroy(payload->context);
    *payload = (io_payload){0};
}

bool io_file_holds(const char *path, const void *bytes, size_t size)
{
    size_t got = 0;
    uint8_t *content = ft_read_file(path, &got);
    const bool same = content != NULL && got == size && memcmp(content, bytes, size) == 0;
    free(content);
    return same;
}

bool io_write_file(const char *path, const void *bytes, size_t size)
{
    return ft_write_file(path, bytes, size);
}

static int count_matching(const char *folder, const char *prefix)
{
    DIR *dir = opendir(folder);
    if (dir == NULL)
        return -1;
    int count = 0;
    const struct dirent *entry;
    while ((entry = readdir(dir)) != NULL)
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0 &&
            strncmp(entry->d_name, prefix, strlen(prefix)) == 0)
            ++count;
    closedir(dir);
    return count;
}

int io_count_entries(const char *folder)
{
    return count_matching(folder, "");
}

int io_count_temporaries(const char *folder)
{
    return count_matching(folder, ".cblob-tmp-");
}

bool io_make_device(const char *path, bool block, unsigned major, unsigned minor, char *why, size_t why_size)
{
    if (mknod(path, (block ? S_IFBLK : S_IFCHR) | 0666, makedev(major, minor)) != 0) {
        snprintf(why, why_size, "cannot make a private device node with mknod (%s): needs root with CAP_MKNOD",
                 strerror(errno));
        return false;
    }
    /* A folder on a file system mounted nodev (systemd's tmpfs /tmp) holds the node but refuses to
     * open it: the tests that write through a twin of a system device cannot run there. (Block
     * nodes, of a range no driver has, are never opened.) */
    struct statvfs folder;
    if (!block && statvfs(path, &folder) == 0 && (folder.f_flag & ST_NODEV) != 0) {
        unlink(path);
        snprintf(why, why_size, "the test folder of %s is on a file system mounted nodev: its device nodes cannot be opened",
                 path);
        return false;
    }
    return true;
}

static bool write_text(const char *path, const char *text)
{
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    return close(fd) == 0 && ok;
}

/* A user namespace where this process keeps its own uid and gid but may mount. */
static bool enter_user_namespace(char *why, size_t why_size)
{
    const uid_t uid = geteuid();
    const gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
        snprintf(why, why_size, "cannot make a user and mount namespace to mount a private tmpfs: %s", strerror(errno));
        return false;
    }
    char map[64];
    snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
    bool ok = write_text("/proc/self/uid_map", map) && write_text("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
    ok = ok && write_text("/proc/self/gid_map", map);
    if (!ok)
        snprintf(why, why_size, "cannot map this user into a new user namespace");
    return ok;
}

bool io_private_tmpfs(const char *folder, const char *options, char *why, size_t why_size)
{
    const bool own_namespace = geteuid() == 0 && unshare(CLONE_NEWNS) == 0;
    if (!own_namespace && !enter_user_namespace(why, why_size))
        return false;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 || mount("tmpfs", folder, "tmpfs", 0, options) != 0) {
        snprintf(why, why_size, "cannot mount a private tmpfs: %s", strerror(errno));
        return false;
    }
    return true;
}

int io_make_socket(const char *path)
{
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path)
        return -1;
    strcpy(address.sun_path, path);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

bool io_message_has(const char *part)
{
    return strstr(cblob_last_error_message(), part) != NULL;
}
