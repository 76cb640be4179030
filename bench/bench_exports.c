/* SPDX-License-Identifier: BSD-2-Clause */
/* Exporting a model to safetensors and npz against write(2) of the same bytes, and the peak
 * memory of each export against the model's size (issue 11's targets: at least 0.7x write's
 * throughput, peak at most 1.2x the model plus 16 MiB).
 *
 *   bench_exports [MIB] [FOLDER]    (MIB: the model's size, 1024 by default; FOLDER: where the
 *                                    files go, a new folder under $TMPDIR or /tmp by default)
 *
 * Interleaved repetitions; prints the median and the min-max of each, in GB/s and as a ratio to
 * write(2) and fsync of the same bytes (the library's writer fsyncs every file it puts in place;
 * write(2) alone is shown too), and the process's peak resident memory during each (VmHWM,
 * reset before each) over the model's size. Each export runs also with a progress callback on the
 * context (cblob_context_set_progress, one that lets the call go on), which the cblob program
 * always sets: what telling progress costs. */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cblob/cblob.h"

#define REPEATS 5
#define LAYERS 16

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long peak_kib(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (status != NULL && fgets(line, sizeof line, status) != NULL)
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (status != NULL)
        fclose(status);
    return kib;
}

static void reset_peak(void)
{
    FILE *refs = fopen("/proc/self/clear_refs", "w");
    if (refs != NULL) {
        fputs("5", refs);
        fclose(refs);
    }
}

static int32_t go_on(void *user_data, int64_t done, int64_t total)
{
    (void)done;
    (void)total;
    ++*(int64_t *)user_data;
    return 0;
}

static int compare(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* write(2) of every blob's bytes to one file, in 64 MiB calls, then fsync as the library's
 * writer does (src/io makes every file it puts in place durable). */
static int write_plain(cblob_blob *const *blobs, size_t bytes_each, const char *path, bool sync)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    for (int i = 0; fd >= 0 && i < LAYERS; ++i) {
        const void *data = NULL;
        cblob_blob_cpu_ptr(blobs[i], CBLOB_PART_DATA, &data);
        for (size_t done = 0; done < bytes_each;) {
            const ssize_t n = write(fd, (const char *)data + done, bytes_each - done < (64u << 20) ? bytes_each - done : (64u << 20));
            if (n <= 0) {
                close(fd);
                return -1;
            }
            done += (size_t)n;
        }
    }
    if (fd >= 0 && sync && fsync(fd) != 0) {
        close(fd);
        return -1;
    }
    return fd >= 0 ? close(fd) : -1;
}

int main(int argc, char **argv)
{
    const size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 1024;
    char folder[4096];
    if (argc > 2) {
        snprintf(folder, sizeof folder, "%s", argv[2]);
    } else {
        snprintf(folder, sizeof folder, "%s/cblob-bench-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(folder) == NULL)
            return 1;
    }
    cblob_context *ctx = NULL;
    cblob_model *model = NULL;
    cblob_blob *blobs[LAYERS];
    const size_t bytes_each = (mib << 20) / LAYERS;
    cblob_context_create(&ctx);
    cblob_model_create(ctx, CBLOB_NET_FORMAT_V2, "bench", &model);
    for (int i = 0; i < LAYERS; ++i) {
        char name[32];
        snprintf(name, sizeof name, "fc%d", i);
        if (cblob_blob_create(ctx, CBLOB_DTYPE_FLOAT32, 1, (int64_t[]){(int64_t)(bytes_each / 4)}, &blobs[i]) != CBLOB_OK ||
            cblob_blob_fill(blobs[i], CBLOB_PART_DATA, 0.5) != CBLOB_OK ||
            cblob_model_add_layer(model, name, "InnerProduct", &blobs[i], 1) != CBLOB_OK) {
            fprintf(stderr, "bench_exports: %s\n", cblob_last_error_message());
            return 1;
        }
    }
    const double model_bytes = (double)bytes_each * LAYERS;
    enum { KINDS = 6 };
    const char *names[KINDS] = {"write+fsync", "safetensors", "npz", "write only", "safet.+prog.", "npz+progress"};
    double seconds[KINDS][REPEATS];
    long peaks[KINDS] = {0, 0, 0, 0, 0, 0};
    int64_t calls = 0;
    char path[4200];
    for (int r = 0; r < REPEATS; ++r)
        for (int k = 0; k < KINDS; ++k) {
            snprintf(path, sizeof path, "%s/out.%d", folder, k);
            cblob_context_set_progress(ctx, k >= 4 ? go_on : NULL, &calls);
            reset_peak();
            const double start = now();
            const int failed = k == 0 || k == 3     ? write_plain(blobs, bytes_each, path, k == 0)
                               : k == 1 || k == 4 ? (int)cblob_model_to_safetensors_file(model, 0, path)
                                                  : (int)cblob_model_to_npz_file(model, 0, path);
            seconds[k][r] = now() - start;
            const long peak = peak_kib();
            peaks[k] = peak > peaks[k] ? peak : peaks[k];
            unlink(path);
            if (failed) {
                fprintf(stderr, "bench_exports: %s failed: %s\n", names[k], cblob_last_error_message());
                return 1;
            }
        }
    double median[KINDS];
    printf("model: %.0f MiB in %d layers; files in %s; %d interleaved repetitions; %lld progress calls\n",
           model_bytes / 1048576, LAYERS, folder, REPEATS, (long long)calls);
    printf("%-12s %10s %18s %10s %14s\n", "", "GB/s", "min-max GB/s", "x write", "peak/model");
    for (int k = 0; k < KINDS; ++k) {
        qsort(seconds[k], REPEATS, sizeof seconds[k][0], compare);
        median[k] = seconds[k][REPEATS / 2];
        printf("%-12s %10.2f %8.2f - %7.2f %10.2f %14.2f\n", names[k], model_bytes / median[k] / 1e9,
               model_bytes / seconds[k][REPEATS - 1] / 1e9, model_bytes / seconds[k][0] / 1e9, median[0] / median[k],
               (double)peaks[k] * 1024 / model_bytes);
    }
    if (argc <= 2)
        rmdir(folder);
    for (int i = 0; i < LAYERS; ++i)
        cblob_blob_destroy(blobs[i]);
    cblob_model_destroy(model);
    cblob_context_destroy(ctx);
    return 0;
}
