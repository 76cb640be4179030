/* SPDX-License-Identifier: BSD-2-Clause */
/* The cblob program at a terminal (issue 30): run under a pseudo-terminal, as a user runs it, with
 * the screen rebuilt from what it wrote (carriage returns, line clears), so that these tests see
 * what the user sees: progress that never lands on a row of output, a table aligned for any name's
 * length, progress only where it belongs (--quiet, --progress, a pipe). And signals: SIGINT or
 * SIGTERM at the start of a conversion, as it reads, mid-write and at the moment before the output
 * takes its place (CBLOB_TOOL_TEST_SIGNAL, docs/development.md), for every kind of output, each
 * over an existing output and over none: exit 130 or 143, one line saying what was left as it was,
 * the old output byte for byte, no temporary. Then Ctrl-C typed at the terminal, mid-conversion
 * and while the program waits for standard input. */
#define _GNU_SOURCE /* posix_openpt, ptsname, setenv in the child */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli_support.h"
#include "harness.h"
#include "io_support.h"

/* ---- running the program under a pseudo-terminal ---------------------------------------------- */

typedef struct term_run {
    const char *const *args;     /* after "cblob" */
    const char *env;             /* "NAME=value" set in the child, or NULL */
    bool stdout_piped;           /* standard output to a pipe (standard error stays the terminal) */
    bool stderr_piped;           /* standard error to a pipe (standard output stays the terminal) */
    bool stdin_terminal;         /* standard input is the terminal (else /dev/null) */
    int columns;                 /* the terminal's width (0: 120) */
    /* When the terminal has shown `type_at`, and type_delay_ms later, the bytes `type` are typed at
     * it (Ctrl-C: "\x03"). */
    const char *type_at, *type;
    int type_delay_ms;
} term_run;

typedef struct term_result {
    int exit_status;  /* -1: it did not exit normally */
    int killed_by;    /* the signal that ended it, or 0 */
    char *screen;     /* what the terminal shows, line by line (after \r, \033[K) */
    char *raw;        /* every byte written to the terminal */
    char *piped;      /* what went to the pipe (stdout_piped or stderr_piped) */
    bool typed;       /* `type` was typed */
} term_result;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct buffer {
    char *bytes;
    size_t size, capacity;
} buffer;

static void buffer_add(buffer *b, const char *bytes, size_t size)
{
    if (b->size + size + 1 > b->capacity) {
        b->capacity = (b->size + size + 1) * 2;
        b->bytes = realloc(b->bytes, b->capacity);
    }
    memcpy(b->bytes + b->size, bytes, size);
    b->size += size;
    b->bytes[b->size] = '\0';
}

/* Reads what is there; false at end of file (a terminal whose other side closed says EIO). */
static bool drain(int fd, buffer *b)
{
    char chunk[65536];
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
        return true;
    if (n <= 0)
        return false;
    buffer_add(b, chunk, (size_t)n);
    return true;
}

/* The screen a terminal shows for these bytes: \r goes back to the line's start, ESC [ K clears to
 * its end, \n ends the line; other escape sequences are skipped. */
static char *screen_of(const char *raw)
{
    buffer screen = {0}, line = {0};
    size_t column = 0; /* in bytes of the line */
    buffer_add(&screen, "", 0);
    buffer_add(&line, "", 0);
    for (const char *p = raw; *p != '\0'; ++p) {
        if (*p == '\r') {
            column = 0;
        } else if (*p == '\n') {
            buffer_add(&screen, line.bytes, line.size);
            buffer_add(&screen, "\n", 1);
            line.size = 0;
            line.bytes[0] = '\0';
            column = 0;
        } else if (*p == '\033' && p[1] == '[') {
            const char *end = p + 2;
            while (*end != '\0' && !(*end >= '@' && *end <= '~'))
                ++end;
            if (*end == 'K' && column < line.size) {
                line.size = column;
                line.bytes[column] = '\0';
            }
            p = *end != '\0' ? end : end - 1;
        } else {
            if (column < line.size)
                line.bytes[column] = *p;
            else
                buffer_add(&line, p, 1);
            ++column;
        }
    }
    buffer_add(&screen, line.bytes, line.size);
    free(line.bytes);
    return screen.bytes;
}

