/* SPDX-License-Identifier: BSD-2-Clause */
/* A net definition with trained weights attached by layer name (cblob_model_attach_weights), as
 * Caffe's Net::CopyTrainedLayersFrom copies them, over the real LeNet model: its own definition
 * written as a prototxt, and that definition with a layer renamed, removed, added, or of another
 * num_output or bias_term; and definitions holding blobs (Caffe's target blobs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cblob/cblob.h"
#include "harness.h"

#define LENET CBLOB_CAFFE_DATA_DIR "/lenet_iter_10000.caffemodel"

/* The helpers that return a value end the test where a step fails (the harness's checks return). */
#define MUST(cond)                                                                  \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: failed: %s (%s)\n", __FILE__, __LINE__, #cond,   \
                    cblob_last_error_message());                                    \
            exit(1);                                                                \
        }                                                                           \
    } while (0)
#define MUST_OK(call) MUST((call) == CBLOB_OK)

static cblob_model *open_lenet(cblob_context *ctx)
{
    FILE *f = fopen(LENET, "rb");
    if (f == NULL)
        SKIP("lenet_iter_10000.caffemodel is absent (" CBLOB_CAFFE_DATA_DIR ")");
    fclose(f);
    cblob_model *model = NULL;
    MUST_OK(cblob_model_open_file(ctx, LENET, &model));
    return model;
}

static char *prototxt(const cblob_model *model)
{
    size_t length = 0;
    MUST_OK(cblob_model_to_prototxt(model, NULL, 0, &length));
    char *text = malloc(length + 1);
    MUST(text != NULL);
    MUST_OK(cblob_model_to_prototxt(model, text, length + 1, &length));
    return text;
}

