/* SPDX-License-Identifier: BSD-2-Clause */
/* NeoML's named layout and creation helpers (conformance.md 2.A, 2.B, 2.E item 28). */
#include "neoml_test.h"

static int64_t dim_of(const cblob_blob *blob, cblob_dim dim)
{
    int64_t size = -1;
    return cblob_blob_dim(blob, dim, &size) == CBLOB_OK ? size : -1;
}

static int has_dims(const cblob_blob *blob, const int64_t expected[CBLOB_NEOML_AXES])
{
    int64_t shape[CBLOB_MAX_AXES];
    int32_t num_axes = 0;
    if (cblob_blob_shape(blob, CBLOB_MAX_AXES, shape, &num_axes) != CBLOB_OK || num_axes != CBLOB_NEOML_AXES)
        return 0;
    return memcmp(shape, expected, sizeof shape[0] * CBLOB_NEOML_AXES) == 0;
}

TEST(neoml_2A_01_seven_named_dims_in_order)
{
    CHECK_EQ_INT(CBLOB_NEOML_AXES, 7);
    const cblob_dim dims[] = {CBLOB_DIM_BATCH_LENGTH, CBLOB_DIM_BATCH_WIDTH, CBLOB_DIM_LIST_SIZE, CBLOB_DIM_HEIGHT,
                              CBLOB_DIM_WIDTH, CBLOB_DIM_DEPTH, CBLOB_DIM_CHANNELS};
    for (int i = 0; i < CBLOB_NEOML_AXES; ++i)
        CHECK_EQ_INT(dims[i], i);
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t sizes[CBLOB_NEOML_AXES] = {2, 3, 5, 7, 11, 13, 17};
    CHECK_OK(cblob_blob_create_tensor(ctx, CBLOB_DTYPE_FLOAT32, CBLOB_NEOML_AXES, sizes, &blob));
    for (int i = 0; i < CBLOB_NEOML_AXES; ++i)
        CHECK_EQ_INT(dim_of(blob, dims[i]), sizes[i]);
    int64_t out = 99;
    CHECK_ERROR(cblob_blob_dim(blob, 7, &out), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_ERROR(cblob_blob_dim(blob, -8, &out), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(out, 99);
    CHECK_OK(cblob_blob_dim(blob, -1, &out)); /* the axis rule: Channels, counted from the end */
    CHECK_EQ_INT(out, 17);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2A_02_channel_last_row_major)
{
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_image3d(ctx, CBLOB_DTYPE_FLOAT32, 2, 1, 3, 4, 5, 6, &blob));
    /* Channels has stride 1, Depth stride C, Width stride D*C, Height stride W*D*C. */
    const int64_t channel[7] = {0, 0, 0, 0, 0, 0, 1}, depth[7] = {0, 0, 0, 0, 0, 1, 0}, width[7] = {0, 0, 0, 0, 1, 0, 0},
                  height[7] = {0, 0, 0, 1, 0, 0, 0}, batch[7] = {1, 0, 0, 0, 0, 0, 0};
    int64_t offset;
    CHECK_OK(cblob_blob_offset(blob, 7, channel, &offset));
    CHECK_EQ_INT(offset, 1);
    CHECK_OK(cblob_blob_offset(blob, 7, depth, &offset));
    CHECK_EQ_INT(offset, 6);
    CHECK_OK(cblob_blob_offset(blob, 7, width, &offset));
    CHECK_EQ_INT(offset, 5 * 6);
    CHECK_OK(cblob_blob_offset(blob, 7, height, &offset));
    CHECK_EQ_INT(offset, 4 * 5 * 6);
    CHECK_OK(cblob_blob_offset(blob, 7, batch, &offset));
    CHECK_EQ_INT(offset, 3 * 4 * 5 * 6);
    /* Better than NeoML's GetData({..}) (item 15): a coordinate past its axis is an error, it
     * does not spill into the next axis. */
    const int64_t spill[7] = {0, 0, 0, 0, 0, 0, 6};
    CHECK_ERROR(cblob_blob_offset(blob, 7, spill, &offset), CBLOB_ERR_OUT_OF_RANGE);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2A_03_every_dtype_makes_neoml_blobs)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        cblob_blob *blob;
        cblob_dtype got = 0;
        CHECK_OK(cblob_blob_create_vector(ctx, all_dtypes[d], 5, &blob));
        CHECK_OK(cblob_blob_dtype(blob, &got));
        CHECK_EQ_INT(got, all_dtypes[d]);
        cblob_blob_destroy(blob);
    }
    cblob_blob *blob = NULL;
    CHECK_ERROR(cblob_blob_create_vector(ctx, 0, 5, &blob), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(blob == NULL);
    cblob_context_destroy(ctx);
}

