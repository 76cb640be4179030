/* SPDX-License-Identifier: BSD-2-Clause */
/* The backend interface's queue part (src/core/backend.h): streams, on which a device's copies and
 * kernels run in order. Each context that opens a device gets a queue of its own; a storage holds
 * the queue of its device copy's last user, and work through another queue first follows it
 * (cb_storage_follow). A backend whose work has finished when its call returns (the CPU) has no
 * queue part. */
#ifndef CBLOB_SRC_BACKEND_QUEUE_H
#define CBLOB_SRC_BACKEND_QUEUE_H

#include <stdbool.h>

#include "cblob/cblob.h"

typedef struct cb_device cb_device;
/* A backend's stream as contexts and storages hold it: reference counted, and "retired" once its
 * context lets go of it (its work has then finished and the stream may be gone). Opaque to the
 * core. */
typedef struct cb_queue cb_queue;

typedef struct cb_backend_queue {
    /* Gives `device` (an opened one) a queue and sets its queue and stream: with `own`, a new
     * non-blocking stream of the device's context, else the caller's `stream` (borrowed), which
     * must belong to that context (CBLOB_ERR_INVALID_ARGUMENT otherwise, and for the per-thread
     * default stream). */
    cblob_status (*open)(cb_device *device, bool own, void *stream);
    /* The context letting go: waits for the queue's work, retires it (destroying an own stream)
     * and drops the context's hold. Storages hold the queue of their last user (retain,
     * release). */
    void (*close)(cb_queue *queue);
    void (*retain)(cb_queue *queue);
    void (*release)(cb_queue *queue);
    /* Orders work: what `device` queues from now on runs after what `previous` (another queue of
     * the same device) has queued so far. Nothing to do for a retired queue or the same stream. */
    cblob_status (*follow)(const cb_device *device, cb_queue *previous);
    /* The same for a stream that is not cblob's (a DLPack producer's): what `device` queues from
     * now on runs after what `stream` has queued so far. NULL is the legacy default stream; a
     * stream of another device or context is CBLOB_ERR_INVALID_ARGUMENT. */
    cblob_status (*wait_stream)(const cb_device *device, void *stream);
    /* Waits for everything queued on the device's stream. */
    cblob_status (*synchronize)(const cb_device *device);
} cb_backend_queue;

#endif
