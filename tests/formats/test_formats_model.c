/* SPDX-License-Identifier: BSD-2-Clause */
/* Models (NetParameter) through the public API: write then read in both formats, V0 layers
 * nested in V1, handle lifetimes, and malformed nets. */
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "pb.h"
#include "support.h"

static cblob_context *context_new(void)
{
    cblob_context *context = NULL;
    return cblob_context_create(&context) == CBLOB_OK ? context : NULL;
}

static uint8_t *model_bytes(const cblob_model *model, bool write_diff, size_t *size)
{
    size_t needed = 0;
    if (cblob_model_to_proto(model, write_diff, NULL, 0, &needed) != CBLOB_OK)
        return NULL;
    uint8_t *bytes = malloc(needed + 1);
    if (bytes == NULL || cblob_model_to_proto(model, write_diff, bytes, needed, size) != CBLOB_OK) {
        free(bytes);
        return NULL;
    }
    return bytes;
}

static bool layer_is(const cblob_model *model, int64_t layer, const char *name, const char *type, int64_t num_blobs)
{
    const char *got_name = NULL, *got_type = NULL;
    int64_t got_blobs = -1;
    return cblob_model_layer_name(model, layer, &got_name) == CBLOB_OK &&
           cblob_model_layer_type(model, layer, &got_type) == CBLOB_OK &&
           cblob_model_layer_num_blobs(model, layer, &got_blobs) == CBLOB_OK && strcmp(got_name, name) == 0 &&
           strcmp(got_type, type) == 0 && got_blobs == num_blobs;
}

/* A model's blob compared with an expected one (values of data, and of diff when asked). */
static bool blob_matches(const cblob_model *model, int64_t layer, int64_t index, cblob_blob *expected, bool diff)
{
    cblob_blob *blob = NULL;
    if (cblob_model_layer_blob(model, layer, index, &blob) != CBLOB_OK)
        return false;
    const bool same = ft_same_values(expected, blob, CBLOB_PART_DATA) &&
                      (!diff || ft_same_values(expected, blob, CBLOB_PART_DIFF));
    cblob_blob_destroy(blob);
    return same;
}

TEST(model_v2_write_then_read)
{
    cblob_context *ctx = context_new();
    cblob_blob *weights = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 4, (int64_t[]){4, 3, 2, 2}, 1, true);
    cblob_blob *bias = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){4}, 2, true);
    cblob_blob *scale = ft_blob(ctx, CBLOB_DTYPE_FLOAT64, 1, (int64_t[]){4}, 3, false);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "Net/1", &model));
    CHECK_OK(cblob_model_add_layer(model, "data", "Input", NULL, 0));
    CHECK_OK(cblob_model_add_layer(model, "conv1", "Convolution", (cblob_blob *const[]){weights, bias}, 2));
    CHECK_OK(cblob_model_add_layer(model, "scale1", "Scale", &scale, 1));
    CHECK_OK(cblob_model_add_layer(model, "", "", NULL, 0));
    for (int write_diff = 0; write_diff <= 1; ++write_diff) {
        size_t size = 0;
        uint8_t *bytes = model_bytes(model, write_diff, &size);
        CHECK(bytes != NULL);
        cblob_model *read = NULL;
        CHECK_OK(cblob_model_open(ctx, bytes, size, &read));
        free(bytes); /* the model owns what it read */
        cblob_net_format format = 0;
        const char *name = NULL;
        int64_t layers = 0;
        CHECK_OK(cblob_model_format(read, &format));
        CHECK_OK(cblob_model_name(read, &name));
        CHECK_OK(cblob_model_num_layers(read, &layers));
        CHECK(format == CBLOB_NET_FORMAT_V2 && strcmp(name, "Net/1") == 0 && layers == 4);
        CHECK(layer_is(read, 0, "data", "Input", 0));
        CHECK(layer_is(read, 1, "conv1", "Convolution", 2));
        CHECK(layer_is(read, 2, "scale1", "Scale", 1));
        CHECK(layer_is(read, 3, "", "", 0));
        CHECK(blob_matches(read, 1, 0, weights, write_diff) && blob_matches(read, 1, 1, bias, write_diff));
        CHECK(blob_matches(read, 2, 0, scale, false));
        cblob_blob *blob = NULL;
        cblob_head head;
        CHECK_OK(cblob_model_layer_blob(read, 1, 0, &blob));
        CHECK_OK(cblob_blob_head(blob, CBLOB_PART_DIFF, &head));
        CHECK_EQ_INT(head != CBLOB_HEAD_UNINITIALIZED, write_diff);
        cblob_dtype dtype;
        cblob_blob_destroy(blob);
        CHECK_OK(cblob_model_layer_blob(read, 2, 0, &blob));
        CHECK_OK(cblob_blob_dtype(blob, &dtype));
        CHECK_EQ_INT(dtype, CBLOB_DTYPE_FLOAT64);
        cblob_blob_destroy(blob);
        cblob_model_destroy(read);
    }
    cblob_model_destroy(model);
    cblob_blob_destroy(weights), cblob_blob_destroy(bias), cblob_blob_destroy(scale);
    cblob_context_destroy(ctx);
}

