/* SPDX-License-Identifier: BSD-2-Clause */
/* Windows (conformance.md 2.F) and cblob's lifetime rules for them. Run under ASan, these also
 * show that no window ever reads memory its parent freed. */
#include "neoml_test.h"

static const char *host_data(cblob_blob *blob)
{
    const void *ptr = NULL;
    return cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &ptr) == CBLOB_OK ? ptr : NULL;
}

static int64_t first_dim(const cblob_blob *blob)
{
    int64_t dim = -1;
    return cblob_blob_shape_at(blob, 0, &dim) == CBLOB_OK ? dim : -1;
}

/* A float32 parent of `rows` rows of 6 (rows x 2 x 3) with data tagged 1. */
static cblob_blob *make_parent(cblob_context *ctx, int64_t rows)
{
    cblob_blob *parent = NULL;
    const int64_t dims[3] = {rows, 2, 3};
    if (cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, dims, &parent) != CBLOB_OK ||
        !fill_tagged(parent, CBLOB_PART_DATA, 1))
        return NULL;
    return parent;
}

TEST(neoml_2F_29_window_views_parent_without_memory)
{
    cblob_context *ctx;
    cblob_blob *window, *full;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_parent(ctx, 4);
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 1, &window));
    int64_t shape[3];
    int32_t num_axes;
    CHECK_OK(cblob_blob_shape(window, 3, shape, &num_axes));
    CHECK(num_axes == 3 && shape[0] == 1 && shape[1] == 2 && shape[2] == 3);
    CHECK(host_data(window) == host_data(parent)); /* position 0 */
    int64_t capacity;
    CHECK_OK(cblob_blob_capacity(window, &capacity));
    CHECK_EQ_INT(capacity, 6);
    /* A full-size window views exactly the parent (DnnBlobTest InitWindowBlob). */
    CHECK_OK(cblob_window_create(parent, 4, &full));
    CHECK(host_data(full) == host_data(parent));
    int32_t equal;
    CHECK_OK(cblob_blob_equal_shape(full, parent, &equal));
    CHECK_EQ_INT(equal, 1);
    /* Sizes the parent cannot hold. */
    cblob_blob *bad = NULL;
    CHECK_ERROR(cblob_window_create(parent, 5, &bad), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_window_create(parent, -1, &bad), CBLOB_ERR_SHAPE);
    cblob_blob *scalar;
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 0, NULL, &scalar));
    CHECK_ERROR(cblob_window_create(scalar, 1, &bad), CBLOB_ERR_SHAPE);
    CHECK(bad == NULL);
    cblob_blob_destroy(scalar);
    cblob_blob_destroy(full);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

TEST(neoml_2F_30_set_parent_pos)
{
    cblob_context *ctx;
    cblob_blob *window;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_parent(ctx, 5);
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 2, &window));
    for (int64_t pos = 0; pos <= 3; ++pos) {
        CHECK_OK(cblob_window_set_position(window, pos));
        CHECK(host_data(window) == host_data(parent) + pos * 6 * sizeof(float));
        double *values = read_values(window, CBLOB_PART_DATA);
        CHECK(values != NULL);
        for (int i = 0; i < 12; ++i)
            CHECK_EQ_INT(values[i], tagged(pos * 6 + i, 1));
        free(values);
    }
    /* Past the end, and (better than NeoML, which accepts it) negative: errors naming the bounds. */
    CHECK_ERROR(cblob_window_set_position(window, 4), CBLOB_ERR_OUT_OF_RANGE);
    CHECK(strstr(cblob_last_error_message(), "[0, 3]") != NULL);
    CHECK_ERROR(cblob_window_set_position(window, -1), CBLOB_ERR_OUT_OF_RANGE);
    CHECK(strstr(cblob_last_error_message(), "[0, 3]") != NULL);
    int64_t position = -1;
    CHECK_OK(cblob_window_position(window, &position));
    CHECK_EQ_INT(position, 3); /* unchanged by the failures */
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

