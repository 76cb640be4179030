/* SPDX-License-Identifier: BSD-2-Clause */
/* Net structure (bottoms, tops, phase, rules, param specs, parameters as JSON), blobs read without
 * handles, the safetensors and npz exports read back, and net surgery. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "pb.h"
#include "support.h"

static cblob_context *context_new(void)
{
    cblob_context *context = NULL;
    return cblob_context_create(&context) == CBLOB_OK ? context : NULL;
}

/* A V2 layer: conv1 (bottom data, top conv1, phase TEST, param {name w lr_mult 2}, param {},
 * include {phase TRAIN stage a stage b}, exclude {not_stage c min_level 2}, convolution_param
 * {num_output 8 kernel_size 3 kernel_size 5 weight_filler {type "xavier"}}, an unknown field 5000
 * inside convolution_param and one in the layer), blobs of 2x3 and 2. */
static void structured_v2(pb *net)
{
    pb layer = {0}, spec = {0}, empty = {0}, include = {0}, exclude = {0}, conv = {0}, filler = {0}, blob = {0},
       bias = {0};
    pb_string(&layer, 1, "conv1");
    pb_string(&layer, 2, "Convolution");
    pb_string(&layer, 3, "data");
    pb_string(&layer, 4, "conv1");
    pb_int(&layer, 10, 1);
    pb_string(&spec, 1, "w");
    pb_floats(&spec, 3, (float[]){2.0f}, 1, false);
    pb_message(&layer, 6, &spec);
    pb_message(&layer, 6, &empty);
    pb_int(&include, 1, 0);
    pb_string(&include, 4, "a");
    pb_string(&include, 4, "b");
    pb_message(&layer, 8, &include);
    pb_string(&exclude, 5, "c");
    pb_int(&exclude, 2, 2);
    pb_message(&layer, 9, &exclude);
    pb_int(&conv, 1, 8);
    pb_int(&conv, 4, 3);
    pb_int(&conv, 4, 5);
    pb_string(&filler, 1, "xavier");
    pb_message(&conv, 7, &filler);
    pb_int(&conv, 5000, 7);
    pb_message(&layer, 106, &conv);
    pb_string(&layer, 5001, "fork");
    pb_shape(&blob, (int64_t[]){2, 3}, 2, true);
    pb_floats(&blob, 5, (float[]){1, 2, 3, 4, 5, 6}, 6, true);
    pb_message(&layer, 7, &blob);
    pb_shape(&bias, (int64_t[]){2}, 1, true);
    pb_floats(&bias, 5, (float[]){0.5f, -0.5f}, 2, false);
    pb_message(&layer, 7, &bias);
    pb_string(net, 1, "structured");
    pb_message(net, 100, &layer);
    pb_free(&layer), pb_free(&spec), pb_free(&include), pb_free(&exclude), pb_free(&conv), pb_free(&filler);
    pb_free(&blob), pb_free(&bias);
}