TEST(model_v1_write_then_read_reports_enum_names)
{
    cblob_context *ctx = context_new();
    cblob_blob *weights = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){3, 5}, 4, false);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V1, NULL, &model));
    CHECK_OK(cblob_model_add_layer(model, "data", "DATA", NULL, 0));
    CHECK_OK(cblob_model_add_layer(model, "fc", "INNER_PRODUCT", &weights, 1));
    CHECK_OK(cblob_model_add_layer(model, "custom", "99", NULL, 0));
    /* V1 types are an enum: a V2 type string is refused, and the model is unchanged. */
    CHECK_ERROR(cblob_model_add_layer(model, "conv", "Convolution", NULL, 0), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "LayerType") != NULL);
    size_t size = 0;
    uint8_t *bytes = model_bytes(model, false, &size);
    CHECK(bytes != NULL);
    /* The wire holds `layers` (2) and no `layer` (100), and no name. */
    pb_field fields[8];
    const int n = pb_list(bytes, size, fields, 8);
    CHECK(n == 3 && pb_find(fields, n, 2) != NULL && pb_find(fields, n, 100) == NULL && pb_find(fields, n, 1) == NULL);
    cblob_model *read = NULL;
    CHECK_OK(cblob_model_open(ctx, bytes, size, &read));
    cblob_net_format format = 0;
    const char *name = "unset";
    CHECK_OK(cblob_model_format(read, &format));
    CHECK_OK(cblob_model_name(read, &name));
    CHECK(format == CBLOB_NET_FORMAT_V1 && name == NULL);
    CHECK(layer_is(read, 0, "data", "DATA", 0));
    CHECK(layer_is(read, 1, "fc", "INNER_PRODUCT", 1));
    CHECK(layer_is(read, 2, "custom", "99", 0)); /* a value the enum does not name */
    CHECK(blob_matches(read, 1, 0, weights, false));
    /* Saved again, a V1 model is the same bytes. */
    size_t again_size = 0;
    uint8_t *again = model_bytes(read, false, &again_size);
    CHECK(again != NULL && again_size == size && memcmp(again, bytes, size) == 0);
    free(bytes), free(again);
    cblob_model_destroy(read), cblob_model_destroy(model);
    cblob_blob_destroy(weights);
    cblob_context_destroy(ctx);
}

