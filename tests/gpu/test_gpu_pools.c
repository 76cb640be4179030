/* SPDX-License-Identifier: BSD-2-Clause */
/* Device memory without device-wide waits (issue 13, 2.6): cuMemAlloc and cuMemFree make the
 * whole device wait, so blobs take stream-ordered memory (cuMemAllocFromPoolAsync,
 * cuMemFreeAsync) from a pool of cblob's own where the driver has pools, and fall back to the old
 * calls where it has none. The pool keeps freed memory for the next allocation across
 * synchronisations (issue 25: the device's default pool gives it all back at each one, and
 * every library of the process shares it). The suite runs three times on the double: gpu_pools,
 * gpu_pools_released with CBLOB_CUDA_POOL_RELEASE_THRESHOLD=0 (the pool gives back what is free
 * at each synchronisation), and gpu_no_pools with CBLOB_FAKE_CUDA_NO_POOLS=1 (the double reports
 * no memory pools). */
#include <stdlib.h>
#include <string.h>

#include "gpu_support.h"

#define COUNT 1000

static bool pools_switched_off(void)
{
    const char *knob = getenv("CBLOB_FAKE_CUDA_NO_POOLS");
    return knob != NULL && knob[0] == '1';
}

static bool pool_releases_everything(void)
{
    const char *knob = getenv("CBLOB_CUDA_POOL_RELEASE_THRESHOLD");
    return knob != NULL && strcmp(knob, "0") == 0;
}

TEST(blob_memory_is_stream_ordered_where_the_device_has_pools)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("only the double counts device-wide waits");
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_GPU));
    const fake_cuda_counters before = gpu_counters();
    CHECK_OK(cblob_blob_fill(b.blob, CBLOB_PART_DATA, 0.5)); /* on the device: the context is in GPU mode */
    CHECK_OK(cblob_blob_scale(b.blob, CBLOB_PART_DATA, 2.0));
    double sum = -1;
    CHECK_OK(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum));
    CHECK(sum == COUNT);
    CHECK_EQ_INT(head_of(b.blob, CBLOB_PART_DATA), CBLOB_HEAD_AT_GPU);
    /* No pointer to the memory left cblob: it is freed in stream order, without a device-wide wait. */
    cblob_blob_destroy(b.blob);
    b.blob = NULL;
    if (pools_switched_off()) {
        CHECK_COUNTER_DELTA(before, async_allocs, 0);
        CHECK_COUNTER_DELTA(before, device_allocs, 2); /* the blob, and the context's reduction scratch */
        CHECK_COUNTER_DELTA(before, device_syncs, 1); /* the fallback's cuMemFree */
    } else {
        CHECK_COUNTER_DELTA(before, async_allocs, 1);
        CHECK_COUNTER_DELTA(before, own_pool_allocs, 1);
        CHECK_COUNTER_DELTA(before, default_pool_allocs, 0); /* not the pool every library shares */
        CHECK_COUNTER_DELTA(before, async_frees, 1);
        CHECK_COUNTER_DELTA(before, device_syncs, 0); /* nothing made the whole device wait */
    }
    close_blob(&b);
}

/* A blob's memory freed, a synchronisation (every host copy and sum is one), then a blob of the
 * same size: it gets the freed block back from cblob's pool, no new memory from the driver. */
TEST(freed_memory_is_kept_for_the_next_blob)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("only the double counts what its pools hand out");
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_GPU));
    CHECK_OK(cblob_blob_fill(b.blob, CBLOB_PART_DATA, 2.0));
    double sum = -1;
    CHECK_OK(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum)); /* the context's reduction scratch made now */
    cblob_blob_destroy(b.blob);
    b.blob = NULL;
    CHECK_OK(cblob_context_synchronize(b.ctx));
    const fake_cuda_counters before = gpu_counters();
    const int64_t count = COUNT;
    CHECK_OK(cblob_blob_create(b.ctx, CBLOB_DTYPE_FLOAT32, 1, &count, &b.blob));
    CHECK_OK(cblob_blob_fill(b.blob, CBLOB_PART_DATA, 3.0));
    CHECK_OK(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum));
    CHECK(sum == 3.0 * COUNT);
    if (pools_switched_off() || pool_releases_everything()) {
        CHECK_COUNTER_DELTA(before, device_allocs, 1);
        CHECK_COUNTER_DELTA(before, pool_reuses, 0);
    } else {
        CHECK_COUNTER_DELTA(before, device_allocs, 0);
        CHECK_COUNTER_DELTA(before, pool_reuses, 1);
    }
    close_blob(&b);
}

