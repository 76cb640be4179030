/* SPDX-License-Identifier: BSD-2-Clause */
/* Ordering under real asynchrony (issue 13, section 2): each test sets up work queued on one
 * stream and used from another, or memory handed back while work on it is queued. On the test
 * double's deferred runs (gpu_fake_deferred) queued work runs only when something waits for it,
 * so a missing wait shows as stale or overwritten values, or as an error of the test when memory
 * handed back is still in use. On a GPU the same tests run as a check of the results. */
#include <stdint.h>
#include <string.h>

#include "gpu_support.h"

#define COUNT 4099 /* not a multiple of anything a kernel might assume */

static cblob_status make_blob(cblob_context *ctx, cblob_blob **out)
{
    const int64_t count = COUNT;
    return cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, &count, out);
}

/* data[i] = i + 1 written on the host, then moved to the device (head SYNCED). */
static cblob_status fill_on_device(cblob_blob *blob)
{
    float *host = NULL;
    cblob_status status = cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, (void **)&host);
    for (int64_t i = 0; status == CBLOB_OK && i < COUNT; ++i)
        host[i] = (float)(i + 1);
    const void *dev = NULL;
    return status == CBLOB_OK ? cblob_blob_gpu_ptr(blob, CBLOB_PART_DATA, &dev) : status;
}

/* Whether data[i] == factor * (i + 1) for every i, read through the blob's host accessor. */
static bool holds_scaled(cblob_blob *blob, float factor)
{
    const float *host = NULL;
    if (cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, (const void **)&host) != CBLOB_OK)
        return false;
    for (int64_t i = 0; i < COUNT; ++i)
        if (host[i] != factor * (float)(i + 1)) {
            fprintf(stderr, "data[%lld] is %g, expected %g\n", (long long)i, (double)host[i], (double)(factor * (float)(i + 1)));
            return false;
        }
    return true;
}

/* ---- 1. contexts' streams on shared memory ------------------------------------------------------ */

/* A reads what B's queued kernel writes: B's kernel must run first. */
TEST(shared_memory_read_by_another_context_waits_for_the_writer)
{
    REQUIRE_GPU();
    streamed_context writer, reader;
    CHECK_OK(open_streamed(&writer));
    CHECK_OK(open_streamed(&reader));
    cblob_blob *written = NULL, *read = NULL;
    CHECK_OK(make_blob(writer.ctx, &written));
    CHECK_OK(make_blob(reader.ctx, &read));
    CHECK_OK(fill_on_device(written));
    CHECK_OK(cblob_blob_scale(written, CBLOB_PART_DATA, 2.0)); /* queued on the writer's stream */
    CHECK_OK(cblob_blob_share(read, written, CBLOB_PART_DATA));
    CHECK(holds_scaled(read, 2.0f)); /* copied back on the reader's stream */
    cblob_blob_destroy(read);
    cblob_blob_destroy(written);
    close_streamed(&reader);
    close_streamed(&writer);
}

/* copy_from on the reader's stream reads the source the writer's queued kernel writes. */
TEST(copy_from_a_blob_of_another_context_waits_for_its_writer)
{
    REQUIRE_GPU();
    streamed_context writer, reader;
    CHECK_OK(open_streamed(&writer));
    CHECK_OK(open_streamed(&reader));
    cblob_blob *source = NULL, *copy = NULL;
    CHECK_OK(make_blob(writer.ctx, &source));
    CHECK_OK(make_blob(reader.ctx, &copy));
    CHECK_OK(fill_on_device(source));
    CHECK_OK(cblob_blob_scale(source, CBLOB_PART_DATA, 3.0));
    CHECK_OK(cblob_blob_copy_from(copy, source, CBLOB_PART_DATA, 0)); /* device to device, reader's stream */
    CHECK(holds_scaled(copy, 3.0f));
    cblob_blob_destroy(copy);
    cblob_blob_destroy(source);
    close_streamed(&reader);
    close_streamed(&writer);
}

/* The other way round: B's queued kernel reads shared memory that A then overwrites; A's write
 * must wait for B's read. */
