/* SPDX-License-Identifier: BSD-2-Clause */
/* Copies: typed copies between a blob and a caller's array, blob-to-blob copies with conversion,
 * deep copies and clones. */
#include <inttypes.h>
#include <string.h>

#include "neoml/neoml.h"
#include "status.h"

/* The checks copy_in and copy_out share: the caller's array must be of the blob's dtype and
 * exactly its count. */
static cblob_status check_array(const cblob_blob *blob, cblob_part part, cblob_dtype dtype, const void *array,
                                const char *array_name, int64_t length)
{
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    const cb_dtype_info *info;
    CB_TRY(cb_check_dtype(dtype, &info));
    if (info != blob->dtype)
        return cb_fail(CBLOB_ERR_DTYPE, "the array holds %s but the blob is %s", info->name, blob->dtype->name);
    if (length != blob->shape.count)
        return cb_fail(CBLOB_ERR_SHAPE, "length is %" PRId64 " but the blob has %" PRId64 " elements", length,
                       blob->shape.count);
    if (array == NULL && length > 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "%s is NULL", array_name);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_copy_in(cblob_blob *blob, cblob_part part, cblob_dtype dtype, const void *source,
                                          int64_t length)
{
    CB_ENTER();
    CB_TRY(check_array(blob, part, dtype, source, "source", length));
    if (length == 0)
        return CBLOB_OK;
    const cb_device *place;
    void *to;
    CB_TRY(cb_place_for_write(blob, part, &place));
    CB_TRY(cb_blob_at(blob, part, place, true, &to));
    /* On the host, the caller may pass the blob's own memory: the CPU's copies move as memmove. */
    return place->backend->memory->copy(place, to, source, cb_blob_bytes(blob), CB_COPY_HOST_TO_DEVICE);
}

CBLOB_API cblob_status cblob_blob_copy_out(cblob_blob *blob, cblob_part part, cblob_dtype dtype, void *destination,
                                           int64_t length)
{
    CB_ENTER();
    CB_TRY(check_array(blob, part, dtype, destination, "destination", length));
    if (length == 0)
        return CBLOB_OK;
    const cb_device *place;
    void *from;
    CB_TRY(cb_place_for_read(blob, part, &place));
    CB_TRY(cb_blob_at(blob, part, place, false, &from));
    return place->backend->memory->copy(place, destination, from, cb_blob_bytes(blob), CB_COPY_DEVICE_TO_HOST);
}

/* Converts one part with `convert` (cb_convert_elements or its truncating form). */
static cblob_status convert_part(cblob_blob *blob, cblob_blob *source, cblob_part part, cb_element_converter convert)
{
    CB_REQUIRE(blob);
    CB_REQUIRE(source);
    CB_TRY(cb_check_part(part));
    CB_TRY(cb_shape_require_equal(&blob->shape, &source->shape, "source"));
    if (blob->shape.count == 0 || cb_parts_identical(blob, part, source, part))
        return CBLOB_OK; /* NeoML's CopyFrom(this) */
    if (cb_parts_overlap(blob, part, source, part))
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "source shares part of the blob's memory");
    const cb_device *place;
    void *from, *to;
    CB_TRY(cb_place_for_write(blob, part, &place));
    CB_TRY(cb_blob_at(source, part, place, false, &from));
    CB_TRY(cb_blob_at(blob, part, place, true, &to));
    return convert(place, source->dtype, blob->dtype, blob->shape.count, from, to);
}

CBLOB_API cblob_status cblob_blob_convert_from(cblob_blob *blob, cblob_blob *source, cblob_part part)
{
    CB_ENTER();
    return convert_part(blob, source, part, cb_convert_elements);
}

CBLOB_API cblob_status cblob_blob_convert_from_truncating(cblob_blob *blob, cblob_blob *source, cblob_part part)
{
    CB_ENTER();
    return convert_part(blob, source, part, cb_convert_elements_truncating);
}

static cblob_status write_converted(const cb_device *place, const cblob_blob *source, const void *from,
                                    cblob_blob *target, void *to, const void *arg)
{
    (void)arg;
    return cb_convert_elements(place, source->dtype, target->dtype, source->shape.count, from, to);
}

CBLOB_API cblob_status cblob_blob_deep_copy(cblob_blob *blob, cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_blob);
    return cb_derive_blob(blob, blob->dtype, &blob->shape, write_converted, NULL, out_blob);
}

CBLOB_API cblob_status cblob_blob_clone(cblob_blob *blob, cblob_dtype dtype, cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(out_blob);
    const cb_dtype_info *info;
    CB_TRY(cb_check_dtype(dtype, &info));
    return cb_derive_blob(blob, info, &blob->shape, write_converted, NULL, out_blob);
}
