/* SPDX-License-Identifier: BSD-2-Clause */
/* What decided the split thresholds of codegen/ops.yaml (`split_kib`) and of the pool's copies
 * (CB_SPLIT_MIN_BYTES), measured in one run against OpenBLAS's own threading.
 *
 *   bench_threads [--rounds N] [--sizes 1e4,2e4,...] [--threads N]
 *
 * For Caffe's blob math (update, asum, sumsq, scale) and copy_from, float32 and float64, at sizes
 * from 1e4 to 2e6 elements, in interleaved rounds: cblob on one thread, on THREADS (default 2)
 * with every size split (cb_split_bytes_override = 1), and on THREADS with the library's own
 * thresholds; OpenBLAS (the calls Caffe's CPU blob makes, opened with dlopen) on one thread and
 * on THREADS with its own thresholds. Columns: GB/s (bytes read plus written), the speedup of
 * splitting (one thread's time / split time), and the library against OpenBLAS on THREADS and
 * against the faster of OpenBLAS's two (its time / cblob's: 1.00 or more is at least as fast).
 * Last, per operation, the smallest size from which splitting won by 5% or more there and at
 * every larger size: the work per thread at that size is the threshold it suggests. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_openblas.h"
#include "bench_timing.h"
#include "threads.h"

static bench_plan plan = {.rounds = 9, .batch_seconds = 0.02};
static bench_openblas openblas;
static bool have_openblas;
static int32_t threads = 2;

enum { UPDATE, ASUM, SUMSQ, SCALE, COPY, OPS };
static const char *const op_names[OPS] = {"update", "asum", "sumsq", "scale", "copy"};
static const int arrays_moved[OPS] = {3, 1, 1, 2, 2};

static void must(cblob_status status, const char *what)
{
    if (status != CBLOB_OK) {
        fprintf(stderr, "bench_threads: %s failed: %s\n", what, cblob_last_error_message());
        exit(1);
    }
}

typedef struct cell {
    cblob_context *context;
    cblob_blob *blob, *copy;
    bool f32;
    int op;
    int64_t n;
    void *x, *y; /* the blob's data and diff */
    int halve[5];
    double sink;
} cell;

typedef struct contender_state {
    cell *c;
    int32_t threads;
    size_t override; /* cb_split_bytes_override for cblob */
    int id;          /* which scale factor series it alternates */
} contender_state;

static double next_factor(cell *c, int id)
{
    c->halve[id] = !c->halve[id];
    return c->halve[id] ? 0.5 : 2.0;
}

static void run_cblob(void *p)
{
    contender_state *s = p;
    cell *c = s->c;
    cb_split_bytes_override = s->override;
    must(cblob_context_set_num_threads(c->context, s->threads), "set_num_threads");
    switch (c->op) {
    case UPDATE: must(cblob_blob_update(c->blob), "update"); break;
    case ASUM: must(cblob_blob_asum(c->blob, CBLOB_PART_DATA, &c->sink), "asum"); break;
    case SUMSQ: must(cblob_blob_sumsq(c->blob, CBLOB_PART_DATA, &c->sink), "sumsq"); break;
    case SCALE: must(cblob_blob_scale(c->blob, CBLOB_PART_DATA, next_factor(c, s->id)), "scale"); break;
    default: must(cblob_blob_copy_from(c->copy, c->blob, CBLOB_PART_DATA, 0), "copy_from"); break;
    }
    cb_split_bytes_override = 0;
}

/* Caffe's CPU blob: Update is axpy(-1, diff, data), asum_data ?asum, sumsq_data ?dot of data with
 * itself, scale_data ?scal. */
static void run_openblas(void *p)
{
    contender_state *s = p;
    cell *c = s->c;
    const int n = (int)c->n;
    openblas.set_num_threads(s->threads);
    switch (c->op) {
    case UPDATE: c->f32 ? openblas.saxpy(n, -1.0f, c->y, 1, c->x, 1) : openblas.daxpy(n, -1.0, c->y, 1, c->x, 1); break;
    case ASUM: c->sink = c->f32 ? openblas.sasum(n, c->x, 1) : openblas.dasum(n, c->x, 1); break;
    case SUMSQ: c->sink = c->f32 ? openblas.sdot(n, c->x, 1, c->x, 1) : openblas.ddot(n, c->x, 1, c->x, 1); break;
    default:
        if (c->f32)
            openblas.sscal(n, (float)next_factor(c, s->id), c->x, 1);
        else
            openblas.dscal(n, next_factor(c, s->id), c->x, 1);
        break;
    }
}

enum { ONE, SPLIT, POLICY, OPENBLAS_1, OPENBLAS_N, CONTENDERS };