/* text with the first `from` replaced by `to` (malloc'd). */
static char *replaced(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    MUST(at != NULL);
    char *out = malloc(strlen(text) - strlen(from) + strlen(to) + 1);
    MUST(out != NULL);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* text without the layer block named `name` (malloc'd). */
static char *without_layer(const char *text, const char *name)
{
    char head[128];
    snprintf(head, sizeof head, "layer {\n  name: \"%s\"\n", name);
    const char *at = strstr(text, head);
    MUST(at != NULL);
    const char *end = strstr(at, "\n}\n");
    MUST(end != NULL);
    end += 3;
    char *out = malloc(strlen(text) + 1);
    MUST(out != NULL);
    sprintf(out, "%.*s%s", (int)(at - text), text, end);
    return out;
}

static cblob_model *from_text(cblob_context *ctx, const char *text)
{
    cblob_model *model = NULL;
    MUST_OK(cblob_model_open_prototxt(ctx, (const uint8_t *)text, strlen(text), &model));
    return model;
}

static int64_t layer_of(const cblob_model *model, const char *name)
{
    int64_t index = -1;
    MUST_OK(cblob_model_find_layer(model, name, &index));
    return index;
}

/* Layer `a` of model A holds what layer `b` of B holds: as many blobs, equal shapes and data. */
static void same_blobs(const cblob_model *A, int64_t a, const cblob_model *B, int64_t b)
{
    int64_t na = 0, nb = 0;
    CHECK_OK(cblob_model_layer_num_blobs(A, a, &na));
    CHECK_OK(cblob_model_layer_num_blobs(B, b, &nb));
    CHECK_MSG(na == nb, "layer %lld: %lld blobs, %lld expected", (long long)a, (long long)na, (long long)nb);
    for (int64_t j = 0; j < na; ++j) {
        int64_t sa[CBLOB_MAX_AXES], sb[CBLOB_MAX_AXES];
        int32_t ra = 0, rb = 0;
        CHECK_OK(cblob_model_layer_blob_shape(A, a, j, CBLOB_MAX_AXES, sa, &ra));
        CHECK_OK(cblob_model_layer_blob_shape(B, b, j, CBLOB_MAX_AXES, sb, &rb));
        CHECK(ra == rb && memcmp(sa, sb, (size_t)ra * sizeof *sa) == 0);
        int64_t count = 1;
        for (int32_t i = 0; i < ra; ++i)
            count *= sa[i];
        float *x = malloc((size_t)count * sizeof *x + 1), *y = malloc((size_t)count * sizeof *y + 1);
        CHECK(x != NULL && y != NULL);
        CHECK_OK(cblob_model_layer_blob_read(A, a, j, CBLOB_PART_DATA, 0, count, x, (size_t)count * sizeof *x));
        CHECK_OK(cblob_model_layer_blob_read(B, b, j, CBLOB_PART_DATA, 0, count, y, (size_t)count * sizeof *y));
        CHECK(memcmp(x, y, (size_t)count * sizeof *x) == 0);
        free(x);
        free(y);
    }
}

static int64_t list(const cblob_model *definition, const cblob_model *weights, cblob_attach_list which,
                    int64_t *out, int64_t room)
{
    int64_t count = -1;
    MUST_OK(cblob_model_attach_unmatched(definition, weights, which, out, room, &count));
    return count;
}

TEST(attach_lenet_to_its_own_definition)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_model *weights = open_lenet(ctx);
    char *text = prototxt(weights);
    cblob_model *definition = from_text(ctx, text);
    int64_t blobs = -1;
    CHECK_OK(cblob_model_layer_num_blobs(definition, layer_of(definition, "conv1"), &blobs));
    CHECK(blobs == 0); /* a definition: no weights */

    cblob_model *net = NULL;
    CHECK_OK(cblob_model_attach_weights(definition, weights, &net));
    int64_t layers = 0, expected = 0;
    CHECK_OK(cblob_model_num_layers(net, &layers));
    CHECK_OK(cblob_model_num_layers(weights, &expected));
    CHECK(layers == expected);
    for (int64_t i = 0; i < layers; ++i)
        same_blobs(net, i, weights, i);
    /* The definition is the definition: its text is the same. */
    char *again = prototxt(net);
    CHECK_MSG(strcmp(again, text) == 0, "the attached net's definition differs:\n%s", again);
    CHECK(list(definition, weights, CBLOB_ATTACH_IGNORED, NULL, 0) == 0);
    CHECK(list(definition, weights, CBLOB_ATTACH_UNFILLED, NULL, 0) == 0);
    /* Neither input changed. */
    CHECK_OK(cblob_model_layer_num_blobs(definition, layer_of(definition, "conv1"), &blobs));
    CHECK(blobs == 0);

    /* Saved and read back: a Caffe model with the weights. */
    size_t size = 0;
    CHECK_OK(cblob_model_to_proto(net, 0, NULL, 0, &size));
    uint8_t *bytes = malloc(size);
    CHECK(bytes != NULL);
    CHECK_OK(cblob_model_to_proto(net, 0, bytes, size, &size));
    cblob_model *back = NULL;
    CHECK_OK(cblob_model_open(ctx, bytes, size, &back));
    for (int64_t i = 0; i < layers; ++i)
        same_blobs(back, i, weights, i);

    free(bytes);
    free(again);
    free(text);
    cblob_model_destroy(back);
    cblob_model_destroy(net);
    cblob_model_destroy(definition);
    cblob_model_destroy(weights);
    cblob_context_destroy(ctx);
}

TEST(attach_reports_renamed_removed_and_added_layers)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_model *weights = open_lenet(ctx);
    char *text = prototxt(weights);
    char *renamed = replaced(text, "name: \"ip2\"", "name: \"ip2_new\"");
    char *removed = without_layer(renamed, "conv2");
    char *added = replaced(removed, "name: \"LeNet\"\n",
                           "name: \"LeNet\"\nlayer {\n  name: \"extra\"\n  type: \"InnerProduct\"\n  bottom: \"data\"\n"
                           "  top: \"extra\"\n  inner_product_param {\n    num_output: 3\n  }\n}\n");
    cblob_model *definition = from_text(ctx, added);

    cblob_model *net = NULL;
    CHECK_OK(cblob_model_attach_weights(definition, weights, &net));
    /* ip2 and conv2 of the weights have no layer of their name; extra and ip2_new get none. */
    int64_t ignored[8] = {0}, unfilled[8] = {0};
    CHECK(list(definition, weights, CBLOB_ATTACH_IGNORED, ignored, 8) == 2);
    CHECK(ignored[0] == layer_of(weights, "conv2") && ignored[1] == layer_of(weights, "ip2"));
    CHECK(list(definition, weights, CBLOB_ATTACH_UNFILLED, unfilled, 8) == 2);
    CHECK(unfilled[0] == layer_of(definition, "extra") && unfilled[1] == layer_of(definition, "ip2_new"));
    int64_t blobs = -1;
    CHECK_OK(cblob_model_layer_num_blobs(net, layer_of(net, "ip2_new"), &blobs));
    CHECK(blobs == 0);
    CHECK_OK(cblob_model_layer_num_blobs(net, layer_of(net, "extra"), &blobs));
    CHECK(blobs == 0);
    CHECK(layer_of(net, "conv2") == -1);
    same_blobs(net, layer_of(net, "conv1"), weights, layer_of(weights, "conv1"));
    same_blobs(net, layer_of(net, "ip1"), weights, layer_of(weights, "ip1"));
    /* Room for fewer than the list: an error, nothing written. */
    int64_t room[1] = {-7};
    int64_t count = -3;
    CHECK_ERROR(cblob_model_attach_unmatched(definition, weights, CBLOB_ATTACH_IGNORED, room, 1, &count),
                CBLOB_ERR_OUT_OF_RANGE);
    CHECK(room[0] == -7 && count == -3);
    CHECK_ERROR(cblob_model_attach_unmatched(definition, weights, (cblob_attach_list)2, NULL, 0, &count),
                CBLOB_ERR_INVALID_ARGUMENT);

    free(text);
    free(renamed);
    free(removed);
    free(added);
    cblob_model_destroy(net);
    cblob_model_destroy(definition);
    cblob_model_destroy(weights);
    cblob_context_destroy(ctx);
}

