/* SPDX-License-Identifier: BSD-2-Clause */
/* The parts of the CUDA driver, NVRTC, cuBLAS and NCCL APIs the backend calls, declared here because
 * the library is built without CUDA headers (and never links CUDA: cuda_loader.c opens the
 * libraries with dlopen). Every function is named by the exact symbol the library exports, so
 * `_v2` and `_64` variants are explicit. tests/gpu/test_cuda_api.c compiles this header against
 * the toolkit's own headers (CB_CUDA_API_CHECK) and fails if any type, signature or constant
 * here differs.
 */
#ifndef CBLOB_CUDA_CUDA_API_H
#define CBLOB_CUDA_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef CB_CUDA_API_CHECK
/* The including file has included cuda.h, nvrtc.h and cublas_api.h: use their types. */
typedef CUresult cbcu_result;
typedef CUdevice cbcu_device;
typedef CUdeviceptr cbcu_deviceptr;
typedef CUcontext cbcu_context;
typedef CUmodule cbcu_module;
typedef CUfunction cbcu_function;
typedef CUstream cbcu_stream;
typedef CUevent cbcu_event;
typedef CUDA_MEMCPY2D cbcu_memcpy2d;
typedef CUmemoryPool cbcu_mempool;
typedef CUmemPoolProps cbcu_mempool_props;
typedef CUmemPool_attribute cbcu_mempool_attribute;
typedef CUfunction_attribute cbcu_function_attribute;
typedef CUdevice_attribute cbcu_device_attribute;
typedef CUpointer_attribute cbcu_pointer_attribute;
typedef CUdriverProcAddressQueryResult cbcu_proc_address_result;
typedef cuuint64_t cbcu_uint64;
typedef nvrtcResult cbnv_result;
typedef nvrtcProgram cbnv_program;
typedef cublasStatus_t cbbl_status;
typedef cublasHandle_t cbbl_handle;
typedef cublasPointerMode_t cbbl_pointer_mode;
typedef libraryPropertyType cbbl_library_property;
#else
typedef int cbcu_result;
typedef int cbcu_device;
typedef unsigned long long cbcu_deviceptr;
typedef struct CUctx_st *cbcu_context;
typedef struct CUmod_st *cbcu_module;
typedef struct CUfunc_st *cbcu_function;
typedef struct CUstream_st *cbcu_stream;
typedef struct CUevent_st *cbcu_event;
typedef int cbcu_function_attribute;
typedef struct cb_cuda_memcpy2d cbcu_memcpy2d;
typedef struct CUmemPoolHandle_st *cbcu_mempool;
typedef struct cb_cuda_mempool_props cbcu_mempool_props;
typedef int cbcu_mempool_attribute;
typedef int cbcu_device_attribute;
typedef int cbcu_pointer_attribute;
typedef int cbcu_proc_address_result;
typedef uint64_t cbcu_uint64;
typedef int cbnv_result;
typedef struct _nvrtcProgram *cbnv_program;
typedef int cbbl_status;
typedef struct cublasContext *cbbl_handle;
typedef int cbbl_pointer_mode;
typedef int cbbl_library_property;
#endif
#if defined(CB_CUDA_API_CHECK) && defined(CB_CHECK_NCCL)
/* The including file has also included nccl.h (which comes with NCCL, not always the toolkit). */
typedef ncclResult_t cbnc_result;
typedef ncclComm_t cbnc_comm;
typedef ncclUniqueId cbnc_unique_id;
typedef ncclDataType_t cbnc_datatype;
typedef ncclRedOp_t cbnc_red_op;
#else
typedef int cbnc_result;
typedef struct ncclComm *cbnc_comm;
typedef struct {
    char internal[128];
} cbnc_unique_id;
typedef int cbnc_datatype;
typedef int cbnc_red_op;
#endif

/* CUDA_MEMCPY2D, field for field (tests/gpu/test_cuda_api.c checks the layout against cuda.h). */
struct cb_cuda_memcpy2d {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    unsigned long long srcDevice;
    struct CUarray_st *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    unsigned long long dstDevice;
    struct CUarray_st *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
};

