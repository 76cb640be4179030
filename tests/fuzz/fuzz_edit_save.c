/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes edit-then-save: a model read from the input has the values of its blobs changed through
 * their handles (data and, where the file holds one, diff; every dtype, including a diff stored in
 * the other float type), is saved, and must read back as the edited values. The bytes of the
 * input choose what changes, so the fuzzer reaches stored values at every alignment. */
#include <string.h>

#include "fuzz.h"

enum { MAX_EDITED_BLOBS = 64 };

static size_t element_size(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

/* Flips bits of a few elements, chosen and valued by the input. */
static void edit(uint8_t *values, int64_t count, size_t size, const uint8_t *data, size_t data_size, size_t salt)
{
    for (int k = 0; k < 3 && count > 0; ++k) {
        const uint8_t pick = data_size > 0 ? data[(salt + (size_t)k * 7) % data_size] : 0;
        const int64_t element = (int64_t)((salt * 31 + (size_t)k * 17 + pick) % (uint64_t)count);
        values[(size_t)element * size + (size_t)k % size] ^= (uint8_t)(pick | 1);
    }
}

/* Equal as the saved file can hold them: a double diff may be stored as float (a V1 blob whose
 * data is double and whose diff the file kept as float), so doubles are compared after the same
 * conversion to float on both sides; everything else bit for bit. */
static int same_values(const uint8_t *a, const uint8_t *b, int64_t count, cblob_dtype dtype, int as_float)
{
    if (dtype != CBLOB_DTYPE_FLOAT64 || !as_float)
        return memcmp(a, b, (size_t)count * element_size(dtype)) == 0;
    for (int64_t i = 0; i < count; ++i) {
        double x, y;
        memcpy(&x, a + (size_t)i * 8, 8);
        memcpy(&y, b + (size_t)i * 8, 8);
        const float fx = (float)x, fy = (float)y;
        if (memcmp(&fx, &fy, sizeof fx) != 0)
            return 0;
    }
    return 1;
}

typedef struct edited {
    int64_t layer, index, count;
    cblob_dtype dtype;
    int has_diff;
    uint8_t *values[2]; /* data, diff as edited (malloc'd) */
} edited;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cblob_context *context = fuzz_context();
    cblob_model *model = NULL;
    if (cblob_model_open(context, data, size, &model) != CBLOB_OK)
        return 0;
    int64_t layers = 0;
    FUZZ_ASSERT(cblob_model_num_layers(model, &layers) == CBLOB_OK);
    edited edits[MAX_EDITED_BLOBS];
    int num_edits = 0;
    for (int64_t i = 0; i < layers && num_edits < MAX_EDITED_BLOBS; ++i) {
        int64_t num_blobs = 0;
        FUZZ_ASSERT(cblob_model_layer_num_blobs(model, i, &num_blobs) == CBLOB_OK);
        for (int64_t j = 0; j < num_blobs && num_edits < MAX_EDITED_BLOBS; ++j) {
            cblob_blob *blob = NULL;
            if (cblob_model_layer_blob(model, i, j, &blob) != CBLOB_OK)
                continue; /* a blob the model cannot make into a handle: its error is the reader's to test */
            edited *e = &edits[num_edits];
            *e = (edited){.layer = i, .index = j};
            FUZZ_ASSERT(cblob_blob_dtype(blob, &e->dtype) == CBLOB_OK && cblob_blob_count(blob, &e->count) == CBLOB_OK);
            FUZZ_ASSERT(cblob_model_layer_blob_has_diff(model, i, j, &e->has_diff) == CBLOB_OK);
            const size_t bytes = (size_t)e->count * element_size(e->dtype);
            for (int part = 0; part < (e->has_diff ? 2 : 1); ++part) {
                void *values = NULL;
                FUZZ_ASSERT(cblob_blob_mutable_cpu_ptr(blob, part ? CBLOB_PART_DIFF : CBLOB_PART_DATA, &values) == CBLOB_OK);
                FUZZ_ASSERT(values != NULL || e->count == 0);
                if (e->count > 0)
                    edit(values, e->count, element_size(e->dtype), data, size, (size_t)(i * 131 + j * 13 + part));
                e->values[part] = malloc(bytes + 1);
                FUZZ_ASSERT(e->values[part] != NULL);
                if (bytes > 0)
                    memcpy(e->values[part], values, bytes);
            }
            cblob_blob_destroy(blob);
            ++num_edits;
        }
    }
    size_t saved_size = 0;
    FUZZ_ASSERT(cblob_model_to_proto(model, 1, NULL, 0, &saved_size) == CBLOB_OK);
    uint8_t *saved = malloc(saved_size + 1);
    FUZZ_ASSERT(saved != NULL && cblob_model_to_proto(model, 1, saved, saved_size, &saved_size) == CBLOB_OK);
    cblob_model *again = NULL;
    FUZZ_ASSERT(cblob_model_open(context, saved, saved_size, &again) == CBLOB_OK);
    int64_t again_layers = -1;
    FUZZ_ASSERT(cblob_model_num_layers(again, &again_layers) == CBLOB_OK && again_layers == layers);
    for (int k = 0; k < num_edits; ++k) {
        const edited *e = &edits[k];
        cblob_blob *blob = NULL;
        FUZZ_ASSERT(cblob_model_layer_blob(again, e->layer, e->index, &blob) == CBLOB_OK);
        cblob_dtype dtype;
        int64_t count = -1;
        int has_diff = -1;
        FUZZ_ASSERT(cblob_blob_dtype(blob, &dtype) == CBLOB_OK && dtype == e->dtype);
        FUZZ_ASSERT(cblob_blob_count(blob, &count) == CBLOB_OK && count == e->count);
        FUZZ_ASSERT(cblob_model_layer_blob_has_diff(again, e->layer, e->index, &has_diff) == CBLOB_OK &&
                    has_diff == e->has_diff);
        for (int part = 0; part < (e->has_diff ? 2 : 1) && count > 0; ++part) {
            const void *values = NULL;
            FUZZ_ASSERT(cblob_blob_cpu_ptr(blob, part ? CBLOB_PART_DIFF : CBLOB_PART_DATA, &values) == CBLOB_OK);
            FUZZ_ASSERT(same_values(values, e->values[part], count, dtype, part == 1));
        }
        cblob_blob_destroy(blob);
        free(e->values[0]);
        free(e->values[1]);
    }
    free(saved);
    cblob_model_destroy(again);
    cblob_model_destroy(model);
    return 0;
}
