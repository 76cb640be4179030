/* SPDX-License-Identifier: BSD-2-Clause */
/* The backend interface's kernel cache part (src/core/backend.h), optional: a backend that
 * compiles its kernels at run time (CUDA, through NVRTC) keeps them in memory and on disk
 * (cblob_kernel_cache_mode, cblob_kernel_cache_dir, cblob_kernel_cache_warm_up). */
#ifndef CBLOB_SRC_BACKEND_CACHE_H
#define CBLOB_SRC_BACKEND_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

typedef struct cb_device cb_device;

typedef struct cb_backend_cache {
    /* The cache's mode, as the environment set it. */
    cblob_cache_mode (*mode)(void);
    /* Its folder, NUL-terminated (empty when none can be named), cut to fit `size`. */
    void (*dir)(char *text, size_t size);
    /* Compiles every kernel ahead of use, for `device` or, with device NULL, for
     * compute_capability into the disk cache; *compiled counts the programs compiled. */
    cblob_status (*warm_up)(const cb_device *device, int32_t compute_capability, int32_t *compiled);
} cb_backend_cache;

#endif
