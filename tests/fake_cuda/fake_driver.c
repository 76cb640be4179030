/* SPDX-License-Identifier: BSD-2-Clause */
/* A test double of the CUDA driver (built as libcuda.so.1, for tests only). See fake_cuda.h for
 * what it models and its knobs. It is strict where a real driver would fail or corrupt memory:
 * unknown pointers and streams, copies past an allocation, calls without a current context and
 * frees of memory it did not hand out are errors. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "fake_cuda_internal.h"

#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define DEVICE_TAG ((uintptr_t)1 << 60)
#define PINNED_HEADER 64
#define MAX_DEVICES 8

/* ---- state --------------------------------------------------------------------------------- */

typedef struct allocation {
    unsigned char *host;
    size_t size;
    int device;
    bool pinned;
} allocation;

typedef struct pending_copy {
    unsigned char *dst;
    const unsigned char *src; /* pinned source: read when the copy runs */
    unsigned char *snapshot;  /* pageable source: taken when queued, as the driver stages it */
    size_t bytes;
    struct pending_copy *next;
} pending_copy;

typedef struct fake_stream {
    pending_copy *head, *tail;
    struct fake_stream *next_stream;
} fake_stream;

typedef struct fake_context {
    int device;
} fake_context;

typedef struct fake_module {
    unsigned char *image;
    size_t size;
} fake_module;

static pthread_mutex_t lock;
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static bool initialised;
static int device_count = 1, driver_version = 13000, arch = 80;
static uint64_t memory_per_device = (uint64_t)1 << 30;
static bool no_proc_address;
static allocation *allocations;
static size_t allocation_count, allocation_room;
static fake_stream default_stream;
static fake_stream *streams; /* created by cuStreamCreate */
static fake_context contexts[MAX_DEVICES];
static fake_cuda_counters counters;
static uint64_t device_bytes[MAX_DEVICES];

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

static void enter(void)
{
    pthread_once(&lock_once, make_lock);
    pthread_mutex_lock(&lock);
}

