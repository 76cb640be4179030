/* SPDX-License-Identifier: BSD-2-Clause */
/* wait4: the child's own peak memory, which RUSAGE_CHILDREN would mix with earlier children's. */
#define _DEFAULT_SOURCE
#include "cli_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support.h"

/* ---- running the program ---------------------------------------------------------------------- */

typedef struct capture {
    int fd;
    char *bytes;
    size_t size, capacity;
} capture;

/* Reads what is there; false at end of file. */
static bool capture_some(capture *c)
{
    if (c->size + 65536 + 1 > c->capacity) {
        const size_t next = (c->capacity + 65536) * 2;
        char *grown = realloc(c->bytes, next);
        if (grown == NULL)
            return false;
        c->bytes = grown;
        c->capacity = next;
    }
    const ssize_t n = read(c->fd, c->bytes + c->size, 65536);
    if (n < 0 && errno == EINTR)
        return true;
    if (n <= 0)
        return false;
    c->size += (size_t)n;
    return true;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void start_child(const char *const *args, const char *stdin_path, int in[2], int out[2], int err[2])
{
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    if (stdin_path != NULL) {
        const int fd = open(stdin_path, O_RDONLY);
        if (fd < 0)
            _exit(126);
        dup2(fd, STDIN_FILENO);
    } else {
        dup2(in[0], STDIN_FILENO);
    }
    const char *argv[64] = {CBLOB_TOOL};
    for (int i = 0; args[i] != NULL && i < 62; ++i)
        argv[i + 1] = args[i];
    execv(CBLOB_TOOL, (char *const *)argv);
    _exit(127);
}

/* Collects both outputs until they end or the deadline passes (then kills the child). */
static bool collect(pid_t child, capture *out, capture *err, int timeout)
{
    const double deadline = now() + timeout;
    bool out_open = true, err_open = true;
    while (out_open || err_open) {
        const double left = deadline - now();
        if (left <= 0) {
            kill(child, SIGKILL);
            return false;
        }
        struct pollfd fds[2] = {{out_open ? out->fd : -1, POLLIN, 0}, {err_open ? err->fd : -1, POLLIN, 0}};
        if (poll(fds, 2, (int)(left * 1000) + 1) < 0 && errno != EINTR)
            return false;
        if (out_open && fds[0].revents != 0)
            out_open = capture_some(out);
        if (err_open && fds[1].revents != 0)
            err_open = capture_some(err);
    }
    return true;
}

bool cli_run(cli_result *result, const char *stdin_path, int timeout, const char *const *args)
{
    *result = (cli_result){0};
    int in[2], out[2], err[2];
    if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0)
        return false;
    fflush(NULL);
    const pid_t child = fork();
    if (child == 0)
        start_child(args, stdin_path, in, out, err);
    close(in[0]);
    close(in[1]); /* the child reads end of file at once */
    close(out[1]);
    close(err[1]);
    capture o = {.fd = out[0]}, e = {.fd = err[0]};
    const bool finished = child > 0 && collect(child, &o, &e, timeout);
    int status = 0;
    struct rusage usage = {0};
    if (child > 0)
        wait4(child, &status, 0, &usage);
    result->peak_kib = usage.ru_maxrss;
    result->user_seconds = (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec * 1e-6;
    close(out[0]);
    close(err[0]);
    result->status = !finished ? CLI_TIMED_OUT : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result->out = o.bytes != NULL ? o.bytes : calloc(1, 1);
    result->err = e.bytes != NULL ? e.bytes : calloc(1, 1);
    result->out[o.size] = '\0';
    result->err[e.size] = '\0';
    result->out_size = o.size;
    result->err_size = e.size;
    if (!finished)
        fprintf(stderr, "cblob %s ... did not finish in %d s (stderr so far: %s)\n", args[0], timeout, result->err);
    return child > 0;
}

void cli_result_free(cli_result *result)
{
    free(result->out);
    free(result->err);
    *result = (cli_result){0};
}

bool cli_one_line_with(const cli_result *result, const char *const *parts)
{
    const char *newline = strchr(result->err, '\n');
    bool ok = newline != NULL && newline[1] == '\0';
    for (int i = 0; ok && parts[i] != NULL; ++i)
        ok = strstr(result->err, parts[i]) != NULL;
    if (!ok)
        fprintf(stderr, "stderr was: %s", result->err);
    return ok;
}

/* ---- inputs ---------------------------------------------------------------------------------- */

bool cli_write_named_net(const char *path, const char *const *names, int count)
{
    cblob_context *context = NULL;
    cblob_model *model = NULL;
    bool ok = cblob_context_create(&context) == CBLOB_OK &&
              cblob_model_create(context, CBLOB_NET_FORMAT_V2, "named", &model) == CBLOB_OK;
    for (int i = 0; ok && i < count; ++i) {
        cblob_blob *blob = ft_blob(context, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){3}, i, false);
        ok = blob != NULL && cblob_model_add_layer(model, names[i], "InnerProduct", &blob, 1) == CBLOB_OK;
        cblob_blob_destroy(blob);
    }
    ok = ok && cblob_model_to_proto_file(model, 0, path) == CBLOB_OK;
    cblob_model_destroy(model);
    cblob_context_destroy(context);
    return ok;
}

bool cli_make_net(const char *options, const char *path)
{
    char command[4096];
    snprintf(command, sizeof command, "'%s' '%s/tests/tools/make_net.py' %s '%s'", CBLOB_PYTHON, CBLOB_SOURCE_DIR,
             options, path);
    return system(command) == 0;
}

bool cli_write_npy(const char *path, const char *descr, const char *shape, const void *values, size_t size)
{
    char header[256];
    int length = snprintf(header + 10, sizeof header - 10, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                          descr, shape);
    while ((10 + length + 1) % 64 != 0)
        header[10 + length++] = ' ';
    header[10 + length++] = '\n';
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = (char)(length & 0xff);
    header[9] = (char)(length >> 8);
    uint8_t *bytes = malloc((size_t)length + 10 + size + 1);
    if (bytes == NULL)
        return false;
    memcpy(bytes, header, (size_t)length + 10);
    if (size > 0)
        memcpy(bytes + length + 10, values, size);
    const bool ok = ft_write_file(path, bytes, (size_t)length + 10 + size);
    free(bytes);
    return ok;
}

int cli_count_suffix(const char *folder, const char *suffix)
{
    DIR *dir = opendir(folder);
    if (dir == NULL)
        return -1;
    int count = 0;
    const struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        const size_t length = strlen(entry->d_name), want = strlen(suffix);
        count += length >= want && strcmp(entry->d_name + length - want, suffix) == 0;
    }
    closedir(dir);
    return count;
}
