/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's Blob math (Update, asum, sumsq, scale) and CopyFrom. Each call decides once whether
 * Caffe defines it for the blob's dtype, then where it runs (where the memory's head is, as
 * conformance.md 1.E-1.F says), and runs the kernel there through the one run path
 * (generated/core/run_kernels.h): the host device's backend is the CPU's, a GPU's its own. */
#include <inttypes.h>
#include <string.h>

#include "blob.h"
#include "core/run_kernels.h"
#include "status.h"
#include "threads.h"

/* Caffe defines its blob math for float and double only ("Not Implemented Yet" for int and
 * unsigned int): decided here, before anything is touched, on the host and the device alike. */
static cblob_status require_math_dtype(const cblob_blob *blob, const char *call, const char *caffe)
{
    if (blob->dtype->is_float)
        return CBLOB_OK;
    return cb_fail(CBLOB_ERR_NOT_IMPLEMENTED, "%s is not implemented for %s blobs (Caffe's %s is defined only for float32 and float64)",
                   call, blob->dtype->name, caffe);
}

static cblob_status update(cblob_blob *blob)
{
    if (blob->storage[CBLOB_PART_DATA] == NULL)
        return CBLOB_OK; /* never had elements: nothing to update */
    if (blob->storage[CBLOB_PART_DATA]->head == CBLOB_HEAD_UNINITIALIZED)
        return cb_fail(CBLOB_ERR_STATE, "data has never been written or read (Caffe: \"Syncedmem not initialized\")");
    const cb_device *place;
    void *diff, *data;
    CB_TRY(cb_blob_math_place(blob, CBLOB_PART_DATA, &place));
    CB_TRY(cb_blob_at(blob, CBLOB_PART_DIFF, place, false, &diff));
    CB_TRY(cb_blob_at(blob, CBLOB_PART_DATA, place, true, &data));
    return cb_run_axpy(place, blob->dtype->dtype, blob->shape.count, -1.0, diff, data);
}

/* asum or sumsq of the part's current copy, moving nothing. */
static cblob_status sum(const cblob_blob *blob, cblob_part part, bool squares, double *out_sum)
{
    if (cb_blob_never_accessed(blob, part) || blob->shape.count == 0) {
        *out_sum = 0;
        return CBLOB_OK;
    }
    const cb_device *place;
    const void *x;
    CB_TRY(cb_blob_current(blob, part, &place, &x));
    return squares ? cb_run_sumsq(place, blob->dtype->dtype, blob->shape.count, x, out_sum)
                   : cb_run_asum(place, blob->dtype->dtype, blob->shape.count, x, out_sum);
}

static cblob_status scale(cblob_blob *blob, cblob_part part, double factor)
{
    if (cb_blob_never_accessed(blob, part))
        return CBLOB_OK;
    const cb_device *place;
    void *x;
    CB_TRY(cb_blob_math_place(blob, part, &place));
    CB_TRY(cb_blob_at(blob, part, place, true, &x));
    return cb_run_scale(place, blob->dtype->dtype, blob->shape.count, factor, x);
}

CBLOB_API cblob_status cblob_blob_update(cblob_blob *blob)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(require_math_dtype(blob, "update", "Update"));
    cb_context_use_threads(blob->context);
    return update(blob);
}

CBLOB_API cblob_status cblob_blob_asum(const cblob_blob *blob, cblob_part part, double *out_sum)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_sum);
    CB_TRY(require_math_dtype(blob, "asum", "asum_data/asum_diff"));
    cb_context_use_threads(blob->context);
    return sum(blob, part, false, out_sum);
}

CBLOB_API cblob_status cblob_blob_sumsq(const cblob_blob *blob, cblob_part part, double *out_sum)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_sum);
    CB_TRY(require_math_dtype(blob, "sumsq", "sumsq_data/sumsq_diff"));
    cb_context_use_threads(blob->context);
    return sum(blob, part, true, out_sum);
}

CBLOB_API cblob_status cblob_blob_scale(cblob_blob *blob, cblob_part part, double factor)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_TRY(require_math_dtype(blob, "scale", "scale_data/scale_diff"));
    cb_context_use_threads(blob->context);
    return scale(blob, part, factor);
}

/* ---- copy_from ----------------------------------------------------------------------------- */

/* Copies count elements of source's part into `destination` (the storage the blob will have
 * after the planned reshape), on the host or the device as the context's mode says. */
static cblob_status copy_part(cblob_blob *blob, cb_storage *destination, cblob_blob *source, cblob_part part)
{
    const size_t bytes = cb_blob_bytes(source);
    void *from, *base;
    if (atomic_load(&blob->context->mode) == CBLOB_MODE_GPU) {
        const cb_device *device;
        CB_TRY(cb_context_device(blob->context, &device));
        CB_TRY(cb_blob_device_on(source, part, device, false, &from)); /* read on this context's stream */
        CB_TRY(cb_storage_mutable_gpu(destination, device, &base));
        void *to = (char *)base + blob->offset_bytes;
        if (to == from)
            return CBLOB_OK;
        return device->backend->memory->copy(device, to, from, bytes, CB_COPY_DEVICE_TO_DEVICE);
    }
    CB_TRY(cb_blob_host(source, part, false, &from));
    CB_TRY(cb_storage_mutable_cpu(destination, cb_context_pinning_device(blob->context), &base));
    void *to = (char *)base + blob->offset_bytes;
    if (to != from) /* self-copy and shared memory: nothing to move (Caffe's caffe_copy) */
        cb_parallel_copy(to, from, bytes);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_copy_from(cblob_blob *blob, cblob_blob *source, cblob_part part, int32_t reshape)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(source);
    CB_TRY(cb_check_part(part));
    CB_TRY(cb_check_bool("reshape", reshape));
    if (blob->dtype != source->dtype)
        return cb_fail(CBLOB_ERR_DTYPE, "cannot copy a %s blob into a %s blob", source->dtype->name, blob->dtype->name);
    if (!cb_shape_equal(&blob->shape, &source->shape) && !reshape) {
        char mine[CB_SHAPE_TEXT_MAX], theirs[CB_SHAPE_TEXT_MAX];
        cb_shape_format(&blob->shape, mine, sizeof mine);
        cb_shape_format(&source->shape, theirs, sizeof theirs);
        return cb_fail(CBLOB_ERR_SHAPE, "trying to copy blobs of different shapes (%s from %s) without reshape",
                       mine, theirs);
    }
    cb_reshape plan;
    CB_TRY(cb_reshape_prepare(blob, source->shape.num_axes, source->shape.dims, &plan));
    cb_context_use_threads(blob->context);
    if (source->shape.count > 0) {
        cblob_status status = copy_part(blob, cb_reshape_storage(blob, &plan, part), source, part);
        if (status != CBLOB_OK) {
            cb_reshape_abandon(&plan);
            return status;
        }
    }
    cb_reshape_commit(blob, &plan);
    return CBLOB_OK;
}
