/* SPDX-License-Identifier: BSD-2-Clause */
/* The readers over real files with each host allocation failing in turn (issue 27; the generated
 * sweep, oom.<function>, runs each reader once, over its small fixture). Inputs: the real Caffe
 * files (../shared/data/caffe: a LeNet .caffemodel, two mean-image .binaryproto), the shipped
 * samples/tiny_lenet.caffemodel, and what the library makes of them at the test's start (each net
 * as .npz, safetensors, .prototxt and a .npy folder; each mean image as a BlobProtoVector and a
 * .npy). For each reader and input, allocation N fails, N = 1, 2, ... until the call makes fewer
 * than N: whenever the failure fired, the call returns CBLOB_ERR_OUT_OF_MEMORY with a message
 * naming the function and leaves its out-parameter untouched, or it did without (then it
 * succeeded). Leaks are LeakSanitizer's (the asan preset runs this suite). Every N is tried: the
 * inputs need at most a few hundred allocations a call (each test prints its counts), so no
 * sampling; OOM_FILES_MAX_ALLOCATIONS only stops a call that would fail without end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fault.h"
#include "harness.h"
#include "io_support.h"

#define OOM_FILES_MAX_ALLOCATIONS 20000

static const char *const nets[] = {CBLOB_CAFFE_DATA_DIR "/lenet_iter_10000.caffemodel",
                                   CBLOB_SOURCE_DIR "/samples/tiny_lenet.caffemodel"};
static const char *const means[] = {CBLOB_CAFFE_DATA_DIR "/cifar10_mean.binaryproto",
                                    CBLOB_CAFFE_DATA_DIR "/ilsvrc_2012_mean.binaryproto"};
#define NETS 2
#define MEANS 2

/* The inputs, made once per test process before anything is armed. */
typedef struct inputs {
    char folder[512];
    char npz[NETS][600], safetensors[NETS][600], prototxt[NETS][600], npy_folder[NETS][600];
    char vector[MEANS][600], npy[MEANS][600];
} inputs;

static bool make_inputs(cblob_context *ctx, inputs *in)
{
    if (!io_temp_folder(in->folder, sizeof in->folder))
        return false;
    for (int i = 0; i < NETS; ++i) {
        snprintf(in->npz[i], sizeof in->npz[i], "%s/net%d.npz", in->folder, i);
        snprintf(in->safetensors[i], sizeof in->safetensors[i], "%s/net%d.safetensors", in->folder, i);
        snprintf(in->prototxt[i], sizeof in->prototxt[i], "%s/net%d.prototxt", in->folder, i);
        snprintf(in->npy_folder[i], sizeof in->npy_folder[i], "%s/net%d_npy", in->folder, i);
        cblob_model *model = NULL;
        int64_t files = 0;
        const bool made = cblob_model_open_file(ctx, nets[i], &model) == CBLOB_OK &&
                          cblob_model_to_npz_file(model, 0, in->npz[i]) == CBLOB_OK &&
                          cblob_model_to_safetensors_file(model, 0, in->safetensors[i]) == CBLOB_OK &&
                          cblob_model_to_prototxt_file(model, in->prototxt[i]) == CBLOB_OK &&
                          cblob_model_to_npy_folder(model, 0, in->npy_folder[i], &files) == CBLOB_OK;
        if (model != NULL)
            cblob_model_destroy(model);
        if (!made) {
            fprintf(stderr, "cannot convert %s: %s\n", nets[i], cblob_last_error_message());
            return false;
        }
    }
    for (int i = 0; i < MEANS; ++i) {
        snprintf(in->vector[i], sizeof in->vector[i], "%s/mean%d.vector.binaryproto", in->folder, i);
        snprintf(in->npy[i], sizeof in->npy[i], "%s/mean%d.npy", in->folder, i);
        cblob_blob *blob = NULL;
        const bool made = cblob_blob_create_from_proto_file(ctx, means[i], &blob) == CBLOB_OK &&
                          cblob_blob_vector_to_proto_file((cblob_blob *const[]){blob, blob}, 2, 0, in->vector[i]) ==
                              CBLOB_OK &&
                          cblob_blob_to_npy_file(blob, CBLOB_PART_DATA, in->npy[i]) == CBLOB_OK;
        cblob_blob_destroy(blob);
        if (!made) {
            fprintf(stderr, "cannot convert %s: %s\n", means[i], cblob_last_error_message());
            return false;
        }
    }
    return true;
}