TEST(v2_layers_report_bottoms_tops_phase_rules_and_param_specs)
{
    cblob_context *ctx = context_new();
    pb net = {0};
    structured_v2(&net);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    int64_t n = -1;
    const char *text = NULL;
    CHECK_OK(cblob_model_layer_num_bottoms(model, 0, &n));
    CHECK(n == 1);
    CHECK_OK(cblob_model_layer_bottom(model, 0, 0, &text));
    CHECK(strcmp(text, "data") == 0);
    CHECK_STATUS(cblob_model_layer_bottom(model, 0, 1, &text), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_OK(cblob_model_layer_num_tops(model, 0, &n));
    CHECK_OK(cblob_model_layer_top(model, 0, 0, &text));
    CHECK(n == 1 && strcmp(text, "conv1") == 0);
    cblob_phase phase;
    CHECK_OK(cblob_model_layer_phase(model, 0, &phase));
    CHECK(phase == CBLOB_PHASE_TEST);
    int32_t min_level = 0, max_level = 0;
    int64_t stages = 0, not_stages = 0;
    CHECK_OK(cblob_model_layer_num_rules(model, 0, CBLOB_RULE_INCLUDE, &n));
    CHECK(n == 1);
    CHECK_OK(cblob_model_layer_rule(model, 0, CBLOB_RULE_INCLUDE, 0, &phase, &min_level, &max_level, &stages, &not_stages));
    CHECK(phase == CBLOB_PHASE_TRAIN && min_level == INT32_MIN && max_level == INT32_MAX && stages == 2 && not_stages == 0);
    CHECK_OK(cblob_model_layer_rule_stage(model, 0, CBLOB_RULE_INCLUDE, 0, 0, 1, &text));
    CHECK(strcmp(text, "b") == 0);
    CHECK_OK(cblob_model_layer_rule(model, 0, CBLOB_RULE_EXCLUDE, 0, &phase, &min_level, &max_level, &stages, &not_stages));
    CHECK(phase == CBLOB_PHASE_NONE && min_level == 2 && stages == 0 && not_stages == 1);
    CHECK_OK(cblob_model_layer_rule_stage(model, 0, CBLOB_RULE_EXCLUDE, 0, 1, 0, &text));
    CHECK(strcmp(text, "c") == 0);
    float lr = 0, decay = 0;
    CHECK_OK(cblob_model_layer_num_param_specs(model, 0, &n));
    CHECK(n == 2);
    CHECK_OK(cblob_model_layer_param_spec(model, 0, 0, &text, &lr, &decay));
    CHECK(strcmp(text, "w") == 0 && lr == 2.0f && decay == 1.0f);
    CHECK_OK(cblob_model_layer_param_spec(model, 0, 1, &text, &lr, &decay));
    CHECK(text == NULL && lr == 1.0f && decay == 1.0f);
    cblob_model_destroy(model);
    pb_free(&net);
    cblob_context_destroy(ctx);
}

static char *layer_text(const cblob_model *model, int64_t layer, bool params, int32_t flags)
{
    size_t length = 0;
    cblob_status status = params ? cblob_model_layer_params_json(model, layer, flags, NULL, 0, &length)
                                 : cblob_model_layer_json(model, layer, flags, NULL, 0, &length);
    char *text = status == CBLOB_OK ? malloc(length + 1) : NULL;
    if (text != NULL && (params ? cblob_model_layer_params_json(model, layer, flags, text, length + 1, &length)
                                : cblob_model_layer_json(model, layer, flags, text, length + 1, &length)) != CBLOB_OK) {
        free(text);
        text = NULL;
    }
    return text;
}

/* Unknown fields are listed once per (field, wire type) of each message, with how many there are,
 * their bytes together and the first one's first bytes: a layer of a million of them renders in a
 * line, not a million objects (issue 32). */
TEST(unknown_fields_are_summarised_per_field_and_wire_type)
{
    cblob_context *ctx = context_new();
    pb layer = {0}, conv = {0}, net = {0};
    pb_string(&layer, 1, "conv");
    pb_string(&layer, 2, "Convolution");
    for (int i = 0; i < 1000; ++i)
        pb_int(&layer, 5001, i < 500 ? 1 : 300);
    pb_bytes(&layer, 5002, "0123456789", 10);
    pb_bytes(&layer, 5002, "ab", 2);
    pb_int(&conv, 1, 8);
    for (int i = 0; i < 3; ++i)
        pb_bytes(&conv, 5000, "fork", 4);
    pb_message(&layer, 106, &conv);
    pb_message(&net, 100, &layer);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    char *params = layer_text(model, 0, true, 0);
    CHECK(params != NULL);
    CHECK_MSG(strcmp(params, "{\"convolution_param\":{\"num_output\":8,\"unknown_fields\":[{\"field\":5000,\"wire_type\":2,"
                             "\"count\":3,\"bytes\":12,\"first_bytes\":\"666f726b\"}]},\"unknown_fields\":[{\"field\":5001,"
                             "\"wire_type\":0,\"count\":1000,\"bytes\":1500,\"first_bytes\":\"01\"},{\"field\":5002,"
                             "\"wire_type\":2,\"count\":2,\"bytes\":12,\"first_bytes\":\"3031323334353637\"}]}") == 0,
              "%s", params);
    free(params);
    cblob_model_destroy(model);
    pb_free(&layer);
    pb_free(&conv);
    pb_free(&net);
    cblob_context_destroy(ctx);
}

/* A write callback that gathers the pieces (or, with `stop`, asks to stop at the first). */
typedef struct gathered {
    char *text;
    size_t size, calls;
    bool stop;
} gathered;

static int32_t gather(void *user_data, const char *text, size_t size)
{
    gathered *g = user_data;
    ++g->calls;
    if (g->stop)
        return 1;
    char *grown = realloc(g->text, g->size + size + 1);
    if (grown == NULL)
        return 1;
    memcpy(grown + g->size, text, size);
    g->size += size;
    grown[g->size] = '\0';
    g->text = grown;
    return 0;
}

/* protobuf lets a field come in pieces: a repeated field's elements between other fields, a message
 * given twice (merged: its repeated fields joined, its messages merged, its scalars the last's). The
 * JSON, written as a stream over the layer's bytes, shows what protobuf's merge would hold, once per
 * field, in the order the fields first appear; a group at the layer's level is an unknown field
 * (it was dropped), and the defaults of the structure fields never join the parameters. The text
 * handed to a write callback is the buffer call's, and a callback's stop is CBLOB_ERR_CANCELLED. */
TEST(fields_given_in_pieces_render_as_protobuf_merges_them_and_stream_as_the_buffer_call)
{
    cblob_context *ctx = context_new();
    pb layer = {0}, conv1 = {0}, conv2 = {0}, filler1 = {0}, filler2 = {0}, net = {0};
    pb_string(&layer, 1, "conv");
    pb_string(&layer, 2, "Convolution");
    pb_int(&conv1, 1, 8);
    pb_int(&conv1, 4, 3);
    pb_string(&filler1, 1, "xavier");
    pb_message(&conv1, 7, &filler1);
    pb_message(&layer, 106, &conv1);
    pb_floats(&layer, 5, (float[]){1.0f}, 1, false); /* loss_weight */
    pb_string(&layer, 3, "x");                      /* a bottom between the pieces */
    pb_tag(&layer, 11, PB_LENGTH);                  /* propagate_down, packed, no element */
    pb_varint(&layer, 0);
    pb_int(&conv2, 4, 5);
    pb_int(&conv2, 2, 0); /* bias_term false */
    pb_floats(&filler2, 6, (float[]){2.0f}, 1, false); /* std */
    pb_message(&conv2, 7, &filler2);
    pb_int(&conv2, 1, 16);
    pb_message(&layer, 106, &conv2);
    pb_floats(&layer, 5, (float[]){2.0f, 3.0f}, 2, true);
    pb_tag(&layer, 5003, PB_GROUP_START);
    pb_int(&layer, 1, 7);
    pb_tag(&layer, 5003, PB_GROUP_END);
    pb_message(&net, 100, &layer);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    char *params = layer_text(model, 0, true, 0);
    CHECK(params != NULL);
    CHECK_MSG(strcmp(params, "{\"convolution_param\":{\"num_output\":16,\"bias_term\":false,\"kernel_size\":[3,5],"
                             "\"weight_filler\":{\"type\":\"xavier\",\"std\":2.0}},\"loss_weight\":[1.0,2.0,3.0],"
                             "\"unknown_fields\":[{\"field\":5003,\"wire_type\":3,\"count\":1,\"bytes\":8,"
                             "\"first_bytes\":\"dbb8020807dcb802\"}]}") == 0,
              "%s", params);
    free(params);
    params = layer_text(model, 0, true, CBLOB_JSON_DEFAULTS);
    static const char with_defaults[] = "{\"convolution_param\":{\"num_output\":16,\"bias_term\":false,\"kernel_size\":[3,5],"
                                        "\"group\":1,";
    CHECK_MSG(params != NULL && strncmp(params, with_defaults, strlen(with_defaults)) == 0 &&
                  strstr(params, "\"name\"") == NULL && strstr(params, "\"phase\"") == NULL,
              "%s", params ? params : "(failed)");
    free(params);
    for (int which = 0; which < 2; ++which) {
        char *whole = layer_text(model, 0, which == 1, CBLOB_JSON_DEFAULTS);
        gathered g = {0};
        CHECK_OK(which == 1 ? cblob_model_layer_params_json_write(model, 0, CBLOB_JSON_DEFAULTS, gather, &g)
                            : cblob_model_layer_json_write(model, 0, CBLOB_JSON_DEFAULTS, gather, &g));
        CHECK(whole != NULL && g.text != NULL && strcmp(whole, g.text) == 0);
        free(whole);
        free(g.text);
        gathered stop = {.stop = true};
        CHECK_STATUS(which == 1 ? cblob_model_layer_params_json_write(model, 0, 0, gather, &stop)
                                : cblob_model_layer_json_write(model, 0, 0, gather, &stop),
                     CBLOB_ERR_CANCELLED);
        CHECK(stop.calls == 1);
    }
    cblob_model_destroy(model);
    pb_free(&layer), pb_free(&conv1), pb_free(&conv2), pb_free(&filler1), pb_free(&filler2), pb_free(&net);
    cblob_context_destroy(ctx);
}

TEST(parameters_render_from_the_schema_and_unknown_fields_by_number)
{
    cblob_context *ctx = context_new();
    pb net = {0};
    structured_v2(&net);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    char *params = layer_text(model, 0, true, 0);
    CHECK(params != NULL);
    CHECK_MSG(strcmp(params, "{\"convolution_param\":{\"num_output\":8,\"kernel_size\":[3,5],\"weight_filler\":{\"type\":"
                             "\"xavier\"},\"unknown_fields\":[{\"field\":5000,\"wire_type\":0,\"count\":1,\"bytes\":1,\"first_bytes\":\"07\"}]},"
                             "\"unknown_fields\":[{\"field\":5001,\"wire_type\":2,\"count\":1,\"bytes\":4,\"first_bytes\":\"666f726b\"}]}") == 0,
              "%s", params);
    free(params);
    /* With defaults: fields the file leaves out, with Caffe's defaults. */
    params = layer_text(model, 0, true, CBLOB_JSON_DEFAULTS);
    CHECK(params != NULL && strstr(params, "\"bias_term\":true") != NULL && strstr(params, "\"group\":1") != NULL &&
          strstr(params, "\"std\":1.0") != NULL);
    free(params);
    char *layer = layer_text(model, 0, false, 0);
    CHECK(layer != NULL && strstr(layer, "\"bottoms\":[\"data\"]") != NULL && strstr(layer, "\"phase\":\"TEST\"") != NULL &&
          strstr(layer, "\"include\":[{\"phase\":\"TRAIN\",\"stage\":[\"a\",\"b\"]}]") != NULL &&
          strstr(layer, "{\"shape\":[2,3],\"count\":6,\"dtype\":\"float32\",\"has_diff\":false}") != NULL);
    free(layer);
    cblob_model_destroy(model);
    pb_free(&net);
    cblob_context_destroy(ctx);
}

TEST(v1_param_specs_pair_names_rates_and_decays)
{
    cblob_context *ctx = context_new();
    pb layer = {0}, net = {0};
    pb_string(&layer, 4, "fc");
    pb_int(&layer, 5, 14);
    pb_string(&layer, 2, "in");
    pb_string(&layer, 1001, "shared");
    pb_floats(&layer, 7, (float[]){1.0f, 2.0f}, 2, true);
    pb_floats(&layer, 8, (float[]){0.5f, 0.0f, 3.0f}, 3, false);
    pb_message(&net, 2, &layer);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    int64_t n = 0;
    const char *name = NULL;
    float lr = 0, decay = 0;
    CHECK_OK(cblob_model_layer_num_param_specs(model, 0, &n));
    CHECK(n == 3);
    CHECK_OK(cblob_model_layer_param_spec(model, 0, 1, &name, &lr, &decay));
    CHECK(name == NULL && lr == 2.0f && decay == 0.0f);
    CHECK_OK(cblob_model_layer_param_spec(model, 0, 2, &name, &lr, &decay));
    CHECK(lr == 1.0f && decay == 3.0f);
    CHECK_OK(cblob_model_layer_bottom(model, 0, 0, &name));
    CHECK(strcmp(name, "in") == 0);
    cblob_phase phase;
    CHECK_OK(cblob_model_layer_phase(model, 0, &phase));
    CHECK(phase == CBLOB_PHASE_NONE);
    cblob_model_destroy(model);
    pb_free(&layer), pb_free(&net);
    cblob_context_destroy(ctx);
}

TEST(blobs_read_without_handles_match_the_handles)
{
    cblob_context *ctx = context_new();
    pb net = {0};
    structured_v2(&net);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    int64_t dims[CBLOB_MAX_AXES];
    int32_t axes = 0;
    CHECK_OK(cblob_model_layer_blob_shape(model, 0, 0, CBLOB_MAX_AXES, dims, &axes));
    CHECK(axes == 2 && dims[0] == 2 && dims[1] == 3);
    float values[6] = {0};
    CHECK_OK(cblob_model_layer_blob_read(model, 0, 0, CBLOB_PART_DATA, 2, 3, values, sizeof values));
    CHECK(values[0] == 3 && values[2] == 5);
    CHECK_OK(cblob_model_layer_blob_read(model, 0, 1, CBLOB_PART_DATA, 0, 2, values, sizeof values));
    CHECK(values[0] == 0.5f && values[1] == -0.5f);
    CHECK_STATUS(cblob_model_layer_blob_read(model, 0, 1, CBLOB_PART_DATA, 1, 2, values, sizeof values),
                 CBLOB_ERR_OUT_OF_RANGE);
    int32_t has_diff = -1;
    CHECK_OK(cblob_model_layer_blob_has_diff(model, 0, 0, &has_diff));
    CHECK(has_diff == 0);
    cblob_model_destroy(model);
    pb_free(&net);
    cblob_context_destroy(ctx);
}

/* ---- exports ---------------------------------------------------------------------------------- */

typedef cblob_status (*export_fn)(const cblob_model *, int32_t, uint8_t *, size_t, size_t *);

static uint8_t *exported(const cblob_model *model, export_fn fn, int32_t flags, size_t *size)
{
    size_t needed = 0;
    if (fn(model, flags, NULL, 0, &needed) != CBLOB_OK)
        return NULL;
    uint8_t *bytes = malloc(needed + 1);
    if (bytes == NULL || fn(model, flags, bytes, needed, size) != CBLOB_OK) {
        free(bytes);
        return NULL;
    }
    return bytes;
}

/* A model of every dtype, a repeated layer name and a diff. */
static cblob_model *mixed_model(cblob_context *ctx)
{
    cblob_model *model = NULL;
    cblob_blob *a = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){3, 2}, 1, true);
    cblob_blob *b = ft_blob(ctx, CBLOB_DTYPE_FLOAT64, 1, (int64_t[]){5}, 2, false);
    cblob_blob *c = ft_blob(ctx, CBLOB_DTYPE_INT32, 3, (int64_t[]){1, 2, 2}, 3, false);
    cblob_blob *d = ft_blob(ctx, CBLOB_DTYPE_UINT32, 0, NULL, 4, false);
    cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "mixed", &model);
    cblob_model_add_layer(model, "conv/1", "Convolution", (cblob_blob *[]){a, b}, 2);
    cblob_model_add_layer(model, "relu", "ReLU", NULL, 0);
    cblob_model_add_layer(model, "conv/1", "Scale", (cblob_blob *[]){c, d}, 2);
    cblob_blob_destroy(a), cblob_blob_destroy(b), cblob_blob_destroy(c), cblob_blob_destroy(d);
    return model;
}

