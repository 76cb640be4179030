/* SPDX-License-Identifier: BSD-2-Clause */
/* What the machine's GPU stack is, and the kernel cache: the core's side of the calls, each a
 * thin layer over the GPU backend's device and cache parts (backend.h). A build without a GPU
 * backend answers as a machine without a driver does. */
#include "backend.h"
#include "context.h"
#include "status.h"

static cblob_status gpu_backend(const cb_backend **out)
{
    const cb_backend *backend = cb_gpu_backend();
    if (backend == NULL)
        return cb_fail(CBLOB_ERR_NO_DRIVER, "this build of cblob has no GPU backend");
    *out = backend;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_gpu_probe(int32_t *out_device_count)
{
    CB_ENTER();
    CB_REQUIRE(out_device_count);
    const cb_backend *backend = NULL;
    CB_TRY(gpu_backend(&backend));
    int32_t count = 0;
    CB_TRY(backend->device->probe(&count));
    *out_device_count = count;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_gpu_versions(int32_t *out_driver_version, int32_t *out_nvrtc_version,
                                          int32_t *out_cublas_version)
{
    CB_ENTER();
    CB_REQUIRE(out_driver_version);
    CB_REQUIRE(out_nvrtc_version);
    CB_REQUIRE(out_cublas_version);
    int32_t driver = 0, nvrtc = 0, cublas = 0;
    const cb_backend *backend = cb_gpu_backend();
    if (backend != NULL)
        backend->device->versions(&driver, &nvrtc, &cublas);
    *out_driver_version = driver;
    *out_nvrtc_version = nvrtc;
    *out_cublas_version = cublas;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_gpu_device_name(int32_t device_index, char *buffer, size_t buffer_size,
                                             size_t *out_length)
{
    CB_ENTER();
    CB_REQUIRE(out_length);
    if (device_index < 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "device_index is %d; devices are numbered from 0", (int)device_index);
    if (buffer == NULL && buffer_size > 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "buffer is NULL but buffer_size is %zu", buffer_size);
    const cb_backend *backend = NULL;
    CB_TRY(gpu_backend(&backend));
    char name[256];
    CB_TRY(backend->device->name(device_index, name, sizeof name));
    return cb_return_text(name, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_gpu_report(char *buffer, size_t buffer_size, size_t *out_length)
{
    CB_ENTER();
    char text[16384] = "gpu: this build of cblob has no GPU backend\n";
    const cb_backend *backend = cb_gpu_backend();
    if (backend != NULL)
        backend->device->report(text, sizeof text);
    return cb_return_text(text, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_kernel_cache_mode(cblob_cache_mode *out_mode)
{
    CB_ENTER();
    CB_REQUIRE(out_mode);
    const cb_backend *backend = cb_gpu_backend();
    *out_mode = backend != NULL && backend->cache != NULL ? backend->cache->mode() : CBLOB_KERNEL_CACHE_OFF;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_kernel_cache_dir(char *buffer, size_t buffer_size, size_t *out_length)
{
    CB_ENTER();
    char text[4096] = "";
    const cb_backend *backend = cb_gpu_backend();
    if (backend != NULL && backend->cache != NULL)
        backend->cache->dir(text, sizeof text);
    return cb_return_text(text, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_kernel_cache_warm_up(cblob_context *context, int32_t compute_capability,
                                                  int32_t *out_compiled)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(out_compiled);
    if (compute_capability < 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "compute_capability is %d; give major * 10 + minor (80 for 8.0), or 0 for the context's device",
                       (int)compute_capability);
    const cb_backend *backend = NULL;
    CB_TRY(gpu_backend(&backend));
    const cb_device *device = NULL;
    if (compute_capability == 0)
        CB_TRY(cb_context_device(context, &device));
    int32_t compiled = 0;
    CB_TRY(backend->cache->warm_up(device, compute_capability, &compiled));
    *out_compiled = compiled;
    return CBLOB_OK;
}
