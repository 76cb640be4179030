/* SPDX-License-Identifier: BSD-2-Clause */
/* BlobProto through the public API: conformance.md 1.G (items 44-52), round trips for every
 * dtype, the integer-blob rules, and malformed input. Inputs are built with tests/formats/pb.h,
 * outputs checked with its field lister, so neither side trusts the library's own encoder. */
#include <math.h>
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

/* A BlobProto with legacy dims (only those with present[i]) and no values. */
static void legacy_proto(pb *b, const bool present[4], const int64_t dims[4])
{
    for (int i = 0; i < 4; ++i)
        if (present[i])
            pb_int(b, (uint32_t)i + 1, dims[i]);
}

static int32_t shape_equals(const cblob_blob *blob, const pb *b)
{
    int32_t equal = -1;
    if (cblob_blob_shape_equals_proto(blob, b->data, b->size, &equal) != CBLOB_OK)
        return -1;
    return equal;
}

/* ---- 1.G 44-46: ShapeEquals ------------------------------------------------------------- */

TEST(caffe_1G_44_shape_equals_legacy)
{
    cblob_context *ctx = context_new();
    cblob_blob *b32 = NULL, *b132 = NULL, *b232 = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){3, 2}, &b32));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, (int64_t[]){1, 3, 2}, &b132));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, (int64_t[]){2, 3, 2}, &b232));
    const bool all[4] = {true, true, true, true};
    pb p1132 = {0}, p0132 = {0}, p3132 = {0};
    legacy_proto(&p1132, all, (int64_t[]){1, 1, 3, 2});
    legacy_proto(&p0132, all, (int64_t[]){0, 1, 3, 2});
    legacy_proto(&p3132, all, (int64_t[]){3, 1, 3, 2});
    CHECK_EQ_INT(shape_equals(b32, &p1132), 1);  /* (3,2) equals (1,1,3,2) */
    CHECK_EQ_INT(shape_equals(b32, &p0132), 0);  /* (3,2) does not equal (0,1,3,2) */
    CHECK_EQ_INT(shape_equals(b32, &p3132), 0);  /* nor (3,1,3,2) */
    CHECK_EQ_INT(shape_equals(b132, &p1132), 1); /* (1,3,2) equals (1,1,3,2) */
    CHECK_EQ_INT(shape_equals(b232, &p1132), 0); /* (2,3,2) does not */

    /* Presence decides the mode: height and width alone (num, channels unset read as 0) fail
     * against (3,2), although a shape of (3,2) in the same message would match. */
    pb partial = {0};
    legacy_proto(&partial, (bool[]){false, false, true, true}, (int64_t[]){0, 0, 3, 2});
    pb_shape(&partial, (int64_t[]){3, 2}, 2, true);
    CHECK_EQ_INT(shape_equals(b32, &partial), 0);
    /* A legacy field explicitly set to 0 still counts as present. */
    pb zero = {0};
    pb_int(&zero, 1, 0);
    pb_shape(&zero, (int64_t[]){3, 2}, 2, true);
    CHECK_EQ_INT(shape_equals(b32, &zero), 0);
    pb_free(&p1132), pb_free(&p0132), pb_free(&p3132), pb_free(&partial), pb_free(&zero);
    cblob_blob_destroy(b32), cblob_blob_destroy(b132), cblob_blob_destroy(b232);
    cblob_context_destroy(ctx);
}

TEST(caffe_1G_45_shape_equals_legacy_with_more_than_4_axes_is_false)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 5, (int64_t[]){1, 1, 1, 3, 2}, &blob));
    pb legacy = {0};
    legacy_proto(&legacy, (bool[]){true, true, true, true}, (int64_t[]){1, 1, 3, 2});
    int32_t equal = -1;
    CHECK_OK(cblob_blob_shape_equals_proto(blob, legacy.data, legacy.size, &equal));
    CHECK_EQ_INT(equal, 0);
    pb_free(&legacy);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(caffe_1G_46_shape_equals_exact_without_padding)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){3, 2}, &blob));
    pb same = {0}, padded = {0}, swapped = {0}, big = {0};
    pb_shape(&same, (int64_t[]){3, 2}, 2, true);
    pb_shape(&padded, (int64_t[]){1, 3, 2}, 3, false);
    pb_shape(&swapped, (int64_t[]){2, 3}, 2, true);
    /* Caffe narrows dims to int, so (3 + 2^32, 2) would equal (3, 2) there; cblob compares int64. */
    pb_shape(&big, (int64_t[]){3 + (INT64_C(1) << 32), 2}, 2, true);
    CHECK_EQ_INT(shape_equals(blob, &same), 1);
    CHECK_EQ_INT(shape_equals(blob, &padded), 0);
    CHECK_EQ_INT(shape_equals(blob, &swapped), 0);
    CHECK_EQ_INT(shape_equals(blob, &big), 0);
    pb_free(&same), pb_free(&padded), pb_free(&swapped), pb_free(&big);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* ---- 1.G 47-49: FromProto ----------------------------------------------------------------- */