static bool same_blobs(cblob_model *model, int64_t layer, cblob_model *read, int64_t read_layer, bool diff)
{
    int64_t n = 0, m = 0;
    if (cblob_model_layer_num_blobs(model, layer, &n) != CBLOB_OK ||
        cblob_model_layer_num_blobs(read, read_layer, &m) != CBLOB_OK || n != m)
        return false;
    bool same = true;
    for (int64_t j = 0; j < n && same; ++j) {
        cblob_blob *x = NULL, *y = NULL;
        cblob_dtype dx, dy;
        same = cblob_model_layer_blob(model, layer, j, &x) == CBLOB_OK &&
               cblob_model_layer_blob(read, read_layer, j, &y) == CBLOB_OK && cblob_blob_dtype(x, &dx) == CBLOB_OK &&
               cblob_blob_dtype(y, &dy) == CBLOB_OK && dx == dy && ft_same_values(x, y, CBLOB_PART_DATA) &&
               (!diff || ft_same_values(x, y, CBLOB_PART_DIFF));
        cblob_blob_destroy(x);
        cblob_blob_destroy(y);
    }
    return same;
}

TEST(safetensors_and_npz_read_back_what_they_export)
{
    cblob_context *ctx = context_new();
    cblob_model *model = mixed_model(ctx);
    for (int format = 0; format < 2; ++format) {
        size_t size = 0;
        uint8_t *bytes = format == 0 ? exported(model, cblob_model_to_safetensors, CBLOB_EXPORT_DIFF, &size)
                                     : exported(model, cblob_model_to_npz, CBLOB_EXPORT_DIFF, &size);
        CHECK(bytes != NULL);
        /* The same model gives the same bytes (before anything reads the blobs' diffs). */
        size_t again_size = 0;
        uint8_t *again = format == 0 ? exported(model, cblob_model_to_safetensors, CBLOB_EXPORT_DIFF, &again_size)
                                     : exported(model, cblob_model_to_npz, CBLOB_EXPORT_DIFF, &again_size);
        CHECK_MSG(again != NULL && again_size == size && memcmp(again, bytes, size) == 0, "format %d: %zu vs %zu", format, size, again_size);
        cblob_model *read = NULL;
        CHECK_OK(format == 0 ? cblob_model_open_safetensors(ctx, bytes, size, &read)
                             : cblob_model_open_npz(ctx, bytes, size, &read));
        int64_t layers = 0, found = -1;
        const char *name = NULL, *type = NULL;
        CHECK_OK(cblob_model_num_layers(read, &layers));
        CHECK(layers == 2); /* relu has no blobs */
        CHECK_OK(cblob_model_layer_name(read, 1, &name));
        CHECK_MSG(strcmp(name, "conv/1@2") == 0, "%s", name); /* a repeated name: the layer's index */
        CHECK_OK(cblob_model_layer_type(read, 1, &type));
        CHECK(strcmp(type, format == 0 ? "Scale" : "") == 0);
        CHECK(same_blobs(model, 0, read, 0, true));
        CHECK(same_blobs(model, 2, read, 1, false));
        /* Surgery with what was read: the repeated name finds its layer. */
        CHECK_OK(cblob_model_replace_blobs(model, read));
        CHECK_OK(cblob_model_find_layer(read, "conv/1@2", &found));
        CHECK(found == 1);
        free(again);
        free(bytes);
        cblob_model_destroy(read);
    }
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

/* Sets every value of a blob of n elements through its host pointer (any dtype). */
static bool set_values(cblob_blob *blob, cblob_dtype dtype, int64_t n, double value)
{
    void *values = NULL;
    if (cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &values) != CBLOB_OK)
        return false;
    for (int64_t i = 0; i < n; ++i) {
        if (dtype == CBLOB_DTYPE_FLOAT32)
            ((float *)values)[i] = (float)value;
        else if (dtype == CBLOB_DTYPE_FLOAT64)
            ((double *)values)[i] = value;
        else
            ((int32_t *)values)[i] = (int32_t)value;
    }
    return true;
}

/* Weights converted to the model's dtype follow a .npy's rule: a value the dtype cannot hold is
 * refused, naming it, and nothing changes (1.1 made 1e300 inf and 16777217 16777216, rc 0). */
