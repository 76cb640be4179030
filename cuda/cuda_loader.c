/* SPDX-License-Identifier: BSD-2-Clause */
#define _GNU_SOURCE /* dladdr */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

static cb_cuda_driver driver;
static cb_cuda_nvrtc nvrtc;
static cb_cuda_cublas cublas;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static pthread_once_t cublas_once = PTHREAD_ONCE_INIT;
static cb_cuda_nccl nccl;
static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;

static void set_message(char message[CB_CUDA_MESSAGE_BYTES], const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void set_message(char message[CB_CUDA_MESSAGE_BYTES], const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(message, CB_CUDA_MESSAGE_BYTES, format, args);
    va_end(args);
}

/* Where a loaded library really is, for messages and reports. */
static void where_loaded(void *symbol, const char *fallback, char path[CB_CUDA_PATH_BYTES])
{
    Dl_info info;
    const char *found = symbol != NULL && dladdr(symbol, &info) != 0 && info.dli_fname != NULL ? info.dli_fname : fallback;
    snprintf(path, CB_CUDA_PATH_BYTES, "%s", found);
}

/* Opens the first candidate that loads: the override (environment variable) alone when set, so
 * that a test naming a missing file never finds the real library instead; else the SONAME and,
 * for the toolkit's libraries, the toolkit's lib64. What each failed try said goes into `tried`
 * for the message. */
static void *open_library(const char *override_variable, const char *soname, bool toolkit, char *tried,
                          size_t tried_size)
{
    const char *override = getenv(override_variable);
    char candidates[3][CB_CUDA_PATH_BYTES];
    int count = 0;
    if (override != NULL && override[0] != '\0') {
        snprintf(candidates[count++], CB_CUDA_PATH_BYTES, "%s", override);
    } else {
        snprintf(candidates[count++], CB_CUDA_PATH_BYTES, "%s", soname);
        const char *cuda_home = getenv("CUDA_HOME");
        if (toolkit && cuda_home != NULL && cuda_home[0] != '\0' && strcmp(cuda_home, "/usr/local/cuda") != 0)
            snprintf(candidates[count++], CB_CUDA_PATH_BYTES, "%s/lib64/%s", cuda_home, soname);
        if (toolkit)
            snprintf(candidates[count++], CB_CUDA_PATH_BYTES, "/usr/local/cuda/lib64/%s", soname);
    }
    tried[0] = '\0';
    for (int i = 0; i < count; ++i) {
        void *handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (handle != NULL)
            return handle;
        const char *why = dlerror();
        const size_t used = strlen(tried);
        snprintf(tried + used, tried_size - used, "%s%s", used > 0 ? "; " : "", why != NULL ? why : candidates[i]);
    }
    return NULL;
}

/* ---- driver ---------------------------------------------------------------------------------- */

/* cuGetProcAddress takes the name without its _v2 suffix and hands out the variant for the
 * requested CUDA version. */
static void base_name(const char *symbol, char *base, size_t size)
{
    snprintf(base, size, "%s", symbol);
    char *suffix = strrchr(base, '_');
    if (suffix != NULL && suffix[1] == 'v' && suffix[2] >= '0' && suffix[2] <= '9')
        *suffix = '\0';
}

static void *driver_symbol(void *handle, cbcu_get_proc_address_fn get_proc_address, const char *symbol)
{
    if (get_proc_address != NULL) {
        char base[96];
        base_name(symbol, base, sizeof base);
        void *function = NULL;
        cbcu_proc_address_result found = 0;
        if (get_proc_address(base, &function, CB_CUDA_API_VERSION, CBCU_GET_PROC_ADDRESS_DEFAULT, &found) == CBCU_SUCCESS &&
            function != NULL)
            return function;
    }
    return dlsym(handle, symbol);
}

static bool resolve_driver(void *handle, cbcu_get_proc_address_fn get_proc_address)
{
#define CB_RESOLVE(ret, symbol, params) \
    *(void **)&driver.api.symbol = driver_symbol(handle, get_proc_address, #symbol); \
    if (driver.api.symbol == NULL) { \
        driver.status = CBLOB_ERR_DRIVER_TOO_OLD; \
        set_message(driver.message, "the CUDA driver at %s lacks %s: it is older than cblob needs (CUDA 12.0 or newer)", \
                    driver.path, #symbol); \
        return false; \
    }
    CB_CUDA_DRIVER_FUNCTIONS(CB_RESOLVE)
#undef CB_RESOLVE
    return true;
}

const char *cb_cuda_error_name(cbcu_result result)
{
    const char *name = NULL;
    if (driver.api.cuGetErrorName != NULL && driver.api.cuGetErrorName(result, &name) == CBCU_SUCCESS && name != NULL)
        return name;
    switch (result) {
    case CBCU_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CBCU_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CBCU_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CBCU_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    default: return "a CUDA error";
    }
}

static void describe_init_failure(cbcu_result result)
{
    const int major = driver.version / 1000, minor = driver.version % 1000 / 10;
    switch (result) {
    case CBCU_ERROR_STUB_LIBRARY:
        driver.status = CBLOB_ERR_STUB_DRIVER;
        set_message(driver.message,
                    "%s is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver: install the "
                    "NVIDIA driver, or take the toolkit's lib64/stubs off the library path",
                    driver.path);
        return;
    case CBCU_ERROR_NO_DEVICE:
        driver.status = CBLOB_ERR_NO_DEVICE;
        set_message(driver.message, "the CUDA driver (%s, CUDA %d.%d) found no CUDA device (CUDA_ERROR_NO_DEVICE)",
                    driver.path, major, minor);
        return;
    case CBCU_ERROR_SYSTEM_DRIVER_MISMATCH:
        driver.status = CBLOB_ERR_DRIVER_TOO_OLD;
        set_message(driver.message,
                    "the NVIDIA kernel driver is older than the CUDA driver library %s (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH): "
                    "update the NVIDIA driver, or reboot after updating it",
                    driver.path);
        return;
    default:
        driver.status = CBLOB_ERR_DEVICE;
        set_message(driver.message, "cuInit failed with %s (%d); the CUDA driver at %s cannot be used",
                    cb_cuda_error_name(result), (int)result, driver.path);
        return;
    }
}

static void load_driver(void)
{
    char tried[CB_CUDA_MESSAGE_BYTES - 128];
    void *handle = open_library("CBLOB_CUDA_DRIVER", "libcuda.so.1", false, tried, sizeof tried);
    if (handle == NULL) {
        driver.status = CBLOB_ERR_NO_DRIVER;
        set_message(driver.message, "no CUDA driver: %s (install the NVIDIA driver to use a GPU)", tried);
        return;
    }
    cbcu_init_fn init = (cbcu_init_fn)dlsym(handle, "cuInit");
    where_loaded((void *)init, getenv("CBLOB_CUDA_DRIVER") ? getenv("CBLOB_CUDA_DRIVER") : "libcuda.so.1", driver.path);
    if (init == NULL) {
        driver.status = CBLOB_ERR_NO_DRIVER;
        set_message(driver.message, "%s has no cuInit: it is not a CUDA driver", driver.path);
        return;
    }
    /* Works before cuInit, and even from a driver that then fails: reports want the version. */
    *(void **)&driver.api.cuDriverGetVersion = dlsym(handle, "cuDriverGetVersion");
    if (driver.api.cuDriverGetVersion == NULL || driver.api.cuDriverGetVersion(&driver.version) != CBCU_SUCCESS)
        driver.version = 0;
    const cbcu_result initialised = init(0);
    if (initialised != CBCU_SUCCESS) {
        *(void **)&driver.api.cuGetErrorName = dlsym(handle, "cuGetErrorName");
        describe_init_failure(initialised);
        return;
    }
    cbcu_get_proc_address_fn get_proc_address = (cbcu_get_proc_address_fn)dlsym(handle, "cuGetProcAddress_v2");
    if (!resolve_driver(handle, get_proc_address))
        return;
    if (driver.api.cuDeviceGetCount(&driver.device_count) != CBCU_SUCCESS || driver.device_count <= 0) {
        driver.device_count = 0;
        driver.status = CBLOB_ERR_NO_DEVICE;
        set_message(driver.message, "the CUDA driver (%s, CUDA %d.%d) reports no CUDA device", driver.path,
                    driver.version / 1000, driver.version % 1000 / 10);
        return;
    }
    driver.status = CBLOB_OK;
}

const cb_cuda_driver *cb_cuda_driver_get(void)
{
    pthread_once(&driver_once, load_driver);
    return &driver;
}

/* ---- NVRTC and cuBLAS -------------------------------------------------------------------------- */

static void load_nvrtc(void)
{
    char tried[CB_CUDA_MESSAGE_BYTES - 160];
    void *handle = open_library("CBLOB_NVRTC_LIBRARY", "libnvrtc.so.13", true, tried, sizeof tried);
    if (handle == NULL) {
        nvrtc.status = CBLOB_ERR_NVRTC_MISSING;
        set_message(nvrtc.message, "no NVRTC: %s (install CUDA 13's NVRTC runtime, or name it with CBLOB_NVRTC_LIBRARY)",
                    tried);
        return;
    }
    where_loaded(dlsym(handle, "nvrtcVersion"), "libnvrtc.so.13", nvrtc.path);
#define CB_RESOLVE(ret, symbol, params) \
    *(void **)&nvrtc.api.symbol = dlsym(handle, #symbol); \
    if (nvrtc.api.symbol == NULL) { \
        nvrtc.status = CBLOB_ERR_NVRTC_MISSING; \
        set_message(nvrtc.message, "the NVRTC library at %s lacks %s", nvrtc.path, #symbol); \
        return; \
    }
    CB_NVRTC_FUNCTIONS(CB_RESOLVE)
#undef CB_RESOLVE
    int count = 0;
    if (nvrtc.api.nvrtcVersion(&nvrtc.major, &nvrtc.minor) != CBNV_SUCCESS ||
        nvrtc.api.nvrtcGetNumSupportedArchs(&count) != CBNV_SUCCESS || count <= 0 || count > CB_NVRTC_MAX_ARCHS ||
        nvrtc.api.nvrtcGetSupportedArchs(nvrtc.archs) != CBNV_SUCCESS) {
        nvrtc.status = CBLOB_ERR_NVRTC_MISSING;
        set_message(nvrtc.message, "the NVRTC library at %s does not say its version or architectures", nvrtc.path);
        return;
    }
    nvrtc.arch_count = count;
    nvrtc.status = CBLOB_OK;
}

const cb_cuda_nvrtc *cb_cuda_nvrtc_get(void)
{
    pthread_once(&nvrtc_once, load_nvrtc);
    return &nvrtc;
}

static void load_cublas(void)
{
    char tried[CB_CUDA_MESSAGE_BYTES - 160];
    void *handle = open_library("CBLOB_CUBLAS_LIBRARY", "libcublas.so.13", true, tried, sizeof tried);
    if (handle == NULL) {
        cublas.status = CBLOB_ERR_CUBLAS_MISSING;
        set_message(cublas.message, "no cuBLAS: %s (install CUDA 13's cuBLAS, or name it with CBLOB_CUBLAS_LIBRARY)",
                    tried);
        return;
    }
    where_loaded(dlsym(handle, "cublasCreate_v2"), "libcublas.so.13", cublas.path);
#define CB_RESOLVE(ret, symbol, params) \
    *(void **)&cublas.api.symbol = dlsym(handle, #symbol); \
    if (cublas.api.symbol == NULL) { \
        cublas.status = CBLOB_ERR_CUBLAS_MISSING; \
        set_message(cublas.message, "the cuBLAS library at %s lacks %s", cublas.path, #symbol); \
        return; \
    }
    CB_CUBLAS_FUNCTIONS(CB_RESOLVE)
#undef CB_RESOLVE
    if (cublas.api.cublasGetProperty(CBBL_MAJOR_VERSION, &cublas.major) != CBBL_STATUS_SUCCESS ||
        cublas.api.cublasGetProperty(CBBL_MINOR_VERSION, &cublas.minor) != CBBL_STATUS_SUCCESS)
        cublas.major = cublas.minor = 0;
    cublas.status = CBLOB_OK;
}

const cb_cuda_cublas *cb_cuda_cublas_get(void)
{
    pthread_once(&cublas_once, load_cublas);
    return &cublas;
}

static void load_nccl(void)
{
    char tried[CB_CUDA_MESSAGE_BYTES - 160];
    void *handle = open_library("CBLOB_NCCL_LIBRARY", "libnccl.so.2", true, tried, sizeof tried);
    if (handle == NULL) {
        nccl.status = CBLOB_ERR_NCCL_MISSING;
        set_message(nccl.message, "no NCCL: %s (install NCCL 2, or name it with CBLOB_NCCL_LIBRARY)", tried);
        return;
    }
    where_loaded(dlsym(handle, "ncclGetUniqueId"), "libnccl.so.2", nccl.path);
#define CB_RESOLVE(ret, symbol, params) \
    *(void **)&nccl.api.symbol = dlsym(handle, #symbol); \
    if (nccl.api.symbol == NULL) { \
        nccl.status = CBLOB_ERR_NCCL_MISSING; \
        set_message(nccl.message, "the NCCL library at %s lacks %s", nccl.path, #symbol); \
        return; \
    }
    CB_NCCL_FUNCTIONS(CB_RESOLVE)
#undef CB_RESOLVE
    if (nccl.api.ncclGetVersion(&nccl.version) != CBNC_SUCCESS)
        nccl.version = 0;
    nccl.status = CBLOB_OK;
}

const cb_cuda_nccl *cb_cuda_nccl_get(void)
{
    pthread_once(&nccl_once, load_nccl);
    return &nccl;
}

/* ---- the stack ------------------------------------------------------------------------------ */

cblob_status cb_cuda_nvrtc_ready(const cb_cuda_nvrtc **out)
{
    const cb_cuda_nvrtc *compiler = cb_cuda_nvrtc_get();
    if (compiler->status != CBLOB_OK)
        return cb_fail(compiler->status, "%s", compiler->message);
    *out = compiler;
    return CBLOB_OK;
}

cblob_status cb_cuda_stack_status(int32_t *device_count, char *message, size_t size)
{
    const cb_cuda_driver *cuda = cb_cuda_driver_get();
    if (cuda->status != CBLOB_OK) {
        snprintf(message, size, "%s", cuda->message);
        return cuda->status;
    }
    const cb_cuda_nvrtc *compiler = cb_cuda_nvrtc_get();
    if (compiler->status != CBLOB_OK) {
        snprintf(message, size, "%s", compiler->message);
        return compiler->status;
    }
    /* NVRTC's cubins and PTX need a driver of at least its major CUDA version. */
    if (cuda->version < compiler->major * 1000) {
        snprintf(message, size,
                 "the CUDA driver (%s) supports CUDA %d.%d, but kernels compiled by NVRTC %d.%d need a driver for "
                 "CUDA %d.0 or newer: update the NVIDIA driver",
                 cuda->path, cuda->version / 1000, cuda->version % 1000 / 10, compiler->major, compiler->minor,
                 compiler->major);
        return CBLOB_ERR_DRIVER_TOO_OLD;
    }
    const cb_cuda_cublas *blas = cb_cuda_cublas_get();
    if (blas->status != CBLOB_OK) {
        snprintf(message, size, "%s", blas->message);
        return blas->status;
    }
    *device_count = cuda->device_count;
    message[0] = '\0';
    return CBLOB_OK;
}

cblob_status cb_cuda_stack(int32_t *device_count)
{
    char message[CB_CUDA_MESSAGE_BYTES];
    const cblob_status status = cb_cuda_stack_status(device_count, message, sizeof message);
    return status == CBLOB_OK ? CBLOB_OK : cb_fail(status, "%s", message);
}
