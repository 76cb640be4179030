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
    if (n == 0)
        return CBLOB_OK;
    const size_t element = info->size;
    if (rows == 1 || (x_stride == cols && y_stride == cols))
        return device->backend->memory->copy(device, y, x, (size_t)n * element, CB_COPY_DEVICE_TO_DEVICE);
    if (cols * (int64_t)element >= CB_CUDA_COPY_2D_MIN_ROW_BYTES && x_stride >= cols && y_stride >= cols &&
        x_stride <= CB_CUDA_MAX_PITCH / (int64_t)element && y_stride <= CB_CUDA_MAX_PITCH / (int64_t)element)
        return copy_2d(device, x, (size_t)x_stride * element, y, (size_t)y_stride * element, (size_t)cols * element,
                       (size_t)rows);
    return cb_cuda_jit_kernels[dtype].copy_strided(device, n, rows, cols, x, x_stride, y, y_stride);
}

/* The runs of one plane (o, m) are a rows x cols grid: run (r, c) is x[o, r, m, c, :] and goes to
 * y[o, c, m, r, :]. A 2D copy takes one line of that grid, along c for a fixed r (x's runs are
 * adjacent, y's middle * rows runs apart) or along r for a fixed c (the other way round). */
typedef struct run_lines {
    int64_t count;                /* lines per plane: the fewer of rows and cols */
    int64_t length;               /* runs per line */
    int64_t x_line, y_line;       /* elements from one line's first run to the next line's */
    int64_t x_pitch, y_pitch;     /* elements from one run of a line to the next */
} run_lines;

static run_lines lines_of(int64_t rows, int64_t middle, int64_t cols, int64_t inner)
{
    if (rows <= cols)
        return (run_lines){rows, cols, middle * cols * inner, inner, inner, middle * rows * inner};
    return (run_lines){cols, rows, inner, middle * rows * inner, middle * cols * inner, inner};
}

static cblob_status copy_run_lines(const cb_device *device, size_t element, int64_t outer, int64_t rows, int64_t middle,
                                   int64_t cols, int64_t inner, const unsigned char *x, unsigned char *y)
{
    const run_lines lines = lines_of(rows, middle, cols, inner);
    const int64_t plane = rows * middle * cols * inner;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t m = 0; m < middle; ++m)
            for (int64_t line = 0; line < lines.count; ++line) {
                const int64_t x_at = o * plane + m * cols * inner + line * lines.x_line;
                const int64_t y_at = o * plane + m * rows * inner + line * lines.y_line;
                CB_TRY(copy_2d(device, x + (size_t)x_at * element, (size_t)lines.x_pitch * element,
                               y + (size_t)y_at * element, (size_t)lines.y_pitch * element, (size_t)inner * element,
                               (size_t)lines.length));
            }
    return CBLOB_OK;
}

cblob_status cb_cuda_transpose(const cb_device *device, cblob_dtype dtype, int64_t n, int64_t outer, int64_t rows,
                               int64_t middle, int64_t cols, int64_t inner, const void *x, void *y)
{
    const cb_dtype_info *info = cb_dtype_find(dtype);
    if (n > 0 && inner >= CB_CUDA_COPY_RUN_BYTES / (int64_t)info->size) {
        const int64_t element = (int64_t)info->size;
        const run_lines lines = lines_of(rows, middle, cols, inner);
        const bool few = outer * middle <= CB_CUDA_COPY_RUN_ROWS / lines.count;
        if (few && lines.x_pitch <= CB_CUDA_MAX_PITCH / element && lines.y_pitch <= CB_CUDA_MAX_PITCH / element)
            return copy_run_lines(device, info->size, outer, rows, middle, cols, inner, x, y);
    }
    return cb_cuda_jit_kernels[dtype].transpose(device, n, outer, rows, middle, cols, inner, x, y);
}
