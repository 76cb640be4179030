/* SPDX-License-Identifier: BSD-2-Clause */
#define _DEFAULT_SOURCE /* usleep */
#include "bench_process.h"

#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_timing.h"

extern char **environ;

/* The environment with `add`'s names replaced by its entries. */
static char **child_environment(const char *const *add)
{
    static char *env[1024];
    int n = 0;
    for (char **e = environ; *e != NULL && n < 1000; ++e) {
        bool replaced = false;
        for (const char *const *a = add; a != NULL && *a != NULL && !replaced; ++a) {
            const size_t name = strcspn(*a, "=");
            replaced = strncmp(*e, *a, name + 1) == 0;
        }
        if (!replaced)
            env[n++] = *e;
    }
    for (const char *const *a = add; a != NULL && *a != NULL && n < 1023; ++a)
        env[n++] = (char *)*a;
    env[n] = NULL;
    return env;
}

static void run_child(bench_child *child, int round)
{
    int out[2];
    posix_spawn_file_actions_t actions;
    if (pipe(out) != 0 || posix_spawn_file_actions_init(&actions) != 0 ||
        posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO) != 0 ||
        posix_spawn_file_actions_addclose(&actions, out[0]) != 0) {
        perror("bench: setting up a child");
        exit(1);
    }
    pid_t pid;
    if (posix_spawn(&pid, child->argv[0], &actions, NULL, (char *const *)child->argv, child_environment(child->env)) !=
        0) {
        fprintf(stderr, "bench: cannot start %s\n", child->argv[0]);
        exit(1);
    }
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    char text[256] = "";
    size_t length = 0;
    for (ssize_t n; length < sizeof text - 1 && (n = read(out[0], text + length, sizeof text - 1 - length)) > 0;)
        length += (size_t)n;
    text[length] = '\0';
    close(out[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        sscanf(text, "%lf %lf", &child->cold[round], &child->warm[round]) != 2) {
        fprintf(stderr, "bench: the child for \"%s\" failed (it printed \"%s\")\n", child->label, text);
        exit(1);
    }
}

static void summary(const double *values, int rounds, double out[3])
{
    double sorted[BENCH_MAX_ROUNDS];
    memcpy(sorted, values, (size_t)rounds * sizeof values[0]);
    out[0] = bench_median(sorted, rounds);
    out[1] = sorted[0];
    out[2] = sorted[rounds - 1];
}

void bench_children(const char *title, bench_child *children, int count, int rounds, double gap, double bytes,
                    int baseline)
{
    bench_check_rounds(rounds);
    printf("\n%s\n", title);
    fflush(stdout);
    for (int r = 0; r < rounds; ++r) {
        int order[32];
        bench_round_order(r, count, order);
        for (int turn = 0; turn < count; ++turn) {
            usleep((useconds_t)(gap * 1e6));
            run_child(&children[order[turn]], r);
        }
    }
    double base_cold[3], base_warm[3];
    summary(children[baseline].cold, rounds, base_cold);
    summary(children[baseline].warm, rounds, base_warm);
    printf("  %-44s | %-37s | %-37s\n", "", "cold: ms (min-max)      GB/s  ratio", "warm: ms (min-max)      GB/s  ratio");
    for (int k = 0; k < count; ++k) {
        double cold[3], warm[3];
        summary(children[k].cold, rounds, cold);
        summary(children[k].warm, rounds, warm);
        printf("  %-44s | %8.1f (%7.1f-%7.1f) %5.2f %5.2fx | %8.1f (%7.1f-%7.1f) %5.2f %5.2fx\n", children[k].label,
               cold[0] * 1e3, cold[1] * 1e3, cold[2] * 1e3, bytes / cold[0] * 1e-9, base_cold[0] / cold[0],
               warm[0] * 1e3, warm[1] * 1e3, warm[2] * 1e3, bytes / warm[0] * 1e-9, base_warm[0] / warm[0]);
    }
    fflush(stdout);
}

void bench_child_report(double *times, int repeats)
{
    const double cold = times[0];
    printf("%.9f %.9f\n", cold, repeats > 0 ? bench_median(times + 1, repeats) : cold);
}
