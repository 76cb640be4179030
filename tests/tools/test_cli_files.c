/* SPDX-License-Identifier: BSD-2-Clause */
/* The cblob program on real file systems (issue 10, defects 1, 2, 3 and 5): .npy folders of
 * thousands of layers with colliding names, links, hard links, FIFOs and devices planted in the
 * output folder, a full file system, a killed conversion, read-only folders, FIFOs given as
 * inputs, and single-file outputs through links and onto devices. The suite runs as root and
 * again as nobody (tools_unprivileged). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli_support.h"
#include "harness.h"
#include "io_support.h"
#include "support.h"

static const char *path_in(int slot, const char *folder, const char *name)
{
    return io_path(slot, folder, name);
}

/* ---- defect 1: linear, and names that collide ------------------------------------------------- */

/* Each entry of index.json names a file of the folder, and no two files differ only by case. */
static bool index_matches_folder(const char *folder, size_t *entries)
{
    json_error_t error;
    json_t *index = json_load_file(path_in(7, folder, "index.json"), 0, &error);
    json_t *files = json_object_get(index, "files");
    bool ok = json_is_array(files) && (int)json_array_size(files) == cli_count_suffix(folder, ".npy");
    for (size_t i = 0; ok && i < json_array_size(files); ++i) {
        const char *file = json_string_value(json_object_get(json_array_get(files, i), "file"));
        struct stat info;
        ok = file != NULL && strlen(file) <= 143 && stat(path_in(6, folder, file), &info) == 0 && S_ISREG(info.st_mode);
        for (size_t j = 0; ok && j < i; ++j)
            ok = strcasecmp(file, json_string_value(json_object_get(json_array_get(files, j), "file"))) != 0;
        if (!ok)
            fprintf(stderr, "index.json files[%zu] = %s is missing, too long or collides\n", i, file ? file : "(none)");
    }
    *entries = json_array_size(files);
    json_decref(index);
    return ok;
}

TEST(npy_folder_of_a_5000_layer_hostile_net)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    static const char *const options[] = {"--layers 5000 --max-values 4",
                                          "--names hostile --layers 5000 --seed 4 --max-values 4"};
    for (int i = 0; i < 2; ++i) {
        const char *net = path_in(0, folder, "net.caffemodel"), *out = path_in(1, folder, i ? "hostile" : "plain");
        CHECK(cli_make_net(options[i], net));
        cli_result r;
        /* Before: every layer's name recomputed every earlier layer's, recursively (2^n: 40 layers
         * never finished), and a 300-byte name failed with "File name too long". */
        CHECK(CLI(&r, "convert", net, "--to", "npy", out));
        CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
        size_t entries = 0;
        CHECK(index_matches_folder(out, &entries));
        CHECK(entries > 5000);
        CHECK(strstr(r.out, "index.json") != NULL);
        cli_result_free(&r);
    }
    io_remove_tree(folder);
}

static const char *const colliding[] = {
    "a/b", "a_b", "a:b", "A_B", "", "..", ".hidden", "CON.txt", "conv", "Conv", "conv_L9",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx1",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx2",
    "\xff\xfe", "a_b",
};

/* The rule npy_folder.h states, file by file: the first keeps its stem, later ones take _L<i>. */
static const char *const colliding_files[] = {
    "a_b_0.npy", "a_b_L1_0.npy", "a_b_L2_0.npy", "A_B_L3_0.npy", "layer4_0.npy", "_._0.npy", "_hidden_0.npy",
    "_CON.txt_0.npy", "conv_0.npy", "Conv_L9_0.npy", "conv_L9_L10_0.npy",
    NULL, NULL, /* the long names: 83 bytes, '~' and a hash each */
    "___0.npy", "a_b_L14_0.npy",
};

