/* SPDX-License-Identifier: BSD-2-Clause */
/* Net structure: bottoms, tops, phase, rules and param specs of a layer, read from its record;
 * blobs read without handles; and net surgery (replacing blobs' values). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_layers.h"
#include "neoml/neoml.h"
#include "proto_blob.h"
#include "status.h"
#include "utf8.h"

/* ---- walking fields ------------------------------------------------------------------------- */

static bool visit_bytes(const cb_op *op, cb_field_visit *visit, void *context)
{
    cb_wire wire = cb_wire_begin(op->bytes, op->size, NULL);
    for (;;) {
        cb_wire_field field;
        if (cb_wire_next(&wire, &field) != CBLOB_OK || field.number == 0)
            return true; /* kept bytes were read whole when the model was opened */
        const cb_layer_field out = {.number = field.number, .type = field.type, .varint = field.varint,
                                    .payload = op->bytes + field.payload, .length = field.length};
        if (!visit(context, &out))
            return false;
    }
}

void cb_for_each_field(const uint8_t *ops, cb_field_visit *visit, void *context)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    for (const uint8_t *cursor = ops;;) {
        cb_op op;
        cb_op_read(&cursor, false, &op);
        if (op.code == CB_OP_END)
            break;
        bool more = true;
        if (op.code == CB_OP_BYTES) {
            more = visit_bytes(&op, visit, context);
        } else {
            const cb_layer_field field = {.number = op.field, .type = CB_WIRE_LENGTH,
                                          .payload = op.code == CB_OP_TEXT ? op.bytes : NULL,
                                          .length = op.code == CB_OP_TEXT ? op.size : (size_t)op.original, .op = &op};
            more = visit(context, &field);
        }
        if (!more)
            break;
    }
    cb_error_restore(&saved);
}

void cb_record_layer(const uint8_t *record, cb_op *out)
{
    for (const uint8_t *cursor = cb_record_ops(record);;) {
        cb_op_read(&cursor, false, out);
        if (out->code == CB_OP_MESSAGE || out->code == CB_OP_END)
            return;
    }
}

static bool is_v1(const cblob_model *model)
{
    return model->format == CBLOB_NET_FORMAT_V1;
}

/* ---- texts: bottoms, tops, stages ----------------------------------------------------------- */

typedef struct text_search {
    uint32_t number;
    int64_t wanted; /* the index looked for; -1: count only */
    int64_t seen;
    const char *found;
} text_search;

static bool find_text(void *context, const cb_layer_field *field)
{
    text_search *search = context;
    if (field->number != search->number || field->op == NULL || field->op->code != CB_OP_TEXT)
        return true;
    if (search->seen++ == search->wanted) {
        search->found = (const char *)field->op->bytes;
        return false;
    }
    return true;
}

static cblob_status layer_texts(const cblob_model *model, int64_t layer, uint32_t number, int64_t index,
                                const char *what, const char **out_text, int64_t *out_count)
{
    const uint8_t *record;
    CB_TRY(cb_model_record(model, layer, &record));
    cb_op message;
    cb_record_layer(record, &message);
    text_search search = {.number = number, .wanted = out_text != NULL ? index : -1};
    if (message.code == CB_OP_MESSAGE && (out_text == NULL || index >= 0))
        cb_for_each_field(message.inner, find_text, &search);
    if (out_text == NULL) {
        *out_count = search.seen;
        return CBLOB_OK;
    }
    if (search.found == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%s %" PRId64 " is outside [0, %" PRId64 ") for layer %" PRId64, what,
                       index, search.seen, layer);
    *out_text = search.found;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_num_bottoms(const cblob_model *model, int64_t layer, int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_count);
    return layer_texts(model, layer, is_v1(model) ? 2 : 3, 0, "bottom", NULL, out_count);
}

CBLOB_API cblob_status cblob_model_layer_bottom(const cblob_model *model, int64_t layer, int64_t index,
                                                const char **out_name)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    return layer_texts(model, layer, is_v1(model) ? 2 : 3, index, "bottom", out_name, NULL);
}

CBLOB_API cblob_status cblob_model_layer_num_tops(const cblob_model *model, int64_t layer, int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_count);
    return layer_texts(model, layer, is_v1(model) ? 3 : 4, 0, "top", NULL, out_count);
}