TEST(shared_memory_written_by_another_context_waits_for_queued_readers)
{
    REQUIRE_GPU();
    streamed_context owner, reader;
    CHECK_OK(open_streamed(&owner));
    CHECK_OK(open_streamed(&reader));
    cblob_blob *shared = NULL, *view = NULL, *sum = NULL;
    CHECK_OK(make_blob(owner.ctx, &shared));
    CHECK_OK(make_blob(reader.ctx, &view));
    CHECK_OK(make_blob(reader.ctx, &sum));
    CHECK_OK(fill_on_device(shared));
    CHECK_OK(cblob_blob_share(view, shared, CBLOB_PART_DATA));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(sum, CBLOB_PART_DATA, &dev)); /* zeros, on the device */
    CHECK_OK(cblob_blob_add(sum, view, CBLOB_PART_DATA));             /* queued: sum = data */
    CHECK_OK(cblob_blob_scale(shared, CBLOB_PART_DATA, 5.0));         /* queued on the owner's stream */
    CHECK(holds_scaled(shared, 5.0f)); /* the owner's stream has run */
    CHECK(holds_scaled(sum, 1.0f));    /* the add saw the values before the scale */
    cblob_blob_destroy(sum);
    cblob_blob_destroy(view);
    cblob_blob_destroy(shared);
    close_streamed(&reader);
    close_streamed(&owner);
}

/* ---- 2. caller buffers released while work on them is queued ------------------------------------ */

typedef struct handed_back {
    void *ptr;
    size_t bytes;
    int calls;
    bool device; /* else pinned host memory */
} handed_back;

/* A caching allocator (PyTorch's, CuPy's) takes the buffer back and may hand it out at once. */
static void give_back(void *ptr, void *user_data)
{
    handed_back *buffer = user_data;
    gpu_give_back(ptr, buffer->bytes);
    buffer->calls++;
    if (buffer->device)
        gpu_device_free(ptr);
    else
        gpu_pinned_free(ptr);
}

TEST(set_gpu_data_release_waits_for_queued_kernels)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    cblob_blob *blob = NULL;
    CHECK_OK(make_blob(c.ctx, &blob));
    handed_back buffer = {gpu_device_alloc(COUNT * sizeof(float)), COUNT * sizeof(float), 0, true};
    CHECK(buffer.ptr != NULL);
    CHECK_OK(cblob_blob_set_gpu_data(blob, buffer.ptr, buffer.bytes, give_back, &buffer));
    CHECK_OK(cblob_blob_scale(blob, CBLOB_PART_DATA, 2.0)); /* queued on the caller's buffer */
    cblob_blob_destroy(blob);                               /* lets go of the buffer */
    CHECK_EQ_INT(buffer.calls, 1);
    close_streamed(&c);
}

TEST(set_cpu_data_release_waits_for_a_queued_push)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    cblob_blob *blob = NULL;
    CHECK_OK(make_blob(c.ctx, &blob));
    handed_back buffer = {gpu_pinned_alloc(COUNT * sizeof(float)), COUNT * sizeof(float), 0, false};
    CHECK(buffer.ptr != NULL);
    for (int64_t i = 0; i < COUNT; ++i)
        ((float *)buffer.ptr)[i] = (float)(i + 1);
    CHECK_OK(cblob_blob_set_cpu_data(blob, buffer.ptr, buffer.bytes, give_back, &buffer));
    CHECK_OK(cblob_blob_async_push(blob, CBLOB_PART_DATA)); /* reads the pinned buffer when it runs */
    cblob_blob_destroy(blob);
    CHECK_EQ_INT(buffer.calls, 1);
    close_streamed(&c);
}

/* ---- 3. device pointers and the work queued on them --------------------------------------------- */

/* The caller writes through the pointer on a stream of its own: cblob's zero-fill of the new
 * memory must not land after it. */
TEST(mutable_gpu_ptr_is_ready_for_another_stream)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    cblob_blob *blob = NULL;
    CHECK_OK(make_blob(c.ctx, &blob));
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(blob, CBLOB_PART_DATA, &dev)); /* new memory, zero-filled */
    void *mine = gpu_stream_create();
    CHECK(mine != NULL);
    static float values[COUNT];
    for (int64_t i = 0; i < COUNT; ++i)
        values[i] = (float)(i + 1);
    CHECK(gpu_write_on_stream(mine, dev, values, sizeof values));
    CHECK(holds_scaled(blob, 1.0f));
    gpu_stream_destroy(mine);
    cblob_blob_destroy(blob);
    close_streamed(&c);
}

/* The same for a pointer to memory a cblob kernel is still writing. */
TEST(gpu_ptr_is_ready_after_queued_kernels)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    cblob_blob *blob = NULL, *copy = NULL;
    CHECK_OK(make_blob(c.ctx, &blob));
    CHECK_OK(make_blob(c.ctx, &copy));
    CHECK_OK(fill_on_device(blob));
    CHECK_OK(cblob_blob_scale(blob, CBLOB_PART_DATA, 2.0));
    const void *dev = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(blob, CBLOB_PART_DATA, &dev));
    /* The caller reads it on its own stream into memory of its own. */
    void *mine = gpu_stream_create(), *target = NULL;
    CHECK(mine != NULL);
    CHECK_OK(cblob_blob_mutable_gpu_ptr(copy, CBLOB_PART_DATA, &target));
    static float values[COUNT];
    CHECK(gpu_copy_on_stream(mine, target, dev, sizeof values));
    CHECK(holds_scaled(copy, 2.0f));
    gpu_stream_destroy(mine);
    cblob_blob_destroy(copy);
    cblob_blob_destroy(blob);
    close_streamed(&c);
}

