/* SPDX-License-Identifier: BSD-2-Clause */
/* Arenas and communicators with device memory: a device arena under a host engine (the thread
 * engine, ranks as threads), and NCCL communicators. On the double (comm_gpu_fake, with its fake
 * NCCL of one rank per communicator) and on a real GPU with NCCL (comm_gpu_device: one rank per
 * GPU, so several ranks need several GPUs); each test skips with the reason when what it needs
 * is missing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../comm/thread_engine.h"
#include "gpu_support.h"

#define COUNT 300

/* Whether this run queues in launch-blocking mode (the comm_gpu_blocking suite). */
static bool launch_blocking_run(void)
{
    const char *knob = getenv("CBLOB_CUDA_LAUNCH_BLOCKING");
    return knob != NULL && strcmp(knob, "1") == 0;
}

static cblob_context *gpu_context(void)
{
    cblob_context *ctx = NULL;
    if (cblob_context_create(&ctx) != CBLOB_OK || cblob_context_set_mode(ctx, CBLOB_MODE_GPU) != CBLOB_OK)
        return NULL;
    return ctx;
}

static float value(int rank, int b, int i)
{
    return (float)((i * 5 + b * 3 + rank * 7) % 23 - 11) * 0.25f;
}

/* A float32 blob whose diff holds value(rank, b, i), moved to the device (head AT_GPU). */
static cblob_blob *device_blob(cblob_context *ctx, int64_t count, int rank, int b)
{
    cblob_blob *blob = NULL;
    float *host = NULL;
    void *device = NULL;
    if (cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, &count, &blob) != CBLOB_OK ||
        cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DIFF, (void **)&host) != CBLOB_OK)
        return NULL;
    for (int64_t i = 0; i < count; ++i)
        host[i] = value(rank, b, (int)i);
    if (cblob_blob_mutable_gpu_ptr(blob, CBLOB_PART_DIFF, &device) != CBLOB_OK)
        return NULL;
    return blob;
}

/* ---- a device arena under a host engine ----------------------------------------------------- */

#define RANKS 3

typedef struct arena_run {
    te_world *world;
    int failures[RANKS];
} arena_run;

static void device_arena_rank(int rank, void *arg)
{
    arena_run *run = arg;
    run->failures[rank] = 1;
    cblob_context *ctx = gpu_context();
    CHECK(ctx != NULL);
    const cblob_comm_engine engine = te_engine(run->world, rank);
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create(ctx, &engine, &comm));
    CHECK_OK(cblob_comm_set_timeout(comm, 20000));
    const int64_t counts[3] = {COUNT, 7, 65};
    cblob_blob *blobs[3];
    for (int b = 0; b < 3; ++b)
        CHECK((blobs[b] = device_blob(ctx, counts[b], rank, b)) != NULL);
    cblob_blob *arena = NULL;
    CHECK_OK(cblob_arena_create(blobs, 3, CBLOB_PART_DIFF, 256, &arena));
    cblob_head head = CBLOB_HEAD_UNINITIALIZED;
    CHECK_OK(cblob_blob_head(arena, CBLOB_PART_DIFF, &head));
    CHECK_EQ_INT(head, CBLOB_HEAD_AT_GPU); /* a GPU-mode context's arena lives on the device */
    /* Blob 1 is written on the host after joining: its values must still take part. */
    float *host = NULL;
    CHECK_OK(cblob_blob_mutable_cpu_ptr(blobs[1], CBLOB_PART_DIFF, (void **)&host));
    host[3] = 100.0f * (float)(rank + 1);
    CHECK_OK(cblob_comm_allreduce(comm, &arena, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    for (int b = 0; b < 3; ++b) {
        CHECK_OK(cblob_blob_head(blobs[b], CBLOB_PART_DIFF, &head));
        CHECK_EQ_INT(head, CBLOB_HEAD_AT_GPU); /* the slice is the current copy */
        const float *got = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blobs[b], CBLOB_PART_DIFF, (const void **)&got));
        for (int i = 0; i < counts[b]; ++i) {
            float want = 0;
            for (int r = 0; r < RANKS; ++r)
                want += b == 1 && i == 3 ? 100.0f * (float)(r + 1) : value(r, b, i);
            CHECK_MSG(got[i] == want, "rank %d blob %d [%d]: %g, expected %g", rank, b, i, got[i], want);
        }
    }
    for (int b = 0; b < 3; ++b)
        cblob_blob_destroy(blobs[b]);
    cblob_blob_destroy(arena);
    cblob_comm_destroy(comm);
    cblob_context_destroy(ctx);
    run->failures[rank] = 0;
}