TEST(caffe_1G_47_from_proto_shape)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_create_empty(ctx, CBLOB_DTYPE_FLOAT32, &blob));
    /* Legacy fields give 4 axes, unset ones 0: num = 2 and height = 3 alone give (2, 0, 3, 0). */
    pb legacy = {0};
    legacy_proto(&legacy, (bool[]){true, false, true, false}, (int64_t[]){2, 0, 3, 0});
    CHECK_OK(cblob_blob_from_proto(blob, legacy.data, legacy.size, 1));
    CHECK(ft_shape_is(blob, 4, (int64_t[]){2, 0, 3, 0}));

    /* Legacy fields win over shape when both are present. */
    const float six[6] = {1, 2, 3, 4, 5, 6};
    pb both = {0};
    legacy_proto(&both, (bool[]){true, true, true, true}, (int64_t[]){1, 1, 2, 3});
    pb_shape(&both, (int64_t[]){6}, 1, true);
    pb_floats(&both, 5, six, 6, true);
    CHECK_OK(cblob_blob_from_proto(blob, both.data, both.size, 1));
    CHECK(ft_shape_is(blob, 4, (int64_t[]){1, 1, 2, 3}));

    /* Otherwise the shape's dims; no shape at all is a scalar. */
    pb shaped = {0}, scalar = {0};
    pb_shape(&shaped, (int64_t[]){2, 3}, 2, true);
    pb_floats(&shaped, 5, six, 6, true);
    CHECK_OK(cblob_blob_from_proto(blob, shaped.data, shaped.size, 1));
    CHECK(ft_shape_is(blob, 2, (int64_t[]){2, 3}));
    pb_floats(&scalar, 5, six, 1, true);
    CHECK_OK(cblob_blob_from_proto(blob, scalar.data, scalar.size, 1));
    CHECK(ft_shape_is(blob, 0, NULL));

    /* reshape = 0: ShapeEquals is required and the blob keeps its own shape. */
    CHECK_OK(cblob_blob_reshape(blob, 2, (int64_t[]){2, 3}));
    ft_snapshot before;
    CHECK(ft_snapshot_take(blob, &before));
    pb other = {0};
    pb_shape(&other, (int64_t[]){3, 2}, 2, true);
    pb_floats(&other, 5, six, 6, true);
    CHECK_ERROR(cblob_blob_from_proto(blob, other.data, other.size, 0), CBLOB_ERR_SHAPE);
    CHECK(strstr(cblob_last_error_message(), "reshape not set") != NULL);
    CHECK(ft_snapshot_same(blob, &before));
    ft_snapshot_free(&before);
    pb legacy_same = {0};
    legacy_proto(&legacy_same, (bool[]){true, true, true, true}, (int64_t[]){1, 1, 2, 3});
    pb_floats(&legacy_same, 5, six, 6, true);
    CHECK_OK(cblob_blob_from_proto(blob, legacy_same.data, legacy_same.size, 0));
    CHECK(ft_shape_is(blob, 2, (int64_t[]){2, 3})); /* not reshaped to 4 axes */
    double value = 0;
    CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DATA, 2, (int64_t[]){1, 2}, &value));
    CHECK_NEAR(value, 6, 0);
    pb_free(&legacy), pb_free(&both), pb_free(&shaped), pb_free(&scalar), pb_free(&other), pb_free(&legacy_same);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(caffe_1G_48_from_proto_data)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){3}, &blob));
    cblob_head head;
    CHECK_OK(cblob_blob_head(blob, CBLOB_PART_DATA, &head));
    CHECK_EQ_INT(head, CBLOB_HEAD_UNINITIALIZED);

    /* double_data wins: float data is ignored, even when its count is wrong. */
    const float floats[2] = {100, 200};
    const double doubles[3] = {0.5, -1.25, 3};
    pb both = {0};
    pb_shape(&both, (int64_t[]){3}, 1, true);
    pb_floats(&both, 5, floats, 2, true);
    pb_doubles(&both, 8, doubles, 3, true);
    CHECK_OK(cblob_blob_from_proto(blob, both.data, both.size, 0));
    const float *values = NULL;
    CHECK_OK(cblob_blob_head(blob, CBLOB_PART_DATA, &head));
    CHECK_EQ_INT(head, CBLOB_HEAD_AT_CPU);
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values));
    CHECK(values[0] == 0.5f && values[1] == -1.25f && values[2] == 3.0f);

    /* Data whose count disagrees with the shape, or no data at all, is a parse error. */
    ft_snapshot before;
    CHECK(ft_snapshot_take(blob, &before));
    pb short_data = {0}, no_data = {0};
    pb_shape(&short_data, (int64_t[]){3}, 1, true);
    pb_floats(&short_data, 5, floats, 2, true);
    CHECK_ERROR(cblob_blob_from_proto(blob, short_data.data, short_data.size, 1), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "BlobProto.data at byte") != NULL);
    CHECK(strstr(cblob_last_error_message(), "holds 2 values but the shape 3 (3) needs 3") != NULL);
    pb_shape(&no_data, (int64_t[]){3}, 1, true);
    CHECK_ERROR(cblob_blob_from_proto(blob, no_data.data, no_data.size, 1), CBLOB_ERR_PARSE);
    CHECK(ft_snapshot_same(blob, &before));
    ft_snapshot_free(&before);
    pb_free(&both), pb_free(&short_data), pb_free(&no_data);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(caffe_1G_49_from_proto_diff)
{
    cblob_context *ctx = context_new();
    const int64_t dims[1] = {4};
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, dims, 3, true);
    CHECK(blob != NULL);
    const float data[4] = {1, 2, 3, 4}, diff[4] = {9, 9, 9, 9};
    const double double_diff[4] = {-1, -2, -3, -4};

    /* Neither diff nor double_diff: diff is left as it was, head included. */
    pb no_diff = {0};
    pb_shape(&no_diff, dims, 1, true);
    pb_floats(&no_diff, 5, data, 4, true);
    cblob_head head_before, head_after;
    CHECK_OK(cblob_blob_head(blob, CBLOB_PART_DIFF, &head_before));
    CHECK_OK(cblob_blob_from_proto(blob, no_diff.data, no_diff.size, 0));
    CHECK(ft_blob_holds(blob, CBLOB_PART_DIFF, 4));
    CHECK_OK(cblob_blob_head(blob, CBLOB_PART_DIFF, &head_after));
    CHECK_EQ_INT(head_after, head_before);

    /* double_diff wins over diff. */
    pb both = {0};
    pb_shape(&both, dims, 1, true);
    pb_floats(&both, 5, data, 4, true);
    pb_floats(&both, 6, diff, 4, false);
    pb_doubles(&both, 9, double_diff, 4, true);
    CHECK_OK(cblob_blob_from_proto(blob, both.data, both.size, 0));
    double value;
    CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DIFF, 1, (int64_t[]){3}, &value));
    CHECK_NEAR(value, -4, 0);
    pb only_diff = {0};
    pb_shape(&only_diff, dims, 1, true);
    pb_floats(&only_diff, 5, data, 4, true);
    pb_floats(&only_diff, 6, diff, 4, true);
    CHECK_OK(cblob_blob_from_proto(blob, only_diff.data, only_diff.size, 0));
    CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DIFF, 1, (int64_t[]){0}, &value));
    CHECK_NEAR(value, 9, 0);

    /* A diff whose count disagrees is an error. */
    pb short_diff = {0};
    pb_shape(&short_diff, dims, 1, true);
    pb_floats(&short_diff, 5, data, 4, true);
    pb_floats(&short_diff, 6, diff, 3, true);
    CHECK_ERROR(cblob_blob_from_proto(blob, short_diff.data, short_diff.size, 0), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "BlobProto.diff") != NULL);
    pb_free(&no_diff), pb_free(&both), pb_free(&only_diff), pb_free(&short_diff);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* ---- 1.G 50-52: ToProto ------------------------------------------------------------------- */

#define MAX_FIELDS 16

