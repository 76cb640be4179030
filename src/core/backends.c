/* SPDX-License-Identifier: BSD-2-Clause */
/* The registry of backends: the only place the core names one. */
#include "backend.h"
#include "cpu_backend.h"
#include "cuda_backend.h"

const cb_device cb_host_device = {.backend = &cb_cpu_backend, .index = 0};

const cb_backend *cb_gpu_backend(void)
{
    return cb_cuda_backend();
}
