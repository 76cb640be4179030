/* SPDX-License-Identifier: BSD-2-Clause */
/* The backend interface's device part (src/core/backend.h): what the machine has of the backend's
 * kind of device, found without a context, and opening one. The CPU has none: its one device is
 * always there (cb_host_device). */
#ifndef CBLOB_SRC_BACKEND_DEVICE_H
#define CBLOB_SRC_BACKEND_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

typedef struct cb_backend_device {
    /* Loads the backend's libraries once (thread-safe) and checks that device `index` can be
     * used. Returns CBLOB_OK or the status that says why not (no driver, stub driver, no device,
     * driver too old, NVRTC or cuBLAS missing), with a message. Cheap after the first call. */
    cblob_status (*open)(int32_t index);
    /* CBLOB_OK and the device count, or the status open() would fail with; opens nothing. */
    cblob_status (*probe)(int32_t *device_count);
    /* Versions as CUDA encodes them (major * 1000 + minor * 10), 0 for what is missing. */
    void (*versions)(int32_t *driver, int32_t *compiler, int32_t *blas);
    /* The device's name, NUL-terminated; fails like open(). */
    cblob_status (*name)(int32_t index, char *name, size_t size);
    /* A human-readable report of what was found, one item per line, cut to fit `size`. */
    void (*report)(char *text, size_t size);
} cb_backend_device;

#endif