/* V1LayerParameter { name = 4, type = 5, blobs = 6, layer = 1 (V0: name 1, type 2, blobs 50) } */
TEST(v1_layers_read_their_nested_v0_layer)
{
    cblob_context *ctx = context_new();
    pb blob = {0}, v0 = {0}, v1_with_v0 = {0}, v1_plain = {0}, v1_unknown = {0}, net = {0};
    pb_shape(&blob, (int64_t[]){2}, 1, true);
    pb_floats(&blob, 5, (const float[]){0.5f, 0.25f}, 2, true);
    pb_string(&v0, 1, "old_conv");
    pb_string(&v0, 2, "conv");
    pb_message(&v0, 50, &blob);
    pb_message(&v1_with_v0, 1, &v0); /* only the V0 layer: its name, type and blobs stand in */
    pb_string(&v1_plain, 4, "relu");
    pb_int(&v1_plain, 5, 18); /* RELU */
    pb_string(&v1_plain, 2, "bottom_blob"); /* V1's bottom: an unknown field here */
    pb_int(&v1_unknown, 5, 1234);
    pb_message(&net, 2, &v1_with_v0);
    pb_message(&net, 2, &v1_plain);
    pb_message(&net, 2, &v1_unknown);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    CHECK(layer_is(model, 0, "old_conv", "conv", 1));
    CHECK(layer_is(model, 1, "relu", "RELU", 0));
    CHECK(layer_is(model, 2, "", "1234", 0));
    cblob_blob *read = NULL;
    CHECK_OK(cblob_model_layer_blob(model, 0, 0, &read));
    double value;
    CHECK_OK(cblob_blob_read_element(read, CBLOB_PART_DATA, 1, (int64_t[]){1}, &value));
    CHECK_NEAR(value, 0.25, 0);
    cblob_blob_destroy(read);
    cblob_model_destroy(model);
    pb_free(&blob), pb_free(&v0), pb_free(&v1_with_v0), pb_free(&v1_plain), pb_free(&v1_unknown), pb_free(&net);
    cblob_context_destroy(ctx);
}

TEST(model_blobs_outlive_the_model_and_are_shared_with_it)
{
    cblob_context *ctx = context_new();
    cblob_blob *weights = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){3}, 1, false);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "shared", &model));
    CHECK_OK(cblob_model_add_layer(model, "ip", "InnerProduct", &weights, 1));
    /* The model holds the blob, not a copy: a change made afterwards is what gets saved. */
    float *values = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(weights, CBLOB_PART_DATA, (void **)&values));
    values[0] = 42;
    cblob_blob_destroy(weights); /* the model's hold keeps it alive */
    size_t size = 0;
    uint8_t *bytes = model_bytes(model, false, &size);
    cblob_model_destroy(model);
    CHECK_OK(cblob_model_open(ctx, bytes, size, &model));
    free(bytes);
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_model_layer_blob(model, 0, 0, &blob));
    cblob_model_destroy(model); /* the caller's hold keeps the blob */
    double value;
    CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DATA, 1, (int64_t[]){0}, &value));
    CHECK_NEAR(value, 42, 0);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(model_lookups_and_bad_indices)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){2}, 1, false);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, NULL, &model));
    CHECK_OK(cblob_model_add_layer(model, "a", "A", NULL, 0));
    CHECK_OK(cblob_model_add_layer(model, "b", "B", &blob, 1));
    CHECK_OK(cblob_model_add_layer(model, "a", "A2", NULL, 0));
    int64_t found = 0;
    CHECK_OK(cblob_model_find_layer(model, "a", &found));
    CHECK_EQ_INT(found, 0);
    CHECK_OK(cblob_model_find_layer(model, "b", &found));
    CHECK_EQ_INT(found, 1);
    CHECK_OK(cblob_model_find_layer(model, "missing", &found));
    CHECK_EQ_INT(found, -1);
    cblob_blob *out = NULL;
    CHECK_ERROR(cblob_model_layer_blob(model, 0, 0, &out), CBLOB_ERR_OUT_OF_RANGE);
    CHECK(strstr(cblob_last_error_message(), "layer 0 (a)") != NULL && out == NULL);
    CHECK_ERROR(cblob_model_layer_blob(model, 3, 0, &out), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_model_add_layer(model, "c", "C", NULL, 1), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_model_add_layer(model, "c", "C", (cblob_blob *const[]){NULL}, 1), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_model_create(ctx, 7, NULL, &model), CBLOB_ERR_INVALID_ARGUMENT);
    int64_t layers = 0;
    CHECK_OK(cblob_model_num_layers(model, &layers));
    CHECK_EQ_INT(layers, 3);
    cblob_model_destroy(model);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(saving_a_blob_that_never_had_a_shape_names_it)
{
    cblob_context *ctx = context_new();
    cblob_blob *empty = NULL;
    CHECK_OK(cblob_blob_create_empty(ctx, CBLOB_DTYPE_FLOAT32, &empty));
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, NULL, &model));
    CHECK_OK(cblob_model_add_layer(model, "first", "Input", NULL, 0));
    CHECK_OK(cblob_model_add_layer(model, "conv9", "Convolution", &empty, 1));
    size_t size = 0;
    CHECK_ERROR(cblob_model_to_proto(model, 0, NULL, 0, &size), CBLOB_ERR_STATE);
    CHECK(strstr(cblob_last_error_message(), "layer 1 (conv9) blob 0") != NULL);
    cblob_model_destroy(model);
    cblob_blob_destroy(empty);
    cblob_context_destroy(ctx);
}

