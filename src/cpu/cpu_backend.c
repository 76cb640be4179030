/* SPDX-License-Identifier: BSD-2-Clause */
/* The CPU backend: the backend interface (src/core/backend.h) over host memory and the generated
 * CPU kernels. Its one device is always there, so it has no device part; its work has finished
 * when a call returns, so it has no queue part. Large copies split over the thread pool. */
#include "cpu_backend.h"

#include "cpu/kernels.h"
#include "host_memory.h"
#include "threads.h"

static cblob_status host_alloc(const cb_device *host, size_t bytes, bool zeroed, void **out)
{
    (void)host;
    return cb_host_alloc(bytes, zeroed, out);
}

static void host_free(const cb_device *host, void *ptr, size_t bytes)
{
    (void)host;
    cb_host_free(ptr, bytes);
}

/* Every kind of copy is one in host memory. A caller's array may be the blob's own memory
 * (cblob_blob_copy_in of its own host copy): overlapping buffers are moved as memmove does. */
static cblob_status host_copy(const cb_device *host, void *dst, const void *src, size_t bytes, cb_copy_kind kind)
{
    (void)host;
    (void)kind;
    cb_parallel_move(dst, src, bytes);
    return CBLOB_OK;
}

static const cb_backend_memory host_memory = {
    .is_host = true,
    .alloc = host_alloc,
    .free = host_free,
    .copy = host_copy,
};

const cb_backend cb_cpu_backend = {
    .name = "cpu",
    .memory = &host_memory,
    .kernels = cb_cpu_kernel_table,
};
