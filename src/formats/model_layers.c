/* SPDX-License-Identifier: BSD-2-Clause */
/* Net structure: bottoms, tops, phase, rules and param specs of a layer, from its index. */
#include "model_layers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "caffe_fields.h"
#include "status.h"
#include "walk.h"
#include "wire.h"

/* ---- a layer's fields -------------------------------------------------------------------------- */

cblob_status cb_layer_bytes_without_blobs(const cb_layer *layer, uint8_t **out, size_t *out_size)
{
    cb_sink sink;
    cb_sink_count(&sink);
    CB_TRY(cb_layer_emit(layer, NULL, NULL, &sink));
    const size_t size = (size_t)sink.size;
    uint8_t *bytes = cb_malloc(size + 1);
    if (bytes == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for layer %s's %zu bytes", layer->name, size);
    cb_sink_buffer(&sink, bytes, size);
    const cblob_status status = cb_layer_emit(layer, NULL, NULL, &sink);
    if (status != CBLOB_OK) {
        free(bytes);
        return status;
    }
    *out = bytes;
    *out_size = size;
    return CBLOB_OK;
}

/* Calls visit for each field of a message (fields were checked when the file was read, or are kept
 * bytes a malformed run of which ends the walk: nothing in them is reported). */
typedef void field_visit(void *context, const cb_wire *wire, const cb_wire_field *field);

static void for_each_field(const uint8_t *bytes, size_t size, field_visit *visit, void *context)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_wire wire = cb_wire_begin(bytes, size, NULL);
    cb_wire_field field;
    while (cb_wire_next(&wire, &field) == CBLOB_OK && !cb_wire_at_end(&field))
        visit(context, &wire, &field);
    cb_error_restore(&saved);
}

/* Whether a nested message is well formed (a malformed rule or param spec is kept as bytes, and
 * is no rule or param spec: it was never one to Caffe either). */
static bool well_formed(const uint8_t *bytes, size_t size)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_wire wire = cb_wire_begin(bytes, size, NULL);
    cb_wire_field field;
    cblob_status status;
    do
        status = cb_wire_next(&wire, &field);
    while (status == CBLOB_OK && !cb_wire_at_end(&field));
    cb_error_restore(&saved);
    return status == CBLOB_OK;
}

static bool is_text(const cb_wire_field *field)
{
    return field->type == CB_WIRE_LENGTH;
}

static bool is_message(const cb_wire *wire, const cb_wire_field *field)
{
    return field->type == CB_WIRE_LENGTH && well_formed(wire->input + field->payload, field->length);
}

static float fixed32_float(const uint8_t *bytes)
{
    float value;
    memcpy(&value, bytes, sizeof value);
    return value;
}

/* ---- the index: counted, then filled -------------------------------------------------------------- */

/* Where the index's parts go, and how much of each was counted or filled. */
typedef struct indexer {
    bool v1;
    bool fill;            /* false: count only */
    cb_layer_index *index;
    char *texts;          /* fill: where the next text goes */
    size_t text_bytes;    /* count: the texts' bytes */
    int64_t stages;       /* count: stages and not_stages of every rule */
    const char **stage_at; /* fill: where the next rule's stages go */
    int64_t lrs, decays;  /* V1 */
} indexer;

static const char *add_text(indexer *x, const cb_wire *wire, const cb_wire_field *field)
{
    const char *bytes = (const char *)wire->input + field->payload;
    const size_t length = strnlen(bytes, field->length);
    if (!x->fill) {
        x->text_bytes += length + 1;
        return NULL;
    }
    char *text = x->texts;
    memcpy(text, bytes, length);
    text[length] = '\0';
    x->texts += length + 1;
    return text;
}

typedef struct rule_walk {
    indexer *x;
    cb_rule *rule;
    bool placing; /* the first of a filling's two walks: counts the stages to place their arrays */
} rule_walk;