static void start_child(const term_run *run, const char *slave_name, int pipe_end)
{
    setsid();
    const int slave = open(slave_name, O_RDWR); /* the session's controlling terminal */
    if (slave < 0)
        _exit(126);
    struct winsize size = {.ws_row = 40, .ws_col = (unsigned short)(run->columns > 0 ? run->columns : 120)};
    ioctl(slave, TIOCSWINSZ, &size);
    const int null = open("/dev/null", O_RDONLY);
    dup2(run->stdin_terminal ? slave : null, STDIN_FILENO);
    dup2(run->stdout_piped ? pipe_end : slave, STDOUT_FILENO);
    dup2(run->stderr_piped ? pipe_end : slave, STDERR_FILENO);
    if (run->env != NULL)
        putenv((char *)run->env);
    const char *argv[64] = {CBLOB_TOOL};
    for (int i = 0; run->args[i] != NULL && i < 62; ++i)
        argv[i + 1] = run->args[i];
    execv(CBLOB_TOOL, (char *const *)argv);
    _exit(127);
}

/* Runs the program; false when it could not be started or did not end within 120 s. */
static bool term_start(const term_run *run, term_result *out)
{
    *out = (term_result){.exit_status = -1};
    const int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    int pipes[2] = {-1, -1};
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || pipe2(pipes, O_CLOEXEC) != 0)
        return false;
    const char *slave_name = ptsname(master);
    fflush(NULL);
    const pid_t child = fork();
    if (child == 0) {
        close(master);
        start_child(run, slave_name, pipes[1]);
    }
    close(pipes[1]);
    buffer raw = {0}, piped = {0};
    buffer_add(&raw, "", 0);
    buffer_add(&piped, "", 0);
    bool terminal_open = true, pipe_open = true, finished = false;
    const double deadline = now() + 120;
    while ((terminal_open || pipe_open) && now() < deadline) {
        struct pollfd fds[2] = {{terminal_open ? master : -1, POLLIN, 0}, {pipe_open ? pipes[0] : -1, POLLIN, 0}};
        if (poll(fds, 2, 200) < 0 && errno != EINTR)
            break;
        if (terminal_open && fds[0].revents != 0)
            terminal_open = drain(master, &raw);
        if (pipe_open && fds[1].revents != 0)
            pipe_open = drain(pipes[0], &piped);
        if (run->type_at != NULL && !out->typed && strstr(raw.bytes, run->type_at) != NULL) {
            usleep((useconds_t)run->type_delay_ms * 1000);
            out->typed = write(master, run->type, strlen(run->type)) == (ssize_t)strlen(run->type);
        }
        /* The terminal stays open as long as the child holds it; its end is the child's. */
        int status = 0;
        if (waitpid(child, &status, WNOHANG) == child) {
            while (drain(master, &raw) && now() < deadline)
                continue;
            while (pipe_open && drain(pipes[0], &piped))
                continue;
            out->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            out->killed_by = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
            finished = true;
            break;
        }
    }
    /* Both ends closed: the child is ending, or ended. */
    while (!finished && now() < deadline) {
        int status = 0;
        if (waitpid(child, &status, WNOHANG) == child) {
            out->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            out->killed_by = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
            finished = true;
        } else {
            usleep(10000);
        }
    }
    if (!finished) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        fprintf(stderr, "cblob %s did not end in time; the terminal showed:\n%s\n", run->args[0], raw.bytes);
    }
    close(master);
    close(pipes[0]);
    out->raw = raw.bytes;
    out->piped = piped.bytes;
    out->screen = screen_of(raw.bytes);
    return finished;
}

static void term_result_free(term_result *r)
{
    free(r->raw);
    free(r->piped);
    free(r->screen);
    *r = (term_result){0};
}

/* The arguments after "cblob", as a term_run's args. */
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- inputs --------------------------------------------------------------------------------- */

/* A net of `layers` layers with bottoms and tops, hostile names (300-byte ones, escapes, repeated
 * names) or plain ones, and one more layer of `huge` bytes: its statistics and conversions take
 * several progress steps. */
static bool make_net(const char *path, int layers, int huge, bool hostile)
{
    char options[160];
    snprintf(options, sizeof options, "--structure --names %s --blobs 1 --layers %d --seed 3 --huge %d",
             hostile ? "hostile" : "plain", layers, huge);
    return cli_make_net(options, path);
}

