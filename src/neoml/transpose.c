/* SPDX-License-Identifier: BSD-2-Clause */
/* Transposes: swapping two axes of any blob, into a new blob or an existing one. */
#include <inttypes.h>

#include "core/run_kernels.h"
#include "neoml/neoml.h"
#include "status.h"

/* Two canonical axes, in any order. */
typedef struct cb_axis_pair {
    int32_t first, second;
} cb_axis_pair;

static cblob_status canonical_pair(const cb_shape *shape, int32_t axis1, int32_t axis2, cb_axis_pair *out)
{
    CB_TRY(cb_shape_canonical_axis(shape, axis1, &out->first));
    return cb_shape_canonical_axis(shape, axis2, &out->second);
}

static cb_shape swapped(const cb_shape *shape, cb_axis_pair axes)
{
    cb_shape result = *shape;
    result.dims[axes.first] = shape->dims[axes.second];
    result.dims[axes.second] = shape->dims[axes.first];
    return result;
}

/* Writes source's elements at `from` transposed to `to`. Seen from the swapped axes a < b, a
 * blob is [outer, rows, middle, cols, inner]: the products of the dims before a, of a, between
 * a and b, of b and after b. The swap writes it as [outer, cols, middle, rows, inner]. */
static cblob_status write_transposed(const cb_device *place, const cblob_blob *source, const void *from,
                                     cblob_blob *target, void *to, const void *arg)
{
    (void)target;
    const cb_axis_pair *axes = arg;
    const cb_shape *shape = &source->shape;
    const int32_t a = axes->first < axes->second ? axes->first : axes->second;
    const int32_t b = axes->first < axes->second ? axes->second : axes->first;
    const int64_t n = shape->count;
    const cblob_dtype dtype = source->dtype->dtype;
    if (a == b)
        return cb_run_copy_strided(place, dtype, n, 1, n, from, n, to, n);
    /* Sub-products of a count that is not 0: they fit. */
    int64_t outer, middle, inner;
    CB_TRY(cb_shape_product(shape, 0, a, &outer));
    CB_TRY(cb_shape_product(shape, a + 1, b, &middle));
    CB_TRY(cb_shape_product(shape, b + 1, shape->num_axes, &inner));
    const int64_t rows = shape->dims[a], cols = shape->dims[b];
    if (middle == 1 && (rows == 1 || cols == 1))
        return cb_run_copy_strided(place, dtype, n, 1, n, from, n, to, n); /* the order does not change */
    return cb_run_transpose(place, dtype, n, outer, rows, middle, cols, inner, from, to);
}

CBLOB_API cblob_status cblob_blob_transposed(cblob_blob *blob, int32_t axis1, int32_t axis2, cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_blob);
    cb_axis_pair axes;
    CB_TRY(canonical_pair(&blob->shape, axis1, axis2, &axes));
    const cb_shape shape = swapped(&blob->shape, axes);
    return cb_derive_blob(blob, blob->dtype, &shape, write_transposed, &axes, out_blob);
}

CBLOB_API cblob_status cblob_blob_transpose_from(cblob_blob *blob, cblob_blob *source, cblob_part part, int32_t axis1,
                                                 int32_t axis2)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(source);
    CB_TRY(cb_check_part(part));
    cb_axis_pair axes;
    CB_TRY(canonical_pair(&source->shape, axis1, axis2, &axes));
    if (blob->dtype != source->dtype)
        return cb_fail(CBLOB_ERR_DTYPE, "cannot transpose a %s blob into a %s blob", source->dtype->name,
                       blob->dtype->name);
    const cb_shape expected = swapped(&source->shape, axes);
    if (!cb_shape_equal(&blob->shape, &expected)) {
        char mine[CB_SHAPE_TEXT_MAX], wanted[CB_SHAPE_TEXT_MAX];
        cb_shape_format(&blob->shape, mine, sizeof mine);
        cb_shape_format(&expected, wanted, sizeof wanted);
        return cb_fail(CBLOB_ERR_SHAPE, "swapping axes %d and %d of source gives the shape %s, but the blob's is %s",
                       (int)axes.first, (int)axes.second, wanted, mine);
    }
    if (blob->shape.count == 0 || (axes.first == axes.second && cb_parts_identical(blob, part, source, part)))
        return CBLOB_OK;
    if (cb_parts_overlap(blob, part, source, part))
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "source shares memory with the blob: a transpose cannot run in place");
    const cb_device *place;
    void *from, *to;
    CB_TRY(cb_place_for_write(blob, part, &place));
    CB_TRY(cb_blob_at(source, part, place, false, &from));
    CB_TRY(cb_blob_at(blob, part, place, true, &to));
    return write_transposed(place, source, from, blob, to, &axes);
}