/* ---- 4. a stream per context ----------------------------------------------------------------------- */

TEST(each_context_has_a_stream_of_its_own)
{
    REQUIRE_GPU();
    cblob_context *first = NULL, *second = NULL;
    CHECK_OK(cblob_context_create(&first));
    CHECK_OK(cblob_context_create(&second));
    CHECK_OK(cblob_context_set_mode(first, CBLOB_MODE_GPU));
    CHECK_OK(cblob_context_set_mode(second, CBLOB_MODE_GPU));
    void *a = NULL, *b = NULL;
    CHECK_OK(cblob_context_stream(first, &a));
    CHECK_OK(cblob_context_stream(second, &b));
    CHECK(a != NULL && b != NULL && a != b); /* neither the legacy default stream nor shared */
    cblob_context_destroy(first);
    cblob_context_destroy(second);
}

/* Waiting for one context's work does not wait for another's, and a device-to-device copy
 * queues without blocking the host. */
TEST(contexts_do_not_wait_for_each_other)
{
    REQUIRE_GPU();
    if (!gpu_is_deferred())
        SKIP("only the deferred double shows what is still queued");
    cblob_context *busy = NULL, *other = NULL;
    CHECK_OK(cblob_context_create(&busy));
    CHECK_OK(cblob_context_create(&other));
    CHECK_OK(cblob_context_set_mode(busy, CBLOB_MODE_GPU));
    CHECK_OK(cblob_context_set_mode(other, CBLOB_MODE_GPU));
    cblob_blob *queued = NULL, *mine = NULL, *copy = NULL;
    CHECK_OK(make_blob(busy, &queued));
    CHECK_OK(make_blob(other, &mine));
    CHECK_OK(make_blob(other, &copy));
    CHECK_OK(fill_on_device(queued));
    CHECK_OK(fill_on_device(mine));
    CHECK_OK(cblob_blob_scale(queued, CBLOB_PART_DATA, 2.0));
    CHECK_OK(cblob_blob_scale(mine, CBLOB_PART_DATA, 3.0));
    CHECK(holds_scaled(mine, 3.0f));     /* waits for this context's stream only */
    CHECK_EQ_INT(gpu_pending_work(), 1); /* the other context's scale */
    CHECK_OK(cblob_blob_copy_from(copy, mine, CBLOB_PART_DATA, 0));
    CHECK(gpu_pending_work() > 1); /* the device-to-device copy is queued */
    CHECK(holds_scaled(copy, 3.0f));
    CHECK(holds_scaled(queued, 2.0f));
    cblob_blob_destroy(copy);
    cblob_blob_destroy(mine);
    cblob_blob_destroy(queued);
    cblob_context_destroy(busy);
    cblob_context_destroy(other);
}

/* The per-thread default stream follows the calling OS thread, which goroutines and thread pools
 * change under a context: refused. */
TEST(set_stream_refuses_the_per_thread_default_stream)
{
    REQUIRE_GPU();
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_OK(cblob_context_set_mode(ctx, CBLOB_MODE_GPU));
    void *before = NULL, *after = NULL;
    CHECK_OK(cblob_context_stream(ctx, &before));
    CHECK_ERROR(cblob_context_set_stream(ctx, (void *)2 /* CU_STREAM_PER_THREAD */), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "per-thread") != NULL);
    CHECK_OK(cblob_context_stream(ctx, &after));
    CHECK(after == before);
    cblob_context_destroy(ctx);
}

TEST(set_stream_refuses_a_stream_of_another_device)
{
    REQUIRE_GPU();
    int32_t devices = 0;
    CHECK_OK(cblob_gpu_probe(&devices));
    if (devices < 2)
        SKIP("needs two devices (the gpu_fake suite's double is given two for this test)");
    void *foreign = gpu_stream_create_on(1);
    CHECK(foreign != NULL);
    cblob_context *ctx = NULL;
    CHECK_OK(cblob_context_create(&ctx));
    CHECK_ERROR(cblob_context_set_stream(ctx, foreign), CBLOB_ERR_INVALID_ARGUMENT);
    CHECK(strstr(cblob_last_error_message(), "device 0") != NULL);
    cblob_context_destroy(ctx);
}

/* ---- 5. cuBLAS per context, sums in device memory --------------------------------------------- */