TEST(neoml_2F_31_shift_parent_pos_and_get_parent_pos)
{
    cblob_context *ctx;
    cblob_blob *window;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_parent(ctx, 5);
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 1, &window));
    int64_t position = -1, size = -1;
    CHECK_OK(cblob_window_shift(window, 3));
    CHECK_OK(cblob_window_shift(window, -1));
    CHECK_OK(cblob_window_position(window, &position));
    CHECK_EQ_INT(position, 2);
    CHECK_ERROR(cblob_window_shift(window, -3), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_ERROR(cblob_window_shift(window, INT64_MAX), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_OK(cblob_window_position(window, &position));
    CHECK_EQ_INT(position, 2);
    /* The size can change where the rows exist. */
    CHECK_OK(cblob_window_set_size(window, 3));
    CHECK_OK(cblob_window_size(window, &size));
    CHECK_EQ_INT(size, 3);
    CHECK_EQ_INT(first_dim(window), 3);
    CHECK_ERROR(cblob_window_set_size(window, 4), CBLOB_ERR_OUT_OF_RANGE);
    CHECK_EQ_INT(first_dim(window), 3);
    /* Window getters on a blob that is not a window (NeoML asserts). */
    CHECK_ERROR(cblob_window_position(parent, &position), CBLOB_ERR_STATE);
    CHECK_ERROR(cblob_window_shift(parent, 1), CBLOB_ERR_STATE);
    int32_t is_window = -1;
    CHECK_OK(cblob_blob_is_window(parent, &is_window));
    CHECK_EQ_INT(is_window, 0);
    CHECK_OK(cblob_blob_is_window(window, &is_window));
    CHECK_EQ_INT(is_window, 1);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

TEST(neoml_2F_32_window_keeps_parent_alive)
{
    cblob_context *ctx;
    cblob_blob *window, *parent_again;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_parent(ctx, 3);
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 1, &window));
    CHECK_OK(cblob_window_set_position(window, 2));
    cblob_blob_destroy(parent); /* the caller's hold only: the window still holds the parent */
    cblob_context_destroy(ctx); /* and the blobs hold their context */
    double *values = read_values(window, CBLOB_PART_DATA);
    CHECK(values != NULL);
    CHECK_EQ_INT(values[5], tagged(17, 1));
    free(values);
    CHECK_OK(cblob_blob_fill(window, CBLOB_PART_DATA, 7));
    CHECK_OK(cblob_window_set_position(window, 0));
    CHECK_OK(cblob_window_parent(window, &parent_again));
    values = read_values(parent_again, CBLOB_PART_DATA);
    CHECK(values != NULL);
    CHECK_EQ_INT(values[0], tagged(0, 1));
    CHECK_EQ_INT(values[12], 7);
    free(values);
    cblob_blob_destroy(parent_again);
    cblob_blob_destroy(window); /* the last holder: everything is freed (ASan checks for leaks) */
}

