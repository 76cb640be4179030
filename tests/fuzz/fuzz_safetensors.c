/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the safetensors reader: what it reads must export back to safetensors that reads as the same
 * layers, blob counts and shapes. */
#include <string.h>

#include "fuzz.h"

static void same_layers(const cblob_model *a, const cblob_model *b)
{
    int64_t layers = -1, again = -2;
    FUZZ_ASSERT(cblob_model_num_layers(a, &layers) == CBLOB_OK && cblob_model_num_layers(b, &again) == CBLOB_OK);
    FUZZ_ASSERT(layers == again);
    for (int64_t i = 0; i < layers; ++i) {
        const char *x = NULL, *y = NULL;
        int64_t nx = -1, ny = -2;
        FUZZ_ASSERT(cblob_model_layer_name(a, i, &x) == CBLOB_OK && cblob_model_layer_name(b, i, &y) == CBLOB_OK);
        FUZZ_ASSERT(cblob_model_layer_num_blobs(a, i, &nx) == CBLOB_OK && cblob_model_layer_num_blobs(b, i, &ny) == CBLOB_OK);
        FUZZ_ASSERT(nx == ny);
        for (int64_t j = 0; j < nx; ++j) {
            int64_t dx[CBLOB_MAX_AXES], dy[CBLOB_MAX_AXES];
            int32_t ax = -1, ay = -2;
            FUZZ_ASSERT(cblob_model_layer_blob_shape(a, i, j, CBLOB_MAX_AXES, dx, &ax) == CBLOB_OK);
            FUZZ_ASSERT(cblob_model_layer_blob_shape(b, i, j, CBLOB_MAX_AXES, dy, &ay) == CBLOB_OK);
            FUZZ_ASSERT(ax == ay && memcmp(dx, dy, (size_t)ax * sizeof *dx) == 0);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cblob_context *context = fuzz_context();
    cblob_model *model = NULL;
    if (cblob_model_open_safetensors(context, data, size, &model) != CBLOB_OK)
        return 0;
    size_t out_size = 0;
    FUZZ_ASSERT(cblob_model_to_safetensors(model, CBLOB_EXPORT_DIFF, NULL, 0, &out_size) == CBLOB_OK);
    uint8_t *bytes = malloc(out_size + 1);
    FUZZ_ASSERT(bytes != NULL && cblob_model_to_safetensors(model, CBLOB_EXPORT_DIFF, bytes, out_size, &out_size) == CBLOB_OK);
    cblob_model *again = NULL;
    FUZZ_ASSERT(cblob_model_open_safetensors(context, bytes, out_size, &again) == CBLOB_OK);
    same_layers(model, again);
    free(bytes);
    cblob_model_destroy(again);
    cblob_model_destroy(model);
    return 0;
}
