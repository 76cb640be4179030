/* SPDX-License-Identifier: BSD-2-Clause */
/* The format readers' internals: loading decodes what protobuf-c unpacks, straight into the blob's
 * own storage. (Reading files is tests/io's.) */
#include "harness.h"
#include "pb.h"
#include <jansson.h>
#include <zlib.h>

#include "caffe_fields.h"
#include "caffe_params.pb-c.h"
#include "crc32.h"
#include "export_common.h"
#include "fault.h"
#include "model_json.h"
#include "sink.h"
#include "walk.h"
#include "support.h"

/* Loads the BlobProto into a blob and compares its values with what protobuf-c unpacks from the
 * same bytes, byte for byte. */
static bool loads_as_protobuf_c_unpacks(cblob_context *ctx, const pb *proto)
{
    Caffe__BlobProto *message = caffe__blob_proto__unpack(NULL, proto->size, proto->data);
    cblob_blob *blob = NULL;
    if (message == NULL || cblob_blob_create_from_proto(ctx, proto->data, proto->size, &blob) != CBLOB_OK) {
        caffe__blob_proto__free_unpacked(message, NULL);
        return false;
    }
    const bool is_double = message->n_double_data > 0;
    const void *expected[2] = {is_double ? (const void *)message->double_data : message->data,
                               message->n_double_diff > 0 ? (const void *)message->double_diff : message->diff};
    const size_t counts[2] = {is_double ? message->n_double_data : message->n_data,
                              message->n_double_diff > 0 ? message->n_double_diff : message->n_diff};
    bool same = true;
    for (int part = 0; part < 2 && same; ++part) {
        const void *got = NULL;
        if (counts[part] == 0)
            continue;
        same = cblob_blob_cpu_ptr(blob, part, &got) == CBLOB_OK &&
               memcmp(got, expected[part], counts[part] * (is_double ? 8 : 4)) == 0;
    }
    cblob_blob_destroy(blob);
    caffe__blob_proto__free_unpacked(message, NULL);
    return same;
}

TEST(loading_decodes_what_protobuf_c_unpacks)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    float floats[64];
    double doubles[64];
    for (int i = 0; i < 64; ++i) {
        floats[i] = (float)ft_value(CBLOB_DTYPE_FLOAT32, 1, i);
        doubles[i] = ft_value(CBLOB_DTYPE_FLOAT64, 2, i) / 3.0; /* not exact in float: any narrowing shows */
    }
    for (int packed = 0; packed <= 1; ++packed) {
        pb cases[5] = {{0}};
        pb_shape(&cases[0], (int64_t[]){8, 8}, 2, packed);
        pb_floats(&cases[0], 5, floats, 64, packed);
        pb_floats(&cases[0], 6, floats, 64, !packed);
        pb_shape(&cases[1], (int64_t[]){64}, 1, packed);
        pb_doubles(&cases[1], 8, doubles, 64, packed);
        pb_doubles(&cases[1], 9, doubles, 64, packed);
        pb_floats(&cases[1], 5, floats, 3, packed); /* ignored: double_data wins */
        pb_floats(&cases[2], 5, floats, 1, packed); /* a scalar */
        pb_int(&cases[3], 1, 0);                    /* count 0: no arrays */
        pb_shape(&cases[4], (int64_t[]){64}, 1, true);
        pb_floats(&cases[4], 5, floats, 20, packed); /* split over three fields */
        pb_floats(&cases[4], 5, floats + 20, 24, !packed);
        pb_floats(&cases[4], 5, floats + 44, 20, packed);
        for (int i = 0; i < 5; ++i) {
            CHECK_MSG(loads_as_protobuf_c_unpacks(ctx, &cases[i]), "case %d (%s) decodes differently", i,
                      packed ? "packed" : "unpacked");
            pb_free(&cases[i]);
        }
    }
    cblob_context_destroy(ctx);
}

/* No array between the input and the blob: the values land in storage cblob allocated for the
 * blob (for a large one, pages mapped on a 2 MiB boundary, first touched by the copy), where
 * protobuf-c's unpacking used to make an array the blob then adopted. */