TEST(caffe_1G_50_to_proto_double_writes_double_fields_only)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT64, 2, (int64_t[]){2, 3}, 1, true);
    CHECK(blob != NULL);
    for (int write_diff = 0; write_diff <= 1; ++write_diff) {
        size_t size;
        uint8_t *bytes = ft_to_proto(blob, write_diff, &size);
        CHECK(bytes != NULL);
        pb_field fields[MAX_FIELDS];
        const int n = pb_list(bytes, size, fields, MAX_FIELDS);
        CHECK(n > 0 && n <= MAX_FIELDS);
        for (uint32_t number = 1; number <= 6; ++number)
            CHECK_MSG(pb_find(fields, n, number) == NULL, "field %u written for a double blob", number);
        const pb_field *data = pb_find(fields, n, 8), *diff = pb_find(fields, n, 9);
        CHECK(pb_find(fields, n, 7) != NULL && data != NULL && data->length == 6 * sizeof(double));
        const double *values = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values));
        CHECK(memcmp(data->payload, values, data->length) == 0);
        CHECK((diff != NULL) == (write_diff == 1));
        free(bytes);
    }
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(caffe_1G_51_to_proto_float_writes_float_fields_only)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 3, (int64_t[]){2, 1, 3}, 1, true);
    CHECK(blob != NULL);
    for (int write_diff = 0; write_diff <= 1; ++write_diff) {
        size_t size;
        uint8_t *bytes = ft_to_proto(blob, write_diff, &size);
        CHECK(bytes != NULL);
        pb_field fields[MAX_FIELDS];
        const int n = pb_list(bytes, size, fields, MAX_FIELDS);
        CHECK(n > 0 && n <= MAX_FIELDS);
        CHECK(pb_find(fields, n, 8) == NULL && pb_find(fields, n, 9) == NULL);
        const pb_field *shape = pb_find(fields, n, 7), *data = pb_find(fields, n, 5), *diff = pb_find(fields, n, 6);
        CHECK(shape != NULL && data != NULL && data->type == PB_LENGTH && data->length == 6 * sizeof(float));
        CHECK((diff != NULL) == (write_diff == 1));
        if (diff != NULL) {
            const float *values = NULL;
            CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DIFF, (const void **)&values));
            CHECK(diff->length == data->length && memcmp(diff->payload, values, diff->length) == 0);
        }
        /* BlobShape { dim: [2, 1, 3] packed } */
        pb_field dims[2];
        CHECK_EQ_INT(pb_list(shape->payload, shape->length, dims, 2), 1);
        CHECK(dims[0].number == 1 && dims[0].length == 3 && memcmp(dims[0].payload, "\x02\x01\x03", 3) == 0);
        free(bytes);
    }
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(caffe_1G_52_to_proto_never_writes_legacy_and_reads_through_cpu_data)
{
    cblob_context *ctx = context_new();
    /* A blob loaded from legacy dims writes them back as a 4-axis shape. */
    pb legacy = {0};
    const float values[6] = {1, 2, 3, 4, 5, 6};
    legacy_proto(&legacy, (bool[]){true, true, true, true}, (int64_t[]){1, 2, 1, 3});
    pb_floats(&legacy, 5, values, 6, false);
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_create_from_proto(ctx, legacy.data, legacy.size, &blob));
    size_t size;
    uint8_t *bytes = ft_to_proto(blob, false, &size);
    CHECK(bytes != NULL);
    pb_field fields[MAX_FIELDS];
    const int n = pb_list(bytes, size, fields, MAX_FIELDS);
    for (uint32_t number = 1; number <= 4; ++number)
        CHECK(pb_find(fields, n, number) == NULL);
    CHECK(pb_find(fields, n, 7) != NULL);
    free(bytes);

    /* Memory never accessed is read like cpu_data(): allocated, zero-filled, head AT_CPU. */
    cblob_blob *fresh = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){4}, &fresh));
    bytes = ft_to_proto(fresh, true, &size);
    CHECK(bytes != NULL);
    cblob_head head;
    CHECK_OK(cblob_blob_head(fresh, CBLOB_PART_DIFF, &head));
    CHECK_EQ_INT(head, CBLOB_HEAD_AT_CPU);
    const int m = pb_list(bytes, size, fields, MAX_FIELDS);
    const pb_field *data = pb_find(fields, m, 5);
    CHECK(data != NULL && data->length == 16 && memcmp(data->payload, (const float[4]){0}, 16) == 0);
    free(bytes);

    /* A blob that never had a shape has nothing to write (Caffe aborts). */
    cblob_blob *empty = NULL;
    CHECK_OK(cblob_blob_create_empty(ctx, CBLOB_DTYPE_FLOAT32, &empty));
    CHECK_ERROR(cblob_blob_to_proto(empty, 0, NULL, 0, &size), CBLOB_ERR_STATE);
    pb_free(&legacy);
    cblob_blob_destroy(blob), cblob_blob_destroy(fresh), cblob_blob_destroy(empty);
    cblob_context_destroy(ctx);
}

TEST(to_proto_is_always_a_fresh_message)
{
    /* Caffe's ToProto into a reused message keeps stale fields; cblob writes each message anew,
     * so writing a double blob after a float one leaves no float data behind. */
    cblob_context *ctx = context_new();
    cblob_blob *f32 = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){3}, 1, true);
    cblob_blob *f64 = ft_blob(ctx, CBLOB_DTYPE_FLOAT64, 1, (int64_t[]){3}, 2, false);
    CHECK(f32 != NULL && f64 != NULL);
    uint8_t buffer[256];
    size_t size = 0;
    CHECK_OK(cblob_blob_to_proto(f32, 1, buffer, sizeof buffer, &size));
    CHECK_OK(cblob_blob_to_proto(f64, 0, buffer, sizeof buffer, &size));
    pb_field fields[MAX_FIELDS];
    const int n = pb_list(buffer, size, fields, MAX_FIELDS);
    CHECK(n == 2 && pb_find(fields, n, 7) != NULL && pb_find(fields, n, 8) != NULL);
    cblob_blob_destroy(f32), cblob_blob_destroy(f64);
    cblob_context_destroy(ctx);
}

