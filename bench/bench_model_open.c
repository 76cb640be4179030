/* SPDX-License-Identifier: BSD-2-Clause */
/* Opens a .caffemodel and walks it the way `cblob inspect` does (every layer's name and type,
 * every blob's shape), without making blob handles; bench/model_memory.sh runs it under
 * /usr/bin/time to measure the library's peak memory against the file's size. */
#include <stdio.h>

#include "cblob/cblob.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_model_open FILE.caffemodel\n");
        return 2;
    }
    cblob_context *context = NULL;
    cblob_model *model = NULL;
    if (cblob_context_create(&context) != CBLOB_OK || cblob_model_open_file(context, argv[1], &model) != CBLOB_OK) {
        fprintf(stderr, "bench_model_open: %s\n", cblob_last_error_message());
        return 1;
    }
    int64_t layers = 0, blobs = 0, axes = 0;
    cblob_model_num_layers(model, &layers);
    for (int64_t i = 0; i < layers; ++i) {
        const char *name = NULL, *type = NULL;
        int64_t n = 0;
        cblob_model_layer_name(model, i, &name);
        cblob_model_layer_type(model, i, &type);
        cblob_model_layer_num_blobs(model, i, &n);
        blobs += n;
    }
    printf("%lld layers, %lld blobs, %lld axes\n", (long long)layers, (long long)blobs, (long long)axes);
    cblob_model_destroy(model);
    cblob_context_destroy(context);
    return 0;
}
