/* SPDX-License-Identifier: BSD-2-Clause */
/* The CUDA backend: the backend interface of src/core/backend.h over the driver API, cuBLAS, the
 * NVRTC-compiled kernels and NCCL; every part of it. Device pointers cross the interface as void *
 * holding a CUdeviceptr. */
#include "cuda_backend.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda/families.h"
#include "cuda_cache.h"
#include "cuda_device.h"
#include "cuda_queue.h"
#include "status.h"

static cbcu_deviceptr address(const void *ptr)
{
    return (cbcu_deviceptr)(uintptr_t)ptr;
}

static cblob_status open_device(int32_t index)
{
    cb_cuda_device_state *state;
    return cb_cuda_device_open(index, &state);
}

/* Stream-ordered memory from cblob's pool where the device has pools: cuMemAlloc and cuMemFree
 * make the whole device wait. The memory is usable in the order of the device's stream, which
 * other streams follow through the storage's queue (cuda_queue.h). A full device first gets back
 * what the pool keeps (cuMemPoolTrimTo), then the allocation is tried once more. */
static cbcu_result allocate(const cb_cuda_device_state *state, const cb_device *device, size_t bytes,
                            cbcu_deviceptr *ptr)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    if (!state->memory_pools)
        return api->cuMemAlloc_v2(ptr, bytes);
    cbcu_result result = api->cuMemAllocFromPoolAsync(ptr, bytes, state->pool, cb_cuda_stream(device));
    if (result == CBCU_ERROR_OUT_OF_MEMORY && api->cuMemPoolTrimTo(state->pool, 0) == CBCU_SUCCESS)
        result = api->cuMemAllocFromPoolAsync(ptr, bytes, state->pool, cb_cuda_stream(device));
    return result;
}

static cblob_status device_zero(const cb_device *device, void *ptr, size_t bytes)
{
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    const cblob_status status = cb_cuda_queued(
        device, cb_cuda_driver_api_get()->cuMemsetD8Async(address(ptr), 0, bytes, cb_cuda_stream(device)),
        "zero-filling device memory");
    cb_cuda_leave();
    return status;
}

static void device_free(const cb_device *device, void *ptr, size_t bytes);

static cblob_status device_alloc(const cb_device *device, size_t bytes, bool zeroed, void **out)
{
    const cb_cuda_device_state *state = cb_cuda_device_state_of(device);
    CB_TRY(cb_cuda_enter(state));
    cbcu_deviceptr ptr = 0;
    const cbcu_result result = allocate(state, device, bytes, &ptr);
    cb_cuda_leave();
    if (result == CBCU_ERROR_OUT_OF_MEMORY)
        return cb_fail(CBLOB_ERR_DEVICE_OUT_OF_MEMORY,
                       "device %d has no room for %zu more bytes (CUDA_ERROR_OUT_OF_MEMORY); the host copy is unchanged",
                       (int)device->index, bytes);
    CB_TRY(cb_cuda_check(result, state->memory_pools ? "cuMemAllocFromPoolAsync" : "cuMemAlloc"));
    if (zeroed) {
        const cblob_status status = device_zero(device, (void *)(uintptr_t)ptr, bytes);
        if (status != CBLOB_OK) {
            device_free(device, (void *)(uintptr_t)ptr, bytes);
            return status;
        }
    }
    *out = (void *)(uintptr_t)ptr;
    return CBLOB_OK;
}

/* Freed in the order of the stream of the memory's last user, after all work queued on it. */
static void device_free(const cb_device *device, void *ptr, size_t bytes)
{
    (void)bytes;
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    const cb_cuda_device_state *state = cb_cuda_device_state_of(device);
    if (cb_cuda_enter(state) != CBLOB_OK)
        return;
    if (state->memory_pools)
        api->cuMemFreeAsync(address(ptr), cb_cuda_stream(device));
    else
        api->cuMemFree_v2(address(ptr));
    cb_cuda_leave();
}

