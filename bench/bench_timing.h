/* SPDX-License-Identifier: BSD-2-Clause */
/* How every benchmark in bench/ times: contenders measured in turns within one run (in a fresh
 * order each round, so that none always follows another's cache eviction), each figure the
 * median of the rounds with its min and max, never the best of N. A shared machine slows every
 * contender of a round alike, so ratios within a run are what to read. */
#ifndef CBLOB_BENCH_TIMING_H
#define CBLOB_BENCH_TIMING_H

#include <stddef.h>

typedef void (*bench_fn)(void *state);

/* Runs `calls` calls and returns the seconds they took by the contender's own clock: for
 * contenders in another process (NumPy, bench_math), timed where they run. */
typedef double (*bench_batch_fn)(void *state, long calls);

typedef struct bench_contender {
    const char *name;
    bench_fn run;         /* one call, timed here; or NULL and: */
    bench_batch_fn batch; /* a timed batch of calls */
    void *state;
    /* Seconds to wait, untimed, after each of its batches: for a peer whose threads go on
     * spinning after its calls return (OpenBLAS's, for about 0.1 s: 2^28 cycles), so that they do
     * not take a core from the contender after it. 0: none. */
    double settle_seconds;
} bench_contender;

/* Seconds per call of one contender: the median over the rounds, and the extremes. */
/* What a contender that runs OpenBLAS on several threads waits after its batches
 * (bench_contender.settle_seconds): OpenBLAS's idle threads spin for 2^28 cycles before they
 * sleep (its THREAD_TIMEOUT), about 0.1 s here. Without the wait, bench_threads' split columns
 * flipped between idle runs (float32 update at 1e5 elements: 1.21x, 1.38x and 0.52x over one
 * thread), and with OpenBLAS's spin turned off (OPENBLAS_THREAD_TIMEOUT=4) two runs agreed
 * within 0.15 at every size. */
#define BENCH_OPENBLAS_SETTLE_SECONDS 0.25

typedef struct bench_time {
    double median, min, max;
} bench_time;

/* The most rounds a benchmark takes: every series of samples is an array of this many. */
#define BENCH_MAX_ROUNDS 64

/* A rounds count from the command line (`--rounds N`, or a benchmark's positional ROUNDS): a
 * whole number from 1 to BENCH_MAX_ROUNDS. Anything else is refused on stderr with exit status 2,
 * before a header is printed or a child started: a median of 0 rounds reads no sample, and a
 * count above the limit was once cut to it silently while the header printed the count asked. */
int bench_parse_rounds(const char *text);

/* The same refusal for a count already read: bench_measure and bench_children check theirs. */
void bench_check_rounds(int rounds);

typedef struct bench_plan {
    int rounds;           /* interleaved rounds; each times one batch of every contender */
    double batch_seconds; /* a batch repeats calls for about this long (at least one call) */
} bench_plan;

double bench_now(void);

/* The order of `count` contenders (at most 32) in round `round`: a shuffle that depends only on
 * the two, so every run, and every MPI rank, takes the same orders. A rotation of one order, as
 * the benchmarks once took, keeps every contender behind the same one in every round
 * (bench_math's cblob on one thread always ran right after memcpy), so what that one leaves in
 * the caches and the memory's queues counted against it alone. */
void bench_round_order(int round, int count, int *order);

/* Times `count` contenders (at most 32) by `plan`; out[i] is contender i's time per call. Its rounds
 * go through bench_check_rounds. */
void bench_measure(const bench_plan *plan, int count, const bench_contender *contenders, bench_time *out);

/* The median of `count` values (sorted in place). */
double bench_median(double *values, int count);

/* How loaded the machine is: the 1-minute load average and the CPUs online, for the report. */
void bench_print_machine(const char *program);

#endif
