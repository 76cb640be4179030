/* SPDX-License-Identifier: BSD-2-Clause */
/* The progress of the call under way, told to its context's callback (cblob_context_set_progress),
 * which may ask the call to stop.
 *
 * A public call that reads or writes files begins a scope on its own stack for the calling thread
 * (cb_progress_begin) and ends it on every way out (cb_progress_end). What does the work reports
 * into the thread's scope of its kind, found with cb_progress_current: src/io's whole-file readers
 * and the model loader while reading, the sinks (src/formats/sink.c) while writing. Reads made
 * while writing (the values of a lazily opened model being saved) are not counted, and the other
 * way round; range reads of a lazily opened model are never counted. A call whose context has no
 * callback has no scope: reporting costs a thread-local load and a test.
 *
 * The first size given (cb_progress_size) is the total; a caller that knows better sets it first
 * (a .npy folder: every file's size). Once done passes it, total follows done. The callback is
 * called once the total is known (done 0), whenever done has grown by CB_PROGRESS_STEP since the
 * last call, at an interrupted system call (cb_progress_interrupted) and last by cb_progress_finish
 * with done == total. A non-zero answer is CBLOB_ERR_CANCELLED, with a message, and the scope
 * stays stopped: every later report fails the same way. */
#ifndef CBLOB_UTIL_PROGRESS_H
#define CBLOB_UTIL_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "cblob/cblob.h"

#define CB_PROGRESS_STEP ((int64_t)1 << 20)

typedef enum cb_progress_kind { CB_PROGRESS_READING, CB_PROGRESS_WRITING } cb_progress_kind;

typedef struct cb_progress {
    cblob_progress_fn fn;
    void *user_data;
    cb_progress_kind kind;
    int64_t done, total; /* total -1: not known yet */
    int64_t next;        /* the callback is due once done reaches this */
    bool started, stopped;
    bool finished; /* the last call was made (cb_progress_finish): later ones are not */
    struct cb_progress *outer; /* the thread's scope before this one */
} cb_progress;

/* Begins the calling thread's scope for a call of this kind; fn NULL reports nothing. */
void cb_progress_begin(cb_progress *progress, cb_progress_kind kind, cblob_progress_fn fn, void *user_data);
/* Ends the scope; returns status, so that `return cb_progress_end(&p, work(...));` reads well. */
cblob_status cb_progress_end(cb_progress *progress, cblob_status status);
/* The thread's scope when it is of this kind and has a callback, else NULL. */
cb_progress *cb_progress_current(cb_progress_kind kind);

/* The work's total, when it becomes known (-1: it cannot be known); the first one given counts.
 * Calls the callback the first time. progress may be NULL (nothing happens). */
cblob_status cb_progress_size(cb_progress *progress, int64_t total);
/* Sets the total whatever was given before (a .npy folder's reader, once it has listed it). */
void cb_progress_set_total(cb_progress *progress, int64_t total);
cblob_status cb_progress_report(cb_progress *progress);
/* bytes more are done. */
static inline cblob_status cb_progress_add(cb_progress *progress, uint64_t bytes)
{
    if (progress == NULL)
        return CBLOB_OK;
    progress->done += (int64_t)bytes;
    return progress->done >= progress->next || progress->stopped ? cb_progress_report(progress) : CBLOB_OK;
}
/* The last call: done == total. For a write, just before the output takes its place; for a read,
 * before the result is handed out. Made once: later calls return what the first did. */
cblob_status cb_progress_finish(cb_progress *progress);
/* A blocking system call of the thread's scope (of either kind) was interrupted by a signal
 * (EINTR): the callback is asked at once whether to go on. CBLOB_OK without a scope. */
cblob_status cb_progress_interrupted(void);

#endif /* CBLOB_UTIL_PROGRESS_H */
