/* SPDX-License-Identifier: BSD-2-Clause */
/* Compiling a kernel family with NVRTC (needs no GPU): as a cubin for the device's architecture
 * (or an earlier one of its major), or as PTX for the driver to finish when NVRTC knows no
 * architecture of the device's major. */
#ifndef CBLOB_CUDA_JIT_H
#define CBLOB_CUDA_JIT_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda/families.h"
#include "cuda_loader.h"

typedef struct cb_cuda_target {
    int compute_capability; /* the device's, major * 10 + minor */
    bool ptx;               /* PTX rather than a cubin */
    char name[24];          /* NVRTC's --gpu-architecture: "sm_90" or "compute_120" */
} cb_cuda_target;

/* The target for a compute capability: a cubin for the newest architecture NVRTC knows of the
 * same major at or below it (sm_86 for 8.7), else PTX for the newest below it, which needs a
 * driver at least as new as NVRTC (CBLOB_ERR_DRIVER_TOO_OLD naming both versions otherwise).
 * CBLOB_ERR_INVALID_ARGUMENT below NVRTC's oldest. driver_version is the CUDA version of the
 * driver that will load it (0: none to check, as when compiling ahead for an architecture). */
cblob_status cb_cuda_target_for(const cb_cuda_nvrtc *compiler, int driver_version, int compute_capability,
                                cb_cuda_target *out);

#define CB_CUDA_MAX_OPTIONS 4
/* The options a family is compiled with for a target (they are part of the cache key).
 * --fmad=false keeps a * b + c as two roundings, as the CPU kernels do, so results agree. */
int cb_cuda_compile_options(const cb_cuda_target *target, char storage[CB_CUDA_MAX_OPTIONS][48],
                            const char *options[CB_CUDA_MAX_OPTIONS]);

/* What NVRTC produced: a cubin, or NUL-terminated PTX text. */
typedef struct cb_cuda_image {
    unsigned char *bytes;
    size_t size;
    bool ptx;
} cb_cuda_image;

void cb_cuda_image_free(cb_cuda_image *image);

/* Compiles every dtype of a family in one NVRTC program. CBLOB_ERR_COMPILE carries the start of
 * NVRTC's log. */
cblob_status cb_cuda_compile(const cb_cuda_nvrtc *compiler, const cb_cuda_family *family,
                             const cb_cuda_target *target, cb_cuda_image *out);

/* Compiles a source that is not one of the families (tests of the error path). */
cblob_status cb_cuda_compile_source(const cb_cuda_nvrtc *compiler, const char *name, const char *source,
                                    const cb_cuda_target *target, cb_cuda_image *out);

#endif