TEST(device_arena_all_reduced_by_a_host_engine_brings_every_member_along)
{
    REQUIRE_GPU();
    arena_run run = {.world = te_world_new(RANKS, 9)};
    te_run_ranks(RANKS, device_arena_rank, &run);
    te_world_free(run.world);
    for (int r = 0; r < RANKS; ++r)
        CHECK_MSG(run.failures[r] == 0, "rank %d failed", r);
}

/* ---- NCCL ------------------------------------------------------------------------------------ */

/* Skips unless NCCL can be used; fills the unique id. */
#define REQUIRE_NCCL(id) \
    do { \
        REQUIRE_GPU(); \
        const cblob_status nccl_ = cblob_comm_nccl_unique_id(id, CBLOB_NCCL_UNIQUE_ID_BYTES); \
        if (nccl_ == CBLOB_ERR_NCCL_MISSING) \
            SKIP(cblob_last_error_message()); \
        CHECK_OK(nccl_); \
    } while (0)

TEST(nccl_one_rank_collectives_keep_values_on_the_device)
{
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
    REQUIRE_NCCL(id);
    cblob_context *ctx = gpu_context();
    CHECK(ctx != NULL);
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create_nccl(ctx, id, 1, 0, &comm));
    int32_t size = 0;
    CHECK_OK(cblob_comm_size(comm, &size));
    CHECK_EQ_INT(size, 1);
    CHECK_OK(cblob_comm_set_bucket_bytes(comm, 1024));
    cblob_blob *blobs[5];
    for (int b = 0; b < 5; ++b)
        CHECK((blobs[b] = device_blob(ctx, b == 2 ? COUNT * 4 : 10 + b, 0, b)) != NULL);
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_comm_allreduce(comm, blobs, 5, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE));
    cblob_comm_request *request = NULL;
    CHECK_OK(cblob_comm_broadcast_start(comm, blobs, 5, CBLOB_PART_DIFF, 0, &request));
    CHECK_OK(cblob_comm_request_wait(request));
    cblob_comm_request_destroy(request);
    CHECK_OK(cblob_comm_barrier(comm));
    const fake_cuda_counters after = gpu_counters();
    CHECK_EQ_INT(after.host_to_device, before.host_to_device); /* device work only */
    CHECK_EQ_INT(after.device_to_host, before.device_to_host);
    for (int b = 0; b < 5; ++b) {
        const float *got = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blobs[b], CBLOB_PART_DIFF, (const void **)&got));
        for (int i = 0; i < (b == 2 ? COUNT * 4 : 10 + b); ++i)
            CHECK(got[i] == value(0, b, i));
        cblob_blob_destroy(blobs[b]);
    }
    cblob_comm_destroy(comm);
    cblob_context_destroy(ctx);
}