TEST(to_proto_buffer_convention)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){5}, 1, false);
    size_t size = 0, again = 0;
    CHECK_OK(cblob_blob_to_proto(blob, 0, NULL, 0, &size));
    CHECK(size > 20);
    uint8_t *buffer = malloc(size);
    memset(buffer, 0x5a, size);
    CHECK_ERROR(cblob_blob_to_proto(blob, 0, buffer, size - 1, &again), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_EQ_INT(again, 0);
    CHECK_EQ_INT(buffer[0], 0x5a); /* nothing written on failure */
    CHECK_ERROR(cblob_blob_to_proto(blob, 0, NULL, 8, &again), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(cblob_blob_to_proto(blob, 0, buffer, size, &again));
    CHECK_EQ_INT(again, size);
    free(buffer);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* ---- round trips ------------------------------------------------------------------------ */

TEST(round_trip_every_dtype_with_and_without_diff)
{
    cblob_context *ctx = context_new();
    const int64_t dims[3] = {2, 3, 4};
    for (int d = 0; d < FT_DTYPES; ++d) {
        for (int with_diff = 0; with_diff <= 1; ++with_diff) {
            const cblob_dtype dtype = ft_dtypes[d];
            cblob_blob *source = ft_blob(ctx, dtype, 3, dims, 10 + d, with_diff);
            CHECK(source != NULL);
            size_t size;
            uint8_t *bytes = ft_to_proto(source, with_diff, &size);
            CHECK(bytes != NULL);
            /* Into a blob of the same dtype. */
            cblob_blob *same = NULL;
            CHECK_OK(cblob_blob_create_empty(ctx, dtype, &same));
            CHECK_OK(cblob_blob_from_proto(same, bytes, size, 1));
            CHECK(ft_same_values(source, same, CBLOB_PART_DATA));
            cblob_head head;
            CHECK_OK(cblob_blob_head(same, CBLOB_PART_DIFF, &head));
            CHECK_MSG((head != CBLOB_HEAD_UNINITIALIZED) == with_diff, "dtype %d: diff head %d", (int)dtype, (int)head);
            if (with_diff)
                CHECK(ft_same_values(source, same, CBLOB_PART_DIFF));
            /* As a new blob, whose dtype follows the file: float32 for data, float64 for double_data. */
            cblob_blob *created = NULL;
            CHECK_OK(cblob_blob_create_from_proto(ctx, bytes, size, &created));
            cblob_dtype created_dtype;
            CHECK_OK(cblob_blob_dtype(created, &created_dtype));
            CHECK_EQ_INT(created_dtype, dtype == CBLOB_DTYPE_FLOAT32 ? CBLOB_DTYPE_FLOAT32 : CBLOB_DTYPE_FLOAT64);
            CHECK(ft_same_values(source, created, CBLOB_PART_DATA));
            free(bytes);
            cblob_blob_destroy(source), cblob_blob_destroy(same), cblob_blob_destroy(created);
        }
    }
    cblob_context_destroy(ctx);
}

TEST(round_trip_legacy_and_shape_forms)
{
    cblob_context *ctx = context_new();
    float values[24];
    for (int i = 0; i < 24; ++i)
        values[i] = (float)ft_value(CBLOB_DTYPE_FLOAT32, 5, i);
    for (int packed = 0; packed <= 1; ++packed) {
        pb legacy = {0}, shaped = {0};
        legacy_proto(&legacy, (bool[]){true, true, true, true}, (int64_t[]){1, 2, 3, 4});
        pb_floats(&legacy, 5, values, 24, packed);
        pb_floats(&legacy, 6, values, 24, !packed);
        pb_shape(&shaped, (int64_t[]){2, 3, 4}, 3, packed);
        pb_floats(&shaped, 5, values, 24, packed);
        const pb *forms[2] = {&legacy, &shaped};
        for (int f = 0; f < 2; ++f) {
            cblob_blob *first = NULL, *second = NULL;
            CHECK_OK(cblob_blob_create_from_proto(ctx, forms[f]->data, forms[f]->size, &first));
            CHECK(ft_blob_holds(first, CBLOB_PART_DATA, 5));
            size_t size;
            uint8_t *bytes = ft_to_proto(first, f == 0, &size);
            CHECK(bytes != NULL);
            CHECK_OK(cblob_blob_create_from_proto(ctx, bytes, size, &second));
            CHECK(ft_same_values(first, second, CBLOB_PART_DATA));
            if (f == 0)
                CHECK(ft_same_values(first, second, CBLOB_PART_DIFF) && ft_blob_holds(second, CBLOB_PART_DIFF, 5));
            free(bytes);
            cblob_blob_destroy(first), cblob_blob_destroy(second);
        }
        pb_free(&legacy), pb_free(&shaped);
    }
    cblob_context_destroy(ctx);
}

TEST(round_trip_through_files)
{
    char folder[256], path[512];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/mean.binaryproto", folder);
    cblob_context *ctx = context_new();
    cblob_blob *source = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 4, (int64_t[]){1, 3, 4, 4}, 2, true);
    CHECK_OK(cblob_blob_to_proto_file(source, 1, path));
    cblob_blob *created = NULL, *loaded = NULL;
    CHECK_OK(cblob_blob_create_from_proto_file(ctx, path, &created));
    CHECK(ft_same_values(source, created, CBLOB_PART_DATA) && ft_same_values(source, created, CBLOB_PART_DIFF));
    CHECK_OK(cblob_blob_create_empty(ctx, CBLOB_DTYPE_FLOAT64, &loaded));
    CHECK_OK(cblob_blob_from_proto_file(loaded, path, 1));
    CHECK(ft_same_values(source, loaded, CBLOB_PART_DATA));
    /* The bytes in the file are the bytes to_proto gives. */
    size_t file_size = 0, size = 0;
    uint8_t *file_bytes = ft_read_file(path, &file_size), *bytes = ft_to_proto(source, true, &size);
    CHECK(file_bytes != NULL && bytes != NULL && size == file_size && memcmp(bytes, file_bytes, size) == 0);
    free(file_bytes), free(bytes);
    cblob_blob_destroy(source), cblob_blob_destroy(created), cblob_blob_destroy(loaded);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

TEST(legacy_dims_written_for_old_readers)
{
    /* CBLOB_PROTO_LEGACY_DIMS writes num/channels/height/width (fields 1-4, padded with 1 in
     * front) instead of `shape`; it reads back as Caffe reads legacy dims: 4 axes (the Python
     * suite checks with protobuf that no `shape` is written). */
    char folder[256], path[512], vector_path[512];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/mean.binaryproto", folder);
    snprintf(vector_path, sizeof vector_path, "%s/vector.binaryproto", folder);
    cblob_context *ctx = context_new();
    cblob_blob *source = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 3, (int64_t[]){3, 5, 4}, 2, true);
    CHECK_OK(cblob_blob_to_proto_file_with(source, CBLOB_PROTO_LEGACY_DIMS | CBLOB_PROTO_DIFF, path));
    size_t size = 0;
    uint8_t *bytes = ft_read_file(path, &size);
    CHECK(bytes != NULL && size > 8);
    /* The message starts with the four legacy dims, as varint fields 1 to 4. */
    const uint8_t dims[] = {0x08, 1, 0x10, 3, 0x18, 5, 0x20, 4};
    CHECK(memcmp(bytes, dims, sizeof dims) == 0);
    free(bytes);
    cblob_blob *back = NULL;
    CHECK_OK(cblob_blob_create_from_proto_file(ctx, path, &back));
    int64_t shape[CBLOB_MAX_AXES];
    int32_t axes = 0;
    CHECK_OK(cblob_blob_shape(back, CBLOB_MAX_AXES, shape, &axes));
    CHECK(axes == 4 && shape[0] == 1 && shape[1] == 3 && shape[2] == 5 && shape[3] == 4);
    /* Five axes do not fit: refused before anything is written. */
    cblob_blob *five = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 5, (int64_t[]){1, 1, 1, 1, 2}, 1, false);
    char five_path[512];
    snprintf(five_path, sizeof five_path, "%s/five.binaryproto", folder);
    CHECK_ERROR(cblob_blob_to_proto_file_with(five, CBLOB_PROTO_LEGACY_DIMS, five_path), CBLOB_ERR_SHAPE);
    CHECK(access(five_path, F_OK) != 0);
    cblob_blob *pair[] = {source, five};
    CHECK_ERROR(cblob_blob_vector_to_proto_file_with(pair, 2, CBLOB_PROTO_LEGACY_DIMS, vector_path), CBLOB_ERR_SHAPE);
    CHECK(access(vector_path, F_OK) != 0);
    CHECK_OK(cblob_blob_vector_to_proto_file_with(pair, 1, CBLOB_PROTO_LEGACY_DIMS, vector_path));
    CHECK_ERROR(cblob_blob_to_proto_file_with(source, 4, path), CBLOB_ERR_INVALID_ARGUMENT);
    cblob_blob_destroy(source), cblob_blob_destroy(back), cblob_blob_destroy(five);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}

