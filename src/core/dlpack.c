/* SPDX-License-Identifier: BSD-2-Clause */
/* DLPack (conformance.md section 3): a blob's data or diff exported as DLPack's managed tensor
 * without copying, and a managed tensor imported as a blob without copying. The public header
 * only declares the structs; their layout comes from DLPack's own header (third_party/dlpack). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"
#include "alloc.h"
#include "cblob/dlpack.h"
#include "status.h"

/* ---- export ------------------------------------------------------------------------------ */

/* An exported tensor and what keeps its memory alive, in one allocation the deleter frees. The
 * tensor comes first, so manager_ctx (this record) and the tensor's address are the same. */
typedef struct cb_export {
    union {
        DLManagedTensorVersioned versioned;
        DLManagedTensor legacy;
    } tensor;
    cb_storage *storage; /* held until the deleter runs; NULL for a tensor without elements */
    bool on_device;      /* which of the storage's export counts holds this tensor */
    int64_t shape[];
} cb_export;

/* The deleter's work: safe from any thread, since dropping a storage is (storage.c). */
static void export_free(cb_export *export)
{
    if (export->storage != NULL) {
        atomic_fetch_sub(export->on_device ? &export->storage->dev_exports : &export->storage->host_exports, 1);
        cb_storage_release(export->storage);
    }
    free(export);
}

static void delete_versioned(DLManagedTensorVersioned *self)
{
    export_free(self->manager_ctx);
}

static void delete_legacy(DLManagedTensor *self)
{
    export_free(self->manager_ctx);
}

static cblob_status check_memory(cblob_memory memory)
{
    if (memory != CBLOB_MEMORY_HOST && memory != CBLOB_MEMORY_DEVICE)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "memory %d is neither CBLOB_MEMORY_HOST (0) nor CBLOB_MEMORY_DEVICE (1)", (int)memory);
    return CBLOB_OK;
}

/* The host copy, current once this returns, as cpu_ptr or mutable_cpu_ptr would give it. */
static cblob_status view_host(cblob_blob *blob, cblob_part part, bool writable, void **data, DLDevice *device)
{
    CB_TRY(cb_blob_host(blob, part, writable, data));
    /* Caffe's pinned host buffers (conformance.md 1.60) are reported as such, so that a CUDA
     * consumer knows it may copy from them asynchronously. */
    const cb_storage *storage = blob->storage[part];
    const bool pinned = storage != NULL && storage->host_pinned_by.backend != NULL;
    *device = (DLDevice){pinned ? kDLCUDAHost : kDLCPU, 0};
    return CBLOB_OK;
}

/* The device copy on the context's device, as gpu_ptr or mutable_gpu_ptr would give it. */
static cblob_status view_device(cblob_blob *blob, cblob_part part, bool writable, void **data, DLDevice *device)
{
    const cb_device *mine;
    CB_TRY(cb_context_device(blob->context, &mine));
    /* The consumer may use the memory on any stream (conformance.md 3.20). */
    CB_TRY(cb_blob_device_ready(blob, part, writable, data));
    *device = (DLDevice){kDLCUDA, mine->index};
    return CBLOB_OK;
}

