/* SPDX-License-Identifier: BSD-2-Clause */
/* The control interface of the test double of the CUDA driver (libcuda.so.1 in this folder's
 * build output), for tests: what it counted, and knobs that change what it reports.
 *
 * Knobs read by cuInit (environment):
 *   CBLOB_FAKE_CUDA_DEVICES=n           devices reported (default 1; 0: cuInit says NO_DEVICE)
 *   CBLOB_FAKE_CUDA_VERSION=v           the CUDA version the driver supports (default 13000)
 *   CBLOB_FAKE_CUDA_STUB=1              behave as the toolkit's stub (CUDA_ERROR_STUB_LIBRARY)
 *   CBLOB_FAKE_CUDA_ARCH=cc             compute capability, major * 10 + minor (default 80)
 *   CBLOB_FAKE_CUDA_MEMORY=bytes        device memory per device (default 1 GiB)
 *   CBLOB_FAKE_CUDA_NO_PROC_ADDRESS=1   cuGetProcAddress_v2 finds nothing (loaders fall back to dlsym)
 *
 * Device memory is host memory at a non-canonical address (host + 2^60): the host cannot read it
 * by mistake, and copies, launches and cuBLAS calls translate and bounds-check it. Asynchronous
 * host-to-device copies wait in their stream until it is synchronised or used again. Launches
 * run the CPU kernels generated from the same codegen/ops.yaml entry and fail where the CUDA twin,
 * run on the host over the launch's grid, writes something else (generated/tests/
 * fake_cuda_kernels.c says what else a launch is checked for). Tests find these functions with
 * dlsym on the loaded driver (tests/gpu/gpu_support.h).
 */
#ifndef CBLOB_TESTS_FAKE_CUDA_H
#define CBLOB_TESTS_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef struct fake_cuda_counters {
    uint64_t host_to_device;   /* copies, synchronous or not */
    uint64_t device_to_host;
    uint64_t device_to_device;
    uint64_t async_copies;     /* of those, queued asynchronously */
    uint64_t host_to_device_bytes; /* what the copies moved: a staged range, or a whole blob */
    uint64_t device_to_host_bytes;
    uint64_t device_to_device_bytes;
    uint64_t device_allocs;
    uint64_t device_frees;
    uint64_t pinned_allocs;
    uint64_t pinned_frees;
    uint64_t memsets;
    uint64_t launches;
    uint64_t module_loads;
    uint64_t proc_address_lookups;
    uint64_t device_bytes_in_use;
    uint64_t pinned_bytes_in_use;
} fake_cuda_counters;

typedef void (*fake_cuda_get_counters_fn)(fake_cuda_counters *out);
typedef void (*fake_cuda_set_memory_fn)(uint64_t bytes_per_device);
typedef uint64_t (*fake_cuda_pending_copies_fn)(void);

#endif