/* ---- the readers: each call with its out-parameter set to a mark it must keep on failure ----- */

static char mark;
#define MARK ((void *)&mark)

typedef cblob_status reader_fn(cblob_context *ctx, const char *path, bool *untouched);

static cblob_status file_open_with(cblob_context *ctx, const char *path, int32_t flags, bool *untouched)
{
    cblob_file *out = MARK;
    const cblob_status status = cblob_file_open(ctx, path, flags, 0, &out);
    *untouched = out == MARK;
    if (status == CBLOB_OK)
        cblob_file_destroy(out);
    return status;
}

static cblob_status file_open(cblob_context *ctx, const char *path, bool *untouched)
{
    return file_open_with(ctx, path, 0, untouched);
}

static cblob_status file_open_lazy(cblob_context *ctx, const char *path, bool *untouched)
{
    return file_open_with(ctx, path, CBLOB_OPEN_LAZY, untouched);
}

/* The model readers share a signature. */
#define MODEL_READER(function) \
    static cblob_status call_##function(cblob_context *ctx, const char *path, bool *untouched) \
    { \
        cblob_model *out = MARK; \
        const cblob_status status = function(ctx, path, &out); \
        *untouched = out == MARK; \
        if (status == CBLOB_OK) \
            cblob_model_destroy(out); \
        return status; \
    }
MODEL_READER(cblob_model_open_file)
MODEL_READER(cblob_model_open_file_lazy)
MODEL_READER(cblob_model_open_npz_file)
MODEL_READER(cblob_model_open_safetensors_file)
MODEL_READER(cblob_model_open_prototxt_file)

static cblob_status blob_open(cblob_context *ctx, const char *path, bool *untouched)
{
    cblob_blob *out = MARK;
    const cblob_status status = cblob_blob_create_from_proto_file(ctx, path, &out);
    *untouched = out == MARK;
    if (status == CBLOB_OK)
        cblob_blob_destroy(out);
    return status;
}

static cblob_status vector_open(cblob_context *ctx, const char *path, bool *untouched)
{
    cblob_blob *out[2] = {MARK, MARK};
    int64_t count = -7;
    const cblob_status status = cblob_blob_vector_from_proto_file(ctx, path, 2, out, &count);
    *untouched = out[0] == MARK && out[1] == MARK && count == -7;
    if (status == CBLOB_OK)
        for (int64_t i = 0; i < count; ++i)
            cblob_blob_destroy(out[i]);
    return status;
}

/* One reader over one input: allocation n fails, n = 1, 2, ... */
static bool sweep(cblob_context *ctx, const char *function, reader_fn *read, const char *path, int64_t *allocations)
{
    bool untouched = false;
    if (read(ctx, path, &untouched) != CBLOB_OK) {
        fprintf(stderr, "%s(%s) fails with nothing failing: %s\n", function, path, cblob_last_error_message());
        return false;
    }
    for (int64_t n = 1; n <= OOM_FILES_MAX_ALLOCATIONS; ++n) {
        cb_fault_arm(CB_FAULT_ALLOC, n, 0, false);
        const cblob_status status = read(ctx, path, &untouched);
        const bool fired = cb_fault_fired(CB_FAULT_ALLOC);
        cb_fault_arm(CB_FAULT_ALLOC, 0, 0, false);
        if (!fired || status == CBLOB_OK) {
            if (status != CBLOB_OK) {
                fprintf(stderr, "%s(%s) with %lld allocations and none failing: %s (%s)\n", function, path,
                        (long long)n - 1, cblob_status_name(status), cblob_last_error_message());
                return false;
            }
            if (!fired) {
                *allocations += n - 1;
                printf("%s(%s): %lld allocations, each made to fail in turn\n", function, path, (long long)n - 1);
                return true;
            }
            continue; /* did without the allocation that failed */
        }
        const char *message = cblob_last_error_message();
        if (status != CBLOB_ERR_OUT_OF_MEMORY || strstr(message, function) == NULL || !untouched) {
            fprintf(stderr, "%s(%s) with allocation %lld failing: %s, \"%s\"%s\n", function, path, (long long)n,
                    cblob_status_name(status), message, untouched ? "" : ", its out-parameter written");
            return false;
        }
    }
    fprintf(stderr, "%s(%s) still fails with allocation %d failing\n", function, path, OOM_FILES_MAX_ALLOCATIONS);
    return false;
}

