/* SPDX-License-Identifier: BSD-2-Clause */
/* The format readers' internals: the two BlobProto decoders agree on every input, loading adopts
 * the decoded arrays instead of copying them. (Reading files is tests/io's.) */
#include "harness.h"
#include "pb.h"
#include "proto_net.h"
#include "support.h"

/* Decodes with both decoders and compares the arrays byte for byte. */
static bool decoders_agree(const pb *proto)
{
    cb_blob_layout layout;
    if (cb_blob_scan(proto->data, proto->size, &layout) != CBLOB_OK)
        return false;
    cb_blob_arrays a, b;
    if (cb_blob_decode(proto->data, &layout, CB_DECODER_PROTOBUF_C, &a) != CBLOB_OK)
        return false;
    if (cb_blob_decode(proto->data, &layout, CB_DECODER_WIRE, &b) != CBLOB_OK) {
        cb_blob_arrays_free(&a);
        return false;
    }
    const size_t data_bytes = (size_t)a.data_count * (a.data_is_double ? 8 : 4);
    const size_t diff_bytes = (size_t)a.diff_count * (a.diff_is_double ? 8 : 4);
    const bool same = a.data_count == b.data_count && a.diff_count == b.diff_count &&
                      a.data_is_double == b.data_is_double && a.diff_is_double == b.diff_is_double &&
                      (data_bytes == 0 || memcmp(a.data, b.data, data_bytes) == 0) &&
                      (diff_bytes == 0 || memcmp(a.diff, b.diff, diff_bytes) == 0);
    cb_blob_arrays_free(&a);
    cb_blob_arrays_free(&b);
    return same;
}

TEST(protobuf_c_and_the_wire_reader_decode_alike)
{
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
            CHECK_MSG(decoders_agree(&cases[i]), "case %d (%s) decodes differently", i, packed ? "packed" : "unpacked");
            pb_free(&cases[i]);
        }
    }
}

TEST(loading_adopts_the_decoded_array_instead_of_copying_it)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    float floats[16] = {0};
    double doubles[16] = {0};
    for (int packed = 0; packed <= 1; ++packed) {
        pb as_float = {0}, as_double = {0};
        pb_shape(&as_float, (int64_t[]){16}, 1, packed);
        pb_floats(&as_float, 5, floats, 16, packed);
        pb_floats(&as_float, 6, floats, 16, packed);
        pb_shape(&as_double, (int64_t[]){16}, 1, packed);
        pb_doubles(&as_double, 8, doubles, 16, packed);
        /* A new blob of the file's dtype: both parts are the decoder's arrays, handed over with a
         * release callback, not buffers cblob allocated and filled. */
        cblob_blob *blob = NULL;
        CHECK_OK(cblob_blob_create_from_proto(ctx, as_float.data, as_float.size, &blob));
        for (int part = 0; part < CB_PARTS; ++part)
            CHECK(!blob->storage[part]->host_owned && blob->storage[part]->host_release.fn != NULL);
        cblob_blob_destroy(blob);
        /* Another dtype cannot adopt: the values are converted into cblob's own storage. */
        CHECK_OK(cblob_blob_create_empty(ctx, CBLOB_DTYPE_FLOAT32, &blob));
        CHECK_OK(cblob_blob_from_proto(blob, as_double.data, as_double.size, 1));
        CHECK(blob->storage[CBLOB_PART_DATA]->host_owned);
        /* Storage that already fits is written in place (blobs sharing it see the values). */
        void *before = blob->storage[CBLOB_PART_DATA]->host;
        CHECK_OK(cblob_blob_from_proto(blob, as_float.data, as_float.size, 1));
        CHECK(blob->storage[CBLOB_PART_DATA]->host == before);
        cblob_blob_destroy(blob);
        pb_free(&as_float), pb_free(&as_double);
    }
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
    CHECK_STATUS(cb_net_check(net.data, net.size), CBLOB_ERR_PARSE);
    CHECK_MSG(strstr(cblob_last_error_message(),
                     "NetParameter.layers[0](v1name).layer.blobs[0].double_data at byte 29: packed length 3") != NULL,
              "message: %s", cblob_last_error_message());
    pb_free(&blob), pb_free(&v0), pb_free(&v1), pb_free(&net);
}