TEST(surgery_refuses_values_the_models_dtype_cannot_hold_and_changes_nothing)
{
    cblob_context *ctx = context_new();
    cblob_blob *a = NULL, *b = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){3}, &a));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 1, (int64_t[]){2}, &b));
    CHECK(set_values(a, CBLOB_DTYPE_FLOAT32, 3, 1.5));
    CHECK(set_values(b, CBLOB_DTYPE_INT32, 2, 7));
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, NULL, &model));
    CHECK_OK(cblob_model_add_layer(model, "first", "", (cblob_blob *[]){a}, 1));
    CHECK_OK(cblob_model_add_layer(model, "second", "", (cblob_blob *[]){b}, 1));
    size_t size = 0;
    CHECK_OK(cblob_model_to_proto(model, 1, NULL, 0, &size));
    uint8_t *before = malloc(size), *after = malloc(size);
    CHECK(before != NULL && after != NULL);
    CHECK_OK(cblob_model_to_proto(model, 1, before, size, &size));
    static const struct {
        cblob_dtype dtype;
        double value;
        const char *says;
    } refused[] = {
        {CBLOB_DTYPE_FLOAT64, 1e300, "value 1.0000000000000001e+300 at index 2 does not fit the model's float32"},
        {CBLOB_DTYPE_INT32, 16777217, "value 16777217 at index 2 does not fit the model's float32 exactly"},
        {CBLOB_DTYPE_FLOAT64, 2.5, "\"second\" blob 0: value 2.5 at index 1 does not fit the model's int32"},
        {CBLOB_DTYPE_FLOAT64, -1e10, "\"second\" blob 0: value -10000000000 at index 1 does not fit"},
    };
    for (size_t c = 0; c < sizeof refused / sizeof refused[0]; ++c) {
        const bool second = strstr(refused[c].says, "second") != NULL;
        cblob_blob *ok = NULL, *bad = NULL;
        /* The first layer's values fit; the misfit is in the last value of the layer named. */
        CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT64, 1, (int64_t[]){3}, &ok));
        CHECK_OK(cblob_blob_fill(ok, CBLOB_PART_DATA, 0.25));
        CHECK_OK(cblob_blob_create(ctx, refused[c].dtype, 1, (int64_t[]){second ? 2 : 3}, &bad));
        CHECK(set_values(bad, refused[c].dtype, second ? 2 : 3, 1));
        void *values = NULL;
        CHECK_OK(cblob_blob_mutable_cpu_ptr(bad, CBLOB_PART_DATA, &values));
        if (refused[c].dtype == CBLOB_DTYPE_FLOAT64)
            ((double *)values)[second ? 1 : 2] = refused[c].value;
        else
            ((int32_t *)values)[2] = (int32_t)refused[c].value;
        cblob_model *weights = NULL;
        CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, NULL, &weights));
        CHECK_OK(cblob_model_add_layer(weights, "first", "", (cblob_blob *[]){second ? ok : bad}, 1));
        if (second)
            CHECK_OK(cblob_model_add_layer(weights, "second", "", (cblob_blob *[]){bad}, 1));
        CHECK_ERROR(cblob_model_replace_blobs(model, weights), CBLOB_ERR_DTYPE);
        CHECK_MSG(strstr(cblob_last_error_message(), refused[c].says) != NULL, "case %zu: %s", c,
                  cblob_last_error_message());
        CHECK_OK(cblob_model_to_proto(model, 1, after, size, &size));
        CHECK_MSG(memcmp(before, after, size) == 0, "case %zu: the model changed", c); /* the first layer too */
        cblob_model_destroy(weights);
        cblob_blob_destroy(ok), cblob_blob_destroy(bad);
    }
    /* Values that fit are converted: float64 rounded to float32, integral float64 to int32. */
    cblob_blob *rounded = NULL, *integral = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT64, 1, (int64_t[]){3}, &rounded));
    CHECK_OK(cblob_blob_fill(rounded, CBLOB_PART_DATA, 0.1));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT64, 1, (int64_t[]){2}, &integral));
    CHECK_OK(cblob_blob_fill(integral, CBLOB_PART_DATA, -3));
    cblob_model *weights = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, NULL, &weights));
    CHECK_OK(cblob_model_add_layer(weights, "first", "", (cblob_blob *[]){rounded}, 1));
    CHECK_OK(cblob_model_add_layer(weights, "second", "", (cblob_blob *[]){integral}, 1));
    CHECK_OK(cblob_model_replace_blobs(model, weights));
    cblob_blob *held = NULL;
    const void *got = NULL;
    CHECK_OK(cblob_model_layer_blob(model, 0, 0, &held));
    CHECK_OK(cblob_blob_cpu_ptr(held, CBLOB_PART_DATA, &got));
    CHECK(((const float *)got)[2] == 0.1f);
    cblob_blob_destroy(held);
    CHECK_OK(cblob_model_layer_blob(model, 1, 0, &held));
    CHECK_OK(cblob_blob_cpu_ptr(held, CBLOB_PART_DATA, &got));
    CHECK(((const int32_t *)got)[1] == -3);
    cblob_blob_destroy(held);
    cblob_model_destroy(weights);
    cblob_blob_destroy(rounded), cblob_blob_destroy(integral);
    free(before), free(after);
    cblob_blob_destroy(a), cblob_blob_destroy(b);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

TEST(torch_names_scale_batch_norm_statistics_and_list_what_they_cannot_name)
{
    cblob_context *ctx = context_new();
    cblob_blob *mean = NULL, *var = NULL, *factor = NULL, *other = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){2}, &mean));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){2}, &var));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){1}, &factor));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){1}, &other));
    CHECK_OK(cblob_blob_fill(mean, CBLOB_PART_DATA, 10.0));
    CHECK_OK(cblob_blob_fill(var, CBLOB_PART_DATA, 4.0));
    CHECK_OK(cblob_blob_fill(factor, CBLOB_PART_DATA, 2.0));
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, NULL, &model));
    CHECK_OK(cblob_model_add_layer(model, "bn", "BatchNorm", (cblob_blob *[]){mean, var, factor}, 3));
    CHECK_OK(cblob_model_add_layer(model, "odd", "Custom", &other, 1));
    int64_t unmapped[4], count = 0;
    CHECK_OK(cblob_model_torch_unmapped(model, unmapped, 4, &count));
    CHECK(count == 1 && unmapped[0] == 1);
    size_t size = 0;
    uint8_t *bytes = exported(model, cblob_model_to_safetensors, CBLOB_EXPORT_TORCH_NAMES, &size);
    CHECK(bytes != NULL && strstr((const char *)bytes + 8, "\"bn.running_mean\"") != NULL &&
          strstr((const char *)bytes + 8, "\"odd.0\"") != NULL && strstr((const char *)bytes + 8, "bn.2") == NULL);
    cblob_model *read = NULL;
    CHECK_OK(cblob_model_open_safetensors(ctx, bytes, size, &read));
    float values[2] = {0};
    CHECK_OK(cblob_model_layer_blob_read(read, 0, 0, CBLOB_PART_DATA, 0, 2, values, sizeof values));
    CHECK(values[0] == 5.0f && values[1] == 5.0f); /* 10 / 2 */
    CHECK_OK(cblob_model_layer_blob_read(read, 0, 2, CBLOB_PART_DATA, 0, 1, values, sizeof values));
    CHECK(values[0] == 1.0f); /* the statistics are plain values now */
    free(bytes);
    cblob_model_destroy(read);
    cblob_model_destroy(model);
    cblob_blob_destroy(mean), cblob_blob_destroy(var), cblob_blob_destroy(factor), cblob_blob_destroy(other);
    cblob_context_destroy(ctx);
}

TEST(surgery_lists_every_mismatch_and_changes_nothing)
{
    cblob_context *ctx = context_new();
    pb net = {0};
    structured_v2(&net);
    cblob_model *model = NULL, *weights = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    cblob_blob *wrong = NULL, *right = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT64, 1, (int64_t[]){6}, &wrong));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT64, 1, (int64_t[]){2}, &right));
    CHECK_OK(cblob_blob_fill(right, CBLOB_PART_DATA, 0.25));
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, NULL, &weights));
    CHECK_OK(cblob_model_add_layer(weights, "conv1", "", (cblob_blob *[]){wrong, right, right}, 3));
    CHECK_OK(cblob_model_add_layer(weights, "missing", "", NULL, 0));
    CHECK_ERROR(cblob_model_replace_blobs(model, weights), CBLOB_ERR_SHAPE);
    const char *message = cblob_last_error_message();
    CHECK_MSG(strstr(message, "3 mismatches") != NULL && strstr(message, "conv1 blob 0") != NULL &&
                  strstr(message, "conv1 blob 2") != NULL && strstr(message, "\"missing\"") != NULL,
              "%s", message);
    size_t size = 0;
    uint8_t *bytes = NULL;
    CHECK_OK(cblob_model_to_proto(model, 1, NULL, 0, &size));
    bytes = malloc(size);
    CHECK_OK(cblob_model_to_proto(model, 1, bytes, size, &size));
    CHECK(size == net.size && memcmp(bytes, net.data, size) == 0); /* nothing changed */
    free(bytes);
    cblob_model_destroy(weights);
    /* The right shape only: its values (converted to float32) replace the bias's, nothing else moves. */
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, NULL, &weights));
    cblob_blob *first = NULL;
    CHECK_OK(cblob_model_layer_blob(model, 0, 0, &first));
    CHECK_OK(cblob_model_add_layer(weights, "conv1", "", (cblob_blob *[]){first, right}, 2));
    CHECK_OK(cblob_model_replace_blobs(model, weights));
    CHECK_OK(cblob_model_to_proto(model, 1, NULL, 0, &size));
    bytes = malloc(size);
    CHECK_OK(cblob_model_to_proto(model, 1, bytes, size, &size));
    CHECK(size == net.size);
    size_t differing = 0;
    for (size_t i = 0; i < size; ++i)
        differing += bytes[i] != net.data[i];
    CHECK(differing > 0 && differing <= 8); /* the two float values of the bias */
    free(bytes);
    cblob_blob_destroy(first);
    cblob_blob_destroy(wrong), cblob_blob_destroy(right);
    cblob_model_destroy(weights);
    cblob_model_destroy(model);
    pb_free(&net);
    cblob_context_destroy(ctx);
}