/* Makes the export record and the DLTensor of a view of the blob's part. */
static cblob_status export_view(cblob_blob *blob, cblob_part part, cblob_memory memory, bool writable,
                                cb_export **out_export, DLTensor *out_tensor)
{
    const int32_t ndim = blob->shape.num_axes;
    /* Made first: once the head has moved, nothing may fail. */
    cb_export *export = cb_calloc(1, sizeof *export + (size_t)ndim * sizeof export->shape[0]);
    if (export == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a DLPack tensor");
    void *data = NULL;
    DLDevice device;
    const bool on_device = memory == CBLOB_MEMORY_DEVICE;
    cblob_status status = on_device ? view_device(blob, part, writable, &data, &device)
                                    : view_host(blob, part, writable, &data, &device);
    if (status != CBLOB_OK) {
        free(export);
        return status;
    }
    memcpy(export->shape, blob->shape.dims, (size_t)ndim * sizeof export->shape[0]);
    /* data is NULL exactly when the blob has no elements (DLPack wants NULL then): nothing to hold. */
    if (data != NULL) {
        export->storage = blob->storage[part];
        export->on_device = on_device;
        cb_storage_retain(export->storage);
        atomic_fetch_add(on_device ? &export->storage->dev_exports : &export->storage->host_exports, 1);
    }
    /* data is the first element itself and byte_offset 0, windows too: some consumers ignore
     * byte_offset. strides NULL: blobs are C-contiguous. */
    *out_tensor = (DLTensor){
        .data = data,
        .device = device,
        .ndim = ndim,
        .dtype = {blob->dtype->dlpack_code, blob->dtype->dlpack_bits, 1},
        .shape = export->shape,
        .strides = NULL,
        .byte_offset = 0,
    };
    *out_export = export;
    return CBLOB_OK;
}

static cblob_status check_export_arguments(const cblob_blob *blob, cblob_part part, cblob_memory memory)
{
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    return check_memory(memory);
}

CBLOB_API cblob_status cblob_blob_to_dlpack(cblob_blob *blob, cblob_part part, cblob_memory memory, int32_t read_only,
                                            struct DLManagedTensorVersioned **out_tensor)
{
    CB_ENTER();
    CB_TRY(check_export_arguments(blob, part, memory));
    CB_TRY(cb_check_bool("read_only", read_only));
    CB_REQUIRE(out_tensor);
    cb_export *export;
    DLTensor view;
    CB_TRY(export_view(blob, part, memory, !read_only, &export, &view));
    export->tensor.versioned = (DLManagedTensorVersioned){
        .version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION},
        .manager_ctx = export,
        .deleter = delete_versioned,
        .flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0,
        .dl_tensor = view,
    };
    *out_tensor = &export->tensor.versioned;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_to_dlpack_legacy(cblob_blob *blob, cblob_part part, cblob_memory memory,
                                                   struct DLManagedTensor **out_tensor)
{
    CB_ENTER();
    CB_TRY(check_export_arguments(blob, part, memory));
    CB_REQUIRE(out_tensor);
    cb_export *export;
    DLTensor view;
    /* The legacy struct cannot say read-only: its consumers write. */
    CB_TRY(export_view(blob, part, memory, true, &export, &view));
    export->tensor.legacy = (DLManagedTensor){.dl_tensor = view, .manager_ctx = export, .deleter = delete_legacy};
    *out_tensor = &export->tensor.legacy;
    return CBLOB_OK;
}

/* ---- import ------------------------------------------------------------------------------ */

/* The storage's release callbacks for an imported tensor: DLPack's deleter, once. */
static void release_versioned(void *ptr, void *user_data)
{
    (void)ptr;
    DLManagedTensorVersioned *tensor = user_data;
    if (tensor->deleter != NULL)
        tensor->deleter(tensor);
}

static void release_legacy(void *ptr, void *user_data)
{
    (void)ptr;
    DLManagedTensor *tensor = user_data;
    if (tensor->deleter != NULL)
        tensor->deleter(tensor);
}

static const char *device_name(int32_t type)
{
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    default: return "a device type";
    }
}

static cblob_status find_dtype(DLDataType type, const cb_dtype_info **out)
{
    if (type.lanes != 1)
        return cb_fail(CBLOB_ERR_DTYPE, "the tensor's elements have %u lanes; cblob takes 1", (unsigned)type.lanes);
#define CB_MATCH_DLPACK(ENUM, CTYPE, SUFFIX) \
    do { \
        const cb_dtype_info *info = cb_dtype_find(ENUM); \
        if (info->dlpack_code == type.code && info->dlpack_bits == type.bits) { \
            *out = info; \
            return CBLOB_OK; \
        } \
    } while (0);
    CB_FOR_EACH_DTYPE(CB_MATCH_DLPACK)
#undef CB_MATCH_DLPACK
    return cb_fail(CBLOB_ERR_DTYPE,
                   "DLPack dtype code %u with %u bits has no cblob dtype (cblob takes float32, float64, int32 and "
                   "uint32)",
                   (unsigned)type.code, (unsigned)type.bits);
}

/* Strides NULL, or the row-major ones; an axis of size 1 may have any stride, and a tensor
 * without elements any strides, since no element's address depends on them then. */
static cblob_status check_contiguous(const DLTensor *dl, const cb_shape *shape)
{
    if (dl->strides == NULL || shape->count == 0)
        return CBLOB_OK;
    int64_t expected = 1;
    for (int32_t axis = shape->num_axes - 1; axis >= 0; --axis) {
        if (shape->dims[axis] != 1 && dl->strides[axis] != expected)
            return cb_fail(CBLOB_ERR_SHAPE,
                           "stride %" PRId64 " of axis %d is not C-contiguous (expected %" PRId64
                           "); blobs take only row-major tensors",
                           dl->strides[axis], (int)axis, expected);
        expected *= shape->dims[axis];
    }
    return CBLOB_OK;
}

/* Where a host tensor's or a CUDA tensor's memory lives once checked. */
typedef struct cb_import {
    const cb_dtype_info *dtype;
    cb_shape shape;
    void *first;              /* data + byte_offset */
    const cb_device *device;  /* the context's device for a CUDA tensor; NULL for host memory */
} cb_import;

