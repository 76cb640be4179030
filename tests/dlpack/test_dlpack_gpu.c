/* SPDX-License-Identifier: BSD-2-Clause */
/* DLPack with a GPU: device exports (kDLCUDA), pinned host exports (kDLCUDAHost, conformance.md
 * 1.60 and 3.4), how an export moves the memory's head, CUDA tensors imported as blobs, and
 * set_gpu_data refused under a device export. Built twice, as the GPU memory suites are: against
 * the test double of the driver (dlpack_gpu_fake, which also counts transfers) and against the
 * machine's GPU (dlpack_gpu_device, skipped with the reason where there is none). Device memory is
 * only read through cblob: the double's is not host-readable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cblob/dlpack.h"
#include "gpu/gpu_support.h"

#define COUNT 37

/* Writes i * 0.5 through the host (head AT_CPU). */
static cblob_status fill(cblob_blob *blob, cblob_part part)
{
    void *ptr = NULL;
    cblob_status status = cblob_blob_mutable_cpu_ptr(blob, part, &ptr);
    for (int i = 0; status == CBLOB_OK && i < COUNT; ++i)
        ((float *)ptr)[i] = (float)i * 0.5f;
    return status;
}

static double element(cblob_blob *blob, cblob_part part, int64_t i)
{
    double value = -1;
    cblob_blob_read_element(blob, part, 1, &i, &value);
    return value;
}

TEST(device_export_is_the_device_copy)
{
    REQUIRE_GPU();
    gpu_blob f;
    CHECK_OK(open_blob(&f, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA));
    fake_cuda_counters before = gpu_counters();
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_DEVICE, 1, &t));
    CHECK_TRANSFERS(before, 1, 0, 0);
    CHECK_EQ_INT(head_of(f.blob, CBLOB_PART_DATA), CBLOB_HEAD_SYNCED); /* read, as gpu_ptr */
    CHECK_EQ_INT(t->dl_tensor.device.device_type, kDLCUDA);
    CHECK_EQ_INT(t->dl_tensor.device.device_id, 0);
    CHECK_EQ_INT(t->flags, DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK_EQ_INT(t->dl_tensor.ndim, 1);
    CHECK_EQ_INT(t->dl_tensor.shape[0], COUNT);
    const void *device = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(f.blob, CBLOB_PART_DATA, &device));
    CHECK(t->dl_tensor.data == device);

    /* A writable export marks the device copy current, as mutable_gpu_ptr. */
    DLManagedTensor *w = NULL;
    CHECK_OK(cblob_blob_to_dlpack_legacy(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_DEVICE, &w));
    CHECK_EQ_INT(head_of(f.blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    CHECK(w->dl_tensor.data == device);
    t->deleter(t);
    w->deleter(w);
    close_blob(&f);
}

/* The tensor holds the device memory after the blob is gone; its deleter frees it. */
TEST(device_tensor_outlives_the_blob)
{
    REQUIRE_GPU();
    gpu_blob f;
    CHECK_OK(open_blob(&f, CBLOB_DTYPE_FLOAT32, COUNT));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DIFF, CBLOB_MEMORY_DEVICE, 0, &t));
    fake_cuda_counters before = gpu_counters();
    close_blob(&f);
    CHECK_COUNTER_DELTA(before, device_frees, 0);
    t->deleter(t);
    CHECK_COUNTER_DELTA(before, device_frees, 1);
}

/* A host export of memory current on the device syncs it first, moving the head as cpu_ptr
 * (read-only) or mutable_cpu_ptr would. */
