/* SPDX-License-Identifier: BSD-2-Clause */
/* The CUDA backend's entry point: the only name src/core/backends.c knows. */
#ifndef CBLOB_CUDA_BACKEND_H
#define CBLOB_CUDA_BACKEND_H

#include "backend.h"

const cb_device_backend *cb_cuda_backend(void);

#endif