/* CUmemPoolProps, field for field (the enums are ints; tests/gpu/test_cuda_api.c checks the layout). */
struct cb_cuda_mempool_props {
    int allocType;
    int handleTypes;
    struct {
        int type;
        int id;
    } location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
};

/* CUresult values the backend tells apart. */
#define CBCU_SUCCESS 0
#define CBCU_ERROR_INVALID_VALUE 1
#define CBCU_ERROR_OUT_OF_MEMORY 2
#define CBCU_ERROR_NOT_INITIALIZED 3
#define CBCU_ERROR_STUB_LIBRARY 34
#define CBCU_ERROR_NO_DEVICE 100
#define CBCU_ERROR_INVALID_DEVICE 101
#define CBCU_ERROR_INVALID_IMAGE 200
#define CBCU_ERROR_NO_BINARY_FOR_GPU 209
#define CBCU_ERROR_INVALID_PTX 218
#define CBCU_ERROR_UNSUPPORTED_PTX_VERSION 222
#define CBCU_ERROR_INVALID_HANDLE 400
#define CBCU_ERROR_NOT_FOUND 500
#define CBCU_ERROR_NOT_READY 600
/* The sticky errors: after one, the context is unusable for the rest of the process. */
#define CBCU_ERROR_ECC_UNCORRECTABLE 214
#define CBCU_ERROR_ILLEGAL_ADDRESS 700
#define CBCU_ERROR_LAUNCH_TIMEOUT 702
#define CBCU_ERROR_ASSERT 710
#define CBCU_ERROR_HARDWARE_STACK_ERROR 714
#define CBCU_ERROR_ILLEGAL_INSTRUCTION 715
#define CBCU_ERROR_MISALIGNED_ADDRESS 716
#define CBCU_ERROR_INVALID_ADDRESS_SPACE 717
#define CBCU_ERROR_INVALID_PC 718
#define CBCU_ERROR_LAUNCH_FAILED 719
#define CBCU_ERROR_SYSTEM_DRIVER_MISMATCH 803

#define CBCU_DEVICE_ATTRIBUTE_MAX_PITCH 11
#define CBCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CBCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED 115
#define CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CBCU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CBCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CBCU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define CBCU_POINTER_ATTRIBUTE_RANGE_SIZE 12
#define CBCU_MEMORYTYPE_HOST 1
#define CBCU_MEMORYTYPE_DEVICE 2
#define CBCU_STREAM_LEGACY ((cbcu_stream)0x1)
#define CBCU_STREAM_PER_THREAD ((cbcu_stream)0x2)
#define CBCU_STREAM_NON_BLOCKING 1
#define CBCU_EVENT_DISABLE_TIMING 2
#define CBCU_FUNC_ATTRIBUTE_NUM_REGS 4
#define CBCU_MEMHOSTALLOC_PORTABLE 1
#define CBCU_GET_PROC_ADDRESS_DEFAULT 0
#define CBCU_MEM_ALLOCATION_TYPE_PINNED 1
#define CBCU_MEM_HANDLE_TYPE_NONE 0
#define CBCU_MEM_LOCATION_TYPE_DEVICE 1
#define CBCU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4

#define CBNV_SUCCESS 0
#define CBNV_ERROR_COMPILATION 6

#define CBBL_STATUS_SUCCESS 0
#define CBBL_STATUS_ALLOC_FAILED 3
#define CBBL_POINTER_MODE_HOST 0
#define CBBL_POINTER_MODE_DEVICE 1
#define CBBL_MAJOR_VERSION 0
#define CBBL_MINOR_VERSION 1

/* The driver's own entry points, found with dlsym before anything else. */
typedef cbcu_result (*cbcu_init_fn)(unsigned int flags);
typedef cbcu_result (*cbcu_get_proc_address_fn)(const char *symbol, void **function, int cuda_version,
                                                 cbcu_uint64 flags, cbcu_proc_address_result *symbol_status);