TEST(nccl_failures_become_statuses_with_ncclS_message)
{
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
    REQUIRE_NCCL(id);
    if (!gpu_is_fake())
        SKIP("needs the double's NCCL, which fails on demand");
    cblob_context *ctx = gpu_context();
    CHECK(ctx != NULL);
    cblob_comm *comm = NULL;
    setenv("CBLOB_FAKE_NCCL_FAIL", "init", 1);
    CHECK_ERROR(cblob_comm_create_nccl(ctx, id, 1, 0, &comm), CBLOB_ERR_COMM);
    CHECK(strstr(cblob_last_error_message(), "ncclCommInitRank: unhandled system error") != NULL);
    CHECK(comm == NULL);
    unsetenv("CBLOB_FAKE_NCCL_FAIL");
    CHECK_OK(cblob_comm_create_nccl(ctx, id, 1, 0, &comm));
    cblob_blob *blob = device_blob(ctx, 40, 0, 0);
    CHECK(blob != NULL);
    setenv("CBLOB_FAKE_NCCL_FAIL", "collective", 1);
    CHECK_ERROR(cblob_comm_allreduce(comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM), CBLOB_ERR_COMM);
    CHECK(strstr(cblob_last_error_message(), "engine \"nccl\"") != NULL);
    CHECK(strstr(cblob_last_error_message(), "ncclAllReduce") != NULL);
    unsetenv("CBLOB_FAKE_NCCL_FAIL");
    CHECK_ERROR(cblob_comm_barrier(comm), CBLOB_ERR_COMM); /* broken from then on */
    cblob_comm_destroy(comm);
    /* A peer that died shows as NCCL's asynchronous error, found by a wait with a timeout. */
    CHECK_OK(cblob_comm_create_nccl(ctx, id, 1, 0, &comm));
    CHECK_OK(cblob_comm_set_timeout(comm, 5000));
    setenv("CBLOB_FAKE_NCCL_FAIL", "async", 1);
    cblob_comm_request *request = NULL;
    /* The collective waits for the dead peer and never finishes: the wait polls (the double's
     * queries let queued work run, as a GPU does) and meets NCCL's asynchronous error; with
     * CBLOB_CUDA_LAUNCH_BLOCKING=1 the call that queued it does. */
    const cblob_status started = cblob_comm_allreduce_start(comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM, &request);
    if (launch_blocking_run()) {
        CHECK_ERROR(started, CBLOB_ERR_COMM);
    } else {
        CHECK_OK(started);
        CHECK_ERROR(cblob_comm_request_wait(request), CBLOB_ERR_COMM);
    }
    CHECK(strstr(cblob_last_error_message(), "remote process exited") != NULL);
    unsetenv("CBLOB_FAKE_NCCL_FAIL");
    int64_t count = 0;
    CHECK_OK(cblob_blob_count(blob, &count));
    CHECK_EQ_INT(count, 40);
    cblob_comm_request_destroy(request);
    cblob_comm_destroy(comm);
    cblob_blob_destroy(blob);
    cblob_context_destroy(ctx);
}

/* NCCL has a stream of its own, ordered after the context's work on the buffers by an event and
 * waited for through another: compute queued on the context after a collective starts does not
 * wait for it (a backward pass overlaps the gradients' all-reduce). */
TEST(nccl_collectives_overlap_the_contexts_later_work)
{
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
    REQUIRE_NCCL(id);
    cblob_context *ctx = gpu_context();
    CHECK(ctx != NULL);
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create_nccl(ctx, id, 1, 0, &comm));
    cblob_blob *gradients = device_blob(ctx, COUNT, 0, 0), *other = device_blob(ctx, COUNT, 0, 1);
    CHECK(gradients != NULL && other != NULL);
    CHECK_OK(cblob_blob_scale(gradients, CBLOB_PART_DIFF, 2.0)); /* before the collective: it must see this */
    cblob_comm_request *request = NULL;
    CHECK_OK(cblob_comm_allreduce_start(comm, &gradients, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM, &request));
    CHECK_OK(cblob_blob_scale(other, CBLOB_PART_DIFF, 3.0)); /* the next layer's work */
    CHECK_OK(cblob_context_synchronize(ctx));
    if (gpu_is_deferred() && !launch_blocking_run())
        CHECK_MSG(gpu_pending_work() > 0, "waiting for the context's stream ran the collective too");
    CHECK_OK(cblob_comm_request_wait(request));
    CHECK_EQ_INT(gpu_pending_work(), 0);
    const float *got = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(gradients, CBLOB_PART_DIFF, (const void **)&got));
    for (int i = 0; i < COUNT; ++i)
        CHECK(got[i] == 2.0f * value(0, 0, i));
    CHECK_OK(cblob_blob_cpu_ptr(other, CBLOB_PART_DIFF, (const void **)&got));
    for (int i = 0; i < COUNT; ++i)
        CHECK(got[i] == 3.0f * value(0, 1, i));
    cblob_comm_request_destroy(request);
    cblob_comm_destroy(comm);
    cblob_blob_destroy(gradients);
    cblob_blob_destroy(other);
    cblob_context_destroy(ctx);
}

