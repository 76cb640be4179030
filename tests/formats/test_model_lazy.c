/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_model_open_file_lazy: the structure at once, reading a few KiB per layer; each blob's
 * values on first access, that blob's bytes only; and a file changed after the open (written in
 * place, truncated, replaced) fails the access with CBLOB_ERR_IO instead of mixing two files.
 * (That lazily opened models save byte for byte is tests/formats/test_formats_lossless.c's.) */
#define _DEFAULT_SOURCE /* utimensat's UTIME_NOW */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "support.h"

enum { LAYERS = 8, VALUES = 256 * 1024 }; /* 1 MiB of float32 per weight blob */

/* Bytes this process has read through read(2) and pread(2) so far (/proc/self/io's rchar). */
static long long bytes_read(void)
{
    FILE *io = fopen("/proc/self/io", "r");
    long long rchar = -1;
    if (io != NULL) {
        if (fscanf(io, "rchar: %lld", &rchar) != 1)
            rchar = -1;
        fclose(io);
    }
    return rchar;
}

/* Bytes read since *mark (the previous look) by all but that look itself, which reading
 * /proc/self/io counts too (look bytes); the mark moves to now. */
/* (The look's own size moves by a byte as the numbers it shows grow a digit: a few bytes are
 * nothing.) */
enum { NOTHING = 16 };
static long long read_since(long long *mark, long long look)
{
    const long long now = bytes_read();
    const long long read = now - *mark - look;
    *mark = now;
    return read;
}

/* A net of LAYERS layers, each with a weight blob of VALUES float32 values (value i of layer l is
 * l * VALUES + i) and a bias of 10, saved to path. */
static bool write_net(cblob_context *ctx, const char *path)
{
    cblob_model *model = NULL;
    bool ok = cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "lazy", &model) == CBLOB_OK;
    for (int l = 0; l < LAYERS && ok; ++l) {
        const int64_t weights_dims[2] = {VALUES / 64, 64}, bias_dims[1] = {10};
        cblob_blob *blobs[2] = {NULL, NULL};
        float *values = NULL;
        ok = cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, weights_dims, &blobs[0]) == CBLOB_OK &&
             cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, bias_dims, &blobs[1]) == CBLOB_OK &&
             cblob_blob_mutable_cpu_ptr(blobs[0], CBLOB_PART_DATA, (void **)&values) == CBLOB_OK &&
             cblob_blob_fill(blobs[1], CBLOB_PART_DATA, l) == CBLOB_OK;
        for (int64_t i = 0; ok && i < VALUES; ++i)
            values[i] = (float)(l * VALUES + i);
        char name[32];
        snprintf(name, sizeof name, "layer%d", l);
        ok = ok && cblob_model_add_layer(model, name, "InnerProduct", blobs, 2) == CBLOB_OK;
        cblob_blob_destroy(blobs[0]);
        cblob_blob_destroy(blobs[1]);
    }
    ok = ok && cblob_model_to_proto_file(model, 0, path) == CBLOB_OK;
    cblob_model_destroy(model);
    return ok;
}

/* Whether weight blob l of the model holds what write_net put there. */
static bool weights_are_right(const cblob_model *model, int l)
{
    cblob_blob *blob = NULL;
    const float *values = NULL;
    bool ok = cblob_model_layer_blob(model, l, 0, &blob) == CBLOB_OK &&
              cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values) == CBLOB_OK;
    for (int64_t i = 0; ok && i < VALUES; i += 997)
        ok = values[i] == (float)(l * VALUES + i);
    ok = ok && values[VALUES - 1] == (float)(l * VALUES + VALUES - 1);
    cblob_blob_destroy(blob);
    return ok;
}

