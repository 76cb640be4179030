/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_copy.h"

#include "core/enums.h"
#include "cuda/families.h"
#include "status.h"

cblob_status cb_cuda_copy_strided(const cb_device *device, cblob_dtype dtype, int64_t n, int64_t rows, int64_t cols,
                                  const void *x, int64_t x_stride, void *y, int64_t y_stride)
{
    const cb_dtype_info *info = cb_dtype_find(dtype);
    if (n == 0)
        return CBLOB_OK;
    if (rows == 1 || (x_stride == cols && y_stride == cols))
        return device->backend->memory->copy(device, y, x, (size_t)n * info->size, CB_COPY_DEVICE_TO_DEVICE);
    return cb_cuda_jit_kernels[dtype].copy_strided(device, n, rows, cols, x, x_stride, y, y_stride);
}