CBLOB_API cblob_status cblob_model_layer_top(const cblob_model *model, int64_t layer, int64_t index,
                                             const char **out_name)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_name);
    return layer_texts(model, layer, is_v1(model) ? 3 : 4, index, "top", out_name, NULL);
}

/* ---- phase ------------------------------------------------------------------------------------ */

static bool find_phase(void *context, const cb_layer_field *field)
{
    if (field->number == 10 && field->type == CB_WIRE_VARINT)
        *(cblob_phase *)context = (cblob_phase)(int32_t)(uint32_t)field->varint;
    return true;
}

cblob_phase cb_record_phase(const cblob_model *model, const uint8_t *record)
{
    cblob_phase phase = CBLOB_PHASE_NONE;
    cb_op message;
    cb_record_layer(record, &message);
    if (!is_v1(model) && message.code == CB_OP_MESSAGE)
        cb_for_each_field(message.inner, find_phase, &phase);
    return phase;
}

CBLOB_API cblob_status cblob_model_layer_phase(const cblob_model *model, int64_t layer, cblob_phase *out_phase)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_phase);
    const uint8_t *record;
    CB_TRY(cb_model_record(model, layer, &record));
    *out_phase = cb_record_phase(model, record);
    return CBLOB_OK;
}

/* ---- rules ------------------------------------------------------------------------------------ */

static cblob_status check_kind(cblob_rule_kind kind)
{
    if (kind != CBLOB_RULE_INCLUDE && kind != CBLOB_RULE_EXCLUDE)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "kind %d is neither CBLOB_RULE_INCLUDE (0) nor CBLOB_RULE_EXCLUDE (1)", (int)kind);
    return CBLOB_OK;
}

typedef struct message_search {
    uint32_t number;
    int64_t wanted;
    int64_t seen;
    cb_op found;
} message_search;

static bool find_message(void *context, const cb_layer_field *field)
{
    message_search *search = context;
    if (field->number != search->number || field->op == NULL || field->op->code != CB_OP_MESSAGE)
        return true;
    if (search->seen++ == search->wanted) {
        search->found = *field->op;
        return false;
    }
    return true;
}

/* The index-th nested message of a field number in a layer (index -1: count them). */
static cblob_status layer_message(const cblob_model *model, int64_t layer, uint32_t number, int64_t index,
                                  const char *what, message_search *out)
{
    const uint8_t *record;
    CB_TRY(cb_model_record(model, layer, &record));
    cb_op message;
    cb_record_layer(record, &message);
    *out = (message_search){.number = number, .wanted = index};
    if (message.code == CB_OP_MESSAGE)
        cb_for_each_field(message.inner, find_message, out);
    if (index >= 0 && out->seen <= index)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%s %" PRId64 " is outside [0, %" PRId64 ") for layer %" PRId64, what,
                       index, out->seen, layer);
    if (index < -1)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%s %" PRId64 " is negative", what, index);
    return CBLOB_OK;
}

static uint32_t rule_field(const cblob_model *model, cblob_rule_kind kind)
{
    return (is_v1(model) ? 32 : 8) + (kind == CBLOB_RULE_EXCLUDE);
}

CBLOB_API cblob_status cblob_model_layer_num_rules(const cblob_model *model, int64_t layer, cblob_rule_kind kind,
                                                   int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_kind(kind));
    CB_REQUIRE(out_count);
    message_search search;
    CB_TRY(layer_message(model, layer, rule_field(model, kind), -1, "rule", &search));
    *out_count = search.seen;
    return CBLOB_OK;
}

typedef struct rule_facts {
    cblob_phase phase;
    int32_t min_level, max_level;
    int64_t stages, not_stages;
} rule_facts;

