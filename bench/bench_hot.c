/* SPDX-License-Identifier: BSD-2-Clause */
/* The cost of the hot calls a training loop makes on every step, through the shared library with
 * every argument check: same-shape reshape, cpu_ptr and mutable_cpu_ptr on a blob whose data is
 * on the host, and count. Against an empty call of count's signature in another shared library
 * (libbench_ffi), the price of crossing a library boundary at all.
 *
 *   bench_hot [rounds]
 *
 * Targets (issue 15): reshape at most 10 ns, cpu_ptr and mutable_cpu_ptr at most 4 ns, count at
 * most 3 ns. Each figure is the median of interleaved rounds of 256-call loops, with min-max. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_timing.h"
#include "bindings/bench_ffi.h"
#include "cblob/cblob.h"

enum { CALLS = 256 };

typedef struct state {
    cblob_blob *blob;
    int64_t dims[4];
    int64_t count;
    const void *ptr;
    void *mutable_ptr;
    int failures;
} state;

static void empty_getter(void *p)
{
    state *s = p;
    for (int i = 0; i < CALLS; ++i)
        s->failures += bench_ffi_empty_getter(s->blob, &s->count) != 0;
}

static void count(void *p)
{
    state *s = p;
    for (int i = 0; i < CALLS; ++i)
        s->failures += cblob_blob_count(s->blob, &s->count) != CBLOB_OK;
}

static void cpu_ptr(void *p)
{
    state *s = p;
    for (int i = 0; i < CALLS; ++i)
        s->failures += cblob_blob_cpu_ptr(s->blob, CBLOB_PART_DATA, &s->ptr) != CBLOB_OK;
}

static void mutable_cpu_ptr(void *p)
{
    state *s = p;
    for (int i = 0; i < CALLS; ++i)
        s->failures += cblob_blob_mutable_cpu_ptr(s->blob, CBLOB_PART_DATA, &s->mutable_ptr) != CBLOB_OK;
}

static void reshape_same(void *p)
{
    state *s = p;
    for (int i = 0; i < CALLS; ++i)
        s->failures += cblob_blob_reshape(s->blob, 4, s->dims) != CBLOB_OK;
}

int main(int argc, char **argv)
{
    bench_plan plan = {.rounds = argc > 1 ? bench_parse_rounds(argv[1]) : 31, .batch_seconds = 0.01};
    bench_print_machine("bench_hot");
    cblob_context *context = NULL;
    state s = {.dims = {8, 3, 32, 32}};
    if (cblob_context_create(&context) != CBLOB_OK ||
        cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 4, s.dims, &s.blob) != CBLOB_OK ||
        cblob_blob_mutable_cpu_ptr(s.blob, CBLOB_PART_DATA, &s.mutable_ptr) != CBLOB_OK) {
        fprintf(stderr, "bench_hot: %s\n", cblob_last_error_message());
        return 1;
    }
    const bench_contender contenders[] = {
        {"empty call (libbench_ffi)", empty_getter, NULL, &s},
        {"cblob_blob_count", count, NULL, &s},
        {"cblob_blob_cpu_ptr", cpu_ptr, NULL, &s},
        {"cblob_blob_mutable_cpu_ptr", mutable_cpu_ptr, NULL, &s},
        {"cblob_blob_reshape (same shape)", reshape_same, NULL, &s},
    };
    const double targets[] = {0, 3, 4, 4, 10};
    enum { N = sizeof contenders / sizeof contenders[0] };
    bench_time times[N];
    bench_measure(&plan, N, contenders, times);
    printf("%-34s %10s %18s %8s %s\n", "call", "ns median", "min-max", "target", "");
    for (int i = 0; i < N; ++i) {
        const double ns = times[i].median * 1e9 / CALLS;
        printf("%-34s %10.2f %8.2f-%-8.2f ", contenders[i].name, ns, times[i].min * 1e9 / CALLS, times[i].max * 1e9 / CALLS);
        if (targets[i] > 0)
            printf("%8.0f %s\n", targets[i], ns <= targets[i] ? "met" : "MISSED");
        else
            printf("%8s\n", "-");
    }
    cblob_blob_destroy(s.blob);
    cblob_context_destroy(context);
    return s.failures != 0;
}
