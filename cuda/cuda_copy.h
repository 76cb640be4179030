/* SPDX-License-Identifier: BSD-2-Clause */
/* Copies on the device with the driver's copy engines (codegen/ops.yaml `copy_engine: true`):
 * the launcher the backend's table points at, with the generated kernel as the fallback. */
#ifndef CBLOB_CUDA_COPY_H
#define CBLOB_CUDA_COPY_H

#include <stdint.h>

#include "backend.h"

/* copy_strided: contiguous rows (one row, or strides equal to the row) are one
 * cuMemcpyDtoDAsync; other rows one cuMemcpy2DAsync when the pitches fit the device's limit; the
 * copy_strided kernel otherwise. */
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
