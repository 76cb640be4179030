/* SPDX-License-Identifier: BSD-2-Clause */
/* cuda/cuda_api.h declares the CUDA driver, NVRTC and cuBLAS functions by hand (the library is
 * built without CUDA headers). Here it is compiled against the toolkit's own headers: every
 * function pointer must have the toolkit's exact type and every constant its value, or this file
 * does not compile. Built only where the toolkit's headers are (tests/CMakeLists.txt). */
#include <cublas_api.h>
#include <cuda.h>
#include <nvrtc.h>
#if __has_include(<nccl.h>)
#include <nccl.h>
#define CB_CHECK_NCCL 1
#endif
#include <stddef.h>

#define CB_CUDA_API_CHECK
#include "cuda_api.h"
#include "harness.h"

/* Each member of the tables is the toolkit's function, symbol for symbol. */
#define SAME_AS_TOOLKIT(table, ret, symbol, params) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((table *)0)->symbol), __typeof__(&symbol)), \
                   #symbol " differs from the toolkit's declaration");
#define DRIVER(ret, symbol, params) SAME_AS_TOOLKIT(cb_cuda_driver_api, ret, symbol, params)
#define NVRTC(ret, symbol, params) SAME_AS_TOOLKIT(cb_nvrtc_api, ret, symbol, params)
#define CUBLAS(ret, symbol, params) SAME_AS_TOOLKIT(cb_cublas_api, ret, symbol, params)
#define NCCL(ret, symbol, params) SAME_AS_TOOLKIT(cb_nccl_api, ret, symbol, params)
CB_CUDA_DRIVER_FUNCTIONS(DRIVER)
CB_NVRTC_FUNCTIONS(NVRTC)
CB_CUBLAS_FUNCTIONS(CUBLAS)
#ifdef CB_CHECK_NCCL /* NCCL's header comes with NCCL, not always with the toolkit */
CB_NCCL_FUNCTIONS(NCCL)
#endif

_Static_assert(__builtin_types_compatible_p(cbcu_init_fn, __typeof__(&cuInit)), "cuInit");
_Static_assert(__builtin_types_compatible_p(cbcu_get_proc_address_fn, __typeof__(&cuGetProcAddress_v2)),
               "cuGetProcAddress_v2");

