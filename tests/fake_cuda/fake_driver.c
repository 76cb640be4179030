/* SPDX-License-Identifier: BSD-2-Clause */
/* A test double of the CUDA driver (built as libcuda.so.1, for tests only). See fake_cuda.h for
 * what it models and its knobs. It is strict where a real driver would fail or corrupt memory:
 * unknown pointers and streams, copies past an allocation, calls without a current context and
 * frees of memory it did not hand out are errors. This file holds the entry points; memory is in
 * fake_memory.c, streams and the order work runs in in fake_queue.c. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "fake_cuda_internal.h"

/* Every driver function the library calls, some defined in fake_queue.c. */
#define FAKE_DECLARE(ret, symbol, params) FAKE_API ret symbol params;
CB_CUDA_DRIVER_FUNCTIONS(FAKE_DECLARE)
#undef FAKE_DECLARE

/* ---- state --------------------------------------------------------------------------------- */

typedef struct fake_context {
    int device;
} fake_context;

typedef struct fake_module {
    unsigned char *image;
    size_t size;
} fake_module;

static pthread_mutex_t lock;
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static bool initialised, deferred, no_pools;
static int device_count = 1, driver_version = 13000, arch = 80;
static bool no_proc_address;
static int occupancy; /* fake_cuda_set_occupancy's; 0: the default */
static fake_context contexts[FAKE_MAX_DEVICES];
static int lost[FAKE_MAX_DEVICES]; /* each device's sticky error */
fake_cuda_counters fake_counters;

#define CONTEXT_STACK 16
static _Thread_local fake_context *context_stack[CONTEXT_STACK];
static _Thread_local int context_depth;

static void make_lock(void)
{
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &attributes);
    pthread_mutexattr_destroy(&attributes);
}

void fake_lock(void)
{
    pthread_once(&lock_once, make_lock);
    pthread_mutex_lock(&lock);
}

int fake_unlock(int result)
{
    pthread_mutex_unlock(&lock);
    return result;
}

bool fake_deferred(void)
{
    return deferred;
}

static long env_number(const char *name, long fallback)
{
    const char *text = getenv(name);
    return text != NULL && text[0] != '\0' ? strtol(text, NULL, 10) : fallback;
}

static fake_context *current_context(void)
{
    return context_depth > 0 ? context_stack[context_depth - 1] : NULL;
}

int fake_current_device(void)
{
    const fake_context *context = current_context();
    return context != NULL ? context->device : -1;
}

FAKE_API int fake_context_current(void)
{
    return current_context() != NULL;
}

struct CUctx_st *fake_device_context(int device)
{
    return (struct CUctx_st *)&contexts[device];
}

int fake_device_lost(int device)
{
    fake_lock();
    return fake_unlock(lost[device]);
}

void fake_device_fault(int device, int error)
{
    fake_lock();
    if (lost[device] == 0)
        lost[device] = error;
    fake_unlock(0);
}

int fake_context_status(void)
{
    const fake_context *context = current_context();
    return context == NULL ? FAKE_INVALID_CONTEXT : fake_device_lost(context->device);
}

/* ---- the control interface --------------------------------------------------------------- */

FAKE_API void fake_cuda_get_counters(fake_cuda_counters *out)
{
    fake_lock();
    *out = fake_counters;
    fake_unlock(0);
}

FAKE_API void fake_count_blas(int handles, int host_sums)
{
    fake_lock();
    fake_counters.blas_handles += (uint64_t)handles;
    fake_counters.blas_host_sums += (uint64_t)host_sums;
    fake_unlock(0);
}

FAKE_API int fake_cuda_deferred(void)
{
    return deferred;
}

/* ---- initialisation and devices ---------------------------------------------------------------- */

