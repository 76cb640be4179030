/* SPDX-License-Identifier: BSD-2-Clause */
/* A model's layer names, indexed, and the keys exports write: finding a layer by name or by key is
 * O(1). */
#include "model_names.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "utf8.h"

/* Names as UTF-8 (each bad byte U+FFFD), for keys the exports and the .npy index wrote so; NULL
 * when every name is UTF-8 already. */
static cblob_status repair_names(cb_model_names *names, int64_t count)
{
    bool all_valid = true;
    for (int64_t i = 0; all_valid && i < count; ++i)
        all_valid = cb_utf8_valid(names->names[i], strlen(names->names[i]));
    if (all_valid)
        return CBLOB_OK;
    names->repaired = calloc((size_t)count + 1, sizeof *names->repaired);
    if (names->repaired == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to tell %" PRId64 " layer names apart", count);
    for (int64_t i = 0; i < count; ++i) {
        const char *name = names->names[i];
        const size_t size = cb_utf8_repaired_length(name, strlen(name));
        if ((names->repaired[i] = malloc(size + 1)) == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to tell %" PRId64 " layer names apart", count);
        cb_utf8_repair(name, strlen(name), names->repaired[i]);
        names->repaired[i][size] = '\0';
    }
    return cb_name_index_make((const char *const *)names->repaired, count, &names->repaired_index);
}

cblob_status cb_model_names_make(const cblob_model *model, cb_model_names *out)
{
    *out = (cb_model_names){.count = model->num_layers};
    out->names = malloc(((size_t)model->num_layers + 1) * sizeof *out->names);
    if (out->names == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to tell %" PRId64 " layer names apart", model->num_layers);
    for (int64_t i = 0; i < model->num_layers; ++i)
        out->names[i] = model->layers[i].name;
    cblob_status status = cb_name_index_make(out->names, model->num_layers, &out->index);
    if (status == CBLOB_OK)
        status = cb_name_index_init(out->names, model->num_layers, false, &out->with_blobs);
    for (int64_t i = 0; status == CBLOB_OK && i < model->num_layers; ++i)
        if (model->layers[i].num_blobs > 0)
            (void)cb_name_index_put(&out->with_blobs, i);
    if (status == CBLOB_OK)
        status = repair_names(out, model->num_layers);
    if (status != CBLOB_OK)
        cb_model_names_free(out);
    return status;
}

void cb_model_names_free(cb_model_names *names)
{
    cb_name_index_free(&names->index);
    cb_name_index_free(&names->with_blobs);
    cb_name_index_free(&names->repaired_index);
    for (int64_t i = 0; names->repaired != NULL && i < names->count; ++i)
        free(names->repaired[i]);
    free(names->repaired);
    free(names->names);
    *names = (cb_model_names){0};
}

cblob_status cb_model_repeats(const cblob_model *model, uint8_t **out)
{
    cb_model_names names;
    CB_TRY(cb_model_names_make(model, &names));
    uint8_t *repeats = calloc((size_t)model->num_layers + 1, 1);
    for (int64_t i = 0; repeats != NULL && i < model->num_layers; ++i)
        repeats[i] = cb_name_index_find(&names.index, names.names[i], strlen(names.names[i])) != i;
    cb_model_names_free(&names);
    if (repeats == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to tell %" PRId64 " layer names apart", model->num_layers);
    *out = repeats;
    return CBLOB_OK;
}

/* Whether a layer's name, as it is or as UTF-8, is the key's name part of `length` bytes. */
static bool layer_named(const cb_model_names *names, int64_t layer, const char *name, size_t length)
{
    const char *held = names->names[layer];
    if (strlen(held) == length && memcmp(held, name, length) == 0)
        return true;
    held = names->repaired != NULL ? names->repaired[layer] : NULL;
    return held != NULL && strlen(held) == length && memcmp(held, name, length) == 0;
}

int64_t cb_model_layer_for_key(const cb_model_names *names, int64_t num_layers, const char *name)
{
    int64_t layer = cb_name_index_find(&names->with_blobs, name, strlen(name));
    if (layer < 0)
        layer = cb_name_index_find(&names->index, name, strlen(name));
    if (layer < 0 && names->repaired != NULL)
        layer = cb_name_index_find(&names->repaired_index, name, strlen(name));
    if (layer >= 0)
        return layer;
    const char *at = strrchr(name, '@');
    if (at == NULL || at[1] == '\0')
        return -1;
    char *end;
    const long long index = strtoll(at + 1, &end, 10);
    if (*end != '\0' || index < 0 || index >= num_layers)
        return -1;
    return layer_named(names, index, name, (size_t)(at - name)) ? index : -1;
}