TEST(from_proto_keeps_storage_when_it_fits_and_shares_with_other_blobs)
{
    /* As Caffe: FromProto writes into the existing memory when the count fits, so a blob sharing
     * that memory sees the new values. */
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){6}, 1, false);
    cblob_blob *sharer = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){6}, &sharer));
    CHECK_OK(cblob_blob_share(sharer, blob, CBLOB_PART_DATA));
    const void *before = NULL, *after = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &before));
    pb proto = {0};
    pb_shape(&proto, (int64_t[]){2, 3}, 2, true);
    const float values[6] = {6, 5, 4, 3, 2, 1};
    pb_floats(&proto, 5, values, 6, true);
    CHECK_OK(cblob_blob_from_proto(blob, proto.data, proto.size, 1));
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &after));
    CHECK(before == after);
    double value;
    CHECK_OK(cblob_blob_read_element(sharer, CBLOB_PART_DATA, 1, (int64_t[]){0}, &value));
    CHECK_NEAR(value, 6, 0);
    pb_free(&proto);
    cblob_blob_destroy(blob), cblob_blob_destroy(sharer);
    cblob_context_destroy(ctx);
}

/* ---- integer blobs (Caffe has no ToProto for them; cblob's choice) -------------------------- */

TEST(integer_blobs_write_double_data_exactly)
{
    cblob_context *ctx = context_new();
    cblob_blob *i32 = NULL, *u32 = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 1, (int64_t[]){3}, &i32));
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_UINT32, 1, (int64_t[]){3}, &u32));
    int32_t *iv = NULL;
    uint32_t *uv = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(i32, CBLOB_PART_DATA, (void **)&iv));
    CHECK_OK(cblob_blob_mutable_cpu_ptr(u32, CBLOB_PART_DATA, (void **)&uv));
    iv[0] = INT32_MIN, iv[1] = -1, iv[2] = INT32_MAX;
    uv[0] = 0, uv[1] = 1, uv[2] = UINT32_MAX;
    cblob_blob *blobs[2] = {i32, u32};
    for (int b = 0; b < 2; ++b) {
        size_t size;
        uint8_t *bytes = ft_to_proto(blobs[b], false, &size);
        pb_field fields[MAX_FIELDS];
        const int n = pb_list(bytes, size, fields, MAX_FIELDS);
        CHECK(pb_find(fields, n, 8) != NULL && pb_find(fields, n, 5) == NULL);
        cblob_blob *back = NULL;
        CHECK_OK(cblob_blob_create_empty(ctx, b == 0 ? CBLOB_DTYPE_INT32 : CBLOB_DTYPE_UINT32, &back));
        CHECK_OK(cblob_blob_from_proto(back, bytes, size, 1));
        CHECK(ft_same_values(blobs[b], back, CBLOB_PART_DATA));
        free(bytes);
        cblob_blob_destroy(back);
    }
    cblob_blob_destroy(i32), cblob_blob_destroy(u32);
    cblob_context_destroy(ctx);
}

TEST(integer_blobs_truncate_like_caffe_and_refuse_values_that_do_not_fit)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_INT32, 1, (int64_t[]){3}, &blob));
    pb fits = {0};
    pb_shape(&fits, (int64_t[]){3}, 1, true);
    pb_floats(&fits, 5, (const float[]){1.9f, -1.9f, 2147483520.0f}, 3, true);
    CHECK_OK(cblob_blob_from_proto(blob, fits.data, fits.size, 0));
    const int32_t *values = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&values));
    CHECK(values[0] == 1 && values[1] == -1 && values[2] == 2147483520);
    ft_snapshot before;
    CHECK(ft_snapshot_take(blob, &before));
    const double bad[3][3] = {{0, 0, 2147483648.0}, {0, NAN, 0}, {-2147483649.0, 0, 0}};
    for (int i = 0; i < 3; ++i) {
        pb proto = {0};
        pb_shape(&proto, (int64_t[]){3}, 1, true);
        pb_doubles(&proto, 8, bad[i], 3, true);
        CHECK_ERROR(cblob_blob_from_proto(blob, proto.data, proto.size, 0), CBLOB_ERR_OVERFLOW);
        CHECK(ft_snapshot_same(blob, &before));
        pb_free(&proto);
    }
    cblob_blob *unsigned_blob = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_UINT32, 1, (int64_t[]){1}, &unsigned_blob));
    pb negative = {0};
    pb_shape(&negative, (int64_t[]){1}, 1, true);
    pb_floats(&negative, 5, (const float[]){-1.0f}, 1, true);
    CHECK_ERROR(cblob_blob_from_proto(unsigned_blob, negative.data, negative.size, 0), CBLOB_ERR_OVERFLOW);
    ft_snapshot_free(&before);
    pb_free(&fits), pb_free(&negative);
    cblob_blob_destroy(blob), cblob_blob_destroy(unsigned_blob);
    cblob_context_destroy(ctx);
}

/* ---- what readers accept ----------------------------------------------------------------- */

TEST(packed_unpacked_and_split_values_read_the_same)
{
    cblob_context *ctx = context_new();
    float values[10];
    for (int i = 0; i < 10; ++i)
        values[i] = (float)ft_value(CBLOB_DTYPE_FLOAT32, 7, i);
    pb packed = {0}, unpacked = {0}, split = {0};
    pb_shape(&packed, (int64_t[]){10}, 1, true);
    pb_floats(&packed, 5, values, 10, true);
    pb_shape(&unpacked, (int64_t[]){10}, 1, false);
    pb_floats(&unpacked, 5, values, 10, false);
    /* Values spread over several fields, packed and not, are concatenated in order. */
    pb_floats(&split, 5, values, 3, true);
    pb_shape(&split, (int64_t[]){10}, 1, true);
    pb_floats(&split, 5, values + 3, 4, false);
    pb_floats(&split, 5, values + 7, 3, true);
    const pb *inputs[3] = {&packed, &unpacked, &split};
    for (int i = 0; i < 3; ++i) {
        cblob_blob *blob = NULL;
        CHECK_OK(cblob_blob_create_from_proto(ctx, inputs[i]->data, inputs[i]->size, &blob));
        CHECK(ft_shape_is(blob, 1, (int64_t[]){10}) && ft_blob_holds(blob, CBLOB_PART_DATA, 7));
        cblob_blob_destroy(blob);
    }
    pb_free(&packed), pb_free(&unpacked), pb_free(&split);
    cblob_context_destroy(ctx);
}

