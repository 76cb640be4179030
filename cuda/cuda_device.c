/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_device.h"
#include "alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_queue.h"
#include "status.h"

static cb_cuda_device_state *devices; /* one per device the driver reports; never freed */
static int device_count;
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;

static void make_device_table(void)
{
    const cb_cuda_driver *driver = cb_cuda_driver_get();
    devices = cb_calloc((size_t)driver->device_count, sizeof *devices);
    if (devices == NULL)
        return;
    device_count = driver->device_count;
    for (int i = 0; i < device_count; ++i) {
        pthread_mutex_init(&devices[i].open_lock, NULL);
        devices[i].index = i;
        for (int f = 0; f < CB_CUDA_FAMILY_COUNT; ++f) {
            pthread_mutex_init(&devices[i].families[f].lock, NULL);
            atomic_init(&devices[i].families[f].ready, NULL);
        }
    }
}

const cb_cuda_driver_api *cb_cuda_driver_api_get(void)
{
    return &cb_cuda_driver_get()->api;
}

/* The errors after which the context cannot be used again (CUDA calls them sticky). */
static bool sticky(cbcu_result result)
{
    switch (result) {
    case CBCU_ERROR_ECC_UNCORRECTABLE:
    case CBCU_ERROR_ILLEGAL_ADDRESS:
    case CBCU_ERROR_LAUNCH_TIMEOUT:
    case CBCU_ERROR_ASSERT:
    case CBCU_ERROR_HARDWARE_STACK_ERROR:
    case CBCU_ERROR_ILLEGAL_INSTRUCTION:
    case CBCU_ERROR_MISALIGNED_ADDRESS:
    case CBCU_ERROR_INVALID_ADDRESS_SPACE:
    case CBCU_ERROR_INVALID_PC:
    case CBCU_ERROR_LAUNCH_FAILED: return true;
    default: return false;
    }
}

static pthread_once_t blocking_once = PTHREAD_ONCE_INIT;
static bool blocking;

static void read_blocking(void)
{
    const char *knob = getenv("CBLOB_CUDA_LAUNCH_BLOCKING");
    blocking = knob != NULL && strcmp(knob, "1") == 0;
}

bool cb_cuda_launch_blocking(void)
{
    pthread_once(&blocking_once, read_blocking);
    return blocking;
}

cblob_status cb_cuda_check(cbcu_result result, const char *what)
{
    if (result == CBCU_SUCCESS)
        return CBLOB_OK;
    if (sticky(result))
        return cb_fail(CBLOB_ERR_DEVICE_LOST,
                       "%s failed: the device's context is lost (%s, %d), after a fault in this or an earlier kernel or "
                       "copy; every later GPU call on the device fails: restart the process to use it again (with "
                       "CBLOB_CUDA_LAUNCH_BLOCKING=1 the call that faulted reports it)",
                       what, cb_cuda_error_name(result), (int)result);
    if (result == CBCU_ERROR_OUT_OF_MEMORY)
        return cb_fail(CBLOB_ERR_DEVICE_OUT_OF_MEMORY, "%s: the device is out of memory (CUDA_ERROR_OUT_OF_MEMORY)", what);
    return cb_fail(CBLOB_ERR_DEVICE, "%s failed: %s (%d)", what, cb_cuda_error_name(result), (int)result);
}

cblob_status cb_cuda_queued(const cb_device *device, cbcu_result queued, const char *what)
{
    CB_TRY(cb_cuda_check(queued, what));
    if (!cb_cuda_launch_blocking())
        return CBLOB_OK;
    return cb_cuda_check(cb_cuda_driver_api_get()->cuStreamSynchronize(cb_cuda_stream(device)), what);
}

cblob_status cb_cuda_enter(const cb_cuda_device_state *state)
{
    return cb_cuda_check(cb_cuda_driver_api_get()->cuCtxPushCurrent_v2(state->context), "making the device's context current");
}

void cb_cuda_leave(void)
{
    cbcu_context previous;
    cb_cuda_driver_api_get()->cuCtxPopCurrent_v2(&previous);
}

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static uint64_t pool_threshold = UINT64_MAX;
static char pool_note[160];

static void read_pool_threshold(void)
{
    const char *knob = getenv("CBLOB_CUDA_POOL_RELEASE_THRESHOLD");
    if (knob == NULL || knob[0] == '\0')
        return;
    char *end = NULL;
    errno = 0;
    const unsigned long long bytes = strtoull(knob, &end, 10);
    if (errno != 0 || *end != '\0' || knob[0] == '-' || knob[0] == '+' || knob[0] == ' ')
        snprintf(pool_note, sizeof pool_note,
                 "CBLOB_CUDA_POOL_RELEASE_THRESHOLD='%.40s' is not a number of bytes; keeping everything", knob);
    else
        pool_threshold = bytes;
}

