/* SPDX-License-Identifier: BSD-2-Clause */
/* Fill, clear (of the whole blob or one object) and elementwise add. */
#include <float.h>
#include <inttypes.h>
#include <math.h>

#include "core/run_kernels.h"
#include "neoml/neoml.h"
#include "status.h"

/* A fill value must mean the same number in the blob's dtype: integer blobs take integers in
 * their range, float32 takes anything that does not round to an infinity it was not. A double
 * rounds to float32's infinity from FLT_MAX plus half its last place (2^103) on: FLT_MAX's last
 * bit is odd, so the tie rounds up. */
static cblob_status check_fill_value(const cb_dtype_info *dtype, double value)
{
    if (dtype->is_float) {
        if (dtype->size == sizeof(float) && isfinite(value) && fabs(value) >= (double)FLT_MAX + ldexp(1, 103))
            return cb_fail(CBLOB_ERR_OVERFLOW, "value %g is beyond float32's range", value);
        return CBLOB_OK;
    }
    if (isnan(value) || value != trunc(value))
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "value %g is not an integer, and the blob is %s", value, dtype->name);
    /* DLPack's code 0 is a signed integer, 1 an unsigned one. */
    const bool is_signed = dtype->dlpack_code == 0;
    const double low = is_signed ? -ldexp(1, dtype->dlpack_bits - 1) : 0.0;
    const double high = ldexp(1, dtype->dlpack_bits - is_signed) - 1;
    if (value < low || value > high)
        return cb_fail(CBLOB_ERR_OVERFLOW, "value %.17g is outside %s's range [%.0f, %.0f]", value, dtype->name, low, high);
    return CBLOB_OK;
}

/* Sets `count` elements from element `first` of the part to value, where the part is written. */
static cblob_status fill_range(cblob_blob *blob, cblob_part part, int64_t first, int64_t count, double value)
{
    if (count == 0)
        return CBLOB_OK;
    const cb_device *place;
    void *to;
    CB_TRY(cb_place_for_write(blob, part, &place));
    CB_TRY(cb_blob_at(blob, part, place, true, &to));
    return cb_run_fill(place, blob->dtype->dtype, count, value, (char *)to + (size_t)first * blob->dtype->size);
}

static cblob_status fill_blob(cblob_blob *blob, cblob_part part, double value)
{
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_TRY(check_fill_value(blob->dtype, value));
    return fill_range(blob, part, 0, blob->shape.count, value);
}

static cblob_status fill_object(cblob_blob *blob, cblob_part part, int64_t object, double value)
{
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_TRY(cb_require_neoml(blob, "blob"));
    int64_t objects, size;
    CB_TRY(cb_shape_product(&blob->shape, CBLOB_DIM_BATCH_LENGTH, CBLOB_DIM_HEIGHT, &objects));
    if (object < 0 || object >= objects)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "object %" PRId64 " is outside [0, %" PRId64 ")", object, objects);
    CB_TRY(check_fill_value(blob->dtype, value));
    CB_TRY(cb_shape_product(&blob->shape, CBLOB_DIM_HEIGHT, CBLOB_NEOML_AXES, &size));
    return fill_range(blob, part, object * size, size, value);
}

CBLOB_API cblob_status cblob_blob_fill(cblob_blob *blob, cblob_part part, double value)
{
    CB_ENTER();
    return fill_blob(blob, part, value);
}

CBLOB_API cblob_status cblob_blob_fill_object(cblob_blob *blob, cblob_part part, int64_t object, double value)
{
    CB_ENTER();
    return fill_object(blob, part, object, value);
}

CBLOB_API cblob_status cblob_blob_clear(cblob_blob *blob, cblob_part part)
{
    CB_ENTER();
    return fill_blob(blob, part, 0.0);
}

CBLOB_API cblob_status cblob_blob_clear_object(cblob_blob *blob, cblob_part part, int64_t object)
{
    CB_ENTER();
    return fill_object(blob, part, object, 0.0);
}

CBLOB_API cblob_status cblob_blob_add(cblob_blob *blob, cblob_blob *source, cblob_part part)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(source);
    CB_TRY(cb_check_part(part));
    if (blob->dtype != source->dtype)
        return cb_fail(CBLOB_ERR_DTYPE, "cannot add a %s blob to a %s blob", source->dtype->name, blob->dtype->name);
    CB_TRY(cb_shape_require_equal(&blob->shape, &source->shape, "source"));
    if (blob->shape.count == 0)
        return CBLOB_OK;
    if (cb_parts_overlap(blob, part, source, part) && !cb_parts_identical(blob, part, source, part))
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "source overlaps the blob's memory without being the same elements");
    const cb_device *place;
    void *from, *to;
    CB_TRY(cb_place_for_write(blob, part, &place));
    CB_TRY(cb_blob_at(source, part, place, false, &from));
    CB_TRY(cb_blob_at(blob, part, place, true, &to));
    return cb_run_add(place, blob->dtype->dtype, blob->shape.count, from, to);
}
