/* SPDX-License-Identifier: BSD-2-Clause */
/* Benchmark of the Caffe formats (not a test): save and load throughput of a large generated
 * .caffemodel against memcpy of the same bytes, measured in the same run, and the peak resident
 * memory of loading it against its size, measured in a fresh child process (getrusage).
 *
 * usage: bench_formats [SIZE_MIB] [--folder DIR]
 *   SIZE_MIB  values in the model, in MiB (default 1024); pass a small size for a quick run
 *   DIR       where the model files are written (default $TMPDIR or /tmp); they are removed
 *
 * Targets (issue 3): load at least 0.5x memcpy; peak memory under 2.5x the file size. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_timing.h"
#include "cblob/cblob.h"

extern char **environ;

#define REPEATS 5

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_formats: %s: %s\n", what, cblob_last_error_message());
    exit(1);
}

static off_t file_size(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0 ? info.st_size : -1;
}

/* ---- the model ---------------------------------------------------------------------------- */

/* A model of `layers` layers whose weights share `bytes` of float32 values (plus a small bias
 * each), like the fully connected and convolution layers that dominate real models. */
static cblob_model *make_model(cblob_context *context, size_t bytes, int layers)
{
    cblob_model *model = NULL;
    if (cblob_model_create(context, CBLOB_NET_FORMAT_V2, "bench", &model) != CBLOB_OK)
        die("cblob_model_create");
    const int64_t per_layer = (int64_t)(bytes / sizeof(float) / (size_t)layers);
    uint32_t state = 12345;
    for (int i = 0; i < layers; ++i) {
        const int64_t rows = 256, dims[2] = {rows, per_layer / rows}, bias_dims[1] = {rows};
        cblob_blob *blobs[2] = {NULL, NULL};
        float *values = NULL;
        int64_t count = 0;
        if (cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 2, dims, &blobs[0]) != CBLOB_OK ||
            cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, bias_dims, &blobs[1]) != CBLOB_OK ||
            cblob_blob_mutable_cpu_ptr(blobs[0], CBLOB_PART_DATA, (void **)&values) != CBLOB_OK ||
            cblob_blob_count(blobs[0], &count) != CBLOB_OK)
            die("making a blob");
        for (int64_t k = 0; k < count; ++k) {
            state = state * 1664525u + 1013904223u;
            values[k] = (float)(int32_t)state * 1e-10f;
        }
        char name[32];
        snprintf(name, sizeof name, "fc%d", i);
        if (cblob_model_add_layer(model, name, "InnerProduct", blobs, 2) != CBLOB_OK)
            die("cblob_model_add_layer");
        cblob_blob_destroy(blobs[0]);
        cblob_blob_destroy(blobs[1]);
    }
    return model;
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    do {
        out[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
    } while (v != 0);
    return n;
}

/* One layer whose blob's values are unpacked (each float its own tagged field), as some
 * non-Caffe writers emit them; cblob decodes those with its wire reader instead of protobuf-c.
 * NetParameter { layer (100) { name (1): "fc"  blobs (7) { shape (7) { dim (1) }  data (5)... } } } */
static void write_unpacked_model(const char *path, size_t bytes)
{
    const uint64_t count = bytes / sizeof(float);
    uint8_t shape[16], blob_length_varint[10], head[64];
    size_t s = 0, h = 0;
    shape[s++] = 0x08;
    s += put_varint(shape + s, count);
    const uint64_t blob_length = 2 + s + 5 * count;
    const size_t bl = put_varint(blob_length_varint, blob_length);
    head[h++] = 0xa2, head[h++] = 0x06; /* field 100, length-delimited */
    h += put_varint(head + h, 4 + 1 + bl + blob_length);
    memcpy(head + h, "\x0a\x02" "fc" "\x3a", 5);
    h += 5;
    memcpy(head + h, blob_length_varint, bl);
    h += bl;
    head[h++] = 0x3a, head[h++] = (uint8_t)s;
    memcpy(head + h, shape, s);
    h += s;
    FILE *file = fopen(path, "wb");
    if (file == NULL || fwrite(head, 1, h, file) != h)
        die(path);
    uint8_t chunk[5 * 4096];
    uint32_t state = 777;
    for (uint64_t done = 0; done < count;) {
        size_t k = 0;
        for (; k < 4096 && done < count; ++k, ++done) {
            state = state * 1664525u + 1013904223u;
            const float value = (float)(int32_t)state * 1e-10f;
            chunk[5 * k] = 0x2d; /* field 5, fixed32 */
            memcpy(chunk + 5 * k + 1, &value, 4);
        }
        if (fwrite(chunk, 5, k, file) != k)
            die("writing the unpacked model");
    }
    if (fclose(file) != 0)
        die("writing the unpacked model");
}

