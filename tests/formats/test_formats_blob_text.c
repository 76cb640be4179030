/* SPDX-License-Identifier: BSD-2-Clause */
/* A BlobProto in protobuf's text format, both ways (cblob_blob_to_prototxt,
 * cblob_blob_create_from_prototxt): the real mean files round trip bit for bit, values that need
 * every digit do too, files are told from their first field, and mistakes name line and column. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cblob/cblob.h"
#include "harness.h"
#include "support.h"

static char *blob_text(cblob_blob *blob, int32_t write_diff)
{
    size_t length = 0;
    if (cblob_blob_to_prototxt(blob, write_diff, NULL, 0, &length) != CBLOB_OK)
        return NULL;
    char *text = malloc(length + 1);
    if (text != NULL && cblob_blob_to_prototxt(blob, write_diff, text, length + 1, &length) != CBLOB_OK) {
        free(text);
        text = NULL;
    }
    return text;
}

/* Same shape, dtype and bytes of data (and of diff when both). */
static bool same_blob(cblob_blob *a, cblob_blob *b, bool diff)
{
    cblob_dtype x, y;
    int64_t n = 0, m = 0;
    if (cblob_blob_dtype(a, &x) != CBLOB_OK || cblob_blob_dtype(b, &y) != CBLOB_OK || x != y)
        return false;
    if (cblob_blob_count(a, &n) != CBLOB_OK || cblob_blob_count(b, &m) != CBLOB_OK || n != m)
        return false;
    int64_t dims[CBLOB_MAX_AXES];
    int32_t axes = 0;
    if (cblob_blob_shape(a, CBLOB_MAX_AXES, dims, &axes) != CBLOB_OK || !ft_shape_is(b, axes, dims))
        return false;
    for (int part = 0; part < (diff ? 2 : 1); ++part) {
        const void *p = NULL, *q = NULL;
        if (cblob_blob_cpu_ptr(a, (cblob_part)part, &p) != CBLOB_OK ||
            cblob_blob_cpu_ptr(b, (cblob_part)part, &q) != CBLOB_OK)
            return false;
        if (n > 0 && memcmp(p, q, (size_t)n * (x == CBLOB_DTYPE_FLOAT64 ? 8 : 4)) != 0)
            return false;
    }
    return true;
}

TEST(mean_files_round_trip_through_text)
{
    static const char *const means[] = {CBLOB_CAFFE_DATA_DIR "/ilsvrc_2012_mean.binaryproto",
                                        CBLOB_CAFFE_DATA_DIR "/cifar10_mean.binaryproto"};
    /* Fields in number order, as protobuf prints them: data (5), then shape (7). */
    static const char *const heads[] = {"data: ", "data: 130.710739\n"};
    static const char *const tails[] = {"\nshape {\n  dim: 1\n  dim: 3\n  dim: 256\n  dim: 256\n}\n",
                                        "\nshape {\n  dim: 1\n  dim: 3\n  dim: 32\n  dim: 32\n}\n"};
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    for (size_t i = 0; i < 2; ++i) {
        if (access(means[i], R_OK) != 0)
            SKIP("the mean files of " CBLOB_CAFFE_DATA_DIR " are absent");
        cblob_blob *mean = NULL, *back = NULL;
        CHECK_OK(cblob_blob_create_from_proto_file(ctx, means[i], &mean));
        char *text = blob_text(mean, 0);
        CHECK(text != NULL);
        CHECK_MSG(strncmp(text, heads[i], strlen(heads[i])) == 0, "%.120s", text);
        CHECK(strlen(text) > strlen(tails[i]) &&
              strcmp(text + strlen(text) - strlen(tails[i]), tails[i]) == 0);
        CHECK_OK(cblob_blob_create_from_prototxt(ctx, (const uint8_t *)text, strlen(text), &back));
        CHECK(same_blob(mean, back, false));
        /* As a file: cblob_file_open tells it from its first field, and reads it as a blob file. */
        char folder[256], path[300];
        CHECK(ft_temp_folder(folder, sizeof folder));
        snprintf(path, sizeof path, "%s/mean.prototxt", folder);
        CHECK_OK(cblob_blob_to_prototxt_file(mean, 0, path));
        size_t size = 0;
        uint8_t *written = ft_read_file(path, &size);
        CHECK(written != NULL && size == strlen(text) && memcmp(written, text, size) == 0);
        cblob_blob *from_file = NULL;
        CHECK_OK(cblob_blob_create_from_prototxt_file(ctx, path, &from_file));
        CHECK(same_blob(mean, from_file, false));
        cblob_file *file = NULL;
        cblob_file_kind kind = CBLOB_FILE_NET;
        CHECK_OK(cblob_file_open(ctx, path, 0, 0, &file));
        CHECK_OK(cblob_file_get_kind(file, &kind));
        CHECK(kind == CBLOB_FILE_BLOB);
        cblob_blob *opened = NULL;
        CHECK_OK(cblob_file_blob(file, 0, &opened));
        CHECK(same_blob(mean, opened, false));
        /* The binary reader says what the text is. */
        CHECK_ERROR(cblob_blob_from_proto_file(back, path, 1), CBLOB_ERR_PARSE);
        CHECK_MSG(strstr(cblob_last_error_message(), "BlobProto in text format") != NULL, "%s",
                  cblob_last_error_message());
        cblob_blob_destroy(opened);
        cblob_file_destroy(file);
        cblob_blob_destroy(from_file);
        free(written);
        ft_remove_folder(folder);
        free(text);
        cblob_blob_destroy(back);
        cblob_blob_destroy(mean);
    }
    cblob_context_destroy(ctx);
}

