/* SPDX-License-Identifier: BSD-2-Clause */
/* Where the model writers stream their bytes: a counter (to learn the size first), a caller's
 * buffer, or a file written by src/io's rules (io.h).
 *
 * Writers emit once and never build the output in memory. The sink records the first failure and
 * ignores writes after it, so writers check its status once at the end. Positions can be moved
 * back (the zip writer, zip.c, rewrites a member's local header once its CRC is known), except in
 * a sink that is forward_only: a file written in place (a FIFO, a device), which cannot go back.
 *
 * A file sink tells the bytes it appends to the call's progress (src/util/progress.h), in pieces
 * of at most CB_PROGRESS_STEP: a stop asked there is the sink's failure (CBLOB_ERR_CANCELLED), and
 * the file is then aborted as after any failure. Writers say the output's size when they know it
 * (cb_sink_expect) before they write.
 */
#ifndef CBLOB_SRC_SINK_H
#define CBLOB_SRC_SINK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "cblob/cblob.h"
#include "io.h"
#include "progress.h"

typedef enum cb_sink_kind { CB_SINK_COUNT, CB_SINK_BUFFER, CB_SINK_FILE, CB_SINK_CALLBACK } cb_sink_kind;

/* A caller's function given the output in pieces (cb_sink_callback); 0: go on. */
typedef int32_t cb_sink_callback_fn(void *user_data, const char *text, size_t size);

typedef struct cb_sink {
    ProtobufCBuffer base; /* protobuf-c packs messages straight into the sink */
    cb_sink_kind kind;
    cblob_status status;  /* the first failure (its message is the thread's); CBLOB_OK so far */
    uint64_t position;    /* where the next byte goes */
    uint64_t size;        /* the output's size so far: the highest position written */
    bool forward_only;    /* cb_sink_seek may not go back: a FIFO or a device (io.h) */
    bool crc_on;          /* the CRC-32 of what is written is kept in crc (a zip member's) */
    uint32_t crc;
    /* CB_SINK_BUFFER */
    uint8_t *buffer;
    size_t capacity;
    /* CB_SINK_FILE: an output of src/io (its rules: symbolic links, modes, atomic replacement).
     * Appends gather in `pending`; a full buffer goes to the writer, a lane (src/threads), which
     * writes it while the other one fills, so that what the producer computes (a zip member's
     * CRC-32, say) overlaps with write(2). */
    cb_output *output;
    uint8_t *pending, *spare;
    size_t pending_used;
    struct cb_lane *writer; /* NULL: appends are written on the producer's thread */
    cb_progress *progress; /* the call's, for a file sink; NULL: none */
    /* CB_SINK_CALLBACK: pieces gather in `gathered` (a small buffer of its own), so the caller's
     * function is called once per CB_SINK_GATHERED bytes, not once per token. */
    cb_sink_callback_fn *callback;
    void *callback_data;
    char *gathered;
    size_t gathered_used;
} cb_sink;

void cb_sink_count(cb_sink *sink);
void cb_sink_buffer(cb_sink *sink, uint8_t *buffer, size_t capacity);
cblob_status cb_sink_file_open(cb_sink *sink, const char *path);
/* A file sink over an output opened already (a file of an output folder): the sink takes it over,
 * and commits or aborts it as cb_sink_file_open's. Small files: no writer thread. */
void cb_sink_output(cb_sink *sink, cb_output *output);
/* A sink that hands what it is given to a caller's function, in pieces of up to 64 KiB; the
 * function's non-zero return is the sink's failure (CBLOB_ERR_CANCELLED). cb_sink_callback_end
 * hands over what is left (when nothing failed) and frees the sink's buffer; it returns the
 * sink's status. */
void cb_sink_callback(cb_sink *sink, cb_sink_callback_fn *callback, void *user_data);
cblob_status cb_sink_callback_end(cb_sink *sink);
/* Puts the file in place (cb_output_commit); on any failure (the sink's own included) the path is
 * left as it was. */
cblob_status cb_sink_file_commit(cb_sink *sink);
void cb_sink_file_abort(cb_sink *sink);

/* Every byte any writer produces goes through here. */
void cb_sink_write(cb_sink *sink, const void *data, size_t size);
/* Counts `size` bytes a counting sink would be given, without them. */
void cb_sink_skip(cb_sink *sink, uint64_t size);
/* From now on (on) or no longer, keeps the CRC-32 of what is written, from 0. */
void cb_sink_crc(cb_sink *sink, bool on);
/* The output's size, when the writer knows it before writing (the call's progress total). */
void cb_sink_expect(cb_sink *sink, uint64_t size);
void cb_sink_seek(cb_sink *sink, uint64_t position);
/* Records a failure the writer found (the thread's message is already set). */
void cb_sink_fail(cb_sink *sink, cblob_status status);

/* A writer: emits everything to the sink (and returns the first failure it found itself). */
typedef cblob_status cb_emit_fn(const void *what, cb_sink *sink);

/* The two-call convention over a writer: buffer NULL and buffer_size 0 write only the size (the
 * writer runs into a counter); a buffer too small is CBLOB_ERR_OUT_OF_RANGE; otherwise the bytes. */
cblob_status cb_emit_to_buffer(cb_emit_fn *emit, const void *what, const char *name, uint8_t *buffer,
                               size_t buffer_size, size_t *out_size);
/* A writer's output written to a file, atomically (see cb_sink_file_commit), telling its progress to
 * the context's callback (NULL: none), which is asked a last time before the file takes its place. */
cblob_status cb_emit_to_file(const cblob_context *context, cb_emit_fn *emit, const void *what, const char *path);

#endif