TEST(colliding_names_get_distinct_stable_files)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const int count = (int)(sizeof colliding / sizeof colliding[0]);
    const char *net = path_in(0, folder, "colliding.caffemodel");
    CHECK(cli_write_named_net(net, colliding, count));
    cli_result r;
    for (int run = 0; run < 2; ++run) { /* the second run finds the same names, and replaces them */
        CHECK(CLI(&r, "convert", net, "--to", "npy", path_in(1, folder, "npy")));
        CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
        cli_result_free(&r);
        for (int i = 0; i < count; ++i) {
            struct stat info;
            if (colliding_files[i] != NULL)
                CHECK_MSG(stat(path_in(2, path_in(1, folder, "npy"), colliding_files[i]), &info) == 0, "%s is missing",
                          colliding_files[i]);
        }
        CHECK_EQ_INT(cli_count_suffix(path_in(1, folder, "npy"), ".npy"), count);
    }
    /* Long names are cut at 83 bytes and end in a hash of the whole name: two of them differ. */
    size_t entries = 0;
    CHECK(index_matches_folder(path_in(1, folder, "npy"), &entries));
    CHECK_EQ_INT((int)entries, count);
    json_t *index = json_load_file(path_in(3, path_in(1, folder, "npy"), "index.json"), 0, NULL);
    json_t *long_one = json_array_get(json_object_get(index, "files"), 11);
    const char *file = json_string_value(json_object_get(long_one, "file"));
    CHECK(file != NULL && strlen(file) == 100 + strlen("_0.npy") && file[83] == '~');
    CHECK(json_integer_value(json_object_get(long_one, "layer_index")) == 11);
    CHECK(strcmp(json_string_value(json_object_get(long_one, "layer")), colliding[11]) == 0);
    /* A name that is not UTF-8 reads with U+FFFD; its index still finds it. */
    CHECK(strcmp(json_string_value(json_object_get(json_array_get(json_object_get(index, "files"), 13), "layer")),
                 "\xef\xbf\xbd\xef\xbf\xbd") == 0);
    json_decref(index);
    io_remove_tree(folder);
}

/* ---- defects 2 and 3: the output folder ---------------------------------------------------- */

/* A folder with a one-layer net "victim" and its output folder npy/. */
static bool victim_setup(char *folder, size_t size)
{
    static const char *const names[] = {"victim"};
    return io_temp_folder(folder, size) && cli_write_named_net(path_in(0, folder, "victim.caffemodel"), names, 1) &&
           mkdir(path_in(1, folder, "npy"), 0755) == 0;
}

static int convert_victim(const char *folder, cli_result *r)
{
    CLI(r, "convert", path_in(0, folder, "victim.caffemodel"), "--to", "npy", path_in(1, folder, "npy"));
    return r->status;
}

TEST(link_planted_in_the_folder_is_replaced_not_followed)
{
    char folder[512];
    CHECK(victim_setup(folder, sizeof folder));
    const char *outside = path_in(2, folder, "outside.txt");
    CHECK(io_write_file(outside, "keep me", 7));
    CHECK(symlink(outside, path_in(3, path_in(1, folder, "npy"), "victim_0.npy")) == 0);
    CHECK(symlink(outside, path_in(4, path_in(1, folder, "npy"), "index.json")) == 0);
    cli_result r;
    CHECK_MSG(convert_victim(folder, &r) == 0, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    CHECK(io_file_holds(outside, "keep me", 7));
    struct stat info;
    CHECK(lstat(path_in(3, path_in(1, folder, "npy"), "victim_0.npy"), &info) == 0 && S_ISREG(info.st_mode));
    CHECK(lstat(path_in(4, path_in(1, folder, "npy"), "index.json"), &info) == 0 && S_ISREG(info.st_mode));
    io_remove_tree(folder);
}

TEST(hard_link_in_the_folder_keeps_the_other_name)
{
    char folder[512];
    CHECK(victim_setup(folder, sizeof folder));
    const char *outside = path_in(2, folder, "outside.txt");
    CHECK(io_write_file(outside, "keep me", 7));
    CHECK(link(outside, path_in(3, path_in(1, folder, "npy"), "victim_0.npy")) == 0);
    cli_result r;
    CHECK_MSG(convert_victim(folder, &r) == 0, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    CHECK(io_file_holds(outside, "keep me", 7));
    struct stat info;
    CHECK(stat(outside, &info) == 0 && info.st_nlink == 1);
    io_remove_tree(folder);
}

TEST(fifo_or_device_in_the_folder_is_refused_at_once)
{
    char folder[512];
    CHECK(victim_setup(folder, sizeof folder));
    const char *planted = path_in(3, path_in(1, folder, "npy"), "victim_0.npy");
    CHECK(mkfifo(planted, 0644) == 0);
    cli_result r;
    CHECK(convert_victim(folder, &r) == 1);
    CHECK(CLI_ERROR_HAS(&r, "victim_0.npy", "FIFO"));
    CHECK_EQ_INT(io_count_temporaries(path_in(1, folder, "npy")), 0);
    cli_result_free(&r);
    CHECK(unlink(planted) == 0);
    char why[256];
    if (!io_make_device(planted, false, 1, 3, why, sizeof why)) {
        io_remove_tree(folder);
        SKIP(why);
    }
    CHECK(convert_victim(folder, &r) == 1);
    CHECK(CLI_ERROR_HAS(&r, "victim_0.npy", "character device"));
    cli_result_free(&r);
    struct stat info;
    CHECK(lstat(planted, &info) == 0 && S_ISCHR(info.st_mode));
    io_remove_tree(folder);
}

TEST(full_file_system_keeps_old_files_and_says_why)
{
    char folder[512], why[256];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *fs = path_in(0, folder, "fs");
    CHECK(mkdir(fs, 0755) == 0);
    if (!io_private_tmpfs(fs, "size=256k", why, sizeof why)) {
        io_remove_tree(folder);
        SKIP(why);
    }
    /* One layer "big" whose data (a million bytes) cannot fit beside the old file. */
    cblob_context *context = NULL;
    cblob_model *model = NULL;
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_context_create(&context));
    CHECK_OK(cblob_model_create(context, CBLOB_NET_FORMAT_V2, "big", &model));
    CHECK_OK(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){250000}, &blob));
    CHECK_OK(cblob_model_add_layer(model, "big", "InnerProduct", &blob, 1));
    const char *net = path_in(1, folder, "big.caffemodel");
    CHECK_OK(cblob_model_to_proto_file(model, 0, net));
    cblob_blob_destroy(blob);
    cblob_model_destroy(model);
    cblob_context_destroy(context);
    const char *old = path_in(2, fs, "big_0.npy");
    CHECK(io_write_file(old, "old bytes", 9));
    cli_result r;
    CHECK(CLI(&r, "convert", net, "--to", "npy", fs));
    CHECK_MSG(r.status == 1, "exit %d: %s", r.status, r.err);
    /* Before: "Inappropriate ioctl for device", and the old file truncated then deleted. */
    CHECK(CLI_ERROR_HAS(&r, "big_0.npy", "No space left on device"));
    cli_result_free(&r);
    CHECK(io_file_holds(old, "old bytes", 9));
    CHECK_EQ_INT(io_count_temporaries(fs), 0);
    CHECK_EQ_INT(io_count_entries(fs), 1);
    umount(fs);
    io_remove_tree(folder);
}