static void rule_field(void *context, const cb_wire *wire, const cb_wire_field *field)
{
    rule_walk *w = context;
    cb_rule *rule = w->rule;
    if (field->type == CB_WIRE_VARINT && field->number == CB_RULE_PHASE)
        rule->phase = (cblob_phase)(int32_t)(uint32_t)field->varint;
    else if (field->type == CB_WIRE_VARINT && field->number == CB_RULE_MIN_LEVEL)
        rule->min_level = (int32_t)(uint32_t)field->varint;
    else if (field->type == CB_WIRE_VARINT && field->number == CB_RULE_MAX_LEVEL)
        rule->max_level = (int32_t)(uint32_t)field->varint;
    else if (is_text(field) && (field->number == CB_RULE_STAGE || field->number == CB_RULE_NOT_STAGE)) {
        const bool not_stage = field->number == CB_RULE_NOT_STAGE;
        int64_t *count = not_stage ? &rule->num_not_stages : &rule->num_stages;
        if (!w->placing) {
            const char *text = add_text(w->x, wire, field); /* counting: its bytes */
            if (w->x->fill)
                (not_stage ? rule->not_stages : rule->stages)[*count] = text;
        }
        ++*count;
    }
}

static void add_rule(indexer *x, const cb_wire *wire, const cb_wire_field *field, int kind)
{
    cb_layer_index *index = x->index;
    const int64_t at = index->num_rules[kind]++;
    if (!x->fill) {
        cb_rule scratch = {0};
        rule_walk w = {x, &scratch, false};
        for_each_field(wire->input + field->payload, field->length, rule_field, &w);
        x->stages += scratch.num_stages + scratch.num_not_stages;
        return;
    }
    cb_rule *rule = &index->rules[kind][at];
    *rule = (cb_rule){.phase = CBLOB_PHASE_NONE, .min_level = INT32_MIN, .max_level = INT32_MAX,
                      .bytes = wire->input + field->payload, .length = field->length};
    rule_walk w = {x, rule, true};
    for_each_field(rule->bytes, rule->length, rule_field, &w);
    rule->stages = x->stage_at;
    rule->not_stages = x->stage_at + rule->num_stages;
    x->stage_at += rule->num_stages + rule->num_not_stages;
    rule->num_stages = rule->num_not_stages = 0;
    w.placing = false;
    for_each_field(rule->bytes, rule->length, rule_field, &w);
}

static void spec_field(void *context, const cb_wire *wire, const cb_wire_field *field)
{
    indexer *x = ((void **)context)[0];
    cb_param_spec *spec = ((void **)context)[1];
    if (field->number == CB_SPEC_NAME && is_text(field)) {
        const char *name = add_text(x, wire, field);
        if (spec != NULL)
            spec->name = name;
    } else if ((field->number == CB_SPEC_LR_MULT || field->number == CB_SPEC_DECAY_MULT) &&
               field->type == CB_WIRE_FIXED32 && spec != NULL) {
        *(field->number == CB_SPEC_LR_MULT ? &spec->lr_mult : &spec->decay_mult) =
            fixed32_float(wire->input + field->payload);
    }
}

static void add_spec(indexer *x, const cb_wire *wire, const cb_wire_field *field)
{
    cb_layer_index *index = x->index;
    const int64_t at = index->num_specs++;
    cb_param_spec *spec = NULL;
    if (x->fill) {
        spec = &index->specs[at];
        *spec = (cb_param_spec){.lr_mult = 1.0f, .decay_mult = 1.0f, .bytes = wire->input + field->payload,
                                .length = field->length};
    }
    void *context[2] = {x, spec};
    for_each_field(wire->input + field->payload, field->length, spec_field, context);
}

/* V1: the floats of blobs_lr or weight_decay (unpacked or packed), by position. */
static void add_v1_floats(indexer *x, const cb_wire *wire, const cb_wire_field *field, bool lr)
{
    const bool packed = field->type == CB_WIRE_LENGTH;
    const size_t count = packed ? field->length / 4 : 1;
    int64_t *seen = lr ? &x->lrs : &x->decays;
    for (size_t i = 0; i < count; ++i, ++*seen) {
        if (!x->fill)
            continue;
        cb_param_spec *spec = &x->index->specs[*seen];
        *(lr ? &spec->lr_mult : &spec->decay_mult) = fixed32_float(wire->input + field->payload + 4 * i);
    }
}

