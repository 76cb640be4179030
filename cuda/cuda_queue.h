/* SPDX-License-Identifier: BSD-2-Clause */
/* Queues: a context's CUDA stream as contexts and storages hold it (backend.h, cb_queue).
 *
 * Ordering between streams on shared memory: a storage remembers the queue of its last user.
 * When another queue takes the storage over, an event is recorded on the previous queue at that
 * moment and the new stream waits for it: everything the previous user queued on the memory is
 * ordered before what the new user queues. (The event captures all the previous stream's work
 * so far, a superset of the work on this storage: never too little, sometimes a little more.)
 * A queue whose context let go of it is retired: its work has been waited for, its stream may
 * be gone, and nothing waits for it again. */
#ifndef CBLOB_CUDA_QUEUE_H
#define CBLOB_CUDA_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "backend.h"
#include "cuda_api.h"

/* A place for one call's result (a sum) that the device writes and the host reads: mapped
 * pinned memory, so no copy is queued for it. */
#define CB_CUDA_SLOT_DOUBLES 1
typedef struct cb_cuda_slot {
    double *host;
    cbcu_deviceptr device;
} cb_cuda_slot;

struct cb_queue {
    atomic_int holders;
    int32_t device_index;
    cbcu_stream stream;
    bool owned;           /* made for the context, destroyed when it is retired */
    pthread_mutex_t lock; /* over retiring and recording `event` */
    atomic_bool retired;
    cbcu_event event;     /* created at the first follow */
    /* cuBLAS, bound to the stream (made at first use, under `lock`): sums in device pointer mode
     * (results go to a slot, and no call waits inside cuBLAS), axpy and scal with host scalars.
     * cuBLAS allows calls on one handle from several threads while its settings stay fixed. */
    cbbl_handle blas_sums, blas_scalars;
    /* Result slots not in use, and the pinned chunks they were cut from (under `lock`). */
    cb_cuda_slot *free_slots;
    int free_count, free_room;
    void **chunks;
    int chunk_count;
    /* The reductions' partial sums (CB_CUDA_REDUCE_PARTS doubles, made at the first reduction):
     * both passes of one reduction are queued under `reduce_lock`, so the stream orders each
     * reduction's use of it after the previous one's. */
    pthread_mutex_t reduce_lock;
    cbcu_deviceptr scratch;
};

cblob_status cb_cuda_queue_open(cb_device *device, bool own, void *stream);
void cb_cuda_queue_close(cb_queue *queue);
void cb_cuda_queue_retain(cb_queue *queue);
void cb_cuda_queue_release(cb_queue *queue);
cblob_status cb_cuda_queue_follow(const cb_device *device, cb_queue *previous);
cblob_status cb_cuda_queue_wait_stream(const cb_device *device, void *stream);

/* A result slot of the device's queue, for one call; given back when the call has read it. */
cblob_status cb_cuda_slot_take(const cb_device *device, cb_cuda_slot *out);
void cb_cuda_slot_give(const cb_device *device, cb_cuda_slot slot);

/* The stream work for `device` goes to: its queue's, or the legacy stream when the queue is
 * retired (everything on it has finished; the stream itself may be gone). */
cbcu_stream cb_cuda_stream(const cb_device *device);

#endif