TEST(neoml_2A_06_object_count_size_and_geometrical_size)
{
    cblob_context *ctx;
    cblob_blob *blob, *plain;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t sizes[CBLOB_NEOML_AXES] = {2, 3, 5, 7, 11, 13, 17};
    CHECK_OK(cblob_blob_create_tensor(ctx, CBLOB_DTYPE_INT32, CBLOB_NEOML_AXES, sizes, &blob));
    int64_t value;
    CHECK_OK(cblob_blob_object_count(blob, &value));
    CHECK_EQ_INT(value, 2 * 3 * 5);
    CHECK_OK(cblob_blob_object_size(blob, &value));
    CHECK_EQ_INT(value, 7 * 11 * 13 * 17);
    CHECK_OK(cblob_blob_geometrical_size(blob, &value));
    CHECK_EQ_INT(value, 7 * 11 * 13);
    CHECK_OK(cblob_blob_count(blob, &value));
    CHECK_EQ_INT(value, 2 * 3 * 5 * 7 * 11 * 13 * 17);

    /* Only 7-axis blobs have objects. */
    const int64_t four[4] = {2, 3, 4, 5};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 4, four, &plain));
    value = 42;
    CHECK_ERROR(cblob_blob_object_count(plain, &value), CBLOB_ERR_SHAPE);
    CHECK_ERROR(cblob_blob_object_size(plain, &value), CBLOB_ERR_SHAPE);
    CHECK_ERROR(cblob_blob_geometrical_size(plain, &value), CBLOB_ERR_SHAPE);
    CHECK_ERROR(cblob_blob_dim(plain, CBLOB_DIM_CHANNELS, &value), CBLOB_ERR_SHAPE);
    CHECK_EQ_INT(value, 42);

    /* Better than NeoML, which accepts any dimension and multiplies in int: a negative dimension
     * is refused, and an empty blob whose object count does not fit in 64 bits says so. */
    cblob_blob *bad = NULL;
    CHECK_ERROR(cblob_blob_create_matrix(ctx, CBLOB_DTYPE_FLOAT32, 3, -1, &bad), CBLOB_ERR_SHAPE);
    CHECK(bad == NULL);
    const int64_t huge[CBLOB_NEOML_AXES] = {INT64_C(1) << 40, INT64_C(1) << 40, 1, 0, 1, 1, 1};
    cblob_blob *empty;
    CHECK_OK(cblob_blob_create_tensor(ctx, CBLOB_DTYPE_FLOAT32, CBLOB_NEOML_AXES, huge, &empty));
    CHECK_ERROR(cblob_blob_object_count(empty, &value), CBLOB_ERR_OVERFLOW);
    CHECK_OK(cblob_blob_object_size(empty, &value));
    CHECK_EQ_INT(value, 0);
    cblob_blob_destroy(empty);
    cblob_blob_destroy(plain);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2A_07_equal_dimensions_all_or_some)
{
    cblob_context *ctx;
    cblob_blob *a, *b, *c;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_image2d(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 4, 5, 6, &a));
    CHECK_OK(cblob_blob_create_image2d(ctx, CBLOB_DTYPE_UINT32, 2, 3, 4, 5, 6, &b)); /* dtype is not compared */
    CHECK_OK(cblob_blob_create_image2d(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 4, 5, 7, &c));
    int32_t equal = -1;
    CHECK_OK(cblob_blob_equal_shape(a, b, &equal));
    CHECK_EQ_INT(equal, 1);
    CHECK_OK(cblob_blob_equal_shape(a, c, &equal));
    CHECK_EQ_INT(equal, 0);
    const int32_t objects_geometry[] = {CBLOB_DIM_BATCH_LENGTH, CBLOB_DIM_HEIGHT, CBLOB_DIM_WIDTH};
    CHECK_OK(cblob_blob_equal_dims(a, c, 3, objects_geometry, &equal));
    CHECK_EQ_INT(equal, 1);
    const int32_t channels[] = {CBLOB_DIM_CHANNELS};
    CHECK_OK(cblob_blob_equal_dims(a, c, 1, channels, &equal));
    CHECK_EQ_INT(equal, 0);
    CHECK_OK(cblob_blob_equal_dims(a, c, 0, NULL, &equal));
    CHECK_EQ_INT(equal, 1);
    /* An axis one of the blobs lacks is an error, not a read past its shape. */
    cblob_blob *vector4;
    const int64_t four[1] = {2};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, four, &vector4));
    equal = -1;
    CHECK_ERROR(cblob_blob_equal_dims(a, vector4, 1, channels, &equal), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_EQ_INT(equal, -1);
    cblob_blob_destroy(vector4);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b);
    cblob_blob_destroy(c);
    cblob_context_destroy(ctx);
}