TEST(host_export_syncs_from_the_device)
{
    REQUIRE_GPU();
    gpu_blob f;
    CHECK_OK(open_blob(&f, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA));
    void *device = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(f.blob, CBLOB_PART_DATA, &device));
    CHECK_OK(cblob_blob_scale(f.blob, CBLOB_PART_DATA, 2.0)); /* on the GPU: the host copy is stale */
    CHECK_EQ_INT(head_of(f.blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    fake_cuda_counters before = gpu_counters();
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 1, &t));
    CHECK_TRANSFERS(before, 0, 1, 0);
    CHECK_EQ_INT(head_of(f.blob, CBLOB_PART_DATA), CBLOB_HEAD_SYNCED);
    CHECK_NEAR(((const float *)t->dl_tensor.data)[9], 9.0, 0);
    t->deleter(t);

    CHECK_OK(cblob_blob_mutable_gpu_ptr(f.blob, CBLOB_PART_DATA, &device));
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 0, &t));
    CHECK_EQ_INT(head_of(f.blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
    ((float *)t->dl_tensor.data)[3] = 100;
    CHECK_NEAR(element(f.blob, CBLOB_PART_DATA, 3), 100, 0);
    t->deleter(t);
    close_blob(&f);
}

/* Host memory allocated in GPU mode is pinned (Caffe's cudaMallocHost): kDLCUDAHost, device 0. */
TEST(pinned_host_memory_exports_as_cuda_host)
{
    REQUIRE_GPU();
    gpu_blob f;
    CHECK_OK(open_blob(&f, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(cblob_context_set_mode(f.ctx, CBLOB_MODE_GPU));
    fake_cuda_counters before = gpu_counters();
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA));
    CHECK_COUNTER_DELTA(before, pinned_allocs, 1);
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 1, &t));
    CHECK_EQ_INT(t->dl_tensor.device.device_type, kDLCUDAHost);
    CHECK_EQ_INT(t->dl_tensor.device.device_id, 0);
    /* A CUDA-host tensor imports as host memory. */
    cblob_blob *back = NULL;
    DLManagedTensor *legacy = NULL;
    CHECK_OK(cblob_blob_to_dlpack_legacy(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, &legacy));
    CHECK_OK(cblob_blob_from_dlpack_legacy(f.ctx, legacy, &back));
    CHECK_EQ_INT(head_of(back, CBLOB_PART_DATA), CBLOB_HEAD_AT_CPU);
    CHECK_NEAR(element(back, CBLOB_PART_DATA, 36), 18, 0);
    cblob_blob_destroy(back);
    close_blob(&f);
    CHECK_COUNTER_DELTA(before, pinned_frees, 0);
    t->deleter(t);
    CHECK_COUNTER_DELTA(before, pinned_frees, 1);
}

/* A CUDA tensor imports as the blob's device data (head AT_GPU), read back through cblob. */
TEST(cuda_tensor_imports_as_device_data)
{
    REQUIRE_GPU();
    gpu_blob f;
    CHECK_OK(open_blob(&f, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(fill(f.blob, CBLOB_PART_DATA));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_DEVICE, 0, &t));
    cblob_context *other = NULL;
    CHECK_OK(cblob_context_create(&other));
    cblob_blob *back = NULL;
    CHECK_OK(cblob_blob_from_dlpack(other, t, &back));
    CHECK_EQ_INT(head_of(back, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    const void *device = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(back, CBLOB_PART_DATA, &device));
    CHECK(device == t->dl_tensor.data);
    fake_cuda_counters before = gpu_counters();
    CHECK_NEAR(element(back, CBLOB_PART_DATA, 20), 10, 0);
    CHECK_TRANSFERS(before, 0, 1, 0);
    CHECK_OK(cblob_blob_scale(back, CBLOB_PART_DATA, 4.0)); /* SYNCED: runs on the device */
    /* The import is a consumer like any other: its work on the memory (queued on its context's
     * stream) must finish before the producer uses the memory again. */
    CHECK_OK(cblob_context_synchronize(other));
    CHECK_NEAR(element(f.blob, CBLOB_PART_DATA, 20), 40, 0);
    close_blob(&f);
    cblob_blob_destroy(back);
    cblob_context_destroy(other);
}

/* A CUDA tensor's device must be the context's; a host pointer is not device memory. */
TEST(cuda_tensor_import_checks_the_memory)
{
    REQUIRE_GPU();
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    static float host[4];
    int64_t shape[1] = {4};
    DLManagedTensorVersioned t = {
        .version = {1, 0},
        .dl_tensor = {.data = host, .device = {kDLCUDA, 0}, .ndim = 1, .dtype = {kDLFloat, 32, 1}, .shape = shape},
    };
    cblob_blob *blob = NULL;
    CHECK_ERROR(cblob_blob_from_dlpack(ctx, &t, &blob), CBLOB_ERR_INVALID_ARGUMENT);
    t.dl_tensor.device.device_id = 1;
    CHECK_ERROR(cblob_blob_from_dlpack(ctx, &t, &blob), CBLOB_ERR_STATE); /* the context opened device 0 */
    CHECK(blob == NULL);
    cblob_context_destroy(ctx);
}

/* set_gpu_data would free the device buffer a tensor views: refused until it is deleted. */
TEST(set_gpu_data_waits_for_device_exports)
{
    REQUIRE_GPU();
    gpu_blob f;
    CHECK_OK(open_blob(&f, CBLOB_DTYPE_FLOAT32, COUNT));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_DEVICE, 0, &t));
    cblob_blob *holder = NULL;
    const int64_t count = COUNT;
    void *buffer = NULL;
    CHECK_OK(cblob_blob_create(f.ctx, CBLOB_DTYPE_FLOAT32, 1, &count, &holder));
    CHECK_OK(cblob_blob_mutable_gpu_ptr(holder, CBLOB_PART_DATA, &buffer));
    CHECK_ERROR(cblob_blob_set_gpu_data(f.blob, buffer, COUNT * sizeof(float), NULL, NULL), CBLOB_ERR_STATE);
    const void *device = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(f.blob, CBLOB_PART_DATA, &device));
    CHECK(device == t->dl_tensor.data);
    /* A host export does not hold the device buffer. */
    DLManagedTensorVersioned *host = NULL;
    CHECK_OK(cblob_blob_to_dlpack(f.blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 1, &host));
    t->deleter(t);
    CHECK_OK(cblob_blob_set_gpu_data(f.blob, buffer, COUNT * sizeof(float), NULL, NULL));
    host->deleter(host);
    close_blob(&f);
    cblob_blob_destroy(holder);
}

