/* SPDX-License-Identifier: BSD-2-Clause */
/* Copies on the device that may go to the driver's copy engine (codegen/ops.yaml `copy_engine:
 * true`): what the backend's table points at for each dtype of the op (generated/cuda/launch.c).
 * Only contiguous copies do; the generated kernel takes the rest. */
#ifndef CBLOB_CUDA_COPY_H
#define CBLOB_CUDA_COPY_H

#include <stdint.h>

#include "backend.h"

/* copy_strided: contiguous rows (one row, or strides equal to the row) are one
 * cuMemcpyDtoDAsync; any other rows go to the copy_strided kernel. Measured on an H200
 * (bench_gpu's rows table, 2026-11-27), the kernel beat one cuMemcpy2DAsync at every row width from
 * 4 bytes to 64 KiB: 18x at 4 bytes, 1.2x at 256 bytes to 1 KiB, 2x from 4 KiB on, where the 2D
 * copies ran at 1.6 TB/s against the kernel's 3.3 TB/s. */
cblob_status cb_cuda_copy_strided(const cb_device *device, cblob_dtype dtype, int64_t n, int64_t rows, int64_t cols,
                                  const void *x, int64_t x_stride, void *y, int64_t y_stride);

#endif
