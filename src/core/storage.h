/* SPDX-License-Identifier: BSD-2-Clause */
/* Storage: Caffe's SyncedMemory. A fixed number of bytes with a host copy and a device copy,
 * moved only when an accessor needs them (conformance.md 1.H), and reference counted so that
 * blobs sharing data, windows and exports keep it alive. */
#ifndef CBLOB_SRC_STORAGE_H
#define CBLOB_SRC_STORAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "cblob/cblob.h"

/* Who frees a buffer the storage holds but did not allocate. */
typedef struct cb_release {
    cblob_release_fn fn; /* NULL: nobody (the caller keeps the buffer) */
    void *user_data;
} cb_release;

typedef struct cb_storage {
    atomic_int holders;
    size_t size; /* bytes; fixed at creation */
    cblob_head head;

    void *host;
    bool host_owned;
    /* Pinned host memory is freed by the device that pinned it, whatever the mode is now (its
    backend NULL: the host device's memory). */
    cb_device host_pinned_by;
    cb_release host_release;

    /* Open mappings that point straight into `host` (src/neoml/buffer.c): while any is open the
     * host buffer must not be replaced under them. */
    atomic_int direct_mappings;
    /* DLPack tensors viewing `host` and `dev` (src/core/dlpack.c): while any is alive, the buffer it
     * views must not be replaced in place (set_cpu_data, set_gpu_data); the whole storage stays
     * alive for it instead. */
    atomic_int host_exports;
    atomic_int dev_exports;

    void *dev;
    bool dev_owned;
    /* The device copy's address left the library (cb_blob_device_ready: gpu_ptr, mutable_gpu_ptr,
     * DLPack device exports): an owned buffer is then freed only after a device-wide wait, since
     * its users' queued work may be on any stream (backend/memory.h, free_escaped). */
    bool dev_escaped;
    /* Valid while dev != NULL: the device the copy lives on, and the queue (with its stream) of
     * the copy's last user, which the storage holds: work from another queue follows it. */
    cb_device device;
    cb_release dev_release;
} cb_storage;

/* A storage of `size` bytes, UNINITIALIZED: nothing is allocated until first access. */
cblob_status cb_storage_create(size_t size, cb_storage **out);
void cb_storage_retain(cb_storage *storage);
void cb_storage_release(cb_storage *storage);

/* The accessors of Caffe's SyncedMemory. `pinning` is the device to pin new host buffers with
 * (NULL: plain host memory); `device` is where a device copy lives or is created, and becomes its
 * user (cb_storage_follow). Each either succeeds and moves the head as conformance.md 1.H says,
 * or fails and changes nothing. */
cblob_status cb_storage_cpu(cb_storage *storage, const cb_device *pinning, void **out);
cblob_status cb_storage_mutable_cpu(cb_storage *storage, const cb_device *pinning, void **out);
cblob_status cb_storage_gpu(cb_storage *storage, const cb_device *device, void **out);
cblob_status cb_storage_mutable_gpu(cb_storage *storage, const cb_device *device, void **out);
cblob_status cb_storage_async_push(cb_storage *storage, const cb_device *device);
/* Makes `device` (a context's, on the device the copy lives on) the copy's user: its later work
 * runs after what the previous user's queue has queued so far (backend/queue.h, follow). */
cblob_status cb_storage_follow(cb_storage *storage, const cb_device *device);

/* Caller buffers (not owned). The previous owned buffer is freed, a previous caller buffer's
 * release callback runs; the caller's buffer in use handed over again runs its callback only
 * when the new release or user_data differs (cblob_blob_set_cpu_data in the header). */
void cb_storage_set_cpu(cb_storage *storage, void *ptr, cb_release release);
void cb_storage_set_gpu(cb_storage *storage, const cb_device *device, void *ptr, cb_release release);

#endif