/* With CBLOB_CUDA_LAUNCH_BLOCKING=1 a collective is waited for by the call that queued it, as
 * kernels are, so a failure is reported by that call (the comm_gpu_blocking suite). */
TEST(launch_blocking_covers_nccl_collectives)
{
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
    REQUIRE_NCCL(id);
    if (!gpu_is_deferred())
        SKIP("only the deferred double shows what is still queued");
    cblob_context *ctx = gpu_context();
    CHECK(ctx != NULL);
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create_nccl(ctx, id, 1, 0, &comm));
    cblob_blob *gradients = device_blob(ctx, COUNT, 0, 0);
    CHECK(gradients != NULL);
    cblob_comm_request *request = NULL;
    CHECK_OK(cblob_comm_allreduce_start(comm, &gradients, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM, &request));
    if (launch_blocking_run())
        CHECK_EQ_INT(gpu_pending_work(), 0);
    else
        CHECK(gpu_pending_work() > 0);
    CHECK_OK(cblob_comm_request_wait(request));
    cblob_comm_request_destroy(request);
    cblob_comm_destroy(comm);
    cblob_blob_destroy(gradients);
    cblob_context_destroy(ctx);
}

TEST(nccl_missing_or_incomplete_is_its_own_status)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("points the loader at libraries of the test tree");
    /* The double's cuBLAS is a library without NCCL's functions. */
    setenv("CBLOB_NCCL_LIBRARY", getenv("CBLOB_CUBLAS_LIBRARY"), 1);
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
    CHECK_ERROR(cblob_comm_nccl_unique_id(id, sizeof id), CBLOB_ERR_NCCL_MISSING);
    CHECK(strstr(cblob_last_error_message(), "lacks ncclGetVersion") != NULL);
    cblob_context *ctx = gpu_context();
    cblob_comm *comm = NULL;
    memset(id, 0, sizeof id);
    CHECK_ERROR(cblob_comm_create_nccl(ctx, id, 1, 0, &comm), CBLOB_ERR_NCCL_MISSING);
    cblob_context_destroy(ctx);
}

TEST(nccl_library_not_found_names_the_override)
{
    REQUIRE_GPU();
    setenv("CBLOB_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
    CHECK_ERROR(cblob_comm_nccl_unique_id(id, sizeof id), CBLOB_ERR_NCCL_MISSING);
    CHECK(strstr(cblob_last_error_message(), "/nonexistent/libnccl.so.2") != NULL);
}

/* Several ranks, one GPU each, as threads: only on a machine with several GPUs and NCCL. */
typedef struct nccl_run {
    uint8_t id[CBLOB_NCCL_UNIQUE_ID_BYTES];
    int ranks;
    int failures[8];
} nccl_run;

static void nccl_rank(int rank, void *arg)
{
    nccl_run *run = arg;
    run->failures[rank] = 1;
    cblob_context *ctx = gpu_context();
    CHECK(ctx != NULL);
    CHECK_OK(cblob_context_set_device(ctx, rank));
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create_nccl(ctx, run->id, run->ranks, rank, &comm));
    CHECK_OK(cblob_comm_set_timeout(comm, 60000));
    cblob_blob *blobs[4];
    for (int b = 0; b < 4; ++b)
        CHECK((blobs[b] = device_blob(ctx, 50 + b * 1000, rank, b)) != NULL);
    CHECK_OK(cblob_comm_allreduce(comm, blobs, 4, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    for (int b = 0; b < 4; ++b) {
        const float *got = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blobs[b], CBLOB_PART_DIFF, (const void **)&got));
        for (int i = 0; i < 50 + b * 1000; ++i) {
            float want = 0; /* small quarters: exact whatever order NCCL adds in */
            for (int r = 0; r < run->ranks; ++r)
                want += value(r, b, i);
            CHECK(got[i] == want);
        }
        cblob_blob_destroy(blobs[b]);
    }
    cblob_comm_destroy(comm);
    cblob_context_destroy(ctx);
    run->failures[rank] = 0;
}

