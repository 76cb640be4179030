/* SPDX-License-Identifier: BSD-2-Clause */
/* NeoML's named 7-axis layout: creation helpers, named dimensions, object sizes, dimension
 * comparisons and reinterpretation. */
#include <inttypes.h>
#include <string.h>

#include "neoml/neoml.h"
#include "status.h"

/* NeoML's CreateTensor: dims[i] becomes axis i and the axes after them are 1 (left-aligned). */
static cblob_status create_left_aligned(cblob_context *context, cblob_dtype dtype, int32_t num_dims, const int64_t *dims,
                                        cblob_blob **out_blob)
{
    if (num_dims < 0 || num_dims > CBLOB_NEOML_AXES)
        return cb_fail(CBLOB_ERR_SHAPE, "num_dims is %d; a NeoML blob takes 0 to %d dimensions", (int)num_dims,
                       CBLOB_NEOML_AXES);
    if (num_dims > 0 && dims == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "dims is NULL but num_dims is %d", (int)num_dims);
    int64_t full[CBLOB_NEOML_AXES] = {1, 1, 1, 1, 1, 1, 1};
    if (num_dims > 0)
        memcpy(full, dims, (size_t)num_dims * sizeof full[0]);
    return cb_blob_create(context, dtype, CBLOB_NEOML_AXES, full, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_tensor(cblob_context *context, cblob_dtype dtype, int32_t num_dims,
                                                const int64_t *dims, cblob_blob **out_blob)
{
    CB_ENTER();
    return create_left_aligned(context, dtype, num_dims, dims, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_vector(cblob_context *context, cblob_dtype dtype, int64_t size,
                                                cblob_blob **out_blob)
{
    CB_ENTER();
    return create_left_aligned(context, dtype, 1, &size, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_matrix(cblob_context *context, cblob_dtype dtype, int64_t height,
                                                int64_t width, cblob_blob **out_blob)
{
    CB_ENTER();
    const int64_t dims[2] = {height, width};
    return create_left_aligned(context, dtype, 2, dims, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_data(cblob_context *context, cblob_dtype dtype, int64_t batch_length,
                                              int64_t batch_width, int64_t channels, cblob_blob **out_blob)
{
    CB_ENTER();
    const int64_t dims[CBLOB_NEOML_AXES] = {batch_length, batch_width, 1, 1, 1, 1, channels};
    return create_left_aligned(context, dtype, CBLOB_NEOML_AXES, dims, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_list(cblob_context *context, cblob_dtype dtype, int64_t batch_length,
                                              int64_t batch_width, int64_t list_size, int64_t channels,
                                              cblob_blob **out_blob)
{
    CB_ENTER();
    const int64_t dims[CBLOB_NEOML_AXES] = {batch_length, batch_width, list_size, 1, 1, 1, channels};
    return create_left_aligned(context, dtype, CBLOB_NEOML_AXES, dims, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_image2d(cblob_context *context, cblob_dtype dtype, int64_t batch_length,
                                                 int64_t batch_width, int64_t height, int64_t width, int64_t channels,
                                                 cblob_blob **out_blob)
{
    CB_ENTER();
    const int64_t dims[CBLOB_NEOML_AXES] = {batch_length, batch_width, 1, height, width, 1, channels};
    return create_left_aligned(context, dtype, CBLOB_NEOML_AXES, dims, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_image3d(cblob_context *context, cblob_dtype dtype, int64_t batch_length,
                                                 int64_t batch_width, int64_t height, int64_t width, int64_t depth,
                                                 int64_t channels, cblob_blob **out_blob)
{
    CB_ENTER();
    const int64_t dims[CBLOB_NEOML_AXES] = {batch_length, batch_width, 1, height, width, depth, channels};
    return create_left_aligned(context, dtype, CBLOB_NEOML_AXES, dims, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_like(const cblob_blob *pattern, cblob_dtype dtype, cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(pattern);
    const cb_shape shape = pattern->shape;
    return cb_blob_create(pattern->context, dtype, shape.num_axes, shape.dims, out_blob);
}

/* ---- named dimensions and object sizes --------------------------------------------------- */

CBLOB_API cblob_status cblob_blob_dim(const cblob_blob *blob, cblob_dim dim, int64_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_size);
    CB_TRY(cb_require_neoml(blob, "blob"));
    if (dim < -CBLOB_NEOML_AXES || dim >= CBLOB_NEOML_AXES)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "dim %d is not a cblob_dim value (0 to 6) or one counted from the end "
                       "(-7 to -1)", (int)dim);
    int32_t axis;
    CB_TRY(cb_shape_canonical_axis(&blob->shape, dim, &axis));
    *out_size = blob->shape.dims[axis];
    return CBLOB_OK;
}

static cblob_status neoml_product(const cblob_blob *blob, cblob_dim from, int32_t to, int64_t *out)
{
    CB_REQUIRE(blob);
    CB_REQUIRE(out);
    CB_TRY(cb_require_neoml(blob, "blob"));
    return cb_shape_product(&blob->shape, from, to, out);
}

CBLOB_API cblob_status cblob_blob_object_count(const cblob_blob *blob, int64_t *out_count)
{
    CB_ENTER();
    return neoml_product(blob, CBLOB_DIM_BATCH_LENGTH, CBLOB_DIM_HEIGHT, out_count);
}

CBLOB_API cblob_status cblob_blob_object_size(const cblob_blob *blob, int64_t *out_size)
{
    CB_ENTER();
    return neoml_product(blob, CBLOB_DIM_HEIGHT, CBLOB_NEOML_AXES, out_size);
}

CBLOB_API cblob_status cblob_blob_geometrical_size(const cblob_blob *blob, int64_t *out_size)
{
    CB_ENTER();
    return neoml_product(blob, CBLOB_DIM_HEIGHT, CBLOB_DIM_CHANNELS, out_size);
}

/* ---- comparisons and reinterpretation ---------------------------------------------------- */

CBLOB_API cblob_status cblob_blob_equal_shape(const cblob_blob *blob, const cblob_blob *other, int32_t *out_equal)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(other);
    CB_REQUIRE(out_equal);
    *out_equal = cb_shape_equal(&blob->shape, &other->shape);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_equal_dims(const cblob_blob *blob, const cblob_blob *other, int32_t num_axes,
                                             const int32_t *axes, int32_t *out_equal)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(other);
    CB_REQUIRE(out_equal);
    if (num_axes < 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "num_axes is %d; it cannot be negative", (int)num_axes);
    if (num_axes > 0 && axes == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "axes is NULL but num_axes is %d", (int)num_axes);
    int32_t equal = 1;
    for (int32_t i = 0; i < num_axes; ++i) {
        int32_t mine, theirs;
        if (cb_shape_canonical_axis(&blob->shape, axes[i], &mine) != CBLOB_OK ||
            cb_shape_canonical_axis(&other->shape, axes[i], &theirs) != CBLOB_OK)
            return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "axes[%d] is %d, which is not an axis of both blobs (they have %d "
                           "and %d axes)", (int)i, (int)axes[i], (int)blob->shape.num_axes, (int)other->shape.num_axes);
        equal = equal && blob->shape.dims[mine] == other->shape.dims[theirs];
    }
    *out_equal = equal;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_reinterpret(cblob_blob *blob, int32_t num_axes, const int64_t *shape)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    cb_shape next;
    CB_TRY(cb_shape_make(num_axes, shape, blob->dtype->size, &next));
    if (next.count != blob->shape.count)
        return cb_fail(CBLOB_ERR_SHAPE, "the new shape has %" PRId64 " elements but the blob has %" PRId64
                       "; reinterpreting keeps the count (reshape changes it)", next.count, blob->shape.count);
    blob->shape = next;
    return CBLOB_OK;
}