FAKE_API cbcu_result cuInit(unsigned int flags)
{
    if (flags != 0)
        return CBCU_ERROR_INVALID_VALUE;
    if (env_number("CBLOB_FAKE_CUDA_STUB", 0) != 0)
        return CBCU_ERROR_STUB_LIBRARY;
    fake_lock();
    if (!initialised) {
        device_count = (int)env_number("CBLOB_FAKE_CUDA_DEVICES", 1);
        if (device_count > FAKE_MAX_DEVICES)
            device_count = FAKE_MAX_DEVICES;
        driver_version = (int)env_number("CBLOB_FAKE_CUDA_VERSION", 13000);
        arch = (int)env_number("CBLOB_FAKE_CUDA_ARCH", 80);
        fake_memory_configure((uint64_t)env_number("CBLOB_FAKE_CUDA_MEMORY", 1L << 30));
        no_proc_address = env_number("CBLOB_FAKE_CUDA_NO_PROC_ADDRESS", 0) != 0;
        no_pools = env_number("CBLOB_FAKE_CUDA_NO_POOLS", 0) != 0;
        const char *seed = getenv("CBLOB_FAKE_CUDA_DEFERRED");
        deferred = seed != NULL && seed[0] != '\0';
        fake_queue_configure(device_count, deferred ? strtoull(seed, NULL, 10) : 0);
        fake_pools_configure(device_count);
        for (int i = 0; i < FAKE_MAX_DEVICES; ++i)
            contexts[i].device = i;
        initialised = true;
    }
    return fake_unlock(device_count > 0 ? CBCU_SUCCESS : CBCU_ERROR_NO_DEVICE);
}