TEST(a_lazy_open_reads_the_structure_and_then_each_blob_on_first_access)
{
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/net.caffemodel", folder);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK(write_net(ctx, path));
    /* What a look at /proc/self/io costs: two looks in a row differ by one. */
    const long long first = bytes_read(), look = bytes_read() - first;
    CHECK(first >= 0 && look > 0);

    long long mark = bytes_read();
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open_file_lazy(ctx, path, &model));
    const long long opening = read_since(&mark, look);
    /* Names, types, shapes and counts of everything, reading nothing more. */
    int64_t layers = 0, dims[2] = {0, 0}, blobs = 0;
    int32_t num_axes = 0;
    const char *name = NULL;
    CHECK_OK(cblob_model_num_layers(model, &layers));
    CHECK_EQ_INT(layers, LAYERS);
    for (int l = 0; l < LAYERS; ++l) {
        CHECK_OK(cblob_model_layer_name(model, l, &name));
        CHECK_OK(cblob_model_layer_num_blobs(model, l, &blobs));
        CHECK_OK(cblob_model_layer_blob_shape(model, l, 0, 2, dims, &num_axes));
        CHECK(strncmp(name, "layer", 5) == 0 && blobs == 2 && num_axes == 2 && dims[0] * dims[1] == VALUES);
    }
    const long long structure = read_since(&mark, look);
    CHECK_MSG(opening <= LAYERS * 4 * 1024 && structure <= NOTHING, "the open read %lld bytes, the structure calls %lld",
              opening, structure);

    /* One blob: its megabyte, and no more than a block around it. */
    CHECK(weights_are_right(model, 5));
    const long long one = read_since(&mark, look);
    CHECK_MSG(one >= VALUES * 4 && one <= VALUES * 4 + 8 * 1024, "reading one blob read %lld bytes", one);
    CHECK(weights_are_right(model, 5)); /* read once */
    CHECK(read_since(&mark, look) <= NOTHING);
    for (int l = 0; l < LAYERS; ++l)
        CHECK(weights_are_right(model, l));
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* How a test changes the file behind an open model. */
typedef enum change { WRITTEN_IN_PLACE, TRUNCATED, REPLACED } change;