/* Whether the folder holds a cblob temporary or staging folder, there or in a folder in it. */
static int temporaries_in(const char *folder)
{
    int count = io_count_temporaries(folder);
    DIR *dir = opendir(folder);
    const struct dirent *entry;
    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        struct stat info;
        char inner[1024];
        snprintf(inner, sizeof inner, "%s/%s", folder, entry->d_name);
        if (entry->d_name[0] != '.' && stat(inner, &info) == 0 && S_ISDIR(info.st_mode))
            count += io_count_temporaries(inner);
    }
    if (dir != NULL)
        closedir(dir);
    return count;
}

/* ---- progress and the screen ----------------------------------------------------------------- */

/* The byte of a line at a column (a character of UTF-8 is one column), or NULL past its end. */
static const char *at_column(const char *line, size_t length, size_t column)
{
    size_t seen = 0;
    for (size_t i = 0; i < length; ++i) {
        if (((unsigned char)line[i] & 0xc0) == 0x80)
            continue;
        if (seen++ == column)
            return line + i;
    }
    return NULL;
}

/* The table's lines (after its header), and where the blob column starts (from the header). */
static bool table_aligned(const char *screen, char *why, size_t why_size)
{
    const char *header = strstr(screen, "\n  layer ");
    if (header == NULL) {
        snprintf(why, why_size, "no table header");
        return false;
    }
    ++header;
    const char *blob = strstr(header, "  blob  shape");
    const char *end = strchr(header, '\n');
    if (blob == NULL || end == NULL || blob > end) {
        snprintf(why, why_size, "no blob column in the header");
        return false;
    }
    const size_t column = (size_t)(blob - header) + 2; /* where "blob" starts */
    int rows = 0;
    for (const char *line = end + 1; *line != '\0';) {
        const char *next = strchr(line, '\n');
        const size_t length = next != NULL ? (size_t)(next - line) : strlen(line);
        /* A row's blob cell is right-aligned in 4 columns ("   0", "   -"); a continuation line of a
         * wide cell ends before the column. A params line is the layer's own. */
        const bool params = length > 0 && memmem(line, length, "  params {", 10) != NULL;
        const char *cell = at_column(line, length, column);
        if (!params && cell != NULL) {
            const char *last = at_column(line, length, column + 3);
            if (!(last != NULL && cell[-1] == ' ' && cell[-2] == ' ' && (*last == '-' || (*last >= '0' && *last <= '9')))) {
                snprintf(why, why_size, "row %d is not aligned with the blob column (%zu): %.*s", rows, column,
                         (int)length, line);
                return false;
            }
        }
        ++rows;
        if (next == NULL)
            break;
        line = next + 1;
    }
    return rows > 0;
}

TEST(progress_never_lands_on_a_table_row_and_the_table_stays_aligned)
{
    char folder[512], why[1024];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = io_path(0, folder, "net.caffemodel");
    CHECK(make_net(net, 24, 8 << 20, true));
    term_result r;
    CHECK(term_start(&(term_run){.args = ARGS("inspect", "--params", net), .columns = 200}, &r));
    CHECK_MSG(r.exit_status == 0, "exit %d: %s", r.exit_status, r.screen);
    /* Progress was drawn (at a terminal, as it read and as it made the statistics) ... */
    CHECK_MSG(strstr(r.raw, "inspect: reading ") != NULL && strstr(r.raw, "inspect: statistics of ") != NULL,
              "no progress was drawn: %s", r.raw);
    /* ... and cleared before every line: none is left on the screen (before: "inspect: 1/25 ..."
     * stayed at the start of the first row). */
    CHECK_MSG(strstr(r.screen, "inspect:") == NULL, "progress left on the screen:\n%s", r.screen);
    CHECK_MSG(table_aligned(r.screen, why, sizeof why), "%s\n%s", why, r.screen);
    term_result_free(&r);
    /* JSON at a terminal: one object, no progress text inside it. */
    CHECK(term_start(&(term_run){.args = ARGS("inspect", "--json", net), .columns = 80}, &r));
    CHECK_MSG(r.exit_status == 0 && strstr(r.screen, "inspect:") == NULL && strstr(r.screen, "\"schema\": 2") != NULL,
              "exit %d:\n%s", r.exit_status, r.screen);
    term_result_free(&r);
    io_remove_tree(folder);
}