/* ---- measurements -------------------------------------------------------------------------- */

/* memcpy of `bytes` into memory already touched: the copy alone. */
static double median_memcpy_seconds(const char *source, size_t bytes)
{
    char *target = malloc(bytes);
    if (target == NULL)
        die("allocating the memcpy target");
    memset(target, 2, bytes); /* touched, so the copy measures copying, not page faults */
    double seconds[REPEATS];
    for (int r = 0; r < REPEATS; ++r) {
        const double start = now();
        memcpy(target, source, bytes);
        seconds[r] = now() - start;
    }
    volatile char sink = target[bytes / 2];
    (void)sink;
    free(target);
    return bench_median(seconds, REPEATS);
}

/* write(2) of the same bytes to a new file in the same folder: what any save must do. */
static double median_write_seconds(const char *source, size_t bytes, const char *path)
{
    double seconds[REPEATS];
    for (int r = 0; r < REPEATS; ++r) {
        unlink(path);
        const double start = now();
        const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        for (size_t done = 0; fd >= 0 && done < bytes;) {
            const ssize_t n = write(fd, source + done, bytes - done < (64u << 20) ? bytes - done : (64u << 20));
            if (n <= 0)
                die("write(2)");
            done += (size_t)n;
        }
        if (fd < 0 || close(fd) != 0)
            die("write(2)");
        seconds[r] = now() - start;
    }
    unlink(path);
    return bench_median(seconds, REPEATS);
}

static double median_save_seconds(const cblob_model *model, const char *path)
{
    double seconds[REPEATS];
    for (int r = 0; r < REPEATS; ++r) {
        /* As for write(2): a new file, not the release of the previous one's pages at rename. */
        unlink(path);
        const double start = now();
        if (cblob_model_to_proto_file(model, 0, path) != CBLOB_OK)
            die("cblob_model_to_proto_file");
        seconds[r] = now() - start;
    }
    return bench_median(seconds, REPEATS);
}

static double median_serialize_seconds(const cblob_model *model, size_t size)
{
    uint8_t *buffer = malloc(size);
    if (buffer == NULL)
        die("allocating the serialization buffer");
    memset(buffer, 0, size);
    double seconds[REPEATS];
    for (int r = 0; r < REPEATS; ++r) {
        size_t written = 0;
        const double start = now();
        if (cblob_model_to_proto(model, 0, buffer, size, &written) != CBLOB_OK)
            die("cblob_model_to_proto");
        seconds[r] = now() - start;
    }
    free(buffer);
    return bench_median(seconds, REPEATS);
}

/* Runs this program with args in a fresh process; returns that process's peak resident memory
 * (bytes) and, when seconds is not NULL, the time it printed. Linux carries the spawning process's
 * high-water mark into the child at exec, so main() spawns every child before it allocates
 * anything large itself. */
static long long run_child(const char *self, const char *mode, const char *path, const char *extra, double *seconds)
{
    char *argv[] = {(char *)self, (char *)mode, (char *)path, (char *)extra, NULL};
    int out[2];
    posix_spawn_file_actions_t actions;
    if (pipe(out) != 0 || posix_spawn_file_actions_init(&actions) != 0 ||
        posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO) != 0 ||
        posix_spawn_file_actions_addclose(&actions, out[0]) != 0)
        die("setting up a child");
    pid_t pid;
    if (posix_spawn(&pid, self, &actions, NULL, argv, environ) != 0)
        die("posix_spawn");
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    char text[64] = "";
    const ssize_t n = read(out[0], text, sizeof text - 1);
    text[n > 0 ? n : 0] = '\0';
    close(out[0]);
    int status = 0;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_formats: the %s child failed\n", mode);
        exit(1);
    }
    if (seconds != NULL)
        *seconds = strtod(text, NULL);
    return (long long)usage.ru_maxrss * 1024;
}

/* The median times of REPEATS fresh processes doing one thing once each, for two things in
 * turns (so that a neighbour's load slows both alike). */