static bool change_file(const char *path, change how)
{
    if (how == REPLACED) {
        char other[4300];
        snprintf(other, sizeof other, "%s.new", path);
        size_t size = 0;
        uint8_t *bytes = ft_read_file(path, &size);
        const bool ok = bytes != NULL && ft_write_file(other, bytes, size) && rename(other, path) == 0;
        free(bytes);
        return ok;
    }
    const int fd = open(path, O_WRONLY);
    bool ok = fd >= 0;
    if (how == TRUNCATED) {
        ok = ok && ftruncate(fd, 100) == 0;
    } else {
        /* Same size, same bytes written over: only the modification time says it. */
        const struct timespec later[2] = {{0, UTIME_OMIT}, {time(NULL) + 10, 0}};
        ok = ok && pwrite(fd, "\0", 0, 0) == 0 && futimens(fd, later) == 0;
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

TEST(a_file_changed_after_a_lazy_open_fails_the_access_with_a_clear_error)
{
    static const char *const names[] = {"written in place", "truncated", "replaced"};
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/net.caffemodel", folder);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    for (change how = WRITTEN_IN_PLACE; how <= REPLACED; ++how) {
        CHECK(write_net(ctx, path));
        cblob_model *model = NULL;
        CHECK_OK(cblob_model_open_file_lazy(ctx, path, &model));
        CHECK(weights_are_right(model, 1)); /* read before the change */
        CHECK_MSG(change_file(path, how), "%s", names[how]);
        cblob_blob *blob = NULL;
        CHECK_ERROR(cblob_model_layer_blob(model, 2, 0, &blob), CBLOB_ERR_IO);
        CHECK_MSG(strstr(cblob_last_error_message(), "changed while it was read") != NULL, "%s: %s", names[how],
                  cblob_last_error_message());
        CHECK(blob == NULL);
        float value = 0;
        CHECK_ERROR(cblob_model_layer_blob_read(model, 3, 0, CBLOB_PART_DATA, 0, 1, &value, sizeof value), CBLOB_ERR_IO);
        size_t size = 0;
        CHECK_ERROR(cblob_model_to_proto(model, 0, NULL, 0, &size), CBLOB_ERR_IO);
        /* What was read before stays; the structure too. */
        CHECK(weights_are_right(model, 1));
        int64_t dims[2];
        int32_t num_axes = 0;
        CHECK_OK(cblob_model_layer_blob_shape(model, 2, 0, 2, dims, &num_axes));
        cblob_model_destroy(model);
    }
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

TEST(a_lazy_open_refuses_what_the_full_open_refuses_with_the_same_message)
{
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/net.caffemodel", folder);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK(write_net(ctx, path));
    size_t size = 0;
    uint8_t *bytes = ft_read_file(path, &size);
    CHECK(bytes != NULL);
    /* Cut inside a blob's values, and garbage. */
    const size_t cuts[2] = {size / 2, 7};
    for (int c = 0; c < 2; ++c) {
        CHECK(ft_write_file(path, c == 0 ? bytes : (const uint8_t *)"\xff\xff\xff\xff\xff\xff\xff", cuts[c]));
        cblob_model *model = NULL;
        CHECK_ERROR(cblob_model_open_file(ctx, path, &model), CBLOB_ERR_PARSE);
        char expected[1024];
        snprintf(expected, sizeof expected, "%s", cblob_last_error_message());
        CHECK_ERROR(cblob_model_open_file_lazy(ctx, path, &model), CBLOB_ERR_PARSE);
        CHECK_MSG(strcmp(strchr(expected, ':'), strchr(cblob_last_error_message(), ':')) == 0, "%s\nagainst\n%s",
                  cblob_last_error_message(), expected);
        CHECK(model == NULL);
    }
    free(bytes);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* The model keeps the file it opened, and checks it where the path named it at open: the process
 * changing its working folder changes nothing (1.1 looked the relative path up in the new folder
 * and failed every later read with "changed while it was read"); a file replaced is still
 * refused. */
TEST(a_lazy_open_is_unaffected_by_chdir_and_still_refuses_a_replaced_file)
{
    char folder[4096], path[4200], other[4200], saved[4200], back[4096];
    CHECK(ft_temp_folder(folder, sizeof folder));
    CHECK(getcwd(back, sizeof back) != NULL);
    snprintf(path, sizeof path, "%s/sub", folder);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/sub/net.caffemodel", folder);
    snprintf(other, sizeof other, "%s/other.caffemodel", folder);
    snprintf(saved, sizeof saved, "%s/saved.caffemodel", folder);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK(write_net(ctx, path) && write_net(ctx, other));
    CHECK(chdir(folder) == 0);
    cblob_model *model = NULL, *twin = NULL;
    CHECK_OK(cblob_model_open_file_lazy(ctx, "sub/net.caffemodel", &model));
    CHECK_OK(cblob_model_open_file_lazy(ctx, "sub/net.caffemodel", &twin));
    CHECK(chdir("/") == 0); /* "sub/net.caffemodel" names nothing from here */
    CHECK(weights_are_right(model, 2));
    CHECK_OK(cblob_model_to_proto_file(model, 0, saved));
    size_t a = 0, b = 0;
    uint8_t *original = ft_read_file(path, &a), *copy = ft_read_file(saved, &b);
    CHECK(original != NULL && copy != NULL && a == b && memcmp(original, copy, a) == 0);
    free(original), free(copy);
    /* Another file renamed over it: the twin's values would be another file's. */
    CHECK(weights_are_right(twin, 1));
    CHECK(rename(other, path) == 0);
    cblob_blob *blob = NULL;
    CHECK_ERROR(cblob_model_layer_blob(twin, 5, 0, &blob), CBLOB_ERR_IO);
    CHECK_MSG(strstr(cblob_last_error_message(), "changed while it was read") != NULL, "%s", cblob_last_error_message());
    cblob_model_destroy(twin);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
    CHECK(chdir(back) == 0);
    ft_remove_folder(folder);
}

/* A lazy open reads the file once: a net cut inside its last blob's values is refused having read
 * its structure, not the structure and then the whole file (1.1 read it whole again to explain). */
TEST(a_refused_lazy_open_reads_the_file_once)
{
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/net.caffemodel", folder);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK(write_net(ctx, path));
    size_t size = 0;
    uint8_t *bytes = ft_read_file(path, &size);
    CHECK(bytes != NULL && ft_write_file(path, bytes, size - VALUES));
    free(bytes);
    long long mark = bytes_read();
    const long long look = read_since(&mark, 0);
    cblob_model *model = NULL;
    CHECK_ERROR(cblob_model_open_file_lazy(ctx, path, &model), CBLOB_ERR_PARSE);
    const long long read = read_since(&mark, look);
    CHECK_MSG(read < (long long)(64 * LAYERS) << 10, "the refused lazy open read %lld bytes of a %zu-byte file", read,
              size - VALUES);
    CHECK(model == NULL);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}