TEST(loading_decodes_straight_into_the_blobs_own_storage)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    enum { LARGE = 2 << 20 }; /* 8 MiB of float32: a mapped buffer */
    float *floats = calloc(LARGE, sizeof *floats);
    double doubles[16] = {0};
    CHECK(floats != NULL);
    for (int i = 0; i < LARGE; ++i)
        floats[i] = (float)i;
    for (int packed = 0; packed <= 1; ++packed) {
        pb as_float = {0}, as_double = {0}, large = {0};
        pb_shape(&as_float, (int64_t[]){16}, 1, packed);
        pb_floats(&as_float, 5, floats, 16, packed);
        pb_floats(&as_float, 6, floats, 16, packed);
        pb_shape(&as_double, (int64_t[]){16}, 1, packed);
        pb_doubles(&as_double, 8, doubles, 16, packed);
        pb_shape(&large, (int64_t[]){LARGE}, 1, true);
        pb_floats(&large, 5, floats, LARGE, true);
        cblob_blob *blob = NULL;
        CHECK_OK(cblob_blob_create_from_proto(ctx, as_float.data, as_float.size, &blob));
        for (int part = 0; part < CB_PARTS; ++part)
            CHECK(blob->storage[part]->host_owned && blob->storage[part]->host_release.fn == NULL);
        cblob_blob_destroy(blob);
        /* Another dtype: the values are converted into cblob's own storage. */
        CHECK_OK(cblob_blob_create_empty(ctx, CBLOB_DTYPE_FLOAT32, &blob));
        CHECK_OK(cblob_blob_from_proto(blob, as_double.data, as_double.size, 1));
        CHECK(blob->storage[CBLOB_PART_DATA]->host_owned);
        /* Storage that already fits is written in place (blobs sharing it see the values). */
        void *before = blob->storage[CBLOB_PART_DATA]->host;
        CHECK_OK(cblob_blob_from_proto(blob, as_float.data, as_float.size, 1));
        CHECK(blob->storage[CBLOB_PART_DATA]->host == before);
        cblob_blob_destroy(blob);
        CHECK_OK(cblob_blob_create_from_proto(ctx, large.data, large.size, &blob));
        const float *values = blob->storage[CBLOB_PART_DATA]->host;
        CHECK(blob->storage[CBLOB_PART_DATA]->host_owned && (uintptr_t)values % (2 << 20) == 0);
        CHECK(values[0] == 0 && values[LARGE - 1] == (float)(LARGE - 1));
        cblob_blob_destroy(blob);
        pb_free(&as_float), pb_free(&as_double), pb_free(&large);
    }
    free(floats);
    cblob_context_destroy(ctx);
}

TEST(wire_paths_name_nested_messages)
{
    /* A fault deep in a V1 layer's nested V0 layer names every level. */
    pb blob = {0}, v0 = {0}, v1 = {0}, net = {0};
    pb_shape(&blob, (int64_t[]){2}, 1, true);
    pb_bytes(&blob, 8, "123", 3);
    pb_string(&v0, 1, "ancient");
    pb_message(&v0, 50, &blob);
    pb_string(&v1, 4, "v1name");
    pb_message(&v1, 1, &v0);
    pb_message(&net, 2, &v1);
    CHECK_STATUS(cb_walk_check_net(net.data, net.size), CBLOB_ERR_PARSE);
    CHECK_MSG(strstr(cblob_last_error_message(),
                     "NetParameter.layers[0](v1name).layer.blobs[0].double_data at byte 29: packed length 3") != NULL,
              "message: %s", cblob_last_error_message());
    pb_free(&blob), pb_free(&v0), pb_free(&v1), pb_free(&net);
}

/* caffe_fields.h is the one place a field number is written: each is the number protobuf-c's
 * descriptors give the field of that name (the descriptors that describe it; NetParameter's
 * input, force_backward and debug_info follow BVLC's caffe.proto, which they do not hold). */
