/* SPDX-License-Identifier: BSD-2-Clause */
/* A net definition with a model's trained weights attached by layer name, as Caffe's
 * Net::CopyTrainedLayersFrom copies them (BVLC src/caffe/net.cpp): each layer of the weights finds
 * the first layer of the definition with its name; one the definition lacks is ignored ("Ignoring
 * source layer x"); a found one must have as many blobs as the target, each of a shape ShapeEquals
 * takes, else Caffe stops ("Cannot copy param j weights from layer 'x'; shape mismatch. ...").
 *
 * Caffe's target blobs come from layer setup, which cblob does not run: a definition read from a
 * prototxt has no blobs. Such a layer is held to what its parameters fix without the input's shape
 * (InnerProduct, Convolution and Deconvolution: the blob count from bias_term, num_output's axis
 * and the bias's length); a definition layer that has blobs (a .caffemodel given as definition) is
 * held to them as Caffe holds a target.
 *
 * The result is made as bytes (the definition's top and layers, each layer holding its source's
 * blobs written as Caffe's ToProto writes them) and read back as a model, so that it is a model like
 * any other: saved, it is those bytes. Nothing of either input changes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "caffe_fields.h"
#include "caffe_params.pb-c.h"
#include "model_layers.h"
#include "model_open.h"
#include "model_values.h"
#include "name_index.h"
#include "proto_blob.h"
#include "status.h"
#include "varint.h"
#include "wire.h"

/* ---- matching layers by name ------------------------------------------------------------------ */

/* The first position of each name among a model's layers. */
typedef struct layer_names {
    const char **names;
    cb_name_index index;
} layer_names;