static cblob_status check_tensor(cblob_context *context, const DLTensor *dl, cb_import *out)
{
    const int32_t type = dl->device.device_type;
    if (type != kDLCPU && type != kDLCUDAHost && type != kDLCUDA)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "the tensor is on %s (%d); cblob takes kDLCPU, kDLCUDAHost and kDLCUDA tensors",
                       device_name(type), (int)type);
    CB_TRY(find_dtype(dl->dtype, &out->dtype));
    CB_TRY(cb_shape_make(dl->ndim, dl->shape, out->dtype->size, &out->shape));
    CB_TRY(check_contiguous(dl, &out->shape));
    out->first = NULL;
    out->device = NULL;
    if (out->shape.count == 0)
        return CBLOB_OK; /* DLPack allows any data, NULL included: nothing is read */
    if (dl->data == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "the tensor's data is NULL but it has %" PRId64 " elements",
                       out->shape.count);
    const uintptr_t first = (uintptr_t)dl->data + (uintptr_t)dl->byte_offset;
    if (first < (uintptr_t)dl->data || first % out->dtype->size != 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "the tensor's first element (data %p + byte_offset %" PRIu64 ") is not aligned to its %zu-byte "
                       "elements",
                       dl->data, dl->byte_offset, out->dtype->size);
    out->first = (void *)first;
    if (type != kDLCUDA)
        return CBLOB_OK;
    if (dl->device.device_id < 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "the tensor's device_id is %d", (int)dl->device.device_id);
    CB_TRY(cb_context_use_device(context, dl->device.device_id, &out->device));
    return out->device->backend->memory->check(out->device, out->first, (size_t)out->shape.count * out->dtype->size);
}

/* DLPack's stream rule on import: the context's stream waits for the work queued so far on
 * `stream`, the one the producer's work is ordered before (NULL: the legacy default stream, as
 * DLPack's stream=None means). Nothing to wait for on the context's own stream. Before anything
 * changes, so that a stream cblob cannot wait on leaves the tensor the caller's. */
static cblob_status order_after_producer(const cb_import *import, void *stream)
{
    if (import->device == NULL || stream == import->device->stream)
        return CBLOB_OK;
    return import->device->backend->queue->wait_stream(import->device, stream);
}

/* Checks the tensor, then makes the blob: data is the tensor's memory, released through
 * `release` (DLPack's deleter), diff is new memory. Changes nothing and keeps the deleter
 * uncalled on failure; a tensor without elements is released at once. */
static cblob_status import_tensor(cblob_context *context, const DLTensor *dl, void *stream, cb_release release,
                                  cblob_blob **out_blob)
{
    cb_import import;
    CB_TRY(check_tensor(context, dl, &import));
    CB_TRY(order_after_producer(&import, stream));
    cblob_blob *blob;
    CB_TRY(cb_blob_new(context, import.dtype->dtype, &blob));
    blob->shape = import.shape;
    if (import.shape.count > 0) {
        const size_t bytes = (size_t)import.shape.count * import.dtype->size;
        cblob_status status = CBLOB_OK;
        for (int p = 0; p < CB_PARTS && status == CBLOB_OK; ++p)
            status = cb_storage_create(bytes, &blob->storage[p]);
        if (status != CBLOB_OK) {
            cb_blob_release(blob);
            return status;
        }
        if (import.device != NULL)
            cb_storage_set_gpu(blob->storage[CBLOB_PART_DATA], import.device, import.first, release);
        else
            cb_storage_set_cpu(blob->storage[CBLOB_PART_DATA], import.first, release);
    } else {
        release.fn(NULL, release.user_data);
    }
    *out_blob = blob;
    return CBLOB_OK;
}

/* The versioned tensor's own checks: another major version may only be deleted, and a read-only
 * tensor cannot back a blob. */
static cblob_status check_versioned(const DLManagedTensorVersioned *tensor)
{
    /* DLPack: with another major version only the deleter may be touched (it stays the caller's). */
    if (tensor->version.major != DLPACK_MAJOR_VERSION)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "the tensor is DLPack %u.%u; cblob reads DLPack %d.x",
                       (unsigned)tensor->version.major, (unsigned)tensor->version.minor, DLPACK_MAJOR_VERSION);
    if (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "the tensor is read-only, and every blob can be written");
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_from_dlpack(cblob_context *context, struct DLManagedTensorVersioned *tensor,
                                              cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(tensor);
    CB_REQUIRE(out_blob);
    CB_TRY(check_versioned(tensor));
    return import_tensor(context, &tensor->dl_tensor, NULL, (cb_release){release_versioned, tensor}, out_blob);
}

CBLOB_API cblob_status cblob_blob_from_dlpack_on_stream(cblob_context *context, struct DLManagedTensorVersioned *tensor,
                                                        void *stream, cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(tensor);
    CB_REQUIRE(out_blob);
    CB_TRY(check_versioned(tensor));
    return import_tensor(context, &tensor->dl_tensor, stream, (cb_release){release_versioned, tensor}, out_blob);
}

CBLOB_API cblob_status cblob_blob_from_dlpack_legacy(cblob_context *context, struct DLManagedTensor *tensor,
                                                     cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(tensor);
    CB_REQUIRE(out_blob);
    return import_tensor(context, &tensor->dl_tensor, NULL, (cb_release){release_legacy, tensor}, out_blob);
}

CBLOB_API cblob_status cblob_blob_from_dlpack_legacy_on_stream(cblob_context *context, struct DLManagedTensor *tensor,
                                                               void *stream, cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(tensor);
    CB_REQUIRE(out_blob);
    return import_tensor(context, &tensor->dl_tensor, stream, (cb_release){release_legacy, tensor}, out_blob);
}