TEST(unknown_fields_of_every_wire_type_are_skipped)
{
    cblob_context *ctx = context_new();
    const float values[2] = {1.5f, -2.5f};
    pb proto = {0}, nested = {0};
    pb_int(&proto, 1000, 12345);                    /* varint */
    pb_string(&proto, 1001, "a note from a fork");  /* length-delimited */
    pb_shape(&proto, (int64_t[]){2}, 1, true);
    pb_tag(&proto, 1002, PB_FIXED32);               /* fixed32 */
    pb_raw(&proto, "\x01\x02\x03\x04", 4);
    pb_tag(&proto, 1003, PB_FIXED64);               /* fixed64 */
    pb_raw(&proto, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    pb_int(&nested, 1, 7);
    pb_tag(&proto, 1004, PB_GROUP_START);           /* a group, with a nested group */
    pb_int(&proto, 1, 1);
    pb_tag(&proto, 2, PB_GROUP_START);
    pb_message(&proto, 3, &nested);
    pb_tag(&proto, 2, PB_GROUP_END);
    pb_tag(&proto, 1004, PB_GROUP_END);
    pb_floats(&proto, 5, values, 2, true);
    pb_int(&proto, 10, 3);                          /* a field number BlobProto does not use */
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_create_from_proto(ctx, proto.data, proto.size, &blob));
    double v;
    CHECK_OK(cblob_blob_read_element(blob, CBLOB_PART_DATA, 1, (int64_t[]){1}, &v));
    CHECK_NEAR(v, -2.5, 0);
    pb_free(&proto), pb_free(&nested);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(repeated_header_fields_follow_proto2_rules)
{
    /* Scalars: the last occurrence wins. Message fields (shape): occurrences merge. */
    cblob_context *ctx = context_new();
    const float values[6] = {0};
    pb legacy = {0}, shapes = {0};
    pb_int(&legacy, 1, 9);
    legacy_proto(&legacy, (bool[]){true, true, true, true}, (int64_t[]){1, 1, 2, 3});
    pb_floats(&legacy, 5, values, 6, true);
    pb_shape(&shapes, (int64_t[]){2}, 1, true);
    pb_shape(&shapes, (int64_t[]){3}, 1, false);
    pb_floats(&shapes, 5, values, 6, true);
    cblob_blob *a = NULL, *b = NULL;
    CHECK_OK(cblob_blob_create_from_proto(ctx, legacy.data, legacy.size, &a));
    CHECK(ft_shape_is(a, 4, (int64_t[]){1, 1, 2, 3}));
    CHECK_OK(cblob_blob_create_from_proto(ctx, shapes.data, shapes.size, &b));
    CHECK(ft_shape_is(b, 2, (int64_t[]){2, 3}));
    pb_free(&legacy), pb_free(&shapes);
    cblob_blob_destroy(a), cblob_blob_destroy(b);
    cblob_context_destroy(ctx);
}

TEST(empty_and_zero_count_blobs)
{
    cblob_context *ctx = context_new();
    /* A dimension of 0: no values needed, none written. */
    cblob_blob *zero = NULL, *back = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){0, 5}, &zero));
    size_t size;
    uint8_t *bytes = ft_to_proto(zero, true, &size);
    CHECK(bytes != NULL);
    CHECK_OK(cblob_blob_create_from_proto(ctx, bytes, size, &back));
    CHECK(ft_shape_is(back, 2, (int64_t[]){0, 5}));
    free(bytes);
    /* An empty message is a scalar without its one value. */
    CHECK_ERROR(cblob_blob_from_proto(back, (const uint8_t *)"", 0, 1), CBLOB_ERR_PARSE);
    /* A scalar blob writes no shape and reads back as a scalar. */
    cblob_blob *scalar = ft_blob(ctx, CBLOB_DTYPE_FLOAT64, 0, NULL, 3, false), *scalar_back = NULL;
    bytes = ft_to_proto(scalar, false, &size);
    CHECK(bytes != NULL);
    CHECK_OK(cblob_blob_create_from_proto(ctx, bytes, size, &scalar_back));
    CHECK(ft_shape_is(scalar_back, 0, NULL) && ft_same_values(scalar, scalar_back, CBLOB_PART_DATA));
    free(bytes);
    cblob_blob_destroy(zero), cblob_blob_destroy(back), cblob_blob_destroy(scalar), cblob_blob_destroy(scalar_back);
    cblob_context_destroy(ctx);
}

/* The header: "The data head becomes AT_CPU", as Caffe's FromProto takes mutable_cpu_data, also
 * when the BlobProto holds no values: into a blob that never had memory, one whose memory was
 * never accessed, and one whose data is current on no host copy yet. The diff is left alone. */
TEST(from_proto_without_values_makes_the_data_head_at_cpu)
{
    cblob_context *ctx = context_new();
    cblob_blob *zero = NULL;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){0, 5}, &zero));
    size_t size;
    uint8_t *bytes = ft_to_proto(zero, false, &size);
    CHECK(bytes != NULL);
    for (int reshape = 0; reshape < 2; ++reshape) {
        cblob_blob *never = NULL, *untouched = NULL;
        CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){0, 5}, &never));
        CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){4}, &untouched));
        if (!reshape)
            CHECK_OK(cblob_blob_reshape(untouched, 2, (int64_t[]){0, 5}));
        cblob_blob *const targets[2] = {never, untouched};
        for (int t = 0; t < 2; ++t) {
            CHECK_OK(cblob_blob_from_proto(targets[t], bytes, size, reshape));
            CHECK(ft_shape_is(targets[t], 2, (int64_t[]){0, 5}));
            cblob_head head = -1;
            CHECK_OK(cblob_blob_head(targets[t], CBLOB_PART_DATA, &head));
            CHECK_MSG(head == CBLOB_HEAD_AT_CPU, "target %d (reshape %d): the data head is %d", t, reshape, (int)head);
            CHECK_OK(cblob_blob_head(targets[t], CBLOB_PART_DIFF, &head));
            CHECK_EQ_INT(head, CBLOB_HEAD_UNINITIALIZED);
        }
        cblob_blob_destroy(never), cblob_blob_destroy(untouched);
    }
    free(bytes);
    cblob_blob_destroy(zero);
    cblob_context_destroy(ctx);
}

/* ---- malformed input -------------------------------------------------------------------- */

/* Loads bytes into a blob that must come out unchanged, and expects a parse error naming what
 * and where. */
#define CHECK_REJECTED(bytes, size, expected_text) \
    do { \
        ft_snapshot before_; \
        CHECK(ft_snapshot_take(target, &before_)); \
        CHECK_ERROR(cblob_blob_from_proto(target, (bytes), (size), 1), CBLOB_ERR_PARSE); \
        CHECK_MSG(strstr(cblob_last_error_message(), (expected_text)) != NULL, "message \"%s\" lacks \"%s\"", \
                  cblob_last_error_message(), (expected_text)); \
        CHECK(ft_snapshot_same(target, &before_)); \
        ft_snapshot_free(&before_); \
    } while (0)

