/* SPDX-License-Identifier: BSD-2-Clause */
/* Launching the generated kernels (generated/cuda/launch.c calls these): the family's kernel for
 * a dtype, a grid sized for the device, the context's stream; reductions in two passes. */
#ifndef CBLOB_CUDA_LAUNCH_H
#define CBLOB_CUDA_LAUNCH_H

#include <stdint.h>

#include "backend.h"
#include "cuda/families.h"
#include "cuda_api.h"
#include "cuda_queue.h"
#include "status.h"

/* Queues the family's kernel for dtype (one the family has: the kernel tables' rows have only
 * those) on the device's stream; args point at the kernel's arguments, n first. */
cblob_status cb_cuda_launch(const cb_device *device, cb_cuda_family_id family, cblob_dtype dtype, int64_t n, void **args);

/* A reduction (an op with a `double *` sum, templates/cuda/_reduce.j2): queues the family's
 * kernel, which writes one partial sum per part into the queue's scratch (*partials, one of
 * `args`, is set to it), then the family's second pass, which adds them in a fixed order into a
 * result slot; waits for the stream and writes the sum to *out. Nothing is allocated per call:
 * the scratch is the queue's, made at its first reduction and freed with it. */
cblob_status cb_cuda_reduce(const cb_device *device, cb_cuda_family_id family, cblob_dtype dtype, int64_t n, void **args,
                            void **partials, double *out);

#endif