/* Times one cell; returns the split speedup. */
static double measure_cell(cell *c)
{
    contender_state states[CONTENDERS] = {
        {c, 1, 0, 0}, {c, threads, 1, 1}, {c, threads, 0, 2}, {c, 1, 0, 3}, {c, threads, 0, 4},
    };
    bench_contender list[CONTENDERS];
    const char *const names[CONTENDERS] = {"1", "split", "policy", "OpenBLAS 1", "OpenBLAS N"};
    const bool with_openblas = have_openblas && c->op != COPY;
    const int count = with_openblas ? CONTENDERS : OPENBLAS_1;
    for (int k = 0; k < count; ++k)
        list[k] = (bench_contender){names[k], k < OPENBLAS_1 ? run_cblob : run_openblas, NULL, &states[k],
                                    k == OPENBLAS_N ? BENCH_OPENBLAS_SETTLE_SECONDS : 0};
    bench_time t[CONTENDERS];
    bench_measure(&plan, count, list, t);
    const double bytes = (double)arrays_moved[c->op] * (double)c->n * (c->f32 ? 4 : 8) * 1e-9;
    printf("%-7s %-6s %9lld %8.0f |", c->f32 ? "float32" : "float64", op_names[c->op], (long long)c->n,
           bytes * 1e9 / 1024 / threads);
    for (int k = 0; k < CONTENDERS; ++k) {
        if (k < count)
            printf(" %8.2f", bytes / t[k].median);
        else
            printf(" %8s", "-");
    }
    printf(" | %6.2f", t[ONE].median / t[SPLIT].median);
    if (with_openblas) {
        const double best = t[OPENBLAS_1].median < t[OPENBLAS_N].median ? t[OPENBLAS_1].median : t[OPENBLAS_N].median;
        printf(" %6.2f %6.2f", t[OPENBLAS_N].median / t[POLICY].median, best / t[POLICY].median);
    } else {
        printf(" %6s %6s", "-", "-");
    }
    printf("\n");
    fflush(stdout);
    return t[ONE].median / t[SPLIT].median;
}

static int parse_sizes(const char *text, int64_t *sizes, int max)
{
    int count = 0;
    for (const char *p = text; *p != '\0' && count < max;) {
        char *end;
        sizes[count++] = (int64_t)strtod(p, &end);
        if (end == p)
            return 0;
        p = *end == ',' ? end + 1 : end;
    }
    return count;
}

int main(int argc, char **argv)
{
    int64_t sizes[16] = {10000, 20000, 50000, 100000, 200000, 500000, 1000000, 2000000};
    int num_sizes = 8;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            plan.rounds = bench_parse_rounds(argv[++i]);
        else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
            num_sizes = parse_sizes(argv[++i], sizes, 16);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (argv[i][0] >= '0' && argv[i][0] <= '9') /* the old form: bench_threads ROUNDS */
            plan.rounds = bench_parse_rounds(argv[i]);
        else
            num_sizes = 0;
    }
    if (num_sizes < 1 || threads < 2) {
        fprintf(stderr, "usage: bench_threads [--rounds N] [--sizes 1e4,2e4,...] [--threads N (2 or more)]\n");
        return 2;
    }
    bench_print_machine("bench_threads");
    have_openblas = bench_openblas_open(&openblas);
    printf("cblob %s; OpenBLAS %s; %d threads; medians of %d interleaved rounds\n", cblob_version(),
           have_openblas ? (openblas.get_config != NULL ? openblas.get_config() : "libopenblas.so.0") : "missing",
           (int)threads, plan.rounds);
    printf("GB/s (bytes read + written); KiB/thr = the work per thread when split; split = 1 thread's time / every\n"
           "size split; /OB N = OpenBLAS on %d threads' time / the library's (policy); /OB = the faster OpenBLAS's\n\n",
           (int)threads);
    printf("%-7s %-6s %9s %8s | %8s %8s %8s %8s %8s | %6s %6s %6s\n", "dtype", "op", "n", "KiB/thr", "1", "split",
           "policy", "OB 1", "OB N", "split", "/OB N", "/OB");
    cblob_context *context;
    must(cblob_context_create(&context), "context");
    char suggestions[2][OPS][96];
    for (int d = 0; d < 2; ++d) {
        for (int op = 0; op < OPS; ++op) {
            double speedup[16];
            for (int z = 0; z < num_sizes; ++z) {
                cell c = {.context = context, .f32 = d == 0, .op = op, .n = sizes[z]};
                const cblob_dtype dtype = c.f32 ? CBLOB_DTYPE_FLOAT32 : CBLOB_DTYPE_FLOAT64;
                must(cblob_blob_create(context, dtype, 1, &c.n, &c.blob), "create");
                must(cblob_blob_create(context, dtype, 1, &c.n, &c.copy), "create");
                must(cblob_blob_fill(c.blob, CBLOB_PART_DATA, 1.0), "fill");
                must(cblob_blob_fill(c.blob, CBLOB_PART_DIFF, 1e-9), "fill");
                must(cblob_blob_fill(c.copy, CBLOB_PART_DATA, 0.0), "fill");
                must(cblob_blob_mutable_cpu_ptr(c.blob, CBLOB_PART_DATA, &c.x), "data");
                must(cblob_blob_mutable_cpu_ptr(c.blob, CBLOB_PART_DIFF, &c.y), "diff");
                speedup[z] = measure_cell(&c);
                cblob_blob_destroy(c.blob);
                cblob_blob_destroy(c.copy);
            }
            /* The smallest size from which splitting won by 5% there and at every larger size. */
            int from = num_sizes;
            while (from > 0 && speedup[from - 1] >= 1.05)
                --from;
            if (from == num_sizes)
                snprintf(suggestions[d][op], sizeof suggestions[d][op], "never won by 5%% up to %lld elements",
                         (long long)sizes[num_sizes - 1]);
            else
                snprintf(suggestions[d][op], sizeof suggestions[d][op], "won from %lld elements: %.0f KiB per thread",
                         (long long)sizes[from],
                         (double)arrays_moved[op] * (double)sizes[from] * (d == 0 ? 4 : 8) / 1024 / threads);
        }
    }
    printf("\nwhere splitting paid (1.05x or more at that size and every larger one):\n");
    for (int d = 0; d < 2; ++d)
        for (int op = 0; op < OPS; ++op)
            printf("  %-7s %-6s %s\n", d == 0 ? "float32" : "float64", op_names[op], suggestions[d][op]);
    cblob_context_destroy(context);
    return 0;
}