/* Memory the pool keeps is given back when the device is full: an allocation that fails trims
 * the pool and tries again. */
TEST(a_full_device_takes_back_what_the_pool_keeps)
{
    REQUIRE_GPU();
    if (!gpu_is_fake())
        SKIP("needs the double's device of a given size");
    gpu_blob b;
    CHECK_OK(open_blob(&b, CBLOB_DTYPE_FLOAT32, COUNT));
    CHECK_OK(cblob_context_set_mode(b.ctx, CBLOB_MODE_GPU));
    CHECK_OK(cblob_blob_fill(b.blob, CBLOB_PART_DATA, 2.0)); /* COUNT floats */
    double sum = -1;
    CHECK_OK(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum)); /* the context's scratch made now */
    cblob_blob_destroy(b.blob);
    b.blob = NULL;
    CHECK_OK(cblob_context_synchronize(b.ctx));
    /* Room for the larger blob beside what is in use, not beside the block the pool keeps too. */
    const int64_t larger = COUNT * 3 / 2;
    CHECK(gpu_set_device_memory(gpu_counters().device_bytes_in_use + (uint64_t)larger * sizeof(float) + 64));
    CHECK_OK(cblob_blob_create(b.ctx, CBLOB_DTYPE_FLOAT32, 1, &larger, &b.blob));
    CHECK_OK(cblob_blob_fill(b.blob, CBLOB_PART_DATA, 3.0));
    CHECK_OK(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum));
    CHECK(sum == 3.0 * (double)larger);
    close_blob(&b);
}

/* Memory allocated on one context's stream and read through another's. */
TEST(stream_ordered_memory_is_usable_from_another_context)
{
    REQUIRE_GPU();
    streamed_context first, second;
    CHECK_OK(open_streamed(&first));
    CHECK_OK(open_streamed(&second));
    const int64_t count = COUNT;
    cblob_blob *a = NULL, *b = NULL;
    CHECK_OK(cblob_blob_create(first.ctx, CBLOB_DTYPE_FLOAT32, 1, &count, &a));
    CHECK_OK(cblob_blob_create(second.ctx, CBLOB_DTYPE_FLOAT32, 1, &count, &b));
    CHECK_OK(cblob_blob_fill(a, CBLOB_PART_DATA, 3.0)); /* allocates and fills on the first stream */
    CHECK_OK(cblob_blob_share(b, a, CBLOB_PART_DATA));
    double sum = 0;
    CHECK_OK(cblob_blob_asum(b, CBLOB_PART_DATA, &sum));
    CHECK(sum == 3.0 * COUNT);
    cblob_blob_destroy(a);
    cblob_blob_destroy(b); /* freed on the second stream, after its asum */
    close_streamed(&second);
    close_streamed(&first);
}

/* cblob_gpu_report says what the pool keeps (CBLOB_CUDA_POOL_RELEASE_THRESHOLD). */
TEST(the_report_says_what_the_pool_keeps)
{
    REQUIRE_GPU();
    char report[4096];
    size_t length = 0;
    CHECK_OK(cblob_gpu_report(report, sizeof report, &length));
    const char *says = pool_releases_everything() ? "a pool of cblob's own per device that has pools, keeping up to 0 freed"
                                                  : "a pool of cblob's own per device that has pools, keeping what is freed";
    CHECK_MSG(strstr(report, says) != NULL, "the report does not say \"%s\"", says);
}