#define SAME_VALUE(mine, theirs) _Static_assert((mine) == (theirs), #mine " is not " #theirs);
#ifdef CB_CHECK_NCCL
SAME_VALUE(CBNC_SUCCESS, ncclSuccess)
SAME_VALUE(CBNC_IN_PROGRESS, ncclInProgress)
SAME_VALUE(CBNC_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES)
SAME_VALUE(CBNC_UNIQUE_ID_BYTES, sizeof(cbnc_unique_id))
SAME_VALUE(CBNC_INT32, ncclInt32)
SAME_VALUE(CBNC_UINT32, ncclUint32)
SAME_VALUE(CBNC_FLOAT32, ncclFloat32)
SAME_VALUE(CBNC_FLOAT64, ncclFloat64)
SAME_VALUE(CBNC_SUM, ncclSum)
#endif
SAME_VALUE(CBCU_SUCCESS, CUDA_SUCCESS)
SAME_VALUE(CBCU_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE)
SAME_VALUE(CBCU_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY)
SAME_VALUE(CBCU_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED)
SAME_VALUE(CBCU_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY)
SAME_VALUE(CBCU_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE)
SAME_VALUE(CBCU_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE)
SAME_VALUE(CBCU_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_IMAGE)
SAME_VALUE(CBCU_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_NO_BINARY_FOR_GPU)
SAME_VALUE(CBCU_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_PTX)
SAME_VALUE(CBCU_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
SAME_VALUE(CBCU_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE)
SAME_VALUE(CBCU_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND)
SAME_VALUE(CBCU_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS)
SAME_VALUE(CBCU_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_FAILED)
SAME_VALUE(CBCU_ERROR_NOT_READY, CUDA_ERROR_NOT_READY)
SAME_VALUE(CBCU_ERROR_ECC_UNCORRECTABLE, CUDA_ERROR_ECC_UNCORRECTABLE)
SAME_VALUE(CBCU_ERROR_LAUNCH_TIMEOUT, CUDA_ERROR_LAUNCH_TIMEOUT)
SAME_VALUE(CBCU_ERROR_ASSERT, CUDA_ERROR_ASSERT)
SAME_VALUE(CBCU_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_HARDWARE_STACK_ERROR)
SAME_VALUE(CBCU_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_ILLEGAL_INSTRUCTION)
SAME_VALUE(CBCU_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_MISALIGNED_ADDRESS)
SAME_VALUE(CBCU_ERROR_INVALID_ADDRESS_SPACE, CUDA_ERROR_INVALID_ADDRESS_SPACE)
SAME_VALUE(CBCU_ERROR_INVALID_PC, CUDA_ERROR_INVALID_PC)
SAME_VALUE(CBCU_DEVICE_ATTRIBUTE_MAX_PITCH, CU_DEVICE_ATTRIBUTE_MAX_PITCH)
SAME_VALUE(CBCU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
SAME_VALUE(CBCU_MEMORYTYPE_HOST, CU_MEMORYTYPE_HOST)
SAME_VALUE(CBCU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING)
SAME_VALUE(CBCU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING)
SAME_VALUE(CBCU_FUNC_ATTRIBUTE_NUM_REGS, CU_FUNC_ATTRIBUTE_NUM_REGS)
SAME_VALUE(CBBL_POINTER_MODE_DEVICE, CUBLAS_POINTER_MODE_DEVICE)
SAME_VALUE(CBCU_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
SAME_VALUE(CBCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
SAME_VALUE(CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
SAME_VALUE(CBCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
SAME_VALUE(CBCU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
SAME_VALUE(CBCU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
SAME_VALUE(CBCU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
SAME_VALUE(CBCU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_RANGE_SIZE)
SAME_VALUE(CBCU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_DEVICE)
SAME_VALUE(CBCU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE)
SAME_VALUE(CBCU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT)
SAME_VALUE(CBCU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED)
SAME_VALUE(CBCU_MEM_HANDLE_TYPE_NONE, CU_MEM_HANDLE_TYPE_NONE)
SAME_VALUE(CBCU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE)
SAME_VALUE(CBCU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
SAME_VALUE(CBNV_SUCCESS, NVRTC_SUCCESS)
SAME_VALUE(CBNV_ERROR_COMPILATION, NVRTC_ERROR_COMPILATION)
SAME_VALUE(CBBL_STATUS_SUCCESS, CUBLAS_STATUS_SUCCESS)
SAME_VALUE(CBBL_STATUS_ALLOC_FAILED, CUBLAS_STATUS_ALLOC_FAILED)
SAME_VALUE(CBBL_POINTER_MODE_HOST, CUBLAS_POINTER_MODE_HOST)
SAME_VALUE(CBBL_MAJOR_VERSION, MAJOR_VERSION)
SAME_VALUE(CBBL_MINOR_VERSION, MINOR_VERSION)
SAME_VALUE(CB_CUDA_API_VERSION <= CUDA_VERSION, 1)

/* The hand-written CUDA_MEMCPY2D has the toolkit's layout. */
#define SAME_FIELD(field) \
    _Static_assert(offsetof(struct cb_cuda_memcpy2d, field) == offsetof(CUDA_MEMCPY2D, field) && \
                       sizeof(((struct cb_cuda_memcpy2d *)0)->field) == sizeof(((CUDA_MEMCPY2D *)0)->field), \
                   "CUDA_MEMCPY2D." #field " differs");
SAME_FIELD(srcXInBytes) SAME_FIELD(srcY) SAME_FIELD(srcMemoryType) SAME_FIELD(srcHost) SAME_FIELD(srcDevice)
SAME_FIELD(srcArray) SAME_FIELD(srcPitch) SAME_FIELD(dstXInBytes) SAME_FIELD(dstY) SAME_FIELD(dstMemoryType)
SAME_FIELD(dstHost) SAME_FIELD(dstDevice) SAME_FIELD(dstArray) SAME_FIELD(dstPitch) SAME_FIELD(WidthInBytes)
SAME_FIELD(Height)
_Static_assert(sizeof(struct cb_cuda_memcpy2d) == sizeof(CUDA_MEMCPY2D), "CUDA_MEMCPY2D's size differs");

/* The hand-written CUmemPoolProps has the toolkit's layout. */
#define SAME_POOL_FIELD(field) \
    _Static_assert(offsetof(struct cb_cuda_mempool_props, field) == offsetof(CUmemPoolProps, field) && \
                       sizeof(((struct cb_cuda_mempool_props *)0)->field) == sizeof(((CUmemPoolProps *)0)->field), \
                   "CUmemPoolProps." #field " differs");
SAME_POOL_FIELD(allocType) SAME_POOL_FIELD(handleTypes) SAME_POOL_FIELD(location) SAME_POOL_FIELD(location.type)
SAME_POOL_FIELD(location.id) SAME_POOL_FIELD(win32SecurityAttributes) SAME_POOL_FIELD(maxSize) SAME_POOL_FIELD(usage)
SAME_POOL_FIELD(reserved)
_Static_assert(sizeof(struct cb_cuda_mempool_props) == sizeof(CUmemPoolProps), "CUmemPoolProps's size differs");

/* The unversioned names the loader asks cuGetProcAddress_v2 for must map, in the toolkit's
 * headers, to the exact symbols declared (cuMemAlloc -> cuMemAlloc_v2): checked by expanding
 * each base name through cuda.h's own macros. */
#define EXPANDED(name) EXPANDED_TEXT(name)
#define EXPANDED_TEXT(name) #name

TEST(declarations_match_the_toolkit_headers)
{
    CHECK(CBCU_STREAM_LEGACY == CU_STREAM_LEGACY && CBCU_STREAM_PER_THREAD == CU_STREAM_PER_THREAD);
    static const struct {
        const char *declared, *toolkit_expansion;
    } names[] = {
        {"cuDeviceTotalMem_v2", EXPANDED(cuDeviceTotalMem)},
        {"cuCtxPushCurrent_v2", EXPANDED(cuCtxPushCurrent)},
        {"cuCtxPopCurrent_v2", EXPANDED(cuCtxPopCurrent)},
        {"cuMemAlloc_v2", EXPANDED(cuMemAlloc)},
        {"cuMemFree_v2", EXPANDED(cuMemFree)},
        {"cuMemcpyHtoDAsync_v2", EXPANDED(cuMemcpyHtoDAsync)},
        {"cuMemcpyDtoHAsync_v2", EXPANDED(cuMemcpyDtoHAsync)},
        {"cuMemcpyDtoDAsync_v2", EXPANDED(cuMemcpyDtoDAsync)},
        {"cuMemsetD8Async", EXPANDED(cuMemsetD8Async)},
        {"cuMemcpy2DAsync_v2", EXPANDED(cuMemcpy2DAsync)},
        {"cuMemHostGetDevicePointer_v2", EXPANDED(cuMemHostGetDevicePointer)},
        {"cuStreamDestroy_v2", EXPANDED(cuStreamDestroy)},
        {"cuEventDestroy_v2", EXPANDED(cuEventDestroy)},
        {"cuStreamGetCtx", EXPANDED(cuStreamGetCtx)},
        {"cuMemAllocFromPoolAsync", EXPANDED(cuMemAllocFromPoolAsync)},
        {"cuMemPoolCreate", EXPANDED(cuMemPoolCreate)},
        {"cuGetProcAddress_v2", EXPANDED(cuGetProcAddress)},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        CHECK_MSG(strcmp(names[i].declared, names[i].toolkit_expansion) == 0, "cuda_api.h uses %s; the toolkit maps to %s",
                  names[i].declared, names[i].toolkit_expansion);
}
