/* SPDX-License-Identifier: BSD-2-Clause */
/* The one interface between the core and a backend (DESIGN.md, "Layout"; "The CPU is a backend").
 *
 * A backend is the CPU (src/cpu) or a GPU stack (cuda/): a table of parts, each cut by the object
 * its entries act on and documented in its own header, as ggml's backend interface is:
 *
 *   device       backend/device.h        the machine's devices of the kind: probing, opening, naming
 *   memory       backend/memory.h        buffers of a device, and copies between them and the host
 *   queue        backend/queue.h         streams, on which a device's work is ordered (optional)
 *   kernels      backend/kernels.h       the generated ops of codegen/ops.yaml, a row per dtype
 *   cache        backend/cache.h         a cache of compiled kernels (optional)
 *   collectives  backend/collectives.h   collectives on the device's memory (optional)
 *
 * The CPU registers like any other backend (backends.c): its memory is the host's, its kernel
 * table is generated/cpu/dispatch.c, and it has no queue (its work has finished when a call
 * returns). Code that runs a kernel or moves bytes names a device, the host device included, and
 * calls through that device's backend: one way for every place (generated/core/run_kernels.h).
 *
 * A backend includes only these headers and status.h. The core reaches a backend only through
 * the registry below (backends.c, the only file of the core that names one), so adding a backend
 * touches one line of the core. Every function of a part is called with memory the backend itself
 * handed out, or with external device memory a caller gave (cblob_blob_set_gpu_data, DLPack).
 */
#ifndef CBLOB_SRC_BACKEND_H
#define CBLOB_SRC_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cache.h"
#include "backend/collectives.h"
#include "backend/device.h"
#include "backend/kernels.h"
#include "backend/memory.h"
#include "backend/queue.h"
#include "cblob/cblob.h"

typedef struct cb_backend cb_backend;
typedef struct cb_log cb_log;

/* A device as the core sees it: which backend, which device index, the queue (and its stream)
 * that copies and kernels of one context go to, and the context's log for warnings that are not
 * errors of the call (NULL in the copies storages keep: dropped). The host device (below) has no
 * queue and no log. */
struct cb_device {
    const cb_backend *backend;
    int32_t index;
    void *stream;
    cb_queue *queue;
    cb_log *log;
};

struct cb_backend {
    const char *name;
    const cb_backend_device *device;           /* NULL for the CPU: always there, nothing to open */
    const cb_backend_memory *memory;
    const cb_backend_queue *queue;             /* NULL: work has finished when its call returns */
    const cb_kernels *kernels;                 /* CB_KERNEL_ROWS rows, indexed by dtype */
    const cb_backend_cache *cache;             /* NULL: nothing is compiled */
    const cb_backend_collectives *collectives; /* NULL: no collectives of the backend's own */
};

/* Appends a warning line to a context's log (cblob_context_log); a NULL log drops it. The
 * library never prints: this is where what a caller may want to know but did not ask for goes. */
void cb_log_warning(cb_log *log, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* ---- the registry (backends.c) ----------------------------------------------------------- */

/* The CPU's one device: where host copies live and host work runs. */
extern const cb_device cb_host_device;

/* The GPU backend compiled into this library, or NULL when there is none. */
const cb_backend *cb_gpu_backend(void);

/* Whether a device's memory is the host's (the host device's, or another backend that works in
 * host memory): blobs' host copies are its memory. */
static inline bool cb_device_is_host(const cb_device *device)
{
    return device->backend->memory->is_host;
}

#endif