/* Memory whose address left the library: PyTorch and CuPy let go of a DLPack tensor without
 * waiting for the work they queued on it, on streams cblob never sees, and a pool would hand the
 * block to cblob's next allocation while that work still reads it. A device-wide wait orders
 * all of it before the free. */
static void device_free_escaped(const cb_device *device, void *ptr, size_t bytes)
{
    if (cb_cuda_enter(cb_cuda_device_state_of(device)) != CBLOB_OK)
        return;
    cb_cuda_driver_api_get()->cuCtxSynchronize();
    cb_cuda_leave();
    device_free(device, ptr, bytes);
}

static cblob_status pinned_alloc(const cb_device *device, size_t bytes, void **out)
{
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    /* Portable: the buffer may later be copied through another context's stream. */
    const cbcu_result result = cb_cuda_driver_api_get()->cuMemHostAlloc(out, bytes, CBCU_MEMHOSTALLOC_PORTABLE);
    cb_cuda_leave();
    if (result == CBCU_ERROR_OUT_OF_MEMORY)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of pinned host memory", bytes);
    return cb_cuda_check(result, "cuMemHostAlloc");
}

/* Copies from and to the buffer may still be queued, cblob's (an asynchronous push) and its
 * users' (the address is theirs too): the device's queued work is waited for first, rather than
 * counting on cuMemFreeHost to wait, which the driver does not promise. */
static void pinned_free(const cb_device *device, void *ptr)
{
    if (cb_cuda_enter(cb_cuda_device_state_of(device)) != CBLOB_OK)
        return;
    cb_cuda_driver_api_get()->cuCtxSynchronize();
    cb_cuda_driver_api_get()->cuMemFreeHost(ptr);
    cb_cuda_leave();
}

static cbcu_result queue_copy(const cb_cuda_driver_api *api, void *dst, const void *src, size_t bytes, cb_copy_kind kind,
                              cbcu_stream stream)
{
    switch (kind) {
    case CB_COPY_HOST_TO_DEVICE: return api->cuMemcpyHtoDAsync_v2(address(dst), src, bytes, stream);
    case CB_COPY_DEVICE_TO_HOST: return api->cuMemcpyDtoHAsync_v2(dst, address(src), bytes, stream);
    default: return api->cuMemcpyDtoDAsync_v2(address(dst), address(src), bytes, stream);
    }
}

/* Queued on the context's stream behind its earlier work; waited for when the host is one end. */
static cblob_status copy(const cb_device *device, void *dst, const void *src, size_t bytes, cb_copy_kind kind)
{
    static const char *const what[] = {"copying to the device", "copying to the host", "copying on the device"};
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    cblob_status status = cb_cuda_queued(device, queue_copy(api, dst, src, bytes, kind, cb_cuda_stream(device)), what[kind]);
    if (status == CBLOB_OK && kind != CB_COPY_DEVICE_TO_DEVICE)
        status = cb_cuda_check(api->cuStreamSynchronize(cb_cuda_stream(device)), what[kind]);
    cb_cuda_leave();
    return status;
}

static cblob_status copy_async(const cb_device *device, void *dst, const void *src, size_t bytes)
{
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    const cblob_status status = cb_cuda_queued(
        device, cb_cuda_driver_api_get()->cuMemcpyHtoDAsync_v2(address(dst), src, bytes, cb_cuda_stream(device)),
        "queueing a copy to the device");
    cb_cuda_leave();
    return status;
}

static cblob_status synchronize(const cb_device *device)
{
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    const cbcu_result result = cb_cuda_driver_api_get()->cuStreamSynchronize(cb_cuda_stream(device));
    cb_cuda_leave();
    return cb_cuda_check(result, "waiting for the stream");
}