/* float64 values that need 17 digits, extremes, signed zero, inf and nan, with a diff. */
TEST(every_value_reads_back_bit_for_bit)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t dims[2] = {2, 4};
    static const double values[8] = {1.0 / 3, -0.0, 1e-308, 4.9e-324, 1.7976931348623157e308, INFINITY, -INFINITY,
                                     0.1};
    for (int dtype = 0; dtype < 2; ++dtype) {
        cblob_blob *blob = NULL, *back = NULL;
        const cblob_dtype t = dtype ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32;
        CHECK_OK(cblob_blob_create(ctx, t, 2, dims, &blob));
        void *data = NULL, *diff = NULL;
        CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &data));
        CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DIFF, &diff));
        for (int i = 0; i < 8; ++i) {
            if (dtype) {
                ((double *)data)[i] = values[i];
                ((double *)diff)[i] = i == 7 ? NAN : -values[i];
            } else {
                ((float *)data)[i] = (float)values[i];
                ((float *)diff)[i] = i == 7 ? NAN : -(float)values[i];
            }
        }
        char *text = blob_text(blob, 1);
        CHECK(text != NULL);
        CHECK(strstr(text, dtype ? "double_data: 0.33333333333333331\n" : "data: 0.333333343\n") != NULL);
        CHECK(strstr(text, dtype ? "double_diff: nan\n" : "diff: nan\n") != NULL);
        CHECK_OK(cblob_blob_create_from_prototxt(ctx, (const uint8_t *)text, strlen(text), &back));
        CHECK_MSG(same_blob(blob, back, true), "%s", text);
        free(text);
        cblob_blob_destroy(back);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(mistakes_name_line_and_column)
{
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static const struct {
        const char *text, *says;
    } cases[] = {
        {"shape {\n  dim: 2\n}\ndatum: 1\n", "the text:4:1: message caffe.BlobProto has no field named \"datum\""},
        {"shape { dim: 2 }\ndata: one\n", "the text:2:7: data takes a number"},
        {"shape { dim: 3 }\ndata: [1, 2]\n", "3"}, /* values that do not fill the shape */
        {"shape { dim: 2 \n", "the text:2:1: the text ends before the message's }"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        cblob_blob *blob = (cblob_blob *)(uintptr_t)0x1;
        CHECK_STATUS(cblob_blob_create_from_prototxt(ctx, (const uint8_t *)cases[i].text, strlen(cases[i].text), &blob),
                     CBLOB_ERR_PARSE);
        CHECK_MSG(blob == (cblob_blob *)(uintptr_t)0x1 && strstr(cblob_last_error_message(), cases[i].says) != NULL,
                  "case %zu: %s", i, cblob_last_error_message());
    }
    /* A net's text is not a blob's. */
    static const char net[] = "name: \"LeNet\"\nlayer {\n  name: \"conv1\"\n}\n";
    cblob_blob *blob = NULL;
    CHECK_ERROR(cblob_blob_create_from_prototxt(ctx, (const uint8_t *)net, sizeof net - 1, &blob), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "no field named \"name\"") != NULL);
    cblob_context_destroy(ctx);
}
