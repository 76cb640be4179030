/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_blas.h"

#include "cuda_device.h"
#include "cuda_queue.h"
#include "status.h"

/* A BLAS call holds the device's handle (created on first use, with host pointer mode so sums
 * land in host memory) pointed at the caller's stream, with the device's context current. */
typedef struct blas_call {
    cb_cuda_device_state *state;
    const cb_cublas_api *api;
} blas_call;

static cblob_status check_blas(const cb_cublas_api *api, cbbl_status status, const char *what)
{
    if (status == CBBL_STATUS_SUCCESS)
        return CBLOB_OK;
    const char *name = api->cublasGetStatusName(status);
    /* ALLOC_FAILED: cuBLAS could not get device memory for its workspace. */
    return cb_fail(status == CBBL_STATUS_ALLOC_FAILED ? CBLOB_ERR_DEVICE_OUT_OF_MEMORY : CBLOB_ERR_DEVICE, "%s failed: %s (%d)", what,
                   name != NULL ? name : "a cuBLAS error", (int)status);
}

static cblob_status begin(const cb_device *device, blas_call *call)
{
    call->state = cb_cuda_device_state_of(device);
    call->api = &cb_cuda_cublas_get()->api;
    pthread_mutex_lock(&call->state->blas_lock);
    cblob_status status = cb_cuda_enter(call->state);
    if (status != CBLOB_OK) {
        pthread_mutex_unlock(&call->state->blas_lock);
        return status;
    }
    if (call->state->blas == NULL) {
        status = check_blas(call->api, call->api->cublasCreate_v2(&call->state->blas), "cublasCreate");
        if (status == CBLOB_OK)
            status = check_blas(call->api, call->api->cublasSetPointerMode_v2(call->state->blas, CBBL_POINTER_MODE_HOST),
                                "cublasSetPointerMode");
    }
    if (status == CBLOB_OK)
        status = check_blas(call->api, call->api->cublasSetStream_v2(call->state->blas, cb_cuda_stream(device)),
                            "cublasSetStream");
    if (status != CBLOB_OK) {
        cb_cuda_leave();
        pthread_mutex_unlock(&call->state->blas_lock);
    }
    return status;
}

static cblob_status end(blas_call *call, cbbl_status result, const char *what)
{
    cb_cuda_leave();
    pthread_mutex_unlock(&call->state->blas_lock);
    return check_blas(call->api, result, what);
}

cblob_status cb_cublas_asum(const cb_device *device, cblob_dtype dtype, int64_t n, const void *x, double *out)
{
    if (n == 0) {
        *out = 0;
        return CBLOB_OK;
    }
    blas_call call;
    CB_TRY(begin(device, &call));
    if (dtype == CBLOB_DTYPE_FLOAT32) {
        float sum = 0;
        CB_TRY(end(&call, call.api->cublasSasum_v2_64(call.state->blas, n, x, 1, &sum), "cublasSasum"));
        *out = sum;
    } else {
        double sum = 0;
        CB_TRY(end(&call, call.api->cublasDasum_v2_64(call.state->blas, n, x, 1, &sum), "cublasDasum"));
        *out = sum;
    }
    return CBLOB_OK;
}

cblob_status cb_cublas_sumsq(const cb_device *device, cblob_dtype dtype, int64_t n, const void *x, double *out)
{
    if (n == 0) {
        *out = 0;
        return CBLOB_OK;
    }
    blas_call call;
    CB_TRY(begin(device, &call));
    if (dtype == CBLOB_DTYPE_FLOAT32) {
        float sum = 0;
        CB_TRY(end(&call, call.api->cublasSdot_v2_64(call.state->blas, n, x, 1, x, 1, &sum), "cublasSdot"));
        *out = sum;
    } else {
        double sum = 0;
        CB_TRY(end(&call, call.api->cublasDdot_v2_64(call.state->blas, n, x, 1, x, 1, &sum), "cublasDdot"));
        *out = sum;
    }
    return CBLOB_OK;
}

cblob_status cb_cublas_axpy(const cb_device *device, cblob_dtype dtype, int64_t n, double alpha, const void *x, void *y)
{
    if (n == 0)
        return CBLOB_OK;
    blas_call call;
    CB_TRY(begin(device, &call));
    if (dtype == CBLOB_DTYPE_FLOAT32) {
        const float a = (float)alpha;
        return end(&call, call.api->cublasSaxpy_v2_64(call.state->blas, n, &a, x, 1, y, 1), "cublasSaxpy");
    }
    return end(&call, call.api->cublasDaxpy_v2_64(call.state->blas, n, &alpha, x, 1, y, 1), "cublasDaxpy");
}

cblob_status cb_cublas_scale(const cb_device *device, cblob_dtype dtype, int64_t n, double alpha, void *x)
{
    if (n == 0)
        return CBLOB_OK;
    blas_call call;
    CB_TRY(begin(device, &call));
    if (dtype == CBLOB_DTYPE_FLOAT32) {
        const float a = (float)alpha;
        return end(&call, call.api->cublasSscal_v2_64(call.state->blas, n, &a, x, 1), "cublasSscal");
    }
    return end(&call, call.api->cublasDscal_v2_64(call.state->blas, n, &alpha, x, 1), "cublasDscal");
}
