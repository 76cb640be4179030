/* SPDX-License-Identifier: BSD-2-Clause */
/* What the cblob program's commands share: exit statuses and one-line errors, progress on a
 * terminal, reading inputs (a path or "-"), telling what a file holds, opening a Caffe file of
 * any kind, reading blob values in pieces, statistics, and names made safe for a terminal. */
#ifndef CBLOB_TOOLS_TOOL_H
#define CBLOB_TOOLS_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cblob/cblob.h"
#include "io.h"

enum {
    TOOL_OK = 0,
    TOOL_FAILED = 1,    /* the input was fine but the work failed (for example, writing output) */
    TOOL_BAD_INPUT = 2, /* bad usage, or a missing, unreadable or corrupt input file */
};

/* ---- errors ------------------------------------------------------------------------------- */

/* The last failure of the program's own code, src/io's, or the library's passed on by
 * tool_library_error (tool_error.c). Functions of the program return a cblob_status and leave the
 * message here; commands print it once. */
const char *tool_error(void);
/* Takes the library's last message (without its "cblob_function: " prefix), naming subject unless
 * it names it already, as the program's last error; returns status. */
cblob_status tool_library_error(cblob_status status, const char *subject);

/* Prints "cblob <command>: <text>" on stderr and returns exit_status. */
int tool_fail(int exit_status, const char *command, const char *format, ...) __attribute__((format(printf, 3, 4)));
/* Prints the last error as tool_fail does. */
int tool_report(int exit_status, const char *command);
/* The exit status for an input that failed with status: memory is the machine's fault. */
int tool_input_exit(cblob_status status);

/* ---- progress ----------------------------------------------------------------------------- */

/* Progress on stderr, only when stderr is a terminal: "\r<command>: <done>/<total> <what>". */
void tool_progress(const char *command, int64_t done, int64_t total, const char *what);
void tool_progress_done(void);

/* ---- inputs ------------------------------------------------------------------------------- */

/* "-" stands for standard input or output wherever one file is read or written. */
bool tool_is_stdio(const char *path);
/* How messages name an input: the path, or "standard input". */
const char *tool_input_name(const char *path);
/* Reads a path by src/io's rules (its type checked before it is opened, so a FIFO or a device
 * fails at once; one snapshot), or standard input for "-". */
cblob_status tool_read(const char *path, cb_input *out);

/* What a file holds, from its first bytes. */
typedef enum tool_kind {
    TOOL_KIND_NET = CBLOB_PROTO_NET,
    TOOL_KIND_BLOB = CBLOB_PROTO_BLOB,
    TOOL_KIND_BLOB_VECTOR = CBLOB_PROTO_BLOB_VECTOR,
    TOOL_KIND_NPY,
    TOOL_KIND_NPZ,
    TOOL_KIND_SAFETENSORS,
} tool_kind;

/* Tells the kind of bytes named name. Bytes of none of these kinds fail with CBLOB_ERR_PARSE and
 * a message that says first what the file is (a text-format prototxt, an HDF5 file, not protobuf
 * at all, ...) and then the reader's detail. */
cblob_status tool_identify(const char *name, const uint8_t *bytes, size_t size, tool_kind *out);

/* ---- Caffe files -------------------------------------------------------------------------- */

/* A Caffe file of any kind, opened: a net as a model (no blob handles), a blob file's blobs. */
typedef struct tool_caffe {
    const char *name; /* for messages */
    tool_kind kind;
    cblob_model *model;
    int64_t num_blobs;
    cblob_blob **blobs;
} tool_caffe;

/* Opens a Caffe file (or "-"). A net read from a path is opened with cblob_model_open_file, which
 * lets go of the file's bytes as it reads them. */
cblob_status tool_caffe_open(cblob_context *context, const char *path, tool_caffe *out);
/* The same, but a net from a path is opened with cblob_model_open_file_lazy: its structure and
 * every blob's shape at once, a blob's values only when something reads them. */
cblob_status tool_caffe_open_structure(cblob_context *context, const char *path, tool_caffe *out);
/* Opens a net whose bytes tool_read gave (and tool_identify named a net): from a path with
 * cblob_model_open_file (input is closed first), from standard input with cblob_model_open. */
cblob_status tool_net_open(cblob_context *context, const char *path, cb_input *input, cblob_model **out);
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
