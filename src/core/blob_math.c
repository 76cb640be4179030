/* SPDX-License-Identifier: BSD-2-Clause */
/* Caffe's Blob math (Update, asum, sumsq, scale) and CopyFrom: each runs where the memory's head
 * is, on the CPU kernels or on the device backend, as conformance.md 1.E-1.F says. */
#include <inttypes.h>
#include <string.h>

#include "blob.h"
#include "core/blob_math.h"
#include "cpu/kernels.h"
#include "status.h"

static const cb_cpu_kernels *cpu_kernels(const cblob_blob *blob)
{
    return &cb_cpu_kernel_table[blob->dtype->dtype];
}

/* Where a part's current copy is, without moving anything: the host or device address of the
 * blob's first element, and the device when it is on one. */
typedef struct cb_current {
    bool on_device;
    void *ptr;
    const cb_device *device;
} cb_current;

static cblob_status current_copy(const cblob_blob *blob, cblob_part part, cb_current *current)
{
    cb_storage *storage = blob->storage[part];
    *current = (cb_current){false, NULL, NULL};
    if (storage->head == CBLOB_HEAD_AT_CPU) {
        current->ptr = storage->host;
    } else {
        current->on_device = true;
        current->ptr = storage->dev;
        CB_TRY(cb_blob_work_device(blob, part, &current->device));
    }
    if (current->ptr != NULL)
        current->ptr = (char *)current->ptr + blob->offset_bytes;
    return CBLOB_OK;
}

cblob_status cb_blob_update_impl(cblob_blob *blob)
{
    if (blob->storage[CBLOB_PART_DATA] == NULL)
        return CBLOB_OK; /* never had elements: nothing to update */
    const cblob_head head = blob->storage[CBLOB_PART_DATA]->head;
    if (head == CBLOB_HEAD_UNINITIALIZED)
        return cb_fail(CBLOB_ERR_STATE, "data has never been written or read (Caffe: \"Syncedmem not initialized\")");
    void *diff, *data;
    if (head == CBLOB_HEAD_AT_CPU) {
        CB_TRY(cb_blob_host(blob, CBLOB_PART_DIFF, false, &diff));
        CB_TRY(cb_blob_host(blob, CBLOB_PART_DATA, true, &data));
        return cpu_kernels(blob)->axpy(blob->shape.count, -1.0, diff, data);
    }
    CB_TRY(cb_blob_device(blob, CBLOB_PART_DIFF, false, &diff));
    CB_TRY(cb_blob_device(blob, CBLOB_PART_DATA, true, &data));
    const cb_device *device;
    CB_TRY(cb_blob_work_device(blob, CBLOB_PART_DATA, &device));
    return device->backend->kernels->axpy(device, blob->dtype->dtype, blob->shape.count, -1.0, diff, data);
}

cblob_status cb_blob_asum_impl(const cblob_blob *blob, cblob_part part, double *out_sum)
{
    if (cb_blob_never_accessed(blob, part)) {
        *out_sum = 0;
        return CBLOB_OK;
    }
    cb_current x;
    CB_TRY(current_copy(blob, part, &x));
    if (!x.on_device)
        return cpu_kernels(blob)->asum(blob->shape.count, x.ptr, out_sum);
    return x.device->backend->kernels->asum(x.device, blob->dtype->dtype, blob->shape.count, x.ptr, out_sum);
}

cblob_status cb_blob_sumsq_impl(const cblob_blob *blob, cblob_part part, double *out_sum)
{
    if (cb_blob_never_accessed(blob, part)) {
        *out_sum = 0;
        return CBLOB_OK;
    }
    cb_current x;
    CB_TRY(current_copy(blob, part, &x));
    if (!x.on_device)
        return cpu_kernels(blob)->sumsq(blob->shape.count, x.ptr, out_sum);
    return x.device->backend->kernels->sumsq(x.device, blob->dtype->dtype, blob->shape.count, x.ptr, out_sum);
}

cblob_status cb_blob_scale_impl(cblob_blob *blob, cblob_part part, double factor)
{
    if (cb_blob_never_accessed(blob, part))
        return CBLOB_OK;
    void *x;
    if (blob->storage[part]->head == CBLOB_HEAD_AT_CPU) {
        CB_TRY(cb_blob_host(blob, part, true, &x));
        return cpu_kernels(blob)->scale(blob->shape.count, factor, x);
    }
    CB_TRY(cb_blob_device(blob, part, true, &x));
    const cb_device *device;
    CB_TRY(cb_blob_work_device(blob, part, &device));
    return device->backend->kernels->scale(device, blob->dtype->dtype, blob->shape.count, factor, x);
}

CBLOB_API cblob_status cblob_blob_update(cblob_blob *blob)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    cb_context_use_threads(blob->context);
    return cb_blob_math_table[blob->dtype->dtype].update(blob);
}

CBLOB_API cblob_status cblob_blob_asum(const cblob_blob *blob, cblob_part part, double *out_sum)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_sum);
    cb_context_use_threads(blob->context);
    return cb_blob_math_table[blob->dtype->dtype].asum(blob, part, out_sum);
}

CBLOB_API cblob_status cblob_blob_sumsq(const cblob_blob *blob, cblob_part part, double *out_sum)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_sum);
    cb_context_use_threads(blob->context);
    return cb_blob_math_table[blob->dtype->dtype].sumsq(blob, part, out_sum);
}

CBLOB_API cblob_status cblob_blob_scale(cblob_blob *blob, cblob_part part, double factor)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    cb_context_use_threads(blob->context);
    return cb_blob_math_table[blob->dtype->dtype].scale(blob, part, factor);
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
        return device->backend->copy(device, to, from, bytes, CB_COPY_DEVICE_TO_DEVICE);
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