static bool read_rule(void *context, const cb_layer_field *field)
{
    rule_facts *rule = context;
    if (field->type == CB_WIRE_VARINT && field->number == 1)
        rule->phase = (cblob_phase)(int32_t)(uint32_t)field->varint;
    else if (field->type == CB_WIRE_VARINT && field->number == 2)
        rule->min_level = (int32_t)(uint32_t)field->varint;
    else if (field->type == CB_WIRE_VARINT && field->number == 3)
        rule->max_level = (int32_t)(uint32_t)field->varint;
    else if (field->op != NULL && field->op->code == CB_OP_TEXT)
        *(field->number == 4 ? &rule->stages : &rule->not_stages) += 1;
    return true;
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
    if (index < 0)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "rule %" PRId64 " is negative", index);
    message_search search;
    CB_TRY(layer_message(model, layer, rule_field(model, kind), index, "rule", &search));
    rule_facts rule = {.phase = CBLOB_PHASE_NONE, .min_level = INT32_MIN, .max_level = INT32_MAX};
    cb_for_each_field(search.found.inner, read_rule, &rule);
    *out_phase = rule.phase;
    *out_min_level = rule.min_level;
    *out_max_level = rule.max_level;
    *out_num_stages = rule.stages;
    *out_num_not_stages = rule.not_stages;
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
    message_search search;
    CB_TRY(layer_message(model, layer, rule_field(model, kind), rule, "rule", &search));
    text_search texts = {.number = not_stage ? 5 : 4, .wanted = index};
    cb_for_each_field(search.found.inner, find_text, &texts);
    if (texts.found == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%s %" PRId64 " is outside [0, %" PRId64 ") for rule %" PRId64,
                       not_stage ? "not_stage" : "stage", index, texts.seen, rule);
    *out_stage = texts.found;
    return CBLOB_OK;
}

/* ---- param specs ------------------------------------------------------------------------------ */

typedef struct param_spec {
    const char *name;
    float lr_mult, decay_mult;
} param_spec;

static float fixed32_float(const uint8_t *bytes)
{
    float value;
    memcpy(&value, bytes, sizeof value);
    return value;
}

static bool read_param_spec(void *context, const cb_layer_field *field)
{
    param_spec *spec = context;
    if (field->number == 1 && field->op != NULL && field->op->code == CB_OP_TEXT)
        spec->name = (const char *)field->op->bytes;
    else if ((field->number == 3 || field->number == 4) && field->type == CB_WIRE_FIXED32)
        *(field->number == 3 ? &spec->lr_mult : &spec->decay_mult) = fixed32_float(field->payload);
    return true;
}

/* V1: param names (1001), blobs_lr (7) and weight_decay (8), paired by position. */
typedef struct v1_specs {
    int64_t wanted;
    int64_t names, lrs, decays;
    param_spec spec;
} v1_specs;

static void v1_floats(v1_specs *specs, const cb_layer_field *field, int64_t *seen, float *slot)
{
    const bool packed = field->type == CB_WIRE_LENGTH;
    const size_t count = packed ? field->length / 4 : 1;
    for (size_t i = 0; i < count; ++i, ++*seen)
        if (*seen == specs->wanted)
            *slot = fixed32_float(field->payload + 4 * i);
}

static bool read_v1_specs(void *context, const cb_layer_field *field)
{
    v1_specs *specs = context;
    if (field->number == 1001 && field->op != NULL && field->op->code == CB_OP_TEXT) {
        if (specs->names++ == specs->wanted)
            specs->spec.name = (const char *)field->op->bytes;
    } else if ((field->number == 7 || field->number == 8) &&
               (field->type == CB_WIRE_FIXED32 || (field->type == CB_WIRE_LENGTH && field->op == NULL))) {
        v1_floats(specs, field, field->number == 7 ? &specs->lrs : &specs->decays,
                  field->number == 7 ? &specs->spec.lr_mult : &specs->spec.decay_mult);
    }
    return true;
}