TEST(caffe_field_numbers_are_the_descriptors)
{
    static const struct {
        const ProtobufCMessageDescriptor *message;
        const char *name;
        unsigned number;
    } fields[] = {
        {&caffe__net_parameter__descriptor, "name", CB_NET_NAME},
        {&caffe__net_parameter__descriptor, "layers", CB_NET_LAYERS},
        {&caffe__net_parameter__descriptor, "layer", CB_NET_LAYER},
        {&caffe__layer_parameter_fields__descriptor, "name", CB_LAYER_NAME},
        {&caffe__layer_parameter_fields__descriptor, "type", CB_LAYER_TYPE},
        {&caffe__layer_parameter_fields__descriptor, "bottom", CB_LAYER_BOTTOM},
        {&caffe__layer_parameter_fields__descriptor, "top", CB_LAYER_TOP},
        {&caffe__layer_parameter_fields__descriptor, "param", CB_LAYER_PARAM},
        {&caffe__layer_parameter__descriptor, "blobs", CB_LAYER_BLOBS},
        {&caffe__layer_parameter_fields__descriptor, "include", CB_LAYER_INCLUDE},
        {&caffe__layer_parameter_fields__descriptor, "exclude", CB_LAYER_EXCLUDE},
        {&caffe__layer_parameter_fields__descriptor, "phase", CB_LAYER_PHASE},
        {&caffe__v1_layer_parameter__descriptor, "layer", CB_V1_LAYER},
        {&caffe__v1_layer_parameter_fields__descriptor, "bottom", CB_V1_BOTTOM},
        {&caffe__v1_layer_parameter_fields__descriptor, "top", CB_V1_TOP},
        {&caffe__v1_layer_parameter__descriptor, "name", CB_V1_NAME},
        {&caffe__v1_layer_parameter__descriptor, "type", CB_V1_TYPE},
        {&caffe__v1_layer_parameter__descriptor, "blobs", CB_V1_BLOBS},
        {&caffe__v1_layer_parameter_fields__descriptor, "blobs_lr", CB_V1_BLOBS_LR},
        {&caffe__v1_layer_parameter_fields__descriptor, "weight_decay", CB_V1_WEIGHT_DECAY},
        {&caffe__v1_layer_parameter_fields__descriptor, "include", CB_V1_INCLUDE},
        {&caffe__v1_layer_parameter_fields__descriptor, "exclude", CB_V1_EXCLUDE},
        {&caffe__v1_layer_parameter_fields__descriptor, "param", CB_V1_PARAM},
        {&caffe__v0_layer_parameter__descriptor, "name", CB_V0_NAME},
        {&caffe__v0_layer_parameter__descriptor, "type", CB_V0_TYPE},
        {&caffe__v0_layer_parameter__descriptor, "blobs", CB_V0_BLOBS},
        {&caffe__blob_proto__descriptor, "num", CB_BLOB_NUM},
        {&caffe__blob_proto__descriptor, "channels", CB_BLOB_CHANNELS},
        {&caffe__blob_proto__descriptor, "height", CB_BLOB_HEIGHT},
        {&caffe__blob_proto__descriptor, "width", CB_BLOB_WIDTH},
        {&caffe__blob_proto__descriptor, "data", CB_BLOB_DATA},
        {&caffe__blob_proto__descriptor, "diff", CB_BLOB_DIFF},
        {&caffe__blob_proto__descriptor, "shape", CB_BLOB_SHAPE},
        {&caffe__blob_proto__descriptor, "double_data", CB_BLOB_DOUBLE_DATA},
        {&caffe__blob_proto__descriptor, "double_diff", CB_BLOB_DOUBLE_DIFF},
        {&caffe__blob_shape__descriptor, "dim", CB_SHAPE_DIM},
        {&caffe__blob_proto_vector__descriptor, "blobs", CB_VECTOR_BLOBS},
        {&caffe__net_state_rule__descriptor, "phase", CB_RULE_PHASE},
        {&caffe__net_state_rule__descriptor, "min_level", CB_RULE_MIN_LEVEL},
        {&caffe__net_state_rule__descriptor, "max_level", CB_RULE_MAX_LEVEL},
        {&caffe__net_state_rule__descriptor, "stage", CB_RULE_STAGE},
        {&caffe__net_state_rule__descriptor, "not_stage", CB_RULE_NOT_STAGE},
        {&caffe__param_spec__descriptor, "name", CB_SPEC_NAME},
        {&caffe__param_spec__descriptor, "lr_mult", CB_SPEC_LR_MULT},
        {&caffe__param_spec__descriptor, "decay_mult", CB_SPEC_DECAY_MULT},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) {
        const ProtobufCFieldDescriptor *field =
            protobuf_c_message_descriptor_get_field_by_name(fields[i].message, fields[i].name);
        CHECK_MSG(field != NULL && field->id == fields[i].number, "%s.%s is %u in caffe_fields.h, %d in %s",
                  fields[i].message->short_name, fields[i].name, fields[i].number, field != NULL ? (int)field->id : -1,
                  "the descriptors");
    }
}