static void refused(cblob_context *ctx, const cblob_model *weights, const char *text, const char *words)
{
    cblob_model *definition = from_text(ctx, text);
    cblob_model *net = (cblob_model *)(uintptr_t)0x1;
    CHECK_ERROR(cblob_model_attach_weights(definition, weights, &net), CBLOB_ERR_SHAPE);
    CHECK(net == (cblob_model *)(uintptr_t)0x1);
    const char *message = cblob_last_error_message();
    CHECK_MSG(strstr(message, words) != NULL, "\"%s\" lacks \"%s\"", message, words);
    cblob_model_destroy(definition);
}

TEST(attach_refuses_what_caffe_refuses)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_model *weights = open_lenet(ctx);
    char *text = prototxt(weights);
    /* ip2's num_output 10 -> 5 (fine-tuning to fewer classes without renaming the layer). */
    char *fewer = replaced(text, "num_output: 10\n", "num_output: 5\n");
    refused(ctx, weights, fewer, "Cannot copy param 0 weights from layer 'ip2'; shape mismatch. Source param shape is 10 500 (5000)");
    /* conv1's num_output 20 -> 16. */
    char *conv = replaced(text, "num_output: 20\n", "num_output: 16\n");
    refused(ctx, weights, conv, "from layer 'conv1'; shape mismatch");
    /* ip1 without a bias: one blob where the weights have two. */
    char *no_bias = replaced(text, "num_output: 500\n", "num_output: 500\n    bias_term: false\n");
    refused(ctx, weights, no_bias, "Incompatible number of blobs for layer ip1");
    /* InnerProduct with transpose holds num_output on the last axis: 500 is not it. */
    char *transposed = replaced(text, "num_output: 500\n", "num_output: 500\n    transpose: true\n");
    refused(ctx, weights, transposed, "from layer 'ip1'; shape mismatch");

    free(text);
    free(fewer);
    free(conv);
    free(no_bias);
    free(transposed);
    cblob_model_destroy(weights);
    cblob_context_destroy(ctx);
}

/* A definition that holds blobs (a model given as definition): Caffe's target blobs, compared as
 * ShapeEquals compares them. */
TEST(attach_to_a_definition_with_blobs)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_model *weights = open_lenet(ctx);
    const int64_t legacy[4] = {1, 1, 10, 500}, legacy_bias[4] = {1, 1, 1, 10}, wrong[2] = {5, 500};
    cblob_blob *blobs[2] = {NULL, NULL};
    cblob_model *definition = NULL, *net = NULL;

    /* Legacy 4-d shapes take the weights' (10, 500) and (10). */
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "legacy", &definition));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 4, legacy, &blobs[0]));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 4, legacy_bias, &blobs[1]));
    CHECK_OK(cblob_model_add_layer(definition, "ip2", "InnerProduct", blobs, 2));
    CHECK_OK(cblob_model_attach_weights(definition, weights, &net));
    same_blobs(net, 0, weights, layer_of(weights, "ip2"));
    CHECK(list(definition, weights, CBLOB_ATTACH_IGNORED, NULL, 0) == 8);
    cblob_model_destroy(net);
    cblob_model_destroy(definition);
    cblob_blob_destroy(blobs[0]);
    cblob_blob_destroy(blobs[1]);

    /* A blob of another shape: Caffe's words, both shapes. */
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "wrong", &definition));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, wrong, &blobs[0]));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 4, legacy_bias, &blobs[1]));
    CHECK_OK(cblob_model_add_layer(definition, "ip2", "InnerProduct", blobs, 2));
    net = (cblob_model *)(uintptr_t)0x1;
    CHECK_ERROR(cblob_model_attach_weights(definition, weights, &net), CBLOB_ERR_SHAPE);
    CHECK(net == (cblob_model *)(uintptr_t)0x1);
    CHECK(strstr(cblob_last_error_message(), "Source param shape is 10 500 (5000); target param shape is 5 500 (2500)") != NULL);
    cblob_model_destroy(definition);
    cblob_blob_destroy(blobs[0]);

    /* One blob where the weights have two. */
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "count", &definition));
    CHECK_OK(cblob_model_add_layer(definition, "ip2", "InnerProduct", &blobs[1], 1));
    CHECK_ERROR(cblob_model_attach_weights(definition, weights, &net), CBLOB_ERR_SHAPE);
    CHECK(strstr(cblob_last_error_message(), "Incompatible number of blobs for layer ip2") != NULL);
    cblob_model_destroy(definition);
    cblob_blob_destroy(blobs[1]);

    /* The weights attached to themselves: the same net. */
    CHECK_OK(cblob_model_attach_weights(weights, weights, &net));
    int64_t layers = 0;
    CHECK_OK(cblob_model_num_layers(net, &layers));
    for (int64_t i = 0; i < layers; ++i)
        same_blobs(net, i, weights, i);
    cblob_model_destroy(net);
    cblob_model_destroy(weights);
    cblob_context_destroy(ctx);
}
