/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_copy.h"

#include "core/enums.h"
#include "cuda/families.h"
#include "cuda_device.h"
#include "cuda_queue.h"
#include "status.h"

/* cuMemcpy2D's pitches are limited (CU_DEVICE_ATTRIBUTE_MAX_PITCH; 2^31 - 1 on every GPU so far). */
#define CB_CUDA_MAX_PITCH ((int64_t)2147483647)

static cblob_status copy_2d(const cb_device *device, const void *x, size_t x_pitch, void *y, size_t y_pitch,
                            size_t width, size_t height)
{
    const cbcu_memcpy2d copy = {
        .srcMemoryType = CBCU_MEMORYTYPE_DEVICE,
        .srcDevice = (cbcu_deviceptr)(uintptr_t)x,
        .srcPitch = x_pitch,
        .dstMemoryType = CBCU_MEMORYTYPE_DEVICE,
        .dstDevice = (cbcu_deviceptr)(uintptr_t)y,
        .dstPitch = y_pitch,
        .WidthInBytes = width,
        .Height = height,
    };
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    const cblob_status status =
        cb_cuda_queued(device, cb_cuda_driver_api_get()->cuMemcpy2DAsync_v2(&copy, cb_cuda_stream(device)), "cuMemcpy2DAsync");
    cb_cuda_leave();
    return status;
}

cblob_status cb_cuda_copy_strided(const cb_device *device, cblob_dtype dtype, int64_t n, int64_t rows, int64_t cols,
                                  const void *x, int64_t x_stride, void *y, int64_t y_stride)
{
    const cb_dtype_info *info = cb_dtype_find(dtype);
    if (info == NULL || n == 0)
        return cb_cuda_jit_kernels.copy_strided(device, dtype, n, rows, cols, x, x_stride, y, y_stride);
    const size_t element = info->size;
    if (rows == 1 || (x_stride == cols && y_stride == cols))
        return device->backend->copy(device, y, x, (size_t)n * element, CB_COPY_DEVICE_TO_DEVICE);
    if (x_stride >= cols && y_stride >= cols && x_stride <= CB_CUDA_MAX_PITCH / (int64_t)element &&
        y_stride <= CB_CUDA_MAX_PITCH / (int64_t)element)
        return copy_2d(device, x, (size_t)x_stride * element, y, (size_t)y_stride * element, (size_t)cols * element,
                       (size_t)rows);
    return cb_cuda_jit_kernels.copy_strided(device, dtype, n, rows, cols, x, x_stride, y, y_stride);
}
