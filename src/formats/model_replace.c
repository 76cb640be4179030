/* SPDX-License-Identifier: BSD-2-Clause */
/* Net surgery: replacing a model's blobs' values with those of weights read back (an export, a
 * fine-tuned net), matched by layer name or key. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model_names.h"
#include "npy.h"
#include "model_values.h"
#include "neoml/neoml.h"
#include "status.h"

/* Appends "; <text>" to the message being gathered (at most its size). */
static void note(char *message, size_t size, size_t *used, const char *format, ...) __attribute__((format(printf, 4, 5)));
static void note(char *message, size_t size, size_t *used, const char *format, ...)
{
    if (*used >= size)
        return;
    va_list args;
    va_start(args, format);
    const int n = vsnprintf(message + *used, size - *used, format, args);
    va_end(args);
    if (n > 0)
        *used = *used + (size_t)n < size ? *used + (size_t)n : size;
}

/* Shapes Caffe's ShapeEquals takes for one another: equal, or, for shapes of at most 4 axes,
 * equal once each is padded to 4 axes with leading 1s (a V1 or legacy blob's num, channels,
 * height, width against PyTorch's (64, 1024) or (64,)). */
static bool same_legacy_shape(const cb_blob_facts *a, const cb_blob_facts *b)
{
    if (a->num_axes > 4 || b->num_axes > 4)
        return false;
    for (int32_t i = 1; i <= 4; ++i) {
        const int64_t x = i <= a->num_axes ? a->dims[a->num_axes - i] : 1, y = i <= b->num_axes ? b->dims[b->num_axes - i] : 1;
        if (x != y)
            return false;
    }
    return true;
}

void cb_facts_shape(const cb_blob_facts *facts, cb_shape *out)
{
    *out = (cb_shape){.num_axes = facts->num_axes, .count = facts->count};
    memcpy(out->dims, facts->dims, sizeof out->dims);
}

bool cb_facts_shape_equals(const cb_blob_facts *a, const cb_blob_facts *b)
{
    cb_shape x, y;
    cb_facts_shape(a, &x);
    cb_facts_shape(b, &y);
    return cb_shape_equal(&x, &y) || same_legacy_shape(a, b);
}

