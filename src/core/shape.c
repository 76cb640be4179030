/* SPDX-License-Identifier: BSD-2-Clause */
#include "shape.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "status.h"

cblob_status cb_shape_make(int32_t num_axes, const int64_t *dims, size_t element_size, cb_shape *out)
{
    if (num_axes < 0)
        return cb_fail(CBLOB_ERR_SHAPE, "num_axes is %d; it cannot be negative", (int)num_axes);
    if (num_axes > CBLOB_MAX_AXES)
        return cb_fail(CBLOB_ERR_SHAPE, "%d axes is more than the maximum of %d", (int)num_axes, CBLOB_MAX_AXES);
    if (num_axes > 0 && dims == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "shape is NULL but num_axes is %d", (int)num_axes);

    bool has_zero = false;
    for (int32_t i = 0; i < num_axes; ++i) {
        if (dims[i] < 0)
            return cb_fail(CBLOB_ERR_SHAPE, "shape[%d] is %" PRId64 "; dimensions cannot be negative", (int)i, dims[i]);
        has_zero = has_zero || dims[i] == 0;
    }

    int64_t count = 1;
    if (has_zero) {
        count = 0;
    } else {
        /* Bytes must fit a ptrdiff_t so that pointer arithmetic over the whole blob is defined. */
        const int64_t max_count = (int64_t)(PTRDIFF_MAX / (ptrdiff_t)element_size);
        for (int32_t i = 0; i < num_axes; ++i) {
            if (__builtin_mul_overflow(count, dims[i], &count) || count > max_count)
                return cb_fail(CBLOB_ERR_OVERFLOW,
                               "the element count overflows at shape[%d] = %" PRId64
                               " (at most %" PRId64 " elements of %zu bytes fit)",
                               (int)i, dims[i], max_count, element_size);
        }
    }

    out->num_axes = num_axes;
    if (num_axes > 0)
        memcpy(out->dims, dims, (size_t)num_axes * sizeof dims[0]);
    out->count = count;
    return CBLOB_OK;
}

bool cb_shape_equal(const cb_shape *a, const cb_shape *b)
{
    return a->num_axes == b->num_axes && memcmp(a->dims, b->dims, (size_t)a->num_axes * sizeof a->dims[0]) == 0;
}

cblob_status cb_shape_require_equal(const cb_shape *shape, const cb_shape *other, const char *name)
{
    if (cb_shape_equal(shape, other))
        return CBLOB_OK;
    char mine[CB_SHAPE_TEXT_MAX], theirs[CB_SHAPE_TEXT_MAX];
    cb_shape_format(shape, mine, sizeof mine);
    cb_shape_format(other, theirs, sizeof theirs);
    return cb_fail(CBLOB_ERR_SHAPE, "the blob's shape is %s but %s's is %s", mine, name, theirs);
}

cblob_status cb_shape_product(const cb_shape *shape, int32_t from, int32_t to, int64_t *out)
{
    int64_t product = 1;
    bool has_zero = false, overflow = false;
    for (int32_t i = from; i < to; ++i) {
        has_zero = has_zero || shape->dims[i] == 0;
        overflow = __builtin_mul_overflow(product, shape->dims[i], &product) || overflow;
    }
    if (!has_zero && overflow)
        return cb_fail(CBLOB_ERR_OVERFLOW, "the product of axes [%d, %d) does not fit in 64 bits", (int)from, (int)to);
    *out = has_zero ? 0 : product;
    return CBLOB_OK;
}

/* axis in [-num_axes, num_axes + past_end) to [0, num_axes + past_end). */
static cblob_status canonical(const cb_shape *shape, int32_t axis, int32_t past_end, const char *what, int32_t *out)
{
    if (axis < -shape->num_axes || axis >= shape->num_axes + past_end) {
        char text[CB_SHAPE_TEXT_MAX];
        cb_shape_format(shape, text, sizeof text);
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%s %d out of range for %d-D blob with shape %s", what, (int)axis,
                       (int)shape->num_axes, text);
    }
    *out = axis < 0 ? axis + shape->num_axes : axis;
    return CBLOB_OK;
}

cblob_status cb_shape_canonical_axis(const cb_shape *shape, int32_t axis, int32_t *out)
{
    return canonical(shape, axis, 0, "axis", out);
}

cblob_status cb_shape_canonical_bound(const cb_shape *shape, int32_t bound, int32_t *out)
{
    return canonical(shape, bound, 1, "axis bound", out);
}

cblob_status cb_shape_legacy_dim(const cb_shape *shape, int32_t index, int64_t *out)
{
    if (shape->num_axes > 4)
        return cb_fail(CBLOB_ERR_SHAPE, "cannot use legacy accessors on a blob with %d axes (more than 4)",
                       (int)shape->num_axes);
    if (index < -4 || index >= 4)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "legacy index %d is outside [-4, 4)", (int)index);
    if (index >= shape->num_axes || index < -shape->num_axes) {
        /* Axes a legacy blob does not have read as 1, as in Caffe. */
        *out = 1;
        return CBLOB_OK;
    }
    *out = shape->dims[index < 0 ? index + shape->num_axes : index];
    return CBLOB_OK;
}

cblob_status cb_shape_offset(const cb_shape *shape, int32_t num_indices, const int64_t *indices, int64_t *out)
{
    if (num_indices < 0 || num_indices > shape->num_axes)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%d indices given for a blob with %d axes",
                       (int)num_indices, (int)shape->num_axes);
    if (num_indices > 0 && indices == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "indices is NULL but num_indices is %d", (int)num_indices);
    for (int32_t i = 0; i < num_indices; ++i) {
        if (indices[i] < 0 || indices[i] >= shape->dims[i])
            return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "index %" PRId64 " on axis %d is outside [0, %" PRId64 ")",
                           indices[i], (int)i, shape->dims[i]);
    }
    /* With a zero dim every stride before it is 0 and no index can be given on it or after it,
     * so every valid offset is 0, while the partial products of the other dims need not fit.
     * Otherwise the offset stays below count, which fits. */
    int64_t offset = 0;
    for (int32_t i = 0; shape->count > 0 && i < shape->num_axes; ++i)
        offset = offset * shape->dims[i] + (i < num_indices ? indices[i] : 0);
    *out = offset;
    return CBLOB_OK;
}

size_t cb_shape_format(const cb_shape *shape, char *buffer, size_t buffer_size)
{
    char text[CB_SHAPE_TEXT_MAX];
    size_t length = 0;
    for (int32_t i = 0; i < shape->num_axes; ++i)
        length += (size_t)snprintf(text + length, sizeof text - length, "%" PRId64 " ", shape->dims[i]);
    length += (size_t)snprintf(text + length, sizeof text - length, "(%" PRId64 ")", shape->count);
    if (buffer_size > 0)
        snprintf(buffer, buffer_size, "%s", text);
    return length;
}