static void median_child_seconds(const char *self, const char *const modes[2], const char *path, double out[2])
{
    double seconds[2][REPEATS];
    for (int r = 0; r < REPEATS; ++r)
        for (int k = 0; k < 2; ++k)
            run_child(self, modes[(k + r) % 2], path, NULL, &seconds[(k + r) % 2][r]);
    for (int k = 0; k < 2; ++k)
        out[k] = bench_median(seconds[k], REPEATS);
}

/* memcpy of the file's bytes into newly allocated memory, in 16 parts like the model's blobs:
 * what any loader must do, since the blobs it makes are new memory (on a virtual machine, the
 * page faults can cost more than the copy). */
static int child_fresh_memcpy(const char *path)
{
    const size_t size = (size_t)file_size(path), part = size / 16;
    char *source = malloc(size);
    if (source == NULL)
        return 1;
    memset(source, 1, size);
    char *parts[16];
    const double start = now();
    for (int i = 0; i < 16; ++i) {
        parts[i] = malloc(part);
        if (parts[i] == NULL)
            return 1;
        memcpy(parts[i], source + (size_t)i * part, part);
    }
    printf("%.9f\n", now() - start);
    volatile char sink = parts[7][part / 2];
    (void)sink;
    return 0;
}

static int child_open(const char *mode, const char *path)
{
    cblob_context *context = NULL;
    cblob_model *model = NULL;
    if (cblob_context_create(&context) != CBLOB_OK)
        return 1;
    if (strcmp(mode, "--child-open-file") == 0 || strcmp(mode, "--child-time-load") == 0) {
        const double start = now();
        if (cblob_model_open_file(context, path, &model) != CBLOB_OK)
            return 1;
        printf("%.9f\n", now() - start);
    } else {
        /* The caller holds the whole file in memory and hands cblob the bytes. */
        const off_t size = file_size(path);
        uint8_t *bytes = malloc((size_t)size + 1);
        const int fd = open(path, O_RDONLY);
        off_t done = 0;
        while (bytes != NULL && fd >= 0 && done < size) {
            const ssize_t n = read(fd, bytes + done, (size_t)(size - done));
            if (n <= 0)
                return 1;
            done += n;
        }
        close(fd);
        if (bytes == NULL || cblob_model_open(context, bytes, (size_t)size, &model) != CBLOB_OK)
            return 1;
        free(bytes);
    }
    cblob_model_destroy(model);
    cblob_context_destroy(context);
    return 0;
}

/* A child does one thing, so that its peak memory is that thing's. */
static int child_main(const char *mode, const char *path, const char *extra)
{
    if (strcmp(mode, "--child-nothing") == 0)
        return 0;
    if (strcmp(mode, "--child-write") == 0 || strcmp(mode, "--child-write-one-layer") == 0) {
        cblob_context *context = NULL;
        if (cblob_context_create(&context) != CBLOB_OK)
            return 1;
        cblob_model *model = make_model(context, (size_t)atoll(extra) << 20, strcmp(mode, "--child-write") == 0 ? 16 : 1);
        const cblob_status status = cblob_model_to_proto_file(model, 0, path);
        cblob_model_destroy(model);
        cblob_context_destroy(context);
        return status == CBLOB_OK ? 0 : 1;
    }
    if (strcmp(mode, "--child-fresh-memcpy") == 0)
        return child_fresh_memcpy(path);
    if (strcmp(mode, "--child-write-unpacked") == 0) {
        write_unpacked_model(path, (size_t)atoll(extra) << 20);
        return 0;
    }
    return child_open(mode, path);
}

