/* SPDX-License-Identifier: BSD-2-Clause */
/* What the GPU tests share. The same tests run against the test double of the driver
 * (tests/fake_cuda, on every machine) and against a real GPU (skipped with the reason when the
 * machine has none); only the double can count transfers and allocations, so those checks are
 * made where it is loaded. */
#ifndef CBLOB_TESTS_GPU_SUPPORT_H
#define CBLOB_TESTS_GPU_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "fake_cuda.h"
#include "harness.h"

/* Skips the test, printing why, unless cblob can use a GPU (real or the double). */
#define REQUIRE_GPU() \
    do { \
        char gpu_reason_[768]; \
        if (!gpu_usable(gpu_reason_, sizeof gpu_reason_)) \
            SKIP(gpu_reason_); \
    } while (0)

bool gpu_usable(char *reason, size_t size);

/* Whether the driver cblob loaded is the test double (which counts what it does). */
bool gpu_is_fake(void);
/* The double's counters now; all zero on a real GPU. */
fake_cuda_counters gpu_counters(void);
/* Device memory per device on the double (device out-of-memory tests); false on a real GPU. */
bool gpu_set_device_memory(uint64_t bytes);
/* Asynchronous copies the double has queued and not run yet (0 on a real GPU). */
uint64_t gpu_pending_copies(void);
/* Whether the double runs queued work only when something waits for it (deferred mode). */
bool gpu_is_deferred(void);
/* The test hands memory back to its owner (call it from the release callbacks and deleters tests
 * give cblob): on the double, work still queued on it, or run on it later, fails the test. */
void gpu_give_back(const void *ptr, size_t bytes);
/* On the double, the next kernel to run faults with `error` (a CUresult) and the device is lost;
 * false on a real GPU. */
bool gpu_inject_fault(int error);
/* On the double, the occupancy the driver reports from now on (0: its default); false on a real
 * GPU. Kernels loaded before keep the occupancy they were loaded with. */
bool gpu_set_occupancy(int blocks_per_multiprocessor);

/* Pushes device 0's primary context on the calling thread until the driver refuses (the double
 * holds 16), so that cblob cannot make its context current; returns how many it pushed, for
 * gpu_empty_context_stack. */
int gpu_fill_context_stack(void);
void gpu_empty_context_stack(int pushed);

/* A stream of device 0 from the loaded driver (cuStreamCreate), NULL if it cannot make one. */
void *gpu_stream_create(void);
/* The same on another device. */
void *gpu_stream_create_on(int device);
/* Queued work of any kind the double has not run yet (0 on a real GPU). */
uint64_t gpu_pending_work(void);
void gpu_stream_destroy(void *stream);

/* Memory from the loaded driver, behind cblob's back (the primary context of device 0): device
 * memory (cuMemAlloc) and pinned host memory (cuMemHostAlloc); NULL if it cannot be had. */
void *gpu_device_alloc(size_t bytes);
void gpu_device_free(void *ptr);
void *gpu_pinned_alloc(size_t bytes);
void gpu_pinned_free(void *ptr);
/* A caller's own work on `stream`: copies host bytes to device memory and waits for it. */
bool gpu_write_on_stream(void *stream, void *device_dst, const void *src, size_t bytes);
/* The same, device to device. */
bool gpu_copy_on_stream(void *stream, void *device_dst, const void *device_src, size_t bytes);
/* The same, device to host. */
bool gpu_read_on_stream(void *stream, void *dst, const void *device_src, size_t bytes);

/* A consumer or producer that does not wait, as PyTorch and CuPy do not: its work is queued on
 * `stream` (NULL: the legacy default stream) and the call returns at once. Host memory is read
 * when the copy is queued (pageable memory is staged). The caller waits with
 * gpu_stream_synchronize before reading what it wrote. */
bool gpu_queue_write(void *stream, void *device_dst, const void *src, size_t bytes);
bool gpu_queue_copy(void *stream, void *device_dst, const void *device_src, size_t bytes);
bool gpu_stream_synchronize(void *stream);

/* A context in GPU mode whose device work goes to a non-blocking stream of its own. */
typedef struct streamed_context {
    cblob_context *ctx;
    void *stream;
} streamed_context;
cblob_status open_streamed(streamed_context *c);
void close_streamed(streamed_context *c);

/* A context and a one-axis blob of `count` elements in it. */
typedef struct gpu_blob {
    cblob_context *ctx;
    cblob_blob *blob;
} gpu_blob;
cblob_status open_blob(gpu_blob *b, cblob_dtype dtype, int64_t count);
void close_blob(gpu_blob *b);

/* A part's head, or -1 when the call fails. */
cblob_head head_of(const cblob_blob *blob, cblob_part part);

/* Transfers since a snapshot, checked only on the double. */
#define CHECK_TRANSFERS(since, h2d, d2h, d2d) \
    do { \
        if (gpu_is_fake()) { \
            const fake_cuda_counters now_ = gpu_counters(); \
            CHECK_EQ_INT(now_.host_to_device - (since).host_to_device, (h2d)); \
            CHECK_EQ_INT(now_.device_to_host - (since).device_to_host, (d2h)); \
            CHECK_EQ_INT(now_.device_to_device - (since).device_to_device, (d2d)); \
        } \
    } while (0)

#define CHECK_COUNTER_DELTA(since, field, delta) \
    do { \
        if (gpu_is_fake()) \
            CHECK_EQ_INT(gpu_counters().field - (since).field, (delta)); \
    } while (0)

#endif