static cblob_status layer_names_make(const cblob_model *model, layer_names *out)
{
    *out = (layer_names){0};
    out->names = cb_malloc(((size_t)model->num_layers + 1) * sizeof *out->names);
    if (out->names == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layer names", model->num_layers);
    for (int64_t i = 0; i < model->num_layers; ++i)
        out->names[i] = model->layers[i].name;
    const cblob_status status = cb_name_index_make(out->names, model->num_layers, &out->index);
    if (status != CBLOB_OK) {
        free(out->names);
        out->names = NULL;
    }
    return status;
}

static void layer_names_free(layer_names *names)
{
    if (names->names != NULL)
        cb_name_index_free(&names->index);
    free(names->names);
    *names = (layer_names){0};
}

static int64_t layer_named(const layer_names *names, const char *name)
{
    return cb_name_index_find(&names->index, name, strlen(name));
}

/* ---- what a definition layer's parameters fix ------------------------------------------------ */

/* The blobs a layer with parameters of one of these types must get, where a definition layer has
 * none: `known` false for every other type. */
typedef struct param_rule {
    bool known;
    const char *type;
    int64_t num_blobs;      /* 1 + bias_term */
    int64_t num_output;
    int64_t output_factor;  /* Deconvolution: group (its weights hold num_output / group on axis 1) */
    int output_axis;        /* of the weights: 0 or 1 from the front, or -1, -2 from the back */
} param_rule;

/* The last value of a varint field `name` of a message's bytes (wire order: the last wins, as
 * protobuf merges), else its default. */
static uint64_t param_value(const ProtobufCMessageDescriptor *message, const uint8_t *bytes, size_t size,
                            const char *name)
{
    const ProtobufCFieldDescriptor *field = protobuf_c_message_descriptor_get_field_by_name(message, name);
    uint64_t value = 0;
    if (field->default_value != NULL)
        value = field->type == PROTOBUF_C_TYPE_BOOL ? (uint64_t)(*(const protobuf_c_boolean *)field->default_value != 0)
                                                    : (uint64_t)*(const uint32_t *)field->default_value;
    cb_wire wire = cb_wire_begin(bytes, size, NULL);
    cb_wire_field f;
    while (cb_wire_next(&wire, &f) == CBLOB_OK && !cb_wire_at_end(&f))
        if (f.number == field->id && f.type == CB_WIRE_VARINT)
            value = f.varint;
    return value;
}

/* The merged bytes of a layer's parameter message `name` (all of its occurrences, one after the
 * other: protobuf merges them so). */
static cblob_status param_bytes(const uint8_t *layer, size_t size, const ProtobufCMessageDescriptor *fields,
                                const char *name, cb_bytes *out)
{
    const ProtobufCFieldDescriptor *field = protobuf_c_message_descriptor_get_field_by_name(fields, name);
    cb_wire wire = cb_wire_begin(layer, size, NULL);
    cb_wire_field f;
    cb_saved_error saved;
    cb_error_save(&saved);
    while (cb_wire_next(&wire, &f) == CBLOB_OK && !cb_wire_at_end(&f))
        if (f.number == field->id && f.type == CB_WIRE_LENGTH)
            CB_TRY(cb_bytes_append(out, layer + f.payload, f.length));
    cb_error_restore(&saved); /* the layer's bytes were checked when it was read */
    return CBLOB_OK;
}

static cblob_status rule_of(const cblob_model *model, const cb_layer *layer, param_rule *rule)
{
    *rule = (param_rule){0};
    const bool v1 = model->format == CBLOB_NET_FORMAT_V1;
    const char *type = layer->type;
    bool inner = false, deconvolution = false;
    if (strcmp(type, v1 ? "INNER_PRODUCT" : "InnerProduct") == 0)
        inner = true;
    else if (strcmp(type, v1 ? "DECONVOLUTION" : "Deconvolution") == 0)
        deconvolution = true;
    else if (strcmp(type, v1 ? "CONVOLUTION" : "Convolution") != 0)
        return CBLOB_OK;
    uint8_t *bytes = NULL;
    size_t size = 0;
    CB_TRY(cb_layer_bytes_without_blobs(layer, &bytes, &size));
    /* The fields after the layer's tag and length. */
    uint64_t value = 0;
    size_t tag = 0, length = 0;
    cb_varint_decode(bytes, size, &value, &tag);
    cb_varint_decode(bytes + tag, size - tag, &value, &length);
    const ProtobufCMessageDescriptor *fields =
        v1 ? &caffe__v1_layer_parameter_fields__descriptor : &caffe__layer_parameter_fields__descriptor;
    const ProtobufCMessageDescriptor *message =
        inner ? &caffe__inner_product_parameter__descriptor : &caffe__convolution_parameter__descriptor;
    cb_bytes params = {0};
    cblob_status status = param_bytes(bytes + tag + length, size - tag - length, fields,
                                      inner ? "inner_product_param" : "convolution_param", &params);
    free(bytes);
    if (status != CBLOB_OK) {
        cb_bytes_free(&params);
        return status;
    }
    const uint8_t *p = params.size > 0 ? params.data : (const uint8_t *)"";
    rule->known = true;
    rule->type = inner ? "InnerProduct" : deconvolution ? "Deconvolution" : "Convolution";
    rule->num_blobs = param_value(message, p, params.size, "bias_term") ? 2 : 1;
    rule->num_output = (int64_t)(uint32_t)param_value(message, p, params.size, "num_output");
    rule->output_factor = 1;
    if (inner)
        rule->output_axis = param_value(message, p, params.size, "transpose") ? -1 : -2;
    else if (deconvolution) {
        rule->output_axis = 1;
        rule->output_factor = (int64_t)(uint32_t)param_value(message, p, params.size, "group");
    }
    cb_bytes_free(&params);
    return CBLOB_OK;
}

/* ---- Caffe's checks --------------------------------------------------------------------------- */

static void shape_text(const cb_blob_facts *facts, char text[CB_SHAPE_TEXT_MAX])
{
    cb_shape shape;
    cb_facts_shape(facts, &shape);
    cb_shape_format(&shape, text, CB_SHAPE_TEXT_MAX);
}

/* A weights layer's blobs against a definition layer with blobs: Caffe's CHECKs. */
static cblob_status check_against_blobs(const cblob_model *definition, int64_t target, const cblob_model *weights,
                                        int64_t source)
{
    const cb_layer *d = &definition->layers[target], *w = &weights->layers[source];
    if (d->num_blobs != w->num_blobs)
        return cb_fail(CBLOB_ERR_SHAPE, "Incompatible number of blobs for layer %.64s: the definition's has %u, the "
                       "weights' %u; nothing attached", w->name, d->num_blobs, w->num_blobs);
    for (int64_t j = 0; j < (int64_t)w->num_blobs; ++j) {
        cb_blob_facts want, got;
        CB_TRY(cb_model_blob_facts(definition, target, j, &want));
        CB_TRY(cb_model_blob_facts(weights, source, j, &got));
        if (!cb_facts_shape_equals(&want, &got)) {
            char a[CB_SHAPE_TEXT_MAX], b[CB_SHAPE_TEXT_MAX];
            shape_text(&got, a);
            shape_text(&want, b);
            return cb_fail(CBLOB_ERR_SHAPE, "Cannot copy param %" PRId64 " weights from layer '%.64s'; shape mismatch. "
                           "Source param shape is %s; target param shape is %s; nothing attached", j, w->name, a, b);
        }
    }
    return CBLOB_OK;
}

/* A weights layer's blobs against what a definition layer without blobs fixes. */
static cblob_status check_against_rule(const param_rule *rule, const cblob_model *weights, int64_t source)
{
    const cb_layer *w = &weights->layers[source];
    if ((int64_t)w->num_blobs != rule->num_blobs)
        return cb_fail(CBLOB_ERR_SHAPE, "Incompatible number of blobs for layer %.64s: the definition's %s layer takes %"
                       PRId64 " (bias_term %s), the weights have %u; nothing attached", w->name, rule->type,
                       rule->num_blobs, rule->num_blobs == 2 ? "true" : "false", w->num_blobs);
    for (int64_t j = 0; j < rule->num_blobs; ++j) {
        cb_blob_facts got;
        CB_TRY(cb_model_blob_facts(weights, source, j, &got));
        int64_t have = 0;
        const char *where = "its length";
        if (j == 1) {
            have = got.count;
        } else {
            const int axis = rule->output_axis < 0 ? got.num_axes + rule->output_axis : rule->output_axis;
            if (axis < 0 || axis >= got.num_axes) {
                have = -1;
            } else {
                have = got.dims[axis] * rule->output_factor;
                where = rule->output_axis == -2 ? "its axis -2" : rule->output_axis == -1 ? "its last axis"
                      : rule->output_axis == 0 ? "its axis 0" : "its axis 1 times group";
            }
        }
        if (have != rule->num_output) {
            char a[CB_SHAPE_TEXT_MAX];
            shape_text(&got, a);
            return cb_fail(CBLOB_ERR_SHAPE, "Cannot copy param %" PRId64 " weights from layer '%.64s'; shape mismatch. "
                           "Source param shape is %s; the definition's %s layer has num_output %" PRId64 ", which %s "
                           "must be; nothing attached", j, w->name, a, rule->type, rule->num_output,
                           have < 0 ? "the weights have no axis for" : where);
        }
    }
    return CBLOB_OK;
}

/* ---- the plan --------------------------------------------------------------------------------- */

typedef struct attach_plan {
    const cblob_model *definition, *weights;
    int64_t *source; /* per definition layer: the weights layer whose blobs it gets, or -1 */
} attach_plan;

static cblob_status plan_attach(const cblob_model *definition, const cblob_model *weights, attach_plan *plan)
{
    *plan = (attach_plan){.definition = definition, .weights = weights};
    for (int64_t i = 0; i < definition->num_layers; ++i)
        if (definition->layers[i].num_frames > 0)
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "the definition's layer %" PRId64 " (%.64s) holds a V0 layer: "
                           "upgrade the definition first", i, definition->layers[i].name);
    plan->source = cb_malloc(((size_t)definition->num_layers + 1) * sizeof *plan->source);
    if (plan->source == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers", definition->num_layers);
    for (int64_t i = 0; i < definition->num_layers; ++i)
        plan->source[i] = -1;
    layer_names names;
    cblob_status status = layer_names_make(definition, &names);
    /* Caffe's order: each source layer in turn, every one checked, a later one of a name
     * overwriting an earlier one's copy. */
    for (int64_t i = 0; status == CBLOB_OK && i < weights->num_layers; ++i) {
        const int64_t target = layer_named(&names, weights->layers[i].name);
        if (target < 0)
            continue;
        if (definition->layers[target].num_blobs > 0) {
            status = check_against_blobs(definition, target, weights, i);
        } else {
            param_rule rule;
            status = rule_of(definition, &definition->layers[target], &rule);
            if (status == CBLOB_OK && rule.known)
                status = check_against_rule(&rule, weights, i);
        }
        plan->source[target] = i;
    }
    layer_names_free(&names);
    if (status != CBLOB_OK) {
        free(plan->source);
        plan->source = NULL;
    }
    return status;
}

/* ---- the bytes -------------------------------------------------------------------------------- */

/* A weights blob as a field of the definition's layers: its tag, length and BlobProto, as Caffe's
 * ToProto writes it (its diff where it has one). */
typedef struct blob_field {
    cb_blob_message message;
    size_t size; /* of the BlobProto */
} blob_field;

static cblob_status blob_field_make(const cblob_model *weights, int64_t layer, int64_t index, blob_field *out)
{
    cb_blob_facts facts;
    cblob_blob *handle = NULL;
    CB_TRY(cb_model_blob_facts(weights, layer, index, &facts));
    CB_TRY(cb_model_blob_handle(weights, layer, index, &handle));
    char what[160];
    snprintf(what, sizeof what, "the weights' layer %" PRId64 " (%.64s) blob %" PRId64, layer,
             weights->layers[layer].name, index);
    CB_TRY(cb_blob_message_init(&out->message, handle, facts.has_diff, what));
    out->size = protobuf_c_message_get_packed_size(&out->message.proto.base);
    return CBLOB_OK;
}

static uint32_t blobs_field(const cblob_model *definition)
{
    return definition->format == CBLOB_NET_FORMAT_V1 ? CB_V1_BLOBS : CB_LAYER_BLOBS;
}

static void write_blob_field(uint32_t number, blob_field *field, cb_sink *sink)
{
    uint8_t head[2 * CB_VARINT_MAX_BYTES];
    size_t n = cb_varint_encode(head, (uint64_t)number << 3 | CB_WIRE_LENGTH);
    n += cb_varint_encode(head + n, field->size);
    cb_sink_write(sink, head, n);
    protobuf_c_message_pack_to_buffer(&field->message.proto.base, &sink->base);
}

static uint64_t blob_field_size(uint32_t number, const blob_field *field)
{
    uint8_t head[2 * CB_VARINT_MAX_BYTES];
    return cb_varint_encode(head, (uint64_t)number << 3 | CB_WIRE_LENGTH) + cb_varint_encode(head, field->size) +
           field->size;
}

/* A definition layer with blobs writes its source's in their places. */
typedef struct source_writer {
    const attach_plan *plan;
    int64_t source;
} source_writer;

static cblob_status write_source_blob(void *context, int64_t index, const cb_model_blob *blob, cb_sink *sink)
{
    (void)blob;
    const source_writer *s = context;
    blob_field field;
    CB_TRY(blob_field_make(s->plan->weights, s->source, index, &field));
    write_blob_field(blobs_field(s->plan->definition), &field, sink);
    cb_blob_message_clear(&field.message);
    return sink->status;
}

/* A definition layer without blobs: its field with the source's blobs after its own fields. */
static cblob_status write_with_blobs(const attach_plan *plan, int64_t layer, int64_t source, cb_sink *sink)
{
    const uint32_t number = blobs_field(plan->definition);
    const cb_layer *w = &plan->weights->layers[source];
    uint8_t *bytes = NULL;
    size_t size = 0;
    CB_TRY(cb_layer_bytes_without_blobs(&plan->definition->layers[layer], &bytes, &size));
    uint64_t value = 0, blobs = 0;
    size_t tag = 0, length = 0;
    cb_varint_decode(bytes, size, &value, &tag);
    cb_varint_decode(bytes + tag, size - tag, &value, &length);
    cblob_status status = CBLOB_OK;
    for (int64_t j = 0; status == CBLOB_OK && j < (int64_t)w->num_blobs; ++j) {
        blob_field field;
        if ((status = blob_field_make(plan->weights, source, j, &field)) == CBLOB_OK) {
            blobs += blob_field_size(number, &field);
            cb_blob_message_clear(&field.message);
        }
    }
    if (status == CBLOB_OK) {
        uint8_t encoded[CB_VARINT_MAX_BYTES];
        cb_sink_write(sink, bytes, tag);
        cb_sink_write(sink, encoded, cb_varint_encode(encoded, size - tag - length + blobs));
        cb_sink_write(sink, bytes + tag + length, size - tag - length);
    }
    free(bytes);
    for (int64_t j = 0; status == CBLOB_OK && j < (int64_t)w->num_blobs; ++j) {
        blob_field field;
        if ((status = blob_field_make(plan->weights, source, j, &field)) == CBLOB_OK) {
            write_blob_field(number, &field, sink);
            cb_blob_message_clear(&field.message);
        }
    }
    return status != CBLOB_OK ? status : sink->status;
}

static cblob_status write_attached(const attach_plan *plan, cb_sink *sink)
{
    const cblob_model *definition = plan->definition;
    size_t top = 0;
    for (int64_t i = 0; i < definition->num_layers; ++i) {
        const cb_layer *layer = &definition->layers[i];
        cb_model_emit_top(definition, top, layer->lead_end, sink);
        top = layer->lead_end;
        const int64_t source = plan->source[i];
        if (source < 0) {
            CB_TRY(cb_model_emit_layer(definition, i, true, sink));
        } else if (layer->num_blobs > 0) {
            source_writer s = {.plan = plan, .source = source};
            CB_TRY(cb_layer_emit(layer, write_source_blob, &s, sink));
        } else {
            CB_TRY(write_with_blobs(plan, i, source, sink));
        }
    }
    cb_model_emit_top(definition, top, definition->top.size, sink);
    return sink->status;
}

static cblob_status attach(const cblob_model *definition, const cblob_model *weights, cblob_model **out_model)
{
    attach_plan plan;
    /* In one order whatever the arguments' (two attaches the other way round must not deadlock). */
    const cblob_model *first = (uintptr_t)definition < (uintptr_t)weights ? definition : weights;
    const cblob_model *second = first == definition ? weights : definition;
    cb_model_lock(first);
    cb_model_lock(second);
    cblob_status status = plan_attach(definition, weights, &plan);
    if (status == CBLOB_OK)
        status = cb_model_load_all(definition);
    cb_sink counter;
    cb_sink_count(&counter);
    if (status == CBLOB_OK)
        status = write_attached(&plan, &counter);
    if (status == CBLOB_OK && counter.size > CB_PROTO_MAX_MESSAGE)
        status = cb_fail(CBLOB_ERR_OVERFLOW, "the net with its weights would take %" PRIu64 " bytes, over protobuf's "
                         "2 GiB message limit (which Caffe enforces)", counter.size);
    uint8_t *bytes = NULL;
    if (status == CBLOB_OK && (bytes = cb_malloc((size_t)counter.size + 1)) == NULL)
        status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the net with its weights (%" PRIu64 " bytes)",
                         counter.size);
    if (status == CBLOB_OK) {
        cb_sink sink;
        cb_sink_buffer(&sink, bytes, (size_t)counter.size);
        status = write_attached(&plan, &sink);
    }
    cb_model_unlock(second);
    cb_model_unlock(first);
    if (status == CBLOB_OK)
        status = cb_model_build(definition->context, bytes, (size_t)counter.size, NULL, out_model);
    free(bytes);
    free(plan.source);
    return status;
}

