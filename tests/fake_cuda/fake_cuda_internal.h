/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by the parts of the test double: the driver's entry points (fake_driver.c), its memory
 * (fake_memory.c), its streams, events and the order work runs in (fake_queue.c), the kernels it
 * runs (generated from codegen/ops.yaml) and the fake cuBLAS. */
#ifndef CBLOB_TESTS_FAKE_CUDA_INTERNAL_H
#define CBLOB_TESTS_FAKE_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_cuda.h"

#define FAKE_API __attribute__((visibility("default")))

/* CUresult values the double returns. */
#define FAKE_INVALID_VALUE 1
#define FAKE_OUT_OF_MEMORY 2
#define FAKE_INVALID_CONTEXT 201
#define FAKE_INVALID_HANDLE 400
#define FAKE_NOT_READY 600
#define FAKE_ILLEGAL_ADDRESS 700
#define FAKE_LAUNCH_FAILED 719
#define FAKE_NOT_SUPPORTED 801

#define FAKE_MAX_DEVICES 8
/* Device memory is host memory at this distance: the host cannot read it by mistake. */
#define FAKE_DEVICE_TAG ((uintptr_t)1 << 60)

typedef struct fake_kernel {
    const char *name;
    int arg_count;
    int (*run)(void **args, unsigned int grid, unsigned int block); /* a CUresult; grid and block in threads */
} fake_kernel;

/* Every kernel the generated families hold, ending with a NULL name. */
extern const fake_kernel fake_kernels[];

/* ---- threads (fake_threads.c): a launch's threads on the host ----------------------------------- */

typedef struct fake_dim3 {
    unsigned int x, y, z;
} fake_dim3;
/* The built-ins the twins read (gridDim, blockDim, blockIdx, threadIdx), set for the running thread. */
extern fake_dim3 fake_grid_dim, fake_block_dim, fake_block_idx, fake_thread_idx;
typedef void (*fake_thread_fn)(void *args);
/* Runs body(args) once per thread of `grid` blocks of `block` threads: blocks in a random order,
 * each block's threads in a random order. `cooperative`: the threads are coroutines that switch
 * at fake_syncthreads and fake_shfl_down_double (and __shared__ memory is garbage at each block's
 * start); otherwise each runs to its end before the next starts. */
void fake_run_threads(unsigned int grid, unsigned int block, bool cooperative, fake_thread_fn body, void *args);
/* __syncthreads and __shfl_down_sync (of a double) for cooperative twins. */
void fake_syncthreads(void);
double fake_shfl_down_double(unsigned int mask, double value, int delta);

/* ---- the one lock (recursive) and the knobs ---------------------------------------------------- */

void fake_lock(void);
/* Unlocks and returns `result`, so that an entry point can end with `return fake_unlock(code);`. */
int fake_unlock(int result);
extern fake_cuda_counters fake_counters;
/* CBLOB_FAKE_CUDA_DEFERRED: queued work runs only when something waits for it. */
bool fake_deferred(void);
/* Reports a misuse that a real GPU would turn into silent corruption, and ends the process: the
 * test fails, whatever it checks. */
