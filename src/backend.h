/* The one interface between the core and a device backend (DESIGN.md, "Layout").
 *
 * A backend includes only this header and status.h. The core reaches a backend only through
 * cb_device_backend_get() (backends.c), so adding a backend touches one line of the core.
 * Every function here is called with device pointers the backend itself handed out, or with
 * external device pointers a caller gave cblob_blob_set_gpu_data.
 */
#ifndef CBLOB_SRC_BACKEND_H
#define CBLOB_SRC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend/device_kernels.h"
#include "cblob/cblob.h"

typedef struct cb_device_backend cb_device_backend;

/* A device as the core sees it: which backend, which device index, and the stream that
 * asynchronous copies and kernels of one context are queued on (NULL: the default stream). */
typedef struct cb_device {
    const cb_device_backend *backend;
    int32_t index;
    void *stream;
} cb_device;

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

    /* Device memory. alloc fails with CBLOB_ERR_DEVICE_OUT_OF_MEMORY when the device is full. */
    cblob_status (*alloc)(const cb_device *device, size_t bytes, void **out);
    void (*free)(const cb_device *device, void *ptr);
    cblob_status (*zero)(const cb_device *device, void *ptr, size_t bytes);

    /* Page-locked host memory, for host buffers allocated while a context is in GPU mode. */
    cblob_status (*alloc_pinned)(const cb_device *device, size_t bytes, void **out);
    void (*free_pinned)(const cb_device *device, void *ptr);

    /* A copy that has finished when it returns. */
    cblob_status (*copy)(const cb_device *device, void *dst, const void *src, size_t bytes, cb_copy_kind kind);
    /* A host-to-device copy queued on `stream`; the caller synchronises before relying on it. */
    cblob_status (*copy_async)(const cb_device *device, void *dst, const void *src, size_t bytes, void *stream);
    /* Waits for everything queued on `stream`. */
    cblob_status (*synchronize)(const cb_device *device, void *stream);

    /* The generated ops (codegen/ops.yaml) on device memory. */
    const cb_device_kernels *kernels;
};

/* The GPU backend compiled into this library, or NULL when there is none. */
const cb_device_backend *cb_device_backend_get(void);

#endif