TEST(readers_refuse_what_is_not_theirs_naming_it)
{
    cblob_context *ctx = context_new();
    cblob_model *model = NULL;
    static const char header[] = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,12]}}";
    uint8_t bytes[256] = {sizeof header - 1};
    memcpy(bytes + 8, header, sizeof header - 1);
    CHECK_ERROR(cblob_model_open_safetensors(ctx, bytes, 8 + sizeof header - 1 + 12, &model), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "\"x\"") != NULL);
    /* One blob twice (by index and by a PyTorch name): refused, nothing leaked. */
    static const char twice[] = "{\"a.0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                "\"a.weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    memset(bytes, 0, sizeof bytes);
    bytes[0] = sizeof twice - 1;
    memcpy(bytes + 8, twice, sizeof twice - 1);
    CHECK_ERROR(cblob_model_open_safetensors(ctx, bytes, 8 + sizeof twice - 1 + 8, &model), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "blob 0 twice") != NULL);
    CHECK_ERROR(cblob_model_open_npz(ctx, (const uint8_t *)"PK\3\4 no zip", 12, &model), CBLOB_ERR_PARSE);
    CHECK(model == NULL);
    cblob_context_destroy(ctx);
}

/* safetensors bytes: the 8-byte length, the header, then `data` bytes (zeros) of data. */
static uint8_t *safetensors_bytes(const char *header, size_t data, size_t *size)
{
    const size_t length = strlen(header);
    uint8_t *bytes = calloc(1, 8 + length + data);
    if (bytes == NULL)
        return NULL;
    for (int i = 0; i < 8; ++i)
        bytes[i] = (uint8_t)((uint64_t)length >> (8 * i));
    memcpy(bytes + 8, header, length);
    *size = 8 + length + data;
    return bytes;
}

/* The format forbids data no tensor covers and tensors that share bytes (the reference reader
 * refuses both); 1.1 read such files. */
