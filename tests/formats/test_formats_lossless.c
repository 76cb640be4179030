/* SPDX-License-Identifier: BSD-2-Clause */
/* Models without loss: every real Caffe file and every shape of synthetic net
 * (tests/tools/make_net.py) opens and saves byte for byte; a changed blob changes only its own
 * bytes; a reshaped one only its own BlobProto. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "support.h"

static cblob_context *context_new(void)
{
    cblob_context *context = NULL;
    return cblob_context_create(&context) == CBLOB_OK ? context : NULL;
}

static uint8_t *saved(const cblob_model *model, int32_t write_diff, size_t *size)
{
    size_t needed = 0;
    if (cblob_model_to_proto(model, write_diff, NULL, 0, &needed) != CBLOB_OK)
        return NULL;
    uint8_t *bytes = malloc(needed + 1);
    if (bytes == NULL || cblob_model_to_proto(model, write_diff, bytes, needed, size) != CBLOB_OK || *size != needed) {
        free(bytes);
        return NULL;
    }
    return bytes;
}

typedef cblob_status (*opener)(cblob_context *context, const char *path, cblob_model **out);

/* Opens the file (with open_file, or lazily), saves it (write_diff 1 keeps diffs), and compares;
 * also through a file. */
static bool round_trips_opened(const char *path, const char *folder, opener open_file)
{
    size_t size = 0, again_size = 0;
    uint8_t *original = ft_read_file(path, &size);
    cblob_context *ctx = context_new();
    cblob_model *model = NULL;
    bool same = original != NULL && open_file(ctx, path, &model) == CBLOB_OK;
    uint8_t *again = same ? saved(model, 1, &again_size) : NULL;
    same = again != NULL && again_size == size && memcmp(again, original, size) == 0;
    if (!same)
        fprintf(stderr, "%s: %zu bytes saved as %zu (%s)\n", path, size, again_size, cblob_last_error_message());
    char out[4096];
    snprintf(out, sizeof out, "%s/saved.caffemodel", folder);
    size_t file_size = 0;
    uint8_t *file = same && cblob_model_to_proto_file(model, 1, out) == CBLOB_OK ? ft_read_file(out, &file_size) : NULL;
    same = same && file != NULL && file_size == size && memcmp(file, original, size) == 0;
    free(file);
    free(again);
    free(original);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
    return same;
}

/* Eagerly and lazily opened, the file saves byte for byte. */
static bool round_trips(const char *path, const char *folder)
{
    return round_trips_opened(path, folder, cblob_model_open_file) &&
           round_trips_opened(path, folder, cblob_model_open_file_lazy);
}

TEST(real_caffe_models_save_byte_for_byte)
{
    DIR *dir = opendir(CBLOB_CAFFE_DATA_DIR);
    if (dir == NULL)
        SKIP("no Caffe files at " CBLOB_CAFFE_DATA_DIR);
    char folder[4096];
    CHECK(ft_temp_folder(folder, sizeof folder));
    int checked = 0;
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
        const size_t length = strlen(entry->d_name);
        if (length < 11 || strcmp(entry->d_name + length - 11, ".caffemodel") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", CBLOB_CAFFE_DATA_DIR, entry->d_name);
        CHECK_MSG(round_trips(path, folder), "%s", path);
        ++checked;
    }
    closedir(dir);
    CHECK(checked > 0);
    ft_remove_folder(folder);
}

/* Writes a synthetic net with tests/tools/make_net.py. */
static bool make_net(const char *path, const char *options)
{
    char command[8192];
    snprintf(command, sizeof command, "'%s' '%s/tests/tools/make_net.py' %s '%s'", CBLOB_PYTHON, CBLOB_SOURCE_DIR,
             options, path);
    const int status = system(command);
    return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static const char *const shapes[] = {
    "--format v2 --all --layers 60",        "--format v1 --all --layers 60",
    "--format v0 --all --layers 60",        "--format v2 --tiny --layers 1500",
    "--format v2 --empty-blobs 40 --layers 50", "--format v1 --empty-blobs 5 --unknown --layers 40",
    "--format v2 --names hostile --unknown --unpacked --layers 200 --max-values 3000",
    "--format v2 --structure --doubles --diffs --layers 40 --max-values 5000",
    "--format v0 --unpacked --doubles --diffs --unknown --layers 30 --max-values 2000",
    "--format v2 --huge 1000000 --layers 3",
};

TEST(synthetic_nets_of_every_shape_save_byte_for_byte)
{
    char folder[4096], path[4200];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/net.caffemodel", folder);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; ++i) {
        for (int seed = 1; seed <= 2; ++seed) {
            char options[512];
            snprintf(options, sizeof options, "%s --seed %d", shapes[i], seed);
            CHECK_MSG(make_net(path, options), "make_net.py %s", options);
            CHECK_MSG(round_trips(path, folder), "make_net.py %s", options);
        }
    }
    ft_remove_folder(folder);
}

