/* SPDX-License-Identifier: BSD-2-Clause */
#include <inttypes.h>

#include "core/run_kernels.h"
#include "neoml/neoml.h"
#include "status.h"

cblob_status cb_place_for_read(cblob_blob *blob, cblob_part part, const cb_device **out)
{
    cb_context_use_threads(blob->context);
    if (cb_blob_head(blob, part) != CBLOB_HEAD_AT_GPU) {
        *out = &cb_host_device;
        return CBLOB_OK;
    }
    return cb_context_device(blob->context, out);
}

cblob_status cb_place_for_write(cblob_blob *blob, cblob_part part, const cb_device **out)
{
    cb_context_use_threads(blob->context);
    const cblob_head head = cb_blob_head(blob, part);
    const bool on_device = head == CBLOB_HEAD_AT_GPU || head == CBLOB_HEAD_SYNCED ||
                           (head == CBLOB_HEAD_UNINITIALIZED && atomic_load(&blob->context->mode) == CBLOB_MODE_GPU);
    if (!on_device) {
        *out = &cb_host_device;
        return CBLOB_OK;
    }
    return cb_context_device(blob->context, out);
}

static bool ranges_overlap(uintptr_t a, size_t a_size, uintptr_t b, size_t b_size)
{
    return a_size > 0 && b_size > 0 && a < b + b_size && b < a + a_size;
}

/* Whether two storages' buffers share bytes, on the host or on a device. Distinct storages can:
 * an export imported again, or a caller's buffer inside another blob's. The whole buffers count,
 * since bringing a part's copy up to date writes all of its storage. */
static bool buffers_overlap(const cb_storage *a, const cb_storage *b)
{
    return (a->host != NULL && b->host != NULL &&
            ranges_overlap((uintptr_t)a->host, a->size, (uintptr_t)b->host, b->size)) ||
           (a->dev != NULL && b->dev != NULL && ranges_overlap((uintptr_t)a->dev, a->size, (uintptr_t)b->dev, b->size));
}

bool cb_parts_overlap(const cblob_blob *a, cblob_part part_a, const cblob_blob *b, cblob_part part_b)
{
    const cb_storage *sa = a->storage[part_a], *sb = b->storage[part_b];
    if (sa == NULL || sb == NULL)
        return false;
    if (sa != sb)
        return buffers_overlap(sa, sb);
    return ranges_overlap(a->offset_bytes, cb_blob_bytes(a), b->offset_bytes, cb_blob_bytes(b));
}

bool cb_parts_identical(const cblob_blob *a, cblob_part part_a, const cblob_blob *b, cblob_part part_b)
{
    return a->storage[part_a] != NULL && a->storage[part_a] == b->storage[part_b] &&
           a->offset_bytes == b->offset_bytes && cb_blob_bytes(a) == cb_blob_bytes(b);
}

cblob_status cb_require_neoml(const cblob_blob *blob, const char *name)
{
    if (blob->shape.num_axes != CBLOB_NEOML_AXES)
        return cb_fail(CBLOB_ERR_SHAPE, "%s has %d axes; a NeoML blob has %d (see cblob_blob_create_tensor)", name,
                       (int)blob->shape.num_axes, CBLOB_NEOML_AXES);
    return CBLOB_OK;
}

cblob_status cb_convert_elements(const cb_device *place, const cb_dtype_info *from_dtype, const cb_dtype_info *to_dtype,
                                 int64_t n, const void *from, void *to)
{
    if (from_dtype == to_dtype)
        return cb_run_copy_strided(place, from_dtype->dtype, n, 1, n, from, n, to, n);
    switch (to_dtype->dtype) {
#define CB_CONVERT_TO(ENUM, CTYPE, SUFFIX) \
    case ENUM: \
        return cb_run_convert_to_##SUFFIX(place, from_dtype->dtype, n, from, to);
        CB_FOR_EACH_DTYPE(CB_CONVERT_TO)
#undef CB_CONVERT_TO
    }
    return cb_fail(CBLOB_ERR_INTERNAL, "no conversion to dtype %d", (int)to_dtype->dtype);
}

cblob_status cb_convert_elements_truncating(const cb_device *place, const cb_dtype_info *from_dtype,
                                            const cb_dtype_info *to_dtype, int64_t n, const void *from, void *to)
{
    if (from_dtype->is_float && !to_dtype->is_float) {
        switch (to_dtype->dtype) {
        case CBLOB_DTYPE_INT32: return cb_run_truncate_to_i32(place, from_dtype->dtype, n, from, to);
        case CBLOB_DTYPE_UINT32: return cb_run_truncate_to_u32(place, from_dtype->dtype, n, from, to);
        default: return cb_fail(CBLOB_ERR_INTERNAL, "no truncating conversion to dtype %d", (int)to_dtype->dtype);
        }
    }
    return cb_convert_elements(place, from_dtype, to_dtype, n, from, to);
}

cblob_status cb_derive_blob(cblob_blob *source, const cb_dtype_info *dtype, const cb_shape *shape, cb_part_writer write,
                            const void *arg, cblob_blob **out)
{
    cblob_blob *target;
    CB_TRY(cb_blob_create(source->context, dtype->dtype, shape->num_axes, shape->dims, &target));
    for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF && source->shape.count > 0; ++part) {
        if (cb_blob_never_accessed(source, part))
            continue;
        const cb_device *place;
        void *from, *to;
        cblob_status status = cb_place_for_read(source, part, &place);
        if (status == CBLOB_OK)
            status = cb_blob_at(source, part, place, false, &from);
        if (status == CBLOB_OK)
            status = cb_blob_at(target, part, place, true, &to);
        if (status == CBLOB_OK)
            status = write(place, source, from, target, to, arg);
        if (status != CBLOB_OK) {
            cb_blob_release(target);
            return status;
        }
    }
    *out = target;
    return CBLOB_OK;
}
