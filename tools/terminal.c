/* SPDX-License-Identifier: BSD-2-Clause */
#include "terminal.h"

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "text.h"

/* ---- signals ------------------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted_by;

static void on_signal(int signal)
{
    interrupted_by = signal;
}

void tool_signals_install(void)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; ++i) {
        struct sigaction old;
        /* A signal ignored when the program started (nohup, a shell's background job) stays so. */
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        struct sigaction action = {.sa_handler = on_signal, .sa_flags = SA_RESETHAND};
        sigemptyset(&action.sa_mask);
        sigaction(signals[i], &action, NULL);
    }
}

int tool_interrupted(void)
{
    return interrupted_by;
}

static const char *signal_name(int signal)
{
    switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

int tool_interrupt_exit(const char *command, const char *format, ...)
{
    tool_progress_clear();
    const int signal = tool_interrupted();
    fprintf(stderr, "cblob %s: interrupted by %s: ", command, signal_name(signal));
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    return 128 + signal;
}

/* ---- progress -------------------------------------------------------------------------------- */

static struct {
    const char *command;
    bool enabled, terminal; /* shown at all; on a terminal (one line redrawn) or as lines */
    bool shown;             /* a line is on the terminal */
    bool stdout_midline;    /* standard output, the same terminal, is in the middle of a line */
    tool_phase_kind kind;
    const char *what, *name;
    bool fresh;             /* the phase has shown nothing yet */
    int64_t done, total;
    double last_draw;
    /* A test hook (docs/development.md): raise a signal at a library progress call. */
    int test_signal, test_percent;
    tool_phase_kind test_kind;
} progress;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* CBLOB_TOOL_TEST_SIGNAL=<INT|TERM|HUP>:<read|write|work>:<percent>: the program raises the signal
 * at the first library progress call of a read or write phase (or, for work, the first piece of
 * the program's own work, inspect's statistics) with done >= percent of total (100: the last call,
 * just before a write's output takes its place). Tests use it to stop a command at a chosen
 * point; the signal, its handler and the library's stop are the real ones. */
static void read_test_hook(void)
{
    const char *hook = getenv("CBLOB_TOOL_TEST_SIGNAL");
    char signal[8], kind[8];
    int percent = 0;
    if (hook == NULL || sscanf(hook, "%7[A-Z]:%7[a-z]:%d", signal, kind, &percent) != 3)
        return;
    progress.test_signal = strcmp(signal, "INT") == 0    ? SIGINT
                           : strcmp(signal, "TERM") == 0 ? SIGTERM
                           : strcmp(signal, "HUP") == 0  ? SIGHUP
                                                         : 0;
    progress.test_kind = strcmp(kind, "read") == 0    ? TOOL_PHASE_READ
                         : strcmp(kind, "work") == 0 ? TOOL_PHASE_WORK
                                                     : TOOL_PHASE_WRITE;
    progress.test_percent = percent;
}

void tool_progress_setup(const char *command, tool_progress_mode mode)
{
    progress.command = command;
    progress.terminal = isatty(STDERR_FILENO);
    progress.enabled = mode == TOOL_PROGRESS_ALWAYS || (mode == TOOL_PROGRESS_AUTO && progress.terminal);
    read_test_hook();
}

void tool_progress_phase(tool_phase_kind kind, const char *what, const char *name)
{
    progress.kind = kind;
    progress.what = what;
    progress.name = name;
    progress.fresh = true;
    progress.done = 0;
    progress.total = -1;
}

/* "12.3 MiB", "512 B". */
static void size_text(int64_t bytes, char *out, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    size_t unit = 0;
    while (value >= 1024 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024;
        ++unit;
    }
    snprintf(out, size, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
}

static int terminal_columns(void)
{
    struct winsize size;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= 20)
        return size.ws_col;
    return 80;
}

/* "<command>: <what> <name> 45% (12.3 MiB of 27.0 MiB)", at most columns - 1 wide: the name is cut
 * (ending in "...") rather than let the line wrap, which the next redraw could not clear. */
static void draw(void)
{
    char amount[96], done[32], total[32];
    size_text(progress.done, done, sizeof done);
    if (progress.total >= 0) {
        size_text(progress.total, total, sizeof total);
        const int percent = progress.total > 0 ? (int)(progress.done * 100 / progress.total) : 100;
        snprintf(amount, sizeof amount, " %d%% (%s of %s)", percent, done, total);
    } else {
        snprintf(amount, sizeof amount, " %s", done);
    }
    char head[64];
    snprintf(head, sizeof head, "%s: %s", progress.command, progress.what);
    const int room = (progress.terminal ? terminal_columns() - 1 : 1000) - (int)strlen(head) - (int)strlen(amount) - 1;
    char name[1024] = "";
    if (progress.name != NULL && room > 3)
        tool_escape_into(progress.name, room, name, sizeof name);
    fprintf(stderr, "%s%s%s%s%s", progress.terminal ? "\r\033[K" : "", head, name[0] != '\0' ? " " : "", name, amount);
    if (!progress.terminal)
        fputc('\n', stderr);
    fflush(stderr);
    progress.shown = progress.terminal;
}

static void maybe_draw(void)
{
    if (!progress.enabled || progress.what == NULL || progress.stdout_midline)
        return;
    const double now = now_ms();
    /* A log (--progress without a terminal) gets a line a second at most. */
    const double interval = progress.terminal ? PROGRESS_INTERVAL_MS : 1000;
    if (!progress.fresh && now - progress.last_draw < interval)
        return;
    progress.fresh = false;
    progress.last_draw = now;
    draw();
}

void tool_progress_update(int64_t done, int64_t total)
{
    progress.done = done;
    progress.total = total;
    maybe_draw();
}

void tool_progress_total(int64_t total)
{
    progress.total = total;
}

/* The test hook: raises its signal once the phase it names is done >= its percent of total. */
static void test_hook(int64_t done, int64_t total)
{
    if (progress.test_signal != 0 && progress.kind == progress.test_kind && total >= 0 &&
        done * 100 >= (int64_t)progress.test_percent * total) {
        const int signal = progress.test_signal;
        progress.test_signal = 0;
        raise(signal); /* the handler runs before raise returns */
    }
}

void tool_progress_add(int64_t bytes)
{
    progress.done += bytes;
    maybe_draw();
    test_hook(progress.done, progress.total);
}

void tool_progress_clear(void)
{
    if (progress.shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        progress.shown = false;
    }
}

/* Whether standard output and standard error are the same terminal. */
static bool same_terminal(void)
{
    struct stat out, err;
    return isatty(STDOUT_FILENO) && isatty(STDERR_FILENO) && fstat(STDOUT_FILENO, &out) == 0 &&
           fstat(STDERR_FILENO, &err) == 0 && out.st_rdev == err.st_rdev;
}

void tool_stdout_written(bool ends_line)
{
    progress.stdout_midline = !ends_line && progress.enabled && progress.terminal && same_terminal();
}

int32_t tool_library_progress(void *user_data, int64_t done, int64_t total)
{
    (void)user_data;
    tool_progress_update(done, total);
    test_hook(done, total);
    return tool_interrupted() != 0;
}
