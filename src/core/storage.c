/* SPDX-License-Identifier: BSD-2-Clause */
#include "storage.h"
#include "alloc.h"

#include <stdlib.h>

#include "status.h"
#include "threads.h"

cblob_status cb_storage_create(size_t size, cb_storage **out)
{
    cb_storage *storage = cb_calloc(1, sizeof *storage);
    if (storage == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a storage record");
    atomic_init(&storage->holders, 1);
    storage->size = size;
    storage->head = CBLOB_HEAD_UNINITIALIZED;
    *out = storage;
    return CBLOB_OK;
}

void cb_storage_retain(cb_storage *storage)
{
    atomic_fetch_add_explicit(&storage->holders, 1, memory_order_relaxed);
}

/* Waits for the device work queued on the storage's memory (by its last user, which every
 * earlier user's work precedes): a caller's buffer goes back to its owner, which may hand it out
 * again at once (a caching allocator), only when nothing queued still reads or writes it. */
static void finish_device_work(const cb_storage *storage)
{
    if (storage->device.queue != NULL)
        storage->device.backend->queue->synchronize(&storage->device);
}

static void drop_host(cb_storage *storage)
{
    if (storage->host != NULL && !storage->host_owned && storage->host_release.fn != NULL)
        finish_device_work(storage);
    if (storage->host != NULL) {
        const cb_device *pinning = &storage->host_pinned_by;
        if (storage->host_owned && pinning->backend != NULL)
            pinning->backend->memory->free_pinned(pinning, storage->host);
        else if (storage->host_owned)
            cb_host_device.backend->memory->free(&cb_host_device, storage->host, storage->size);
        else if (storage->host_release.fn != NULL)
            storage->host_release.fn(storage->host, storage->host_release.user_data);
    }
    storage->host = NULL;
    storage->host_owned = false;
    storage->host_pinned_by = (cb_device){0};
    storage->host_release = (cb_release){0};
}

static void drop_dev(cb_storage *storage)
{
    if (storage->dev != NULL && !storage->dev_owned && storage->dev_release.fn != NULL)
        finish_device_work(storage);
    if (storage->dev != NULL && storage->dev_owned) { /* only memory cblob made names its backend */
        const cb_backend_memory *memory = storage->device.backend->memory;
        if (storage->dev_escaped)
            memory->free_escaped(&storage->device, storage->dev, storage->size);
        else
            memory->free(&storage->device, storage->dev, storage->size);
    } else if (storage->dev != NULL && storage->dev_release.fn != NULL) {
        storage->dev_release.fn(storage->dev, storage->dev_release.user_data);
    }
    storage->dev = NULL;
    storage->dev_owned = false;
    storage->dev_escaped = false;
    storage->dev_release = (cb_release){0};
}

/* Holds `device`'s queue as the storage's last user, letting go of the previous one. */
static void hold_queue(cb_storage *storage, const cb_device *device)
{
    if (device->queue != NULL)
        device->backend->queue->retain(device->queue);
    if (storage->device.queue != NULL)
        storage->device.backend->queue->release(storage->device.queue);
    storage->device.queue = device->queue;
    storage->device.stream = device->stream;
}

void cb_storage_release(cb_storage *storage)
{
    if (storage == NULL || atomic_fetch_sub_explicit(&storage->holders, 1, memory_order_acq_rel) != 1)
        return;
    drop_host(storage);
    drop_dev(storage);
    if (storage->device.queue != NULL)
        storage->device.backend->queue->release(storage->device.queue);
    free(storage);
}

/* Gives the storage an owned, zero-filled host buffer (Caffe's CaffeMallocHost + memset): the host
 * device's memory, whose large buffers come zeroed from the kernel, their pages faulted in by
 * whichever threads first write them (src/cpu/host_memory.h), or a GPU's pinned memory, cleared by
 * the pool's threads. */
static cblob_status allocate_host(cb_storage *storage, const cb_device *pinning)
{
    if (storage->size == 0)
        return CBLOB_OK;
    void *ptr = NULL;
    if (pinning != NULL) {
        CB_TRY(pinning->backend->memory->alloc_pinned(pinning, storage->size, &ptr));
        cb_parallel_zero(ptr, storage->size);
        storage->host_pinned_by = *pinning;
    } else {
        CB_TRY(cb_host_device.backend->memory->alloc(&cb_host_device, storage->size, true, &ptr));
    }
    storage->host = ptr;
    storage->host_owned = true;
    return CBLOB_OK;
}

/* The storage may outlive the context whose device it was given, so it keeps no pointer to that
 * context's log; it holds the queue of its last user (cb_storage_follow). */
static void record_device(cb_storage *storage, const cb_device *device)
{
    hold_queue(storage, device);
    storage->device.backend = device->backend;
    storage->device.index = device->index;
    storage->device.log = NULL;
}

cblob_status cb_storage_follow(cb_storage *storage, const cb_device *device)
{
    if (storage->dev == NULL || storage->device.queue == device->queue)
        return CBLOB_OK;
    if (storage->device.queue != NULL)
        CB_TRY(device->backend->queue->follow(device, storage->device.queue));
    hold_queue(storage, device);
    return CBLOB_OK;
}

/* Gives the storage an owned device buffer on `device`; zero-filled only when asked, since a
 * buffer about to receive a full host copy need not be cleared first. */
static cblob_status allocate_dev(cb_storage *storage, const cb_device *device, bool zero)
{
    if (storage->size == 0)
        return CBLOB_OK;
    void *ptr = NULL;
    CB_TRY(device->backend->memory->alloc(device, storage->size, zero, &ptr));
    storage->dev = ptr;
    storage->dev_owned = true;
    record_device(storage, device);
    return CBLOB_OK;
}

static cblob_status to_cpu(cb_storage *storage, const cb_device *pinning)
{
    switch (storage->head) {
    case CBLOB_HEAD_UNINITIALIZED:
        CB_TRY(allocate_host(storage, pinning));
        storage->head = CBLOB_HEAD_AT_CPU;
        return CBLOB_OK;
    case CBLOB_HEAD_AT_GPU:
        if (storage->host == NULL)
            CB_TRY(allocate_host(storage, pinning));
        if (storage->size > 0)
            CB_TRY(storage->device.backend->memory->copy(&storage->device, storage->host, storage->dev,
                                                 storage->size, CB_COPY_DEVICE_TO_HOST));
        storage->head = CBLOB_HEAD_SYNCED;
        return CBLOB_OK;
    default:
        return CBLOB_OK;
    }
}

static cblob_status to_gpu(cb_storage *storage, const cb_device *device)
{
    switch (storage->head) {
    case CBLOB_HEAD_UNINITIALIZED:
        CB_TRY(allocate_dev(storage, device, true));
        storage->head = CBLOB_HEAD_AT_GPU;
        return CBLOB_OK;
    case CBLOB_HEAD_AT_CPU:
        if (storage->dev == NULL)
            CB_TRY(allocate_dev(storage, device, false));
        if (storage->size > 0)
            CB_TRY(storage->device.backend->memory->copy(&storage->device, storage->dev, storage->host,
                                                 storage->size, CB_COPY_HOST_TO_DEVICE));
        storage->head = CBLOB_HEAD_SYNCED;
        return CBLOB_OK;
    default:
        return CBLOB_OK;
    }
}

cblob_status cb_storage_cpu(cb_storage *storage, const cb_device *pinning, void **out)
{
    CB_TRY(to_cpu(storage, pinning));
    *out = storage->host;
    return CBLOB_OK;
}

cblob_status cb_storage_mutable_cpu(cb_storage *storage, const cb_device *pinning, void **out)
{
    CB_TRY(to_cpu(storage, pinning));
    storage->head = CBLOB_HEAD_AT_CPU;
    *out = storage->host;
    return CBLOB_OK;
}

cblob_status cb_storage_gpu(cb_storage *storage, const cb_device *device, void **out)
{
    CB_TRY(cb_storage_follow(storage, device));
    CB_TRY(to_gpu(storage, device));
    *out = storage->dev;
    return CBLOB_OK;
}

cblob_status cb_storage_mutable_gpu(cb_storage *storage, const cb_device *device, void **out)
{
    CB_TRY(cb_storage_follow(storage, device));
    CB_TRY(to_gpu(storage, device));
    storage->head = CBLOB_HEAD_AT_GPU;
    *out = storage->dev;
    return CBLOB_OK;
}

cblob_status cb_storage_async_push(cb_storage *storage, const cb_device *device)
{
    if (storage->head != CBLOB_HEAD_AT_CPU)
        return cb_fail(CBLOB_ERR_STATE,
                       "an asynchronous push needs the host copy to be the only current one (head AT_CPU)");
    if (storage->dev == NULL)
        CB_TRY(allocate_dev(storage, device, false));
    if (storage->size > 0)
        CB_TRY(storage->device.backend->memory->copy_async(&storage->device, storage->dev, storage->host, storage->size));
    storage->head = CBLOB_HEAD_SYNCED;
    return CBLOB_OK;
}

/* The caller's buffer in use handed over again: the same callback and user_data continue the
 * hand-over in progress (the buffer must not be released under the blob); another callback or
 * user_data ends the first hand-over, whose callback runs now, and the buffer stays in use under
 * the new one. */
static void hand_over_again(void *ptr, cb_release held, cb_release release)
{
    if (held.fn != NULL && (held.fn != release.fn || held.user_data != release.user_data))
        held.fn(ptr, held.user_data);
}

void cb_storage_set_cpu(cb_storage *storage, void *ptr, cb_release release)
{
    if (ptr == storage->host && !storage->host_owned)
        hand_over_again(ptr, storage->host_release, release);
    else
        drop_host(storage);
    storage->host = ptr;
    storage->host_release = release;
    storage->head = CBLOB_HEAD_AT_CPU;
}

void cb_storage_set_gpu(cb_storage *storage, const cb_device *device, void *ptr, cb_release release)
{
    if (ptr == storage->dev && !storage->dev_owned)
        hand_over_again(ptr, storage->dev_release, release);
    else
        drop_dev(storage);
    storage->dev = ptr;
    record_device(storage, device);
    storage->dev_release = release;
    storage->head = CBLOB_HEAD_AT_GPU;
}
