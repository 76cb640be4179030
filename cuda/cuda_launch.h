/* SPDX-License-Identifier: BSD-2-Clause */
/* Launching the generated kernels (generated/cuda/launch.c calls these): the family's kernel for
 * a dtype, a grid sized for the device, the context's stream; and the device doubles that
 * reductions add into. */
#ifndef CBLOB_CUDA_LAUNCH_H
#define CBLOB_CUDA_LAUNCH_H

#include <stdint.h>

#include "backend.h"
#include "cuda/families.h"
#include "cuda_api.h"
#include "cuda_queue.h"
#include "status.h"

/* CBLOB_ERR_NOT_IMPLEMENTED when the family has no kernel for dtype. */
cblob_status cb_cuda_check_dtype(cb_cuda_family_id family, cblob_dtype dtype);

/* Queues the kernel on the device's stream; args point at the kernel's arguments, n first. */
cblob_status cb_cuda_launch(const cb_device *device, cb_cuda_family_id family, cblob_dtype dtype, int64_t n, void **args);

#define CB_CUDA_MAX_SUMS 4

/* A reduction's sums: zeroed doubles in a result slot of the queue (mapped pinned memory, so
 * neither an allocation nor a copy is queued for them, and nothing can leak). */
typedef struct cb_cuda_sums {
    cb_cuda_slot slot;
    int count;
} cb_cuda_sums;

cblob_status cb_cuda_sums_begin(const cb_device *device, int count, cb_cuda_sums *sums);
/* The device address of sum `index`, as a kernel argument. */
void *cb_cuda_sum_slot(const cb_cuda_sums *sums, int index);
/* When the launch succeeded, waits for the stream and copies the sums to results; gives the
 * slot back either way and returns the first failure. */
cblob_status cb_cuda_sums_finish(const cb_device *device, cb_cuda_sums *sums, cblob_status launched, double **results);

#endif
