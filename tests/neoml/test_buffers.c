/* SPDX-License-Identifier: BSD-2-Clause */
/* Buffers on the host path (conformance.md 2.G), and what a mapping forbids while it is open.
 * The staged (device) path is in tests/gpu/test_gpu_neoml.c. */
#include "neoml_test.h"

static cblob_blob *make_vector(cblob_context *ctx, cblob_dtype dtype, int64_t n, int tag)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create_vector(ctx, dtype, n, &blob) != CBLOB_OK || !fill_tagged(blob, CBLOB_PART_DATA, tag))
        return NULL;
    return blob;
}

TEST(neoml_2G_35_map_checks_the_range)
{
    /* NeoML returns null without a word for a bad range and accepts a negative size. */
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blob = make_vector(ctx, CBLOB_DTYPE_FLOAT32, 10, 1);
    CHECK(blob != NULL);
    cblob_buffer *buffer = NULL;
    void *ptr = NULL;
    CHECK_ERROR(cblob_blob_map(blob, CBLOB_PART_DATA, -1, 2, CBLOB_ACCESS_READ, &buffer, &ptr), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_blob_map(blob, CBLOB_PART_DATA, 2, -1, CBLOB_ACCESS_READ, &buffer, &ptr), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_blob_map(blob, CBLOB_PART_DATA, 9, 2, CBLOB_ACCESS_READ, &buffer, &ptr), CBLOB_ERR_OUT_OF_RANGE);
    CHECK(strstr(cblob_last_error_message(), "2 elements from position 9") != NULL);
    CHECK_ERROR(cblob_blob_map(blob, CBLOB_PART_DATA, INT64_MAX, INT64_MAX, CBLOB_ACCESS_READ, &buffer, &ptr),
                CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_blob_map(blob, CBLOB_PART_DATA, 0, 1, 0, &buffer, &ptr), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(buffer == NULL && ptr == NULL);
    /* The last element, and an empty range (a NULL pointer). */
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 9, 1, CBLOB_ACCESS_READ, &buffer, &ptr));
    CHECK(*(const float *)ptr == (float)tagged(9, 1));
    CHECK_OK(cblob_buffer_unmap(buffer));
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 10, 0, CBLOB_ACCESS_READ, &buffer, &ptr));
    CHECK(ptr == NULL);
    CHECK_OK(cblob_buffer_unmap(buffer));
    CHECK_ERROR(cblob_buffer_unmap(NULL), CBLOB_ERR_INVALID_ARGUMENT);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2G_36_host_map_is_the_blob_memory)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blob = make_vector(ctx, CBLOB_DTYPE_INT32, 8, 1);
    CHECK(blob != NULL);
    const void *host = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &host));
    cblob_buffer *buffer;
    void *ptr;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 3, 4, CBLOB_ACCESS_READ_WRITE, &buffer, &ptr));
    CHECK((const char *)ptr == (const char *)host + 3 * sizeof(int32_t));
    ((int32_t *)ptr)[0] = -5; /* visible at once, before unmapping */
    int32_t got[8];
    CHECK_OK(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_INT32, got, 8));
    CHECK_EQ_INT(got[3], -5);
    CHECK_OK(cblob_buffer_unmap(buffer));
    cblob_head head;
    CHECK_OK(cblob_blob_head(blob, CBLOB_PART_DATA, &head));
    CHECK_EQ_INT(head, CBLOB_HEAD_AT_CPU);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2G_37_unmap_is_last_in_first_out)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blob = make_vector(ctx, CBLOB_DTYPE_FLOAT64, 8, 1);
    CHECK(blob != NULL);
    cblob_buffer *first, *second, *third;
    void *p1, *p2, *p3;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 0, 4, CBLOB_ACCESS_READ, &first, &p1));
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DIFF, 4, 2, CBLOB_ACCESS_WRITE, &second, &p2));
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 6, 2, CBLOB_ACCESS_READ_WRITE, &third, &p3));
    CHECK_ERROR(cblob_buffer_unmap(first), CBLOB_ERR_STATE);
    CHECK(strstr(cblob_last_error_message(), "2 elements of data from 6") != NULL);
    CHECK_ERROR(cblob_buffer_unmap(second), CBLOB_ERR_STATE);
    /* The refused unmaps changed nothing: the pointers still work. */
    CHECK(((const double *)p1)[3] == tagged(3, 1));
    CHECK_OK(cblob_buffer_unmap(third));
    CHECK_OK(cblob_buffer_unmap(second));
    CHECK_OK(cblob_buffer_unmap(first));
    /* Each blob has its own stack. */
    cblob_blob *other = make_vector(ctx, CBLOB_DTYPE_FLOAT64, 2, 2);
    CHECK(other != NULL);
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 0, 1, CBLOB_ACCESS_READ, &first, &p1));
    CHECK_OK(cblob_blob_map(other, CBLOB_PART_DATA, 0, 1, CBLOB_ACCESS_READ, &second, &p2));
    CHECK_OK(cblob_buffer_unmap(first));
    CHECK_OK(cblob_buffer_unmap(second));
    cblob_blob_destroy(other);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

