/* SPDX-License-Identifier: BSD-2-Clause */
#define _DEFAULT_SOURCE /* getloadavg */
#include "bench_timing.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_CONTENDERS 32

static void refuse_rounds(const char *text)
{
    fprintf(stderr, "bench: the rounds (--rounds N, or ROUNDS) must be a whole number from 1 to %d (got \"%s\")\n", BENCH_MAX_ROUNDS, text);
    exit(2);
}

void bench_check_rounds(int rounds)
{
    if (rounds < 1 || rounds > BENCH_MAX_ROUNDS) {
        char text[16];
        snprintf(text, sizeof text, "%d", rounds);
        refuse_rounds(text);
    }
}

int bench_parse_rounds(const char *text)
{
    char *end = NULL;
    errno = 0;
    const long rounds = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || rounds < 1 || rounds > BENCH_MAX_ROUNDS)
        refuse_rounds(text);
    return (int)rounds;
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof values[0], compare_doubles);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

static double timed_batch(const bench_contender *c, long calls)
{
    if (c->batch != NULL)
        return c->batch(c->state, calls);
    const double start = bench_now();
    for (long i = 0; i < calls; ++i)
        c->run(c->state);
    return bench_now() - start;
}

/* Calls per batch so that a batch lasts about batch_seconds (after one warming call). */
static long calls_per_batch(const bench_contender *c, double batch_seconds)
{
    timed_batch(c, 1);
    for (long calls = 1;; calls *= 2) {
        const double took = timed_batch(c, calls);
        if (took >= batch_seconds / 4 || calls > (1L << 30))
            return took > 0 ? (long)fmax(1, calls * batch_seconds / took) : calls;
    }
}

void bench_round_order(int round, int count, int *order)
{
    /* Fisher-Yates driven by xorshift64, seeded by the round alone. */
    uint64_t random = 0x9e3779b97f4a7c15u * (uint64_t)(round + 1);
    for (int i = 0; i < count; ++i)
        order[i] = i;
    for (int i = count - 1; i > 0; --i) {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        const int j = (int)(random % (uint64_t)(i + 1));
        const int swap = order[i];
        order[i] = order[j];
        order[j] = swap;
    }
}

void bench_measure(const bench_plan *plan, int count, const bench_contender *contenders, bench_time *out)
{
    long calls[BENCH_MAX_CONTENDERS];
    static double samples[BENCH_MAX_CONTENDERS][BENCH_MAX_ROUNDS];
    const int rounds = plan->rounds;
    if (count > BENCH_MAX_CONTENDERS) {
        fprintf(stderr, "bench_measure: at most %d contenders\n", BENCH_MAX_CONTENDERS);
        exit(1);
    }
    bench_check_rounds(rounds);
    for (int k = 0; k < count; ++k)
        calls[k] = calls_per_batch(&contenders[k], plan->batch_seconds);
    for (int r = 0; r < rounds; ++r) {
        int order[BENCH_MAX_CONTENDERS];
        bench_round_order(r, count, order);
        for (int turn = 0; turn < count; ++turn) {
            const int k = order[turn];
            samples[k][r] = timed_batch(&contenders[k], calls[k]) / (double)calls[k];
            if (contenders[k].settle_seconds > 0) {
                const double wait = contenders[k].settle_seconds;
                const struct timespec pause = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
                nanosleep(&pause, NULL);
            }
        }
    }
    for (int k = 0; k < count; ++k) {
        out[k].median = bench_median(samples[k], rounds);
        out[k].min = samples[k][0];
        out[k].max = samples[k][rounds - 1];
    }
}

void bench_print_machine(const char *program)
{
    double load[1] = {-1};
    getloadavg(load, 1);
    printf("%s: %ld CPUs online, load average %.2f at the start\n", program, sysconf(_SC_NPROCESSORS_ONLN), load[0]);
}