uint64_t cb_cuda_pool_release_threshold(const char **note)
{
    pthread_once(&pool_once, read_pool_threshold);
    if (note != NULL)
        *note = pool_note;
    return pool_threshold;
}

/* cblob's own pool of device memory on the device, keeping what CBLOB_CUDA_POOL_RELEASE_THRESHOLD
 * says at synchronisations. Runs with the device's context current. */
static cblob_status make_pool(cb_cuda_device_state *state)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    cbcu_mempool_props props;
    memset(&props, 0, sizeof props);
    props.allocType = CBCU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CBCU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CBCU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = state->index;
    CB_TRY(cb_cuda_check(api->cuMemPoolCreate(&state->pool, &props), "creating the device's memory pool"));
    cbcu_uint64 threshold = cb_cuda_pool_release_threshold(NULL);
    const cblob_status status = cb_cuda_check(
        api->cuMemPoolSetAttribute(state->pool, CBCU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
        "setting the memory pool's release threshold");
    if (status != CBLOB_OK) {
        api->cuMemPoolDestroy(state->pool);
        state->pool = NULL;
    }
    return status;
}

/* Retains the primary context and reads what the device is. */
static cblob_status describe_device(cb_cuda_device_state *state, const cb_cuda_nvrtc *compiler)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    int major = 0, minor = 0;
    CB_TRY(cb_cuda_check(api->cuDeviceGet(&state->device, state->index), "cuDeviceGet"));
    CB_TRY(cb_cuda_check(api->cuDeviceGetName(state->name, (int)sizeof state->name, state->device), "cuDeviceGetName"));
    CB_TRY(cb_cuda_check(api->cuDeviceGetAttribute(&major, CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, state->device),
                         "reading the compute capability"));
    CB_TRY(cb_cuda_check(api->cuDeviceGetAttribute(&minor, CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, state->device),
                         "reading the compute capability"));
    CB_TRY(cb_cuda_check(api->cuDeviceGetAttribute(&state->multiprocessors, CBCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                   state->device), "reading the multiprocessor count"));
    CB_TRY(cb_cuda_check(api->cuDeviceTotalMem_v2(&state->memory_bytes, state->device), "cuDeviceTotalMem"));
    int pools = 0;
    state->memory_pools = api->cuDeviceGetAttribute(&pools, CBCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, state->device) ==
                              CBCU_SUCCESS && pools != 0;
    state->compute_capability = major * 10 + minor;
    if (state->compute_capability < compiler->archs[0])
        return cb_fail(CBLOB_ERR_NO_DEVICE,
                       "device %d (%s, compute capability %d.%d) is older than NVRTC %d.%d can compile for (%d.%d and newer)",
                       (int)state->index, state->name, major, minor, compiler->major, compiler->minor,
                       compiler->archs[0] / 10, compiler->archs[0] % 10);
    CB_TRY(cb_cuda_check(api->cuDevicePrimaryCtxRetain(&state->context, state->device), "cuDevicePrimaryCtxRetain"));
    if (!state->memory_pools)
        return CBLOB_OK;
    CB_TRY(cb_cuda_enter(state));
    /* A driver that reports pools but cannot make one still has cuMemAlloc. */
    state->memory_pools = make_pool(state) == CBLOB_OK;
    cb_cuda_leave();
    return CBLOB_OK;
}

cblob_status cb_cuda_device_open(int32_t index, cb_cuda_device_state **out)
{
    int32_t count = 0;
    CB_TRY(cb_cuda_stack(&count));
    if (index < 0 || index >= count)
        return cb_fail(CBLOB_ERR_NO_DEVICE, "there is no CUDA device %d: the driver reports %d device%s", (int)index,
                       (int)count, count == 1 ? "" : "s");
    pthread_once(&devices_once, make_device_table);
    if (devices == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the CUDA device table");
    cb_cuda_device_state *state = &devices[index];
    pthread_mutex_lock(&state->open_lock);
    if (!state->opened) {
        state->open_status = describe_device(state, cb_cuda_nvrtc_get());
        if (state->open_status != CBLOB_OK)
            snprintf(state->open_message, sizeof state->open_message, "%s", cb_last_error_message());
        state->opened = true;
    }
    const cblob_status status = state->open_status;
    pthread_mutex_unlock(&state->open_lock);
    if (status != CBLOB_OK) {
        /* The first failure's message already names the call it happened in; repeat its text. */
        const char *text = strstr(state->open_message, ": ");
        return cb_fail(status, "%s", text != NULL ? text + 2 : state->open_message);
    }
    *out = state;
    return CBLOB_OK;
}

cb_cuda_device_state *cb_cuda_device_state_of(const cb_device *device)
{
    return &devices[device->index];
}

cb_cuda_device_state *cb_cuda_device_table(int *count)
{
    *count = device_count;
    return devices;
}