TEST(a_long_name_wraps_in_its_column)
{
    char folder[512], why[1024];
    CHECK(io_temp_folder(folder, sizeof folder));
    /* YuFaceDetectNet's split layers: long lists of tops. Off a terminal (a pipe) too. */
    const char *net = io_path(0, folder, "net.caffemodel");
    CHECK(make_net(net, 40, 0, true));
    cli_result r;
    CHECK(CLI(&r, "inspect", net));
    CHECK_MSG(r.status == 0 && r.err[0] == '\0', "exit %d: %s", r.status, r.err);
    CHECK_MSG(table_aligned(r.out, why, sizeof why), "%s\n%s", why, r.out);
    /* A 300-byte name is all there, over several lines of the layer column. */
    size_t longest = 0;
    for (const char *line = r.out; (line = strchr(line, '\n')) != NULL; ++line) {
        const char *next = strchr(line + 1, '\n');
        const size_t length = next != NULL ? (size_t)(next - line - 1) : strlen(line + 1);
        longest = length > longest ? length : longest;
    }
    CHECK_MSG(longest < 260, "a line of %zu columns: a cell overflowed its column", longest);
    cli_result_free(&r);
    io_remove_tree(folder);
}

TEST(progress_only_at_a_terminal_unless_asked)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = io_path(0, folder, "net.caffemodel"), *out = io_path(1, folder, "out.npz");
    CHECK(make_net(net, 4, 4 << 20, false));
    /* Standard error a pipe: no progress; --progress: lines on it. */
    cli_result plain;
    CHECK(CLI(&plain, "convert", net, "-o", out));
    CHECK_MSG(plain.status == 0 && plain.err[0] == '\0', "exit %d: %s", plain.status, plain.err);
    CHECK(strstr(plain.out, "wrote ") != NULL);
    cli_result_free(&plain);
    term_result r;
    CHECK(term_start(&(term_run){.args = ARGS("convert", "--progress", net, "-o", out, "--force"), .stderr_piped = true}, &r));
    CHECK_MSG(r.exit_status == 0 && strstr(r.piped, "convert: reading ") != NULL &&
                  strstr(r.piped, "convert: writing ") != NULL && strchr(r.piped, '\r') == NULL &&
                  strchr(r.piped, '\033') == NULL,
              "exit %d: %s", r.exit_status, r.piped);
    term_result_free(&r);
    /* At a terminal: progress; with --quiet neither progress nor the line saying what was written. */
    CHECK(term_start(&(term_run){.args = ARGS("convert", net, "-o", out), .stdout_piped = true}, &r));
    CHECK_MSG(r.exit_status == 0 && strstr(r.raw, "convert: writing ") != NULL && strstr(r.piped, "wrote ") != NULL,
              "exit %d: %s", r.exit_status, r.raw);
    term_result_free(&r);
    CHECK(term_start(&(term_run){.args = ARGS("convert", "--quiet", net, "-o", out)}, &r));
    CHECK_MSG(r.exit_status == 0 && r.raw[0] == '\0', "exit %d: %s", r.exit_status, r.raw);
    term_result_free(&r);
    cli_result both;
    CHECK(CLI(&both, "inspect", "--quiet", "--progress", net));
    CHECK(both.status == 2 && CLI_ERROR_HAS(&both, "--quiet", "--progress"));
    cli_result_free(&both);
    io_remove_tree(folder);
}

/* ---- signals ------------------------------------------------------------------------------------ */

/* A conversion of the net, and what its output is. */
typedef struct conversion {
    const char *name, *output;
    bool folder;
    const char *extra[4]; /* more arguments */
} conversion;

static const conversion conversions[] = {
    {"npz", "out.npz", false, {NULL}},
    {"safetensors", "out.safetensors", false, {"--names", "torch", NULL}},
    {"caffemodel", "out.caffemodel", false, {"--like", "@net", NULL}},
    {"npy folder", "npy", true, {"--to", "npy", NULL}},
    {"binaryproto", "out.binaryproto", false, {"@npy", NULL}}, /* from a .npy file */
    {"one .npy", "one.npy", false, {"@blob", NULL}},           /* from a .binaryproto */
};

typedef struct point {
    const char *hook;  /* CBLOB_TOOL_TEST_SIGNAL */
    int exit_status;
} point;

/* Early (as the input is read), at the write's start, mid-write, and at the last progress call
 * just before the output takes its place. */
static const point points[] = {
    {"CBLOB_TOOL_TEST_SIGNAL=INT:read:0", 130},
    {"CBLOB_TOOL_TEST_SIGNAL=INT:write:0", 130},
    {"CBLOB_TOOL_TEST_SIGNAL=TERM:write:50", 143},
    {"CBLOB_TOOL_TEST_SIGNAL=INT:write:100", 130},
};

