/* SPDX-License-Identifier: BSD-2-Clause */
/* Opening the CUDA libraries: the driver (libcuda.so.1), NVRTC, cuBLAS and NCCL, each with dlopen on
 * first use, once per process (pthread_once), never closed. Each load records whether it worked
 * and, if not, the status and message that say why, so every later caller gets the same answer
 * at no cost.
 *
 * Where each library is looked for (an environment variable replaces the search with its one
 * path, which tests use to load the test doubles in tests/fake_cuda):
 *   driver  CBLOB_CUDA_DRIVER,    else libcuda.so.1 on the loader's search path
 *   NVRTC   CBLOB_NVRTC_LIBRARY,  else libnvrtc.so.13, $CUDA_HOME/lib64, /usr/local/cuda/lib64
 *   cuBLAS  CBLOB_CUBLAS_LIBRARY, else libcublas.so.13, $CUDA_HOME/lib64, /usr/local/cuda/lib64
 *   NCCL    CBLOB_NCCL_LIBRARY,   else libnccl.so.2, $CUDA_HOME/lib64, /usr/local/cuda/lib64
 * NCCL is needed only by NCCL communicators: the GPU stack (cb_cuda_stack) does not include it.
 */
#ifndef CBLOB_CUDA_LOADER_H
#define CBLOB_CUDA_LOADER_H

#include <stdbool.h>

#include "cblob/cblob.h"
#include "cuda_api.h"

#define CB_CUDA_PATH_BYTES 512
#define CB_CUDA_MESSAGE_BYTES 640
#define CB_NVRTC_MAX_ARCHS 64

typedef struct cb_cuda_driver {
    cblob_status status; /* CBLOB_OK: loaded, initialised, with at least one device */
    char message[CB_CUDA_MESSAGE_BYTES];
    char path[CB_CUDA_PATH_BYTES];
    int version;         /* the CUDA version the driver supports (13000), 0 if unknown */
    int device_count;
    cb_cuda_driver_api api;
} cb_cuda_driver;

typedef struct cb_cuda_nvrtc {
    cblob_status status; /* CBLOB_OK or CBLOB_ERR_NVRTC_MISSING */
    char message[CB_CUDA_MESSAGE_BYTES];
    char path[CB_CUDA_PATH_BYTES];
    int major, minor;
    int arch_count;      /* compute capabilities NVRTC can compile for, ascending (80 = 8.0) */
    int archs[CB_NVRTC_MAX_ARCHS];
    cb_nvrtc_api api;
} cb_cuda_nvrtc;

typedef struct cb_cuda_cublas {
    cblob_status status; /* CBLOB_OK or CBLOB_ERR_CUBLAS_MISSING */
    char message[CB_CUDA_MESSAGE_BYTES];
    char path[CB_CUDA_PATH_BYTES];
    int major, minor;
    cb_cublas_api api;
} cb_cuda_cublas;

typedef struct cb_cuda_nccl {
    cblob_status status; /* CBLOB_OK or CBLOB_ERR_NCCL_MISSING */
    char message[CB_CUDA_MESSAGE_BYTES];
    char path[CB_CUDA_PATH_BYTES];
    int version; /* NCCL's code: 22800 for 2.28.0 */
    cb_nccl_api api;
} cb_cuda_nccl;

/* Each loads its library on the first call; later calls return the same record. */
const cb_cuda_driver *cb_cuda_driver_get(void);
const cb_cuda_nvrtc *cb_cuda_nvrtc_get(void);
const cb_cuda_cublas *cb_cuda_cublas_get(void);
const cb_cuda_nccl *cb_cuda_nccl_get(void);

/* The whole stack in the order a user fixes it: the driver, NVRTC, a driver new enough for
 * NVRTC's output, cuBLAS. CBLOB_OK and the device count, or the first failure's status with its
 * message recorded (cb_fail). */
cblob_status cb_cuda_stack(int32_t *device_count);
/* The same answer without recording it as the thread's error (for reports, which succeed). */
cblob_status cb_cuda_stack_status(int32_t *device_count, char *message, size_t size);

/* NVRTC alone (compiling needs no driver): CBLOB_OK or CBLOB_ERR_NVRTC_MISSING with its message. */
cblob_status cb_cuda_nvrtc_ready(const cb_cuda_nvrtc **out);

/* The name of a CUresult ("CUDA_ERROR_OUT_OF_MEMORY"), from the driver when it can say. */
const char *cb_cuda_error_name(cbcu_result result);

#endif
