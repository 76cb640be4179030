/* SPDX-License-Identifier: BSD-2-Clause */
/* A test double of cuBLAS (built as libcublas.so.13, for tests only), over the fake driver's
 * memory. Its math is plain loops in double, written independently of cblob's kernels, so a
 * test comparing the "GPU" path with the CPU path compares two implementations. Every call is
 * queued on the handle's stream (fake_queue_call) and reads its vectors when it runs. In host
 * pointer mode alpha is read when the call is made and a sum is written to host memory before
 * the call returns, as cuBLAS does; in device pointer mode both are device memory (or mapped
 * pinned memory), read and written when the call runs. */
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
    if (*handle == NULL)
        return CBBL_STATUS_ALLOC_FAILED;
    fake_count_blas(1, 0);
    return CBBL_STATUS_SUCCESS;
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
    if (mode != CBBL_POINTER_MODE_HOST && mode != CBBL_POINTER_MODE_DEVICE)
        return STATUS_INVALID_VALUE;
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

typedef enum blas_op { BLAS_ASUM, BLAS_DOT, BLAS_AXPY, BLAS_SCAL } blas_op;

typedef struct blas_call {
    blas_op op;
    bool is_double;
    int64_t n;
    uint64_t x, y;
    double alpha;         /* host pointer mode */
    uint64_t alpha_at;    /* device pointer mode: where alpha is */
    uint64_t result;      /* where a sum goes: host memory in host mode, device memory otherwise */
    bool result_on_device;
} blas_call;

static double element(const void *array, bool is_double, int64_t i)
{
    return is_double ? ((const double *)array)[i] : (double)((const float *)array)[i];
}

static void store(void *array, bool is_double, int64_t i, double value)
{
    if (is_double)
        ((double *)array)[i] = value;
    else
        ((float *)array)[i] = (float)value;
}

static int run_call(void *payload)
{
    const blas_call *call = payload;
    const size_t size = call->is_double ? sizeof(double) : sizeof(float);
    const size_t bytes = (size_t)call->n * size;
    const void *x = fake_device_range((const void *)(uintptr_t)call->x, bytes);
    void *y = call->op == BLAS_DOT || call->op == BLAS_AXPY ? fake_device_range((const void *)(uintptr_t)call->y, bytes) : NULL;
    double alpha = call->alpha;
    if (call->alpha_at != 0)
        alpha = element(fake_device_range((const void *)(uintptr_t)call->alpha_at, size), call->is_double, 0);
    double sum = 0;
    for (int64_t i = 0; i < call->n; ++i) {
        const double v = element(x, call->is_double, i);
        switch (call->op) {
        case BLAS_ASUM: sum += v < 0 ? -v : v; break;
        case BLAS_DOT: sum += v * element(y, call->is_double, i); break;
        case BLAS_AXPY: store(y, call->is_double, i, element(y, call->is_double, i) + alpha * v); break;
        case BLAS_SCAL: store((void *)x, call->is_double, i, alpha * v); break;
        }
    }
    if (call->op == BLAS_ASUM || call->op == BLAS_DOT) {
        void *out = call->result_on_device ? fake_device_range((const void *)(uintptr_t)call->result, size)
                                           : (void *)(uintptr_t)call->result;
        store(out, call->is_double, 0, sum);
    }
    return 0;
}

/* Queues a call on the handle's stream. Its vectors must be device memory (a host pointer here
 * is a bug the real library would fault on). */
static cbbl_status queue_call(cbbl_handle handle, blas_call call, int64_t incx, const void *alpha, void *result)
{
    if (!fake_context_current())
        return STATUS_NOT_INITIALIZED;
    if (call.n < 0 || incx != 1)
        return STATUS_INVALID_VALUE;
    const bool device_mode = handle->pointer_mode == CBBL_POINTER_MODE_DEVICE;
    if (alpha != NULL && device_mode)
        call.alpha_at = (uint64_t)(uintptr_t)alpha;
    else if (alpha != NULL)
        call.alpha = element(alpha, call.is_double, 0);
    call.result = (uint64_t)(uintptr_t)result;
    call.result_on_device = device_mode;
    if (call.n == 0 && result != NULL && !device_mode) {
        store(result, call.is_double, 0, 0);
        return CBBL_STATUS_SUCCESS;
    }
    blas_call *payload = malloc(sizeof *payload);
    if (payload == NULL)
        return CBBL_STATUS_ALLOC_FAILED;
    *payload = call;
    const uint64_t addresses[] = {call.x, call.y, call.alpha_at, device_mode ? call.result : 0};
    /* A sum in host memory is there when the call returns. */
    const bool wait = result != NULL && !device_mode;
    if (wait)
        fake_count_blas(0, 1);
    return fake_queue_call(handle->stream, run_call, payload, addresses, 4, wait) == 0 ? CBBL_STATUS_SUCCESS
                                                                                      : STATUS_EXECUTION_FAILED;
}

#define FAKE_BLAS(T, S, IS_DOUBLE) \
    FAKE_API cbbl_status cublas##S##asum_v2_64(cbbl_handle handle, int64_t n, const T *x, int64_t incx, T *result) \
    { \
        return queue_call(handle, (blas_call){BLAS_ASUM, IS_DOUBLE, n, (uintptr_t)x, 0, 0, 0, 0, false}, incx, NULL, result); \
    } \
    FAKE_API cbbl_status cublas##S##dot_v2_64(cbbl_handle handle, int64_t n, const T *x, int64_t incx, const T *y, \
                                             int64_t incy, T *result) \
    { \
        if (incy != 1) \
            return STATUS_INVALID_VALUE; \
        return queue_call(handle, (blas_call){BLAS_DOT, IS_DOUBLE, n, (uintptr_t)x, (uintptr_t)y, 0, 0, 0, false}, incx, \
                          NULL, result); \
    } \
    FAKE_API cbbl_status cublas##S##axpy_v2_64(cbbl_handle handle, int64_t n, const T *alpha, const T *x, int64_t incx, \
                                              T *y, int64_t incy) \
    { \
        if (incy != 1) \
            return STATUS_INVALID_VALUE; \
        return queue_call(handle, (blas_call){BLAS_AXPY, IS_DOUBLE, n, (uintptr_t)x, (uintptr_t)y, 0, 0, 0, false}, incx, \
                          alpha, NULL); \
    } \
    FAKE_API cbbl_status cublas##S##scal_v2_64(cbbl_handle handle, int64_t n, const T *alpha, T *x, int64_t incx) \
    { \
        return queue_call(handle, (blas_call){BLAS_SCAL, IS_DOUBLE, n, (uintptr_t)x, 0, 0, 0, 0, false}, incx, alpha, NULL); \
    }

FAKE_BLAS(float, S, false)
FAKE_BLAS(double, D, true)