static void report_peak(const char *self, const char *what, const char *mode, const char *path, long long baseline)
{
    const long long peak = run_child(self, mode, path, NULL, NULL);
    const double size = (double)file_size(path);
    printf("  %-42s %8.1f MiB  %5.2fx file  (%5.2fx above the %.1f MiB of an idle process)\n", what,
           (double)peak / 1048576.0, (double)peak / size, (double)(peak - baseline) / size,
           (double)baseline / 1048576.0);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strncmp(argv[1], "--child-", 8) == 0)
        return child_main(argv[1], argv[2], argc > 3 ? argv[3] : NULL);
    size_t mib = 1024;
    const char *folder = getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] != '\0' ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--folder") == 0 && i + 1 < argc)
            folder = argv[++i];
        else if (atoi(argv[i]) > 0)
            mib = (size_t)atoi(argv[i]);
        else {
            fprintf(stderr, "usage: bench_formats [SIZE_MIB] [--folder DIR]\n");
            return 2;
        }
    }
    char self[4096], size_text[32], quarter_text[32];
    const ssize_t self_length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (self_length <= 0)
        die("readlink /proc/self/exe");
    self[self_length] = '\0';
    snprintf(size_text, sizeof size_text, "%zu", mib);
    snprintf(quarter_text, sizeof quarter_text, "%zu", mib / 4 > 0 ? mib / 4 : 1);
    char path[4096], single_path[4096], unpacked_path[4096];
    snprintf(path, sizeof path, "%s/bench_formats_%ld.caffemodel", folder, (long)getpid());
    snprintf(single_path, sizeof single_path, "%s/bench_formats_%ld_one_layer.caffemodel", folder, (long)getpid());
    snprintf(unpacked_path, sizeof unpacked_path, "%s/bench_formats_%ld_unpacked.caffemodel", folder, (long)getpid());
    printf("cblob %s, Caffe formats benchmark: a model of %zu MiB of float32 values\n\n", cblob_version(), mib);

    /* Peak memory first, while this process is still small (see run_child). */
    run_child(self, "--child-write", path, size_text, NULL);
    run_child(self, "--child-write-one-layer", single_path, size_text, NULL);
    run_child(self, "--child-write-unpacked", unpacked_path, quarter_text, NULL);
    const long long baseline = run_child(self, "--child-nothing", path, NULL, NULL);
    printf("peak resident memory of a fresh process loading the file (getrusage ru_maxrss)\n");
    report_peak(self, "open_file, 16 layers", "--child-open-file", path, baseline);
    report_peak(self, "open_file, 1 layer (the worst case)", "--child-open-file", single_path, baseline);
    report_peak(self, "open of bytes the caller holds, 16 layers", "--child-open-bytes", path, baseline);
    report_peak(self, "open_file, 1 layer of unpacked values", "--child-open-file", unpacked_path, baseline);
    unlink(single_path);
    unlink(unpacked_path);
    /* Loads happen once in a process: each is timed in a fresh one (a second load in the same
     * process would reuse the heap pages the first freed). */
    const char *const load_modes[2] = {"--child-time-load", "--child-fresh-memcpy"};
    double loads[2];
    median_child_seconds(self, load_modes, path, loads);
    const double load = loads[0], fresh_copy = loads[1];

    cblob_context *context = NULL;
    if (cblob_context_create(&context) != CBLOB_OK)
        die("cblob_context_create");
    const size_t size = (size_t)file_size(path);
    char *source = malloc(size);
    if (source == NULL)
        die("allocating the baseline source");
    memset(source, 1, size);
    char write_path[4200];
    snprintf(write_path, sizeof write_path, "%s.write", path);
    const double copy = median_memcpy_seconds(source, size);
    const double raw_write = median_write_seconds(source, size, write_path);
    free(source);
    cblob_model *model = make_model(context, mib << 20, 16);
    const double save = median_save_seconds(model, path);
    const double serialize = median_serialize_seconds(model, size);
    cblob_model_destroy(model);
    const double gb = (double)size / 1e9;
    printf("\nthroughput, 16 layers (median of %d; loads each in a fresh process; file %.1f MiB; GB/s = 1e9 bytes/s)\n",
           REPEATS,
           (double)size / 1048576.0);
    printf("  memcpy into memory already touched       %7.2f GB/s\n", gb / copy);
    printf("  memcpy into newly allocated memory       %7.2f GB/s\n", gb / fresh_copy);
    printf("  write(2) of the bytes to a new file      %7.2f GB/s\n", gb / raw_write);
    printf("  load  (cblob_model_open_file)            %7.2f GB/s  %5.2fx memcpy, %5.2fx memcpy into new memory\n",
           gb / load, copy / load, fresh_copy / load);
    printf("  save  (cblob_model_to_proto_file)        %7.2f GB/s  %5.2fx memcpy, %5.2fx write(2)\n", gb / save,
           copy / save, raw_write / save);
    printf("  save  (cblob_model_to_proto, to memory)  %7.2f GB/s  %5.2fx memcpy\n", gb / serialize,
           copy / serialize);
    unlink(path);
    cblob_context_destroy(context);
    return 0;
}