TEST(neoml_2F_32_parent_reallocation_detaches_window_safely)
{
    cblob_context *ctx;
    cblob_blob *window;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_parent(ctx, 3);
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 1, &window));
    CHECK_OK(cblob_window_set_position(window, 1));
    /* The parent grows past its capacity and gets fresh storage. */
    const int64_t bigger[3] = {10, 2, 3};
    CHECK_OK(cblob_blob_reshape(parent, 3, bigger));
    CHECK(fill_tagged(parent, CBLOB_PART_DATA, 2));
    /* The window still views, and keeps alive, the old storage: no freed memory is read. */
    double *values = read_values(window, CBLOB_PART_DATA);
    CHECK(values != NULL);
    for (int i = 0; i < 6; ++i)
        CHECK_EQ_INT(values[i], tagged(6 + i, 1));
    free(values);
    CHECK_OK(cblob_blob_fill(window, CBLOB_PART_DATA, 5)); /* lands in the old storage only */
    values = read_values(parent, CBLOB_PART_DATA);
    CHECK(values != NULL);
    CHECK_EQ_INT(values[6], tagged(6, 2));
    free(values);
    /* Positioning again attaches to the parent's new storage and shape. */
    CHECK_OK(cblob_window_set_position(window, 9));
    CHECK(host_data(window) == host_data(parent) + 9 * 6 * sizeof(float));
    values = read_values(window, CBLOB_PART_DATA);
    CHECK(values != NULL);
    CHECK_EQ_INT(values[0], tagged(54, 2));
    free(values);
    /* A parent that shrinks: the window's next position is checked against the new rows. */
    const int64_t smaller[3] = {2, 2, 3};
    CHECK_OK(cblob_blob_reshape(parent, 3, smaller));
    CHECK_ERROR(cblob_window_set_position(window, 2), CBLOB_ERR_OUT_OF_RANGE);
    cblob_blob_destroy(parent);
    values = read_values(window, CBLOB_PART_DATA); /* still the rows it viewed */
    CHECK(values != NULL);
    CHECK_EQ_INT(values[5], tagged(59, 2));
    free(values);
    cblob_blob_destroy(window);
    cblob_context_destroy(ctx);
}

TEST(neoml_2F_33_nested_windows_parent_and_owner)
{
    cblob_context *ctx;
    cblob_blob *outer, *inner, *got;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *root = make_parent(ctx, 6);
    CHECK(root != NULL);
    CHECK_OK(cblob_window_create(root, 3, &outer));
    CHECK_OK(cblob_window_set_position(outer, 2));
    CHECK_OK(cblob_window_create(outer, 1, &inner));
    CHECK_OK(cblob_window_set_position(inner, 2));
    CHECK(host_data(inner) == host_data(root) + 4 * 6 * sizeof(float)); /* row 2 + 2 of the root */
    CHECK_ERROR(cblob_window_set_position(inner, 3), CBLOB_ERR_OUT_OF_RANGE); /* bounded by outer's 3 rows */
    CHECK_OK(cblob_window_parent(inner, &got));
    CHECK(got == outer);
    cblob_blob_destroy(got);
    CHECK_OK(cblob_window_owner(inner, &got));
    CHECK(got == root);
    cblob_blob_destroy(got);
    /* As in NeoML, a nested window's place was computed when it was positioned: moving its
     * parent window does not move it until it is positioned again. */
    CHECK_OK(cblob_window_set_position(outer, 0));
    CHECK(host_data(inner) == host_data(root) + 4 * 6 * sizeof(float));
    CHECK_OK(cblob_window_set_position(inner, 2));
    CHECK(host_data(inner) == host_data(root) + 2 * 6 * sizeof(float));
    cblob_blob_destroy(root);
    cblob_blob_destroy(outer); /* the inner window holds it */
    double *values = read_values(inner, CBLOB_PART_DATA);
    CHECK(values != NULL);
    CHECK_EQ_INT(values[0], tagged(12, 1));
    free(values);
    cblob_blob_destroy(inner);
    cblob_context_destroy(ctx);
}

static int release_calls;
static void count_release(void *ptr, void *user_data)
{
    (void)ptr;
    (void)user_data;
    ++release_calls;
}

