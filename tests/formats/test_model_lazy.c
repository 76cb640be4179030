/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob_model_open_file_lazy (and cblob_file_open with CBLOB_OPEN_LAZY, for .caffemodel,
 * safetensors and npz files): the structure at once, reading a few KiB per layer; each blob's
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
#include <zlib.h>

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

/* ---- safetensors and npz: cblob_file_open with CBLOB_OPEN_LAZY -------------------------------- */

typedef enum tensor_format { SAFETENSORS, NPZ } tensor_format;

/* What a look at /proc/self/io costs now (the numbers it shows grow digits as files are written:
 * measured after writing them). */
static long long look_size(void)
{
    const long long first = bytes_read();
    return bytes_read() - first;
}
static const char *const format_names[] = {"safetensors", "npz"};

/* write_net's net as a safetensors or npz file (npz: members stored, as numpy.savez stores them). */
static bool write_tensors(cblob_context *ctx, tensor_format format, const char *path)
{
    char proto[4300];
    snprintf(proto, sizeof proto, "%s.caffemodel", path);
    cblob_model *model = NULL;
    bool ok = write_net(ctx, proto) && cblob_model_open_file(ctx, proto, &model) == CBLOB_OK;
    ok = ok && (format == SAFETENSORS ? cblob_model_to_safetensors_file(model, 0, path)
                                      : cblob_model_to_npz_file(model, 0, path)) == CBLOB_OK;
    cblob_model_destroy(model);
    return ok && remove(proto) == 0;
}

static cblob_model *model_of(cblob_file *file)
{
    cblob_model *model = NULL;
    return file != NULL && cblob_file_model(file, &model) == CBLOB_OK ? model : NULL;
}

/* The bias of layer l holds l everywhere (a tensor under a page: read at open). */
static bool bias_is_right(const cblob_model *model, int l)
{
    float values[10];
    bool ok = cblob_model_layer_blob_read(model, l, 1, CBLOB_PART_DATA, 0, 10, values, sizeof values) == CBLOB_OK;
    for (int i = 0; ok && i < 10; ++i)
        ok = values[i] == (float)l;
    return ok;
}