static cblob_status check_device_memory(const cb_device *device, const void *ptr, size_t bytes)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    unsigned int memory_type = 0;
    int ordinal = -1;
    cbcu_deviceptr start = 0;
    size_t size = 0;
    const bool known = api->cuPointerGetAttribute(&memory_type, CBCU_POINTER_ATTRIBUTE_MEMORY_TYPE, address(ptr)) == CBCU_SUCCESS &&
                       api->cuPointerGetAttribute(&ordinal, CBCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address(ptr)) == CBCU_SUCCESS &&
                       api->cuPointerGetAttribute(&start, CBCU_POINTER_ATTRIBUTE_RANGE_START_ADDR, address(ptr)) == CBCU_SUCCESS &&
                       api->cuPointerGetAttribute(&size, CBCU_POINTER_ATTRIBUTE_RANGE_SIZE, address(ptr)) == CBCU_SUCCESS;
    cb_cuda_leave();
    if (!known || memory_type != CBCU_MEMORYTYPE_DEVICE)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "ptr %p is not device memory the CUDA driver knows", ptr);
    if (ordinal != device->index)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "ptr %p is memory of device %d, not of the context's device %d", ptr,
                       ordinal, (int)device->index);
    const size_t room = (size_t)(start + size - address(ptr));
    if (room < bytes)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "the allocation holds %zu bytes from ptr %p, fewer than size_bytes (%zu)",
                       room, ptr, bytes);
    return CBLOB_OK;
}

/* ---- what the machine has ---------------------------------------------------------------------- */

static cblob_status probe(int32_t *device_count)
{
    return cb_cuda_stack(device_count);
}

static void versions(int32_t *driver_version, int32_t *compiler_version, int32_t *blas_version)
{
    const cb_cuda_driver *driver = cb_cuda_driver_get();
    const cb_cuda_nvrtc *compiler = cb_cuda_nvrtc_get();
    const cb_cuda_cublas *blas = cb_cuda_cublas_get();
    *driver_version = driver->version;
    *compiler_version = compiler->status == CBLOB_OK ? compiler->major * 1000 + compiler->minor * 10 : 0;
    *blas_version = blas->status == CBLOB_OK ? blas->major * 1000 + blas->minor * 10 : 0;
}

static cblob_status device_name(int32_t index, char *name, size_t size)
{
    cb_cuda_device_state *state;
    CB_TRY(cb_cuda_device_open(index, &state));
    snprintf(name, size, "%s", state->name);
    return CBLOB_OK;
}