TEST(model_files_round_trip_and_are_replaced_whole)
{
    char folder[256], path[512];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/weights.caffemodel", folder);
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){8, 8}, 1, true);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "file", &model));
    CHECK_OK(cblob_model_add_layer(model, "ip", "InnerProduct", &blob, 1));
    CHECK(ft_write_file(path, "old contents", 12));
    CHECK_OK(cblob_model_to_proto_file(model, 1, path));
    size_t file_size = 0, size = 0;
    uint8_t *file_bytes = ft_read_file(path, &file_size), *bytes = model_bytes(model, true, &size);
    CHECK(file_bytes != NULL && bytes != NULL && file_size == size && memcmp(file_bytes, bytes, size) == 0);
    cblob_model *read = NULL;
    CHECK_OK(cblob_model_open_file(ctx, path, &read));
    CHECK(blob_matches(read, 0, 0, blob, true));
    cblob_proto_kind kind = 0;
    CHECK_OK(cblob_proto_detect_file(path, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_NET);
    /* A failed save leaves the previous file as it was. */
    snprintf(path, sizeof path, "%s/missing-folder/weights.caffemodel", folder);
    CHECK_ERROR(cblob_model_to_proto_file(model, 0, path), CBLOB_ERR_IO);
    free(file_bytes), free(bytes);
    cblob_model_destroy(read), cblob_model_destroy(model);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
    CHECK(access(folder, F_OK) != 0); /* no temporary file was left behind */
}

/* The other kinds of Caffe file are valid protobuf of a net without layers. Opened as a model,
 * one that is surely another kind (a BlobProto, a vector of several blobs) is an error naming
 * it, not a model of 0 layers; a net whose only field is a name stays a net, also when the name
 * reads as a BlobProto too. */
static void check_not_a_model(cblob_context *ctx, const char *path, const uint8_t *bytes, size_t size,
                              const char *holds)
{
    cblob_model *model = NULL;
    CHECK_ERROR(cblob_model_open_file(ctx, path, &model), CBLOB_ERR_PARSE);
    CHECK_MSG(strstr(cblob_last_error_message(), holds) != NULL, "%s: \"%s\" does not say it holds %s", path,
              cblob_last_error_message(), holds);
    CHECK(model == NULL);
    CHECK_ERROR(cblob_model_open(ctx, bytes, size, &model), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), holds) != NULL && model == NULL);
}

TEST(opening_another_kind_of_file_as_a_model_says_what_it_holds)
{
    char folder[256], path[512];
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){2, 3}, 1, false);
    uint8_t buffer[1024];
    size_t size = 0;

    snprintf(path, sizeof path, "%s/mean.binaryproto", folder);
    CHECK_OK(cblob_blob_to_proto_file(blob, 0, path));
    CHECK_OK(cblob_blob_to_proto(blob, 0, buffer, sizeof buffer, &size));
    check_not_a_model(ctx, path, buffer, size, "holds a BlobProto, not a NetParameter");
    snprintf(path, sizeof path, "%s/cifar10_mean.binaryproto", CBLOB_CAFFE_DATA_DIR);
    size_t real_size = 0;
    uint8_t *real = ft_read_file(path, &real_size);
    if (real != NULL)
        check_not_a_model(ctx, path, real, real_size, "holds a BlobProto, not a NetParameter");
    free(real);

    snprintf(path, sizeof path, "%s/blobs.binaryproto", folder);
    CHECK_OK(cblob_blob_vector_to_proto_file((cblob_blob *const[]){blob, blob}, 2, 0, path));
    CHECK_OK(cblob_blob_vector_to_proto((cblob_blob *const[]){blob, blob}, 2, 0, buffer, sizeof buffer, &size));
    check_not_a_model(ctx, path, buffer, size, "holds a BlobProtoVector, not a NetParameter");

    const char *const names[] = {"", "LeNet", "-abcd"}; /* "-abcd": a float32 scalar's BlobProto */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        cblob_model *model = NULL, *back = NULL;
        CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, names[i], &model));
        uint8_t *bytes = model_bytes(model, false, &size);
        CHECK(bytes != NULL);
        CHECK_OK(cblob_model_open(ctx, bytes, size, &back));
        const char *name = NULL;
        int64_t layers = -1;
        CHECK_OK(cblob_model_name(back, &name));
        CHECK_OK(cblob_model_num_layers(back, &layers));
        CHECK(strcmp(name, names[i]) == 0 && layers == 0);
        free(bytes);
        cblob_model_destroy(model), cblob_model_destroy(back);
    }
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