/* The producer's deleter hands the memory back (to a caching allocator): only once the work
 * cblob queued on it has run. */
typedef struct produced {
    DLManagedTensorVersioned tensor;
    int64_t shape[1];
    int deleted;
} produced;

static void delete_produced(DLManagedTensorVersioned *tensor)
{
    produced *p = tensor->manager_ctx;
    gpu_give_back(tensor->dl_tensor.data, COUNT * sizeof(float));
    gpu_device_free(tensor->dl_tensor.data);
    p->deleted++;
}

static void delete_legacy_produced(DLManagedTensor *tensor)
{
    produced *p = tensor->manager_ctx;
    delete_produced(&p->tensor);
}

TEST(cuda_tensor_deleter_waits_for_queued_kernels)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    produced p = {.shape = {COUNT}};
    p.tensor = (DLManagedTensorVersioned){
        .version = {1, 0},
        .manager_ctx = &p,
        .deleter = delete_produced,
        .dl_tensor = {.data = gpu_device_alloc(COUNT * sizeof(float)), .device = {kDLCUDA, 0}, .ndim = 1,
                      .dtype = {kDLFloat, 32, 1}, .shape = p.shape},
    };
    CHECK(p.tensor.dl_tensor.data != NULL);
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_from_dlpack(c.ctx, &p.tensor, &blob));
    CHECK_OK(cblob_blob_scale(blob, CBLOB_PART_DATA, 2.0)); /* queued on the tensor's memory */
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(p.deleted, 1);
    close_streamed(&c);
}

/* ---- DLPack's stream rules (issue 25) -------------------------------------------------------------- */

/* A consumer queues work on an exported device tensor on its own stream and calls the deleter
 * without waiting for it, as PyTorch and CuPy do when their tensor dies: cblob frees the memory
 * only after that work. On the double the next allocation of the same size gets the freed block. */
TEST(device_export_outlives_the_consumers_queued_work)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    const int64_t count = COUNT;
    cblob_blob *blob = NULL, *next = NULL;
    CHECK_OK(cblob_blob_create(c.ctx, CBLOB_DTYPE_FLOAT32, 1, &count, &blob));
    CHECK_OK(fill(blob, CBLOB_PART_DATA));
    DLManagedTensorVersioned *t = NULL;
    CHECK_OK(cblob_blob_to_dlpack(blob, CBLOB_PART_DATA, CBLOB_MEMORY_DEVICE, 1, &t));
    cblob_blob_destroy(blob); /* the tensor is the last holder */
    void *consumer = gpu_stream_create(), *mine = gpu_device_alloc(COUNT * sizeof(float));
    CHECK(consumer != NULL && mine != NULL);
    CHECK(gpu_queue_copy(consumer, mine, t->dl_tensor.data, COUNT * sizeof(float)));
    t->deleter(t);
    CHECK_OK(cblob_context_synchronize(c.ctx));
    CHECK_OK(cblob_blob_create(c.ctx, CBLOB_DTYPE_FLOAT32, 1, &count, &next));
    CHECK_OK(cblob_blob_fill(next, CBLOB_PART_DATA, -7.0));
    CHECK_OK(cblob_context_synchronize(c.ctx));
    float seen[COUNT];
    CHECK(gpu_stream_synchronize(consumer));
    CHECK(gpu_read_on_stream(consumer, seen, mine, sizeof seen));
    for (int i = 0; i < COUNT; ++i)
        CHECK(seen[i] == (float)i * 0.5f);
    cblob_blob_destroy(next);
    gpu_device_free(mine);
    gpu_stream_destroy(consumer);
    close_streamed(&c);
}

/* A producer's CUDA tensor, its values written by work queued on `stream` (NULL: the legacy
 * default stream) that nobody has waited for: value i is i + 1. */