/* The size of the largest cblob temporary in folder, or of any file in a staging folder (a .npy
 * folder's files are staged in one, .cblob-tmp-<pid>-s<n>, until all are written); 0 when there is
 * none. */
static off_t largest_temporary(const char *folder)
{
    DIR *dir = opendir(folder);
    off_t largest = 0;
    const struct dirent *entry;
    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        struct stat info;
        if (strncmp(entry->d_name, ".cblob-tmp-", 11) != 0 || fstatat(dirfd(dir), entry->d_name, &info, 0) != 0)
            continue;
        if (S_ISDIR(info.st_mode)) {
            char staging[1024];
            snprintf(staging, sizeof staging, "%s/%s", folder, entry->d_name);
            DIR *inner = opendir(staging);
            const struct dirent *file;
            while (inner != NULL && (file = readdir(inner)) != NULL)
                if (fstatat(dirfd(inner), file->d_name, &info, 0) == 0 && S_ISREG(info.st_mode) && info.st_size > largest)
                    largest = info.st_size;
            if (inner != NULL)
                closedir(inner);
        } else if (info.st_size > largest) {
            largest = info.st_size;
        }
    }
    if (dir != NULL)
        closedir(dir);
    return largest;
}

/* Starts `cblob convert net --to npy out`, and kills it once more than 4 MiB of the huge layer's
 * file are written (in a temporary, or under its name); false when it finished first. */
static bool kill_while_writing(const char *net, const char *out)
{
    const pid_t child = fork();
    if (child == 0) {
        execl(CBLOB_TOOL, CBLOB_TOOL, "convert", net, "--to", "npy", out, (char *)NULL);
        _exit(127);
    }
    bool killed = false;
    for (int i = 0; i < 200000 && !killed; ++i) {
        struct stat info;
        if (largest_temporary(out) > (4 << 20) ||
            (stat(path_in(5, out, "huge_0.npy"), &info) == 0 && info.st_size > (4 << 20))) {
            kill(child, SIGKILL);
            killed = true;
        } else if (waitpid(child, NULL, WNOHANG) == child) {
            return false;
        }
    }
    int status = 0;
    waitpid(child, &status, 0);
    return killed && WIFSIGNALED(status);
}