static cblob_status layer_param_spec(const cblob_model *model, int64_t layer, int64_t index, int64_t *out_count,
                                     param_spec *out)
{
    const param_spec defaults = {.name = NULL, .lr_mult = 1.0f, .decay_mult = 1.0f};
    int64_t count = 0;
    param_spec spec = defaults;
    if (is_v1(model)) {
        const uint8_t *record;
        CB_TRY(cb_model_record(model, layer, &record));
        cb_op message;
        cb_record_layer(record, &message);
        v1_specs specs = {.wanted = index, .spec = defaults};
        if (message.code == CB_OP_MESSAGE)
            cb_for_each_field(message.inner, read_v1_specs, &specs);
        count = specs.names > specs.lrs ? specs.names : specs.lrs;
        count = count > specs.decays ? count : specs.decays;
        spec = specs.spec;
    } else {
        message_search search;
        CB_TRY(layer_message(model, layer, 6, index >= 0 ? -1 : -1, "param spec", &search));
        count = search.seen;
        if (index >= 0 && index < count) {
            CB_TRY(layer_message(model, layer, 6, index, "param spec", &search));
            cb_for_each_field(search.found.inner, read_param_spec, &spec);
        }
    }
    if (index >= 0 && index >= count)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "param spec %" PRId64 " is outside [0, %" PRId64 ") for layer %" PRId64,
                       index, count, layer);
    *out_count = count;
    *out = spec;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_num_param_specs(const cblob_model *model, int64_t layer, int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_count);
    param_spec spec;
    return layer_param_spec(model, layer, -1, out_count, &spec);
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
    int64_t count = 0;
    param_spec spec;
    CB_TRY(layer_param_spec(model, layer, index, &count, &spec));
    *out_name = spec.name;
    *out_lr_mult = spec.lr_mult;
    *out_decay_mult = spec.decay_mult;
    return CBLOB_OK;
}

/* ---- blobs without handles -------------------------------------------------------------------- */

CBLOB_API cblob_status cblob_model_layer_blob_shape(const cblob_model *model, int64_t layer, int64_t index,
                                                    int32_t max_axes, int64_t *out_shape, int32_t *out_num_axes)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_num_axes);
    if (max_axes < 0 || (max_axes > 0 && out_shape == NULL))
        return cb_fail(max_axes < 0 ? CBLOB_ERR_OUT_OF_RANGE : CBLOB_ERR_INVALID_ARGUMENT,
                       "out_shape is %s with room for %d axes", out_shape == NULL ? "NULL" : "given", (int)max_axes);
    cb_blob_facts facts;
    CB_TRY(cb_model_blob_facts(model, layer, index, &facts));
    if (out_shape != NULL || max_axes > 0) {
        if (facts.num_axes > max_axes)
            return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "out_shape has room for %d axes, the blob has %d", (int)max_axes,
                           (int)facts.num_axes);
        memcpy(out_shape, facts.dims, (size_t)facts.num_axes * sizeof *out_shape);
    }
    *out_num_axes = facts.num_axes;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_blob_dtype(const cblob_model *model, int64_t layer, int64_t index,
                                                    cblob_dtype *out_dtype)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_dtype);
    cb_blob_facts facts;
    CB_TRY(cb_model_blob_facts(model, layer, index, &facts));
    *out_dtype = facts.dtype;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_blob_has_diff(const cblob_model *model, int64_t layer, int64_t index,
                                                       int32_t *out_has_diff)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_has_diff);
    cb_blob_facts facts;
    CB_TRY(cb_model_blob_facts(model, layer, index, &facts));
    *out_has_diff = facts.has_diff;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_layer_blob_read(const cblob_model *model, int64_t layer, int64_t index,
                                                   cblob_part part, int64_t start, int64_t count, void *buffer,
                                                   size_t buffer_size)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(cb_check_part(part));
    CB_REQUIRE(buffer);
    cb_blob_facts facts;
    CB_TRY(cb_model_blob_facts(model, layer, index, &facts));
    if (start < 0 || count < 0 || start > facts.count || count > facts.count - start)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "%" PRId64 " elements from %" PRId64 " are outside the blob's %" PRId64,
                       count, start, facts.count);
    const size_t element = cb_dtype_find(facts.dtype)->size;
    if ((uint64_t)count > buffer_size / element)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "a %zu-byte buffer cannot hold %" PRId64 " elements of %zu bytes",
                       buffer_size, count, element);
    return cb_model_blob_read(model, layer, index, part, start, count, buffer);
}

/* ---- keys -------------------------------------------------------------------------------------- */

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
        out->names[i] = cb_record_name(model->layers[i]);
    cblob_status status = cb_name_index_make(out->names, model->num_layers, &out->index);
    if (status == CBLOB_OK)
        status = cb_name_index_init(out->names, model->num_layers, false, &out->with_blobs);
    for (int64_t i = 0; status == CBLOB_OK && i < model->num_layers; ++i)
        if (cb_record_num_blobs(model->layers[i]) > 0)
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

/* ---- net surgery ------------------------------------------------------------------------------ */

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