/* ---- malformed nets ------------------------------------------------------------------------ */

TEST(malformed_nets_name_the_layer_blob_and_byte)
{
    cblob_context *ctx = context_new();
    pb good_blob = {0}, bad_blob = {0}, layer0 = {0}, layer1 = {0}, net = {0};
    pb_shape(&good_blob, (int64_t[]){1}, 1, true);
    pb_floats(&good_blob, 5, (const float[]){1}, 1, true);
    pb_shape(&bad_blob, (int64_t[]){3}, 1, true);
    pb_floats(&bad_blob, 5, (const float[]){1, 2}, 2, true);
    pb_string(&layer0, 1, "data");
    pb_string(&layer1, 1, "conv1");
    pb_string(&layer1, 2, "Convolution");
    pb_message(&layer1, 7, &good_blob);
    pb_message(&layer1, 7, &bad_blob);
    pb_string(&net, 1, "broken");
    pb_message(&net, 100, &layer0);
    pb_message(&net, 100, &layer1);
    cblob_model *model = NULL;
    CHECK_ERROR(cblob_model_open(ctx, net.data, net.size, &model), CBLOB_ERR_PARSE);
    CHECK_MSG(strstr(cblob_last_error_message(), "NetParameter.layer[1](conv1).blobs[1].data at byte") != NULL,
              "message: %s", cblob_last_error_message());
    CHECK(model == NULL);
    /* Every prefix fails cleanly (most are truncated; none may crash or leak). */
    for (size_t cut = 1; cut < net.size; ++cut) {
        const cblob_status status = cblob_model_open(ctx, net.data, cut, &model);
        CHECK_MSG(status == CBLOB_ERR_PARSE || status == CBLOB_OK, "a %zu-byte prefix gave %s", cut,
                  cblob_status_name(status));
        if (status == CBLOB_OK) {
            cblob_model_destroy(model);
            model = NULL;
        }
    }
    /* Both `layer` and `layers`, as Caffe, is refused. */
    pb mixed = {0};
    pb_message(&mixed, 100, &layer0);
    pb_message(&mixed, 2, &layer0);
    CHECK_ERROR(cblob_model_open(ctx, mixed.data, mixed.size, &model), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "both layer") != NULL);
    /* A layer name with a NUL byte cannot be a C string. */
    pb nul_layer = {0}, nul_net = {0};
    pb_bytes(&nul_layer, 1, "a\0b", 3);
    pb_message(&nul_net, 100, &nul_layer);
    CHECK_ERROR(cblob_model_open(ctx, nul_net.data, nul_net.size, &model), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "NetParameter.layer[0].name at byte 3") != NULL);
    /* Nor a bottom, a top, a stage or a param spec's name: one rule for every name (issue 32). */
    pb nul_bottom = {0}, nul_bottom_net = {0}, nul_rule = {0};
    pb_string(&nul_bottom, 1, "conv");
    pb_bytes(&nul_bottom, 3, "a\0b", 3);
    pb_message(&nul_bottom_net, 100, &nul_bottom);
    CHECK_ERROR(cblob_model_open(ctx, nul_bottom_net.data, nul_bottom_net.size, &model), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "NetParameter.layer[0](conv) at byte 9: its bottom holds a NUL byte") != NULL);
    pb_free(&nul_bottom_net);
    pb_bytes(&nul_rule, 4, "s\0", 2);
    pb_message(&nul_bottom, 8, &nul_rule); /* the bottom first: the first name with a NUL is said */
    pb_message(&nul_bottom_net, 100, &nul_bottom);
    CHECK_ERROR(cblob_model_open(ctx, nul_bottom_net.data, nul_bottom_net.size, &model), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "its bottom holds a NUL byte") != NULL);
    pb_free(&nul_bottom), pb_free(&nul_bottom_net), pb_free(&nul_rule);
    /* Valid protobuf of another kind reads as an empty net; cblob says what it is instead. */
    uint8_t vector[64];
    size_t vector_size = 0;
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){2}, 1, false);
    CHECK_OK(cblob_blob_vector_to_proto(&blob, 1, 0, vector, sizeof vector, &vector_size));
    CHECK_ERROR(cblob_model_open(ctx, vector, vector_size, &model), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "holds a BlobProtoVector, not a NetParameter") != NULL);
    int64_t count = -1;
    CHECK_ERROR(cblob_blob_vector_from_proto(ctx, net.data, net.size, 0, NULL, &count), CBLOB_ERR_PARSE);
    pb nameless = {0};
    pb_message(&nameless, 100, &layer0);
    CHECK_ERROR(cblob_blob_vector_from_proto(ctx, nameless.data, nameless.size, 0, NULL, &count), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "holds a NetParameter, not a BlobProtoVector") != NULL && count == -1);
    cblob_blob_destroy(blob);
    pb_free(&nameless);
    /* Garbage and missing files. */
    CHECK_ERROR(cblob_model_open(ctx, (const uint8_t *)"\x08\x80", 2, &model), CBLOB_ERR_PARSE);
    CHECK_ERROR(cblob_model_open_file(ctx, "/nonexistent/cblob.caffemodel", &model), CBLOB_ERR_IO);
    CHECK_ERROR(cblob_model_open_file(ctx, "/", &model), CBLOB_ERR_IO);
    CHECK(strstr(cblob_last_error_message(), "not a regular file") != NULL);
    pb_free(&good_blob), pb_free(&bad_blob), pb_free(&layer0), pb_free(&layer1), pb_free(&net);
    pb_free(&mixed), pb_free(&nul_layer), pb_free(&nul_net);
    cblob_context_destroy(ctx);
}