TEST(malformed_input_names_the_field_and_byte_offset)
{
    cblob_context *ctx = context_new();
    cblob_blob *target = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){2}, 1, true);
    pb odd = {0}, wrong_type = {0}, negative = {0}, many = {0}, overflow = {0}, field_zero = {0}, bad_wire = {0},
       stray_end = {0}, long_varint = {0}, unterminated_group = {0}, nul_shape = {0};
    /* shape at bytes 0-4, then data (field 5) at byte 5 with 7 bytes: not whole floats. */
    pb_shape(&odd, (int64_t[]){2}, 1, true);
    pb_bytes(&odd, 5, "1234567", 7);
    CHECK_REJECTED(odd.data, odd.size, "BlobProto.data at byte 5: packed length 7 is not a whole number of 4-byte values");
    pb_int(&wrong_type, 5, 1);
    CHECK_REJECTED(wrong_type.data, wrong_type.size, "BlobProto.data at byte 0: wire type varint");
    pb_shape(&negative, (int64_t[]){2, -3}, 2, true);
    CHECK_REJECTED(negative.data, negative.size, "BlobProto.shape at byte 0: dim[1] is -3");
    int64_t dims[33];
    for (int i = 0; i < 33; ++i)
        dims[i] = 1;
    pb_shape(&many, dims, 33, false);
    CHECK_REJECTED(many.data, many.size, "more than 32 dims");
    pb_shape(&overflow, (int64_t[]){INT64_MAX, 4}, 2, true);
    CHECK_REJECTED(overflow.data, overflow.size, "overflows");
    pb_varint(&field_zero, 0);
    CHECK_REJECTED(field_zero.data, field_zero.size, "at byte 0: field number 0");
    pb_tag(&bad_wire, 5, 7);
    CHECK_REJECTED(bad_wire.data, bad_wire.size, "wire type 7 does not exist");
    pb_tag(&stray_end, 3, PB_GROUP_END);
    CHECK_REJECTED(stray_end.data, stray_end.size, "group end tag outside any group");
    pb_tag(&long_varint, 1, PB_VARINT);
    pb_raw(&long_varint, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
    CHECK_REJECTED(long_varint.data, long_varint.size, "BlobProto.num at byte 0: a varint longer than 10 bytes");
    pb_tag(&unterminated_group, 40, PB_GROUP_START);
    pb_int(&unterminated_group, 1, 1);
    CHECK_REJECTED(unterminated_group.data, unterminated_group.size, "no end tag");
    /* A dim that is not a complete varint inside a packed BlobShape. */
    pb inner = {0};
    pb_bytes(&inner, 1, "\x02\x83", 2);
    pb_message(&nul_shape, 7, &inner);
    CHECK_REJECTED(nul_shape.data, nul_shape.size, "BlobProto.shape.dim at byte 5: packed varint element 1");
    pb_free(&odd), pb_free(&wrong_type), pb_free(&negative), pb_free(&many), pb_free(&overflow);
    pb_free(&field_zero), pb_free(&bad_wire), pb_free(&stray_end), pb_free(&long_varint);
    pb_free(&unterminated_group), pb_free(&nul_shape), pb_free(&inner);
    cblob_blob_destroy(target);
    cblob_context_destroy(ctx);
}

TEST(every_truncation_of_a_blob_is_rejected_cleanly)
{
    /* Each prefix of a valid BlobProto (packed and unpacked) either parses to a consistent blob
     * or fails with CBLOB_ERR_PARSE; none crashes, leaks or changes the target. */
    cblob_context *ctx = context_new();
    cblob_blob *target = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){3}, 1, true);
    for (int packed = 0; packed <= 1; ++packed) {
        /* Ordered so that no prefix is itself a valid message: data (needed) comes last. */
        pb full = {0};
        const double values[3] = {1, 2, 3};
        pb_shape(&full, (int64_t[]){3}, 1, packed);
        pb_floats(&full, 6, (const float[]){4, 5, 6}, 3, packed);
        pb_doubles(&full, 8, values, 3, packed);
        for (size_t cut = 0; cut < full.size; ++cut) {
            ft_snapshot before;
            CHECK(ft_snapshot_take(target, &before));
            const cblob_status status = cblob_blob_from_proto(target, full.data, cut, 1);
            CHECK_MSG(status == CBLOB_ERR_PARSE, "a %zu-byte prefix of %zu gave %s", cut, full.size,
                      cblob_status_name(status));
            CHECK(strstr(cblob_last_error_message(), "at byte") != NULL);
            CHECK(ft_snapshot_same(target, &before));
            ft_snapshot_free(&before);
        }
        pb_free(&full);
    }
    cblob_blob_destroy(target);
    cblob_context_destroy(ctx);
}

TEST(a_failed_load_leaves_the_blob_untouched_even_when_it_would_grow)
{
    /* The values are checked before the new storage is installed: a blob that would have grown
     * keeps its old storage, shape and values. */
    cblob_context *ctx = context_new();
    cblob_blob *target = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){2}, 1, true);
    pb big = {0};
    pb_shape(&big, (int64_t[]){1000}, 1, true);
    float values[999] = {0};
    pb_floats(&big, 5, values, 999, true);
    CHECK_REJECTED(big.data, big.size, "holds 999 values");
    pb_free(&big);
    cblob_blob_destroy(target);
    cblob_context_destroy(ctx);
}

