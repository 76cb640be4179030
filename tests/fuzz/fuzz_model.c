/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the NetParameter reader: every layer's name, type and blobs must be reachable, the model
 * must write back to exactly its input (models keep their bytes), and, once every blob was made
 * into a handle, to bytes that read as the same layers and blob shapes. */
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cblob_context *context = fuzz_context();
    cblob_model *model = NULL;
    if (cblob_model_open(context, data, size, &model) != CBLOB_OK)
        return 0;
    size_t same_size = 0;
    FUZZ_ASSERT(cblob_model_to_proto(model, 1, NULL, 0, &same_size) == CBLOB_OK && same_size == size);
    uint8_t *same = malloc(size + 1);
    FUZZ_ASSERT(same != NULL && cblob_model_to_proto(model, 1, same, size, &same_size) == CBLOB_OK);
    FUZZ_ASSERT(memcmp(same, data, size) == 0);
    free(same);
    int64_t layers = -1;
    FUZZ_ASSERT(cblob_model_num_layers(model, &layers) == CBLOB_OK && layers >= 0);
    for (int64_t i = 0; i < layers; ++i) {
        const char *name = NULL, *type = NULL;
        int64_t num_blobs = -1, found = -1;
        FUZZ_ASSERT(cblob_model_layer_name(model, i, &name) == CBLOB_OK && name != NULL);
        FUZZ_ASSERT(cblob_model_layer_type(model, i, &type) == CBLOB_OK && type != NULL);
        FUZZ_ASSERT(cblob_model_find_layer(model, name, &found) == CBLOB_OK && found >= 0 && found <= i);
        FUZZ_ASSERT(cblob_model_layer_num_blobs(model, i, &num_blobs) == CBLOB_OK);
        for (int64_t j = 0; j < num_blobs; ++j) {
            cblob_blob *blob = NULL;
            FUZZ_ASSERT(cblob_model_layer_blob(model, i, j, &blob) == CBLOB_OK);
            cblob_blob_destroy(blob);
        }
    }
    size_t bytes_size = 0;
    FUZZ_ASSERT(cblob_model_to_proto(model, 1, NULL, 0, &bytes_size) == CBLOB_OK);
    uint8_t *bytes = malloc(bytes_size + 1);
    FUZZ_ASSERT(bytes != NULL && cblob_model_to_proto(model, 1, bytes, bytes_size, &bytes_size) == CBLOB_OK);
    cblob_model *again = NULL;
    FUZZ_ASSERT(cblob_model_open(context, bytes, bytes_size, &again) == CBLOB_OK);
    int64_t again_layers = -1;
    FUZZ_ASSERT(cblob_model_num_layers(again, &again_layers) == CBLOB_OK && again_layers == layers);
    for (int64_t i = 0; i < layers; ++i) {
        const char *a = NULL, *b = NULL;
        int64_t na = -1, nb = -2;
        FUZZ_ASSERT(cblob_model_layer_name(model, i, &a) == CBLOB_OK && cblob_model_layer_name(again, i, &b) == CBLOB_OK);
        FUZZ_ASSERT(strcmp(a, b) == 0);
        FUZZ_ASSERT(cblob_model_layer_num_blobs(model, i, &na) == CBLOB_OK &&
                    cblob_model_layer_num_blobs(again, i, &nb) == CBLOB_OK && na == nb);
    }
    free(bytes);
    cblob_model_destroy(again);
    cblob_model_destroy(model);
    return 0;
}