TEST(killed_convert_leaves_no_partial_file_and_no_temporary_after_the_next)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = path_in(0, folder, "huge.caffemodel"), *out = path_in(1, folder, "npy");
    bool killed = false;
    for (int mib = 32; mib <= 256 && !killed; mib *= 2) {
        io_remove_tree(out);
        CHECK(mkdir(out, 0755) == 0);
        char options[64];
        snprintf(options, sizeof options, "--layers 1 --blobs 1 --huge %d", mib << 20);
        CHECK(cli_make_net(options, net));
        killed = kill_while_writing(net, out);
    }
    if (!killed) {
        io_remove_tree(folder);
        SKIP("the conversion of a 256 MiB layer finished before it could be killed");
    }
    /* Killed while the huge layer's file was written: its name does not exist (before: a truncated
     * file under it, and a full-size temporary that stayed forever). */
    struct stat info;
    CHECK(stat(path_in(2, out, "huge_0.npy"), &info) != 0 && errno == ENOENT);
    CHECK(io_count_temporaries(out) > 0);
    cli_result r;
    CHECK(CLI(&r, "convert", net, "--to", "npy", out));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    CHECK_EQ_INT(io_count_temporaries(out), 0);
    io_remove_tree(folder);
}

TEST(read_only_folder_is_refused)
{
    char folder[512], why[256];
    CHECK(victim_setup(folder, sizeof folder));
    const char *out = path_in(1, folder, "npy");
    if (geteuid() == 0) {
        /* Root writes any folder: make it a file system mounted read-only. */
        if (!io_private_tmpfs(out, "size=64k", why, sizeof why)) {
            io_remove_tree(folder);
            SKIP(why);
        }
        CHECK(mount(NULL, out, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0);
    } else {
        CHECK(chmod(out, 0555) == 0);
    }
    cli_result r;
    CHECK(convert_victim(folder, &r) == 1);
    CHECK(CLI_ERROR_HAS(&r, "npy", geteuid() == 0 ? "Read-only file system" : "Permission denied"));
    cli_result_free(&r);
    if (geteuid() == 0)
        umount(out);
    io_remove_tree(folder);
}

/* ---- defect 5: FIFOs as inputs never block ------------------------------------------------------ */

TEST(fifo_inputs_fail_at_once)
{
    char folder[512];
    CHECK(victim_setup(folder, sizeof folder));
    const char *fifo = path_in(2, folder, "in.fifo"), *net = path_in(0, folder, "victim.caffemodel");
    CHECK(mkfifo(fifo, 0644) == 0);
    const char *const cases[][8] = {
        {"inspect", fifo},
        {"convert", fifo, "--to", "npy", path_in(3, folder, "out")},
        {"convert", fifo, "--to", "binaryproto", path_in(4, folder, "x.binaryproto")},
        {"convert", fifo, "--to", "npz", path_in(5, folder, "x.npz")},
        {"convert", fifo, "--like", net, "--to", "caffemodel", path_in(6, folder, "x.caffemodel")},
        {"convert", net, "--like", fifo, "--to", "caffemodel", path_in(6, folder, "x.caffemodel")},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        cli_result r;
        CHECK(cli_run(&r, NULL, 20, cases[i]));
        CHECK_MSG(r.status == 2, "case %zu: exit %d", i, r.status);
        CHECK(CLI_ERROR_HAS(&r, fifo, "FIFO", "give - to read standard input"));
        cli_result_free(&r);
    }
    io_remove_tree(folder);
}

/* ---- single-file outputs ------------------------------------------------------------------------ */

TEST(outputs_follow_links_keep_modes_and_write_devices_in_place)
{
    char folder[512];
    CHECK(victim_setup(folder, sizeof folder));
    const char *net = path_in(0, folder, "victim.caffemodel");
    const char *target = path_in(2, folder, "target.npz"), *link_path = path_in(3, folder, "link.npz");
    /* An earlier export (an empty archive: its end record alone); another format would need --force. */
    CHECK(io_write_file(target, "PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 22));
    CHECK(chmod(target, 0600) == 0);
    CHECK(symlink("target.npz", link_path) == 0);
    cli_result r;
    CHECK(CLI(&r, "convert", net, "--to", "npz", link_path));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    struct stat info;
    CHECK(lstat(link_path, &info) == 0 && S_ISLNK(info.st_mode));
    CHECK(stat(target, &info) == 0 && S_ISREG(info.st_mode) && (info.st_mode & 0777) == 0600 && info.st_size > 22);
    char why[256];
    const char *device = path_in(4, folder, "null");
    if (!io_make_device(device, false, 1, 3, why, sizeof why)) {
        io_remove_tree(folder);
        SKIP(why);
    }
    CHECK(CLI(&r, "convert", net, "--like", net, "--to", "caffemodel", device));
    CHECK_MSG(r.status == 0, "exit %d: %s", r.status, r.err);
    cli_result_free(&r);
    CHECK(lstat(device, &info) == 0 && S_ISCHR(info.st_mode));
    io_remove_tree(folder);
}