/* The model's blobs the weights give no values, listed as mismatches (CBLOB_REPLACE_ALL). */
static int64_t count_kept(const cblob_model *model, const cblob_model *weights, const int64_t *targets, bool list,
                          char *message, size_t size, size_t *used, int64_t *mismatches)
{
    int64_t kept = 0;
    for (int64_t layer = 0; layer < model->num_layers; ++layer) {
        int64_t covered = 0;
        for (int64_t i = 0; i < weights->num_layers; ++i)
            if (targets[i] == layer && cb_record_num_blobs(weights->layers[i]) > covered)
                covered = cb_record_num_blobs(weights->layers[i]);
        for (int64_t j = covered; j < cb_record_num_blobs(model->layers[layer]); ++j) {
            ++kept;
            if (list)
                note(message, size, used, "%s%.64s blob %" PRId64 ": no values in the weights",
                     (*mismatches)++ ? "; " : "", cb_record_name(model->layers[layer]), j);
        }
    }
    return kept;
}

/* For each layer with blobs, the next layer with blobs of the same name (-1: none), found by
 * sorting the layers by (name, index): a net given as weights names its repeated layers as the
 * model does, and the k-th of a name is the model's k-th. */
static _Thread_local const cblob_model *sorting; /* qsort takes no context */

static int by_name_then_index(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    const int names = strcmp(cb_record_name(sorting->layers[x]), cb_record_name(sorting->layers[y]));
    return names != 0 ? names : (x > y) - (x < y);
}

static cblob_status next_of_same_name(const cblob_model *model, int64_t **out)
{
    int64_t *next = malloc(((size_t)model->num_layers + 1) * sizeof *next);
    int64_t *order = malloc(((size_t)model->num_layers + 1) * sizeof *order);
    if (next == NULL || order == NULL) {
        free(next);
        free(order);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to tell %" PRId64 " layer names apart", model->num_layers);
    }
    int64_t count = 0;
    for (int64_t i = 0; i < model->num_layers; ++i) {
        next[i] = -1;
        if (cb_record_num_blobs(model->layers[i]) > 0)
            order[count++] = i;
    }
    sorting = model;
    qsort(order, (size_t)count, sizeof *order, by_name_then_index);
    for (int64_t k = 0; k + 1 < count; ++k)
        if (strcmp(cb_record_name(model->layers[order[k]]), cb_record_name(model->layers[order[k + 1]])) == 0)
            next[order[k]] = order[k + 1];
    free(order);
    *out = next;
    return CBLOB_OK;
}

/* One weights layer's blobs against its target's: the index and the shape of each. */
static cblob_status check_layer(const cblob_model *model, const cblob_model *weights, int64_t i, int64_t target,
                                char *message, size_t size, size_t *used, int64_t *mismatches)
{
    const char *name = cb_record_name(weights->layers[i]);
    if (target < 0) {
        note(message, size, used, "%slayer \"%.64s\" is not in the model", (*mismatches)++ ? "; " : "", name);
        return CBLOB_OK;
    }
    const int64_t have = cb_record_num_blobs(model->layers[target]);
    for (int64_t j = 0; j < cb_record_num_blobs(weights->layers[i]); ++j) {
        cb_blob_facts want, got;
        CB_TRY(cb_model_blob_facts(weights, i, j, &got));
        if (j >= have) {
            note(message, size, used, "%s%.64s blob %" PRId64 ": the layer has %" PRId64 " blobs",
                 (*mismatches)++ ? "; " : "", name, j, have);
            continue;
        }
        CB_TRY(cb_model_blob_facts(model, target, j, &want));
        cb_shape a = {.num_axes = want.num_axes}, b = {.num_axes = got.num_axes};
        memcpy(a.dims, want.dims, sizeof a.dims);
        memcpy(b.dims, got.dims, sizeof b.dims);
        a.count = want.count, b.count = got.count;
        if (!cb_shape_equal(&a, &b) && !same_legacy_shape(&want, &got)) {
            char ta[CB_SHAPE_TEXT_MAX], tb[CB_SHAPE_TEXT_MAX];
            cb_shape_format(&a, ta, sizeof ta);
            cb_shape_format(&b, tb, sizeof tb);
            note(message, size, used, "%s%.64s blob %" PRId64 ": the model's is %s, the weights' %s",
                 (*mismatches)++ ? "; " : "", name, j, ta, tb);
        }
    }
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
    cblob_status status = next_of_same_name(model, &model_next);
    if (status == CBLOB_OK)
        status = next_of_same_name(weights, &weights_next);
    if (status != CBLOB_OK) {
        free(model_next);
        return status;
    }
    for (int64_t i = 0; i < weights->num_layers; ++i)
        targets[i] = -2; /* not found yet */
    for (int64_t i = 0; i < weights->num_layers; ++i) {
        const char *name = cb_record_name(weights->layers[i]);
        /* A later layer of a name the weights repeat: the model's next one of that name. */
        if (targets[i] == -2)
            targets[i] = cb_model_layer_for_key(names, model->num_layers, name);
        if (weights_next[i] >= 0)
            targets[weights_next[i]] = targets[i] >= 0 ? model_next[targets[i]] : -1;
        if (status == CBLOB_OK)
            status = check_layer(model, weights, i, targets[i], message, sizeof message, &used, &mismatches);
    }
    if (status != CBLOB_OK) {
        free(model_next);
        free(weights_next);
        return status;
    }
    free(model_next);
    free(weights_next);
    *kept = mismatches > 0 ? 0 : count_kept(model, weights, targets, require_all, message, sizeof message, &used,
                                            &mismatches);
    if (mismatches > 0)
        return cb_fail(CBLOB_ERR_SHAPE, "%" PRId64 " mismatch%s, nothing replaced: %s", mismatches,
                       mismatches > 1 ? "es" : "", message);
    return CBLOB_OK;
}