/* Everything a folder holds (names and bytes), to compare before and after. */
static char *folder_image(const char *path)
{
    struct dirent **entries = NULL;
    const int count = scandir(path, &entries, NULL, alphasort);
    buffer image = {0};
    buffer_add(&image, "", 0);
    for (int i = 0; i < count; ++i) {
        char file[1024];
        snprintf(file, sizeof file, "%s/%s", path, entries[i]->d_name);
        buffer_add(&image, entries[i]->d_name, strlen(entries[i]->d_name));
        buffer_add(&image, "|", 1);
        FILE *in = fopen(file, "rb");
        char chunk[65536];
        size_t n;
        struct stat info;
        while (in != NULL && stat(file, &info) == 0 && S_ISREG(info.st_mode) && (n = fread(chunk, 1, sizeof chunk, in)) > 0)
            buffer_add(&image, chunk, n);
        if (in != NULL)
            fclose(in);
        buffer_add(&image, "\n", 1);
        free(entries[i]);
    }
    free(entries);
    return image.bytes;
}

/* The conversion's arguments: "convert IN -o OUT extra...", with @net, @npy, @blob replaced (and
 * --force, so that an existing output of the same format but other bytes may be replaced). */
static void conversion_args(const conversion *c, const char *const inputs[3], const char *out, const char *args[12])
{
    int n = 0;
    args[n++] = "convert";
    const char *input = inputs[0];
    int e = 0;
    if (c->extra[0] != NULL && c->extra[0][0] == '@') {
        input = strcmp(c->extra[0], "@npy") == 0 ? inputs[1] : inputs[2];
        e = 1;
    }
    args[n++] = input;
    args[n++] = "-o";
    args[n++] = out;
    for (; c->extra[e] != NULL; ++e)
        args[n++] = strcmp(c->extra[e], "@net") == 0 ? inputs[0] : c->extra[e];
    args[n++] = "--force";
    args[n] = NULL;
}

/* Runs `cblob args...` with env, standard output a pipe (a terminal's signals are tested apart). */
static bool run_with(const char *env, const char *const *args, term_result *r)
{
    return term_start(&(term_run){.args = args, .env = env, .stdout_piped = true}, r);
}