/* A field of one of the layer's lists, as the walk marks it (a field of the wrong wire type, or a
 * malformed rule or spec, is kept as bytes and is in no list: Caffe would not read it either). */
static void list_field(indexer *x, const cb_wire *wire, const cb_wire_field *field, cb_layer_list list)
{
    cb_layer_index *index = x->index;
    switch (list) {
    case CB_LIST_BOTTOM:
    case CB_LIST_TOP: {
        if (!is_text(field))
            return;
        const char *text = add_text(x, wire, field);
        int64_t *count = list == CB_LIST_BOTTOM ? &index->num_bottoms : &index->num_tops;
        if (x->fill)
            (list == CB_LIST_BOTTOM ? index->bottoms : index->tops)[*count] = text;
        ++*count;
        return;
    }
    case CB_LIST_INCLUDE:
    case CB_LIST_EXCLUDE:
        if (is_message(wire, field))
            add_rule(x, wire, field, list == CB_LIST_INCLUDE ? CBLOB_RULE_INCLUDE : CBLOB_RULE_EXCLUDE);
        return;
    case CB_LIST_PARAM_SPEC:
        if (is_message(wire, field))
            add_spec(x, wire, field);
        return;
    case CB_LIST_PHASE:
        if (field->type == CB_WIRE_VARINT)
            index->phase = (cblob_phase)(int32_t)(uint32_t)field->varint;
        return;
    case CB_LIST_PARAM_NAME:
        if (is_text(field)) {
            const char *text = add_text(x, wire, field);
            if (x->fill)
                index->specs[index->num_param_names].name = text;
            ++index->num_param_names;
        }
        return;
    case CB_LIST_BLOBS_LR:
    case CB_LIST_WEIGHT_DECAY:
        if (field->type == CB_WIRE_FIXED32 || field->type == CB_WIRE_LENGTH)
            add_v1_floats(x, wire, field, list == CB_LIST_BLOBS_LR);
        return;
    }
}

typedef struct index_walk {
    indexer *x;
    cb_wire wire; /* over the layer's bytes, for the fields the walk reports */
} index_walk;

static cblob_status index_item(void *context, const cb_walk_item *item)
{
    index_walk *walk = context;
    if (item->kind == CB_WALK_LAYER_LIST)
        list_field(walk->x, &walk->wire, item->field, item->list);
    return CBLOB_OK;
}

/* The layer's lists, as the walk marks them in its bytes (its field as the model keeps it). */
static cblob_status walk_layer(indexer *x, const uint8_t *bytes, size_t size)
{
    index_walk walk = {x, cb_wire_begin(bytes, size, NULL)};
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    x->index->phase = CBLOB_PHASE_NONE;
    return cb_walk_layer(&source, x->v1 ? CBLOB_NET_FORMAT_V1 : CBLOB_NET_FORMAT_V2, index_item, &walk);
}

static size_t round_up(size_t size)
{
    return (size + 7) & ~(size_t)7;
}