TEST(neoml_2G_39_write_buffer_then_blob_equals_cleared)
{
    /* DnnBlobTest BufferTest: a Write buffer over the whole blob is zeroed, closed, and the blob
     * then equals a cleared blob. */
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blob = make_vector(ctx, CBLOB_DTYPE_FLOAT32, 16, 1);
    cblob_blob *cleared = make_vector(ctx, CBLOB_DTYPE_FLOAT32, 16, 2);
    CHECK(blob != NULL && cleared != NULL);
    CHECK_OK(cblob_blob_clear(cleared, CBLOB_PART_DATA));
    cblob_buffer *buffer;
    void *ptr;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 0, 16, CBLOB_ACCESS_WRITE, &buffer, &ptr));
    memset(ptr, 0, 16 * sizeof(float));
    CHECK_OK(cblob_buffer_unmap(buffer));
    float a[16], b[16];
    CHECK_OK(cblob_blob_copy_out(blob, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, a, 16));
    CHECK_OK(cblob_blob_copy_out(cleared, CBLOB_PART_DATA, CBLOB_DTYPE_FLOAT32, b, 16));
    CHECK(memcmp(a, b, sizeof a) == 0);
    cblob_blob_destroy(blob);
    cblob_blob_destroy(cleared);
    cblob_context_destroy(ctx);
}

TEST(neoml_buffer_keeps_its_blob_alive)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blob = make_vector(ctx, CBLOB_DTYPE_UINT32, 4, 3);
    CHECK(blob != NULL);
    cblob_buffer *buffer;
    void *ptr;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 1, 3, CBLOB_ACCESS_READ_WRITE, &buffer, &ptr));
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
    ((uint32_t *)ptr)[2] = 77; /* still the blob's memory: ASan would report a use after free */
    CHECK_EQ_INT(((const uint32_t *)ptr)[0], tagged(1, 3));
    CHECK_OK(cblob_buffer_unmap(buffer)); /* the last holder: frees the blob */
}

static int release_calls;
static void count_release(void *ptr, void *user_data)
{
    (void)ptr;
    (void)user_data;
    ++release_calls;
}

