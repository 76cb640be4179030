/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_launch.h"

#include <pthread.h>
#include <string.h>

#include "cuda_cache.h"
#include "cuda_queue.h"

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

/* Both passes, queued back to back under the queue's reduction lock: the stream runs them in
 * that order, so no other reduction on the queue writes the scratch between them. Runs with the
 * device's context current. */
static cblob_status queue_passes(const cb_device *device, const cb_cuda_kernel *kernel, int64_t n, void **args,
                                 void **partials, cbcu_deviceptr result, const char *name)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    cb_queue *queue = device->queue;
    pthread_mutex_lock(&queue->reduce_lock);
    cblob_status status = CBLOB_OK;
    if (queue->scratch == 0)
        status = cb_cuda_check(api->cuMemAlloc_v2(&queue->scratch, CB_CUDA_REDUCE_PARTS * sizeof(double)),
                               "allocating the reduction scratch");
    if (status == CBLOB_OK) {
        *partials = (void *)(uintptr_t)queue->scratch;
        const int64_t parts = cb_part_count(n);
        const unsigned int most = grid_size(cb_cuda_device_state_of(device), kernel, n);
        status = cb_cuda_queued(device,
                                api->cuLaunchKernel(kernel->function, parts < most ? (unsigned int)parts : most, 1, 1,
                                                    CB_CUDA_BLOCK_THREADS, 1, 1, 0, cb_cuda_stream(device), args, NULL),
                                name);
    }
    if (status == CBLOB_OK) {
        void *combine_args[] = {&n, &queue->scratch, &result};
        status = cb_cuda_queued(device,
                                api->cuLaunchKernel(kernel->combine, 1, 1, 1, CB_CUDA_BLOCK_THREADS, 1, 1, 0,
                                                    cb_cuda_stream(device), combine_args, NULL),
                                "cblob_sum_parts");
    }
    pthread_mutex_unlock(&queue->reduce_lock);
    return status;
}

cblob_status cb_cuda_reduce(const cb_device *device, cb_cuda_family_id family, cblob_dtype dtype, int64_t n, void **args,
                            void **partials, double *out)
{
    cb_cuda_kernel kernel;
    CB_TRY(cb_cuda_kernel_get(device, family, dtype, &kernel));
    cb_cuda_slot slot;
    cblob_status status = cb_cuda_slot_take(device, &slot);
    if (status == CBLOB_OK) {
        status = cb_cuda_enter(cb_cuda_device_state_of(device));
        if (status == CBLOB_OK) {
            const char *name = cb_cuda_families[family].kernels[dtype];
            status = queue_passes(device, &kernel, n, args, partials, slot.device, name);
            if (status == CBLOB_OK)
                status = cb_cuda_check(cb_cuda_driver_api_get()->cuStreamSynchronize(cb_cuda_stream(device)), name);
            cb_cuda_leave();
        }
        if (status == CBLOB_OK)
            *out = *slot.host;
        cb_cuda_slot_give(device, slot);
    }
    cb_cuda_kernel_release(device, &kernel);
    return status;
}