TEST(neoml_2F_34_what_a_window_cannot_do)
{
    cblob_context *ctx;
    cblob_blob *window, *other;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_parent(ctx, 4);
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 2, &window));
    CHECK_OK(cblob_window_set_position(window, 0));
    float buffer[12];
    CHECK_ERROR(cblob_blob_set_cpu_data(window, buffer, sizeof buffer, count_release, NULL), CBLOB_ERR_STATE);
    CHECK_EQ_INT(release_calls, 0);
    const int64_t twelve[1] = {12};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, twelve, &other));
    CHECK(fill_tagged(other, CBLOB_PART_DATA, 4));
    CHECK_ERROR(cblob_blob_share(window, other, CBLOB_PART_DATA), CBLOB_ERR_STATE);
    CHECK_ERROR(cblob_blob_share(other, window, CBLOB_PART_DATA), CBLOB_ERR_STATE);
    /* Past its view (even though the parent's storage goes on): refused, shape unchanged. */
    const int64_t past[3] = {3, 2, 3};
    CHECK_ERROR(cblob_blob_reshape(window, 3, past), CBLOB_ERR_STATE);
    CHECK_EQ_INT(first_dim(window), 2);
    /* Within its view: allowed, as a reinterpretation (NeoML forbids it; nothing can go wrong). */
    CHECK_OK(cblob_blob_reinterpret(window, 1, twelve));
    const int64_t fewer[1] = {5};
    CHECK_OK(cblob_blob_reshape(window, 1, fewer));
    CHECK(host_data(window) == host_data(parent));
    /* Positioning gives back the parent's layout. */
    CHECK_OK(cblob_window_set_position(window, 1));
    CHECK_EQ_INT(first_dim(window), 2);
    cblob_blob_destroy(other);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

TEST(neoml_window_writes_reach_parent_on_any_blob)
{
    /* Windows are not limited to 7-axis blobs: a 2-D parent, integer dtype. */
    cblob_context *ctx;
    cblob_blob *parent, *window;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t dims[2] = {4, 3};
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_UINT32, 2, dims, &parent));
    CHECK_OK(cblob_window_create(parent, 2, &window));
    CHECK_OK(cblob_window_set_position(window, 1));
    CHECK_OK(cblob_blob_fill(window, CBLOB_PART_DIFF, 9));
    double *values = read_values(parent, CBLOB_PART_DIFF);
    CHECK(values != NULL);
    for (int i = 0; i < 12; ++i)
        CHECK_EQ_INT(values[i], i >= 3 && i < 9 ? 9 : 0);
    free(values);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

TEST(neoml_window_of_empty_parent)
{
    cblob_context *ctx;
    cblob_blob *parent, *window;
    CHECK_OK(cblob_context_create(&ctx));
    const int64_t dims[3] = {0, INT64_C(1) << 40, INT64_C(1) << 40}; /* count 0: the rows do not fit */
    CHECK_OK(cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 3, dims, &parent));
    CHECK_OK(cblob_window_create(parent, 0, &window));
    int64_t count = -1;
    CHECK_OK(cblob_blob_count(window, &count));
    CHECK_EQ_INT(count, 0);
    CHECK_ERROR(cblob_window_set_size(window, 1), CBLOB_ERR_OUT_OF_RANGE);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

TEST(neoml_deeply_nested_windows_are_freed_without_recursion)
{
    /* Destroying the innermost of a long chain frees every window and the root in a loop: a
     * recursion that deep would exhaust the stack (ASan checks that nothing leaks). */
    cblob_context *ctx;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *blob = make_parent(ctx, 1);
    CHECK(blob != NULL);
    for (int depth = 0; depth < 200000; ++depth) {
        cblob_blob *window;
        CHECK_OK(cblob_window_create(blob, 1, &window));
        cblob_blob_destroy(blob); /* the window holds it */
        blob = window;
    }
    cblob_blob *owner;
    CHECK_OK(cblob_window_owner(blob, &owner));
    CHECK(host_data(owner) == host_data(blob));
    cblob_blob_destroy(owner);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* A parent reshaped or reinterpreted to no axes has no first axis to view: positioning a window
 * of it again is refused (it once divided by the parent's zero rows), and the window keeps its
 * place until the parent has axes again. */
TEST(neoml_window_of_a_parent_with_no_axes_cannot_move)
{
    cblob_context *ctx;
    cblob_blob *empty, *window;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_parent(ctx, 1);
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 0, &empty));
    CHECK_OK(cblob_window_create(parent, 1, &window));
    const char *viewed = host_data(window);
    for (int reinterpret = 0; reinterpret < 2; ++reinterpret) {
        const int64_t one[1] = {1};
        CHECK_OK(cblob_blob_reshape(parent, 1, one)); /* count 1: the same storage */
        CHECK_OK(reinterpret ? cblob_blob_reinterpret(parent, 0, NULL) : cblob_blob_reshape(parent, 0, NULL));
        CHECK_ERROR(cblob_window_set_position(empty, 0), CBLOB_ERR_SHAPE);
        CHECK_ERROR(cblob_window_set_position(window, 0), CBLOB_ERR_SHAPE);
        CHECK_ERROR(cblob_window_shift(window, 0), CBLOB_ERR_SHAPE);
        CHECK_ERROR(cblob_window_set_size(window, 0), CBLOB_ERR_SHAPE);
        CHECK_EQ_INT(first_dim(empty), 0);
        CHECK_EQ_INT(first_dim(window), 1);
        CHECK(host_data(window) == viewed);
        cblob_blob *nested = NULL;
        CHECK_ERROR(cblob_window_create(parent, 0, &nested), CBLOB_ERR_SHAPE);
        CHECK(nested == NULL);
    }
    const int64_t rows[3] = {1, 2, 3};
    CHECK_OK(cblob_blob_reshape(parent, 3, rows));
    CHECK_OK(cblob_window_set_position(window, 0));
    CHECK_OK(cblob_window_set_position(empty, 1));
    CHECK(host_data(window) == viewed);
    cblob_blob_destroy(empty);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}

