/* SPDX-License-Identifier: BSD-2-Clause */
/* Running the cblob program as a user does, from the tools suites: its exit status, what it
 * printed, and a deadline (a run that blocks, on a FIFO say, is killed and reported as such);
 * and the files the tests give it: nets made with the library or tests/tools/make_net.py, .npy
 * files written byte by byte. */
#ifndef CBLOB_TESTS_TOOLS_CLI_SUPPORT_H
#define CBLOB_TESTS_TOOLS_CLI_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

/* A run's outcome: exit status (CLI_TIMED_OUT when the deadline killed it, 128 + the signal when
 * one ended it), standard output and error (NUL-terminated), its peak resident memory and its user
 * CPU time (its own: wait4's figures): the work of the program's own code, without the kernel's
 * (zeroing fresh pages, whose cost on a VM varies from run to run). */
#define CLI_TIMED_OUT (-1)
typedef struct cli_result {
    int status;
    long peak_kib;
    double user_seconds;
    char *out, *err;
    size_t out_size, err_size;
} cli_result;

/* Runs `cblob args...` (args ends with NULL) with standard input from stdin_path (NULL: an empty
 * pipe), killed after timeout seconds. False only when the program could not be started. */
bool cli_run(cli_result *result, const char *stdin_path, int timeout, const char *const *args);
void cli_result_free(cli_result *result);

/* cli_run with the arguments listed, 60 s, empty standard input. */
#define CLI(result, ...) cli_run((result), NULL, 60, (const char *const[]){__VA_ARGS__, NULL})

/* Whether stderr is exactly one line and contains every one of the parts (NULL-terminated). */
bool cli_one_line_with(const cli_result *result, const char *const *parts);
#define CLI_ERROR_HAS(result, ...) cli_one_line_with((result), (const char *const[]){__VA_ARGS__, NULL})

/* A net of layers with the given names (a float32 blob each of 3 values, seed i), saved to path. */
bool cli_write_named_net(const char *path, const char *const *names, int count);
/* tests/tools/make_net.py OPTIONS OUT. */
bool cli_make_net(const char *options, const char *path);
/* A .npy file: the header for descr and shape text ("(2, 3)"), then the values' bytes. */
bool cli_write_npy(const char *path, const char *descr, const char *shape, const void *values, size_t size);

/* How many entries of the folder end with suffix. */
int cli_count_suffix(const char *folder, const char *suffix);

#endif
