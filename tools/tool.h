/* SPDX-License-Identifier: BSD-2-Clause */
/* What the cblob program's commands share: exit statuses and one-line errors, opening inputs (a
 * path or "-") by the library, reading blob values in pieces, statistics, and names made safe for
 * a terminal (progress and signals: terminal.h). The program is a user of the public ABI: files,
 * formats and errors are the library's (it links src/util's UTF-8 alone). */
#ifndef CBLOB_TOOLS_TOOL_H
#define CBLOB_TOOLS_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cblob/cblob.h"
#include "help.h"
#include "terminal.h"
#include "text.h"

enum {
    TOOL_OK = 0,
    TOOL_FAILED = 1,    /* the input was fine but the work failed (for example, writing output) */
    TOOL_BAD_INPUT = 2, /* bad usage, or a missing, unreadable or corrupt input file */
    /* A signal stopped the work (terminal.h): the command says what it left as it was and exits
     * 128 + the signal (tool_interrupt_exit). Never an exit status itself. */
    TOOL_INTERRUPTED = -2,
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
/* A signal stopped the program's own work (its loops check tool_interrupted); the library's calls
 * say CBLOB_ERR_CANCELLED. tool_report turns both into TOOL_INTERRUPTED. */
#define TOOL_STOPPED ((cblob_status)-2)
cblob_status tool_own_failure(const char *command, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Says why a call failed with status (the library's detail, unless the program said it already)
 * and returns exit_status; TOOL_INTERRUPTED, saying nothing, when a signal stopped it. */
int tool_report(cblob_status status, int exit_status, const char *command);

/* Returns a failed status at once. */
#define TOOL_TRY(expr) \
    do { \
        const cblob_status tool_try_status_ = (expr); \
        if (tool_try_status_ != CBLOB_OK) \
            return tool_try_status_; \
    } while (0)

/* ---- options ------------------------------------------------------------------------------ */

/* The option at argv[*i] (it starts with '-' and is not "-"), from the command's table
 * (generated/tools/help.h, from the manual): its id, with its value (the next word, or what follows
 * "--name=") in *value and *i moved past what it took. -1 after saying why: an option the command
 * does not take, or a missing value. */
int tool_parse_option(const char *command, const tool_option *table, size_t count, int argc, char **argv, int *i,
                const char **value);
/* --quiet and --progress, the options every command that reads or writes files takes: the mode,
 * refusing both at once. TOOL_OK or TOOL_BAD_INPUT after saying why. */
int tool_progress_option(const char *command, bool quiet, tool_progress_mode *mode);

/* ---- inputs and outputs ------------------------------------------------------------------- */

/* "-" stands for standard input or output wherever one file is read or written. */
bool tool_is_stdio(const char *path);
/* Whether an output is standard output: "-", or a path to the file it writes (/dev/stdout,
 * /proc/self/fd/1), where a "wrote ..." line would land inside the output. */
bool tool_writes_stdout(const char *path);
/* The extension of a path's last name, from its dot ("a/b.tar.npz": ".npz"), or NULL. */
const char *tool_extension(const char *path);
/* Whether two paths name the same file (through links, hard links and "..": the same inode). */
bool tool_same_file(const char *a, const char *b);
/* How messages name an input: the path, or "standard input". */
const char *tool_input_name(const char *path);
/* A context for a command: its progress told to the terminal (terminal.h). NULL after saying why. */
cblob_context *tool_context(const char *command);
/* Opens an input by the library (cblob_file_open, or cblob_file_open_fd for "-"): read once,
 * whatever it holds, its progress shown as "reading <name>". */
cblob_status tool_open(cblob_context *context, const char *path, int32_t flags, cblob_dtype dtype, cblob_file **out);
/* Writes bytes to standard output whole, in pieces that a signal may stop (then false with errno
 * EINTR); false (errno set) when it could not. */
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

/* Opens path (tool_open) for `command`: TOOL_OK, TOOL_INTERRUPTED, or the exit status after saying
 * why. */
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

/* Reads the blob's values in pieces, adding their bytes to the progress (tool_progress_add); a signal
 * stops it with TOOL_STOPPED. */
cblob_status tool_stats_compute(const tool_blob *blob, const tool_blob_facts *facts, tool_stats *out);

const char *tool_dtype_name(cblob_dtype dtype);
size_t tool_dtype_size(cblob_dtype dtype);
/* "20x1x5x5", or "()" for a scalar. */
void tool_shape_text(const tool_blob_facts *facts, char *out, size_t size);

#endif