/* The safetensors header is streamed as JSON text of its own making: each string as Jansson's
 * JSON_COMPACT dump writes it (the text 1.1 wrote, byte for byte), bytes that are not UTF-8 as
 * U+FFFD, and a string inside a string escaped twice ("layer_types"). */
TEST(streamed_json_strings_are_what_jansson_writes)
{
    char text[300];
    size_t length = 0;
    for (int c = 1; c < 128; ++c)
        text[length++] = (char)c;
    static const char tail[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 bad\xff\xc3(end";
    memcpy(text + length, tail, sizeof tail - 1);
    length += sizeof tail - 1;
    json_t *value = cb_json_text(text, length);
    json_t *nested = json_pack("{s:o}", "k", cb_json_text(text, length));
    char *expected = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    char *inner = json_dumps(nested, JSON_COMPACT);
    json_t *outer = json_string(inner);
    char *expected_nested = json_dumps(outer, JSON_COMPACT | JSON_ENCODE_ANY);
    CHECK(expected != NULL && expected_nested != NULL);
    uint8_t written[4096], written_nested[4096];
    cb_sink sink;
    cb_sink_buffer(&sink, written, sizeof written);
    cb_json_out out = {&sink, 0};
    cb_json_string(&out, text, length);
    CHECK_MSG(sink.size == strlen(expected) && memcmp(written, expected, sink.size) == 0, "%.*s\nagainst Jansson's\n%s",
              (int)sink.size, (const char *)written, expected);
    cb_sink_buffer(&sink, written_nested, sizeof written_nested);
    out = (cb_json_out){&sink, 0};
    cb_json_raw(&out, "\"");
    ++out.quoting;
    cb_json_raw(&out, "{");
    cb_json_string(&out, "k", 1);
    cb_json_raw(&out, ":");
    cb_json_string(&out, text, length);
    cb_json_raw(&out, "}");
    --out.quoting;
    cb_json_raw(&out, "\"");
    CHECK_MSG(sink.size == strlen(expected_nested) && memcmp(written_nested, expected_nested, sink.size) == 0,
              "%.*s\nagainst Jansson's\n%s", (int)sink.size, (const char *)written_nested, expected_nested);
    free(expected), free(inner), free(expected_nested);
    json_decref(value), json_decref(nested), json_decref(outer);
}

static uint8_t *model_bytes(const cblob_model *model, size_t *size)
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

/* cblob_model_upgrade of a V0 net that takes every step (padding folded, V0 parameters mapped,
 * input_dim to an Input layer, a V1 data layer's scale moved): each of its allocations made to
 * fail in turn fails the call with CBLOB_ERR_OUT_OF_MEMORY, *out_model untouched and the model
 * the same bytes; the generated OOM sweep's net is a current one, which takes none of them. */
TEST(upgrade_of_a_v0_net_fails_cleanly_at_every_allocation)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const char text[] =
        "name: 'old' input: 'data' input_dim: 1 input_dim: 1 input_dim: 4 input_dim: 4\n"
        "layers { layer { name: 'pad1' type: 'padding' pad: 1 } bottom: 'data' top: 'pad1' }\n"
        "layers { layer { name: 'conv1' type: 'conv' num_output: 2 kernelsize: 3 stride: 1\n"
        "  blobs { num: 2 channels: 1 height: 3 width: 3 data: [1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9] }\n"
        "  blobs_lr: 1 blobs_lr: 2 } bottom: 'pad1' top: 'conv1' }\n"
        "layers { layer { name: 'relu1' type: 'relu' } bottom: 'conv1' top: 'conv1' }\n";
    cblob_model *model = NULL;
    CHECK_OK(cblob_model_open_prototxt(ctx, (const uint8_t *)text, sizeof text - 1, &model));
    size_t size = 0, again_size = 0;
    uint8_t *before = model_bytes(model, &size);
    CHECK(before != NULL);
    int64_t failures = 0;
    for (int64_t nth = 1;; ++nth) {
        cblob_model *untouched = (cblob_model *)&failures, *out = untouched;
        cb_fault_arm(CB_FAULT_ALLOC, nth, 0, false);
        const cblob_status status = cblob_model_upgrade(model, &out);
        const bool fired = cb_fault_fired(CB_FAULT_ALLOC);
        cb_fault_arm(CB_FAULT_ALLOC, 0, 0, false);
        if (status == CBLOB_OK) {
            CHECK(out != untouched);
            const char *type = NULL;
            CHECK_OK(cblob_model_layer_type(out, 1, &type));
            CHECK(strcmp(type, "Convolution") == 0);
            cblob_model_destroy(out);
            if (!fired)
                break;
        } else {
            CHECK_MSG(status == CBLOB_ERR_OUT_OF_MEMORY && fired && out == untouched, "allocation %lld: %s",
                      (long long)nth, cblob_last_error_message());
            ++failures;
        }
        uint8_t *again = model_bytes(model, &again_size);
        CHECK(again != NULL && again_size == size && memcmp(again, before, size) == 0);
        free(again);
    }
    CHECK_MSG(failures > 20, "only %lld allocations failed the call", (long long)failures);
    free(before);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
}

/* The zip CRC-32 (crc32.c: folded with carry-less multiplies where the CPU has them, zlib for the
 * rest) is zlib's for every length, alignment and starting value, and combines as zlib's does. */
TEST(crc32_is_zlibs_at_every_length_and_alignment)
{
    enum { LONGEST = (1 << 20) + 77 };
    uint8_t *bytes = malloc(LONGEST + 16);
    CHECK(bytes != NULL);
    uint32_t state = 12345;
    for (size_t i = 0; i < LONGEST + 16; ++i) {
        state = state * 1103515245u + 12345u;
        bytes[i] = (uint8_t)(state >> 24);
    }
    static const uint32_t starts[] = {0, 0xffffffffu, 0x12345678u};
    for (size_t s = 0; s < sizeof starts / sizeof *starts; ++s)
        for (size_t align = 0; align < 16; ++align) {
            for (size_t length = 0; length <= 300; ++length)
                CHECK_MSG(cb_crc32(starts[s], bytes + align, length) ==
                              (uint32_t)crc32(starts[s], bytes + align, (uInt)length),
                          "length %zu at offset %zu from 0x%08x", length, align, (unsigned)starts[s]);
            const size_t longer[] = {1024, 4099, 65536 + 48, LONGEST - 15};
            for (size_t l = 0; l < sizeof longer / sizeof *longer; ++l)
                CHECK_MSG(cb_crc32(starts[s], bytes + align, longer[l]) ==
                              (uint32_t)crc32(starts[s], bytes + align, (uInt)longer[l]),
                          "length %zu at offset %zu", longer[l], align);
        }
    /* Two runs' CRCs combine into the whole's, and the whole's less the first's gives the second's. */
    const size_t splits[] = {0, 1, 63, 64, 1000, LONGEST / 2, LONGEST};
    const uint32_t whole = (uint32_t)crc32(0, bytes, LONGEST);
    for (size_t i = 0; i < sizeof splits / sizeof *splits; ++i) {
        const uint32_t first = cb_crc32(0, bytes, splits[i]), second = cb_crc32(0, bytes + splits[i], LONGEST - splits[i]);
        CHECK(cb_crc32_combine(first, second, LONGEST - splits[i]) == whole);
        CHECK(cb_crc32_combine(first, whole, LONGEST - splits[i]) == second);
    }
    free(bytes);
}