TEST(neoml_2B_08_create_tensor_is_left_aligned)
{
    cblob_context *ctx;
    cblob_blob *tensor, *vector, *matrix, *scalar;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t three[3] = {4, 5, 6};
    CHECK_OK(cblob_blob_create_tensor(ctx, CBLOB_DTYPE_FLOAT32, 3, three, &tensor));
    CHECK(has_dims(tensor, (const int64_t[7]){4, 5, 6, 1, 1, 1, 1}));
    CHECK_OK(cblob_blob_create_vector(ctx, CBLOB_DTYPE_FLOAT32, 16, &vector));
    CHECK(has_dims(vector, (const int64_t[7]){16, 1, 1, 1, 1, 1, 1})); /* BatchLength, as NeoML */
    CHECK_OK(cblob_blob_create_matrix(ctx, CBLOB_DTYPE_INT32, 16, 8, &matrix));
    CHECK(has_dims(matrix, (const int64_t[7]){16, 8, 1, 1, 1, 1, 1}));
    CHECK_OK(cblob_blob_create_tensor(ctx, CBLOB_DTYPE_FLOAT64, 0, NULL, &scalar));
    CHECK(has_dims(scalar, (const int64_t[7]){1, 1, 1, 1, 1, 1, 1}));
    /* More than 7 dims: an error (NeoML asserts). */
    const int64_t eight[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    cblob_blob *bad = NULL;
    CHECK_ERROR(cblob_blob_create_tensor(ctx, CBLOB_DTYPE_FLOAT32, 8, eight, &bad), CBLOB_ERR_SHAPE);
    CHECK_ERROR(cblob_blob_create_tensor(ctx, CBLOB_DTYPE_FLOAT32, 2, NULL, &bad), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(bad == NULL);
    cblob_blob_destroy(tensor);
    cblob_blob_destroy(vector);
    cblob_blob_destroy(matrix);
    cblob_blob_destroy(scalar);
    cblob_context_destroy(ctx);
}

TEST(neoml_2B_09_fixed_creators)
{
    cblob_context *ctx;
    cblob_blob *data, *list, *image2d, *image3d;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 4, &data));
    CHECK(has_dims(data, (const int64_t[7]){2, 3, 1, 1, 1, 1, 4}));
    CHECK_OK(cblob_blob_create_list(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 5, 4, &list));
    CHECK(has_dims(list, (const int64_t[7]){2, 3, 5, 1, 1, 1, 4}));
    CHECK_OK(cblob_blob_create_image2d(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 6, 7, 4, &image2d));
    CHECK(has_dims(image2d, (const int64_t[7]){2, 3, 1, 6, 7, 1, 4}));
    CHECK_OK(cblob_blob_create_image3d(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 6, 7, 8, 4, &image3d));
    CHECK(has_dims(image3d, (const int64_t[7]){2, 3, 1, 6, 7, 8, 4}));
    cblob_blob_destroy(data);
    cblob_blob_destroy(list);
    cblob_blob_destroy(image2d);
    cblob_blob_destroy(image3d);
    cblob_context_destroy(ctx);
}

