/* SPDX-License-Identifier: BSD-2-Clause */
/* What the cblob program's commands share: exit statuses and one-line errors, progress on a
 * terminal, opening inputs (a path or "-") by the library, reading blob values in pieces,
 * statistics, and names made safe for a terminal. The program is a user of the public ABI: files,
 * formats and errors are the library's (it links src/util's UTF-8 alone). */
#ifndef CBLOB_TOOLS_TOOL_H
#define CBLOB_TOOLS_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cblob/cblob.h"

enum {
    TOOL_OK = 0,
    TOOL_FAILED = 1,    /* the input was fine but the work failed (for example, writing output) */
    TOOL_BAD_INPUT = 2, /* bad usage, or a missing, unreadable or corrupt input file */
};

/* ---- errors ------------------------------------------------------------------------------- */

/* Prints "cblob <command>: <text>" on stderr (clearing any progress first) and returns exit_status. */
int tool_fail(int exit_status, const char *command, const char *format, ...) __attribute__((format(printf, 3, 4)));
/* The library's last failure, as tool_fail prints it: its detail (cblob_last_error_detail), which
 * names the file; the program never takes the library's message apart. */
int tool_library_fail(int exit_status, const char *command);
/* The exit status for an input that failed with status: memory is the machine's fault. */
int tool_input_exit(cblob_status status);
/* A failure of the program's own (no memory for its lists, output it could not write), said at
 * once; the status it returns tells tool_report that nothing is left to say. */
#define TOOL_REPORTED ((cblob_status)-1)
cblob_status tool_own_failure(const char *command, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Says why a call failed with status (the library's detail, unless the program said it already)
 * and returns exit_status. */
int tool_report(cblob_status status, int exit_status, const char *command);

/* Returns a failed status at once. */
#define TOOL_TRY(expr) \
    do { \
        const cblob_status tool_try_status_ = (expr); \
        if (tool_try_status_ != CBLOB_OK) \
            return tool_try_status_; \
    } while (0)

/* ---- progress ----------------------------------------------------------------------------- */

/* Progress on stderr, only when stderr is a terminal: "\r<command>: <done>/<total> <what>". */
void tool_progress(const char *command, int64_t done, int64_t total, const char *what);
void tool_progress_done(void);

/* ---- inputs and outputs ------------------------------------------------------------------- */

/* "-" stands for standard input or output wherever one file is read or written. */
bool tool_is_stdio(const char *path);
/* How messages name an input: the path, or "standard input". */
const char *tool_input_name(const char *path);
/* Opens an input by the library (cblob_file_open, or cblob_file_open_fd for "-"): read once,
 * whatever it holds. */
cblob_status tool_open(cblob_context *context, const char *path, int32_t flags, cblob_dtype dtype, cblob_file **out);
/* Writes bytes to standard output whole; false (errno set) when it could not. */
bool tool_write_stdout(const uint8_t *bytes, size_t size);

/* A file opened for the commands: a model (the file's own) or the file's blobs. */
typedef struct tool_caffe {
    const char *name; /* for messages */
    cblob_file *file;
    cblob_file_kind kind;
    cblob_model *model; /* borrowed from file, or NULL */
    int64_t num_blobs;
    cblob_blob **blobs; /* new holders, destroyed by tool_caffe_close */
} tool_caffe;

/* Opens path (tool_open) for `command`: TOOL_OK, or the exit status after saying why. */
int tool_caffe_open(cblob_context *context, const char *command, const char *path, int32_t flags, cblob_dtype dtype,
                    tool_caffe *out);
void tool_caffe_close(tool_caffe *file);

/* ---- blobs -------------------------------------------------------------------------------- */

/* A blob of a model (read without making its handle) or a blob handle. */
typedef struct tool_blob {
    const cblob_model *model;
    int64_t layer, index;
    cblob_blob *handle; /* when not NULL, the blob */
} tool_blob;

typedef struct tool_blob_facts {
    cblob_dtype dtype;
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count;
    bool has_diff;
} tool_blob_facts;

tool_blob tool_model_blob(const cblob_model *model, int64_t layer, int64_t index);
tool_blob tool_handle_blob(cblob_blob *blob);
cblob_status tool_blob_facts_of(const tool_blob *blob, tool_blob_facts *out);
/* Copies count values of a part from element start, in the blob's dtype. */
cblob_status tool_blob_read(const tool_blob *blob, cblob_part part, int64_t start, int64_t count, void *buffer,
                            size_t buffer_size);

/* Values are read in pieces of this many bytes, so memory stays small for huge blobs. */
#define TOOL_PIECE_BYTES ((size_t)1 << 20)

/* Statistics of a blob's data, accumulated in double. */
typedef struct tool_stats {
    double sum, asum, sumsq, min, max; /* min and max are NaN when the blob is empty */
} tool_stats;

cblob_status tool_stats_compute(const tool_blob *blob, const tool_blob_facts *facts, tool_stats *out);

const char *tool_dtype_name(cblob_dtype dtype);
/* "20x1x5x5", or "()" for a scalar. */
void tool_shape_text(const tool_blob_facts *facts, char *out, size_t size);

/* ---- text --------------------------------------------------------------------------------- */

/* The length of the valid UTF-8 character at text (1 for ASCII, NUL included), or 0. */
size_t tool_utf8_length(const unsigned char *text);
/* A copy of text that is valid UTF-8: each byte that is not becomes U+FFFD (as the library's JSON
 * does). NULL when memory ran out. */
char *tool_utf8(const char *text);
/* Text as a terminal may show it: control characters (escape sequences among them), C1 controls,
 * bidirectional overrides, backslashes and bytes that are not UTF-8 are written as C escapes
 * (\n, \x1b, \u202e, \\); width is the columns that takes (one per character). */
int tool_escaped_width(const char *text);
void tool_print_escaped(FILE *out, const char *text, int width);

#endif