TEST(safetensors_reader_refuses_overlaps_holes_and_trailing_bytes)
{
    cblob_context *ctx = context_new();
    static const struct {
        const char *header;
        size_t data;
        cblob_status expected;
        const char *says;
    } cases[] = {
        {"{\"a.0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b.0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, CBLOB_OK, NULL},
        /* both tensors on one value */
        {"{\"a.0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b.0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, CBLOB_ERR_PARSE, "share data bytes 0 to 4"},
        /* one tensor's last value is the next one's first */
        {"{\"a.0\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b.0\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, CBLOB_ERR_PARSE, "share data bytes 4 to 8"},
        /* 4 bytes between the tensors */
        {"{\"a.0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b.0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, CBLOB_ERR_PARSE,
         "bytes 4 to 8 belong to no tensor"},
        /* 4 bytes after the last tensor (room for a file of another kind) */
        {"{\"a.0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, CBLOB_ERR_PARSE,
         "4 bytes after the last tensor's data"},
        /* a tensor cblob skips (num_batches_tracked) covers its bytes too */
        {"{\"bn.running_mean\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"bn.running_var\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
         "\"bn.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}}", 16, CBLOB_OK, NULL},
        {"{\"bn.running_mean\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"bn.running_var\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
         "\"bn.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]}}", 8, CBLOB_ERR_PARSE,
         "share data bytes 0 to 4"},
        /* nothing but the header: no data, no tensor */
        {"{}", 0, CBLOB_OK, NULL},
        {"{}", 1, CBLOB_ERR_PARSE, "1 bytes after the last tensor's data"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        size_t size = 0;
        uint8_t *bytes = safetensors_bytes(cases[i].header, cases[i].data, &size);
        CHECK(bytes != NULL);
        cblob_model *model = NULL;
        const cblob_status got = cblob_model_open_safetensors(ctx, bytes, size, &model);
        free(bytes);
        CHECK_MSG(got == cases[i].expected, "case %zu: %s, expected %s (%s)", i, cblob_status_name(got),
                  cblob_status_name(cases[i].expected), cblob_last_error_message());
        if (got == CBLOB_OK) {
            cblob_model_destroy(model);
            continue;
        }
        CHECK(model == NULL);
        CHECK_MSG(strstr(cblob_last_error_message(), cases[i].says) != NULL, "case %zu: \"%s\" does not say \"%s\"", i,
                  cblob_last_error_message(), cases[i].says);
    }
    cblob_context_destroy(ctx);
}

/* The writer refuses a header its own reader (and the reference one) would refuse, over 100 MB:
 * a layer whose 8 MiB name is control characters, each escaped to 6 bytes in its key and to 7 in
 * "layer_types" (an escaped string inside a string): about 109 MB of header. Written to a file
 * only (a buffer's export is the same code, and each export of it takes seconds). */
TEST(safetensors_writer_refuses_a_header_readers_refuse)
{
    cblob_context *ctx = context_new();
    cblob_model *model = NULL;
    cblob_blob *blob = NULL;
    const int64_t one[1] = {1};
    CHECK_OK(cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "big", &model));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, one, &blob));
    enum { NAME = 8 << 20 };
    char *name = malloc(NAME + 1);
    CHECK(name != NULL);
    memset(name, 0x01, NAME);
    name[NAME] = '\0';
    CHECK_OK(cblob_model_add_layer(model, name, "Scale", &blob, 1));
    free(name);
    char folder[] = "/tmp/cblob-big-header-XXXXXX", path[64];
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/big.safetensors", folder);
    CHECK_ERROR(cblob_model_to_safetensors_file(model, 0, path), CBLOB_ERR_OVERFLOW);
    CHECK(strstr(cblob_last_error_message(), "more than the 100000000 a reader takes") != NULL);
    CHECK_MSG(access(path, F_OK) != 0, "%s was written", path);
    CHECK(rmdir(folder) == 0); /* nothing left in it either */
    cblob_blob_destroy(blob);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}
/* ---- the net's definition as text (cblob_model_to_prototxt) ---------------------------------- */

static char *prototxt(const cblob_model *model)
{
    size_t length = 0;
    if (cblob_model_to_prototxt(model, NULL, 0, &length) != CBLOB_OK)
        return NULL;
    char *text = malloc(length + 1);
    if (text != NULL && cblob_model_to_prototxt(model, text, length + 1, &length) != CBLOB_OK) {
        free(text);
        text = NULL;
    }
    return text;
}

static void pb_fixed32(pb *b, uint32_t field, uint32_t value)
{
    pb_tag(b, field, PB_FIXED32);
    pb_raw(b, &value, 4);
}

/* Every rule of protobuf's TextFormat::Print the writer follows, in one net: fields in number
 * order (the net's and a layer's), blobs left out, C escapes, floats with 6 digits or else 9,
 * enums by name, a message given twice merged, a scalar given twice the last, an enum number its
 * enum does not name and a field of the wrong wire type kept as unknown fields, and unknown fields
 * of every wire type by number after the known ones. */
TEST(prototxt_prints_as_protobuf_text_format)
{
    cblob_context *ctx = context_new();
    pb net = {0}, layer = {0}, spec = {0}, blob = {0}, conv = {0}, conv2 = {0}, filler = {0}, drop = {0}, pool = {0},
       power = {0}, relu = {0}, nested = {0};
    pb_string(&layer, 1, "conv1");
    pb_string(&layer, 2, "Convolution");
    pb_string(&layer, 3, "data");
    pb_string(&layer, 4, "conv1");
    pb_floats(&layer, 5, (float[]){0.1f, 1.0f / 3}, 2, true);
    pb_int(&layer, 10, 1);
    pb_floats(&spec, 3, (float[]){2.0f}, 1, false);
    pb_message(&layer, 6, &spec);
    pb_shape(&blob, (int64_t[]){2}, 1, true);
    pb_floats(&blob, 5, (float[]){1, 2}, 2, true);
    pb_message(&layer, 7, &blob);
    pb_int(&conv, 1, 96);
    pb_fixed32(&conv, 1, 5);
    pb_tag(&conv, 4, PB_LENGTH);
    pb_varint(&conv, 2);
    pb_varint(&conv, 11);
    pb_varint(&conv, 3);
    pb_string(&filler, 1, "xavier");
    pb_floats(&filler, 6, (float[]){1e-5f}, 1, false);
    pb_message(&conv, 7, &filler);
    pb_message(&layer, 106, &conv);
    pb_int(&pool, 1, 1);
    pb_int(&pool, 1, 9);
    pb_message(&layer, 121, &pool);
    pb_floats(&drop, 1, (float[]){0.25f}, 1, false);
    pb_floats(&drop, 1, (float[]){INFINITY}, 1, false);
    pb_message(&layer, 108, &drop);
    pb_int(&conv2, 5, 2);
    pb_message(&layer, 106, &conv2);
    pb_floats(&power, 1, (float[]){16777216.0f}, 1, false);
    pb_floats(&power, 2, (float[]){-INFINITY}, 1, false);
    pb_message(&layer, 122, &power);
    pb_floats(&relu, 1, (float[]){-0.0f}, 1, false);
    pb_message(&layer, 123, &relu);
    pb_int(&layer, 5001, 300);
    pb_fixed32(&layer, 5002, 0xdeadbeefu);
    pb_tag(&layer, 5003, PB_FIXED64);
    const uint64_t stamp = 0x0123456789abcdefu;
    pb_raw(&layer, &stamp, 8);
    pb_string(&layer, 5004, "fork!");
    pb_int(&nested, 1, 150);
    pb_string(&nested, 2, "!");
    pb_message(&layer, 5005, &nested);
    pb_tag(&layer, 5006, PB_GROUP_START);
    pb_int(&layer, 1, 7);
    pb_tag(&layer, 5006, PB_GROUP_END);
    pb_bytes(&layer, 5007, "", 0);
    pb_string(&net, 1, "te\"st'\\\n\t\x01\xc3\xa9");
    pb_message(&net, 100, &layer);
    pb_int(&net, 4, 1);
    pb_string(&net, 3, "data");
    pb_int(&net, 4, 3);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    char *text = prototxt(model);
    CHECK(text != NULL);
    static const char expected[] = "name: \"te\\\"st\\'\\\\\\n\\t\\001\\303\\251\"\n"
                                   "input: \"data\"\n"
                                   "input_dim: 1\n"
                                   "input_dim: 3\n"
                                   "layer {\n"
                                   "  name: \"conv1\"\n"
                                   "  type: \"Convolution\"\n"
                                   "  bottom: \"data\"\n"
                                   "  top: \"conv1\"\n"
                                   "  loss_weight: 0.1\n"
                                   "  loss_weight: 0.333333343\n"
                                   "  param {\n"
                                   "    lr_mult: 2\n"
                                   "  }\n"
                                   "  phase: TEST\n"
                                   "  convolution_param {\n"
                                   "    num_output: 96\n"
                                   "    kernel_size: 11\n"
                                   "    kernel_size: 3\n"
                                   "    group: 2\n"
                                   "    weight_filler {\n"
                                   "      type: \"xavier\"\n"
                                   "      std: 1e-05\n"
                                   "    }\n"
                                   "    1: 0x00000005\n"
                                   "  }\n"
                                   "  dropout_param {\n"
                                   "    dropout_ratio: inf\n"
                                   "  }\n"
                                   "  pooling_param {\n"
                                   "    pool: AVE\n"
                                   "    1: 9\n"
                                   "  }\n"
                                   "  power_param {\n"
                                   "    power: 16777216\n"
                                   "    scale: -inf\n"
                                   "  }\n"
                                   "  relu_param {\n"
                                   "    negative_slope: -0\n"
                                   "  }\n"
                                   "  5001: 300\n"
                                   "  5002: 0xdeadbeef\n"
                                   "  5003: 0x0123456789abcdef\n"
                                   "  5004: \"fork!\"\n"
                                   "  5005 {\n"
                                   "    1: 150\n"
                                   "    2: \"!\"\n"
                                   "  }\n"
                                   "  5006 {\n"
                                   "    1: 7\n"
                                   "  }\n"
                                   "  5007: \"\"\n"
                                   "}\n";
    CHECK_MSG(text != NULL && strcmp(text, expected) == 0, "%s", text != NULL ? text : "(none)");
    free(text);
    /* Read back (unknown fields by number, the group as a nested message), it writes the same text. */
    cblob_model *again = NULL;
    CHECK_OK(cblob_model_open_prototxt(ctx, (const uint8_t *)expected, sizeof expected - 1, &again));
    text = prototxt(again);
    CHECK_MSG(text != NULL && strcmp(text, expected) == 0, "%s", text != NULL ? text : "(none)");
    free(text);
    cblob_model_destroy(again);
    /* The text convention: no room for the NUL is too small, and says the length. */
    size_t length = 0;
    char small[16];
    CHECK_OK(cblob_model_to_prototxt(model, NULL, 0, &length));
    CHECK(length == sizeof expected - 1);
    CHECK_ERROR(cblob_model_to_prototxt(model, small, sizeof small, &length), CBLOB_ERR_OUT_OF_RANGE);
    cblob_model_destroy(model);
    pb_free(&net), pb_free(&layer), pb_free(&spec), pb_free(&blob), pb_free(&conv), pb_free(&conv2);
    pb_free(&filler), pb_free(&drop), pb_free(&pool), pb_free(&power), pb_free(&relu), pb_free(&nested);
    cblob_context_destroy(ctx);
}

/* A V1 net keeps its format: `layers`, the type by its LayerType name, blobs_lr; a nested message
 * that does not parse has no text (CBLOB_ERR_PARSE), as Caffe could not read the binary either. */
TEST(prototxt_of_a_v1_net_and_of_a_broken_parameter)
{
    cblob_context *ctx = context_new();
    pb net = {0}, layer = {0}, blob = {0}, ip = {0};
    pb_string(&layer, 2, "data");
    pb_string(&layer, 3, "ip");
    pb_string(&layer, 4, "ip");
    pb_int(&layer, 5, 14);
    pb_shape(&blob, (int64_t[]){3}, 1, true);
    pb_floats(&blob, 5, (float[]){1, 2, 3}, 3, true);
    pb_message(&layer, 6, &blob);
    pb_floats(&layer, 7, (float[]){1, 2}, 2, false);
    pb_int(&ip, 1, 10);
    pb_message(&layer, 17, &ip);
    pb_string(&net, 1, "v1");
    pb_message(&net, 2, &layer);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    char *text = prototxt(model);
    static const char expected[] = "name: \"v1\"\n"
                                   "layers {\n"
                                   "  bottom: \"data\"\n"
                                   "  top: \"ip\"\n"
                                   "  name: \"ip\"\n"
                                   "  type: INNER_PRODUCT\n"
                                   "  blobs_lr: 1\n"
                                   "  blobs_lr: 2\n"
                                   "  inner_product_param {\n"
                                   "    num_output: 10\n"
                                   "  }\n"
                                   "}\n";
    CHECK_MSG(text != NULL && strcmp(text, expected) == 0, "%s", text != NULL ? text : "(none)");
    free(text);
    cblob_model_destroy(model);
    model = NULL;
    /* inner_product_param whose bytes are no message (a length running past its end). */
    pb_free(&net), pb_free(&layer);
    pb_string(&layer, 4, "ip");
    pb_bytes(&layer, 17, "\x0a\x05xy", 4);
    pb_message(&net, 2, &layer);
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    size_t length = 0;
    CHECK_ERROR(cblob_model_to_prototxt(model, NULL, 0, &length), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "InnerProductParameter") != NULL);
    cblob_model_destroy(model);
    pb_free(&net), pb_free(&layer), pb_free(&blob), pb_free(&ip);
    cblob_context_destroy(ctx);
}