TEST(a_lazy_open_of_safetensors_and_npz_reads_the_header_then_each_tensor_on_first_access)
{
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    for (tensor_format format = SAFETENSORS; format <= NPZ; ++format) {
        snprintf(path, sizeof path, "%s/net.%s", folder, format_names[format]);
        CHECK(write_tensors(ctx, format, path));
        const long long look = look_size();
        long long mark = bytes_read();
        cblob_file *file = NULL;
        CHECK_OK(cblob_file_open(ctx, path, CBLOB_OPEN_LAZY, 0, &file));
        const long long opening = read_since(&mark, look);
        const cblob_model *model = model_of(file);
        CHECK(model != NULL);
        int64_t layers = 0, dims[2] = {0, 0};
        int32_t num_axes = 0;
        CHECK_OK(cblob_model_num_layers(model, &layers));
        CHECK_EQ_INT(layers, LAYERS);
        for (int l = 0; l < LAYERS; ++l) {
            CHECK_OK(cblob_model_layer_blob_shape(model, l, 0, 2, dims, &num_axes));
            CHECK(num_axes == 2 && dims[0] * dims[1] == VALUES);
            CHECK(bias_is_right(model, l));
        }
        const long long structure = read_since(&mark, look);
        /* The header, or the directory and each member's local and .npy headers, and the biases: a
         * few KiB a tensor (16 KiB a layer: 1.5% of the 8 MiB file; everything before). */
        CHECK_MSG(opening <= LAYERS * 16 * 1024 && structure <= NOTHING, "%s: the open read %lld bytes, the structure "
                  "calls %lld", format_names[format], opening, structure);
        CHECK(weights_are_right(model, 5));
        const long long one = read_since(&mark, look);
        CHECK_MSG(one >= VALUES * 4 && one <= VALUES * 4 + 8 * 1024, "%s: reading one tensor read %lld bytes",
                  format_names[format], one);
        CHECK(weights_are_right(model, 5));
        CHECK(read_since(&mark, look) <= NOTHING);
        /* The rest through layer_blob_read (no handle), then a whole export, which reads the others. */
        float value = 0;
        CHECK_OK(cblob_model_layer_blob_read(model, 6, 0, CBLOB_PART_DATA, VALUES - 1, 1, &value, sizeof value));
        CHECK(value == (float)(6 * VALUES + VALUES - 1));
        char copy[4300];
        snprintf(copy, sizeof copy, "%s.copy", path);
        CHECK_OK(format == SAFETENSORS ? cblob_model_to_safetensors_file(model, 0, copy)
                                       : cblob_model_to_npz_file(model, 0, copy));
        size_t a = 0, b = 0;
        uint8_t *original = ft_read_file(path, &a), *written = ft_read_file(copy, &b);
        CHECK_MSG(original != NULL && written != NULL && a == b && memcmp(original, written, a) == 0,
                  "%s: the lazily opened file exported is not the same bytes", format_names[format]);
        free(original), free(written);
        for (int l = 0; l < LAYERS; ++l)
            CHECK(weights_are_right(model, l));
        cblob_file_destroy(file);
    }
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

TEST(a_safetensors_or_npz_file_changed_after_a_lazy_open_fails_the_access)
{
    static const char *const names[] = {"written in place", "truncated", "replaced"};
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    for (tensor_format format = SAFETENSORS; format <= NPZ; ++format)
        for (change how = WRITTEN_IN_PLACE; how <= REPLACED; ++how) {
            snprintf(path, sizeof path, "%s/net.%s", folder, format_names[format]);
            CHECK(write_tensors(ctx, format, path));
            cblob_file *file = NULL;
            CHECK_OK(cblob_file_open(ctx, path, CBLOB_OPEN_LAZY, 0, &file));
            const cblob_model *model = model_of(file);
            CHECK(weights_are_right(model, 1));
            CHECK_MSG(change_file(path, how), "%s", names[how]);
            cblob_blob *blob = NULL;
            CHECK_ERROR(cblob_model_layer_blob(model, 2, 0, &blob), CBLOB_ERR_IO);
            CHECK_MSG(strstr(cblob_last_error_message(), "changed while it was read") != NULL, "%s, %s: %s",
                      format_names[format], names[how], cblob_last_error_message());
            CHECK(blob == NULL);
            float value = 0;
            CHECK_ERROR(cblob_model_layer_blob_read(model, 3, 0, CBLOB_PART_DATA, 0, 1, &value, sizeof value),
                        CBLOB_ERR_IO);
            char copy[4300];
            snprintf(copy, sizeof copy, "%s/copy.safetensors", folder);
            CHECK_ERROR(cblob_model_to_safetensors_file(model, 0, copy), CBLOB_ERR_IO);
            CHECK(access(copy, F_OK) != 0);
            CHECK(weights_are_right(model, 1) && bias_is_right(model, 4));
            cblob_file_destroy(file);
        }
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* The file is kept open: a relative path opened before chdir still reads; without CBLOB_OPEN_LAZY
 * everything is read at open, as before, and nothing depends on the file afterwards. */
TEST(a_lazy_tensor_file_survives_chdir_and_an_eager_one_reads_everything_at_open)
{
    char folder[4096], path[4200], back[4096], relative[64];
    CHECK(ft_temp_folder(folder, sizeof folder));
    CHECK(getcwd(back, sizeof back) != NULL);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    for (tensor_format format = SAFETENSORS; format <= NPZ; ++format) {
        snprintf(path, sizeof path, "%s/net.%s", folder, format_names[format]);
        snprintf(relative, sizeof relative, "net.%s", format_names[format]);
        CHECK(write_tensors(ctx, format, path));
        CHECK(chdir(folder) == 0);
        cblob_file *lazy = NULL, *eager = NULL;
        CHECK_OK(cblob_file_open(ctx, relative, CBLOB_OPEN_LAZY, 0, &lazy));
        const long long look = look_size();
        long long mark = bytes_read();
        CHECK_OK(cblob_file_open(ctx, relative, 0, 0, &eager));
        const long long eager_read = read_since(&mark, look);
        CHECK(chdir("/") == 0);
        CHECK_MSG(eager_read >= LAYERS * VALUES * 4, "%s: the eager open read %lld bytes", format_names[format],
                  eager_read);
        CHECK(weights_are_right(model_of(lazy), 3));
        CHECK(change_file(path, TRUNCATED));
        for (int l = 0; l < LAYERS; ++l)
            CHECK(weights_are_right(model_of(eager), l));
        cblob_file_destroy(eager);
        cblob_file_destroy(lazy);
        CHECK(chdir(back) == 0);
    }
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* A safetensors file of half floats: tensor "h.0" of F16 or BF16, count elements, element i being
 * i % 256 (exact in both). */
static bool write_half_safetensors(const char *path, const char *dtype, int64_t count)
{
    char header[256];
    int length = snprintf(header, sizeof header, "{\"h.0\":{\"dtype\":\"%s\",\"shape\":[%lld],\"data_offsets\":[0,%lld]}}",
                          dtype, (long long)count, (long long)count * 2);
    while (length % 8 != 0)
        header[length++] = ' ';
    const size_t size = 8 + (size_t)length + (size_t)count * 2;
    uint8_t *bytes = malloc(size);
    if (bytes == NULL)
        return false;
    for (int i = 0; i < 8; ++i)
        bytes[i] = (uint8_t)((uint64_t)length >> (8 * i));
    memcpy(bytes + 8, header, (size_t)length);
    for (int64_t i = 0; i < count; ++i) {
        const float value = (float)(i % 256);
        uint32_t bits;
        memcpy(&bits, &value, 4);
        uint16_t half;
        if (strcmp(dtype, "BF16") == 0) {
            half = (uint16_t)(bits >> 16);
        } else { /* integers under 2048: exponent rebiased, mantissa cut (exact) */
            const uint32_t exponent = (bits >> 23) & 0xff;
            half = value == 0 ? 0 : (uint16_t)(((exponent - 127 + 15) << 10) | ((bits >> 13) & 0x3ff));
        }
        bytes[8 + (size_t)length + (size_t)i * 2] = (uint8_t)half;
        bytes[8 + (size_t)length + (size_t)i * 2 + 1] = (uint8_t)(half >> 8);
    }
    const bool ok = ft_write_file(path, bytes, size);
    free(bytes);
    return ok;
}

TEST(a_lazy_open_leaves_half_float_tensors_in_the_file_and_widens_them_on_access)
{
    enum { COUNT = 100000 };
    static const char *const dtypes[] = {"F16", "BF16"};
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < 2; ++d) {
        snprintf(path, sizeof path, "%s/half.safetensors", folder);
        CHECK(write_half_safetensors(path, dtypes[d], COUNT));
        const long long look = look_size();
        long long mark = bytes_read();
        cblob_file *file = NULL;
        CHECK_OK(cblob_file_open(ctx, path, CBLOB_OPEN_LAZY, 0, &file));
        const long long opening = read_since(&mark, look);
        CHECK_MSG(opening <= 16 * 1024, "%s: the open read %lld bytes", dtypes[d], opening);
        cblob_blob *blob = NULL;
        const float *values = NULL;
        CHECK_OK(cblob_model_layer_blob(model_of(file), 0, 0, &blob));
        const long long access = read_since(&mark, look);
        CHECK_MSG(access >= COUNT * 2 && access <= COUNT * 2 + 8 * 1024, "%s: the access read %lld bytes", dtypes[d],
                  access);
        CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values));
        bool right = true;
        for (int64_t i = 0; i < COUNT && right; ++i)
            right = values[i] == (float)(i % 256);
        CHECK_MSG(right, "%s values", dtypes[d]);
        cblob_blob_destroy(blob);
        cblob_file_destroy(file);
        /* The eager open widens them in place too (read into the array's upper half), from a file
         * and from bytes in memory, at every count's parity. */
        for (int64_t count = 1; count <= 3; ++count) {
            const int64_t n = count == 3 ? COUNT + 1 : count;
            CHECK(write_half_safetensors(path, dtypes[d], n));
            size_t size = 0;
            uint8_t *bytes = ft_read_file(path, &size);
            CHECK(bytes != NULL);
            for (int from_memory = 0; from_memory < 2; ++from_memory) {
                cblob_model *model = NULL;
                if (from_memory)
                    CHECK_OK(cblob_model_open_safetensors(ctx, bytes, size, &model));
                else
                    CHECK_OK(cblob_model_open_safetensors_file(ctx, path, &model));
                CHECK_OK(cblob_model_layer_blob(model, 0, 0, &blob));
                CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values));
                for (int64_t i = 0; i < n && right; ++i)
                    right = values[i] == (float)(i % 256);
                CHECK_MSG(right, "%s values of %lld, eager, from %s", dtypes[d], (long long)n,
                          from_memory ? "memory" : "the file");
                cblob_blob_destroy(blob);
                cblob_model_destroy(model);
            }
            free(bytes);
        }
    }
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* An npz member's values are checked against the archive's CRC-32 when a lazy model reads them, as
 * the eager open checks them. */
