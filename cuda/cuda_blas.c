/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_blas.h"

#include "cuda_device.h"
#include "cuda_queue.h"
#include "status.h"

static cblob_status check_blas(const cb_cublas_api *api, cbbl_status status, const char *what)
{
    if (status == CBBL_STATUS_SUCCESS)
        return CBLOB_OK;
    const char *name = api->cublasGetStatusName(status);
    /* ALLOC_FAILED: cuBLAS could not get device memory for its workspace. */
    return cb_fail(status == CBBL_STATUS_ALLOC_FAILED ? CBLOB_ERR_DEVICE_OUT_OF_MEMORY : CBLOB_ERR_DEVICE, "%s failed: %s (%d)", what,
                   name != NULL ? name : "a cuBLAS error", (int)status);
}

static cblob_status make_handle(const cb_device *device, cbbl_pointer_mode mode, cbbl_handle *out)
{
    const cb_cublas_api *api = &cb_cuda_cublas_get()->api;
    CB_TRY(check_blas(api, api->cublasCreate_v2(out), "cublasCreate"));
    cblob_status status = check_blas(api, api->cublasSetPointerMode_v2(*out, mode), "cublasSetPointerMode");
    if (status == CBLOB_OK)
        status = check_blas(api, api->cublasSetStream_v2(*out, cb_cuda_stream(device)), "cublasSetStream");
    if (status != CBLOB_OK) {
        api->cublasDestroy_v2(*out);
        *out = NULL;
    }
    return status;
}

/* The queue's handle for sums (device pointer mode) or for calls with a host scalar, made at
 * first use; the queue's lock is held only for that. Runs with the device's context current. */
static cblob_status handle_of(const cb_device *device, bool sums, cbbl_handle *out)
{
    cb_queue *queue = device->queue;
    cblob_status status = CBLOB_OK;
    pthread_mutex_lock(&queue->lock);
    cbbl_handle *handle = sums ? &queue->blas_sums : &queue->blas_scalars;
    if (*handle == NULL)
        status = make_handle(device, sums ? CBBL_POINTER_MODE_DEVICE : CBBL_POINTER_MODE_HOST, handle);
    *out = *handle;
    pthread_mutex_unlock(&queue->lock);
    return status;
}

/* A sum: cuBLAS writes it into a result slot on the stream; the stream is waited for with no
 * lock held. */
typedef cbbl_status (*sum_call)(const cb_cublas_api *api, cbbl_handle handle, cblob_dtype dtype, int64_t n,
                                const void *x, cbcu_deviceptr result);

static cbbl_status call_asum(const cb_cublas_api *api, cbbl_handle handle, cblob_dtype dtype, int64_t n, const void *x,
                             cbcu_deviceptr result)
{
    if (dtype == CBLOB_DTYPE_FLOAT32)
        return api->cublasSasum_v2_64(handle, n, x, 1, (float *)(uintptr_t)result);
    return api->cublasDasum_v2_64(handle, n, x, 1, (double *)(uintptr_t)result);
}

static cbbl_status call_sumsq(const cb_cublas_api *api, cbbl_handle handle, cblob_dtype dtype, int64_t n, const void *x,
                              cbcu_deviceptr result)
{
    if (dtype == CBLOB_DTYPE_FLOAT32)
        return api->cublasSdot_v2_64(handle, n, x, 1, x, 1, (float *)(uintptr_t)result);
    return api->cublasDdot_v2_64(handle, n, x, 1, x, 1, (double *)(uintptr_t)result);
}

static cblob_status sum(const cb_device *device, cblob_dtype dtype, int64_t n, const void *x, sum_call call,
                        const char *what, double *out)
{
    if (n == 0) {
        *out = 0;
        return CBLOB_OK;
    }
    const cb_cublas_api *api = &cb_cuda_cublas_get()->api;
    cb_cuda_slot slot;
    CB_TRY(cb_cuda_slot_take(device, &slot));
    cblob_status status = cb_cuda_enter(cb_cuda_device_state_of(device));
    if (status == CBLOB_OK) {
        cbbl_handle handle = NULL;
        status = handle_of(device, true, &handle);
        if (status == CBLOB_OK)
            status = check_blas(api, call(api, handle, dtype, n, x, slot.device), what);
        if (status == CBLOB_OK)
            status = cb_cuda_check(cb_cuda_driver_api_get()->cuStreamSynchronize(cb_cuda_stream(device)), what);
        cb_cuda_leave();
    }
    if (status == CBLOB_OK)
        *out = dtype == CBLOB_DTYPE_FLOAT32 ? (double)*(const float *)slot.host : *slot.host;
    cb_cuda_slot_give(device, slot);
    return status;
}

cblob_status cb_cublas_asum(const cb_device *device, cblob_dtype dtype, int64_t n, const void *x, double *out)
{
    return sum(device, dtype, n, x, call_asum, dtype == CBLOB_DTYPE_FLOAT32 ? "cublasSasum" : "cublasDasum", out);
}

cblob_status cb_cublas_sumsq(const cb_device *device, cblob_dtype dtype, int64_t n, const void *x, double *out)
{
    return sum(device, dtype, n, x, call_sumsq, dtype == CBLOB_DTYPE_FLOAT32 ? "cublasSdot" : "cublasDdot", out);
}

/* axpy and scal: queued with the scalar read from host memory at the call. */
static cblob_status with_scalars(const cb_device *device, cbbl_handle *handle)
{
    CB_TRY(cb_cuda_enter(cb_cuda_device_state_of(device)));
    const cblob_status status = handle_of(device, false, handle);
    if (status != CBLOB_OK)
        cb_cuda_leave();
    return status;
}

static cblob_status done(const cb_device *device, cbbl_status result, const char *what)
{
    cblob_status status = check_blas(&cb_cuda_cublas_get()->api, result, what);
    if (status == CBLOB_OK)
        status = cb_cuda_queued(device, CBCU_SUCCESS, what);
    cb_cuda_leave();
    return status;
}

cblob_status cb_cublas_axpy(const cb_device *device, cblob_dtype dtype, int64_t n, double alpha, const void *x, void *y)
{
    if (n == 0)
        return CBLOB_OK;
    const cb_cublas_api *api = &cb_cuda_cublas_get()->api;
    cbbl_handle handle;
    CB_TRY(with_scalars(device, &handle));
    if (dtype == CBLOB_DTYPE_FLOAT32) {
        const float a = (float)alpha;
        return done(device, api->cublasSaxpy_v2_64(handle, n, &a, x, 1, y, 1), "cublasSaxpy");
    }
    return done(device, api->cublasDaxpy_v2_64(handle, n, &alpha, x, 1, y, 1), "cublasDaxpy");
}

cblob_status cb_cublas_scale(const cb_device *device, cblob_dtype dtype, int64_t n, double alpha, void *x)
{
    if (n == 0)
        return CBLOB_OK;
    const cb_cublas_api *api = &cb_cuda_cublas_get()->api;
    cbbl_handle handle;
    CB_TRY(with_scalars(device, &handle));
    if (dtype == CBLOB_DTYPE_FLOAT32) {
        const float a = (float)alpha;
        return done(device, api->cublasSscal_v2_64(handle, n, &a, x, 1), "cublasSscal");
    }
    return done(device, api->cublasDscal_v2_64(handle, n, &alpha, x, 1), "cublasDscal");
}
