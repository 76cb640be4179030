/* SPDX-License-Identifier: BSD-2-Clause */
/* The backend interface's memory part (src/core/backend.h): buffers of a device and the copies
 * between them and the host. Storages (src/core/storage.h) keep a host copy in the host device's
 * memory and a device copy in a GPU backend's; NeoML operations, blob math and collectives move
 * bytes through the part of the device they run on. */
#ifndef CBLOB_SRC_BACKEND_MEMORY_H
#define CBLOB_SRC_BACKEND_MEMORY_H

#include <stdbool.h>
#include <stddef.h>

#include "cblob/cblob.h"

typedef struct cb_device cb_device;

typedef enum cb_copy_kind {
    CB_COPY_HOST_TO_DEVICE,
    CB_COPY_DEVICE_TO_HOST,
    CB_COPY_DEVICE_TO_DEVICE,
} cb_copy_kind;

typedef struct cb_backend_memory {
    /* The memory is the host's: host code reads and writes it, and it holds blobs' host copies
     * (ggml's is_host). For such a backend every copy kind is a copy in host memory. */
    bool is_host;

    /* A buffer of `bytes` (> 0), zero-filled when `zeroed`. Fails with CBLOB_ERR_OUT_OF_MEMORY
     * (the host) or CBLOB_ERR_DEVICE_OUT_OF_MEMORY (a full device), changing nothing. free takes
     * the same size; on a device with a queue it frees in the order of the device's stream, after
     * the work queued there (and, through the storages' queues, on every cblob stream that used
     * the memory). free_escaped is for memory whose address left the library
     * (cblob_blob_gpu_ptr, DLPack exports): anyone may still have work queued on it, on streams
     * cblob never saw, so the whole device's queued work is waited for first (NULL for a backend
     * without a queue, where free does). */
    cblob_status (*alloc)(const cb_device *device, size_t bytes, bool zeroed, void **out);
    void (*free)(const cb_device *device, void *ptr, size_t bytes);
    void (*free_escaped)(const cb_device *device, void *ptr, size_t bytes);

    /* Page-locked host memory, which the device copies to and from at full speed, for host copies
     * made while a context is in GPU mode (NULL where the memory is the host's). Its address is
     * always the caller's too (host accessors, DLPack's kDLCUDAHost), so free_pinned waits for the
     * whole device's queued work before freeing. */
    cblob_status (*alloc_pinned)(const cb_device *device, size_t bytes, void **out);
    void (*free_pinned)(const cb_device *device, void *ptr);

    /* A copy of `bytes` on the device's stream. To or from the host it has finished when it
     * returns; device to device it is queued (later work on the stream sees it). Buffers in host
     * memory may overlap (the CPU moves them as memmove does). */
    cblob_status (*copy)(const cb_device *device, void *dst, const void *src, size_t bytes, cb_copy_kind kind);
    /* A host-to-device copy queued on the device's stream; the caller synchronises before relying
     * on it (NULL where the memory is the host's). */
    cblob_status (*copy_async)(const cb_device *device, void *dst, const void *src, size_t bytes);

    /* Checks that a caller's pointer is memory of `device` covering `bytes`
     * (cblob_blob_set_gpu_data, DLPack imports): CBLOB_ERR_INVALID_ARGUMENT with a message if not
     * (NULL where the memory is the host's). */
    cblob_status (*check)(const cb_device *device, const void *ptr, size_t bytes);
} cb_backend_memory;

#endif