/* Text as people write it (comments, lists, < >, single quotes, escapes, joined strings, hex and
 * octal integers, exponents, a blob given in the text, the legacy `layers` with a LayerType name)
 * reads into the net it says; the writer writes it back in the canonical form. */
TEST(prototxt_reads_what_caffe_reads)
{
    cblob_context *ctx = context_new();
    static const char text[] = "# a deploy file\n"
                               "name: 'Le' \"Net\\t\\x41\\101\"  # joined\n"
                               "input: \"data\" input_dim: [1, 0x3, 010, 8]\n"
                               "layer <\n"
                               "  name: \"ip\"; type: \"InnerProduct\", bottom: \"data\" top: \"ip\"\n"
                               "  param { lr_mult: 1e1 } param: { decay_mult: -2.5E-1f }\n"
                               "  inner_product_param { num_output: 2 bias_term: False weight_filler { std: .5 } }\n"
                               "  blobs { shape { dim: [2, 3] } data: [1, 2, 3, 4, 5, 6] }\n"
                               "  phase: TEST\n"
                               ">\n";
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open_prototxt(ctx, (const uint8_t *)text, sizeof text - 1, &model));
    int64_t count = 0;
    CHECK_OK(cblob_model_num_layers(model, &count));
    CHECK(count == 1);
    CHECK_OK(cblob_model_layer_num_blobs(model, 0, &count));
    CHECK(count == 1);
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_model_layer_blob(model, 0, 0, &blob));
    const float *values = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values));
    CHECK(values != NULL && values[0] == 1.0f && values[5] == 6.0f);
    cblob_blob_destroy(blob);
    char *written = prototxt(model);
    static const char expected[] = "name: \"LeNet\\tAA\"\n"
                                   "input: \"data\"\n"
                                   "input_dim: 1\n"
                                   "input_dim: 3\n"
                                   "input_dim: 8\n"
                                   "input_dim: 8\n"
                                   "layer {\n"
                                   "  name: \"ip\"\n"
                                   "  type: \"InnerProduct\"\n"
                                   "  bottom: \"data\"\n"
                                   "  top: \"ip\"\n"
                                   "  param {\n"
                                   "    lr_mult: 10\n"
                                   "  }\n"
                                   "  param {\n"
                                   "    decay_mult: -0.25\n"
                                   "  }\n"
                                   "  phase: TEST\n"
                                   "  inner_product_param {\n"
                                   "    num_output: 2\n"
                                   "    bias_term: false\n"
                                   "    weight_filler {\n"
                                   "      std: 0.5\n"
                                   "    }\n"
                                   "  }\n"
                                   "}\n";
    CHECK_MSG(written != NULL && strcmp(written, expected) == 0, "%s", written != NULL ? written : "(none)");
    free(written);
    cblob_model_destroy(model);
    model = NULL;
    static const char v1[] = "layers { name: \"conv\" type: CONVOLUTION bottom: \"data\" top: \"conv\" blobs_lr: 1 "
                             "convolution_param { num_output: 4 kernel_size: 3 } }";
    CHECK_OK(cblob_model_open_prototxt(ctx, (const uint8_t *)v1, sizeof v1 - 1, &model));
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    const char *type = NULL;
    CHECK_OK(cblob_model_format(model, &format));
    CHECK_OK(cblob_model_layer_type(model, 0, &type));
    CHECK(format == CBLOB_NET_FORMAT_V1 && strcmp(type, "CONVOLUTION") == 0);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

/* Errors name the line and column, and the model is not made. */
TEST(prototxt_errors_name_line_and_column)
{
    cblob_context *ctx = context_new();
    static const struct {
        const char *text, *says;
    } cases[] = {
        {"name: \"a\"\nlayer {\n  nme: \"x\"\n}\n", "the text:3:3: message caffe.LayerParameter has no field named \"nme\""},
        {"name: \"a\"\nname: \"b\"\n", "the text:2:1: name is given twice"},
        {"layer {\n  name: \"a\"\n", "the text:3:1: the text ends before the message's }"},
        {"layer { top: \"a }", "the text:1:14: a string that does not end on its line"},
        {"layer { phase: TRIAN }", "the text:1:16: unknown value \"TRIAN\" of enum caffe.Phase"},
        {"layer { loss_weight: one }", "the text:1:22: loss_weight takes a number"},
        {"layer { convolution_param { num_output: 4294967296 } }", "out of the range of num_output"},
        {"layer { convolution_param { bias_term: yes } }", "bias_term takes true or false"},
        {"layer { name \"a\" }", "the text:1:14: expected : after name"},
        {"layer { name: \"\\q\" }", "the text:1:16: invalid escape \\q"},
        {"net: \"x.prototxt\"", "no field named \"net\": not a net's text (a solver's?)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        cblob_model *model = NULL;
        CHECK_STATUS(cblob_model_open_prototxt(ctx, (const uint8_t *)cases[i].text, strlen(cases[i].text), &model),
                     CBLOB_ERR_PARSE);
        CHECK_MSG(model == NULL && strstr(cblob_last_error_message(), cases[i].says) != NULL, "case %zu: %s", i,
                  cblob_last_error_message());
    }
    cblob_context_destroy(ctx);
}

/* SSD-Caffe's annotated_data_param (200) and multibox_loss_param (201), and BVLC's exp_param (111)
 * and log_param (134), whose field `base` protobuf-c's C cannot name as it is: by name in the JSON
 * and in the prototxt, and read back by name (they were unknown fields by number before). */
TEST(ssd_and_exp_log_parameters_render_by_name)
{
    cblob_context *ctx = context_new();
    pb sampler = {0}, batch = {0}, data = {0}, nms = {0}, loss = {0}, exp = {0}, log = {0}, layer = {0}, net = {0};
    pb_fixed32(&sampler, 1, 0x3e99999a); /* min_scale 0.3 */
    pb_message(&batch, 2, &sampler);
    pb_int(&batch, 5, 50); /* max_trials */
    pb_message(&data, 1, &batch);
    pb_string(&data, 2, "labelmap_voc.prototxt");
    pb_int(&data, 3, 0); /* anno_type BBOX */
    pb_int(&loss, 4, 21);                 /* num_classes */
    pb_int(&loss, 20, 2);                 /* mining_type HARD_EXAMPLE */
    pb_fixed32(&nms, 1, 0x3f000000);      /* nms_threshold 0.5 */
    pb_message(&loss, 21, &nms);
    pb_fixed32(&exp, 1, 0x40000000);      /* base 2 */
    pb_fixed32(&log, 1, 0x41200000);      /* base 10 */
    pb_fixed32(&log, 2, 0x40000000);      /* scale 2 */
    pb_string(&layer, 1, "mbox_loss");
    pb_string(&layer, 2, "MultiBoxLoss");
    pb_message(&layer, 111, &exp);
    pb_message(&layer, 134, &log);
    pb_message(&layer, 200, &data);
    pb_message(&layer, 201, &loss);
    pb_message(&net, 100, &layer);
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    char *json = layer_text(model, 0, true, 0);
    CHECK(json != NULL);
    static const char *const named[] = {
        "\"exp_param\":{\"base\":2.0}", "\"log_param\":{\"base\":10.0,\"scale\":2.0}",
        ("\"annotated_data_param\":{\"batch_sampler\":[{\"sampler\":{\"min_scale\":0.3},\"max_trials\":50}],"
         "\"label_map_file\":\"labelmap_voc.prototxt\",\"anno_type\":\"BBOX\"}"),
        ("\"multibox_loss_param\":{\"num_classes\":21,\"mining_type\":\"HARD_EXAMPLE\","
         "\"nms_param\":{\"nms_threshold\":0.5}}")};
    for (size_t i = 0; i < sizeof named / sizeof *named; ++i)
        CHECK_MSG(strstr(json, named[i]) != NULL, "%s lacks %s", json, named[i]);
    CHECK_MSG(strstr(json, "unknown_fields") == NULL, "%s", json);
    char *text = prototxt(model);
    CHECK(text != NULL);
    static const char *const lines[] = {"  exp_param {\n    base: 2\n  }\n",
                                        "  log_param {\n    base: 10\n    scale: 2\n  }\n",
                                        ("  annotated_data_param {\n    batch_sampler {\n      sampler {\n"
                                         "        min_scale: 0.3\n      }\n      max_trials: 50\n    }\n"
                                         "    label_map_file: \"labelmap_voc.prototxt\"\n    anno_type: BBOX\n  }\n"),
                                        ("  multibox_loss_param {\n    num_classes: 21\n    mining_type: HARD_EXAMPLE\n"
                                         "    nms_param {\n      nms_threshold: 0.5\n    }\n  }\n")};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; ++i)
        CHECK_MSG(strstr(text, lines[i]) != NULL, "%s lacks\n%s", text, lines[i]);
    /* Read back by name: the same bytes. */
    cblob_model *again = NULL;
    CHECK_OK(cblob_model_open_prototxt(ctx, (const uint8_t *)text, strlen(text), &again));
    size_t a = 0, b = 0;
    CHECK_OK(cblob_model_to_proto(model, 0, NULL, 0, &a));
    CHECK_OK(cblob_model_to_proto(again, 0, NULL, 0, &b));
    uint8_t *x = malloc(a), *y = malloc(b);
    CHECK(x != NULL && y != NULL);
    CHECK_OK(cblob_model_to_proto(model, 0, x, a, &a));
    CHECK_OK(cblob_model_to_proto(again, 0, y, b, &b));
    CHECK(a == b && memcmp(x, y, a) == 0);
    /* The reader's messages name the field as Caffe does. */
    static const char wrong[] = "layer {\n  exp_param {\n    base: two\n  }\n}\n";
    cblob_model *none = NULL;
    CHECK_STATUS(cblob_model_open_prototxt(ctx, (const uint8_t *)wrong, sizeof wrong - 1, &none), CBLOB_ERR_PARSE);
    CHECK_MSG(strstr(cblob_last_error_message(), "the text:3:11: base takes a number") != NULL, "%s",
              cblob_last_error_message());
    free(x);
    free(y);
    free(text);
    free(json);
    cblob_model_destroy(again);
    cblob_model_destroy(model);
    pb_free(&sampler);
    pb_free(&batch);
    pb_free(&data);
    pb_free(&nms);
    pb_free(&loss);
    pb_free(&exp);
    pb_free(&log);
    pb_free(&layer);
    pb_free(&net);
    cblob_context_destroy(ctx);
}

