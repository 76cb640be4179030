/* SPDX-License-Identifier: BSD-2-Clause */
/* Opens a .caffemodel and walks it the way `cblob inspect` does (every layer's name and type,
 * every blob's shape), without making blob handles; with a second path, saves it there too.
 * bench/model_memory.sh runs it under /usr/bin/time to measure the library's peak memory against
 * the file's size; bench/compare_libraries.sh times it against two builds of the library.
 *
 *   bench_model_open FILE.caffemodel [SAVED.caffemodel [REPEATS]]
 *
 * Prints the counts, then "seconds: open O list L save S" (S 0 without a second path), each
 * timed here, without the process's start: with REPEATS (1 by default), the medians of that many
 * opens, listings and saves in turn (a small file's open takes about a millisecond, less than the
 * noise of a process's start). */
#include <stdio.h>
#include <stdlib.h>

#include "bench_timing.h"
#include "cblob/cblob.h"

static int fail(void)
{
    fprintf(stderr, "bench_model_open: %s\n", cblob_last_error_message());
    return 1;
}

int main(int argc, char **argv)
{
    const int repeats = argc == 4 ? atoi(argv[3]) : 1;
    if (argc < 2 || argc > 4 || repeats < 1 || repeats > 1000) {
        fprintf(stderr, "usage: bench_model_open FILE.caffemodel [SAVED.caffemodel [REPEATS]]\n");
        return 2;
    }
    cblob_context *context = NULL;
    if (cblob_context_create(&context) != CBLOB_OK)
        return fail();
    double open[1000], list[1000], save[1000];
    int64_t layers = 0, blobs = 0, axes = 0;
    for (int r = 0; r < repeats; ++r) {
        cblob_model *model = NULL;
        const double start = bench_now();
        if (cblob_model_open_file(context, argv[1], &model) != CBLOB_OK)
            return fail();
        const double opened = bench_now();
        layers = blobs = axes = 0;
        cblob_model_num_layers(model, &layers);
        for (int64_t i = 0; i < layers; ++i) {
            const char *name = NULL, *type = NULL;
            int64_t n = 0;
            cblob_model_layer_name(model, i, &name);
            cblob_model_layer_type(model, i, &type);
            cblob_model_layer_num_blobs(model, i, &n);
            for (int64_t j = 0; j < n; ++j) {
                int32_t num_axes = 0;
                cblob_model_layer_blob_shape(model, i, j, 0, NULL, &num_axes);
                axes += num_axes;
            }
            blobs += n;
        }
        const double listed = bench_now();
        if (argc >= 3 && cblob_model_to_proto_file(model, 1, argv[2]) != CBLOB_OK)
            return fail();
        const double saved = bench_now();
        cblob_model_destroy(model);
        open[r] = opened - start;
        list[r] = listed - opened;
        save[r] = argc >= 3 ? saved - listed : 0.0;
    }
    printf("%lld layers, %lld blobs, %lld axes\n", (long long)layers, (long long)blobs, (long long)axes);
    printf("seconds: open %.6f list %.6f save %.6f\n", bench_median(open, repeats), bench_median(list, repeats),
           bench_median(save, repeats));
    cblob_context_destroy(context);
    return 0;
}