/* Copies one part of a weights blob into a model blob's handle, converting the dtype. */
static cblob_status copy_part(const cblob_model *weights, int64_t layer, int64_t index, cblob_part part,
                              cblob_blob *target)
{
    cb_blob_facts facts;
    CB_TRY(cb_model_blob_facts(weights, layer, index, &facts));
    const size_t element = cb_dtype_find(facts.dtype)->size;
    void *values = malloc(facts.count > 0 ? (size_t)facts.count * element : 1);
    if (values == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " values", facts.count);
    void *host = NULL;
    cblob_status status = cb_model_blob_read(weights, layer, index, part, 0, facts.count, values);
    if (status == CBLOB_OK)
        status = cb_blob_host(target, part, true, &host);
    if (status == CBLOB_OK)
        status = cb_convert_elements(&cb_host_device, cb_dtype_find(facts.dtype), target->dtype, facts.count, values, host);
    free(values);
    return status;
}

static cblob_status replace_blobs(cblob_model *model, const cblob_model *weights, int32_t flags, int64_t *out_kept)
{
    int64_t kept = 0;
    int64_t *targets = malloc(((size_t)weights->num_layers + 1) * sizeof *targets);
    if (targets == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", weights->num_layers);
    cb_model_names names;
    cblob_status status = cb_model_names_make(model, &names);
    if (status == CBLOB_OK) {
        status = check_replacements(model, &names, weights, flags & CBLOB_REPLACE_ALL, targets, &kept);
        cb_model_names_free(&names);
    }
    /* Handles first, so that nothing is half replaced when memory runs out. */
    for (int64_t i = 0; status == CBLOB_OK && i < weights->num_layers; ++i)
        for (int64_t j = 0; status == CBLOB_OK && j < cb_record_num_blobs(weights->layers[i]); ++j) {
            cblob_blob *target;
            status = cb_model_blob_handle(model, targets[i], j, &target);
        }
    for (int64_t i = 0; status == CBLOB_OK && i < weights->num_layers; ++i)
        for (int64_t j = 0; status == CBLOB_OK && j < cb_record_num_blobs(weights->layers[i]); ++j) {
            cblob_blob *target;
            cb_blob_facts facts;
            status = cb_model_blob_handle(model, targets[i], j, &target);
            if (status == CBLOB_OK)
                status = copy_part(weights, i, j, CBLOB_PART_DATA, target);
            if (status == CBLOB_OK)
                status = cb_model_blob_facts(weights, i, j, &facts);
            if (status == CBLOB_OK && facts.has_diff)
                status = copy_part(weights, i, j, CBLOB_PART_DIFF, target);
        }
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
