/* SPDX-License-Identifier: BSD-2-Clause */
/* Cold and warm in one run (bench_cold, bench_format_peers): each contender is a child process
 * started after an idle gap, which does its work once (cold: what a user starting a program
 * meets) and then more times back to back (warm: a loop in one process), and prints the two
 * times as "COLD WARM" (seconds; warm the median of the repetitions). Each round takes the
 * contenders in a fresh order (bench_round_order), so that none always follows another; figures
 * are medians over rounds. */
#ifndef CBLOB_BENCH_PROCESS_H
#define CBLOB_BENCH_PROCESS_H

#include "bench_timing.h" /* BENCH_MAX_ROUNDS */

typedef struct bench_child {
    const char *label;
    const char *const *argv; /* the child's command line, NULL-terminated; argv[0] is run as is */
    const char *const *env;  /* NAME=VALUE to add (replacing the same name), NULL-terminated, or NULL */
    double cold[BENCH_MAX_ROUNDS], warm[BENCH_MAX_ROUNDS];
} bench_child;

/* Runs every child once per round after `gap` seconds of sleep, and prints a table of medians
 * with min-max, GB/s of `bytes` and ratios against child `baseline` (its time / the child's: above
 * 1 is faster). Exits the program if a child fails. */
void bench_children(const char *title, bench_child *children, int count, int rounds, double gap, double bytes,
                    int baseline);

/* Prints "COLD WARM" for a child: times[0] once, the median of times[1..repeats]. */
void bench_child_report(double *times, int repeats);

#endif