TEST(a_corrupt_npz_member_left_in_the_file_is_refused_on_access)
{
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/net.npz", folder);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK(write_tensors(ctx, NPZ, path));
    size_t size = 0;
    uint8_t *bytes = ft_read_file(path, &size);
    CHECK(bytes != NULL);
    bytes[size / 2] ^= 0x40; /* inside some layer's weights */
    CHECK(ft_write_file(path, bytes, size));
    free(bytes);
    cblob_file *file = NULL;
    CHECK_ERROR(cblob_file_open(ctx, path, 0, 0, &file), CBLOB_ERR_PARSE);
    CHECK_OK(cblob_file_open(ctx, path, CBLOB_OPEN_LAZY, 0, &file));
    int failed = 0;
    for (int l = 0; l < LAYERS; ++l) {
        cblob_blob *blob = NULL;
        const cblob_status status = cblob_model_layer_blob(model_of(file), l, 0, &blob);
        if (status != CBLOB_OK) {
            ++failed;
            CHECK_EQ_INT(status, CBLOB_ERR_PARSE);
            CHECK_MSG(strstr(cblob_last_error_message(), "CRC-32") != NULL, "%s", cblob_last_error_message());
            CHECK(blob == NULL);
        } else {
            CHECK(weights_are_right(model_of(file), l));
        }
        cblob_blob_destroy(blob);
    }
    CHECK_EQ_INT(failed, 1);
    cblob_file_destroy(file);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* ---- deflated npz members (numpy.savez_compressed) ------------------------------------------- */

static uint32_t get_le(const uint8_t *p, int bytes)
{
    uint32_t value = 0;
    for (int i = bytes - 1; i >= 0; --i)
        value = value << 8 | p[i];
    return value;
}

static void put_le(uint8_t *p, uint32_t value, int bytes)
{
    for (int i = 0; i < bytes; ++i)
        p[i] = (uint8_t)(value >> (8 * i));
}

/* The stored npz at `from` (as cblob writes it: no zip64, no comment) written again to `to` with
 * every member deflated, as numpy.savez_compressed writes them; member `bad_crc` (or -1: none) is
 * given a wrong CRC-32 in both its headers. */
static bool deflate_npz(const char *from, const char *to, int bad_crc)
{
    size_t size = 0;
    uint8_t *in = ft_read_file(from, &size);
    if (in == NULL || size < 22 || get_le(in + size - 22, 4) != 0x06054b50) {
        free(in);
        return false;
    }
    const uint8_t *end = in + size - 22;
    const uint32_t count = get_le(end + 10, 2), directory = get_le(end + 16, 4), directory_size = get_le(end + 12, 4);
    const size_t capacity = compressBound((uLong)size) + (size_t)count * 1024 + 1024;
    uint8_t *out = malloc(capacity), *central = malloc(directory_size);
    bool ok = out != NULL && central != NULL && (size_t)directory + directory_size <= size;
    if (ok)
        memcpy(central, in + directory, directory_size);
    size_t written = 0, at = 0;
    for (uint32_t i = 0; ok && i < count; ++i) {
        uint8_t *entry = central + at;
        const uint8_t *local = in + get_le(entry + 42, 4);
        const size_t head = 30 + get_le(local + 26, 2) + get_le(local + 28, 2);
        const uint32_t stored = get_le(entry + 24, 4);
        memcpy(out + written, local, head);
        z_stream z = {0};
        ok = deflateInit2(&z, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK;
        z.next_in = (Bytef *)(local + head);
        z.avail_in = stored;
        z.next_out = out + written + head;
        z.avail_out = (uInt)(capacity - written - head);
        ok = ok && deflate(&z, Z_FINISH) == Z_STREAM_END;
        const uint32_t compressed = (uint32_t)z.total_out;
        deflateEnd(&z);
        const uint32_t crc = get_le(entry + 16, 4) ^ ((int)i == bad_crc ? 0x00010000u : 0);
        put_le(out + written + 8, 8, 2); /* method: deflated */
        put_le(out + written + 14, crc, 4);
        put_le(out + written + 18, compressed, 4);
        put_le(entry + 10, 8, 2);
        put_le(entry + 16, crc, 4);
        put_le(entry + 20, compressed, 4);
        put_le(entry + 42, (uint32_t)written, 4);
        written += head + compressed;
        at += 46 + get_le(entry + 28, 2) + get_le(entry + 30, 2) + get_le(entry + 32, 2);
    }
    if (ok) {
        memcpy(out + written, central, directory_size);
        memcpy(out + written + directory_size, end, 22);
        put_le(out + written + directory_size + 16, (uint32_t)written, 4);
        written += directory_size + 22;
        ok = ft_write_file(to, out, written);
    }
    free(in), free(out), free(central);
    return ok;
}

/* A deflated member stays in the file too: the lazy open inflates its .npy header only, the first
 * access inflates its values straight into the blob (that member's compressed bytes read), and
 * the model holds what the stored archive held. */
TEST(a_lazy_open_leaves_deflated_npz_members_in_the_file_and_inflates_them_on_access)
{
    char folder[4096], stored[4200], path[4200], copy[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(stored, sizeof stored, "%s/stored.npz", folder);
    snprintf(path, sizeof path, "%s/deflated.npz", folder);
    snprintf(copy, sizeof copy, "%s/copy.npz", folder);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK(write_tensors(ctx, NPZ, stored));
    CHECK(deflate_npz(stored, path, -1));
    size_t size = 0, stored_size = 0;
    uint8_t *original = ft_read_file(stored, &stored_size), *deflated = ft_read_file(path, &size);
    CHECK(original != NULL && deflated != NULL);
    free(deflated);
    /* The values do not compress to nothing: reading them all at open would show. */
    CHECK_MSG(size > (size_t)LAYERS * 64 * 1024 && size < stored_size, "%zu bytes deflated", size);
    const long long look = look_size();
    long long mark = bytes_read();
    cblob_file *file = NULL;
    CHECK_OK(cblob_file_open(ctx, path, CBLOB_OPEN_LAZY, 0, &file));
    const long long opening = read_since(&mark, look);
    const cblob_model *model = model_of(file);
    CHECK(model != NULL);
    for (int l = 0; l < LAYERS; ++l)
        CHECK(bias_is_right(model, l));
    CHECK_MSG(opening <= LAYERS * 16 * 1024 && read_since(&mark, look) <= NOTHING,
              "the open read %lld bytes of %zu", opening, size);
    CHECK(weights_are_right(model, 5));
    const long long one = read_since(&mark, look);
    CHECK_MSG(one >= 16 * 1024 && one <= (long long)(size / LAYERS) * 2, "one member's access read %lld bytes", one);
    CHECK(weights_are_right(model, 5));
    CHECK(read_since(&mark, look) <= NOTHING);
    for (int l = 0; l < LAYERS; ++l)
        CHECK(weights_are_right(model, l));
    CHECK_OK(cblob_model_to_npz_file(model, 0, copy));
    size_t copy_size = 0;
    uint8_t *written = ft_read_file(copy, &copy_size);
    CHECK_MSG(written != NULL && copy_size == stored_size && memcmp(written, original, copy_size) == 0,
              "the lazily opened deflated npz does not export as the stored one");
    free(written);
    cblob_file_destroy(file);
    /* A file changed after the open fails the access, as for a stored member. */
    CHECK_OK(cblob_file_open(ctx, path, CBLOB_OPEN_LAZY, 0, &file));
    CHECK(change_file(path, WRITTEN_IN_PLACE));
    cblob_blob *blob = NULL;
    CHECK_ERROR(cblob_model_layer_blob(model_of(file), 2, 0, &blob), CBLOB_ERR_IO);
    CHECK_MSG(strstr(cblob_last_error_message(), "changed while it was read") != NULL, "%s", cblob_last_error_message());
    CHECK(blob == NULL);
    cblob_file_destroy(file);
    free(original);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* A deflated member whose bytes do not match the archive's CRC-32 is refused when it is read: by
 * the eager open at once, by a lazy model on that member's first access (the others read). */
TEST(a_deflated_npz_member_with_a_wrong_crc_is_refused_on_access)
{
    char folder[4096], stored[4200], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(stored, sizeof stored, "%s/stored.npz", folder);
    snprintf(path, sizeof path, "%s/deflated.npz", folder);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK(write_tensors(ctx, NPZ, stored));
    CHECK(deflate_npz(stored, path, 2 * 5)); /* layer5/0.npy: members go layer by layer, weights first */
    cblob_file *file = NULL;
    CHECK_ERROR(cblob_file_open(ctx, path, 0, 0, &file), CBLOB_ERR_PARSE);
    CHECK_MSG(strstr(cblob_last_error_message(), "CRC-32") != NULL, "%s", cblob_last_error_message());
    CHECK_OK(cblob_file_open(ctx, path, CBLOB_OPEN_LAZY, 0, &file));
    for (int l = 0; l < LAYERS; ++l) {
        cblob_blob *blob = NULL;
        if (l == 5) {
            CHECK_ERROR(cblob_model_layer_blob(model_of(file), l, 0, &blob), CBLOB_ERR_PARSE);
            CHECK_MSG(strstr(cblob_last_error_message(), "CRC-32") != NULL, "%s", cblob_last_error_message());
            CHECK(blob == NULL);
            float value = 0;
            CHECK_ERROR(cblob_model_layer_blob_read(model_of(file), l, 0, CBLOB_PART_DATA, 0, 1, &value, sizeof value),
                        CBLOB_ERR_PARSE);
        } else {
            CHECK(weights_are_right(model_of(file), l));
        }
    }
    cblob_file_destroy(file);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}