FAKE_API cbcu_result cuDriverGetVersion(int *version)
{
    if (version == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    if (env_number("CBLOB_FAKE_CUDA_STUB", 0) != 0)
        return CBCU_ERROR_STUB_LIBRARY;
    *version = (int)env_number("CBLOB_FAKE_CUDA_VERSION", 13000);
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuGetErrorName(cbcu_result error, const char **name)
{
    static const struct {
        int code;
        const char *name;
    } names[] = {
        {0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"},
        {3, "CUDA_ERROR_NOT_INITIALIZED"}, {34, "CUDA_ERROR_STUB_LIBRARY"}, {100, "CUDA_ERROR_NO_DEVICE"},
        {101, "CUDA_ERROR_INVALID_DEVICE"}, {200, "CUDA_ERROR_INVALID_IMAGE"}, {201, "CUDA_ERROR_INVALID_CONTEXT"},
        {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"}, {400, "CUDA_ERROR_INVALID_HANDLE"}, {500, "CUDA_ERROR_NOT_FOUND"},
        {600, "CUDA_ERROR_NOT_READY"}, {700, "CUDA_ERROR_ILLEGAL_ADDRESS"}, {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
        {719, "CUDA_ERROR_LAUNCH_FAILED"}, {801, "CUDA_ERROR_NOT_SUPPORTED"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (names[i].code == (int)error) {
            *name = names[i].name;
            return CBCU_SUCCESS;
        }
    return CBCU_ERROR_INVALID_VALUE;
}

static cbcu_result check_initialised(void)
{
    return initialised ? CBCU_SUCCESS : CBCU_ERROR_NOT_INITIALIZED;
}

FAKE_API cbcu_result cuDeviceGetCount(int *count)
{
    if (check_initialised() != CBCU_SUCCESS)
        return CBCU_ERROR_NOT_INITIALIZED;
    *count = device_count;
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuDeviceGet(cbcu_device *device, int ordinal)
{
    if (check_initialised() != CBCU_SUCCESS)
        return CBCU_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= device_count)
        return CBCU_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuDeviceGetName(char *name, int length, cbcu_device device)
{
    if (device < 0 || device >= device_count || length <= 0)
        return CBCU_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)length, "cblob fake CUDA device %d", device);
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuDeviceGetAttribute(int *value, cbcu_device_attribute attribute, cbcu_device device)
{
    if (device < 0 || device >= device_count)
        return CBCU_ERROR_INVALID_DEVICE;
    switch (attribute) {
    case CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = arch / 10; return CBCU_SUCCESS;
    case CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = arch % 10; return CBCU_SUCCESS;
    case CBCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 4; return CBCU_SUCCESS;
    case CBCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = !no_pools; return CBCU_SUCCESS;
    case CBCU_DEVICE_ATTRIBUTE_MAX_PITCH: *value = 2147483647; return CBCU_SUCCESS;
    default: return CBCU_ERROR_INVALID_VALUE;
    }
}

FAKE_API cbcu_result cuDeviceTotalMem_v2(size_t *bytes, cbcu_device device)
{
    if (device < 0 || device >= device_count)
        return CBCU_ERROR_INVALID_DEVICE;
    *bytes = (size_t)env_number("CBLOB_FAKE_CUDA_MEMORY", 1L << 30);
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuDevicePrimaryCtxRetain(cbcu_context *context, cbcu_device device)
{
    if (device < 0 || device >= device_count)
        return CBCU_ERROR_INVALID_DEVICE;
    *context = (cbcu_context)&contexts[device];
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuCtxPushCurrent_v2(cbcu_context context)
{
    fake_context *fake = (fake_context *)context;
    if (fake < contexts || fake >= contexts + device_count || context_depth == CONTEXT_STACK)
        return CBCU_ERROR_INVALID_VALUE;
    context_stack[context_depth++] = fake;
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuCtxPopCurrent_v2(cbcu_context *context)
{
    if (context_depth == 0)
        return FAKE_INVALID_CONTEXT;
    fake_context *popped = context_stack[--context_depth];
    if (context != NULL)
        *context = (cbcu_context)popped;
    return CBCU_SUCCESS;
}

/* ---- memory calls ---------------------------------------------------------------------------- */

FAKE_API cbcu_result cuMemAlloc_v2(cbcu_deviceptr *ptr, size_t bytes)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    if (bytes == 0 || ptr == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    uint64_t address = 0;
    const int result = fake_device_alloc(fake_current_device(), bytes, true, NULL, &address);
    if (result == 0)
        *ptr = address;
    return result;
}

/* Freeing waits for the whole device first, as cuMemFree does. */
FAKE_API cbcu_result cuMemFree_v2(cbcu_deviceptr ptr)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    fake_lock();
    fake_counters.device_syncs++;
    const int lost_now = fake_run_device(fake_current_device());
    return fake_unlock(lost_now != 0 ? lost_now : fake_device_free_now(ptr));
}

/* A stream-ordered allocation from `pool`, usable in the stream's order from the allocation's turn. */
static cbcu_result alloc_from_pool(cbcu_deviceptr *ptr, size_t bytes, fake_pool *pool, cbcu_stream stream_handle)
{
    fake_lock();
    fake_stream *stream = fake_find_stream(stream_handle);
    if (stream == NULL)
        return fake_unlock(CBCU_ERROR_INVALID_HANDLE);
    if (pool == NULL)
        pool = fake_default_pool(fake_stream_device(stream));
    else if (fake_pool_device(pool) != fake_stream_device(stream))
        return fake_unlock(CBCU_ERROR_INVALID_VALUE);
    uint64_t address = 0;
    int result = fake_device_alloc(fake_stream_device(stream), bytes, false, pool, &address);
    if (result == 0) {
        fake_counters.async_allocs++;
        *ptr = address;
        result = fake_queue_alloc(stream, address);
    }
    return fake_unlock(result);
}

/* From the device's default pool, which every library of the process shares. */
FAKE_API cbcu_result cuMemAllocAsync(cbcu_deviceptr *ptr, size_t bytes, cbcu_stream stream_handle)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    if (bytes == 0 || ptr == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    if (no_pools)
        return FAKE_NOT_SUPPORTED;
    fake_lock();
    fake_counters.default_pool_allocs++;
    return fake_unlock(alloc_from_pool(ptr, bytes, NULL, stream_handle));
}

FAKE_API cbcu_result cuMemAllocFromPoolAsync(cbcu_deviceptr *ptr, size_t bytes, cbcu_mempool pool, cbcu_stream stream_handle)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    if (bytes == 0 || ptr == NULL || !fake_pool_known((const fake_pool *)pool))
        return CBCU_ERROR_INVALID_VALUE;
    fake_lock();
    fake_counters.own_pool_allocs++;
    return fake_unlock(alloc_from_pool(ptr, bytes, (fake_pool *)pool, stream_handle));
}

/* Device memory pools (CU_MEM_ALLOCATION_TYPE_PINNED on a device, no export handles). */
FAKE_API cbcu_result cuMemPoolCreate(cbcu_mempool *pool, const cbcu_mempool_props *props)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    if (pool == NULL || props == NULL || no_pools)
        return no_pools ? FAKE_NOT_SUPPORTED : CBCU_ERROR_INVALID_VALUE;
    if (props->allocType != CBCU_MEM_ALLOCATION_TYPE_PINNED || props->handleTypes != CBCU_MEM_HANDLE_TYPE_NONE ||
        props->location.type != CBCU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
        props->location.id >= device_count || props->win32SecurityAttributes != NULL)
        return CBCU_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof props->reserved; ++i)
        if (props->reserved[i] != 0)
            return CBCU_ERROR_INVALID_VALUE;
    fake_pool *made = NULL;
    const int result = fake_pool_create(props->location.id, &made);
    if (result == 0)
        *pool = (cbcu_mempool)made;
    return result;
}

FAKE_API cbcu_result cuMemPoolDestroy(cbcu_mempool pool)
{
    if (!fake_pool_known((const fake_pool *)pool))
        return CBCU_ERROR_INVALID_VALUE;
    fake_pool_destroy((fake_pool *)pool);
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuMemPoolSetAttribute(cbcu_mempool pool, cbcu_mempool_attribute attribute, void *value)
{
    if (!fake_pool_known((const fake_pool *)pool) || value == NULL || attribute != CBCU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        return CBCU_ERROR_INVALID_VALUE;
    fake_pool_set_release_threshold((fake_pool *)pool, *(const cbcu_uint64 *)value);
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuMemPoolTrimTo(cbcu_mempool pool, size_t keep)
{
    if (!fake_pool_known((const fake_pool *)pool))
        return CBCU_ERROR_INVALID_VALUE;
    fake_pool_trim((fake_pool *)pool, keep);
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuMemFreeAsync(cbcu_deviceptr ptr, cbcu_stream stream_handle)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    if (no_pools)
        return FAKE_NOT_SUPPORTED;
    fake_lock();
    fake_stream *stream = fake_find_stream(stream_handle);
    if (stream == NULL)
        return fake_unlock(CBCU_ERROR_INVALID_HANDLE);
    int result = fake_device_free_queued(ptr);
    if (result == 0) {
        fake_counters.async_frees++;
        result = fake_queue_free(stream, ptr);
    }
    return fake_unlock(result);
}

FAKE_API cbcu_result cuMemHostAlloc(void **ptr, size_t bytes, unsigned int flags)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    if (bytes == 0 || ptr == NULL || (flags & ~(unsigned)CBCU_MEMHOSTALLOC_PORTABLE) != 0)
        return CBCU_ERROR_INVALID_VALUE;
    return fake_pinned_alloc(bytes, ptr);
}

/* No wait for queued work (fake_pinned_free says why). */
FAKE_API cbcu_result cuMemFreeHost(void *ptr)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    return fake_pinned_free(ptr);
}

/* Unified addressing maps pinned memory into every context: its device address. */
FAKE_API cbcu_result cuMemHostGetDevicePointer_v2(cbcu_deviceptr *ptr, void *host, unsigned int flags)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    if (ptr == NULL || flags != 0 || !fake_is_pinned(host, 1))
        return CBCU_ERROR_INVALID_VALUE;
    *ptr = (cbcu_deviceptr)((uintptr_t)host + FAKE_DEVICE_TAG);
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuPointerGetAttribute(void *data, cbcu_pointer_attribute attribute, cbcu_deviceptr ptr)
{
    int device = -1;
    uint64_t start = 0;
    size_t size = 0;
    if (fake_device_pointer_info(ptr, &device, &start, &size) != 0)
        return CBCU_ERROR_INVALID_VALUE;
    switch (attribute) {
    case CBCU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data = CBCU_MEMORYTYPE_DEVICE; break;
    case CBCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = device; break;
    case CBCU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(cbcu_deviceptr *)data = start; break;
    case CBCU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = size; break;
    default: return CBCU_ERROR_INVALID_VALUE;
    }
    return CBCU_SUCCESS;
}

/* ---- copies ------------------------------------------------------------------------------------ */

/* The stream and the check every asynchronous copy starts with. */
static int copy_stream(cbcu_stream handle, fake_stream **out)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    *out = fake_find_stream(handle);
    return *out != NULL ? 0 : CBCU_ERROR_INVALID_HANDLE;
}

FAKE_API cbcu_result cuMemcpyHtoDAsync_v2(cbcu_deviceptr dst, const void *src, size_t bytes, cbcu_stream handle)
{
    fake_stream *stream;
    const int status = copy_stream(handle, &stream);
    if (status != 0)
        return status;
    if (!fake_is_device_range(dst, bytes) || src == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    fake_lock();
    fake_counters.host_to_device++;
    fake_counters.host_to_device_bytes += bytes;
    fake_counters.async_copies++;
    return fake_unlock(fake_queue_copy(stream, dst, (uint64_t)(uintptr_t)src, bytes, false));
}

/* To pageable memory the copy has finished when the call returns (the driver says so); to
 * pinned memory it is queued like any other. */
FAKE_API cbcu_result cuMemcpyDtoHAsync_v2(void *dst, cbcu_deviceptr src, size_t bytes, cbcu_stream handle)
{
    fake_stream *stream;
    const int status = copy_stream(handle, &stream);
    if (status != 0)
        return status;
    if (!fake_is_device_range(src, bytes) || dst == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    fake_lock();
    fake_counters.device_to_host++;
    fake_counters.device_to_host_bytes += bytes;
    return fake_unlock(fake_queue_copy(stream, (uint64_t)(uintptr_t)dst, src, bytes, !fake_is_pinned(dst, bytes)));
}

FAKE_API cbcu_result cuMemcpyDtoDAsync_v2(cbcu_deviceptr dst, cbcu_deviceptr src, size_t bytes, cbcu_stream handle)
{
    fake_stream *stream;
    const int status = copy_stream(handle, &stream);
    if (status != 0)
        return status;
    if (!fake_is_device_range(dst, bytes) || !fake_is_device_range(src, bytes))
        return CBCU_ERROR_INVALID_VALUE;
    fake_lock();
    fake_counters.device_to_device++;
    fake_counters.device_to_device_bytes += bytes;
    return fake_unlock(fake_queue_copy(stream, dst, src, bytes, false));
}

/* Device to device only: the one kind the library asks for. */
FAKE_API cbcu_result cuMemcpy2DAsync_v2(const cbcu_memcpy2d *copy, cbcu_stream handle)
{
    fake_stream *stream;
    const int status = copy_stream(handle, &stream);
    if (status != 0)
        return status;
    if (copy == NULL || copy->srcMemoryType != CBCU_MEMORYTYPE_DEVICE || copy->dstMemoryType != CBCU_MEMORYTYPE_DEVICE)
        return copy == NULL ? CBCU_ERROR_INVALID_VALUE : FAKE_NOT_SUPPORTED;
    if (copy->WidthInBytes > copy->srcPitch || copy->WidthInBytes > copy->dstPitch || copy->Height == 0 ||
        copy->srcPitch > 2147483647 || copy->dstPitch > 2147483647)
        return CBCU_ERROR_INVALID_VALUE;
    const uint64_t src = copy->srcDevice + copy->srcY * copy->srcPitch + copy->srcXInBytes;
    const uint64_t dst = copy->dstDevice + copy->dstY * copy->dstPitch + copy->dstXInBytes;
    if (!fake_is_device_range(src, (copy->Height - 1) * copy->srcPitch + copy->WidthInBytes) ||
        !fake_is_device_range(dst, (copy->Height - 1) * copy->dstPitch + copy->WidthInBytes))
        return CBCU_ERROR_INVALID_VALUE;
    fake_lock();
    fake_counters.device_to_device++;
    fake_counters.copies_2d++;
    fake_counters.device_to_device_bytes += copy->WidthInBytes * copy->Height;
    return fake_unlock(fake_queue_copy_2d(stream, dst, copy->dstPitch, src, copy->srcPitch, copy->WidthInBytes, copy->Height));
}

FAKE_API cbcu_result cuMemsetD8Async(cbcu_deviceptr dst, unsigned char value, size_t count, cbcu_stream handle)
{
    fake_stream *stream;
    const int status = copy_stream(handle, &stream);
    if (status != 0)
        return status;
    if (!fake_is_device_range(dst, count))
        return CBCU_ERROR_INVALID_VALUE;
    fake_lock();
    fake_counters.memsets++;
    return fake_unlock(fake_queue_memset(stream, dst, value, count));
}

/* ---- modules and launches ---------------------------------------------------------------------- */

/* How many bytes an image holds: a cubin's ELF header says where its section table ends; PTX is
 * text. Anything else is not an image. */
static size_t image_size(const unsigned char *image)
{
    if (memcmp(image, "\x7f" "ELF", 4) == 0 && image[4] == 2) {
        uint64_t section_table;
        uint16_t entry_size, entries;
        memcpy(&section_table, image + 0x28, sizeof section_table);
        memcpy(&entry_size, image + 0x3A, sizeof entry_size);
        memcpy(&entries, image + 0x3C, sizeof entries);
        return (size_t)(section_table + (uint64_t)entry_size * entries);
    }
    const size_t length = strlen((const char *)image);
    return strstr((const char *)image, ".version") != NULL && strstr((const char *)image, ".target") != NULL ? length + 1 : 0;
}

FAKE_API cbcu_result cuModuleLoadData(cbcu_module *module, const void *image)
{
    const int status = fake_context_status();
    if (status != 0)
        return status;
    const size_t size = image != NULL ? image_size(image) : 0;
    if (size == 0 || size > ((size_t)64 << 20))
        return CBCU_ERROR_INVALID_IMAGE;
    fake_module *loaded = malloc(sizeof *loaded);
    unsigned char *copy = malloc(size);
    if (loaded == NULL || copy == NULL) {
        free(loaded);
        free(copy);
        return CBCU_ERROR_OUT_OF_MEMORY;
    }
    memcpy(copy, image, size);
    *loaded = (fake_module){copy, size};
    fake_lock();
    fake_counters.module_loads++;
    fake_unlock(0);
    *module = (cbcu_module)loaded;
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuModuleUnload(cbcu_module module)
{
    fake_module *loaded = (fake_module *)module;
    if (loaded == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    free(loaded->image);
    free(loaded);
    return CBCU_SUCCESS;
}

/* A kernel exists when the image names it (cubins keep their symbol names as strings) and the
 * double knows how to run it. */
FAKE_API cbcu_result cuModuleGetFunction(cbcu_function *function, cbcu_module module, const char *name)
{
    const fake_module *loaded = (const fake_module *)module;
    if (loaded == NULL || name == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    if (memmem(loaded->image, loaded->size, name, strlen(name) + 1) == NULL &&
        memmem(loaded->image, loaded->size, name, strlen(name)) == NULL)
        return CBCU_ERROR_NOT_FOUND;
    for (const fake_kernel *kernel = fake_kernels; kernel->name != NULL; ++kernel)
        if (strcmp(kernel->name, name) == 0) {
            *function = (cbcu_function)kernel;
            return CBCU_SUCCESS;
        }
    return CBCU_ERROR_NOT_FOUND;
}

/* Each kernel uses what the double says; occupancy follows from its block size. */
FAKE_API cbcu_result cuFuncGetAttribute(int *value, cbcu_function_attribute attribute, cbcu_function function)
{
    if (value == NULL || function == NULL || attribute != CBCU_FUNC_ATTRIBUTE_NUM_REGS)
        return CBCU_ERROR_INVALID_VALUE;
    *value = 32;
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, cbcu_function function, int block_size,
                                                                 size_t shared_bytes)
{
    (void)shared_bytes;
    if (blocks == NULL || function == NULL || block_size <= 0 || block_size > 1024)
        return CBCU_ERROR_INVALID_VALUE;
    fake_lock();
    *blocks = occupancy > 0 ? occupancy : 2048 / block_size;
    return fake_unlock(CBCU_SUCCESS);
}

FAKE_API void fake_cuda_set_occupancy(int blocks_per_multiprocessor)
{
    fake_lock();
    occupancy = blocks_per_multiprocessor;
    fake_unlock(0);
}

FAKE_API cbcu_result cuLaunchKernel(cbcu_function function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                    unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                    unsigned int shared_bytes, cbcu_stream handle, void **params, void **extra)
{
    (void)shared_bytes;
    const int status = fake_context_status();
    if (status != 0)
        return status;
    const fake_kernel *kernel = (const fake_kernel *)function;
    if (kernel == NULL || params == NULL || extra != NULL || grid_x == 0 || grid_y != 1 || grid_z != 1 ||
        block_x == 0 || block_x > 1024 || block_x % 32 != 0 || block_y != 1 || block_z != 1)
        return CBCU_ERROR_INVALID_VALUE;
    fake_lock();
    fake_stream *stream = fake_find_stream(handle);
    if (stream == NULL)
        return fake_unlock(CBCU_ERROR_INVALID_HANDLE);
    fake_counters.launches++;
    fake_counters.previous_grid = fake_counters.last_grid;
    fake_counters.last_grid = grid_x;
    return fake_unlock(fake_queue_launch(stream, kernel, params, grid_x, block_x));
}

/* ---- cuGetProcAddress ---------------------------------------------------------------------- */

FAKE_API cbcu_result cuGetProcAddress_v2(const char *symbol, void **function, int cuda_version, cbcu_uint64 flags,
                                         cbcu_proc_address_result *status);
FAKE_API cbcu_result cuGetProcAddress_v2(const char *symbol, void **function, int cuda_version, cbcu_uint64 flags,
                                         cbcu_proc_address_result *status)
{
    /* The base names a loader asks for, and the variant a CUDA 12+ caller gets. */
    static const struct {
        const char *name;
        void *function;
    } table[] = {
        {"cuDriverGetVersion", (void *)cuDriverGetVersion}, {"cuGetErrorName", (void *)cuGetErrorName},
        {"cuDeviceGetCount", (void *)cuDeviceGetCount}, {"cuDeviceGet", (void *)cuDeviceGet},
        {"cuDeviceGetName", (void *)cuDeviceGetName}, {"cuDeviceGetAttribute", (void *)cuDeviceGetAttribute},
        {"cuDeviceTotalMem", (void *)cuDeviceTotalMem_v2}, {"cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain},
        {"cuCtxPushCurrent", (void *)cuCtxPushCurrent_v2}, {"cuCtxPopCurrent", (void *)cuCtxPopCurrent_v2},
        {"cuMemAlloc", (void *)cuMemAlloc_v2}, {"cuMemFree", (void *)cuMemFree_v2},
        {"cuMemHostAlloc", (void *)cuMemHostAlloc}, {"cuMemFreeHost", (void *)cuMemFreeHost},
        {"cuMemcpyHtoDAsync", (void *)cuMemcpyHtoDAsync_v2}, {"cuMemcpyDtoHAsync", (void *)cuMemcpyDtoHAsync_v2},
        {"cuMemcpyDtoDAsync", (void *)cuMemcpyDtoDAsync_v2}, {"cuMemsetD8Async", (void *)cuMemsetD8Async},
        {"cuStreamSynchronize", (void *)cuStreamSynchronize}, {"cuPointerGetAttribute", (void *)cuPointerGetAttribute},
        {"cuModuleLoadData", (void *)cuModuleLoadData}, {"cuModuleUnload", (void *)cuModuleUnload},
        {"cuModuleGetFunction", (void *)cuModuleGetFunction}, {"cuLaunchKernel", (void *)cuLaunchKernel},
        {"cuCtxSynchronize", (void *)cuCtxSynchronize}, {"cuMemAllocAsync", (void *)cuMemAllocAsync},
        {"cuMemFreeAsync", (void *)cuMemFreeAsync}, {"cuMemHostGetDevicePointer", (void *)cuMemHostGetDevicePointer_v2},
        {"cuMemcpy2DAsync", (void *)cuMemcpy2DAsync_v2}, {"cuStreamCreate", (void *)cuStreamCreate},
        {"cuStreamDestroy", (void *)cuStreamDestroy_v2}, {"cuStreamGetCtx", (void *)cuStreamGetCtx},
        {"cuStreamWaitEvent", (void *)cuStreamWaitEvent}, {"cuEventCreate", (void *)cuEventCreate},
        {"cuEventRecord", (void *)cuEventRecord}, {"cuEventSynchronize", (void *)cuEventSynchronize},
        {"cuEventDestroy", (void *)cuEventDestroy_v2}, {"cuFuncGetAttribute", (void *)cuFuncGetAttribute},
        {"cuEventQuery", (void *)cuEventQuery}, {"cuMemAllocFromPoolAsync", (void *)cuMemAllocFromPoolAsync},
        {"cuMemPoolCreate", (void *)cuMemPoolCreate}, {"cuMemPoolDestroy", (void *)cuMemPoolDestroy},
        {"cuMemPoolSetAttribute", (void *)cuMemPoolSetAttribute}, {"cuMemPoolTrimTo", (void *)cuMemPoolTrimTo},
        {"cuOccupancyMaxActiveBlocksPerMultiprocessor", (void *)cuOccupancyMaxActiveBlocksPerMultiprocessor},
    };
    (void)flags;
    if (!initialised)
        return CBCU_ERROR_NOT_INITIALIZED;
    fake_lock();
    fake_counters.proc_address_lookups++;
    fake_unlock(0);
    if (no_proc_address || cuda_version < 12000)
        return CBCU_ERROR_NOT_FOUND;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
        if (strcmp(table[i].name, symbol) == 0) {
            *function = table[i].function;
            if (status != NULL)
                *status = 0;
            return CBCU_SUCCESS;
        }
    return CBCU_ERROR_NOT_FOUND;
}

/* NVRTC looks for the driver in the process and asks it for its private export tables; the
 * double has none, which NVRTC accepts (as it does from the toolkit's stub). */
FAKE_API cbcu_result cuGetExportTable(const void **table, const void *id)
{
    (void)id;
    if (table != NULL)
        *table = NULL;
    return CBCU_ERROR_NOT_FOUND;
}
