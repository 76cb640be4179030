/* SPDX-License-Identifier: BSD-2-Clause */
/* Device memory without device-wide waits (issue 13, 2.6): cuMemAlloc and cuMemFree make the
 * whole device wait, so blobs take stream-ordered memory (cuMemAllocAsync, cuMemFreeAsync) from
 * the device's pool where the driver has one, and fall back to the old calls where it has none.
 * The suite runs twice on the double: gpu_pools, and gpu_no_pools with
 * CBLOB_FAKE_CUDA_NO_POOLS=1 (the double reports no memory pools). */
#include <stdlib.h>

#include "gpu_support.h"

#define COUNT 1000

static bool pools_switched_off(void)
{
    const char *knob = getenv("CBLOB_FAKE_CUDA_NO_POOLS");
    return knob != NULL && knob[0] == '1';
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
    void *dev = NULL;
    CHECK_OK(cblob_blob_mutable_gpu_ptr(b.blob, CBLOB_PART_DATA, &dev));
    CHECK_OK(cblob_blob_scale(b.blob, CBLOB_PART_DATA, 2.0));
    double sum = -1;
    CHECK_OK(cblob_blob_asum(b.blob, CBLOB_PART_DATA, &sum));
    CHECK(sum == 0);
    cblob_blob_destroy(b.blob);
    b.blob = NULL;
    if (pools_switched_off()) {
        CHECK_COUNTER_DELTA(before, async_allocs, 0);
        CHECK_COUNTER_DELTA(before, device_allocs, 1);
        CHECK_COUNTER_DELTA(before, device_syncs, 1); /* the fallback's cuMemFree */
    } else {
        CHECK_COUNTER_DELTA(before, async_allocs, 1);
        CHECK_COUNTER_DELTA(before, async_frees, 1);
        CHECK_COUNTER_DELTA(before, device_syncs, 0); /* nothing made the whole device wait */
    }
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