/* X(return type, exact symbol, parameter list). Driver symbols are resolved through
 * cuGetProcAddress_v2 by their base name (the symbol without _v2) for the CUDA version whose
 * signatures these are, falling back to dlsym of the exact symbol. */
#define CB_CUDA_DRIVER_FUNCTIONS(X) \
    X(cbcu_result, cuDriverGetVersion, (int *version)) \
    X(cbcu_result, cuGetErrorName, (cbcu_result error, const char **name)) \
    X(cbcu_result, cuDeviceGetCount, (int *count)) \
    X(cbcu_result, cuDeviceGet, (cbcu_device *device, int ordinal)) \
    X(cbcu_result, cuDeviceGetName, (char *name, int length, cbcu_device device)) \
    X(cbcu_result, cuDeviceGetAttribute, (int *value, cbcu_device_attribute attribute, cbcu_device device)) \
    X(cbcu_result, cuDeviceTotalMem_v2, (size_t *bytes, cbcu_device device)) \
    X(cbcu_result, cuDevicePrimaryCtxRetain, (cbcu_context *context, cbcu_device device)) \
    X(cbcu_result, cuCtxPushCurrent_v2, (cbcu_context context)) \
    X(cbcu_result, cuCtxPopCurrent_v2, (cbcu_context *context)) \
    X(cbcu_result, cuCtxSynchronize, (void)) \
    X(cbcu_result, cuMemAlloc_v2, (cbcu_deviceptr *ptr, size_t bytes)) \
    X(cbcu_result, cuMemFree_v2, (cbcu_deviceptr ptr)) \
    X(cbcu_result, cuMemAllocAsync, (cbcu_deviceptr *ptr, size_t bytes, cbcu_stream stream)) \
    X(cbcu_result, cuMemFreeAsync, (cbcu_deviceptr ptr, cbcu_stream stream)) \
    X(cbcu_result, cuMemPoolCreate, (cbcu_mempool * pool, const cbcu_mempool_props *props)) \
    X(cbcu_result, cuMemPoolDestroy, (cbcu_mempool pool)) \
    X(cbcu_result, cuMemPoolSetAttribute, (cbcu_mempool pool, cbcu_mempool_attribute attribute, void *value)) \
    X(cbcu_result, cuMemPoolTrimTo, (cbcu_mempool pool, size_t keep)) \
    X(cbcu_result, cuMemAllocFromPoolAsync, (cbcu_deviceptr * ptr, size_t bytes, cbcu_mempool pool, cbcu_stream stream)) \
    X(cbcu_result, cuMemHostGetDevicePointer_v2, (cbcu_deviceptr *ptr, void *host, unsigned int flags)) \
    X(cbcu_result, cuMemHostAlloc, (void **ptr, size_t bytes, unsigned int flags)) \
    X(cbcu_result, cuMemFreeHost, (void *ptr)) \
    X(cbcu_result, cuMemcpyHtoDAsync_v2, (cbcu_deviceptr dst, const void *src, size_t bytes, cbcu_stream stream)) \
    X(cbcu_result, cuMemcpyDtoHAsync_v2, (void *dst, cbcu_deviceptr src, size_t bytes, cbcu_stream stream)) \
    X(cbcu_result, cuMemcpyDtoDAsync_v2, (cbcu_deviceptr dst, cbcu_deviceptr src, size_t bytes, cbcu_stream stream)) \
    X(cbcu_result, cuMemcpy2DAsync_v2, (const cbcu_memcpy2d *copy, cbcu_stream stream)) \
    X(cbcu_result, cuMemsetD8Async, (cbcu_deviceptr dst, unsigned char value, size_t count, cbcu_stream stream)) \
    X(cbcu_result, cuStreamCreate, (cbcu_stream *stream, unsigned int flags)) \
    X(cbcu_result, cuStreamDestroy_v2, (cbcu_stream stream)) \
    X(cbcu_result, cuStreamGetCtx, (cbcu_stream stream, cbcu_context *context)) \
    X(cbcu_result, cuStreamSynchronize, (cbcu_stream stream)) \
    X(cbcu_result, cuStreamWaitEvent, (cbcu_stream stream, cbcu_event event, unsigned int flags)) \
    X(cbcu_result, cuEventCreate, (cbcu_event *event, unsigned int flags)) \
    X(cbcu_result, cuEventRecord, (cbcu_event event, cbcu_stream stream)) \
    X(cbcu_result, cuEventSynchronize, (cbcu_event event)) \
    X(cbcu_result, cuEventQuery, (cbcu_event event)) \
    X(cbcu_result, cuEventDestroy_v2, (cbcu_event event)) \
    X(cbcu_result, cuPointerGetAttribute, (void *data, cbcu_pointer_attribute attribute, cbcu_deviceptr ptr)) \
    X(cbcu_result, cuModuleLoadData, (cbcu_module *module, const void *image)) \
    X(cbcu_result, cuModuleUnload, (cbcu_module module)) \
    X(cbcu_result, cuModuleGetFunction, (cbcu_function *function, cbcu_module module, const char *name)) \
    X(cbcu_result, cuFuncGetAttribute, (int *value, cbcu_function_attribute attribute, cbcu_function function)) \
    X(cbcu_result, cuOccupancyMaxActiveBlocksPerMultiprocessor, \
      (int *blocks, cbcu_function function, int block_size, size_t shared_bytes)) \
    X(cbcu_result, cuLaunchKernel, \
      (cbcu_function function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z, unsigned int block_x, \
       unsigned int block_y, unsigned int block_z, unsigned int shared_bytes, cbcu_stream stream, void **params, \
       void **extra))