static produced *produce_unfinished(void *stream)
{
    produced *p = calloc(1, sizeof *p);
    static float values[COUNT];
    for (int i = 0; i < COUNT; ++i)
        values[i] = (float)(i + 1);
    p->shape[0] = COUNT;
    p->tensor = (DLManagedTensorVersioned){
        .version = {1, 0},
        .manager_ctx = p,
        .deleter = delete_produced,
        .dl_tensor = {.data = gpu_device_alloc(COUNT * sizeof(float)), .device = {kDLCUDA, 0}, .ndim = 1,
                      .dtype = {kDLFloat, 32, 1}, .shape = p->shape},
    };
    if (p->tensor.dl_tensor.data == NULL || !gpu_queue_write(stream, p->tensor.dl_tensor.data, values, sizeof values)) {
        free(p);
        return NULL;
    }
    return p;
}

static double asum_of(cblob_blob *blob)
{
    double sum = -1;
    return cblob_blob_asum(blob, CBLOB_PART_DATA, &sum) == CBLOB_OK ? sum : -1;
}

#define SUM_OF_VALUES ((double)COUNT * (COUNT + 1) / 2)

/* DLPack's stream=None: the producer's work is ordered before the legacy default stream, and an
 * import given no stream waits for that stream. */
TEST(import_without_a_stream_waits_for_the_legacy_stream)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    produced *p = produce_unfinished(NULL);
    CHECK(p != NULL);
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_from_dlpack(c.ctx, &p->tensor, &blob));
    CHECK(asum_of(blob) == SUM_OF_VALUES); /* on cblob's non-blocking stream */
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(p->deleted, 1);
    free(p);
    close_streamed(&c);
}

/* The producer names its stream: cblob's stream waits for it, for either struct. */
TEST(import_on_a_stream_waits_for_that_stream)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    void *producer = gpu_stream_create();
    CHECK(producer != NULL);
    produced *p = produce_unfinished(producer);
    CHECK(p != NULL);
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_from_dlpack_on_stream(c.ctx, &p->tensor, producer, &blob));
    CHECK(asum_of(blob) == SUM_OF_VALUES);
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(p->deleted, 1);
    free(p);

    /* A legacy tensor the same way (its deleter is the producer's too). */
    produced *q = produce_unfinished(producer);
    CHECK(q != NULL);
    DLManagedTensor legacy = {.dl_tensor = q->tensor.dl_tensor, .manager_ctx = q, .deleter = delete_legacy_produced};
    CHECK_OK(cblob_blob_from_dlpack_legacy_on_stream(c.ctx, &legacy, producer, &blob));
    CHECK(asum_of(blob) == SUM_OF_VALUES);
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(q->deleted, 1);
    free(q);
    gpu_stream_destroy(producer);
    close_streamed(&c);
}

/* The consumer's own stream, as a DLPack consumer passes it to __dlpack__ (the producer then
 * orders its work before it): nothing more to wait for, and no event. */
TEST(import_on_the_contexts_own_stream_adds_no_wait)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    produced *p = produce_unfinished(c.stream);
    CHECK(p != NULL);
    const fake_cuda_counters before = gpu_counters();
    cblob_blob *blob = NULL;
    CHECK_OK(cblob_blob_from_dlpack_on_stream(c.ctx, &p->tensor, c.stream, &blob));
    CHECK_COUNTER_DELTA(before, stream_waits, 0);
    CHECK(asum_of(blob) == SUM_OF_VALUES);
    cblob_blob_destroy(blob);
    free(p);
    close_streamed(&c);
}

/* A stream cblob cannot wait on is refused before anything changes: the tensor stays the
 * caller's, its deleter uncalled. */
TEST(import_on_a_stream_of_another_device_is_refused)
{
    REQUIRE_GPU();
    int32_t devices = 0;
    CHECK_OK(cblob_gpu_probe(&devices));
    if (devices < 2)
        SKIP("needs two devices (the dlpack_gpu_fake suite's double is given two for this test)");
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    void *foreign = gpu_stream_create_on(1);
    CHECK(foreign != NULL);
    produced *p = produce_unfinished(c.stream);
    CHECK(p != NULL);
    cblob_blob *blob = NULL;
    CHECK_ERROR(cblob_blob_from_dlpack_on_stream(c.ctx, &p->tensor, foreign, &blob), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "device 0") != NULL); /* the context's, which the stream is not of */
    CHECK(blob == NULL);
    CHECK_EQ_INT(p->deleted, 0);
    CHECK(gpu_stream_synchronize(c.stream)); /* the producer's own write, before it frees the memory */
    p->tensor.deleter(&p->tensor);
    CHECK_EQ_INT(p->deleted, 1);
    free(p);
    close_streamed(&c);
}