TEST(unknown_fields_in_nets_and_layers_are_skipped)
{
    /* What a full Caffe .caffemodel carries beyond blobs (bottoms, tops, layer parameters, the
     * net's inputs and state), and what forks add, is skipped. */
    cblob_context *ctx = context_new();
    pb blob = {0}, param = {0}, layer = {0}, net = {0};
    pb_shape(&blob, (int64_t[]){2}, 1, false);
    pb_floats(&blob, 5, (const float[]){3, 4}, 2, false);
    pb_int(&param, 1, 20);
    pb_string(&layer, 3, "data");        /* bottom */
    pb_string(&layer, 4, "conv1");       /* top */
    pb_message(&layer, 106, &param);     /* convolution_param */
    pb_message(&layer, 7, &blob);
    pb_string(&layer, 1, "conv1");       /* the name after the blobs */
    pb_string(&layer, 2, "Convolution");
    pb_int(&layer, 9999, 1);             /* a fork's field */
    pb_string(&net, 3, "data");          /* input */
    pb_int(&net, 4, 1);                  /* input_dim, not packed */
    pb_int(&net, 5, 1);                  /* force_backward */
    pb_message(&net, 100, &layer);
    pb_string(&net, 1, "WithExtras");
    cblob_proto_kind kind = 0;
    CHECK_OK(cblob_proto_detect(net.data, net.size, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_NET);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    CHECK(layer_is(model, 0, "conv1", "Convolution", 1));
    const char *name = NULL;
    CHECK_OK(cblob_model_name(model, &name));
    CHECK(strcmp(name, "WithExtras") == 0);
    cblob_model_destroy(model);
    pb_free(&blob), pb_free(&param), pb_free(&layer), pb_free(&net);
    cblob_context_destroy(ctx);
}
