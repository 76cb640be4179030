/* SPDX-License-Identifier: BSD-2-Clause */
/* The cblob program at a terminal: progress on standard error that never mixes with what is
 * printed, and signals (Ctrl-C, SIGTERM, a closed terminal) that stop the work cleanly.
 *
 * Progress is one line on standard error, shown only when standard error is a terminal (or with
 * --progress; never with --quiet), redrawn at most every PROGRESS_INTERVAL_MS and cleared before
 * anything else is printed (tool_progress_clear, which every output path calls first). It counts
 * bytes: the library's reads and writes through its progress callback (cblob_context_set_progress),
 * and the program's own work (inspect's statistics) through tool_progress_add.
 *
 * SIGINT, SIGTERM and SIGHUP set a flag and nothing else: the library's callback answers stop at
 * its next call, so the call fails with CBLOB_ERR_CANCELLED having changed nothing, and the
 * program's own loops check tool_interrupted. The program then says in one line what was left as
 * it was and exits 128 + the signal's number (130, 143, 129). A second signal of the same kind ends
 * the program at once (the handler is reset on the first), as a user pressing Ctrl-C twice wants;
 * the temporary such an end leaves is removed by the next write into that folder. Handlers are
 * installed without SA_RESTART, so that a blocked read (standard input at a terminal) returns and
 * the library asks the callback. */
#ifndef CBLOB_TOOLS_TERMINAL_H
#define CBLOB_TOOLS_TERMINAL_H

#include <stdbool.h>
#include <stdint.h>

/* ---- signals ------------------------------------------------------------------------------- */

void tool_signals_install(void);
/* The signal that asked the program to stop, or 0. */
int tool_interrupted(void);
/* Says "cblob <command>: interrupted by SIG...: <what>" (what: what was left as it was) and returns
 * the exit status, 128 + the signal's number. */
int tool_interrupt_exit(const char *command, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* ---- progress -------------------------------------------------------------------------------- */

typedef enum tool_progress_mode {
    TOOL_PROGRESS_AUTO,   /* when standard error is a terminal */
    TOOL_PROGRESS_NEVER,  /* --quiet */
    TOOL_PROGRESS_ALWAYS, /* --progress: lines on standard error even when it is not a terminal */
} tool_progress_mode;

typedef enum tool_phase_kind { TOOL_PHASE_READ, TOOL_PHASE_WRITE, TOOL_PHASE_WORK } tool_phase_kind;

#define PROGRESS_INTERVAL_MS 100

void tool_progress_setup(const char *command, tool_progress_mode mode);
/* A new phase: what is being done ("reading", "writing", "statistics") and of what (a file's name,
 * escaped when shown; may be NULL). Its first update is shown at once. */
void tool_progress_phase(tool_phase_kind kind, const char *what, const char *name);
/* The phase's progress: done of total bytes (total -1: not known). */
void tool_progress_update(int64_t done, int64_t total);
/* Adds bytes to the phase's done, of the total given by tool_progress_total. */
void tool_progress_total(int64_t total);
void tool_progress_add(int64_t bytes);
/* Clears the progress line, if one is shown: before anything else is printed. */
void tool_progress_clear(void);
/* Standard output was written, ending a line or not. While a line of it is unfinished on the
 * terminal standard error is too, no progress is drawn: its redraw would go back over that line. */
void tool_stdout_written(bool ends_line);

/* The library's progress callback (cblob_context_set_progress): shows the phase's progress, and
 * answers stop once a signal came. */
int32_t tool_library_progress(void *user_data, int64_t done, int64_t total);

#endif
