/* SPDX-License-Identifier: BSD-2-Clause */
/* Loading, measured in one run: decoding a BlobProto of 1e7 float32 values into a new blob (fresh
 * memory) against memcpy of the same bytes into fresh memory, and opening a model lazily against
 * opening it whole.
 *
 *   bench_load [SIZE_MIB] [--folder DIR] [--rounds N]
 *
 * Decode: cblob_blob_create_from_proto on the default threads and on one, against memcpy into
 * memory just allocated by malloc (4 KiB pages, as glibc maps it) and into memory just mapped with
 * MADV_HUGEPAGE (the 2 MiB pages cblob asks for its large buffers). Every round frees what it made,
 * so each contender pays for fresh pages; the free is not timed. GB/s counts the values' bytes.
 * Target (issue 15): at least 0.8x memcpy into fresh memory.
 *
 * Open: a SIZE_MIB model (default 1024) of 64 layers, two blobs each, written to DIR (default
 * $TMPDIR or /tmp) and read from the page cache: cblob_model_open_file, or
 * cblob_model_open_file_lazy, then every layer's name and every blob's shape, then destroy.
 * Target: the lazy open at least 100x faster. Each figure is the median of interleaved rounds,
 * with min-max. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_timing.h"
#include "cblob/cblob.h"

static void must(cblob_status status, const char *what)
{
    if (status != CBLOB_OK) {
        fprintf(stderr, "bench_load: %s failed: %s\n", what, cblob_last_error_message());
        exit(1);
    }
}

static long long bytes_read(void)
{
    FILE *io = fopen("/proc/self/io", "r");
    long long rchar = -1;
    if (io != NULL) {
        if (fscanf(io, "rchar: %lld", &rchar) != 1)
            rchar = -1;
        fclose(io);
    }
    return rchar;
}

static void print_series(const char *what, double *seconds, int rounds, double bytes, double baseline)
{
    const double median = bench_median(seconds, rounds);
    printf("%-46s %9.2f ms (%8.2f-%8.2f)", what, median * 1e3, seconds[0] * 1e3, seconds[rounds - 1] * 1e3);
    if (bytes > 0)
        printf("  %7.2f GB/s", bytes / median * 1e-9);
    if (baseline > 0)
        printf("  %6.2fx", baseline / median);
    printf("\n");
}

/* ---- decode ------------------------------------------------------------------------------- */

enum { DECODE_VALUES = 10 * 1000 * 1000 };

static void bench_decode(cblob_context *context, int rounds)
{
    const int64_t n = DECODE_VALUES;
    cblob_blob *source;
    float *values;
    must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, &n, &source), "create");
    must(cblob_blob_mutable_cpu_ptr(source, CBLOB_PART_DATA, (void **)&values), "data");
    for (int64_t i = 0; i < n; ++i)
        values[i] = (float)i * 0.5f;
    size_t size = 0;
    must(cblob_blob_to_proto(source, 0, NULL, 0, &size), "to_proto size");
    uint8_t *proto = malloc(size);
    if (proto == NULL)
        exit(1);
    must(cblob_blob_to_proto(source, 0, proto, size, &size), "to_proto");
    const size_t bytes = (size_t)n * sizeof(float);
    double t[4][BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; ++r) {
        for (int turn = 0; turn < 4; ++turn) {
            const int k = (turn + r) % 4;
            if (k < 2) { /* cblob, default threads then one */
                must(cblob_context_set_num_threads(context, k == 0 ? 0 : 1), "threads");
                cblob_blob *blob;
                const double start = bench_now();
                must(cblob_blob_create_from_proto(context, proto, size, &blob), "create_from_proto");
                t[k][r] = bench_now() - start;
                cblob_blob_destroy(blob);
                continue;
            }
            const double start = bench_now();
            void *to;
            if (k == 2) {
                to = malloc(bytes);
            } else {
                to = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                madvise(to, bytes, MADV_HUGEPAGE);
            }
            memcpy(to, values, bytes);
            t[k][r] = bench_now() - start;
            if (((volatile float *)to)[n - 1] != values[n - 1])
                exit(1);
            if (k == 2)
                free(to);
            else
                munmap(to, bytes);
        }
    }
    must(cblob_context_set_num_threads(context, 0), "threads");
    int32_t threads = 0;
    must(cblob_context_num_threads(context, &threads), "num_threads");
    printf("\ndecode a BlobProto of 1e7 float32 (%zu bytes) into fresh memory; medians of %d rounds (min-max),\n"
           "ratios: memcpy into fresh malloc memory time / contender time\n",
           size, rounds);
    const double baseline = bench_median(t[2], rounds);
    char label[64];
    snprintf(label, sizeof label, "cblob_blob_create_from_proto, %d threads", (int)threads);
    print_series(label, t[0], rounds, (double)bytes, baseline);
    print_series("cblob_blob_create_from_proto, 1 thread", t[1], rounds, (double)bytes, baseline);
    print_series("memcpy into fresh malloc memory (4 KiB pages)", t[2], rounds, (double)bytes, baseline);
    print_series("memcpy into fresh MADV_HUGEPAGE memory", t[3], rounds, (double)bytes, baseline);
    free(proto);
    cblob_blob_destroy(source);
}