TEST(nccl_ranks_on_several_gpus_sum_exactly)
{
    nccl_run run = {.ranks = 0};
    REQUIRE_NCCL(run.id);
    int32_t devices = 0;
    CHECK_OK(cblob_gpu_probe(&devices));
    if (gpu_is_fake() || devices < 2)
        SKIP("several ranks need several GPUs and a real NCCL");
    run.ranks = devices > 8 ? 8 : devices;
    te_run_ranks(run.ranks, nccl_rank, &run);
    for (int r = 0; r < run.ranks; ++r)
        CHECK_MSG(run.failures[r] == 0, "rank %d failed", r);
}

/* ---- a device engine of a caller's own ------------------------------------------------------ */

/* A device engine as a CUDA-aware MPI could be: it stages each device buffer through host
 * memory into the thread engine, and writes the result back before its wait returns. It relies
 * on what the engine table promises a device engine: the buffer's writes have finished at the
 * start call, and nothing touches it until the wait. */
typedef struct staged_engine {
    cblob_comm_engine inner;
} staged_engine;

typedef struct staged_op {
    void *inner_pending;
    void *device;
    void *host;
    size_t bytes;
} staged_op;

static cblob_status staged_start(staged_engine *engine, void *buffer, int64_t count, cblob_dtype dtype, int32_t root,
                                 void **out_pending, char *message, size_t message_size)
{
    staged_op *op = calloc(1, sizeof *op);
    op->device = buffer;
    op->bytes = (size_t)count * (dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4);
    op->host = malloc(op->bytes);
    if (!gpu_read_on_stream(NULL, op->host, buffer, op->bytes)) {
        snprintf(message, message_size, "staging %zu bytes from the device failed", op->bytes);
        return CBLOB_ERR_COMM;
    }
    const cblob_status status =
        root < 0 ? engine->inner.allreduce_sum(engine->inner.state, op->host, count, dtype, &op->inner_pending, message,
                                               message_size)
                 : engine->inner.broadcast(engine->inner.state, op->host, count, dtype, root, &op->inner_pending, message,
                                           message_size);
    *out_pending = op;
    return status;
}

static cblob_status staged_allreduce(void *state, void *buffer, int64_t count, cblob_dtype dtype, void **out_pending,
                                     char *message, size_t message_size)
{
    return staged_start(state, buffer, count, dtype, -1, out_pending, message, message_size);
}

static cblob_status staged_broadcast(void *state, void *buffer, int64_t count, cblob_dtype dtype, int32_t root,
                                     void **out_pending, char *message, size_t message_size)
{
    return staged_start(state, buffer, count, dtype, root, out_pending, message, message_size);
}

static cblob_status staged_barrier(void *state, void **out_pending, char *message, size_t message_size)
{
    staged_engine *engine = state;
    staged_op *op = calloc(1, sizeof *op);
    *out_pending = op;
    return engine->inner.barrier(engine->inner.state, &op->inner_pending, message, message_size);
}

static cblob_status staged_wait(void *state, void *pending, int64_t timeout_ms, char *message, size_t message_size)
{
    staged_engine *engine = state;
    staged_op *op = pending;
    cblob_status status = engine->inner.wait(engine->inner.state, op->inner_pending, timeout_ms, message, message_size);
    if (status == CBLOB_OK && op->bytes > 0 && !gpu_write_on_stream(NULL, op->device, op->host, op->bytes)) {
        snprintf(message, message_size, "staging %zu bytes back to the device failed", op->bytes);
        status = CBLOB_ERR_COMM;
    }
    free(op->host);
    free(op);
    return status;
}