/* One handle per device behind one lock, in host pointer mode, made every thread wait while one
 * asum waited for its stream. Each context has a handle of its own now (for axpy and scal; the
 * sums are the generated kernels, issue 25), and sums land in device memory, so no call waits
 * inside the library's locks. */
TEST(cublas_handles_are_per_context_and_sums_go_to_device_memory)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("only the double counts cuBLAS handles");
    const fake_cuda_counters before = gpu_counters();
    cblob_context *contexts[2] = {NULL, NULL};
    for (int c = 0; c < 2; ++c) {
        cblob_blob *blob = NULL;
        double sum = 0;
        CHECK_OK(cblob_context_create(&contexts[c]));
        CHECK_OK(cblob_context_set_mode(contexts[c], CBLOB_MODE_GPU));
        CHECK_OK(make_blob(contexts[c], &blob));
        CHECK_OK(fill_on_device(blob));
        CHECK_OK(cblob_blob_asum(blob, CBLOB_PART_DATA, &sum));
        CHECK_NEAR(sum, (double)COUNT * (COUNT + 1) / 2, 1e-3 * COUNT * COUNT);
        CHECK_OK(cblob_blob_scale(blob, CBLOB_PART_DATA, 2.0));
        CHECK_OK(cblob_blob_sumsq(blob, CBLOB_PART_DATA, &sum));
        cblob_blob_destroy(blob);
    }
    CHECK_COUNTER_DELTA(before, blas_handles, 2); /* one per context: axpy and scal with host scalars */
    CHECK_COUNTER_DELTA(before, blas_host_sums, 0);
    cblob_context_destroy(contexts[0]);
    cblob_context_destroy(contexts[1]);
}

/* ---- 6. memory whose pointer left cblob, freed under a consumer's queued work (issue 25) ---------- */

/* A consumer (PyTorch, CuPy) queues work on a pointer cblob handed out, on a stream of its own, and
 * lets go without waiting for it. cblob's free must come after that work: on the double the next
 * allocation of the same size gets the freed block, which cblob then overwrites. */
TEST(memory_behind_a_gpu_ptr_outlives_a_consumers_queued_work)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    cblob_blob *blob = NULL, *next = NULL;
    CHECK_OK(make_blob(c.ctx, &blob));
    CHECK_OK(fill_on_device(blob));
    const void *dev = NULL;
    CHECK_OK(cblob_blob_gpu_ptr(blob, CBLOB_PART_DATA, &dev));
    void *consumer = gpu_stream_create(), *mine = gpu_device_alloc(COUNT * sizeof(float));
    CHECK(consumer != NULL && mine != NULL);
    CHECK(gpu_queue_copy(consumer, mine, dev, COUNT * sizeof(float))); /* queued, not waited for */
    cblob_blob_destroy(blob); /* the last holder lets go of the memory */
    CHECK_OK(cblob_context_synchronize(c.ctx));
    CHECK_OK(make_blob(c.ctx, &next)); /* the same size: the pool's freed block, if the free ran */
    CHECK_OK(cblob_blob_fill(next, CBLOB_PART_DATA, -7.0));
    CHECK_OK(cblob_context_synchronize(c.ctx));
    static float seen[COUNT];
    CHECK(gpu_stream_synchronize(consumer));
    CHECK(gpu_read_on_stream(consumer, seen, mine, sizeof seen));
    for (int64_t i = 0; i < COUNT; ++i)
        CHECK_MSG(seen[i] == (float)(i + 1), "the consumer read %g at %lld, expected %g", (double)seen[i], (long long)i,
                  (double)(i + 1));
    cblob_blob_destroy(next);
    gpu_device_free(mine);
    gpu_stream_destroy(consumer);
    close_streamed(&c);
}

/* Host memory pinned in GPU mode is freed after cblob's own push from it has run, without
 * counting on cuMemFreeHost to wait (the double's does not). */
TEST(pinned_host_memory_outlives_a_queued_push)
{
    REQUIRE_GPU();
    streamed_context c;
    CHECK_OK(open_streamed(&c));
    cblob_blob *blob = NULL;
    CHECK_OK(make_blob(c.ctx, &blob));
    float *host = NULL;
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, (void **)&host)); /* pinned: the context is in GPU mode */
    CHECK_COUNTER_DELTA(before, pinned_allocs, 1);
    for (int64_t i = 0; i < COUNT; ++i)
        host[i] = (float)i;
    CHECK_OK(cblob_blob_async_push(blob, CBLOB_PART_DATA)); /* reads the pinned buffer when it runs */
    cblob_blob_destroy(blob);
    CHECK_COUNTER_DELTA(before, pinned_frees, 1);
    close_streamed(&c);
}