void fake_violation(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- contexts ------------------------------------------------------------------------------------ */

/* The device of the calling thread's current context, or -1. */
int fake_current_device(void);
/* The fake cuBLAS's counts. */
FAKE_API void fake_count_blas(int handles, int host_sums);
/* Whether the calling thread has a context current (cuBLAS needs one). */
FAKE_API int fake_context_current(void);
/* 0, or why calls on the current context fail: no context, or the sticky error of a fault. */
int fake_context_status(void);
/* The sticky error of a device (0: none). A fault makes every later call on the device fail. */
int fake_device_lost(int device);
void fake_device_fault(int device, int error);
/* The primary context of a device, as cuDevicePrimaryCtxRetain hands it out. */
struct CUctx_st *fake_device_context(int device);

/* ---- memory (fake_memory.c) ---------------------------------------------------------------------- */

/* At enqueue time: whether [address, address + bytes) lies in one device allocation (or mapped
 * pinned memory), ready or not. */
bool fake_is_device_range(uint64_t address, size_t bytes);
bool fake_is_pinned(const void *host, size_t bytes);
/* At execution time: the host address of a device range, checked to be inside one live
 * allocation whose stream-ordered allocation has run and that nobody handed back; a violation
 * otherwise. The generated kernels and the fake cuBLAS call this for every array they touch. */
FAKE_API void *fake_device_range(const void *device_ptr, size_t bytes);
/* At execution time: a host range an asynchronous copy reads or writes, checked likewise. */
void *fake_host_range(const void *host, size_t bytes);
/* Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte. */
bool fake_ranges_overlap(uint64_t a, size_t a_bytes, uint64_t b, size_t b_bytes);
void fake_memory_configure(uint64_t bytes_per_device);
/* The memory calls behind cuMemAlloc, cuMemAllocAsync and cuMemAllocFromPoolAsync (ready false
 * until its turn; `pool` the block comes from and goes back to, NULL for cuMemAlloc), cuMemFree,
 * cuMemFreeAsync (free_queued when called, free when it runs), cuMemHostAlloc, cuMemFreeHost and
 * cuPointerGetAttribute. Each returns a CUresult. */
typedef struct fake_pool fake_pool;
int fake_device_alloc(int device, size_t bytes, bool ready, fake_pool *pool, uint64_t *out);
int fake_device_free_queued(uint64_t address);
int fake_device_free_now(uint64_t address);
int fake_pinned_alloc(size_t bytes, void **out);
int fake_pinned_free(void *ptr);
int fake_device_pointer_info(uint64_t address, int *device, uint64_t *start, size_t *size);
/* Marks a stream-ordered allocation ready, and frees one, when their turn in the stream comes. */
void fake_allocation_ready(uint64_t address);
void fake_allocation_free(uint64_t address);

/* Pools (fake_memory.c): each device's default pool, pools of cuMemPoolCreate, and what a
 * synchronisation of a device (-1: every device) makes them give back. */
void fake_pools_configure(int device_count);
fake_pool *fake_default_pool(int device);
int fake_pool_create(int device, fake_pool **out);
bool fake_pool_known(const fake_pool *pool);
int fake_pool_device(const fake_pool *pool);
void fake_pool_set_release_threshold(fake_pool *pool, uint64_t bytes);
void fake_pool_trim(fake_pool *pool, uint64_t keep);
void fake_pool_destroy(fake_pool *pool);
void fake_pools_synchronised(int device);

/* The double's one sequence of queued work (fake_queue.c): the next number (each piece of work
 * and each allocation gets one), and the number of the work running now (UINT64_MAX when none:
 * the host itself). */
uint64_t fake_next_sequence(void);
uint64_t fake_running_sequence(void);

/* ---- streams and work (fake_queue.c) ------------------------------------------------------------- */

typedef struct fake_stream fake_stream;
typedef int (*fake_call_fn)(void *payload); /* a CUresult */

void fake_queue_configure(int device_count, uint64_t seed);
/* The next number of the double's random sequence (from CBLOB_FAKE_CUDA_DEFERRED's seed, or a
 * fixed one in immediate mode): the order of deferred work, blocks and threads. */
uint64_t fake_random(void);

/* A stream handle of the current context (NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * included), or NULL for an unknown or destroyed handle. */
fake_stream *fake_find_stream(void *handle);
int fake_stream_device(const fake_stream *stream);

/* Queues work; each returns a CUresult. Immediate mode runs it at once; deferred mode when
 * something waits for it. `wait` runs it (and what it needs) before returning, as calls that the
 * driver documents as synchronous do. */
int fake_queue_copy(fake_stream *stream, uint64_t dst, uint64_t src, size_t bytes, bool wait);
int fake_queue_copy_2d(fake_stream *stream, uint64_t dst, size_t dst_pitch, uint64_t src, size_t src_pitch,
                       size_t width, size_t height);
int fake_queue_memset(fake_stream *stream, uint64_t dst, unsigned char value, size_t bytes);
int fake_queue_launch(fake_stream *stream, const fake_kernel *kernel, void **params, unsigned int grid,
                      unsigned int block);
int fake_queue_alloc(fake_stream *stream, uint64_t address);
int fake_queue_free(fake_stream *stream, uint64_t address);
/* Generic work for the fake cuBLAS: `run(payload)` at its turn, then free(payload). `addresses`
 * are the device arrays it touches (for the hand-back check). */
FAKE_API int fake_queue_call(void *stream_handle, fake_call_fn run, void *payload, const uint64_t *addresses,
                             int address_count, bool wait);
/* The same, for work that cannot start while *hold is nonzero (a collective whose peers never
 * come, in the fake NCCL): it stays queued, and a wait for it waits forever, an error of the test. */
FAKE_API int fake_queue_held_call(void *stream_handle, fake_call_fn run, void *payload, const uint64_t *addresses,
                                  int address_count, const int *hold);
/* Runs everything queued on every stream of a device (-1: every device), as cuMemFree and
 * cuCtxSynchronize do. Returns the device's sticky error, or 0. */
int fake_run_device(int device);
/* Whether queued work touches [address, address + bytes); describes it in `what`. */
bool fake_queued_work_touches(uint64_t address, size_t bytes, char *what, size_t size);

#endif