/* NeoML's window keeps the dims it was created with and places itself by them. A cblob window
 * takes the parent's current shape each time it is positioned: after the parent is reinterpreted
 * (or reshaped within its capacity) its rows are the parent's rows as they are now. Until then it
 * keeps viewing what it viewed. */
TEST(neoml_window_follows_the_parents_current_shape_when_positioned)
{
    cblob_context *ctx;
    cblob_blob *window;
    CHECK_OK(cblob_context_create(&ctx));
    cblob_blob *parent = make_parent(ctx, 4); /* 4 x 2 x 3 */
    CHECK(parent != NULL);
    CHECK_OK(cblob_window_create(parent, 1, &window));
    CHECK_OK(cblob_window_set_position(window, 1));
    const int64_t wide[2] = {2, 12};
    CHECK_OK(cblob_blob_reinterpret(parent, 2, wide));
    int64_t shape[CBLOB_MAX_AXES];
    int32_t axes = 0;
    CHECK_OK(cblob_blob_shape(window, CBLOB_MAX_AXES, shape, &axes));
    CHECK(axes == 3 && shape[0] == 1 && shape[1] == 2 && shape[2] == 3); /* not moved: as it was */
    CHECK(host_data(window) == host_data(parent) + 6 * sizeof(float));
    CHECK_OK(cblob_window_set_position(window, 1));
    CHECK_OK(cblob_blob_shape(window, CBLOB_MAX_AXES, shape, &axes));
    CHECK(axes == 2 && shape[0] == 1 && shape[1] == 12);
    CHECK(host_data(window) == host_data(parent) + 12 * sizeof(float)); /* row 1 of 12, not of 6 */
    CHECK_ERROR(cblob_window_set_position(window, 2), CBLOB_ERR_OUT_OF_RANGE); /* 2 rows now */
    const int64_t narrow[2] = {8, 3};
    CHECK_OK(cblob_blob_reshape(parent, 2, narrow)); /* within capacity: the same storage */
    CHECK_OK(cblob_window_set_size(window, 3));
    CHECK_OK(cblob_blob_shape(window, CBLOB_MAX_AXES, shape, &axes));
    CHECK(axes == 2 && shape[0] == 3 && shape[1] == 3);
    CHECK(host_data(window) == host_data(parent) + 3 * sizeof(float));
    double *values = read_values(window, CBLOB_PART_DATA);
    CHECK(values != NULL);
    CHECK_EQ_INT(values[0], tagged(3, 1));
    free(values);
    cblob_blob_destroy(window);
    cblob_blob_destroy(parent);
    cblob_context_destroy(ctx);
}