TEST(a_signal_at_any_point_of_any_conversion_leaves_every_output_as_it_was)
{
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = io_path(0, folder, "net.caffemodel");
    CHECK(make_net(net, 6, 4 << 20, false));
    /* The other inputs: the huge layer's blob as a .npy file and as a .binaryproto. */
    const char *npy = io_path(1, folder, "huge.npy"), *blob = io_path(2, folder, "huge.binaryproto");
    cli_result made;
    CHECK(CLI(&made, "convert", net, "-o", io_path(3, folder, "all"), "--to", "npy"));
    CHECK(made.status == 0);
    cli_result_free(&made);
    CHECK(rename(io_path(3, folder, "all/huge_0.npy"), npy) == 0);
    CHECK(CLI(&made, "convert", npy, "-o", blob));
    CHECK(made.status == 0);
    cli_result_free(&made);
    const char *inputs[3] = {net, npy, blob};
    const char *work = io_path(4, folder, "work");
    CHECK(mkdir(work, 0755) == 0);
    for (size_t c = 0; c < sizeof conversions / sizeof conversions[0]; ++c) {
        char out[1024];
        snprintf(out, sizeof out, "%s/%s", work, conversions[c].output);
        const char *args[12];
        conversion_args(&conversions[c], inputs, out, args);
        for (size_t p = 0; p < sizeof points / sizeof points[0]; ++p) {
            for (int existing = 0; existing < 2; ++existing) {
                io_remove_tree(out);
                if (existing && conversions[c].folder) {
                    /* An earlier conversion (of another net) and a file of the user's. */
                    CHECK(CLI(&made, "convert", blob, "-o", out, "--to", "npy"));
                    CHECK(made.status == 0);
                    cli_result_free(&made);
                    CHECK(io_write_file(io_path(5, out, "notes.txt"), "mine", 4));
                } else if (existing) {
                    /* An earlier output of the same format (replacing it needs no --force). */
                    CHECK(CLI(&made, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]));
                    CHECK_MSG(made.status == 0, "%s: %s", conversions[c].name, made.err);
                    cli_result_free(&made);
                    FILE *f = fopen(out, "r+b");
                    CHECK(f != NULL && fseek(f, -1, SEEK_END) == 0 && fputc('!', f) == '!' && fclose(f) == 0);
                }
                char *before = existing ? (conversions[c].folder ? folder_image(out) : folder_image(work)) : NULL;
                term_result r;
                CHECK(run_with(points[p].hook, args, &r));
                CHECK_MSG(r.exit_status == points[p].exit_status && r.killed_by == 0,
                          "%s, %s, %s output: exit %d (signal %d): %s", conversions[c].name, points[p].hook,
                          existing ? "an existing" : "no", r.exit_status, r.killed_by, r.screen);
                /* One line, saying what was left as it was. */
                const char *line = strstr(r.screen, "cblob convert: interrupted by SIG");
                CHECK_MSG(line != NULL && strchr(r.screen, '\n') == strrchr(r.screen, '\n') &&
                              strstr(line, existing ? "was left as it was" : "was not made") != NULL,
                          "%s, %s: %s", conversions[c].name, points[p].hook, r.screen);
                CHECK_MSG(r.piped[0] == '\0', "%s: standard output says %s", conversions[c].name, r.piped);
                struct stat info;
                if (!existing) {
                    CHECK_MSG(lstat(out, &info) != 0 && errno == ENOENT, "%s, %s: %s was made", conversions[c].name,
                              points[p].hook, out);
                } else {
                    char *after = conversions[c].folder ? folder_image(out) : folder_image(work);
                    CHECK_MSG(strcmp(before, after) == 0 || (strlen(before) == strlen(after) &&
                                                             memcmp(before, after, strlen(before)) == 0),
                              "%s, %s: the existing output changed", conversions[c].name, points[p].hook);
                    free(after);
                }
                CHECK_MSG(temporaries_in(work) == 0, "%s, %s: a temporary was left", conversions[c].name,
                          points[p].hook);
                free(before);
                term_result_free(&r);
            }
        }
    }
    io_remove_tree(folder);
}

TEST(ctrl_c_at_the_terminal_mid_conversion)
{
    /* Typed at the terminal, Ctrl-C reaches the program as its line discipline sends it: once the
     * terminal shows that the output is being written. */
    char folder[512];
    CHECK(io_temp_folder(folder, sizeof folder));
    const char *net = io_path(0, folder, "net.caffemodel"), *out = io_path(1, folder, "out.npz");
    CHECK(make_net(net, 2, 64 << 20, false));
    CHECK(io_write_file(out, "old bytes", 9));
    term_result r;
    CHECK(term_start(&(term_run){.args = ARGS("convert", net, "-o", out, "--force"), .type_at = "convert: writing ", .type = "\x03"}, &r));
    CHECK(r.typed);
    /* A 64 MiB write is under way when the progress shows it; on a machine fast enough to finish it
     * first, the output is whole and the program says the signal came after. */
    CHECK_MSG(r.exit_status == 130 && r.killed_by == 0, "exit %d (signal %d): %s", r.exit_status, r.killed_by, r.screen);
    if (strstr(r.screen, "after ") != NULL) {
        CHECK(strstr(r.screen, "written whole") != NULL);
    } else {
        CHECK_MSG(strstr(r.screen, "was left as it was") != NULL, "%s", r.screen);
        CHECK(io_file_holds(out, "old bytes", 9));
    }
    CHECK_EQ_INT(io_count_temporaries(folder), 0);
    term_result_free(&r);
    io_remove_tree(folder);
}

TEST(ctrl_c_stops_a_program_waiting_for_standard_input)
{
    /* `cblob inspect -` typed at a terminal waits for a file on standard input; Ctrl-C stops it
     * with the program's own line and status (before: no handler, killed by the signal). */
    term_result r;
    CHECK(term_start(&(term_run){.args = ARGS("inspect", "-"), .stdin_terminal = true,
                                .type_at = "inspect: reading standard input", .type = "\x03", .type_delay_ms = 300},
                     &r));
    CHECK_MSG(r.exit_status == 130 && r.killed_by == 0, "exit %d (signal %d): %s", r.exit_status, r.killed_by,
              r.screen);
    CHECK_MSG(strstr(r.screen, "cblob inspect: interrupted by SIGINT") != NULL, "%s", r.screen);
    term_result_free(&r);
}
