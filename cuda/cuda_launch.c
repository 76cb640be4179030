/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_launch.h"

#include <string.h>

#include "core/enums.h"
#include "cuda_cache.h"
#include "cuda_queue.h"

cblob_status cb_cuda_check_dtype(cb_cuda_family_id family, cblob_dtype dtype)
{
    const cb_dtype_info *info = cb_dtype_find(dtype);
    if (info == NULL || cb_cuda_families[family].kernels[dtype] == NULL)
        return cb_fail(CBLOB_ERR_NOT_IMPLEMENTED, "there is no %s GPU kernel for %s", cb_cuda_families[family].name,
                       info != NULL ? info->name : "this dtype");
    return CBLOB_OK;
}

/* As many blocks as the device runs at once (the occupancy the driver reported for the kernel
 * when it was loaded, times the multiprocessors); the kernels' grid-stride loops cover the rest,
 * so a huge n does not mean a huge grid. */
static unsigned int grid_size(const cb_cuda_device_state *state, const cb_cuda_kernel *kernel, int64_t n)
{
    const int64_t wanted = (n + CB_CUDA_BLOCK_THREADS - 1) / CB_CUDA_BLOCK_THREADS;
    int64_t most = (int64_t)state->multiprocessors * (kernel->blocks_per_multiprocessor > 0 ? kernel->blocks_per_multiprocessor : 1);
    if (most < 1)
        most = 1;
    return (unsigned int)(wanted < most ? wanted : most);
}

cblob_status cb_cuda_launch(const cb_device *device, cb_cuda_family_id family, cblob_dtype dtype, int64_t n, void **args)
{
    cb_cuda_kernel kernel;
    CB_TRY(cb_cuda_kernel_get(device, family, dtype, &kernel));
    const cb_cuda_device_state *state = cb_cuda_device_state_of(device);
    cblob_status status = cb_cuda_enter(state);
    if (status == CBLOB_OK) {
        status = cb_cuda_queued(device,
                                cb_cuda_driver_api_get()->cuLaunchKernel(kernel.function, grid_size(state, &kernel, n), 1, 1,
                                                                         CB_CUDA_BLOCK_THREADS, 1, 1, 0,
                                                                         cb_cuda_stream(device), args, NULL),
                                cb_cuda_families[family].kernels[dtype]);
        cb_cuda_leave();
    }
    cb_cuda_kernel_release(device, &kernel);
    return status;
}

cblob_status cb_cuda_sums_begin(const cb_device *device, int count, cb_cuda_sums *sums)
{
    CB_TRY(cb_cuda_slot_take(device, &sums->slot));
    for (int i = 0; i < count; ++i)
        sums->slot.host[i] = 0; /* no work on the slot is queued before this call's launch */
    sums->count = count;
    return CBLOB_OK;
}

void *cb_cuda_sum_slot(const cb_cuda_sums *sums, int index)
{
    return (void *)(uintptr_t)(sums->slot.device + (cbcu_deviceptr)index * sizeof(double));
}

cblob_status cb_cuda_sums_finish(const cb_device *device, cb_cuda_sums *sums, cblob_status launched, double **results)
{
    cblob_status status = launched;
    if (status == CBLOB_OK)
        status = cb_cuda_enter(cb_cuda_device_state_of(device));
    if (status == CBLOB_OK) {
        status = cb_cuda_check(cb_cuda_driver_api_get()->cuStreamSynchronize(cb_cuda_stream(device)), "waiting for a reduction");
        cb_cuda_leave();
    }
    if (status == CBLOB_OK)
        for (int i = 0; i < sums->count; ++i)
            *results[i] = sums->slot.host[i];
    cb_cuda_slot_give(device, sums->slot);
    return status;
}
