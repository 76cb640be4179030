/* SPDX-License-Identifier: BSD-2-Clause */
/* libcblob_mpi against MPI called directly, under mpirun (2 or 4 ranks):
 *   1. an all-reduce (sum) of an arena of a net's gradients through cblob_comm_allreduce, against
 *      MPI_Allreduce(MPI_IN_PLACE) of the same buffer: the cost of cblob's layer (target: cblob
 *      at least 0.95x MPI's speed);
 *   2. an all-reduce of 200 small blobs fused into one bucket, against 200 calls of one blob each
 *      (target: fused at least 5x faster);
 *   3. what the ranks' agreement costs: (1)'s arena, (2)'s fused 200 blobs and one of those
 *      blobs alone (the smallest collective, where the agreement's one extra round trip weighs
 *      most) all-reduced on a communicator with the agreement (the default, as in 1 and 2) and
 *      on one without it (cblob_comm_set_agreement_check(comm, 0)), in the same rounds.
 * Timing as bench/bench_timing.h does it, with one change that MPI needs: every rank runs the same
 * number of calls (rank 0 decides it), each batch starts after a barrier, and a batch's time is
 * the slowest rank's. Contenders alternate within each round (in a fresh order each round, the
 * same on every rank: bench_round_order); each figure is the median of the rounds with its
 * min-max; ratios come from this one run.
 *
 * usage: mpirun -n 4 bench_mpi [arena MiB, default 16] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_timing.h"
#include "cblob/mpi.h"

enum { rounds = 15, small_blobs = 200, small_elements = 256 };
static const double batch_seconds = 0.15;

typedef struct contender {
    const char *name;
    void (*run)(void *state);
    void *state;
} contender;

static int rank;

static void die(const char *what, cblob_status status)
{
    fprintf(stderr, "bench_mpi: rank %d: %s: %s: %s\n", rank, what, cblob_status_name(status),
            cblob_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define TRY(call) \
    do { \
        cblob_status status_ = (call); \
        if (status_ != CBLOB_OK) \
            die(#call, status_); \
    } while (0)

/* Seconds for `calls` calls on the slowest rank, every rank starting together. */
static double timed_batch(const contender *c, long calls)
{
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = bench_now();
    for (long i = 0; i < calls; ++i)
        c->run(c->state);
    double took = bench_now() - start, slowest = 0;
    MPI_Allreduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* Calls per batch for about batch_seconds, decided by rank 0's measurement and shared. */
static long calls_per_batch(const contender *c)
{
    timed_batch(c, 1);
    long calls = 1;
    for (;; calls *= 2) {
        const double took = timed_batch(c, calls);
        if (took >= batch_seconds / 4 || calls > (1L << 24)) {
            calls = took > 0 ? (long)fmax(1, (double)calls * batch_seconds / took) : calls;
            break;
        }
    }
    MPI_Bcast(&calls, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    return calls;
}

static void measure(int count, const contender *contenders, bench_time *out)
{
    long calls[6];
    double samples[6][rounds];
    for (int c = 0; c < count; ++c)
        calls[c] = calls_per_batch(&contenders[c]);
    for (int round = 0; round < rounds; ++round) {
        int order[6];
        bench_round_order(round, count, order);
        for (int k = 0; k < count; ++k) {
            const int c = order[k];
            samples[c][round] = timed_batch(&contenders[c], calls[c]) / (double)calls[c];
        }
    }
    for (int c = 0; c < count; ++c) {
        out[c].min = out[c].max = samples[c][0];
        for (int r = 0; r < rounds; ++r) {
            out[c].min = fmin(out[c].min, samples[c][r]);
            out[c].max = fmax(out[c].max, samples[c][r]);
        }
        out[c].median = bench_median(samples[c], rounds);
    }
}

/* ---- 1. an arena against MPI_Allreduce of its buffer ------------------------------------------ */
typedef struct arena_state {
    cblob_comm *comm;
    cblob_blob *arena;
    float *buffer;
    int64_t count;
} arena_state;

static void cblob_arena_allreduce(void *state)
{
    arena_state *s = state;
    TRY(cblob_comm_allreduce(s->comm, &s->arena, 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
}

static void mpi_allreduce(void *state)
{
    arena_state *s = state;
    if (MPI_Allreduce(MPI_IN_PLACE, s->buffer, (int)s->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

/* What the engine calls (the non-blocking collective MPI picks its algorithm for separately),
 * without cblob: so that the cost of cblob's layer is told apart from MPI's choice. */
static void mpi_iallreduce_wait(void *state)
{
    arena_state *s = state;
    MPI_Request request;
    if (MPI_Iallreduce(MPI_IN_PLACE, s->buffer, (int)s->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request) !=
            MPI_SUCCESS ||
        MPI_Wait(&request, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- 2. 200 small blobs, fused against one call each -------------------------------------------- */
typedef struct small_state {
    cblob_comm *comm;
    cblob_blob *blobs[small_blobs];
} small_state;

static void fused(void *state)
{
    small_state *s = state;
    TRY(cblob_comm_allreduce(s->comm, s->blobs, small_blobs, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
}

static void first_alone(void *state)
{
    small_state *s = state;
    TRY(cblob_comm_allreduce(s->comm, &s->blobs[0], 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
}

static void one_by_one(void *state)
{
    small_state *s = state;
    for (int i = 0; i < small_blobs; ++i)
        TRY(cblob_comm_allreduce(s->comm, &s->blobs[i], 1, CBLOB_PART_DIFF, CBLOB_REDUCE_SUM));
}

/* Each contender's time, and each other's time over the first's: the first's speed relative to it
 * (the target applies to the second). */
static void report(const char *title, int count, const contender *c, const bench_time *t, double target)
{
    if (rank != 0)
        return;
    printf("%s\n", title);
    for (int i = 0; i < count; ++i)
        printf("  %-40s %10.1f us  (min %.1f, max %.1f)\n", c[i].name, t[i].median * 1e6, t[i].min * 1e6,
               t[i].max * 1e6);
    printf("  %s / %s = %.3fx (target >= %.2fx)\n", c[1].name, c[0].name, t[1].median / t[0].median, target);
    for (int i = 2; i < count; ++i)
        printf("  %s / %s = %.3fx\n", c[i].name, c[0].name, t[i].median / t[0].median);
}

/* The agreement's cost: each pair (with, without) as times, their ratio and their difference. */
static void report_cost(const char *title, const contender *c, const bench_time *t)
{
    if (rank != 0)
        return;
    printf("%s\n", title);
    for (int pair = 0; pair < 3; ++pair) {
        for (int i = 2 * pair; i < 2 * pair + 2; ++i)
            printf("  %-40s %10.1f us  (min %.1f, max %.1f)\n", c[i].name, t[i].median * 1e6, t[i].min * 1e6,
                   t[i].max * 1e6);
        printf("  with / without = %.3fx (%+.1f us per call)\n", t[2 * pair].median / t[2 * pair + 1].median,
               (t[2 * pair].median - t[2 * pair + 1].median) * 1e6);
    }
}

/* A net's parameters: blobs of Caffe-like sizes until `total` elements, their diffs in an arena. */
static cblob_blob *gradient_arena(cblob_context *context, int64_t total, cblob_blob ***out_blobs, int *out_count)
{
    const int64_t sizes[] = {864, 32, 25600, 64, 1600000, 500, 5000, 10};
    int count = 0;
    cblob_blob **blobs = NULL;
    for (int64_t placed = 0; placed < total; ++count) {
        int64_t size = sizes[count % 8];
        if (size > total - placed)
            size = total - placed;
        blobs = realloc(blobs, (size_t)(count + 1) * sizeof *blobs);
        TRY(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &size, &blobs[count]));
        placed += size;
    }
    cblob_blob *arena;
    TRY(cblob_arena_create(blobs, count, CBLOB_PART_DIFF, 64, &arena));
    *out_blobs = blobs;
    *out_count = count;
    return arena;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const double mib = argc > 1 ? atof(argv[1]) : 16;
    if (rank == 0) {
        bench_print_machine("bench_mpi");
        printf("ranks: %d; times are the slowest rank's, per call\n", size);
    }
    cblob_context *context;
    TRY(cblob_context_create(&context));
    cblob_comm *comm;
    cblob_status created = cblob_comm_create_mpi(context, MPI_COMM_WORLD, &comm);
    if (created != CBLOB_OK) {
        fprintf(stderr, "bench_mpi: cblob_comm_create_mpi: %s\n", cblob_mpi_last_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    arena_state arena = {.comm = comm, .count = (int64_t)(mib * 1048576 / 4)};
    cblob_blob **members;
    int member_count;
    arena.arena = gradient_arena(context, arena.count, &members, &member_count);
    TRY(cblob_blob_count(arena.arena, &arena.count));
    void *buffer;
    TRY(cblob_blob_mutable_cpu_ptr(arena.arena, CBLOB_PART_DIFF, &buffer));
    arena.buffer = buffer;
    for (int64_t i = 0; i < arena.count; ++i)
        arena.buffer[i] = 0; /* sums of zeros stay finite however many calls run */
    const contender arena_contenders[3] = {{"cblob_comm_allreduce(arena)", cblob_arena_allreduce, &arena},
                                           {"MPI_Allreduce(same buffer)", mpi_allreduce, &arena},
                                           {"MPI_Iallreduce+MPI_Wait(same buffer)", mpi_iallreduce_wait, &arena}};
    bench_time arena_times[3];
    measure(3, arena_contenders, arena_times);
    char title[160];
    snprintf(title, sizeof title, "all-reduce of an arena of %d blobs, %.1f MiB of float32:", member_count,
             (double)arena.count * 4 / 1048576);
    report(title, 3, arena_contenders, arena_times, 0.95);

    small_state small = {.comm = comm};
    for (int i = 0; i < small_blobs; ++i) {
        int64_t n = small_elements;
        TRY(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &n, &small.blobs[i]));
        void *diff;
        TRY(cblob_blob_mutable_cpu_ptr(small.blobs[i], CBLOB_PART_DIFF, &diff));
    }
    const contender small_contenders[2] = {{"fused (one call, 200 blobs)", fused, &small},
                                           {"200 calls of one blob", one_by_one, &small}};
    bench_time small_times[2];
    measure(2, small_contenders, small_times);
    snprintf(title, sizeof title, "all-reduce of %d blobs of %d float32:", small_blobs, small_elements);
    report(title, 2, small_contenders, small_times, 5.0);

    /* 3. The same calls on a communicator without the agreement, in the same rounds. */
    cblob_comm *unchecked;
    if (cblob_comm_create_mpi(context, MPI_COMM_WORLD, &unchecked) != CBLOB_OK) {
        fprintf(stderr, "bench_mpi: cblob_comm_create_mpi: %s\n", cblob_mpi_last_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    TRY(cblob_comm_set_agreement_check(unchecked, 0));
    arena_state arena_unchecked = arena;
    arena_unchecked.comm = unchecked;
    small_state small_unchecked = small;
    small_unchecked.comm = unchecked;
    const contender cost_contenders[6] = {{"one blob, with the agreement", first_alone, &small},
                                          {"one blob, without", first_alone, &small_unchecked},
                                          {"fused 200 blobs, with the agreement", fused, &small},
                                          {"fused 200 blobs, without", fused, &small_unchecked},
                                          {"arena, with the agreement", cblob_arena_allreduce, &arena},
                                          {"arena, without", cblob_arena_allreduce, &arena_unchecked}};
    bench_time cost_times[6];
    measure(6, cost_contenders, cost_times);
    snprintf(title, sizeof title, "the agreement's cost (blobs of %d float32; an arena of %.1f MiB):", small_elements,
             (double)arena.count * 4 / 1048576);
    report_cost(title, cost_contenders, cost_times);
    cblob_comm_destroy(unchecked);

    for (int i = 0; i < small_blobs; ++i)
        cblob_blob_destroy(small.blobs[i]);
    cblob_blob_destroy(arena.arena);
    for (int i = 0; i < member_count; ++i)
        cblob_blob_destroy(members[i]);
    free(members);
    cblob_comm_destroy(comm);
    cblob_context_destroy(context);
    MPI_Finalize();
    return 0;
}
