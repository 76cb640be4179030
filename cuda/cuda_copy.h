/* SPDX-License-Identifier: BSD-2-Clause */
/* Copies on the device with the driver's copy engines (codegen/ops.yaml `copy_engine: true`):
 * what the backend's table points at for each dtype of the op (generated/cuda/launch.c), with the
 * generated kernel as the fallback. */
#ifndef CBLOB_CUDA_COPY_H
#define CBLOB_CUDA_COPY_H

#include <stdint.h>

#include "backend.h"

/* copy_strided: contiguous rows (one row, or strides equal to the row) are one
 * cuMemcpyDtoDAsync; other rows of CB_CUDA_COPY_2D_MIN_ROW_BYTES or more one cuMemcpy2DAsync when
 * the pitches fit the device's limit; the copy_strided kernel otherwise.
 *
 * Narrower rows go to the kernel because a 2D copy's cost per row is feared to dominate rows of a
 * few bytes (NHWC channel slices of 4-48 bytes). That is an estimate: no GPU has measured it
 * yet. bench_gpu (scripts/gpu-check.sh) times the kernel and the 2D copy on rows of 4 to 256
 * bytes and prints the width from which the 2D copy wins; this constant is set from that. */
#define CB_CUDA_COPY_2D_MIN_ROW_BYTES 64
cblob_status cb_cuda_copy_strided(const cb_device *device, cblob_dtype dtype, int64_t n, int64_t rows, int64_t cols,
                                  const void *x, int64_t x_stride, void *y, int64_t y_stride);

/* transpose: when each run of `inner` elements is long (CB_CUDA_COPY_RUN_BYTES or more) and the
 * runs make few rows (outer * middle * min(rows, cols), at most CB_CUDA_COPY_RUN_ROWS), one
 * cuMemcpy2DAsync per row of runs; the transpose kernel otherwise. */
#define CB_CUDA_COPY_RUN_BYTES 4096
#define CB_CUDA_COPY_RUN_ROWS 8
cblob_status cb_cuda_transpose(const cb_device *device, cblob_dtype dtype, int64_t n, int64_t outer, int64_t rows,
                               int64_t middle, int64_t cols, int64_t inner, const void *x, void *y);

#endif