static uint8_t *proto_bytes(const cblob_model *model, size_t *size)
{
    *size = 0;
    if (cblob_model_to_proto(model, 1, NULL, 0, size) != CBLOB_OK)
        return NULL;
    uint8_t *bytes = malloc(*size + 1);
    if (bytes != NULL && cblob_model_to_proto(model, 1, bytes, *size, size) != CBLOB_OK) {
        free(bytes);
        bytes = NULL;
    }
    return bytes;
}

/* cblob_model_upgrade makes a new model in the current format (Caffe's UpgradeNetAsNeeded: the
 * type string, blobs_lr as param specs, the input fields as an Input layer first) with the same
 * blob values, leaves the V1 model as it was, gives an equal copy of a current net, and refuses
 * what Caffe refuses (a LayerType it does not know) naming the layer, *out_model untouched. */
TEST(upgrade_makes_a_new_current_model_and_leaves_the_old_one)
{
    cblob_context *ctx = context_new();
    pb net = {0}, layer = {0}, blob = {0}, ip = {0};
    pb_string(&layer, 2, "data");
    pb_string(&layer, 3, "ip");
    pb_string(&layer, 4, "ip");
    pb_int(&layer, 5, 14);
    pb_shape(&blob, (int64_t[]){3}, 1, true);
    pb_floats(&blob, 5, (float[]){1, -0.0f, 3}, 3, true);
    pb_message(&layer, 6, &blob);
    pb_floats(&layer, 7, (float[]){1, 2}, 2, false);
    pb_int(&ip, 1, 3);
    pb_message(&layer, 17, &ip);
    pb_string(&net, 1, "v1");
    pb_message(&net, 2, &layer);
    pb_string(&net, 3, "data");
    for (int i = 0; i < 4; ++i)
        pb_int(&net, 4, 1 + i);
    cblob_model *model = NULL, *upgraded = NULL, *again = NULL;
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    size_t before_size = 0, after_size = 0;
    uint8_t *before = proto_bytes(model, &before_size);
    CHECK(before != NULL);
    CHECK_OK(cblob_model_upgrade(model, &upgraded));
    /* The old model is as it was. */
    cblob_net_format format = 0;
    uint8_t *after = proto_bytes(model, &after_size);
    CHECK(after != NULL && after_size == before_size && memcmp(after, before, before_size) == 0);
    CHECK_OK(cblob_model_format(model, &format));
    CHECK(format == CBLOB_NET_FORMAT_V1);
    free(after);
    /* The new one is current: Input first, then the layer with its type string and specs. */
    CHECK_OK(cblob_model_format(upgraded, &format));
    CHECK(format == CBLOB_NET_FORMAT_V2);
    int64_t count = 0;
    CHECK_OK(cblob_model_num_layers(upgraded, &count));
    CHECK(count == 2);
    const char *name = NULL, *type = NULL;
    CHECK_OK(cblob_model_layer_type(upgraded, 0, &type));
    CHECK_OK(cblob_model_layer_name(upgraded, 0, &name));
    CHECK(strcmp(type, "Input") == 0 && strcmp(name, "input") == 0);
    CHECK_OK(cblob_model_layer_type(upgraded, 1, &type));
    CHECK(strcmp(type, "InnerProduct") == 0);
    CHECK(same_blobs(model, 0, upgraded, 1, true));
    char *text = prototxt(upgraded);
    static const char expected[] = "name: \"v1\"\n"
                                   "layer {\n"
                                   "  name: \"input\"\n"
                                   "  type: \"Input\"\n"
                                   "  top: \"data\"\n"
                                   "  input_param {\n"
                                   "    shape {\n"
                                   "      dim: 1\n"
                                   "      dim: 2\n"
                                   "      dim: 3\n"
                                   "      dim: 4\n"
                                   "    }\n"
                                   "  }\n"
                                   "}\n"
                                   "layer {\n"
                                   "  name: \"ip\"\n"
                                   "  type: \"InnerProduct\"\n"
                                   "  bottom: \"data\"\n"
                                   "  top: \"ip\"\n"
                                   "  param {\n"
                                   "    lr_mult: 1\n"
                                   "  }\n"
                                   "  param {\n"
                                   "    lr_mult: 2\n"
                                   "  }\n"
                                   "  inner_product_param {\n"
                                   "    num_output: 3\n"
                                   "  }\n"
                                   "}\n";
    CHECK_MSG(text != NULL && strcmp(text, expected) == 0, "%s", text != NULL ? text : "(none)");
    free(text);
    /* A current net: an equal copy, the same bytes. */
    CHECK_OK(cblob_model_upgrade(upgraded, &again));
    uint8_t *first = proto_bytes(upgraded, &before_size), *second = proto_bytes(again, &after_size);
    CHECK(first != NULL && second != NULL && before_size == after_size && memcmp(first, second, after_size) == 0);
    free(first), free(second);
    cblob_model_destroy(again);
    cblob_model_destroy(upgraded);
    cblob_model_destroy(model);
    /* A LayerType Caffe does not know: refused, naming the layer; *out_model untouched. */
    pb_free(&net), pb_free(&layer);
    pb_string(&layer, 4, "odd");
    pb_int(&layer, 5, 99);
    pb_message(&net, 2, &layer);
    CHECK_OK(cblob_model_open(ctx, net.data, net.size, &model));
    cblob_model *untouched = (cblob_model *)&net;
    upgraded = untouched;
    CHECK_ERROR(cblob_model_upgrade(model, &upgraded), CBLOB_ERR_PARSE);
    CHECK(upgraded == untouched);
    CHECK_MSG(strstr(cblob_last_error_message(), "\"odd\"") != NULL &&
                  strstr(cblob_last_error_message(), "unknown V1 layer type 99") != NULL,
              "%s", cblob_last_error_message());
    cblob_model_destroy(model);
    free(before);
    pb_free(&net), pb_free(&layer), pb_free(&blob), pb_free(&ip);
    cblob_context_destroy(ctx);
}