#define CB_NVRTC_FUNCTIONS(X) \
    X(cbnv_result, nvrtcVersion, (int *major, int *minor)) \
    X(const char *, nvrtcGetErrorString, (cbnv_result result)) \
    X(cbnv_result, nvrtcGetNumSupportedArchs, (int *count)) \
    X(cbnv_result, nvrtcGetSupportedArchs, (int *archs)) \
    X(cbnv_result, nvrtcCreateProgram, \
      (cbnv_program * program, const char *source, const char *name, int header_count, const char *const *headers, \
       const char *const *include_names)) \
    X(cbnv_result, nvrtcDestroyProgram, (cbnv_program * program)) \
    X(cbnv_result, nvrtcCompileProgram, (cbnv_program program, int option_count, const char *const *options)) \
    X(cbnv_result, nvrtcGetPTXSize, (cbnv_program program, size_t *size)) \
    X(cbnv_result, nvrtcGetPTX, (cbnv_program program, char *ptx)) \
    X(cbnv_result, nvrtcGetCUBINSize, (cbnv_program program, size_t *size)) \
    X(cbnv_result, nvrtcGetCUBIN, (cbnv_program program, char *cubin)) \
    X(cbnv_result, nvrtcGetProgramLogSize, (cbnv_program program, size_t *size)) \
    X(cbnv_result, nvrtcGetProgramLog, (cbnv_program program, char *log))

