/* SPDX-License-Identifier: BSD-2-Clause */
/* Writes the files crosscheck.py reads with Python's protobuf package: a V2 and a V1 model and a
 * BlobProtoVector, covering every dtype, with and without diff, all values from ft_value.
 *
 * usage: formats_write_samples DIR */
#include <stdio.h>

#include "support.h"

typedef struct blob_spec {
    cblob_dtype dtype;
    int32_t num_axes;
    int64_t dims[4];
    int seed;
    bool diff;
} blob_spec;

static cblob_status add(cblob_context *ctx, cblob_model *model, const char *name, const char *type,
                        const blob_spec *specs, int count)
{
    cblob_blob *blobs[4] = {NULL, NULL, NULL, NULL};
    cblob_status status = CBLOB_OK;
    for (int i = 0; i < count && status == CBLOB_OK; ++i) {
        blobs[i] = ft_blob(ctx, specs[i].dtype, specs[i].num_axes, specs[i].dims, specs[i].seed, specs[i].diff);
        status = blobs[i] != NULL ? CBLOB_OK : CBLOB_ERR_INTERNAL;
    }
    if (status == CBLOB_OK)
        status = cblob_model_add_layer(model, name, type, blobs, count);
    for (int i = 0; i < count; ++i)
        cblob_blob_destroy(blobs[i]);
    return status;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: formats_write_samples DIR\n");
        return 2;
    }
    char path[4096];
    cblob_context *ctx = NULL;
    cblob_model *v2 = NULL, *v1 = NULL;
    cblob_status status = cblob_context_create(&ctx);
    if (status == CBLOB_OK)
        status = cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "CrossV2", &v2);
    if (status == CBLOB_OK)
        status = add(ctx, v2, "data", "Input", NULL, 0);
    if (status == CBLOB_OK)
        status = add(ctx, v2, "conv1", "Convolution",
                     (blob_spec[]){{CBLOB_DTYPE_FLOAT32, 4, {4, 3, 2, 2}, 1, true}, {CBLOB_DTYPE_FLOAT32, 1, {4}, 3, false}}, 2);
    if (status == CBLOB_OK)
        status = add(ctx, v2, "bn", "BatchNorm", (blob_spec[]){{CBLOB_DTYPE_FLOAT64, 1, {3}, 5, true}}, 1);
    if (status == CBLOB_OK)
        status = add(ctx, v2, "ints", "Custom",
                     (blob_spec[]){{CBLOB_DTYPE_INT32, 2, {2, 3}, 7, false}, {CBLOB_DTYPE_UINT32, 0, {0}, 8, false}}, 2);
    snprintf(path, sizeof path, "%s/v2.caffemodel", argv[1]);
    if (status == CBLOB_OK)
        status = cblob_model_to_proto_file(v2, 1, path);

    if (status == CBLOB_OK)
        status = cblob_model_create(ctx, CBLOB_NET_FORMAT_V1, "CrossV1", &v1);
    if (status == CBLOB_OK)
        status = add(ctx, v1, "conv1", "CONVOLUTION", (blob_spec[]){{CBLOB_DTYPE_FLOAT32, 2, {2, 2}, 11, false}}, 1);
    if (status == CBLOB_OK)
        status = add(ctx, v1, "relu", "RELU", NULL, 0);
    if (status == CBLOB_OK)
        status = add(ctx, v1, "custom", "99", NULL, 0);
    snprintf(path, sizeof path, "%s/v1.caffemodel", argv[1]);
    if (status == CBLOB_OK)
        status = cblob_model_to_proto_file(v1, 0, path);

    cblob_blob *vector[3] = {
        ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){3}, 13, true),
        ft_blob(ctx, CBLOB_DTYPE_FLOAT64, 2, (int64_t[]){2, 2}, 15, false),
        ft_blob(ctx, CBLOB_DTYPE_UINT32, 1, (int64_t[]){4}, 17, false),
    };
    snprintf(path, sizeof path, "%s/vector.binaryproto", argv[1]);
    if (status == CBLOB_OK)
        status = vector[0] && vector[1] && vector[2] ? cblob_blob_vector_to_proto_file(vector, 3, 1, path)
                                                     : CBLOB_ERR_INTERNAL;
    if (status != CBLOB_OK)
        fprintf(stderr, "formats_write_samples: %s\n", cblob_last_error_message());
    for (int i = 0; i < 3; ++i)
        cblob_blob_destroy(vector[i]);
    cblob_model_destroy(v1), cblob_model_destroy(v2);
    cblob_context_destroy(ctx);
    return status == CBLOB_OK ? 0 : 1;
}
