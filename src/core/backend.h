/* SPDX-License-Identifier: BSD-2-Clause */
/* The one interface between the core and a device backend (DESIGN.md, "Layout").
 *
 * A backend includes only this header and status.h. The core reaches a backend only through
 * cb_device_backend_get() (backends.c), so adding a backend touches one line of the core.
 * Every function here is called with device pointers the backend itself handed out, or with
 * external device pointers a caller gave cblob_blob_set_gpu_data.
 */
#ifndef CBLOB_SRC_BACKEND_H
#define CBLOB_SRC_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/device_kernels.h"
#include "cblob/cblob.h"

typedef struct cb_device_backend cb_device_backend;
typedef struct cb_log cb_log;
/* A backend's stream as contexts and storages hold it: reference counted, and "retired" once its
 * context lets go of it (its work has then finished and the stream may be gone). Opaque to the
 * core. */
typedef struct cb_queue cb_queue;

/* A device as the core sees it: which backend, which device index, the queue (and its stream)
 * that copies and kernels of one context go to, and the context's log for warnings that are not
 * errors of the call (NULL in the copies storages keep: dropped). */
typedef struct cb_device {
    const cb_device_backend *backend;
    int32_t index;
    void *stream;
    cb_queue *queue;
    cb_log *log;
} cb_device;

/* Appends a warning line to a context's log (cblob_context_log); a NULL log drops it. The
 * library never prints: this is where what a caller may want to know but did not ask for goes. */
void cb_log_warning(cb_log *log, const char *format, ...) __attribute__((format(printf, 2, 3)));

typedef enum cb_copy_kind {
    CB_COPY_HOST_TO_DEVICE,
    CB_COPY_DEVICE_TO_HOST,
    CB_COPY_DEVICE_TO_DEVICE,
} cb_copy_kind;

struct cb_device_backend {
    const char *name;

    /* Loads the backend's libraries once (thread-safe) and checks that device `index` can be
     * used. Returns CBLOB_OK or the status that says why not (no driver, stub driver, no
     * device, driver too old, NVRTC or cuBLAS missing), with a message. Cheap after the first
     * call. */
    cblob_status (*open)(int32_t index);

    /* Device memory. alloc fails with CBLOB_ERR_DEVICE_OUT_OF_MEMORY when the device is full.
     * free frees in the order of the device's stream, after the work queued there (and, through
     * the storages' queues, on every cblob stream that used the memory). free_escaped is for
     * memory whose address left the library (cblob_blob_gpu_ptr, DLPack exports): anyone may
     * still have work queued on it, on streams cblob never saw, so the whole device's queued work
     * is waited for first. */
    cblob_status (*alloc)(const cb_device *device, size_t bytes, void **out);
    void (*free)(const cb_device *device, void *ptr);
    void (*free_escaped)(const cb_device *device, void *ptr);
    cblob_status (*zero)(const cb_device *device, void *ptr, size_t bytes);

    /* Page-locked host memory, for host buffers allocated while a context is in GPU mode. Its
     * address is always the caller's too (host accessors, DLPack's kDLCUDAHost), so free_pinned
     * waits for the whole device's queued work before freeing. */
    cblob_status (*alloc_pinned)(const cb_device *device, size_t bytes, void **out);
    void (*free_pinned)(const cb_device *device, void *ptr);

    /* A copy on the device's stream. To or from the host it has finished when it returns; device
     * to device it is queued (later work on the stream sees it). */
    cblob_status (*copy)(const cb_device *device, void *dst, const void *src, size_t bytes, cb_copy_kind kind);
    /* A host-to-device copy queued on the device's stream; the caller synchronises before relying
     * on it. */
    cblob_status (*copy_async)(const cb_device *device, void *dst, const void *src, size_t bytes);
    /* Waits for everything queued on the device's stream. */
    cblob_status (*synchronize)(const cb_device *device);

    /* Queues. open gives `device` (an opened one) a queue and sets its queue and stream: with
     * `own`, a new non-blocking stream of the device's context, else the caller's `stream`
     * (borrowed), which must belong to that context (CBLOB_ERR_INVALID_ARGUMENT otherwise, and
     * for the per-thread default stream). close is the context letting go: it waits for the
     * queue's work, retires it (destroying an own stream) and drops the context's hold. Storages
     * hold the queue of their last user (retain, release). */
    cblob_status (*queue_open)(cb_device *device, bool own, void *stream);
    void (*queue_close)(cb_queue *queue);
    void (*queue_retain)(cb_queue *queue);
    void (*queue_release)(cb_queue *queue);
    /* Orders work: what `device` queues from now on runs after what `previous` (another queue of
     * the same device) has queued so far. Nothing to do for a retired queue or the same stream. */
    cblob_status (*queue_follow)(const cb_device *device, cb_queue *previous);
    /* The same for a stream that is not cblob's (a DLPack producer's): what `device` queues from
     * now on runs after what `stream` has queued so far. NULL is the legacy default stream; a
     * stream of another device or context is CBLOB_ERR_INVALID_ARGUMENT. */
    cblob_status (*queue_wait_stream)(const cb_device *device, void *stream);

    /* Checks that a caller's pointer is memory of `device` covering `bytes`
     * (cblob_blob_set_gpu_data): CBLOB_ERR_INVALID_ARGUMENT with a message if not. */
    cblob_status (*check_device_memory)(const cb_device *device, const void *ptr, size_t bytes);

    /* The generated ops (codegen/ops.yaml) on device memory. */
    const cb_device_kernels *kernels;

    /* What the machine has, without opening a device: CBLOB_OK and the device count, or the
     * status open() would fail with. */
    cblob_status (*probe)(int32_t *device_count);
    /* Versions as CUDA encodes them (major * 1000 + minor * 10), 0 for what is missing. */
    void (*versions)(int32_t *driver, int32_t *compiler, int32_t *blas);
    /* The device's name, NUL-terminated; fails like open(). */
    cblob_status (*device_name)(int32_t index, char *name, size_t size);
    /* A human-readable report of what was found, one item per line, cut to fit `size`. */
    void (*report)(char *text, size_t size);

    /* The kernel cache: its mode, its folder (empty when none can be named), and compiling every
     * kernel ahead of use, for `device` or, with device NULL, for compute_capability into the
     * disk cache. */
    cblob_cache_mode (*cache_mode)(void);
    void (*cache_dir)(char *text, size_t size);
    cblob_status (*warm_up)(const cb_device *device, int32_t compute_capability, int32_t *compiled);

    /* Collectives on device memory (src/comm): a unique id for a new communicator, and the
     * engine table of this rank's member of it on `device`, whose work goes on the device's
     * stream (CBLOB_ERR_NCCL_MISSING and friends when the library is missing). */
    cblob_status (*nccl_unique_id)(uint8_t *out_id);
    cblob_status (*nccl_engine)(const cb_device *device, const uint8_t *unique_id, int32_t nranks, int32_t rank,
                                cblob_comm_engine *out);
};

/* The GPU backend compiled into this library, or NULL when there is none. */
const cb_device_backend *cb_device_backend_get(void);

#endif