static int leave(int result)
{
    pthread_mutex_unlock(&lock);
    return result;
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

FAKE_API int fake_context_current(void)
{
    return current_context() != NULL;
}

/* ---- the control interface --------------------------------------------------------------- */

FAKE_API void fake_cuda_get_counters(fake_cuda_counters *out)
{
    enter();
    *out = counters;
    leave(0);
}

FAKE_API void fake_cuda_set_memory(uint64_t bytes_per_device)
{
    enter();
    memory_per_device = bytes_per_device;
    leave(0);
}

FAKE_API uint64_t fake_cuda_pending_copies(void)
{
    enter();
    uint64_t pending = 0;
    for (fake_stream *stream = &default_stream; stream != NULL;
         stream = stream == &default_stream ? streams : stream->next_stream)
        for (pending_copy *copy = stream->head; copy != NULL; copy = copy->next)
            ++pending;
    leave(0);
    return pending;
}

/* ---- memory ---------------------------------------------------------------------------------- */

static allocation *find_allocation(uintptr_t host, size_t bytes, bool pinned)
{
    for (size_t i = 0; i < allocation_count; ++i) {
        allocation *a = &allocations[i];
        const uintptr_t start = (uintptr_t)a->host;
        if (a->pinned == pinned && host >= start && host - start <= a->size && bytes <= a->size - (host - start))
            return a;
    }
    return NULL;
}

FAKE_API void *fake_device_range(const void *device_ptr, size_t bytes)
{
    const uintptr_t address = (uintptr_t)device_ptr;
    if (address < DEVICE_TAG)
        return NULL;
    enter();
    const allocation *a = find_allocation(address - DEVICE_TAG, bytes, false);
    leave(0);
    return a != NULL ? (void *)(address - DEVICE_TAG) : NULL;
}

static bool add_allocation(unsigned char *host, size_t size, int device, bool pinned)
{
    if (allocation_count == allocation_room) {
        const size_t room = allocation_room ? 2 * allocation_room : 64;
        allocation *grown = realloc(allocations, room * sizeof *grown);
        if (grown == NULL)
            return false;
        allocations = grown;
        allocation_room = room;
    }
    allocations[allocation_count++] = (allocation){host, size, device, pinned};
    return true;
}

static void remove_allocation(allocation *a)
{
    *a = allocations[--allocation_count];
}

/* ---- streams --------------------------------------------------------------------------------- */

static fake_stream *find_stream(void *handle)
{
    /* NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD all mean the default stream here. */
    if ((uintptr_t)handle <= 2)
        return &default_stream;
    for (fake_stream *stream = streams; stream != NULL; stream = stream->next_stream)
        if (stream == handle)
            return stream;
    return NULL;
}

static void run_queue(fake_stream *stream)
{
    while (stream->head != NULL) {
        pending_copy *copy = stream->head;
        memcpy(copy->dst, copy->snapshot != NULL ? copy->snapshot : copy->src, copy->bytes);
        stream->head = copy->next;
        free(copy->snapshot);
        free(copy);
    }
    stream->tail = NULL;
}

static void run_all_queues(void)
{
    run_queue(&default_stream);
    for (fake_stream *stream = streams; stream != NULL; stream = stream->next_stream)
        run_queue(stream);
}

/* Work on a stream waits for what is queued on it; the legacy default stream also waits for
 * every other (blocking) stream, and they for it. */
FAKE_API int fake_stream_flush(void *handle)
{
    enter();
    fake_stream *stream = find_stream(handle);
    if (stream == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    if (stream == &default_stream)
        run_all_queues();
    else {
        run_queue(&default_stream);
        run_queue(stream);
    }
    return leave(CBCU_SUCCESS);
}

/* ---- initialisation and devices ---------------------------------------------------------------- */

FAKE_API cbcu_result cuInit(unsigned int flags)
{
    if (flags != 0)
        return CBCU_ERROR_INVALID_VALUE;
    if (env_number("CBLOB_FAKE_CUDA_STUB", 0) != 0)
        return CBCU_ERROR_STUB_LIBRARY;
    enter();
    device_count = (int)env_number("CBLOB_FAKE_CUDA_DEVICES", 1);
    if (device_count > MAX_DEVICES)
        device_count = MAX_DEVICES;
    driver_version = (int)env_number("CBLOB_FAKE_CUDA_VERSION", 13000);
    arch = (int)env_number("CBLOB_FAKE_CUDA_ARCH", 80);
    memory_per_device = (uint64_t)env_number("CBLOB_FAKE_CUDA_MEMORY", 1L << 30);
    no_proc_address = env_number("CBLOB_FAKE_CUDA_NO_PROC_ADDRESS", 0) != 0;
    for (int i = 0; i < MAX_DEVICES; ++i)
        contexts[i].device = i;
    initialised = true;
    return leave(device_count > 0 ? CBCU_SUCCESS : CBCU_ERROR_NO_DEVICE);
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
        {400, "CUDA_ERROR_INVALID_HANDLE"}, {500, "CUDA_ERROR_NOT_FOUND"}, {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
        {719, "CUDA_ERROR_LAUNCH_FAILED"},
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
    default: return CBCU_ERROR_INVALID_VALUE;
    }
}

FAKE_API cbcu_result cuDeviceTotalMem_v2(size_t *bytes, cbcu_device device)
{
    if (device < 0 || device >= device_count)
        return CBCU_ERROR_INVALID_DEVICE;
    *bytes = (size_t)memory_per_device;
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
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_context *popped = context_stack[--context_depth];
    if (context != NULL)
        *context = (cbcu_context)popped;
    return CBCU_SUCCESS;
}

/* ---- memory calls ---------------------------------------------------------------------------- */

FAKE_API cbcu_result cuMemAlloc_v2(cbcu_deviceptr *ptr, size_t bytes)
{
    fake_context *context = current_context();
    if (context == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (bytes == 0 || ptr == NULL)
        return CBCU_ERROR_INVALID_VALUE;
    enter();
    if (device_bytes[context->device] + bytes > memory_per_device)
        return leave(CBCU_ERROR_OUT_OF_MEMORY);
    unsigned char *host = malloc(bytes);
    if (host == NULL || !add_allocation(host, bytes, context->device, false)) {
        free(host);
        return leave(CBCU_ERROR_OUT_OF_MEMORY);
    }
    /* Fresh device memory holds garbage, which a missing zero-fill would show. */
    memset(host, 0xA5, bytes);
    device_bytes[context->device] += bytes;
    counters.device_allocs++;
    counters.device_bytes_in_use += bytes;
    *ptr = (cbcu_deviceptr)((uintptr_t)host + DEVICE_TAG);
    return leave(CBCU_SUCCESS);
}

FAKE_API cbcu_result cuMemFree_v2(cbcu_deviceptr ptr)
{
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    enter();
    run_all_queues(); /* freeing waits for the device, as cuMemFree does */
    allocation *a = ptr >= DEVICE_TAG ? find_allocation((uintptr_t)ptr - DEVICE_TAG, 0, false) : NULL;
    if (a == NULL || (uintptr_t)a->host != (uintptr_t)ptr - DEVICE_TAG)
        return leave(CBCU_ERROR_INVALID_VALUE);
    device_bytes[a->device] -= a->size;
    counters.device_frees++;
    counters.device_bytes_in_use -= a->size;
    free(a->host);
    remove_allocation(a);
    return leave(CBCU_SUCCESS);
}

FAKE_API cbcu_result cuMemHostAlloc(void **ptr, size_t bytes, unsigned int flags)
{
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (bytes == 0 || (flags & ~(unsigned)CBCU_MEMHOSTALLOC_PORTABLE) != 0)
        return CBCU_ERROR_INVALID_VALUE;
    enter();
    /* Offset from what malloc returned, so that free() of it by mistake is caught at once. */
    unsigned char *block = malloc(bytes + PINNED_HEADER);
    if (block == NULL || !add_allocation(block + PINNED_HEADER, bytes, -1, true)) {
        free(block);
        return leave(CBCU_ERROR_OUT_OF_MEMORY);
    }
    counters.pinned_allocs++;
    counters.pinned_bytes_in_use += bytes;
    *ptr = block + PINNED_HEADER;
    return leave(CBCU_SUCCESS);
}

FAKE_API cbcu_result cuMemFreeHost(void *ptr)
{
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    enter();
    run_all_queues();
    allocation *a = find_allocation((uintptr_t)ptr, 0, true);
    if (a == NULL || a->host != ptr)
        return leave(CBCU_ERROR_INVALID_VALUE);
    counters.pinned_frees++;
    counters.pinned_bytes_in_use -= a->size;
    free(a->host - PINNED_HEADER);
    remove_allocation(a);
    return leave(CBCU_SUCCESS);
}

static void *device_range_locked(cbcu_deviceptr ptr, size_t bytes)
{
    if (ptr < DEVICE_TAG)
        return NULL;
    allocation *a = find_allocation((uintptr_t)ptr - DEVICE_TAG, bytes, false);
    return a != NULL ? (void *)((uintptr_t)ptr - DEVICE_TAG) : NULL;
}

static bool is_pinned(const void *host, size_t bytes)
{
    return find_allocation((uintptr_t)host, bytes, true) != NULL;
}

/* Runs a copy in stream order: after what the stream has queued. */
static cbcu_result copy_now(void *stream_handle, void *dst, const void *src, size_t bytes)
{
    fake_stream *stream = find_stream(stream_handle);
    if (stream == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    fake_stream_flush(stream_handle);
    memmove(dst, src, bytes);
    return CBCU_SUCCESS;
}

FAKE_API cbcu_result cuMemcpyHtoDAsync_v2(cbcu_deviceptr dst, const void *src, size_t bytes, cbcu_stream stream_handle)
{
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    enter();
    void *to = device_range_locked(dst, bytes);
    fake_stream *stream = find_stream(stream_handle);
    if (to == NULL || src == NULL)
        return leave(CBCU_ERROR_INVALID_VALUE);
    if (stream == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    counters.host_to_device++;
    counters.host_to_device_bytes += bytes;
    counters.async_copies++;
    pending_copy *copy = calloc(1, sizeof *copy);
    if (copy == NULL)
        return leave(CBCU_ERROR_OUT_OF_MEMORY);
    copy->dst = to;
    copy->bytes = bytes;
    if (is_pinned(src, bytes)) {
        copy->src = src;
    } else {
        copy->snapshot = malloc(bytes);
        if (copy->snapshot == NULL) {
            free(copy);
            return leave(CBCU_ERROR_OUT_OF_MEMORY);
        }
        memcpy(copy->snapshot, src, bytes);
    }
    if (stream->tail != NULL)
        stream->tail->next = copy;
    else
        stream->head = copy;
    stream->tail = copy;
    return leave(CBCU_SUCCESS);
}

FAKE_API cbcu_result cuMemcpyDtoHAsync_v2(void *dst, cbcu_deviceptr src, size_t bytes, cbcu_stream stream)
{
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    enter();
    void *from = device_range_locked(src, bytes);
    if (from == NULL || dst == NULL)
        return leave(CBCU_ERROR_INVALID_VALUE);
    counters.device_to_host++;
    counters.device_to_host_bytes += bytes;
    return leave(copy_now(stream, dst, from, bytes));
}

FAKE_API cbcu_result cuMemcpyDtoDAsync_v2(cbcu_deviceptr dst, cbcu_deviceptr src, size_t bytes, cbcu_stream stream)
{
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    enter();
    void *to = device_range_locked(dst, bytes), *from = device_range_locked(src, bytes);
    if (to == NULL || from == NULL)
        return leave(CBCU_ERROR_INVALID_VALUE);
    counters.device_to_device++;
    counters.device_to_device_bytes += bytes;
    return leave(copy_now(stream, to, from, bytes));
}

FAKE_API cbcu_result cuMemsetD8Async(cbcu_deviceptr dst, unsigned char value, size_t count, cbcu_stream stream)
{
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    enter();
    void *to = device_range_locked(dst, count);
    if (to == NULL)
        return leave(CBCU_ERROR_INVALID_VALUE);
    if (find_stream(stream) == NULL)
        return leave(CUDA_ERROR_INVALID_HANDLE);
    fake_stream_flush(stream);
    memset(to, value, count);
    counters.memsets++;
    return leave(CBCU_SUCCESS);
}

FAKE_API cbcu_result cuStreamSynchronize(cbcu_stream stream)
{
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    return fake_stream_flush(stream);
}

FAKE_API cbcu_result cuStreamCreate(cbcu_stream *out, unsigned int flags)
{
    (void)flags;
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL)
        return CBCU_ERROR_OUT_OF_MEMORY;
    enter();
    stream->next_stream = streams;
    streams = stream;
    *out = (cbcu_stream)stream;
    return leave(CBCU_SUCCESS);
}

FAKE_API cbcu_result cuStreamDestroy_v2(cbcu_stream handle)
{
    enter();
    for (fake_stream **link = &streams; *link != NULL; link = &(*link)->next_stream)
        if (*link == (fake_stream *)handle) {
            fake_stream *stream = *link;
            run_queue(stream); /* destroying lets queued work finish */
            *link = stream->next_stream;
            free(stream);
            return leave(CBCU_SUCCESS);
        }
    return leave(CUDA_ERROR_INVALID_HANDLE);
}

FAKE_API cbcu_result cuPointerGetAttribute(void *data, cbcu_pointer_attribute attribute, cbcu_deviceptr ptr)
{
    enter();
    allocation *a = ptr >= DEVICE_TAG ? find_allocation((uintptr_t)ptr - DEVICE_TAG, 0, false) : NULL;
    if (a == NULL)
        return leave(CBCU_ERROR_INVALID_VALUE);
    switch (attribute) {
    case CBCU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data = CBCU_MEMORYTYPE_DEVICE; break;
    case CBCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = a->device; break;
    case CBCU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(cbcu_deviceptr *)data = (uintptr_t)a->host + DEVICE_TAG; break;
    case CBCU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = a->size; break;
    default: return leave(CBCU_ERROR_INVALID_VALUE);
    }
    return leave(CBCU_SUCCESS);
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
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
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
    enter();
    counters.module_loads++;
    leave(0);
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

FAKE_API cbcu_result cuLaunchKernel(cbcu_function function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                    unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                    unsigned int shared_bytes, cbcu_stream stream, void **params, void **extra)
{
    (void)shared_bytes;
    if (current_context() == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    const fake_kernel *kernel = (const fake_kernel *)function;
    if (kernel == NULL || params == NULL || extra != NULL || grid_x == 0 || grid_y != 1 || grid_z != 1 ||
        block_x == 0 || block_x > 1024 || block_x % 32 != 0 || block_y != 1 || block_z != 1)
        return CBCU_ERROR_INVALID_VALUE;
    enter();
    const int flushed = fake_stream_flush(stream);
    if (flushed != CBCU_SUCCESS)
        return leave(flushed);
    counters.launches++;
    return leave(kernel->run(params, grid_x, block_x));
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
    };
    (void)flags;
    if (!initialised)
        return CBCU_ERROR_NOT_INITIALIZED;
    enter();
    counters.proc_address_lookups++;
    leave(0);
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
