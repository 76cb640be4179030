/* SPDX-License-Identifier: BSD-2-Clause */
/* A test double of cuBLAS (built as libcublas.so.13, for tests only), over the fake driver's
 * memory. Its math is plain loops in double, written independently of cblob's kernels, so a
 * test comparing the "GPU" path with the CPU path compares two implementations. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda_api.h"
#include "fake_cuda_internal.h"

#define STATUS_NOT_INITIALIZED 1
#define STATUS_INVALID_VALUE 7
#define STATUS_EXECUTION_FAILED 13
#define STATUS_NOT_SUPPORTED 15

struct cublasContext {
    cbcu_stream stream;
    int pointer_mode;
};

FAKE_API cbbl_status cublasCreate_v2(cbbl_handle *handle)
{
    if (!fake_context_current())
        return STATUS_NOT_INITIALIZED;
    *handle = calloc(1, sizeof **handle);
    return *handle != NULL ? CBBL_STATUS_SUCCESS : CBBL_STATUS_ALLOC_FAILED;
}

FAKE_API cbbl_status cublasDestroy_v2(cbbl_handle handle)
{
    free(handle);
    return CBBL_STATUS_SUCCESS;
}

FAKE_API cbbl_status cublasSetStream_v2(cbbl_handle handle, cbcu_stream stream)
{
    handle->stream = stream;
    return CBBL_STATUS_SUCCESS;
}

FAKE_API cbbl_status cublasSetPointerMode_v2(cbbl_handle handle, cbbl_pointer_mode mode)
{
    if (mode != CBBL_POINTER_MODE_HOST)
        return STATUS_NOT_SUPPORTED;
    handle->pointer_mode = mode;
    return CBBL_STATUS_SUCCESS;
}

FAKE_API cbbl_status cublasGetProperty(cbbl_library_property property, int *value)
{
    *value = property == CBBL_MAJOR_VERSION ? 13 : 0;
    return CBBL_STATUS_SUCCESS;
}

FAKE_API const char *cublasGetStatusName(cbbl_status status)
{
    switch (status) {
    case CBBL_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CBBL_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    default: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
}

/* The call runs on the handle's stream, after what is queued there; its vectors must be device
 * memory (a host pointer here is a bug the real library would fault on). */
static cbbl_status begin(cbbl_handle handle, int64_t n, int64_t incx, const void *x, size_t element, void **host)
{
    if (!fake_context_current())
        return STATUS_NOT_INITIALIZED;
    if (n < 0 || incx != 1)
        return STATUS_INVALID_VALUE;
    if (fake_stream_flush(handle->stream) != 0)
        return STATUS_EXECUTION_FAILED;
    *host = fake_device_range(x, (size_t)n * element);
    return *host != NULL ? CBBL_STATUS_SUCCESS : STATUS_EXECUTION_FAILED;
}

#define FAKE_REDUCTIONS(T, S) \
    FAKE_API cbbl_status cublas##S##asum_v2_64(cbbl_handle handle, int64_t n, const T *x, int64_t incx, T *result) \
    { \
        void *values; \
        const cbbl_status status = begin(handle, n, incx, x, sizeof(T), &values); \
        if (status != CBBL_STATUS_SUCCESS) \
            return status; \
        double sum = 0; \
        for (int64_t i = 0; i < n; ++i) \
            sum += ((const T *)values)[i] < 0 ? -(double)((const T *)values)[i] : (double)((const T *)values)[i]; \
        *result = (T)sum; \
        return CBBL_STATUS_SUCCESS; \
    } \
    FAKE_API cbbl_status cublas##S##dot_v2_64(cbbl_handle handle, int64_t n, const T *x, int64_t incx, const T *y, \
                                             int64_t incy, T *result) \
    { \
        void *xs, *ys; \
        cbbl_status status = begin(handle, n, incx, x, sizeof(T), &xs); \
        if (status == CBBL_STATUS_SUCCESS) \
            status = begin(handle, n, incy, y, sizeof(T), &ys); \
        if (status != CBBL_STATUS_SUCCESS) \
            return status; \
        double sum = 0; \
        for (int64_t i = 0; i < n; ++i) \
            sum += (double)((const T *)xs)[i] * (double)((const T *)ys)[i]; \
        *result = (T)sum; \
        return CBBL_STATUS_SUCCESS; \
    } \
    FAKE_API cbbl_status cublas##S##axpy_v2_64(cbbl_handle handle, int64_t n, const T *alpha, const T *x, int64_t incx, \
                                              T *y, int64_t incy) \
    { \
        void *xs, *ys; \
        cbbl_status status = begin(handle, n, incx, x, sizeof(T), &xs); \
        if (status == CBBL_STATUS_SUCCESS) \
            status = begin(handle, n, incy, y, sizeof(T), &ys); \
        if (status != CBBL_STATUS_SUCCESS) \
            return status; \
        for (int64_t i = 0; i < n; ++i) \
            ((T *)ys)[i] = (T)(((T *)ys)[i] + *alpha * ((const T *)xs)[i]); \
        return CBBL_STATUS_SUCCESS; \
    } \
    FAKE_API cbbl_status cublas##S##scal_v2_64(cbbl_handle handle, int64_t n, const T *alpha, T *x, int64_t incx) \
    { \
        void *xs; \
        const cbbl_status status = begin(handle, n, incx, x, sizeof(T), &xs); \
        if (status != CBBL_STATUS_SUCCESS) \
            return status; \
        for (int64_t i = 0; i < n; ++i) \
            ((T *)xs)[i] = (T)(*alpha * ((T *)xs)[i]); \
        return CBBL_STATUS_SUCCESS; \
    }

FAKE_REDUCTIONS(float, S)
FAKE_REDUCTIONS(double, D)
