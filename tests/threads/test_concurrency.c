/* SPDX-License-Identifier: BSD-2-Clause */
/* Many caller threads at once (goroutines, a .NET thread pool): they share the pool, each gets
 * right results, and no more workers start than the largest setting asks for. The threads_tsan
 * suite runs this file under ThreadSanitizer. */
#include <pthread.h>

#include "harness.h"
#include "threads.h"
#include "threads_support.h"

enum { CALLERS = 8, ROUNDS = 3 };

typedef struct caller {
    cblob_context *context;
    int index;
    bool ok;
} caller;

/* Each caller has blobs of its own in a context shared with half the others: update, scale, sums,
 * a conversion and a transpose, checked against what they must give. */
static void *call_many_times(void *arg)
{
    caller *me = arg;
    const int64_t dims[2] = {600, 1000 + me->index}, swapped[2] = {dims[1], dims[0]}, n = dims[0] * dims[1];
    cblob_blob *blob = NULL, *converted = NULL, *transposed = NULL;
    me->ok = cblob_blob_create(me->context, CBLOB_DTYPE_FLOAT32, 1, &n, &blob) == CBLOB_OK &&
             cblob_blob_create(me->context, CBLOB_DTYPE_FLOAT64, 1, &n, &converted) == CBLOB_OK &&
             cblob_blob_create(me->context, CBLOB_DTYPE_FLOAT32, 2, swapped, &transposed) == CBLOB_OK;
    for (int round = 0; round < ROUNDS && me->ok; ++round) {
        double asum = 0, sumsq = 0, converted_sum = 0;
        me->ok = cblob_blob_fill(blob, CBLOB_PART_DATA, 2) == CBLOB_OK && cblob_blob_fill(blob, CBLOB_PART_DIFF, 1) == CBLOB_OK &&
                 cblob_blob_update(blob) == CBLOB_OK && cblob_blob_scale(blob, CBLOB_PART_DATA, me->index + 1) == CBLOB_OK &&
                 cblob_blob_asum(blob, CBLOB_PART_DATA, &asum) == CBLOB_OK &&
                 cblob_blob_sumsq(blob, CBLOB_PART_DIFF, &sumsq) == CBLOB_OK &&
                 cblob_blob_convert_from(converted, blob, CBLOB_PART_DATA) == CBLOB_OK &&
                 cblob_blob_asum(converted, CBLOB_PART_DATA, &converted_sum) == CBLOB_OK &&
                 cblob_blob_reshape(blob, 2, dims) == CBLOB_OK &&
                 cblob_blob_transpose_from(transposed, blob, CBLOB_PART_DATA, 0, 1) == CBLOB_OK &&
                 cblob_blob_reshape(blob, 1, &n) == CBLOB_OK;
        const float *t = NULL;
        me->ok = me->ok && asum == (double)n * (me->index + 1) && sumsq == (double)n && converted_sum == asum &&
                 cblob_blob_cpu_ptr(transposed, CBLOB_PART_DATA, (const void **)&t) == CBLOB_OK &&
                 t[0] == (float)(me->index + 1) && t[n - 1] == (float)(me->index + 1);
    }
    cblob_blob_destroy(blob);
    cblob_blob_destroy(converted);
    cblob_blob_destroy(transposed);
    return NULL;
}

TEST(many_callers_at_once_share_the_pool)
{
    split_small_work();
    cblob_context *contexts[2] = {NULL, NULL};
    for (int c = 0; c < 2; ++c) {
        CHECK_OK(cblob_context_create(&contexts[c]));
        CHECK_OK(cblob_context_set_num_threads(contexts[c], c == 0 ? 2 : 4));
    }
    caller callers[CALLERS];
    pthread_t threads[CALLERS];
    for (int i = 0; i < CALLERS; ++i) {
        callers[i] = (caller){contexts[i % 2], i, false};
        CHECK(pthread_create(&threads[i], NULL, call_many_times, &callers[i]) == 0);
    }
    for (int i = 0; i < CALLERS; ++i)
        pthread_join(threads[i], NULL);
    for (int c = 0; c < 2; ++c)
        cblob_context_destroy(contexts[c]);
    for (int i = 0; i < CALLERS; ++i)
        CHECK_MSG(callers[i].ok, "caller %d got a wrong result or an error (%s)", i, cblob_last_error_message());
    /* Eight callers asking for at most 4 threads each share 3 workers. */
    CHECK_EQ_INT(cb_pool_workers_started(), 3);
}