TEST(detect_tells_the_three_kinds_apart)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){2, 2}, 1, false);
    size_t blob_size;
    uint8_t *blob_bytes = ft_to_proto(blob, false, &blob_size);
    cblob_proto_kind kind = 0;
    CHECK_OK(cblob_proto_detect(blob_bytes, blob_size, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_BLOB);
    uint8_t vector[512];
    size_t vector_size = 0;
    CHECK_OK(cblob_blob_vector_to_proto((cblob_blob *const[]){blob, blob}, 2, 0, vector, sizeof vector, &vector_size));
    CHECK_OK(cblob_proto_detect(vector, vector_size, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_BLOB_VECTOR);
    /* Legacy-only blob, a net with layers, a net with only a name. */
    pb legacy = {0}, net = {0}, named = {0}, layer = {0}, unknown = {0};
    pb_int(&legacy, 1, 0);
    CHECK_OK(cblob_proto_detect(legacy.data, legacy.size, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_BLOB);
    pb_string(&layer, 1, "conv1");
    pb_message(&net, 100, &layer);
    CHECK_OK(cblob_proto_detect(net.data, net.size, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_NET);
    pb_string(&named, 1, "LeNet");
    CHECK_OK(cblob_proto_detect(named.data, named.size, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_NET);
    /* Each reader, given another kind, says what the bytes hold. */
    cblob_blob *wrong = NULL;
    CHECK_ERROR(cblob_blob_create_from_proto(ctx, net.data, net.size, &wrong), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "holds a NetParameter, not a BlobProto") != NULL && wrong == NULL);
    CHECK_ERROR(cblob_blob_create_from_proto(ctx, vector, vector_size, &wrong), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "holds a BlobProtoVector, not a BlobProto") != NULL);
    /* Nothing to go by, nothing at all, and garbage. */
    pb_int(&unknown, 42, 1);
    kind = 0;
    CHECK_ERROR(cblob_proto_detect(unknown.data, unknown.size, &kind), CBLOB_ERR_PARSE);
    CHECK_ERROR(cblob_proto_detect((const uint8_t *)"", 0, &kind), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "empty") != NULL);
    CHECK_ERROR(cblob_proto_detect((const uint8_t *)"\xff\xff\xff", 3, &kind), CBLOB_ERR_PARSE);
    CHECK_EQ_INT(kind, 0);
    free(blob_bytes);
    pb_free(&legacy), pb_free(&net), pb_free(&named), pb_free(&layer), pb_free(&unknown);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* Detection tries field 1 as a BlobProto, which fails on purpose for a net's name: a call that
 * succeeds must still leave the thread's message of the last failure as it was. */
TEST(detect_keeps_the_last_error_message_when_it_succeeds)
{
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 2, (int64_t[]){2, 2}, 1, false);
    pb named = {0}, net = {0}, layer = {0};
    pb_string(&named, 1, "LeNet");
    pb_string(&net, 1, "LeNet");
    pb_string(&layer, 1, "conv1");
    pb_message(&net, 100, &layer);
    char folder[256], path[300];
    CHECK(ft_temp_folder(folder, sizeof folder));
    snprintf(path, sizeof path, "%s/net.caffemodel", folder);
    CHECK(ft_write_file(path, net.data, net.size));

    CHECK_ERROR(cblob_blob_reshape(blob, -1, NULL), CBLOB_ERR_SHAPE);
    char before[1024];
    snprintf(before, sizeof before, "%s", cblob_last_error_message());
    cblob_proto_kind kind = 0;
    CHECK_OK(cblob_proto_detect(named.data, named.size, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_NET);
    CHECK_OK(cblob_proto_detect(net.data, net.size, &kind));
    CHECK_OK(cblob_proto_detect_file(path, &kind));
    CHECK_EQ_INT(kind, CBLOB_PROTO_NET);
    CHECK_MSG(strcmp(cblob_last_error_message(), before) == 0, "the message became \"%s\" (was \"%s\")",
              cblob_last_error_message(), before);

    ft_remove_folder(folder);
    pb_free(&named), pb_free(&net), pb_free(&layer);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(blob_vectors_round_trip_and_report_room)
{
    cblob_context *ctx = context_new();
    cblob_blob *blobs[3] = {ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){4}, 1, true),
                            ft_blob(ctx, CBLOB_DTYPE_FLOAT64, 2, (int64_t[]){2, 2}, 2, false),
                            ft_blob(ctx, CBLOB_DTYPE_INT32, 0, NULL, 3, false)};
    size_t size = 0;
    CHECK_OK(cblob_blob_vector_to_proto(blobs, 3, 1, NULL, 0, &size));
    uint8_t *bytes = malloc(size);
    CHECK_OK(cblob_blob_vector_to_proto(blobs, 3, 1, bytes, size, &size));
    int64_t count = -1;
    CHECK_OK(cblob_blob_vector_from_proto(ctx, bytes, size, 0, NULL, &count));
    CHECK_EQ_INT(count, 3);
    cblob_blob *out[3] = {NULL, NULL, NULL};
    int64_t untouched = -7;
    CHECK_ERROR(cblob_blob_vector_from_proto(ctx, bytes, size, 2, out, &untouched), CBLOB_ERR_OUT_OF_RANGE);
    CHECK(untouched == -7 && out[0] == NULL);
    CHECK_ERROR(cblob_blob_vector_from_proto(ctx, bytes, size, 3, NULL, &count), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_OK(cblob_blob_vector_from_proto(ctx, bytes, size, 3, out, &count));
    for (int i = 0; i < 3; ++i)
        CHECK(ft_same_values(blobs[i], out[i], CBLOB_PART_DATA));
    CHECK(ft_same_values(blobs[0], out[0], CBLOB_PART_DIFF));
    /* A bad blob anywhere in the vector fails the whole read, naming it. */
    pb vector = {0}, good = {0}, bad = {0};
    pb_shape(&good, (int64_t[]){1}, 1, true);
    pb_floats(&good, 5, (const float[]){1}, 1, true);
    pb_shape(&bad, (int64_t[]){2}, 1, true);
    pb_message(&vector, 1, &good);
    pb_message(&vector, 1, &bad);
    CHECK_ERROR(cblob_blob_vector_from_proto(ctx, vector.data, vector.size, 0, NULL, &count), CBLOB_ERR_PARSE);
    CHECK(strstr(cblob_last_error_message(), "BlobProtoVector.blobs[1].data") != NULL);
    /* The empty vector. */
    CHECK_OK(cblob_blob_vector_to_proto(NULL, 0, 0, NULL, 0, &size));
    CHECK_EQ_INT(size, 0);
    free(bytes);
    pb_free(&vector), pb_free(&good), pb_free(&bad);
    for (int i = 0; i < 3; ++i)
        cblob_blob_destroy(blobs[i]), cblob_blob_destroy(out[i]);
    cblob_context_destroy(ctx);
}

TEST(saving_to_a_bad_path_fails_cleanly)
{
    char folder[256], path[512];
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = context_new();
    cblob_blob *blob = ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){4}, 1, false);
    snprintf(path, sizeof path, "%s/missing/blob.binaryproto", folder);
    CHECK_ERROR(cblob_blob_to_proto_file(blob, 0, path), CBLOB_ERR_IO);
    CHECK(strstr(cblob_last_error_message(), path) != NULL);
    /* A folder in the way: the temporary file beside it is removed, nothing is left behind. */
    snprintf(path, sizeof path, "%s/in-the-way", folder);
    CHECK(mkdir(path, 0700) == 0);
    CHECK_ERROR(cblob_blob_to_proto_file(blob, 0, path), CBLOB_ERR_IO);
    CHECK(rmdir(path) == 0);
    snprintf(path, sizeof path, "%s/missing.binaryproto", folder);
    cblob_blob *loaded = NULL;
    CHECK_ERROR(cblob_blob_create_from_proto_file(ctx, path, &loaded), CBLOB_ERR_IO);
    CHECK(strstr(cblob_last_error_message(), "No such file") != NULL && loaded == NULL);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
    /* rmdir succeeds only when the folder was left empty. */
    CHECK(access(folder, F_OK) != 0);
}

TEST(a_blob_vector_whose_first_blob_passes_the_identified_head_opens_as_a_file)
{
    /* cblob_file_open tells a file's kind from its first 64 KiB; a vector's first blob larger than
     * that cut the first field, and the file was refused as malformed (issue 30, found while
     * testing cblob_file_to_npy_folder's progress). */
    char folder[256], path[512];
    CHECK(ft_temp_folder(folder, sizeof folder));
    cblob_context *ctx = context_new();
    cblob_blob *blobs[2] = {ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){40000}, 1, false),
                            ft_blob(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){3}, 2, false)};
    snprintf(path, sizeof path, "%s/big.vector", folder);
    CHECK_OK(cblob_blob_vector_to_proto_file(blobs, 2, 0, path));
    cblob_file_kind kind = 0;
    CHECK_OK(cblob_file_detect(path, &kind));
    CHECK_EQ_INT(kind, CBLOB_FILE_BLOB_VECTOR);
    cblob_file *file = NULL;
    CHECK_OK(cblob_file_open(ctx, path, 0, 0, &file));
    int64_t count = 0;
    CHECK_OK(cblob_file_get_kind(file, &kind));
    CHECK_OK(cblob_file_num_blobs(file, &count));
    CHECK(kind == CBLOB_FILE_BLOB_VECTOR && count == 2);
    cblob_blob *first = NULL;
    CHECK_OK(cblob_file_blob(file, 0, &first));
    CHECK(ft_same_values(blobs[0], first, CBLOB_PART_DATA));
    cblob_blob_destroy(first);
    cblob_file_destroy(file);
    cblob_blob_destroy(blobs[0]);
    cblob_blob_destroy(blobs[1]);
    cblob_context_destroy(ctx);
    ft_remove_folder(folder);
}