/* The model's blobs the weights give no values, listed as mismatches (CBLOB_REPLACE_ALL). */
static cblob_status count_kept(const cblob_model *model, const cblob_model *weights, const int64_t *targets,
                               bool list, char *message, size_t size, size_t *used, int64_t *mismatches,
                               int64_t *kept)
{
    /* How many of each layer's blobs the weights cover: one pass over the weights (a layer may be
     * targeted by more than one of them: by name and by key). */
    uint32_t *covered = cb_calloc((size_t)model->num_layers + 1, sizeof *covered);
    if (covered == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", model->num_layers);
    for (int64_t i = 0; i < weights->num_layers; ++i)
        if (weights->layers[i].num_blobs > covered[targets[i]])
            covered[targets[i]] = weights->layers[i].num_blobs;
    *kept = 0;
    for (int64_t layer = 0; layer < model->num_layers; ++layer)
        for (int64_t j = covered[layer]; j < (int64_t)model->layers[layer].num_blobs; ++j) {
            ++*kept;
            if (list)
                note(message, size, used, "%s%.64s blob %" PRId64 ": no values in the weights",
                     (*mismatches)++ ? "; " : "", model->layers[layer].name, j);
        }
    free(covered);
    return CBLOB_OK;
}

/* For each layer with blobs, the next layer with blobs of the same name (-1: none), found by
 * sorting the layers by (name, index): a net given as weights names its repeated layers as the
 * model does, and the k-th of a name is the model's k-th. */
static _Thread_local const cblob_model *sorting; /* qsort takes no context */

static int by_name_then_index(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    const int names = strcmp(sorting->layers[x].name, sorting->layers[y].name);
    return names != 0 ? names : (x > y) - (x < y);
}

static cblob_status next_of_same_name(const cblob_model *model, int64_t **out)
{
    int64_t *next = cb_malloc(((size_t)model->num_layers + 1) * sizeof *next);
    int64_t *order = cb_malloc(((size_t)model->num_layers + 1) * sizeof *order);
    if (next == NULL || order == NULL) {
        free(next);
        free(order);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to tell %" PRId64 " layer names apart", model->num_layers);
    }
    int64_t count = 0;
    for (int64_t i = 0; i < model->num_layers; ++i) {
        next[i] = -1;
        if (model->layers[i].num_blobs > 0)
            order[count++] = i;
    }
    sorting = model;
    qsort(order, (size_t)count, sizeof *order, by_name_then_index);
    for (int64_t k = 0; k + 1 < count; ++k)
        if (strcmp(model->layers[order[k]].name, model->layers[order[k + 1]].name) == 0)
            next[order[k]] = order[k + 1];
    free(order);
    *out = next;
    return CBLOB_OK;
}

/* Every weights blob's target, checked: the layer, the index and the shape; and the model's blobs
 * that would keep their values. */
static cblob_status check_replacements(const cblob_model *model, const cb_model_names *names,
                                       const cblob_model *weights, bool require_all, int64_t *targets, int64_t *kept)
{
    char message[2048] = "";
    size_t used = 0;
    int64_t mismatches = 0;
    int64_t *model_next = NULL, *weights_next = NULL;
    CB_TRY(next_of_same_name(model, &model_next));
    cblob_status status = next_of_same_name(weights, &weights_next);
    if (status != CBLOB_OK) {
        free(model_next);
        return status;
    }
    for (int64_t i = 0; i < weights->num_layers; ++i)
        targets[i] = -2; /* not found yet */
    for (int64_t i = 0; i < weights->num_layers && status == CBLOB_OK; ++i) {
        const char *name = weights->layers[i].name;
        /* A later layer of a name the weights repeat: the model's next one of that name. */
        if (targets[i] == -2)
            targets[i] = cb_model_layer_for_key(names, model->num_layers, name);
        if (weights_next[i] >= 0)
            targets[weights_next[i]] = targets[i] >= 0 ? model_next[targets[i]] : -1;
        if (targets[i] < 0) {
            note(message, sizeof message, &used, "%slayer \"%.64s\" is not in the model", mismatches++ ? "; " : "", name);
            continue;
        }
        const int64_t have = (int64_t)model->layers[targets[i]].num_blobs;
        for (int64_t j = 0; j < (int64_t)weights->layers[i].num_blobs && status == CBLOB_OK; ++j) {
            cb_blob_facts want, got;
            if ((status = cb_model_blob_facts(weights, i, j, &got)) != CBLOB_OK)
                break;
            if (j >= have) {
                note(message, sizeof message, &used, "%s%.64s blob %" PRId64 ": the layer has %" PRId64 " blobs",
                     mismatches++ ? "; " : "", name, j, have);
                continue;
            }
            if ((status = cb_model_blob_facts(model, targets[i], j, &want)) != CBLOB_OK)
                break;
            if (!cb_facts_shape_equals(&want, &got)) {
                cb_shape a, b;
                cb_facts_shape(&want, &a);
                cb_facts_shape(&got, &b);
                char ta[CB_SHAPE_TEXT_MAX], tb[CB_SHAPE_TEXT_MAX];
                cb_shape_format(&a, ta, sizeof ta);
                cb_shape_format(&b, tb, sizeof tb);
                note(message, sizeof message, &used, "%s%.64s blob %" PRId64 ": the model's is %s, the weights' %s",
                     mismatches++ ? "; " : "", name, j, ta, tb);
            }
        }
    }
    free(model_next);
    free(weights_next);
    CB_TRY(status);
    *kept = 0;
    if (mismatches == 0)
        CB_TRY(count_kept(model, weights, targets, require_all, message, sizeof message, &used, &mismatches, kept));
    if (mismatches > 0)
        return cb_fail(CBLOB_ERR_SHAPE, "%" PRId64 " mismatch%s, nothing replaced: %s", mismatches,
                       mismatches > 1 ? "es" : "", message);
    return CBLOB_OK;
}

/* The largest part of a weights blob whose dtype is not its target's, in bytes: one scratch array
 * serves every conversion (parts of the target's dtype are read straight into place). */
static cblob_status largest_conversion(const cblob_model *model, const cblob_model *weights, const int64_t *targets,
                                       size_t *out)
{
    size_t most = 0;
    for (int64_t i = 0; i < weights->num_layers; ++i)
        for (int64_t j = 0; j < (int64_t)weights->layers[i].num_blobs; ++j) {
            cb_blob_facts facts, target;
            CB_TRY(cb_model_blob_facts(weights, i, j, &facts));
            CB_TRY(cb_model_blob_facts(model, targets[i], j, &target));
            const size_t bytes = (size_t)facts.count * cb_dtype_find(facts.dtype)->size;
            if (facts.dtype != target.dtype && bytes > most)
                most = bytes;
        }
    *out = most;
    return CBLOB_OK;
}

/* Before anything changes: each part a weights blob gives has its place in the target (its host
 * memory made now, so that copying allocates nothing), and every value converted to the model's
 * dtype fits it exactly (an integer) or within range (a float), as a .npy's conversion asks. */
static cblob_status prepare_part(const cblob_model *weights, int64_t layer, int64_t index, cblob_part part,
                                 cblob_blob *target, void *scratch)
{
    cb_blob_facts facts;
    CB_TRY(cb_model_blob_facts(weights, layer, index, &facts));
    void *host = NULL;
    CB_TRY(cb_blob_host(target, part, true, &host));
    if (facts.dtype == target->dtype->dtype)
        return CBLOB_OK;
    CB_TRY(cb_model_blob_read(weights, layer, index, part, 0, facts.count, scratch));
    double value = 0;
    const int64_t at = cb_npy_first_misfit(facts.dtype, scratch, facts.count, target->dtype->dtype, &value);
    if (at >= 0)
        return cb_fail(CBLOB_ERR_DTYPE, "layer \"%.64s\" blob %" PRId64 "%s: value %.17g at index %" PRId64
                       " does not fit the model's %s%s; nothing replaced", weights->layers[layer].name, index,
                       part == CBLOB_PART_DIFF ? " (diff)" : "", value, at, target->dtype->name,
                       cb_dtype_find(facts.dtype)->is_float ? "" : " exactly");
    return CBLOB_OK;
}

/* Copies one part of a weights blob into a model blob's handle: read straight into place, or into
 * scratch and converted (every value fits: prepare_part). */
static cblob_status copy_part(const cblob_model *weights, int64_t layer, int64_t index, cblob_part part,
                              cblob_blob *target, void *scratch)
{
    cb_blob_facts facts;
    CB_TRY(cb_model_blob_facts(weights, layer, index, &facts));
    void *host = NULL;
    CB_TRY(cb_blob_host(target, part, true, &host));
    if (facts.dtype == target->dtype->dtype)
        return cb_model_blob_read(weights, layer, index, part, 0, facts.count, host);
    CB_TRY(cb_model_blob_read(weights, layer, index, part, 0, facts.count, scratch));
    return cb_convert_elements(&cb_host_device, cb_dtype_find(facts.dtype), target->dtype, facts.count, scratch, host);
}

static cblob_status replace_blobs(cblob_model *model, const cblob_model *weights, int32_t flags, int64_t *out_kept)
{
    int64_t kept = 0;
    int64_t *targets = cb_malloc(((size_t)weights->num_layers + 1) * sizeof *targets);
    if (targets == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", weights->num_layers);
    cb_model_names names;
    cblob_status status = cb_model_names_make(model, &names);
    if (status == CBLOB_OK) {
        status = check_replacements(model, &names, weights, flags & CBLOB_REPLACE_ALL, targets, &kept);
        cb_model_names_free(&names);
    }
    /* Handles, scratch, target memory and the values' fit first, so that nothing is half
     * replaced when memory runs out or a value does not fit. */
    size_t scratch_bytes = 0;
    void *scratch = NULL;
    if (status == CBLOB_OK)
        status = largest_conversion(model, weights, targets, &scratch_bytes);
    if (status == CBLOB_OK && scratch_bytes > 0 && (scratch = cb_malloc(scratch_bytes)) == NULL)
        status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu bytes of values", scratch_bytes);
    for (int pass = 0; pass < 2; ++pass)
        for (int64_t i = 0; status == CBLOB_OK && i < weights->num_layers; ++i)
            for (int64_t j = 0; status == CBLOB_OK && j < (int64_t)weights->layers[i].num_blobs; ++j) {
                cblob_blob *target = NULL;
                cb_blob_facts facts;
                status = cb_model_blob_handle(model, targets[i], j, &target);
                if (status == CBLOB_OK)
                    status = cb_model_blob_facts(weights, i, j, &facts);
                for (int part = 0; status == CBLOB_OK && part < (facts.has_diff ? 2 : 1); ++part)
                    status = pass == 0 ? prepare_part(weights, i, j, (cblob_part)part, target, scratch)
                                       : copy_part(weights, i, j, (cblob_part)part, target, scratch);
            }
    cb_free(scratch);
    free(targets);
    if (status == CBLOB_OK && out_kept != NULL)
        *out_kept = kept;
    return status;
}

CBLOB_API cblob_status cblob_model_replace_blobs(cblob_model *model, const cblob_model *weights)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(weights);
    return replace_blobs(model, weights, 0, NULL);
}

CBLOB_API cblob_status cblob_model_replace_blobs_with(cblob_model *model, const cblob_model *weights, int32_t flags,
                                                      int64_t *out_kept)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(weights);
    if (flags & ~CBLOB_REPLACE_ALL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "flags 0x%x has bits other than CBLOB_REPLACE_ALL", (unsigned)flags);
    CB_REQUIRE(out_kept);
    return replace_blobs(model, weights, flags, out_kept);
}
