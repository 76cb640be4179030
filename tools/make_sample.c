/* SPDX-License-Identifier: BSD-2-Clause */
/* Writes samples/tiny_lenet.caffemodel, the small model that ships with cblob: a LeNet-shaped net
 * whose weights follow a fixed formula, so that the bytes are the same on every machine (a test
 * regenerates the file and compares). It is a whole net, as Caffe writes one: each layer's bottoms
 * and tops (the first table a newcomer sees shows how data flows) and its parameters. The public
 * API makes layers of names, types and blobs only, so the NetParameter is encoded here, field by
 * field with Caffe's field numbers, and then opened and written by cblob's own writer.
 *
 * usage: cblob_make_sample OUT */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- protobuf's wire format, enough for a NetParameter -------------------------------------- */

typedef struct message {
    uint8_t *bytes;
    size_t size, capacity;
    bool failed;
} message;

static void put(message *m, const void *bytes, size_t size)
{
    if (m->failed || size == 0)
        return;
    if (m->size + size > m->capacity) {
        const size_t capacity = (m->size + size) * 2;
        uint8_t *grown = realloc(m->bytes, capacity);
        if (grown == NULL) {
            m->failed = true;
            return;
        }
        m->bytes = grown;
        m->capacity = capacity;
    }
    memcpy(m->bytes + m->size, bytes, size);
    m->size += size;
}

static void put_varint(message *m, uint64_t value)
{
    uint8_t bytes[10];
    size_t n = 0;
    do {
        bytes[n++] = (uint8_t)((value & 0x7f) | (value > 0x7f ? 0x80 : 0));
        value >>= 7;
    } while (value != 0);
    put(m, bytes, n);
}

enum { VARINT = 0, LENGTH = 2 };

static void put_uint(message *m, uint32_t field, uint64_t value)
{
    put_varint(m, (uint64_t)field << 3 | VARINT);
    put_varint(m, value);
}

static void put_bytes(message *m, uint32_t field, const void *bytes, size_t size)
{
    put_varint(m, (uint64_t)field << 3 | LENGTH);
    put_varint(m, size);
    put(m, bytes, size);
}

static void put_string(message *m, uint32_t field, const char *text)
{
    put_bytes(m, field, text, strlen(text));
}

/* A nested message: its bytes, taken (freed) here. */
static void put_message(message *m, uint32_t field, message *inner)
{
    m->failed = m->failed || inner->failed;
    put_bytes(m, field, inner->bytes, inner->size);
    free(inner->bytes);
    *inner = (message){0};
}

/* BlobShape { repeated int64 dim = 1 [packed] } */
static void put_shape(message *m, uint32_t field, int32_t num_axes, const int64_t *dims)
{
    message dim = {0}, shape = {0};
    for (int32_t i = 0; i < num_axes; ++i)
        put_varint(&dim, (uint64_t)dims[i]);
    put_message(&shape, 1, &dim);
    put_message(m, field, &shape);
}

/* BlobProto { data = 5 [packed]; shape = 7 }, in field order, as protobuf writes every message. */
static void put_blob(message *layer, uint32_t seed, int32_t num_axes, const int64_t *dims)
{
    int64_t count = 1;
    for (int32_t i = 0; i < num_axes; ++i)
        count *= dims[i];
    message blob = {0}, data = {0};
    for (int64_t i = 0; i < count; ++i) {
        const float value = weight(seed, (uint32_t)i);
        uint8_t little[4];
        uint32_t bits;
        memcpy(&bits, &value, 4);
        for (int b = 0; b < 4; ++b)
            little[b] = (uint8_t)(bits >> (8 * b));
        put(&data, little, 4);
    }
    put_message(&blob, 5, &data);
    put_shape(&blob, 7, num_axes, dims);
    put_message(layer, 7, &blob);
}

/* ---- the net -------------------------------------------------------------------------------- */

/* Caffe's field numbers (proto/caffe_params.proto). */
enum {
    LAYER = 100,
    LAYER_NAME = 1, LAYER_TYPE = 2, LAYER_BOTTOM = 3, LAYER_TOP = 4,
    CONVOLUTION_PARAM = 106, INNER_PRODUCT_PARAM = 117, POOLING_PARAM = 121, INPUT_PARAM = 143,
};