TEST(neoml_buffer_blocks_what_would_move_its_memory)
{
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t bigger[1] = {100}, same[7] = {6, 1, 1, 1, 1, 1, 1}, flat[1] = {6};
    cblob_blob *blob = make_vector(ctx, CBLOB_DTYPE_FLOAT32, 6, 1), *other;
    CHECK(blob != NULL);
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, flat, &other));
    CHECK(fill_tagged(other, CBLOB_PART_DATA, 2));
    cblob_buffer *buffer;
    void *ptr;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 0, 6, CBLOB_ACCESS_READ, &buffer, &ptr));
    CHECK_ERROR(cblob_blob_reshape(blob, 1, bigger), CBLOB_ERR_STATE);
    CHECK_OK(cblob_blob_reshape(blob, 7, same)); /* the same shape moves nothing */
    CHECK_OK(cblob_blob_reinterpret(blob, 1, flat)); /* nor does a reinterpretation */
    CHECK_OK(cblob_blob_reinterpret(blob, 7, same));
    float external[6];
    CHECK_ERROR(cblob_blob_set_cpu_data(blob, external, sizeof external, count_release, NULL), CBLOB_ERR_STATE);
    CHECK_ERROR(cblob_blob_share(blob, other, CBLOB_PART_DATA), CBLOB_ERR_STATE);
    CHECK_ERROR(cblob_blob_copy_from(blob, other, CBLOB_PART_DATA, 1), CBLOB_ERR_STATE); /* would reshape to (6) */
    CHECK_EQ_INT(release_calls, 0);
    CHECK(((const float *)ptr)[5] == (float)tagged(5, 1));
    CHECK_OK(cblob_buffer_unmap(buffer));
    CHECK_OK(cblob_blob_reshape(blob, 1, bigger));
    cblob_blob_destroy(blob);
    cblob_blob_destroy(other);
    cblob_context_destroy(ctx);
}

TEST(neoml_buffer_of_a_window_protects_the_shared_storage)
{
    /* A window's mapping points into its parent's storage: the parent may not swap that
     * storage's host buffer, and the window may not move, while it is open. */
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_vector(ctx, CBLOB_DTYPE_FLOAT32, 6, 1), *window;
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 2, &window));
    CHECK_OK(cblob_window_set_position(window, 3));
    cblob_buffer *buffer;
    void *ptr;
    CHECK_OK(cblob_blob_map(window, CBLOB_PART_DATA, 0, 2, CBLOB_ACCESS_READ_WRITE, &buffer, &ptr));
    float external[6];
    CHECK_ERROR(cblob_blob_set_cpu_data(parent, external, sizeof external, count_release, NULL), CBLOB_ERR_STATE);
    CHECK_ERROR(cblob_window_set_position(window, 0), CBLOB_ERR_STATE);
    /* The parent may grow: it gets new storage, and the mapping keeps the old one alive. */
    const int64_t bigger[7] = {50, 1, 1, 1, 1, 1, 1};
    CHECK_OK(cblob_blob_reshape(parent, 7, bigger));
    cblob_blob_destroy(parent);
    ((float *)ptr)[1] = 1.5f;
    CHECK_OK(cblob_buffer_unmap(buffer));
    double *values = read_values(window, CBLOB_PART_DATA);
    CHECK(values != NULL && values[0] == tagged(3, 1) && values[1] == 1.5);
    free(values);
    CHECK_EQ_INT(release_calls, 0);
    cblob_blob_destroy(window);
    cblob_context_destroy(ctx);
}

TEST(neoml_2C_16_object_data_is_a_mappable_range)
{
    /* NeoML's GetObjectData(n) points at n * ObjectSize; in cblob the same range is mapped, and
     * object indices are checked where objects are addressed (fill_object, clear_object). */
    cblob_context *ctx;
    cblob_blob *blob;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_blob_create_image2d(ctx, CBLOB_DTYPE_INT32, 3, 1, 2, 2, 1, &blob)); /* 3 objects of 4 */
    CHECK_OK(cblob_blob_fill_object(blob, CBLOB_PART_DATA, 2, 5));
    int64_t size;
    CHECK_OK(cblob_blob_object_size(blob, &size));
    cblob_buffer *buffer;
    void *ptr;
    CHECK_OK(cblob_blob_map(blob, CBLOB_PART_DATA, 2 * size, size, CBLOB_ACCESS_READ, &buffer, &ptr));
    for (int i = 0; i < 4; ++i)
        CHECK_EQ_INT(((const int32_t *)ptr)[i], 5);
    CHECK_OK(cblob_buffer_unmap(buffer));
    CHECK_ERROR(cblob_blob_fill_object(blob, CBLOB_PART_DATA, 3, 5), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_blob_map(blob, CBLOB_PART_DATA, 3 * size, size, CBLOB_ACCESS_READ, &buffer, &ptr),
                CBLOB_ERR_OUT_OF_RANGE);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}
