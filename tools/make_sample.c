/* SPDX-License-Identifier: BSD-2-Clause */
/* Writes samples/tiny_lenet.caffemodel, the small model that ships with cblob, with cblob's own
 * writer: a LeNet-shaped net whose weights follow a fixed formula, so that the bytes are the same
 * on every machine (a test regenerates the file and compares).
 *
 * usage: cblob_make_sample OUT */
#include <stdint.h>
#include <stdio.h>

#include "cblob/cblob.h"

/* Multiples of 1/512 in [-1, 1), from MurmurHash3's finalizer: exact in float32, so no rounding
 * differs between machines. */
static float weight(uint32_t seed, uint32_t i)
{
    uint32_t h = seed * 0x9e3779b9u + i;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return (float)((int32_t)(h >> 22) - 512) / 512.0f;
}

static cblob_status make_blob(cblob_context *context, uint32_t seed, int32_t num_axes, const int64_t *dims,
                              cblob_blob **out)
{
    cblob_status status = cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, num_axes, dims, out);
    int64_t count = 0;
    float *values = NULL;
    if (status == CBLOB_OK)
        status = cblob_blob_count(*out, &count);
    if (status == CBLOB_OK)
        status = cblob_blob_mutable_cpu_ptr(*out, CBLOB_PART_DATA, (void **)&values);
    for (int64_t i = 0; status == CBLOB_OK && i < count; ++i)
        values[i] = weight(seed, (uint32_t)i);
    return status;
}

typedef struct layer_spec {
    const char *name, *type;
    int32_t weight_axes;
    int64_t weight_dims[4];
    int64_t bias; /* 0: the layer has no parameters */
} layer_spec;

static const layer_spec layers[] = {
    {"data", "Input", 0, {0}, 0},
    {"conv1", "Convolution", 4, {4, 1, 3, 3}, 4},
    {"pool1", "Pooling", 0, {0}, 0},
    {"conv2", "Convolution", 4, {8, 4, 3, 3}, 8},
    {"pool2", "Pooling", 0, {0}, 0},
    {"ip1", "InnerProduct", 2, {32, 72}, 32},
    {"relu1", "ReLU", 0, {0}, 0},
    {"ip2", "InnerProduct", 2, {10, 32}, 10},
    {"prob", "Softmax", 0, {0}, 0},
};

static cblob_status add_layer(cblob_context *context, cblob_model *model, const layer_spec *spec, uint32_t seed)
{
    cblob_blob *blobs[2] = {NULL, NULL};
    int64_t count = 0;
    cblob_status status = CBLOB_OK;
    if (spec->bias > 0) {
        status = make_blob(context, seed, spec->weight_axes, spec->weight_dims, &blobs[0]);
        if (status == CBLOB_OK)
            status = make_blob(context, seed + 1000u, 1, &spec->bias, &blobs[1]);
        count = 2;
    }
    if (status == CBLOB_OK)
        status = cblob_model_add_layer(model, spec->name, spec->type, blobs, count);
    cblob_blob_destroy(blobs[0]);
    cblob_blob_destroy(blobs[1]);
    return status;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cblob_make_sample OUT\n");
        return 2;
    }
    cblob_context *context = NULL;
    cblob_model *model = NULL;
    cblob_status status = cblob_context_create(&context);
    if (status == CBLOB_OK)
        status = cblob_model_create(context, CBLOB_NET_FORMAT_V2, "TinyLeNet", &model);
    for (size_t i = 0; status == CBLOB_OK && i < sizeof layers / sizeof layers[0]; ++i)
        status = add_layer(context, model, &layers[i], (uint32_t)i + 1u);
    if (status == CBLOB_OK)
        status = cblob_model_to_proto_file(model, 0, argv[1]);
    if (status != CBLOB_OK)
        fprintf(stderr, "cblob_make_sample: %s\n", cblob_last_error_message());
    cblob_model_destroy(model);
    cblob_context_destroy(context);
    return status == CBLOB_OK ? 0 : 1;
}