CBLOB_API cblob_status cblob_model_attach_weights(const cblob_model *definition, const cblob_model *weights,
                                                  cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(definition);
    CB_REQUIRE(weights);
    CB_REQUIRE(out_model);
    cb_context_use_threads(definition->context);
    return attach(definition, weights, out_model);
}

/* ---- what is left out ------------------------------------------------------------------------- */

CBLOB_API cblob_status cblob_model_attach_unmatched(const cblob_model *definition, const cblob_model *weights,
                                                    cblob_attach_list which, int64_t *out_layers, int64_t max_layers,
                                                    int64_t *out_count)
{
    CB_ENTER();
    CB_REQUIRE(definition);
    CB_REQUIRE(weights);
    if (which != CBLOB_ATTACH_IGNORED && which != CBLOB_ATTACH_UNFILLED)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "list %d is neither CBLOB_ATTACH_IGNORED (0) nor "
                       "CBLOB_ATTACH_UNFILLED (1)", (int)which);
    CB_REQUIRE(out_count);
    if (max_layers < 0 || (max_layers > 0 && out_layers == NULL))
        return cb_fail(max_layers < 0 ? CBLOB_ERR_OUT_OF_RANGE : CBLOB_ERR_INVALID_ARGUMENT,
                       "out_layers has room for %" PRId64 " layers", max_layers);
    /* Ignored: the weights' layers whose name the definition lacks; unfilled: the reverse. */
    const cblob_model *listed = which == CBLOB_ATTACH_IGNORED ? weights : definition;
    const cblob_model *other = which == CBLOB_ATTACH_IGNORED ? definition : weights;
    layer_names names;
    CB_TRY(layer_names_make(other, &names));
    int64_t count = 0;
    for (int64_t i = 0; i < listed->num_layers; ++i)
        if (layer_named(&names, listed->layers[i].name) < 0)
            ++count;
    cblob_status status = CBLOB_OK;
    if (out_layers != NULL && count > max_layers)
        status = cb_fail(CBLOB_ERR_OUT_OF_RANGE, "out_layers has room for %" PRId64 " of %" PRId64 " layers",
                         max_layers, count);
    if (status == CBLOB_OK && out_layers != NULL)
        for (int64_t i = 0, k = 0; i < listed->num_layers; ++i)
            if (layer_named(&names, listed->layers[i].name) < 0)
                out_layers[k++] = i;
    layer_names_free(&names);
    if (status == CBLOB_OK)
        *out_count = count;
    return status;
}