/* Appends a formatted line to a report, cutting it to the room left. */
static void add_line(char *text, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void add_line(char *text, size_t size, const char *format, ...)
{
    const size_t used = strlen(text);
    if (used + 1 >= size)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(text + used, size - used, format, args);
    va_end(args);
}

/* A device as the report shows it, read without opening it (no context is created). */
static void report_device(char *text, size_t size, const cb_cuda_driver *driver, int index)
{
    const cb_cuda_driver_api *api = &driver->api;
    cbcu_device device = 0;
    char name[256] = "?";
    int major = 0, minor = 0;
    size_t memory = 0;
    if (api->cuDeviceGet(&device, index) != CBCU_SUCCESS) {
        add_line(text, size, "gpu device %d: cannot be queried\n", index);
        return;
    }
    api->cuDeviceGetName(name, (int)sizeof name, device);
    api->cuDeviceGetAttribute(&major, CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    api->cuDeviceGetAttribute(&minor, CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    api->cuDeviceTotalMem_v2(&memory, device);
    add_line(text, size, "gpu device %d: %s, compute capability %d.%d, %.1f GiB\n", index, name, major, minor,
             (double)memory / (1024.0 * 1024.0 * 1024.0));
}

static void report(char *text, size_t size)
{
    const cb_cuda_driver *driver = cb_cuda_driver_get();
    const cb_cuda_nvrtc *compiler = cb_cuda_nvrtc_get();
    const cb_cuda_cublas *blas = cb_cuda_cublas_get();
    char message[CB_CUDA_MESSAGE_BYTES];
    int32_t count = 0;
    const cblob_status status = cb_cuda_stack_status(&count, message, sizeof message);
    text[0] = '\0';
    if (status == CBLOB_OK)
        add_line(text, size, "gpu: usable, %d device%s\n", (int)count, count == 1 ? "" : "s");
    else
        add_line(text, size, "gpu: not usable (%s): %s\n", cblob_status_name(status), message);
    if (driver->version > 0)
        add_line(text, size, "gpu driver: CUDA %d.%d, %s\n", driver->version / 1000, driver->version % 1000 / 10,
                 driver->path);
    else if (driver->path[0] != '\0')
        add_line(text, size, "gpu driver: %s (%s)\n", driver->path, cblob_status_name(driver->status));
    else
        add_line(text, size, "gpu driver: none\n");
    for (int i = 0; driver->status == CBLOB_OK && i < driver->device_count; ++i)
        report_device(text, size, driver, i);
    if (compiler->status == CBLOB_OK)
        add_line(text, size, "nvrtc: %d.%d, %s, compiles for compute capability %d.%d to %d.%d\n", compiler->major,
                 compiler->minor, compiler->path, compiler->archs[0] / 10, compiler->archs[0] % 10,
                 compiler->archs[compiler->arch_count - 1] / 10, compiler->archs[compiler->arch_count - 1] % 10);
    else
        add_line(text, size, "nvrtc: none (%s)\n", compiler->message);
    if (blas->status == CBLOB_OK)
        add_line(text, size, "cublas: %d.%d, %s\n", blas->major, blas->minor, blas->path);
    else
        add_line(text, size, "cublas: none (%s)\n", blas->message);
    char cache[CB_CUDA_PATH_BYTES + 256];
    cb_cuda_cache_describe(cache, sizeof cache);
    add_line(text, size, "kernel cache: %s\n", cache);
    const char *note = NULL;
    const uint64_t keeps = cb_cuda_pool_release_threshold(&note);
    if (keeps == UINT64_MAX)
        add_line(text, size, "device memory: a pool of cblob's own per device that has pools, keeping what is freed%s%s\n",
                 note[0] ? "; " : "", note);
    else
        add_line(text, size,
                 "device memory: a pool of cblob's own per device that has pools, keeping up to %llu freed bytes at a "
                 "synchronisation (CBLOB_CUDA_POOL_RELEASE_THRESHOLD)\n",
                 (unsigned long long)keeps);
}

/* ---- the parts ----------------------------------------------------------------------------------- */

static const cb_backend_device cuda_devices = {
    .open = open_device,
    .probe = probe,
    .versions = versions,
    .name = device_name,
    .report = report,
};

static const cb_backend_memory cuda_memory = {
    .is_host = false,
    .alloc = device_alloc,
    .free = device_free,
    .free_escaped = device_free_escaped,
    .alloc_pinned = pinned_alloc,
    .free_pinned = pinned_free,
    .copy = copy,
    .copy_async = copy_async,
    .check = check_device_memory,
};

static const cb_backend_queue cuda_queues = {
    .open = cb_cuda_queue_open,
    .close = cb_cuda_queue_close,
    .retain = cb_cuda_queue_retain,
    .release = cb_cuda_queue_release,
    .follow = cb_cuda_queue_follow,
    .wait_stream = cb_cuda_queue_wait_stream,
    .synchronize = synchronize,
};

static const cb_backend_cache cuda_cache = {
    .mode = cb_cuda_cache_mode,
    .dir = cb_cuda_cache_dir,
    .warm_up = cb_cuda_cache_warm_up,
};

static const cb_backend_collectives nccl = {
    .unique_id = cb_cuda_nccl_unique_id,
    .engine = cb_cuda_nccl_engine,
};

static const cb_backend cuda_backend = {
    .name = "cuda",
    .device = &cuda_devices,
    .memory = &cuda_memory,
    .queue = &cuda_queues,
    .kernels = cb_cuda_kernels,
    .cache = &cuda_cache,
    .collectives = &nccl,
};

const cb_backend *cb_cuda_backend(void)
{
    return &cuda_backend;
}