/* ---- open -------------------------------------------------------------------------------- */

enum { OPEN_LAYERS = 64 };

static void write_model(cblob_context *context, size_t mib, const char *path)
{
    cblob_model *model;
    must(cblob_model_create(context, CBLOB_NET_FORMAT_V2, "bench", &model), "model_create");
    const int64_t per_layer = (int64_t)((mib << 20) / OPEN_LAYERS / sizeof(float));
    for (int l = 0; l < OPEN_LAYERS; ++l) {
        const int64_t weights[2] = {per_layer / 256, 256}, bias[1] = {256};
        cblob_blob *blobs[2];
        must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 2, weights, &blobs[0]), "create");
        must(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 1, bias, &blobs[1]), "create");
        must(cblob_blob_fill(blobs[0], CBLOB_PART_DATA, 0.25 * l), "fill");
        must(cblob_blob_fill(blobs[1], CBLOB_PART_DATA, 1.0), "fill");
        char name[32];
        snprintf(name, sizeof name, "ip%d", l);
        must(cblob_model_add_layer(model, name, "InnerProduct", blobs, 2), "add_layer");
        cblob_blob_destroy(blobs[0]);
        cblob_blob_destroy(blobs[1]);
    }
    must(cblob_model_to_proto_file(model, 0, path), "to_proto_file");
    cblob_model_destroy(model);
}

/* Opens the model one way, lists every layer's name and blob's shape, destroys it. */
static void open_and_list(cblob_context *context, const char *path, bool lazy)
{
    cblob_model *model;
    must(lazy ? cblob_model_open_file_lazy(context, path, &model) : cblob_model_open_file(context, path, &model),
         "open");
    int64_t layers = 0, total = 0;
    must(cblob_model_num_layers(model, &layers), "num_layers");
    for (int64_t l = 0; l < layers; ++l) {
        const char *name;
        int64_t blobs = 0;
        must(cblob_model_layer_name(model, l, &name), "layer_name");
        must(cblob_model_layer_num_blobs(model, l, &blobs), "num_blobs");
        for (int64_t b = 0; b < blobs; ++b) {
            int64_t dims[CBLOB_MAX_AXES];
            int32_t axes = 0;
            must(cblob_model_layer_blob_shape(model, l, b, CBLOB_MAX_AXES, dims, &axes), "blob_shape");
            total += axes;
        }
    }
    if (total != 3 * OPEN_LAYERS)
        exit(1);
    cblob_model_destroy(model);
}

static void bench_open(cblob_context *context, size_t mib, const char *folder, int rounds)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_load.caffemodel", folder);
    write_model(context, mib, path);
    const long long before = bytes_read();
    open_and_list(context, path, true);
    const long long lazy_bytes = bytes_read() - before;
    double t[2][BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; ++r) {
        for (int turn = 0; turn < 2; ++turn) {
            const int k = (turn + r) % 2;
            const double start = bench_now();
            open_and_list(context, path, k == 1);
            t[k][r] = bench_now() - start;
        }
    }
    printf("\nopen a %zu MiB model of %d layers (2 blobs each) and list every layer and blob shape;\n"
           "medians of %d rounds (min-max); the lazy open read %lld bytes (%.1f KiB per layer)\n",
           mib, OPEN_LAYERS, rounds, lazy_bytes, (double)lazy_bytes / 1024 / OPEN_LAYERS);
    const double full = bench_median(t[0], rounds);
    print_series("cblob_model_open_file", t[0], rounds, (double)(mib << 20), 0);
    print_series("cblob_model_open_file_lazy (ratio: full / lazy)", t[1], rounds, 0, full);
    remove(path);
}

int main(int argc, char **argv)
{
    size_t mib = 1024;
    int rounds = 7;
    const char *folder = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--folder") == 0 && i + 1 < argc)
            folder = argv[++i];
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = bench_parse_rounds(argv[++i]);
        else if (atoi(argv[i]) > 0)
            mib = (size_t)atoi(argv[i]);
    }
    bench_print_machine("bench_load");
    cblob_context *context;
    must(cblob_context_create(&context), "context");
    bench_decode(context, rounds);
    bench_open(context, mib, folder, rounds);
    cblob_context_destroy(context);
    return 0;
}
