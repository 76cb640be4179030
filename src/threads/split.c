/* SPDX-License-Identifier: BSD-2-Clause */
/* Cutting work into ranges for the pool: plain ranges, sums that do not depend on the thread
 * count, and large copies. */
#include <string.h>

#include "threads.h"

/* Ranges per thread: a thread slowed by a neighbour takes fewer of them, the others more. */
#define CB_RANGES_PER_THREAD 4
/* Sums cut their work into at most this many blocks (more than CB_SUM_BLOCK items each). */
#define CB_SUM_MAX_BLOCKS 1024

static int64_t divide_up(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

size_t cb_split_bytes_override;

/* The threads work of `bytes` pays for: one per `split_bytes` (or the override), within the
 * call's allowance. */
static int threads_for(int64_t items, size_t item_bytes, size_t split_bytes)
{
    const size_t bytes = items > 0 && item_bytes > SIZE_MAX / (size_t)items ? SIZE_MAX : (size_t)items * item_bytes;
    const size_t per_thread = cb_split_bytes(split_bytes) > 0 ? cb_split_bytes(split_bytes) : 1;
    if (bytes < 2 * per_thread)
        return 1;
    const int allowed = cb_threads_allowed();
    const size_t worth = bytes / per_thread;
    return worth < (size_t)allowed ? (int)worth : allowed;
}

typedef struct cb_ranges {
    cb_range_fn fn;
    void *arg;
    int64_t items, size;
} cb_ranges;

static cblob_status run_range(void *arg, int64_t task)
{
    const cb_ranges *ranges = arg;
    const int64_t begin = task * ranges->size;
    const int64_t end = ranges->items - begin > ranges->size ? begin + ranges->size : ranges->items;
    return ranges->fn(ranges->arg, begin, end);
}

cblob_status cb_parallel_for(int64_t items, size_t item_bytes, int64_t align, cb_range_fn fn, void *arg)
{
    return cb_parallel_for_split(items, item_bytes, CB_SPLIT_MIN_BYTES, align, fn, arg);
}

cblob_status cb_parallel_for_split(int64_t items, size_t item_bytes, size_t split_bytes, int64_t align, cb_range_fn fn,
                                   void *arg)
{
    const int threads = threads_for(items, item_bytes, split_bytes);
    if (threads <= 1)
        return fn(arg, 0, items);
    const int64_t size = divide_up(divide_up(items, (int64_t)threads * CB_RANGES_PER_THREAD), align) * align;
    cb_ranges ranges = {fn, arg, items, size};
    return cb_pool_run(divide_up(items, size), threads, run_range, &ranges);
}

/* ---- sums ------------------------------------------------------------------------------- */

typedef struct cb_sum {
    cb_sum_fn fn;
    void *arg;
    int64_t items, block, blocks_per_task;
    double *partial; /* one per block */
} cb_sum;

static cblob_status sum_blocks(void *arg, int64_t task)
{
    const cb_sum *sum = arg;
    for (int64_t b = task * sum->blocks_per_task; b < (task + 1) * sum->blocks_per_task; ++b) {
        const int64_t begin = b * sum->block;
        if (begin >= sum->items)
            break;
        const int64_t end = sum->items - begin > sum->block ? begin + sum->block : sum->items;
        CB_TRY(sum->fn(sum->arg, begin, end, &sum->partial[b]));
    }
    return CBLOB_OK;
}

cblob_status cb_parallel_sum(int64_t items, size_t item_bytes, size_t split_bytes, cb_sum_fn fn, void *arg, double *out)
{
    if (items <= CB_SUM_BLOCK)
        return fn(arg, 0, items, out);
    /* The blocks depend on items alone, never on the threads: that is what makes the total the
     * same on any number of them. Multiples of 64 items keep blocks on whole cache lines. */
    const int64_t block = divide_up(items, CB_SUM_MAX_BLOCKS) > CB_SUM_BLOCK
                              ? divide_up(divide_up(items, CB_SUM_MAX_BLOCKS), 64) * 64
                              : CB_SUM_BLOCK;
    const int64_t blocks = divide_up(items, block);
    double partial[CB_SUM_MAX_BLOCKS];
    const int threads = threads_for(items, item_bytes, split_bytes);
    const int64_t tasks = threads <= 1 ? 1 : (int64_t)threads * CB_RANGES_PER_THREAD;
    cb_sum sum = {fn, arg, items, block, divide_up(blocks, tasks), partial};
    CB_TRY(cb_pool_run(divide_up(blocks, sum.blocks_per_task), threads, sum_blocks, &sum));
    double total = 0;
    for (int64_t b = 0; b < blocks; ++b)
        total += partial[b];
    *out = total;
    return CBLOB_OK;
}

/* ---- copies ----------------------------------------------------------------------------- */

typedef struct cb_bytes {
    char *to;
    const char *from; /* NULL: zero-fill */
} cb_bytes;

static cblob_status copy_range(void *arg, int64_t begin, int64_t end)
{
    const cb_bytes *bytes = arg;
    if (bytes->from != NULL)
        memcpy(bytes->to + begin, bytes->from + begin, (size_t)(end - begin));
    else
        memset(bytes->to + begin, 0, (size_t)(end - begin));
    return CBLOB_OK;
}

/* Ranges of whole pages, so each thread faults in (first-touches) pages of its own. */
void cb_parallel_copy(void *to, const void *from, size_t bytes)
{
    cb_bytes range = {to, from};
    (void)cb_parallel_for((int64_t)bytes, 2, 4096, copy_range, &range);
}

void cb_parallel_move(void *to, const void *from, size_t bytes)
{
    const uintptr_t a = (uintptr_t)to, b = (uintptr_t)from;
    if (a < b + bytes && b < a + bytes)
        memmove(to, from, bytes);
    else
        cb_parallel_copy(to, from, bytes);
}

void cb_parallel_zero(void *to, size_t bytes)
{
    cb_bytes range = {to, NULL};
    (void)cb_parallel_for((int64_t)bytes, 1, 4096, copy_range, &range);
}