/* The 64-bit-count (_64) BLAS-1 entry points, so blobs past 2^31 elements need no chunking. */
#define CB_CUBLAS_FUNCTIONS(X) \
    X(cbbl_status, cublasCreate_v2, (cbbl_handle * handle)) \
    X(cbbl_status, cublasDestroy_v2, (cbbl_handle handle)) \
    X(cbbl_status, cublasSetStream_v2, (cbbl_handle handle, cbcu_stream stream)) \
    X(cbbl_status, cublasSetPointerMode_v2, (cbbl_handle handle, cbbl_pointer_mode mode)) \
    X(cbbl_status, cublasGetProperty, (cbbl_library_property property, int *value)) \
    X(const char *, cublasGetStatusName, (cbbl_status status)) \
    X(cbbl_status, cublasSasum_v2_64, (cbbl_handle handle, int64_t n, const float *x, int64_t incx, float *result)) \
    X(cbbl_status, cublasDasum_v2_64, (cbbl_handle handle, int64_t n, const double *x, int64_t incx, double *result)) \
    X(cbbl_status, cublasSdot_v2_64, \
      (cbbl_handle handle, int64_t n, const float *x, int64_t incx, const float *y, int64_t incy, float *result)) \
    X(cbbl_status, cublasDdot_v2_64, \
      (cbbl_handle handle, int64_t n, const double *x, int64_t incx, const double *y, int64_t incy, double *result)) \
    X(cbbl_status, cublasSaxpy_v2_64, \
      (cbbl_handle handle, int64_t n, const float *alpha, const float *x, int64_t incx, float *y, int64_t incy)) \
    X(cbbl_status, cublasDaxpy_v2_64, \
      (cbbl_handle handle, int64_t n, const double *alpha, const double *x, int64_t incx, double *y, int64_t incy)) \
    X(cbbl_status, cublasSscal_v2_64, (cbbl_handle handle, int64_t n, const float *alpha, float *x, int64_t incx)) \
    X(cbbl_status, cublasDscal_v2_64, (cbbl_handle handle, int64_t n, const double *alpha, double *x, int64_t incx))

#define CBNC_SUCCESS 0
#define CBNC_IN_PROGRESS 7
#define CBNC_UNIQUE_ID_BYTES 128
#define CBNC_INT32 2
#define CBNC_UINT32 3
#define CBNC_FLOAT32 7
#define CBNC_FLOAT64 8
#define CBNC_SUM 0

/* NCCL (libnccl.so.2): the communicator's life, its two collectives and its errors. */
#define CB_NCCL_FUNCTIONS(X) \
    X(cbnc_result, ncclGetVersion, (int *version)) \
    X(cbnc_result, ncclGetUniqueId, (cbnc_unique_id * unique_id)) \
    X(cbnc_result, ncclCommInitRank, (cbnc_comm * comm, int nranks, cbnc_unique_id comm_id, int rank)) \
    X(cbnc_result, ncclCommDestroy, (cbnc_comm comm)) \
    X(cbnc_result, ncclCommAbort, (cbnc_comm comm)) \
    X(cbnc_result, ncclCommGetAsyncError, (cbnc_comm comm, cbnc_result * async_error)) \
    X(const char *, ncclGetErrorString, (cbnc_result result)) \
    X(cbnc_result, ncclAllReduce, \
      (const void *sendbuff, void *recvbuff, size_t count, cbnc_datatype datatype, cbnc_red_op op, cbnc_comm comm, \
       cbcu_stream stream)) \
    X(cbnc_result, ncclBroadcast, \
      (const void *sendbuff, void *recvbuff, size_t count, cbnc_datatype datatype, int root, cbnc_comm comm, \
       cbcu_stream stream))

#define CB_CUDA_DECLARE_POINTER(ret, symbol, params) ret(*symbol) params;

typedef struct cb_cuda_driver_api {
    CB_CUDA_DRIVER_FUNCTIONS(CB_CUDA_DECLARE_POINTER)
} cb_cuda_driver_api;

typedef struct cb_nvrtc_api {
    CB_NVRTC_FUNCTIONS(CB_CUDA_DECLARE_POINTER)
} cb_nvrtc_api;

typedef struct cb_cublas_api {
    CB_CUBLAS_FUNCTIONS(CB_CUDA_DECLARE_POINTER)
} cb_cublas_api;

typedef struct cb_nccl_api {
    CB_NCCL_FUNCTIONS(CB_CUDA_DECLARE_POINTER)
} cb_nccl_api;

/* The CUDA version whose signatures the driver table above declares: cuGetProcAddress_v2 hands
 * out the variant of each symbol that matches it. */
#define CB_CUDA_API_VERSION 12000

#endif
