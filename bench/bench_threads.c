/* SPDX-License-Identifier: BSD-2-Clause */
/* What decided the thread pool's split threshold and the huge pages of large host buffers,
 * measured in one run.
 *
 *   bench_threads [rounds]
 *
 * Split: float32 scale, asum and update (Caffe's math) and a copy (copy_from) at sizes from 16 Ki
 * to 16 Mi elements, on one thread and on two with every size split (the threshold set to 0), in
 * interleaved rounds. The ratio is the two-thread speedup; the library splits from
 * CB_SPLIT_MIN_BYTES of work per thread, where it starts to pay.
 *
 * Pages: a fresh blob of 8 to 512 MiB filled (its pages first touched by the fill's threads) and
 * then summed, with 2 MiB pages asked for and not (cb_host_huge_pages), alternating. GB/s counts
 * bytes written (fill) or read (sum). */
#include <stdio.h>
#include <stdlib.h>

#include "bench_timing.h"
#include "host_memory.h"
#include "threads.h"

static bench_plan plan = {.rounds = 9, .batch_seconds = 0.02};

static void must(cblob_status status, const char *what)
{
    if (status != CBLOB_OK) {
        fprintf(stderr, "bench_threads: %s failed: %s\n", what, cblob_last_error_message());
        exit(1);
    }
}

typedef struct split_case {
    cblob_context *context;
    cblob_blob *blob, *copy;
    int op; /* 0 scale, 1 asum, 2 update, 3 copy */
    int halve;
    double sink;
} split_case;

static void run_op(split_case *c, int32_t threads, size_t split_min)
{
    cb_split_min_bytes = split_min;
    must(cblob_context_set_num_threads(c->context, threads), "set_num_threads");
    switch (c->op) {
    case 0:
        c->halve = !c->halve;
        must(cblob_blob_scale(c->blob, CBLOB_PART_DATA, c->halve ? 0.5 : 2.0), "scale");
        break;
    case 1: must(cblob_blob_asum(c->blob, CBLOB_PART_DATA, &c->sink), "asum"); break;
    case 2: must(cblob_blob_update(c->blob), "update"); break;
    default: must(cblob_blob_copy_from(c->copy, c->blob, CBLOB_PART_DATA, 0), "copy_from"); break;
    }
    cb_split_min_bytes = CB_SPLIT_MIN_BYTES;
}

static void one_thread(void *state)
{
    run_op(state, 1, CB_SPLIT_MIN_BYTES);
}

static void two_threads_always(void *state)
{
    run_op(state, 2, 0);
}

static void two_threads_policy(void *state)
{
    run_op(state, 2, CB_SPLIT_MIN_BYTES);
}

static void bench_split(cblob_context *context)
{
    static const char *const names[4] = {"scale", "asum", "update", "copy"};
    static const int arrays[4] = {2, 1, 3, 2};
    printf("\nsplit: float32, GB/s (read + written), medians of %d rounds; speedup = 1 thread time / 2 threads time\n",
           plan.rounds);
    printf("%-7s %10s %8s | %8s %8s %7s | %8s %7s\n", "op", "elements", "KiB", "1 thread", "2 split", "speedup",
           "policy", "speedup");
    for (int op = 0; op < 4; ++op) {
        for (int64_t n = 16 << 10; n <= (16 << 20); n *= 4) {
            split_case c = {.context = context, .op = op};
            must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &n, &c.blob), "create");
            must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &n, &c.copy), "create");
            must(cblob_blob_fill(c.blob, CBLOB_PART_DATA, 1.0), "fill");
            must(cblob_blob_fill(c.blob, CBLOB_PART_DIFF, 1e-9), "fill");
            must(cblob_blob_fill(c.copy, CBLOB_PART_DATA, 0.0), "fill");
            const bench_contender contenders[3] = {{"1", one_thread, NULL, &c},
                                                   {"2", two_threads_always, NULL, &c},
                                                   {"policy", two_threads_policy, NULL, &c}};
            bench_time t[3];
            bench_measure(&plan, 3, contenders, t);
            const double bytes = (double)arrays[op] * (double)n * 4.0;
            printf("%-7s %10lld %8.0f | %8.2f %8.2f %7.2f | %8.2f %7.2f\n", names[op], (long long)n,
                   (double)n * 4 / 1024, bytes / t[0].median * 1e-9, bytes / t[1].median * 1e-9,
                   t[0].median / t[1].median, bytes / t[2].median * 1e-9, t[0].median / t[2].median);
            fflush(stdout);
            cblob_blob_destroy(c.blob);
            cblob_blob_destroy(c.copy);
        }
    }
}

typedef struct page_case {
    cblob_context *context;
    int64_t n;
    int huge;
    double fill_seconds, sum_seconds;
} page_case;

/* A fresh blob, filled (first touch) and summed; the times of both go into the state. */
static double fresh_fill_and_sum(page_case *c)
{
    cb_host_huge_pages = c->huge;
    cblob_blob *blob;
    double sum = 0;
    must(cblob_blob_create(c->context, CBLOB_DTYPE_FLOAT32, 1, &c->n, &blob), "create");
    const double start = bench_now();
    must(cblob_blob_fill(blob, CBLOB_PART_DATA, 1.0), "fill");
    const double filled = bench_now();
    must(cblob_blob_asum(blob, CBLOB_PART_DATA, &sum), "asum");
    c->fill_seconds = filled - start;
    c->sum_seconds = bench_now() - filled;
    cblob_blob_destroy(blob);
    return sum;
}

static int compare(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void bench_pages(cblob_context *context)
{
    int32_t threads;
    must(cblob_context_num_threads(context, &threads), "num_threads");
    printf("\npages: fresh float32 blobs, %d threads; GB/s, medians of %d rounds (min-max)\n", (int)threads,
           plan.rounds);
    printf("%9s | %-23s %-23s | %-23s %-23s\n", "MiB", "fill, 4 KiB pages", "fill, 2 MiB pages", "sum, 4 KiB pages",
           "sum, 2 MiB pages");
    for (int64_t mib = 8; mib <= 512; mib *= 4) {
        double fill[2][64], sum[2][64];
        const int rounds = plan.rounds < 64 ? plan.rounds : 64;
        for (int r = 0; r < rounds; ++r) {
            for (int turn = 0; turn < 2; ++turn) {
                const int huge = (turn + r) % 2;
                page_case c = {context, mib << 18, huge, 0, 0};
                fresh_fill_and_sum(&c);
                fill[huge][r] = (double)(mib << 20) / c.fill_seconds * 1e-9;
                sum[huge][r] = (double)(mib << 20) / c.sum_seconds * 1e-9;
            }
        }
        printf("%9lld |", (long long)mib);
        double *series[4] = {fill[0], fill[1], sum[0], sum[1]};
        for (int s = 0; s < 4; ++s) {
            qsort(series[s], (size_t)rounds, sizeof(double), compare);
            printf(" %7.2f (%5.2f-%5.2f)   ", series[s][rounds / 2], series[s][0], series[s][rounds - 1]);
        }
        printf("\n");
        fflush(stdout);
    }
    cb_host_huge_pages = 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && atoi(argv[1]) > 0)
        plan.rounds = atoi(argv[1]);
    bench_print_machine("bench_threads");
    cblob_context *context;
    must(cblob_context_create(&context), "context");
    bench_split(context);
    bench_pages(context);
    cblob_context_destroy(context);
    return 0;
}
