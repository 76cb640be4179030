/* SPDX-License-Identifier: BSD-2-Clause */
/* What the cblob program's commands share: exit statuses, one-line errors, progress on a
 * terminal, loading a Caffe file of any kind, and blob statistics. */
#ifndef CBLOB_TOOLS_TOOL_H
#define CBLOB_TOOLS_TOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "cblob/cblob.h"

enum {
    TOOL_OK = 0,
    TOOL_FAILED = 1,    /* the input was fine but the work failed (for example, writing output) */
    TOOL_BAD_INPUT = 2, /* bad usage, or a missing, unreadable or corrupt input file */
};

/* Prints "cblob <command>: <subject>: <problem>" on stderr and returns status. */
int tool_fail(int status, const char *command, const char *subject, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

/* The library's last error message without its leading "cblob_function: ", and without a
 * leading "<subject>: " when it names the file the caller's message names already. */
const char *tool_library_message(void);
const char *tool_library_message_about(const char *subject);

/* Progress on stderr, only when stderr is a terminal: "\r<command>: <done>/<total> <what>". */
void tool_progress(const char *command, int64_t done, int64_t total, const char *what);
void tool_progress_done(void);

typedef struct tool_layer {
    const char *name;
    const char *type;
    int64_t num_blobs;
    cblob_blob **blobs;
} tool_layer;

/* A Caffe file of any kind, loaded: a net's layers, or a blob file's blobs. */
typedef struct tool_file {
    const char *path;
    cblob_proto_kind kind;
    cblob_model *model;
    const char *format; /* "V2" or "V1" for nets, else NULL */
    const char *name;   /* the net's name, or NULL */
    int64_t num_layers;
    tool_layer *layers;
    int64_t num_blobs; /* blob and blob-vector files */
    cblob_blob **blobs;
} tool_file;

/* Loads path; on failure prints the one-line error and returns TOOL_BAD_INPUT (or TOOL_FAILED
 * when memory ran out). */
int tool_file_load(cblob_context *context, const char *command, const char *path, tool_file *out);
void tool_file_free(tool_file *file);

/* Statistics of a blob's data, accumulated in double. */
typedef struct tool_stats {
    int64_t count;
    double sum, asum, sumsq, min, max; /* min and max are NaN when count is 0 */
} tool_stats;

cblob_status tool_stats_compute(cblob_blob *blob, tool_stats *out);

/* Whether the blob holds a diff (read from the file: its diff memory was written). */
bool tool_has_diff(const cblob_blob *blob);

const char *tool_dtype_name(cblob_dtype dtype);

#endif