static void staged_destroy(void *state)
{
    staged_engine *engine = state;
    engine->inner.destroy(engine->inner.state);
    free(engine);
}

static cblob_comm_engine staged(te_world *world, int rank)
{
    staged_engine *engine = malloc(sizeof *engine);
    engine->inner = te_engine(world, rank);
    cblob_comm_engine table = engine->inner;
    table.name = "staged";
    table.memory = CBLOB_MEMORY_DEVICE;
    table.state = engine;
    table.allreduce_sum = staged_allreduce;
    table.broadcast = staged_broadcast;
    table.barrier = staged_barrier;
    table.wait = staged_wait;
    table.destroy = staged_destroy;
    return table;
}

typedef struct device_run {
    te_world *world;
    cblob_dtype dtype;
    int failures[RANKS];
} device_run;

#define DEVICE_BLOBS 9

static int64_t device_count(int b)
{
    return b == 4 ? 700 : 3 + b * 5; /* blob 4 is larger than a bucket: alone, in place */
}

static double device_value(int rank, int b, int64_t i)
{
    return (double)((i * 3 + b * 11 + rank * 5) % 19 - 9) * 0.1;
}

static void device_engine_rank(int rank, void *arg)
{
    device_run *run = arg;
    run->failures[rank] = 1;
    const bool f64 = run->dtype == CBLOB_DTYPE_FLOAT64;
    cblob_context *ctx = gpu_context();
    CHECK(ctx != NULL);
    const cblob_comm_engine engine = staged(run->world, rank);
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create(ctx, &engine, &comm));
    CHECK_OK(cblob_comm_set_timeout(comm, 20000));
    CHECK_OK(cblob_comm_set_bucket_bytes(comm, 512));
    cblob_blob *blobs[DEVICE_BLOBS];
    for (int b = 0; b < DEVICE_BLOBS; ++b) {
        int64_t count = device_count(b);
        void *host = NULL, *device = NULL;
        CHECK_OK(cblob_blob_create(ctx, run->dtype, 1, &count, &blobs[b]));
        CHECK_OK(cblob_blob_mutable_cpu_ptr(blobs[b], CBLOB_PART_DIFF, &host));
        for (int64_t i = 0; i < count; ++i) {
            if (f64)
                ((double *)host)[i] = device_value(rank, b, i);
            else
                ((float *)host)[i] = (float)device_value(rank, b, i);
        }
        CHECK_OK(cblob_blob_mutable_gpu_ptr(blobs[b], CBLOB_PART_DIFF, &device));
    }
    cblob_comm_request *request = NULL;
    CHECK_OK(cblob_comm_allreduce_start(comm, blobs, DEVICE_BLOBS, CBLOB_PART_DIFF, CBLOB_REDUCE_AVERAGE, &request));
    CHECK_OK(cblob_comm_request_wait(request));
    cblob_comm_request_destroy(request);
    for (int b = 0; b < DEVICE_BLOBS; ++b) {
        CHECK_EQ_INT(head_of(blobs[b], CBLOB_PART_DIFF), CBLOB_HEAD_AT_GPU);
        const void *got = NULL;
        CHECK_OK(cblob_blob_cpu_ptr(blobs[b], CBLOB_PART_DIFF, &got));
        for (int64_t i = 0; i < device_count(b); ++i) {
            if (f64) {
                double sum = device_value(0, b, i);
                for (int r = 1; r < RANKS; ++r)
                    sum += device_value(r, b, i);
                CHECK_MSG(((const double *)got)[i] == sum * (1.0 / RANKS), "rank %d blob %d [%d]", rank, b, (int)i);
            } else {
                float sum = (float)device_value(0, b, i);
                for (int r = 1; r < RANKS; ++r)
                    sum += (float)device_value(r, b, i);
                CHECK_MSG(((const float *)got)[i] == sum * (float)(1.0 / RANKS), "rank %d blob %d [%d]", rank, b, (int)i);
            }
        }
        cblob_blob_destroy(blobs[b]);
    }
    cblob_comm_destroy(comm);
    cblob_context_destroy(ctx);
    run->failures[rank] = 0;
}