/* ---- what a change changes -------------------------------------------------------------------- */

/* Opens a synthetic net of many layers with blobs. */
static cblob_model *open_net(cblob_context *ctx, const char *options, uint8_t **bytes, size_t *size)
{
    char folder[4096], path[4200];
    if (!ft_temp_folder(folder, sizeof folder))
        return NULL;
    snprintf(path, sizeof path, "%s/net.caffemodel", folder);
    cblob_model *model = NULL;
    if (!make_net(path, options) || (*bytes = ft_read_file(path, size)) == NULL ||
        cblob_model_open(ctx, *bytes, *size, &model) != CBLOB_OK)
        model = NULL;
    ft_remove_folder(folder);
    return model;
}

/* The first layer (from `from`) with at least one blob of more than `min_count` values. */
static int64_t layer_with_blob(const cblob_model *model, int64_t from, int64_t min_count)
{
    int64_t layers = 0;
    cblob_model_num_layers(model, &layers);
    for (int64_t i = from; i < layers; ++i) {
        int64_t n = 0;
        cblob_model_layer_num_blobs(model, i, &n);
        if (n == 0)
            continue;
        cblob_blob *blob = NULL;
        int64_t count = 0;
        cblob_model_layer_blob(model, i, 0, &blob);
        cblob_blob_count(blob, &count);
        cblob_blob_destroy(blob);
        if (count > min_count)
            return i;
    }
    return -1;
}

TEST(a_changed_value_changes_only_its_own_bytes)
{
    cblob_context *ctx = context_new();
    uint8_t *original = NULL;
    size_t size = 0;
    /* Packed and unpacked, float and double, small (inline) and large (own arrays) blobs. */
    const char *const nets[] = {"--format v2 --all --layers 40 --max-values 3000 --seed 4",
                                "--format v0 --unpacked --doubles --layers 30 --max-values 3000 --seed 5"};
    for (int n = 0; n < 2; ++n) {
        cblob_model *model = open_net(ctx, nets[n], &original, &size);
        CHECK(model != NULL);
        int64_t changed = 0;
        for (int64_t layer = layer_with_blob(model, 0, 1); layer >= 0; layer = layer_with_blob(model, layer + 1, 1)) {
            cblob_blob *blob = NULL;
            CHECK_OK(cblob_model_layer_blob(model, layer, 0, &blob));
            cblob_dtype dtype;
            void *data = NULL;
            CHECK_OK(cblob_blob_dtype(blob, &dtype));
            CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &data));
            if (dtype == CBLOB_DTYPE_FLOAT32)
                ((float *)data)[1] += 1000.0f;
            else
                ((double *)data)[1] += 1000.0;
            cblob_blob_destroy(blob);
            ++changed;
        }
        CHECK(changed > 3);
        size_t again_size = 0;
        uint8_t *again = saved(model, 1, &again_size);
        CHECK(again != NULL && again_size == size);
        /* Each change is one value: 4 bytes of a float, at most 3 of a double's 8 (1000 moves its
         * exponent and top mantissa bits); nothing else moved. */
        int64_t differing = 0, runs = 0;
        for (size_t i = 0; i < size; ++i) {
            if (again[i] != original[i]) {
                ++differing;
                runs += i == 0 || again[i - 1] == original[i - 1];
            }
        }
        CHECK_MSG(runs == changed && differing <= 4 * changed, "%lld changed values, %lld runs of %lld bytes",
                  (long long)changed, (long long)runs, (long long)differing);
        /* Undo: the same bytes again. */
        free(again);
        cblob_model_destroy(model);
        free(original);
    }
    cblob_context_destroy(ctx);
}

/* A top-level field's bytes: [start, end) of each field of a message. */
static size_t split_fields(const uint8_t *bytes, size_t size, size_t *starts, size_t max)
{
    size_t n = 0, at = 0;
    while (at < size && n < max) {
        starts[n++] = at;
        uint64_t tag = 0;
        for (int shift = 0;; shift += 7) {
            tag |= (uint64_t)(bytes[at] & 0x7f) << shift;
            if (!(bytes[at++] & 0x80))
                break;
        }
        uint64_t length = 0;
        switch (tag & 7) {
        case 0: while (bytes[at++] & 0x80) {} break;
        case 1: at += 8; break;
        case 5: at += 4; break;
        case 2:
            for (int shift = 0;; shift += 7) {
                length |= (uint64_t)(bytes[at] & 0x7f) << shift;
                if (!(bytes[at++] & 0x80))
                    break;
            }
            at += length;
            break;
        default: return 0; /* groups are not written by these tests' nets at the top level */
        }
    }
    starts[n] = at;
    return n;
}