/* The reader over each of its inputs (paths, count of them). */
static void sweep_all(const char *function, reader_fn *read, const char *const *paths, int count)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    int64_t allocations = 0;
    for (int i = 0; i < count; ++i)
        CHECK_MSG(sweep(ctx, function, read, paths[i], &allocations), "%s over %s", function, paths[i]);
    CHECK_MSG(allocations > 10 * count, "%s: only %lld allocations over %d inputs", function, (long long)allocations,
              count);
    cblob_context_destroy(ctx);
}

static inputs in;

/* The inputs of one kind, as a list of paths. */
static const char *const *made_inputs(const char *kind, int *count)
{
    static const char *paths[16];
    cblob_context *ctx = NULL;
    const bool made = in.folder[0] != '\0' || (cblob_context_create(&ctx) == CBLOB_OK && make_inputs(ctx, &in));
    cblob_context_destroy(ctx);
    if (!made)
        return NULL;
    int n = 0;
    for (int i = 0; i < NETS; ++i) {
        if (strcmp(kind, "net") == 0 || strcmp(kind, "any") == 0)
            paths[n++] = nets[i];
        if (strcmp(kind, "npz") == 0 || strcmp(kind, "any") == 0)
            paths[n++] = in.npz[i];
        if (strcmp(kind, "safetensors") == 0 || strcmp(kind, "any") == 0)
            paths[n++] = in.safetensors[i];
        if (strcmp(kind, "prototxt") == 0 || strcmp(kind, "any") == 0)
            paths[n++] = in.prototxt[i];
        if (strcmp(kind, "any") == 0)
            paths[n++] = in.npy_folder[i];
    }
    for (int i = 0; i < MEANS; ++i) {
        if (strcmp(kind, "blob") == 0 || strcmp(kind, "any") == 0)
            paths[n++] = means[i];
        if (strcmp(kind, "vector") == 0 || strcmp(kind, "any") == 0)
            paths[n++] = in.vector[i];
        if (strcmp(kind, "any") == 0)
            paths[n++] = in.npy[i];
    }
    *count = n;
    return paths;
}

static void remove_inputs(void)
{
    if (in.folder[0] != '\0')
        io_remove_tree(in.folder);
}

#define OOM_FILES_TEST(name, function, read, kind) \
    TEST(name) \
    { \
        int count = 0; \
        const char *const *paths = made_inputs(kind, &count); \
        atexit(remove_inputs); \
        CHECK_MSG(paths != NULL, "the inputs could not be made"); \
        sweep_all(function, read, paths, count); \
    }

OOM_FILES_TEST(file_open_over_every_kind, "cblob_file_open", file_open, "any")
OOM_FILES_TEST(file_open_lazy_over_every_kind, "cblob_file_open", file_open_lazy, "any")
OOM_FILES_TEST(model_open_file, "cblob_model_open_file", call_cblob_model_open_file, "net")
OOM_FILES_TEST(model_open_file_lazy, "cblob_model_open_file_lazy", call_cblob_model_open_file_lazy, "net")
OOM_FILES_TEST(model_open_npz_file, "cblob_model_open_npz_file", call_cblob_model_open_npz_file, "npz")
OOM_FILES_TEST(model_open_safetensors_file, "cblob_model_open_safetensors_file",
               call_cblob_model_open_safetensors_file, "safetensors")
OOM_FILES_TEST(model_open_prototxt_file, "cblob_model_open_prototxt_file", call_cblob_model_open_prototxt_file,
               "prototxt")
OOM_FILES_TEST(blob_create_from_proto_file, "cblob_blob_create_from_proto_file", blob_open, "blob")
OOM_FILES_TEST(blob_vector_from_proto_file, "cblob_blob_vector_from_proto_file", vector_open, "vector")