TEST(a_device_engine_averages_fused_device_buckets_on_the_device)
{
    REQUIRE_GPU();
    const cblob_dtype dtypes[2] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64};
    for (int d = 0; d < 2; ++d) {
        device_run run = {.world = te_world_new(RANKS, 21 + (uint64_t)d), .dtype = dtypes[d]};
        te_run_ranks(RANKS, device_engine_rank, &run);
        te_world_free(run.world);
        for (int r = 0; r < RANKS; ++r)
            CHECK_MSG(run.failures[r] == 0, "%s: rank %d failed", d ? "float64" : "float32", r);
    }
}

/* ---- ranks that disagree, on a device engine --------------------------------------------------- */

/* The agreement of a device engine works on device memory (its buffer is copied to the device and
 * back around each exchange): the last rank lists a longer blob, every rank fails alike before
 * anything is sent, the device copies keep their values, and the communicator stays usable. */
static void device_disagreement_rank(int rank, void *arg)
{
    device_run *run = arg;
    run->failures[rank] = 1;
    cblob_context *ctx = gpu_context();
    CHECK(ctx != NULL);
    const cblob_comm_engine engine = staged(run->world, rank);
    cblob_comm *comm = NULL;
    CHECK_OK(cblob_comm_create(ctx, &engine, &comm));
    CHECK_OK(cblob_comm_set_timeout(comm, 20000));
    cblob_blob *blob = device_blob(ctx, rank == RANKS - 1 ? COUNT + 1 : COUNT, rank, 0);
    CHECK(blob != NULL);
    CHECK_ERROR(cblob_comm_allreduce(comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM), CBLOB_ERR_SHAPE);
    CHECK_MSG(strstr(cblob_last_error_message(), "blobs[0]: rank 2 has 301 float32, rank 0 300 float32") != NULL,
              "rank %d: %s", rank, cblob_last_error_message());
    CHECK_EQ_INT(head_of(blob, CBLOB_PART_DIFF), CBLOB_HEAD_AT_GPU);
    const float *got = NULL;
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DIFF, (const void **)&got));
    for (int i = 0; i < COUNT; ++i)
        CHECK_MSG(got[i] == value(rank, 0, i), "rank %d [%d]: the refused collective changed it", rank, i);
    const int64_t count = COUNT;
    CHECK_OK(cblob_blob_reshape(blob, 1, &count));
    CHECK_OK(cblob_comm_allreduce(comm, &blob, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
    CHECK_OK(cblob_blob_cpu_ptr(blob, CBLOB_PART_DIFF, (const void **)&got));
    for (int i = 0; i < COUNT; ++i) {
        float sum = value(0, 0, i);
        for (int r = 1; r < RANKS; ++r)
            sum += value(r, 0, i);
        CHECK_MSG(got[i] == sum, "rank %d [%d]: %g, expected %g", rank, i, got[i], sum);
    }
    cblob_blob_destroy(blob);
    cblob_comm_destroy(comm);
    cblob_context_destroy(ctx);
    run->failures[rank] = 0;
}

TEST(a_device_engine_refuses_ranks_that_disagree_before_anything_is_sent)
{
    REQUIRE_GPU();
    device_run run = {.world = te_world_new(RANKS, 31), .dtype = CBLOB_DTYPE_FLOAT32};
    te_run_ranks(RANKS, device_disagreement_rank, &run);
    te_world_free(run.world);
    for (int r = 0; r < RANKS; ++r)
        CHECK_MSG(run.failures[r] == 0, "rank %d failed", r);
}
