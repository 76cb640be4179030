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
 *   CBLOB_FAKE_CUDA_NO_POOLS=1          the devices have no memory pools (no cuMemAllocAsync)
 *   CBLOB_FAKE_CUDA_DEFERRED=seed       deferred mode (below), its order drawn from `seed`
 *
 * Device memory is host memory at a non-canonical address (host + 2^60): the host cannot read it
 * by mistake, and copies, launches and cuBLAS calls translate and bounds-check it.
 *
 * Streams are queues, as on a GPU. Each stream runs its work in order; a stream waits for another
 * only through an event (cuStreamWaitEvent), and the legacy default stream (NULL) waits for every
 * blocking stream of its context and they for it; non-blocking streams wait for nothing else.
 * Launches, asynchronous copies, memsets, stream-ordered allocations and frees and cuBLAS calls
 * are queued. In immediate mode (the default) work runs when it is queued. In deferred mode it
 * runs only when something waits for it: cuStreamSynchronize, cuEventSynchronize, a copy to
 * pageable host memory (which the driver documents as synchronous), cuMemFree, cuMemFreeHost and
 * cuCtxSynchronize (which wait for the whole device); then what must run runs in a random order
 * that the dependencies allow, drawn from the seed, so a run can be repeated. A query
 * (cuEventQuery) runs a little of what the event waits for, a random part, as a GPU makes progress
 * while the host polls, so polling code finishes in both modes. A launch's arguments are read when
 * it is queued, the memory they point to when it runs.
 *
 * Memory pools: cuMemAllocAsync takes memory from the device's default pool (release threshold 0)
 * and cuMemAllocFromPoolAsync from a pool made with cuMemPoolCreate. A block freed with
 * cuMemFreeAsync goes back to its pool at the free's turn, and the next allocation from the pool
 * that fits gets it, from any stream; at each synchronisation a pool gives the driver back what
 * it holds above its release threshold. Work queued before its memory was handed out again is an
 * error of the test when it runs (fake_memory.c). cuMemFreeHost does not wait for queued work:
 * work still queued on pinned memory when it is freed is an error too.
 *
 * What a real GPU would silently get wrong ends the process with a message (an error of the
 * test): work that runs on memory freed before it (cuMemFreeAsync ordered before the work, or a
 * range handed back), on a stream-ordered allocation before the allocation's turn, or on memory a
 * test handed back to its owner (fake_cuda_give_back, called from the release callbacks tests
 * give cblob) while work still queued touches it. Pinned host memory given to an asynchronous
 * copy is read or written when the copy runs, and checked then; pageable memory is staged when
 * the copy is queued, as the driver does.
 *
 * A fault (fake_cuda_inject_fault) makes the next launch fail when it runs; from then on every
 * call on the device returns that error, as a real driver's sticky errors do.
 *
 * Launches run the CPU kernels generated from the same codegen/ops.yaml entry and fail where the
 * CUDA twin, run on the host over the launch's grid, writes something else (generated/tests/
 * fake_cuda_kernels.c says what else a launch is checked for). The twin's blocks and threads run
 * in an order drawn from the seed (a fixed one in immediate mode); a twin whose threads cooperate
 * runs each block's threads as coroutines (fake_threads.c: barriers, warp shuffles, shared memory
 * that holds garbage at each block's start). Tests find these functions with dlsym on the loaded
 * driver (tests/gpu/gpu_support.h).
 */
#ifndef CBLOB_TESTS_FAKE_CUDA_H
#define CBLOB_TESTS_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef struct fake_cuda_counters {
    uint64_t host_to_device;   /* copies, synchronous or not */
    uint64_t device_to_host;
    uint64_t device_to_device; /* cuMemcpyDtoDAsync and cuMemcpy2DAsync */
    uint64_t async_copies;     /* host-to-device copies queued asynchronously */
    uint64_t host_to_device_bytes; /* what the copies moved: a staged range, or a whole blob */
    uint64_t device_to_host_bytes;
    uint64_t device_to_device_bytes;
    uint64_t device_allocs;    /* cuMemAlloc and cuMemAllocAsync */
    uint64_t device_frees;     /* cuMemFree and cuMemFreeAsync, counted when called */
    uint64_t async_allocs;     /* of those, stream-ordered */
    uint64_t async_frees;
    uint64_t pinned_allocs;
    uint64_t pinned_frees;
    uint64_t memsets;
    uint64_t launches;
    uint64_t copies_2d;
    uint64_t module_loads;
    uint64_t proc_address_lookups;
    uint64_t device_bytes_in_use;
    uint64_t pinned_bytes_in_use;
    uint64_t stream_waits;     /* cuStreamWaitEvent */
    uint64_t device_syncs;     /* cuMemFree, cuMemFreeHost and cuCtxSynchronize: the whole device waits */
    uint64_t streams_created;
    uint64_t streams_destroyed;
    uint64_t blas_handles;     /* cublasCreate (the fake cuBLAS counts here) */
    uint64_t blas_host_sums;   /* sums returned to host memory: the call itself waited */
    uint64_t last_grid;        /* blocks of the latest launch */
    uint64_t previous_grid;    /* blocks of the launch before it */
    uint64_t default_pool_allocs; /* cuMemAllocAsync: the device's default pool, shared by the process */
    uint64_t own_pool_allocs;  /* cuMemAllocFromPoolAsync */
    uint64_t pools_created;    /* cuMemPoolCreate */
    uint64_t pool_reuses;      /* allocations that got a block freed before */
    uint64_t pool_releases;    /* pooled blocks given back to the driver (synchronisations, trims) */
    uint64_t event_queries;    /* cuEventQuery */
} fake_cuda_counters;

typedef void (*fake_cuda_get_counters_fn)(fake_cuda_counters *out);
typedef void (*fake_cuda_set_memory_fn)(uint64_t bytes_per_device);
/* Queued copies (any direction) that have not run yet. */
typedef uint64_t (*fake_cuda_pending_copies_fn)(void);
/* Queued work of any kind that has not run yet. */
typedef uint64_t (*fake_cuda_pending_work_fn)(void);
/* 1 in deferred mode, 0 in immediate mode. */
typedef int (*fake_cuda_deferred_fn)(void);
/* The test hands [ptr, ptr + bytes) (device or host memory) back to its owner: queued work that
 * touches it now, or work that touches it later, is an error of the test. */
typedef void (*fake_cuda_give_back_fn)(const void *ptr, size_t bytes);
/* The next launch to run faults with `error` (a CUresult such as 700), and the device is lost. */
typedef void (*fake_cuda_inject_fault_fn)(int error);
/* What cuOccupancyMaxActiveBlocksPerMultiprocessor reports from now on (0: as many blocks as
 * 2048 threads make, the default), so a test can change the grids cblob sizes by occupancy. */
typedef void (*fake_cuda_set_occupancy_fn)(int blocks_per_multiprocessor);

#endif