typedef struct layer_spec {
    const char *name, *type, *bottom, *top;
    int32_t weight_axes;
    int64_t weight_dims[4];
    int64_t bias;    /* 0: the layer has no parameters */
    uint32_t kernel; /* convolution and pooling */
} layer_spec;

/* An 18x18 image through two convolutions and poolings to 3x3x8 (72) values, then two inner
 * products and a softmax. */
static const layer_spec layers[] = {
    {"data", "Input", NULL, "data", 0, {0}, 0, 0},
    {"conv1", "Convolution", "data", "conv1", 4, {4, 1, 3, 3}, 4, 3},
    {"pool1", "Pooling", "conv1", "pool1", 0, {0}, 0, 2},
    {"conv2", "Convolution", "pool1", "conv2", 4, {8, 4, 3, 3}, 8, 3},
    {"pool2", "Pooling", "conv2", "pool2", 0, {0}, 0, 2},
    {"ip1", "InnerProduct", "pool2", "ip1", 2, {32, 72}, 32, 0},
    {"relu1", "ReLU", "ip1", "ip1", 0, {0}, 0, 0},
    {"ip2", "InnerProduct", "ip1", "ip2", 2, {10, 32}, 10, 0},
    {"prob", "Softmax", "ip2", "prob", 0, {0}, 0, 0},
};

static void put_params(message *layer, const layer_spec *spec)
{
    message params = {0};
    if (strcmp(spec->type, "Input") == 0) {
        put_shape(&params, 1, 4, (const int64_t[]){1, 1, 18, 18});
        put_message(layer, INPUT_PARAM, &params);
    } else if (strcmp(spec->type, "Convolution") == 0) {
        put_uint(&params, 1, (uint64_t)spec->bias); /* num_output */
        put_uint(&params, 4, spec->kernel);         /* kernel_size */
        put_message(layer, CONVOLUTION_PARAM, &params);
    } else if (strcmp(spec->type, "Pooling") == 0) {
        put_uint(&params, 1, 0);            /* pool: MAX */
        put_uint(&params, 2, spec->kernel); /* kernel_size */
        put_uint(&params, 3, spec->kernel); /* stride */
        put_message(layer, POOLING_PARAM, &params);
    } else if (strcmp(spec->type, "InnerProduct") == 0) {
        put_uint(&params, 1, (uint64_t)spec->bias); /* num_output */
        put_message(layer, INNER_PRODUCT_PARAM, &params);
    }
}

static void put_layer(message *net, const layer_spec *spec, uint32_t seed)
{
    message layer = {0};
    put_string(&layer, LAYER_NAME, spec->name);
    put_string(&layer, LAYER_TYPE, spec->type);
    if (spec->bottom != NULL)
        put_string(&layer, LAYER_BOTTOM, spec->bottom);
    put_string(&layer, LAYER_TOP, spec->top);
    if (spec->bias > 0) {
        put_blob(&layer, seed, spec->weight_axes, spec->weight_dims);
        put_blob(&layer, seed + 1000u, 1, &spec->bias);
    }
    put_params(&layer, spec);
    put_message(net, LAYER, &layer);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cblob_make_sample OUT\n");
        return 2;
    }
    message net = {0};
    put_string(&net, 1, "TinyLeNet");
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; ++i)
        put_layer(&net, &layers[i], (uint32_t)i + 1u);
    if (net.failed) {
        fprintf(stderr, "cblob_make_sample: no memory\n");
        free(net.bytes);
        return 1;
    }
    cblob_context *context = NULL;
    cblob_model *model = NULL;
    cblob_status status = cblob_context_create(&context);
    if (status == CBLOB_OK)
        status = cblob_model_open(context, net.bytes, net.size, &model);
    if (status == CBLOB_OK)
        status = cblob_model_to_proto_file(model, 0, argv[1]);
    if (status != CBLOB_OK)
        fprintf(stderr, "cblob_make_sample: %s\n", cblob_last_error_message());
    cblob_model_destroy(model);
    cblob_context_destroy(context);
    free(net.bytes);
    return status == CBLOB_OK ? 0 : 1;
}
