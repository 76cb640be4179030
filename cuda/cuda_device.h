/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-device state of the CUDA backend: the device's primary context (retained on first use and
 * kept for the life of the process), what it is and its loaded kernels. (cuBLAS handles belong to
 * each context's queue: cuda_queue.h.) */
#ifndef CBLOB_CUDA_DEVICE_H
#define CBLOB_CUDA_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "backend.h"
#include "cuda/families.h"
#include "cuda_api.h"
#include "cuda_loader.h"

/* A kernel family loaded into a device's context: the module and its entry point per dtype. */
typedef struct cb_cuda_loaded {
    cbcu_module module;
    cbcu_function functions[CB_CUDA_DTYPE_ROWS];
    int blocks_per_multiprocessor[CB_CUDA_DTYPE_ROWS]; /* asked once per kernel, at load */
    cbcu_function combine; /* a reduction's second pass (cb_cuda_family.combine); NULL elsewhere */
} cb_cuda_loaded;

typedef struct cb_cuda_family_slot {
    pthread_mutex_t lock;            /* held while one thread loads the family: the others wait */
    _Atomic(cb_cuda_loaded *) ready; /* published once loaded; read without the lock */
} cb_cuda_family_slot;

typedef struct cb_cuda_device_state {
    pthread_mutex_t open_lock;
    bool opened;
    cblob_status open_status; /* the first open's answer, given again to every later open */
    char open_message[CB_CUDA_MESSAGE_BYTES];

    int32_t index;
    cbcu_device device;
    cbcu_context context; /* the primary context, shared with the runtime API and other libraries */
    int compute_capability; /* major * 10 + minor */
    int multiprocessors;
    /* Stream-ordered memory (cuMemAllocFromPoolAsync, cuMemFreeAsync) from a pool of cblob's own,
     * where the driver has pools: NULL pool otherwise (cuMemAlloc and cuMemFree). Not the
     * device's default pool, which every library of the process shares and which gives its
     * memory back at every synchronisation (release threshold 0). */
    bool memory_pools;
    cbcu_mempool pool;
    size_t memory_bytes;
    char name[256];

    cb_cuda_family_slot families[CB_CUDA_FAMILY_COUNT];
} cb_cuda_device_state;

/* What cblob's memory pools keep at a synchronisation, in bytes (CBLOB_CUDA_POOL_RELEASE_THRESHOLD,
 * read once; UINT64_MAX, everything, unless set), and a note when the variable was not a number. */
uint64_t cb_cuda_pool_release_threshold(const char **note);

/* Loads the stack and opens device `index` (once; later calls repeat the answer). */
cblob_status cb_cuda_device_open(int32_t index, cb_cuda_device_state **out);
/* The state of a device the core got from open(). */
cb_cuda_device_state *cb_cuda_device_state_of(const cb_device *device);
/* Every device state (NULL and 0 before the first open). */
cb_cuda_device_state *cb_cuda_device_table(int *count);

const cb_cuda_driver_api *cb_cuda_driver_api_get(void);

/* Driver calls run with the device's primary context current on the calling thread; leave puts
 * back whatever context the caller had. */
cblob_status cb_cuda_enter(const cb_cuda_device_state *state);
void cb_cuda_leave(void);

/* CBLOB_OK for CUDA_SUCCESS; otherwise CBLOB_ERR_DEVICE_LOST for a sticky error (the context is
 * unusable from then on), CBLOB_ERR_DEVICE_OUT_OF_MEMORY or CBLOB_ERR_DEVICE, with a message naming
 * what failed and the CUDA error. */
cblob_status cb_cuda_check(cbcu_result result, const char *what);

/* CBLOB_CUDA_LAUNCH_BLOCKING=1 (read once): every queued kernel, copy or cuBLAS call is waited
 * for by the call that queued it, so a fault is reported by the call that caused it. */
bool cb_cuda_launch_blocking(void);
/* After queueing work on the device's stream, with the context current: checks `queued` and, in
 * launch-blocking mode, waits for the stream, naming `what` in a failure. */
cblob_status cb_cuda_queued(const cb_device *device, cbcu_result queued, const char *what);

#endif
