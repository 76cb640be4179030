/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by the parts of the test double: the driver, the kernels it runs (generated from
 * codegen/ops.yaml) and the fake cuBLAS. */
#ifndef CBLOB_TESTS_FAKE_CUDA_INTERNAL_H
#define CBLOB_TESTS_FAKE_CUDA_INTERNAL_H

#include <stddef.h>

#include "fake_cuda.h"

#define FAKE_API __attribute__((visibility("default")))

/* CUresult values a launch can end with. */
#define FAKE_INVALID_VALUE 1
#define FAKE_OUT_OF_MEMORY 2
#define FAKE_ILLEGAL_ADDRESS 700
#define FAKE_LAUNCH_FAILED 719

typedef struct fake_kernel {
    const char *name;
    int arg_count;
    int (*run)(void **args, unsigned int grid, unsigned int block); /* a CUresult; grid and block in threads */
} fake_kernel;

/* Every kernel the generated families hold, ending with a NULL name. */
extern const fake_kernel fake_kernels[];

/* The host address of [device_ptr, device_ptr + bytes) when it lies inside one device
 * allocation, else NULL. */
FAKE_API void *fake_device_range(const void *device_ptr, size_t bytes);
/* Runs what is queued on a stream (and, for the default stream, on every stream), as any later
 * work on it would wait for. 0, or CUDA_ERROR_INVALID_HANDLE for a stream that does not exist. */
FAKE_API int fake_stream_flush(void *stream);
/* Whether the calling thread has a context current (cuBLAS needs one). */
FAKE_API int fake_context_current(void);

#endif
