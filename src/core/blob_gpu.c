/* SPDX-License-Identifier: BSD-2-Clause */
/* The blob's device memory: Caffe's gpu_data / mutable_gpu_data, set_gpu_data and
 * async_gpu_push (conformance.md 1.D, 1.H). The state machine itself is storage.c's. */
#include "blob.h"
#include "status.h"

CBLOB_API cblob_status cblob_blob_gpu_ptr(cblob_blob *blob, cblob_part part, const void **out_ptr)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_ptr);
    void *ptr;
    CB_TRY(cb_blob_device_ready(blob, part, false, &ptr));
    *out_ptr = ptr;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_mutable_gpu_ptr(cblob_blob *blob, cblob_part part, void **out_ptr)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(out_ptr);
    void *ptr;
    CB_TRY(cb_blob_device_ready(blob, part, true, &ptr));
    *out_ptr = ptr;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_set_gpu_data(cblob_blob *blob, void *ptr, size_t size_bytes,
                                               cblob_release_fn release, void *user_data)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(ptr);
    CB_TRY(cb_blob_check_external(blob, size_bytes));
    CB_TRY(cb_blob_check_unexported(blob, true));
    const cb_device *device;
    CB_TRY(cb_context_device(blob->context, &device));
    CB_TRY(device->backend->memory->check(device, ptr, size_bytes));
    CB_TRY(cb_blob_exact_storage(blob));
    cb_storage_set_gpu(blob->storage[CBLOB_PART_DATA], device, ptr, (cb_release){release, user_data});
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_async_push(cblob_blob *blob, cblob_part part)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_part(part));
    const cb_device *device;
    CB_TRY(cb_context_device(blob->context, &device));
    cb_storage *storage = blob->storage[part];
    if (storage == NULL)
        return cb_fail(CBLOB_ERR_STATE, "the blob has never had elements: there is no host copy to push");
    CB_TRY(cb_blob_use_device(blob, part, device));
    return cb_storage_async_push(storage, device);
}