static cblob_status make_index(const cb_layer *layer, bool v1, cb_layer_index **out)
{
    uint8_t *bytes = NULL;
    size_t size = 0;
    CB_TRY(cb_layer_bytes_without_blobs(layer, &bytes, &size));
    cb_layer_index counted = {0};
    indexer x = {.v1 = v1, .index = &counted};
    cblob_status status = walk_layer(&x, bytes, size);
    if (status != CBLOB_OK) {
        free(bytes);
        return status;
    }
    if (v1) {
        int64_t specs = counted.num_param_names > x.lrs ? counted.num_param_names : x.lrs;
        counted.num_specs = specs > x.decays ? specs : x.decays;
    }
    /* One block: the index, its arrays, the texts, then the layer's bytes (rules and specs point
     * into them). */
    const size_t pointers = (size_t)(counted.num_bottoms + counted.num_tops + x.stages) * sizeof(char *);
    const size_t rules = (size_t)(counted.num_rules[0] + counted.num_rules[1]) * sizeof(cb_rule);
    const size_t specs = (size_t)counted.num_specs * sizeof(cb_param_spec);
    const size_t total = round_up(sizeof(cb_layer_index)) + round_up(pointers) + round_up(rules) + round_up(specs) +
                         round_up(x.text_bytes) + size;
    uint8_t *block = cb_malloc(total);
    if (block == NULL) {
        free(bytes);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to index layer %s (%zu bytes)", layer->name, total);
    }
    cb_layer_index *index = (cb_layer_index *)block;
    uint8_t *at = block + round_up(sizeof *index);
    *index = (cb_layer_index){0};
    index->bottoms = (const char **)at;
    index->tops = index->bottoms + counted.num_bottoms;
    const char **stages = index->tops + counted.num_tops;
    at += round_up(pointers);
    index->rules[0] = (cb_rule *)at;
    index->rules[1] = index->rules[0] + counted.num_rules[0];
    at += round_up(rules);
    index->specs = (cb_param_spec *)at;
    for (int64_t i = 0; i < counted.num_specs; ++i)
        index->specs[i] = (cb_param_spec){.lr_mult = 1.0f, .decay_mult = 1.0f};
    at += round_up(specs);
    char *texts = (char *)at;
    at += round_up(x.text_bytes);
    memcpy(at, bytes, size);
    free(bytes);
    x = (indexer){.v1 = v1, .fill = true, .index = index, .texts = texts, .stage_at = stages};
    status = walk_layer(&x, at, size);
    if (status != CBLOB_OK) {
        free(block);
        return status;
    }
    index->num_specs = counted.num_specs;
    index->bytes = at;
    index->size = size;
    *out = index;
    return CBLOB_OK;
}

/* The model's table of indexes, made (or grown, for layers added since) on first use. */
static cblob_status index_table(cblob_model *model)
{
    if (model->num_indexes >= model->num_layers)
        return CBLOB_OK;
    cb_layer_index **grown = cb_realloc(model->indexes, (size_t)model->num_layers * sizeof *grown);
    if (grown == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to index %" PRId64 " layers", model->num_layers);
    memset(grown + model->num_indexes, 0, (size_t)(model->num_layers - model->num_indexes) * sizeof *grown);
    model->indexes = grown;
    model->num_indexes = model->num_layers;
    return CBLOB_OK;
}

cblob_status cb_model_layer_index(const cblob_model *model, int64_t layer, const cb_layer_index **out)
{
    const cb_layer *found = NULL;
    CB_TRY(cb_model_layer(model, layer, &found));
    cblob_model *writable = (cblob_model *)model; /* the index is a cache of the layer's bytes */
    cb_model_lock(model);
    cblob_status status = index_table(writable);
    if (status == CBLOB_OK && model->indexes[layer] == NULL)
        status = make_index(found, model->format == CBLOB_NET_FORMAT_V1, &writable->indexes[layer]);
    const cb_layer_index *index = status == CBLOB_OK ? model->indexes[layer] : NULL;
    cb_model_unlock(model);
    CB_TRY(status);
    *out = index;
    return CBLOB_OK;
}

/* ---- the public calls --------------------------------------------------------------------------- */

static cblob_status out_of_range(const char *what, int64_t index, int64_t count, int64_t layer)
{
    return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%s %" PRId64 " is outside [0, %" PRId64 ") for layer %" PRId64, what, index,
                   count, layer);
}

CBLOB_API cblob_status cblob_model_layer_num_bottoms(const cblob_model *model, int64_t layer, int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_count);
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    *out_count = index->num_bottoms;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_bottom(const cblob_model *model, int64_t layer, int64_t index,
                                                const char **out_name)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    const cb_layer_index *found = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &found));
    if (index < 0 || index >= found->num_bottoms)
        return out_of_range("bottom", index, found->num_bottoms, layer);
    *out_name = found->bottoms[index];
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_num_tops(const cblob_model *model, int64_t layer, int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_count);
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    *out_count = index->num_tops;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_top(const cblob_model *model, int64_t layer, int64_t index,
                                             const char **out_name)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    const cb_layer_index *found = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &found));
    if (index < 0 || index >= found->num_tops)
        return out_of_range("top", index, found->num_tops, layer);
    *out_name = found->tops[index];
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_phase(const cblob_model *model, int64_t layer, cblob_phase *out_phase)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_phase);
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    *out_phase = index->phase;
    return CBLOB_OK;
}

