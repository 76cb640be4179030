/* SPDX-License-Identifier: BSD-2-Clause */
/* The registry of device backends: the only place the core names one. */
#include "backend.h"
#include "cuda_backend.h"

const cb_device_backend *cb_device_backend_get(void)
{
    return cb_cuda_backend();
}