TEST(neoml_2B_10_create_like_takes_shape_and_given_dtype)
{
    cblob_context *ctx;
    cblob_blob *pattern, *like, *window, *like_window;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_list(ctx, CBLOB_DTYPE_FLOAT32, 4, 3, 2, 5, &pattern));
    CHECK(fill_tagged(pattern, CBLOB_PART_DATA, 1));
    CHECK_OK(cblob_blob_create_like(pattern, CBLOB_DTYPE_INT32, &like));
    cblob_dtype dtype;
    int32_t equal, is_window;
    CHECK_OK(cblob_blob_dtype(like, &dtype));
    CHECK_EQ_INT(dtype, CBLOB_DTYPE_INT32);
    CHECK_OK(cblob_blob_equal_shape(like, pattern, &equal));
    CHECK_EQ_INT(equal, 1);
    double *values = read_values(like, CBLOB_PART_DATA); /* nothing is copied from the pattern */
    CHECK(values != NULL && values[0] == 0 && values[119] == 0);
    free(values);
    CHECK_OK(cblob_window_create(pattern, 2, &window));
    CHECK_OK(cblob_blob_create_like(window, CBLOB_DTYPE_FLOAT64, &like_window));
    CHECK_OK(cblob_blob_is_window(like_window, &is_window));
    CHECK_EQ_INT(is_window, 0);
    CHECK_EQ_INT(dim_of(like_window, CBLOB_DIM_BATCH_LENGTH), 2);
    cblob_blob_destroy(like_window);
    cblob_blob_destroy(window);
    cblob_blob_destroy(like);
    cblob_blob_destroy(pattern);
    cblob_context_destroy(ctx);
}

TEST(neoml_2B_11_new_blobs_are_zero_filled)
{
    /* NeoML leaves new blobs uninitialized; cblob zero-fills on first access, for every dtype. */
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    for (int d = 0; d < NUM_DTYPES; ++d) {
        cblob_blob *blob;
        CHECK_OK(cblob_blob_create_image2d(ctx, all_dtypes[d], 2, 2, 3, 3, 4, &blob));
        double *values = read_values(blob, CBLOB_PART_DATA);
        CHECK(values != NULL);
        for (int i = 0; i < 2 * 2 * 3 * 3 * 4; ++i)
            CHECK_MSG(values[i] == 0, "%s element %d is %g", dtype_name(all_dtypes[d]), i, values[i]);
        free(values);
        cblob_blob_destroy(blob);
    }
    cblob_context_destroy(ctx);
}

TEST(neoml_2E_28_reinterpret_keeps_memory_and_dtype)
{
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_data(ctx, CBLOB_DTYPE_INT32, 2, 3, 4, &blob));
    CHECK(fill_tagged(blob, CBLOB_PART_DATA, 3));
    const void *before = NULL, *after = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &before));
    const int64_t image[CBLOB_NEOML_AXES] = {1, 1, 1, 2, 3, 1, 4};
    CHECK_OK(cblob_blob_reinterpret(blob, CBLOB_NEOML_AXES, image));
    CHECK(has_dims(blob, image));
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &after));
    CHECK(before == after);
    cblob_dtype dtype;
    CHECK_OK(cblob_blob_dtype(blob, &dtype));
    CHECK_EQ_INT(dtype, CBLOB_DTYPE_INT32); /* NeoML takes the descriptor's type too */
    double *values = read_values(blob, CBLOB_PART_DATA);
    CHECK(values != NULL);
    for (int i = 0; i < 24; ++i)
        CHECK_EQ_INT(values[i], tagged(i, 3));
    free(values);
    /* Another count is refused and changes nothing. */
    const int64_t wrong[2] = {5, 5};
    CHECK_ERROR(cblob_blob_reinterpret(blob, 2, wrong), CBLOB_ERR_SHAPE);
    CHECK(has_dims(blob, image));
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2C_15_left_aligned_coordinates_checked_per_axis)
{
    /* NeoML's GetData({p0..pk}): missing trailing coordinates are 0, and only the final index
     * is checked. cblob_blob_offset takes the same left-aligned coordinates and checks each. */
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_list(ctx, CBLOB_DTYPE_FLOAT32, 2, 3, 4, 5, &blob)); /* (2,3,4,1,1,1,5) */
    const int64_t two[2] = {1, 2};
    int64_t offset = -1;
    CHECK_OK(cblob_blob_offset(blob, 2, two, &offset));
    CHECK_EQ_INT(offset, (1 * 3 + 2) * 4 * 5);
    /* (0, 3) would land on element 60 in NeoML, inside the blob; here axis 1 has 3 entries. */
    const int64_t spill[2] = {0, 3};
    CHECK_ERROR(cblob_blob_offset(blob, 2, spill, &offset), CBLOB_ERR_OUT_OF_RANGE);
    const int64_t eight[8] = {0};
    CHECK_ERROR(cblob_blob_offset(blob, 8, eight, &offset), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_EQ_INT(offset, (1 * 3 + 2) * 4 * 5);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}