static cblob_status check_kind(cblob_rule_kind kind)
{
    if (kind != CBLOB_RULE_INCLUDE && kind != CBLOB_RULE_EXCLUDE)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "kind %d is neither CBLOB_RULE_INCLUDE (0) nor CBLOB_RULE_EXCLUDE (1)", (int)kind);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_num_rules(const cblob_model *model, int64_t layer, cblob_rule_kind kind,
                                                   int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_kind(kind));
    CB_REQUIRE(out_count);
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    *out_count = index->num_rules[kind];
    return CBLOB_OK;
}

/* Rule `rule` of a kind, or CBLOB_ERR_OUT_OF_RANGE. */
static cblob_status find_rule(const cblob_model *model, int64_t layer, cblob_rule_kind kind, int64_t rule,
                              const cb_rule **out)
{
    if (rule < 0)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "rule %" PRId64 " is negative", rule);
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    if (rule >= index->num_rules[kind])
        return out_of_range("rule", rule, index->num_rules[kind], layer);
    *out = &index->rules[kind][rule];
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_rule(const cblob_model *model, int64_t layer, cblob_rule_kind kind,
                                              int64_t index, cblob_phase *out_phase, int32_t *out_min_level,
                                              int32_t *out_max_level, int64_t *out_num_stages,
                                              int64_t *out_num_not_stages)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_kind(kind));
    CB_REQUIRE(out_phase);
    CB_REQUIRE(out_min_level);
    CB_REQUIRE(out_max_level);
    CB_REQUIRE(out_num_stages);
    CB_REQUIRE(out_num_not_stages);
    const cb_rule *rule = NULL;
    CB_TRY(find_rule(model, layer, kind, index, &rule));
    *out_phase = rule->phase;
    *out_min_level = rule->min_level;
    *out_max_level = rule->max_level;
    *out_num_stages = rule->num_stages;
    *out_num_not_stages = rule->num_not_stages;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_rule_stage(const cblob_model *model, int64_t layer, cblob_rule_kind kind,
                                                    int64_t rule, int32_t not_stage, int64_t index,
                                                    const char **out_stage)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_kind(kind));
    CB_TRY(cb_check_bool("not_stage", not_stage));
    CB_REQUIRE(out_stage);
    if (rule < 0 || index < 0)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "rule %" PRId64 ", stage %" PRId64 ": negative", rule, index);
    const cb_rule *found = NULL;
    CB_TRY(find_rule(model, layer, kind, rule, &found));
    const int64_t count = not_stage ? found->num_not_stages : found->num_stages;
    if (index >= count)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%s %" PRId64 " is outside [0, %" PRId64 ") for rule %" PRId64,
                       not_stage ? "not_stage" : "stage", index, count, rule);
    *out_stage = (not_stage ? found->not_stages : found->stages)[index];
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_num_param_specs(const cblob_model *model, int64_t layer, int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_count);
    const cb_layer_index *index = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &index));
    *out_count = index->num_specs;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_param_spec(const cblob_model *model, int64_t layer, int64_t index,
                                                    const char **out_name, float *out_lr_mult, float *out_decay_mult)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    CB_REQUIRE(out_lr_mult);
    CB_REQUIRE(out_decay_mult);
    if (index < 0)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "param spec %" PRId64 " is negative", index);
    const cb_layer_index *found = NULL;
    CB_TRY(cb_model_layer_index(model, layer, &found));
    if (index >= found->num_specs)
        return out_of_range("param spec", index, found->num_specs, layer);
    *out_name = found->specs[index].name;
    *out_lr_mult = found->specs[index].lr_mult;
    *out_decay_mult = found->specs[index].decay_mult;
    return CBLOB_OK;
}