TEST(a_reshaped_blob_changes_only_its_own_blob_field)
{
    cblob_context *ctx = context_new();
    uint8_t *original = NULL;
    size_t size = 0;
    cblob_model *model = open_net(ctx, "--format v2 --structure --layers 30 --seed 9", &original, &size);
    CHECK(model != NULL);
    const int64_t layer = layer_with_blob(model, 3, 1);
    CHECK(layer >= 0);
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_model_layer_blob(model, layer, 0, &blob));
    CHECK_OK(cblob_blob_reshape(blob, 1, (int64_t[]){2}));
    cblob_blob_destroy(blob);
    size_t again_size = 0;
    uint8_t *again = saved(model, 0, &again_size);
    CHECK(again != NULL);
    static size_t a[4096], b[4096];
    const size_t na = split_fields(original, size, a, 4095), nb = split_fields(again, again_size, b, 4095);
    CHECK(na == nb && na > 30);
    /* Top-level fields: every one the same bytes but the changed layer's. */
    size_t different = 0, which = 0;
    for (size_t i = 0; i < na; ++i) {
        if (a[i + 1] - a[i] != b[i + 1] - b[i] || memcmp(original + a[i], again + b[i], a[i + 1] - a[i]) != 0) {
            ++different;
            which = i;
        }
    }
    CHECK(different == 1);
    /* Inside that layer: every field the same but one blob (the layer's field 7). */
    const uint8_t *la = original + a[which], *lb = again + b[which];
    size_t skip_a = 2, skip_b = 2; /* tag 100 takes two bytes */
    while (la[skip_a++] & 0x80) {}
    while (lb[skip_b++] & 0x80) {}
    static size_t fa[4096], fb[4096];
    const size_t ma = split_fields(la + skip_a, a[which + 1] - a[which] - skip_a, fa, 4095);
    const size_t mb = split_fields(lb + skip_b, b[which + 1] - b[which] - skip_b, fb, 4095);
    CHECK(ma == mb && ma > 2);
    size_t changed_fields = 0;
    for (size_t i = 0; i < ma; ++i) {
        if (fa[i + 1] - fa[i] != fb[i + 1] - fb[i] ||
            memcmp(la + skip_a + fa[i], lb + skip_b + fb[i], fa[i + 1] - fa[i]) != 0) {
            ++changed_fields;
            CHECK(lb[skip_b + fb[i]] == 0x3a); /* blobs = 7 */
        }
    }
    CHECK(changed_fields == 1);
    free(again);
    free(original);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

TEST(write_diff_0_leaves_out_diffs_and_keeps_everything_else)
{
    cblob_context *ctx = context_new();
    uint8_t *original = NULL;
    size_t size = 0;
    cblob_model *model = open_net(ctx, "--format v2 --diffs --unknown --layers 40 --seed 2", &original, &size);
    CHECK(model != NULL);
    size_t without_size = 0;
    uint8_t *without = saved(model, 0, &without_size);
    CHECK(without != NULL && without_size < size);
    cblob_model *again = NULL;
    CHECK_OK(cblob_model_open(ctx, without, without_size, &again));
    int64_t layers = 0;
    CHECK_OK(cblob_model_num_layers(again, &layers));
    for (int64_t i = 0; i < layers; ++i) {
        int64_t n = 0;
        CHECK_OK(cblob_model_layer_num_blobs(again, i, &n));
        for (int64_t j = 0; j < n; ++j) {
            cblob_blob *blob = NULL, *first = NULL;
            cblob_head head;
            CHECK_OK(cblob_model_layer_blob(again, i, j, &blob));
            CHECK_OK(cblob_model_layer_blob(model, i, j, &first));
            CHECK_OK(cblob_blob_head(blob, CBLOB_PART_DIFF, &head));
            CHECK(head == CBLOB_HEAD_UNINITIALIZED);
            CHECK(ft_same_values(blob, first, CBLOB_PART_DATA));
            cblob_blob_destroy(blob);
            cblob_blob_destroy(first);
        }
    }
    /* Saved again with diffs from the first model, the original bytes come back. */
    free(without);
    size_t with_size = 0;
    uint8_t *with = saved(model, 1, &with_size);
    CHECK(with != NULL && with_size == size && memcmp(with, original, size) == 0);
    free(with);
    free(original);
    cblob_model_destroy(again);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}
