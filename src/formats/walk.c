/* SPDX-License-Identifier: BSD-2-Clause */
#include "walk.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caffe_fields.h"
#include "status.h"

/* ---- BlobProto: where its parts lie, and what its header says --------------------------------- */

/* Field numbers of the value fields, in cb_blob_values order. */
static const uint32_t value_numbers[CB_VALUES_FIELDS] = {CB_BLOB_DATA, CB_BLOB_DIFF, CB_BLOB_DOUBLE_DATA,
                                                         CB_BLOB_DOUBLE_DIFF};

uint32_t cb_blob_value_number(cb_blob_values which)
{
    return value_numbers[which];
}
static const char *const legacy_names[4] = {"num", "channels", "height", "width"};

bool cb_blob_value_is_double(cb_blob_values which)
{
    return which == CB_VALUES_DOUBLE_DATA || which == CB_VALUES_DOUBLE_DIFF;
}


bool cb_blob_layout_has_legacy(const cb_blob_layout *layout)
{
    return layout->legacy_present[0] || layout->legacy_present[1] || layout->legacy_present[2] ||
           layout->legacy_present[3];
}

/* Which of the four value fields a value field's number is. */
static cb_blob_values value_kind(uint32_t number)
{
    cb_blob_values which = CB_VALUES_DATA;
    while (value_numbers[which] != number)
        ++which;
    return which;
}

static void add_dim(cb_blob_layout *layout, int64_t dim)
{
    if (layout->num_dims < CBLOB_MAX_AXES)
        layout->dims[layout->num_dims] = dim;
    if (layout->num_dims <= CBLOB_MAX_AXES)
        ++layout->num_dims; /* one past the maximum is enough to report "too many" */
}

/* BlobShape: repeated int64 dim = 1, packed or not. A second shape field merges into the first,
 * as proto2 merges repeated occurrences of a message field. */
static cblob_status scan_shape(const cb_wire *outer, const cb_wire_field *field, cb_blob_layout *layout)
{
    CB_TRY(cb_wire_expect(outer, field, CB_WIRE_LENGTH, "BlobShape"));
    const cb_wire_path path = {.parent = outer->path, .message = &caffe__blob_shape__descriptor, .field = "shape",
                               .index = -1};
    cb_wire wire = cb_wire_nested(outer, field, &path);
    if (!layout->has_shape)
        layout->shape_offset = field->offset;
    layout->has_shape = true;
    for (;;) {
        cb_wire_field dim;
        CB_TRY(cb_wire_next(&wire, &dim));
        if (cb_wire_at_end(&dim))
            break;
        if (dim.number != CB_SHAPE_DIM)
            continue;
        CB_TRY(cb_wire_expect_repeated(&wire, &dim, CB_WIRE_VARINT, "int64"));
        if (dim.type == CB_WIRE_VARINT) {
            add_dim(layout, (int64_t)dim.varint);
            continue;
        }
        int64_t count;
        CB_TRY(cb_wire_count_elements(&wire, &dim, CB_WIRE_VARINT, &count));
        size_t pos = dim.payload;
        for (int64_t i = 0; i < count; ++i) {
            uint64_t value = 0;
            cb_wire_packed_varint(wire.input, &pos, dim.payload + dim.length, &value);
            add_dim(layout, (int64_t)value);
        }
    }
    layout->has_group = layout->has_group || wire.skipped_group;
    return CBLOB_OK;
}

static cblob_status scan_values(const cb_wire *wire, const cb_wire_field *field, cb_blob_values which,
                                cb_blob_layout *layout)
{
    const bool is_double = cb_blob_value_is_double(which);
    const int element_type = is_double ? CB_WIRE_FIXED64 : CB_WIRE_FIXED32;
    CB_TRY(cb_wire_expect_repeated(wire, field, element_type, is_double ? "double" : "float"));
    int64_t count;
    CB_TRY(cb_wire_count_elements(wire, field, element_type, &count));
    cb_blob_value_field *values = &layout->values[which];
    if (values->count == 0 && !values->unpacked)
        values->offset = field->offset;
    values->count += count;
    values->unpacked = values->unpacked || field->type != CB_WIRE_LENGTH;
    return CBLOB_OK;
}

cblob_status cb_blob_layout_scan(cb_wire wire, cb_blob_layout *layout)
{
    memset(layout, 0, sizeof *layout);
    layout->offset = wire.pos;
    layout->length = wire.end - wire.pos;
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (cb_wire_at_end(&field)) {
            layout->has_group = layout->has_group || wire.skipped_group;
            return CBLOB_OK;
        }
        if (cb_is_legacy_dim(field.number)) {
            CB_TRY(cb_wire_expect(&wire, &field, CB_WIRE_VARINT, "legacy dimension (int32)"));
            if (!cb_blob_layout_has_legacy(layout))
                layout->legacy_offset = field.offset;
            layout->legacy_present[field.number - CB_BLOB_NUM] = true;
            layout->legacy[field.number - CB_BLOB_NUM] = (int64_t)field.varint; /* proto2: the last one wins */
        } else if (cb_is_value_field(field.number)) {
            CB_TRY(scan_values(&wire, &field, value_kind(field.number), layout));
        } else if (field.number == CB_BLOB_SHAPE) {
            CB_TRY(scan_shape(&wire, &field, layout));
        } else {
            continue; /* unknown fields (Caffe forks add some) are skipped */
        }
        ++layout->known_fields;
    }
}


/* The values that count: double_data when non-empty, else data (and likewise for diff). */
cb_blob_values cb_blob_layout_data_field(const cb_blob_layout *layout)
{
    return layout->values[CB_VALUES_DOUBLE_DATA].count > 0 ? CB_VALUES_DOUBLE_DATA : CB_VALUES_DATA;
}

cb_blob_values cb_blob_layout_diff_field(const cb_blob_layout *layout)
{
    return layout->values[CB_VALUES_DOUBLE_DIFF].count > 0 ? CB_VALUES_DOUBLE_DIFF : CB_VALUES_DIFF;
}

cblob_dtype cb_blob_layout_dtype(const cb_blob_layout *layout)
{
    return cb_blob_layout_data_field(layout) == CB_VALUES_DOUBLE_DATA ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32;
}

static cblob_status fail_at(const cb_wire_path *path, uint32_t number, size_t offset, const char *text)
{
    const cb_wire_field field = {.number = number};
    return cb_wire_fail(path, &field, offset, "%s", text);
}

/* The dims the BlobProto asks for: its legacy dims as 4 axes (unset ones 0) when any is present,
 * else its shape (no shape: 0 axes, a scalar). */
static cblob_status layout_dims(const cb_blob_layout *layout, const cb_wire_path *path, int32_t *num_axes,
                                int64_t *dims)
{
    char text[160];
    if (cb_blob_layout_has_legacy(layout)) {
        for (int i = 0; i < 4; ++i) {
            if (layout->legacy[i] < 0) {
                snprintf(text, sizeof text, "%s is %" PRId64 "; dimensions cannot be negative", legacy_names[i],
                         layout->legacy[i]);
                return fail_at(path, CB_BLOB_NUM + (uint32_t)i, layout->legacy_offset, text);
            }
            dims[i] = layout->legacy[i];
        }
        *num_axes = 4;
        return CBLOB_OK;
    }
    if (layout->num_dims > CBLOB_MAX_AXES) {
        snprintf(text, sizeof text, "more than %d dims (a blob has at most %d axes)", CBLOB_MAX_AXES, CBLOB_MAX_AXES);
        return fail_at(path, CB_BLOB_SHAPE, layout->shape_offset, text);
    }
    for (int32_t i = 0; i < layout->num_dims; ++i) {
        if (layout->dims[i] < 0) {
            snprintf(text, sizeof text, "dim[%d] is %" PRId64 "; dimensions cannot be negative", (int)i,
                     layout->dims[i]);
            return fail_at(path, CB_BLOB_SHAPE, layout->shape_offset, text);
        }
        dims[i] = layout->dims[i];
    }
    *num_axes = layout->num_dims;
    return CBLOB_OK;
}

/* The values used must number exactly count (Caffe CHECKs this; here it is a parse error). */
cblob_status cb_blob_layout_check_values(const cb_blob_layout *layout, const cb_wire_path *path, const cb_shape *shape)
{
    const cb_blob_values used[2] = {cb_blob_layout_data_field(layout), cb_blob_layout_diff_field(layout)};
    for (int part = 0; part < 2; ++part) {
        const cb_blob_value_field *values = &layout->values[used[part]];
        /* A missing diff leaves the blob's diff as it is; missing data is an error unless count is 0. */
        if (values->count == shape->count || (part == CBLOB_PART_DIFF && values->count == 0))
            continue;
        char shape_text[CBLOB_MAX_AXES * 21 + 24], text[CBLOB_MAX_AXES * 21 + 128];
        cb_shape_format(shape, shape_text, sizeof shape_text);
        snprintf(text, sizeof text, "holds %" PRId64 " values but the shape %s needs %" PRId64, values->count,
                 shape_text, shape->count);
        return fail_at(path, value_numbers[used[part]], values->count > 0 ? values->offset : layout->offset, text);
    }
    return CBLOB_OK;
}

cblob_status cb_blob_layout_check(const cb_blob_layout *layout, const cb_wire_path *path, size_t element_size,
                                  cb_shape *out)
{
    int32_t num_axes = 0;
    int64_t dims[CBLOB_MAX_AXES];
    CB_TRY(layout_dims(layout, path, &num_axes, dims));
    cb_shape shape;
    if (cb_shape_make(num_axes, dims, element_size, &shape) != CBLOB_OK)
        return fail_at(path, cb_blob_layout_has_legacy(layout) ? CB_BLOB_NUM : CB_BLOB_SHAPE,
                       cb_blob_layout_has_legacy(layout) ? layout->legacy_offset : layout->shape_offset,
                       "the dimensions' product overflows (the byte size does not fit in memory)");
    CB_TRY(cb_blob_layout_check_values(layout, path, &shape));
    *out = shape;
    return CBLOB_OK;
}

bool cb_blob_layout_shape_equals(const cb_blob_layout *layout, const cb_shape *shape)
{
    if (cb_blob_layout_has_legacy(layout)) {
        if (shape->num_axes > 4)
            return false;
        for (int32_t i = 0; i < 4; ++i) {
            int64_t dim = 1;
            cb_shape_legacy_dim(shape, i - 4, &dim); /* cannot fail for at most 4 axes */
            if (dim != layout->legacy[i])
                return false;
        }
        return true;
    }
    if (layout->num_dims != shape->num_axes)
        return false;
    for (int32_t i = 0; i < shape->num_axes; ++i)
        if (layout->dims[i] != shape->dims[i])
            return false;
    return true;
}


typedef struct walker {
    cb_source *source;
    cb_walk_visit *visit; /* NULL: only check */
    void *context;
    size_t run_from;      /* kept bytes from here on are not reported yet */
    bool lists;           /* LAYER_LIST items are reported (cb_walk_layer) */
} walker;

static cb_wire begin(walker *w, const cb_wire_path *path)
{
    cb_wire wire = cb_wire_begin(w->source->bytes, w->source->size, path);
    wire.need = cb_source_wire_need;
    wire.source = w->source;
    return wire;
}

/* ---- reporting ------------------------------------------------------------------------------- */

/* Reports the kept bytes [run_from, upto) as one KEPT run; the run goes on from upto. */
static cblob_status flush(walker *w, size_t upto)
{
    if (w->visit != NULL && upto > w->run_from) {
        const cb_walk_item item = {.kind = CB_WALK_KEPT, .from = w->run_from, .to = upto};
        CB_TRY(w->visit(w->context, &item));
    }
    w->run_from = upto;
    cb_source_release(w->source, w->run_from); /* reported: never looked at again */
    return CBLOB_OK;
}

/* Reports an item after the kept bytes before it; kept bytes go on from `resume`. */
static cblob_status report(walker *w, const cb_walk_item *item, size_t resume)
{
    CB_TRY(flush(w, item->from));
    if (w->visit != NULL)
        CB_TRY(w->visit(w->context, item));
    w->run_from = resume;
    cb_source_release(w->source, w->run_from);
    return CBLOB_OK;
}

static cb_walk_item field_item(cb_walk_kind kind, const cb_wire *wire, const cb_wire_field *field)
{
    return (cb_walk_item){.kind = kind, .from = field->offset, .to = cb_wire_field_end(field), .field = field,
                          .path = wire->path};
}

/* A string the structure reports (a net's, a layer's name or type): length-delimited and without a
 * NUL byte (C strings cannot hold one); its payload readable afterwards. */
static cblob_status check_text(const cb_wire *wire, const cb_wire_field *field)
{
    CB_TRY(cb_wire_expect(wire, field, CB_WIRE_LENGTH, "string"));
    CB_TRY(cb_wire_need_payload(wire, field));
    if (memchr(wire->input + field->payload, 0, field->length) != NULL)
        return cb_wire_fail(wire->path, field, field->offset, "the string holds a NUL byte");
    return CBLOB_OK;
}

/* ---- blobs ----------------------------------------------------------------------------------- */

/* A BlobProto field: scanned whole and checked (shape, and value counts for the dtype it will be
 * read as), in the path frame the caller gives. */
static cblob_status check_blob(const cb_wire *wire, const cb_wire_field *field, cb_wire_path *path,
                               cb_blob_layout *layout, cb_shape *shape)
{
    CB_TRY(cb_wire_expect(wire, field, CB_WIRE_LENGTH, "BlobProto"));
    CB_TRY(cb_blob_layout_scan(cb_wire_nested(wire, field, path), layout));
    return cb_blob_layout_check(layout, path, cb_dtype_find(cb_blob_layout_dtype(layout))->size, shape);
}

/* A run of unpacked elements reported at once: at most this many bytes, so that the bytes behind
 * the walk are let go of as it goes. */
#define CB_WALK_RUN_MAX ((size_t)1 << 20)

/* Unpacked elements that follow the first behind the same tag bytes: one BLOB_VALUES run (the
 * cursor moves past it). The blob was checked whole, so reading on cannot fail; a skipped group
 * ends the run. */
static void unpacked_run(cb_wire *wire, const cb_wire_field *first, cb_walk_item *item)
{
    const size_t tag_size = first->payload - first->offset, stride = tag_size + first->length;
    item->stride = stride;
    while (item->to - item->from < CB_WALK_RUN_MAX) {
        cb_wire peek = *wire;
        cb_wire_field next;
        if (cb_wire_next(&peek, &next) != CBLOB_OK || next.offset != item->to || next.number != first->number ||
            next.type != first->type || next.payload - next.offset != tag_size ||
            memcmp(wire->input + next.offset, wire->input + first->offset, tag_size) != 0)
            return;
        *wire = peek;
        item->to += stride;
        ++item->count;
    }
}

/* The BlobProto's fields, once checked: the values that count as BLOB_VALUES, the rest kept. */
static cblob_status report_blob_fields(walker *w, cb_wire wire, const cb_blob_layout *layout)
{
    const uint32_t data = layout->values[CB_VALUES_DOUBLE_DATA].count > 0 ? CB_BLOB_DOUBLE_DATA : CB_BLOB_DATA;
    const uint32_t diff = layout->values[CB_VALUES_DOUBLE_DIFF].count > 0 ? CB_BLOB_DOUBLE_DIFF
                          : layout->values[CB_VALUES_DIFF].count > 0   ? CB_BLOB_DIFF
                                                                       : CB_WIRE_END;
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (cb_wire_at_end(&field))
            return CBLOB_OK;
        if (field.number != data && field.number != diff)
            continue;
        cb_walk_item item = field_item(CB_WALK_BLOB_VALUES, &wire, &field);
        item.part = field.number == data ? CBLOB_PART_DATA : CBLOB_PART_DIFF;
        item.is_double = cb_is_double_field(field.number);
        item.count = 1;
        if (field.type != CB_WIRE_LENGTH)
            unpacked_run(&wire, &field, &item);
        CB_TRY(report(w, &item, item.to));
    }
}

/* A blob reported: BLOB_BEGIN, its fields, BLOB_END. `wire` covers the BlobProto's fields; the
 * blob's bytes are [from, to) (its field's tag and length included). */
static cblob_status report_blob(walker *w, const cb_wire *wire, const cb_wire_field *field, size_t from, size_t to,
                                const cb_blob_layout *layout, const cb_shape *shape, int64_t index)
{
    cb_walk_item item = {.kind = CB_WALK_BLOB_BEGIN, .from = from, .to = to, .field = field, .path = wire->path,
                         .index = index, .layout = layout, .shape = shape};
    CB_TRY(report(w, &item, from)); /* the field's tag and length are the blob's own bytes */
    CB_TRY(report_blob_fields(w, *wire, layout));
    CB_TRY(flush(w, to));
    item = (cb_walk_item){.kind = CB_WALK_BLOB_END, .from = to, .to = to, .path = wire->path, .index = index};
    return report(w, &item, to);
}

/* A `blobs` field of a layer or a vector: checked, then reported (report false: only checked; its
 * bytes stay in the run). */
static cblob_status walk_blob_field(walker *w, const cb_wire *wire, const cb_wire_field *field, const char *name,
                                    int64_t index, bool reported)
{
    cb_wire_path path = {.parent = wire->path, .message = &caffe__blob_proto__descriptor, .field = name,
                         .index = index};
    cb_blob_layout layout;
    cb_shape shape;
    if (field->type == CB_WIRE_LENGTH && field->length < w->source->read_whole_below)
        CB_TRY(cb_wire_need_payload(wire, field));
    CB_TRY(check_blob(wire, field, &path, &layout, &shape));
    if (!reported)
        return CBLOB_OK;
    const cb_wire fields = cb_wire_nested(wire, field, &path);
    return report_blob(w, &fields, field, field->offset, cb_wire_field_end(field), &layout, &shape, index);
}

/* ---- layers ---------------------------------------------------------------------------------- */

typedef struct layer_walk {
    cb_wire_path *path;
    bool v1;
    int64_t index;
    int64_t blobs;    /* blobs reported so far */
    int64_t v0_blobs; /* blobs of V0 layers checked but not the layer's */
    char label[65];   /* the name, for messages about later fields ("layer[3](conv1)") */
    /* V1: which of name, type and blobs the layer has itself (else its V0 layer's stand in) */
    bool own_name, own_type, own_blobs;
} layer_walk;

static void label_layer(const cb_wire *wire, const cb_wire_field *field, layer_walk *layer)
{
    const size_t length = field->length < sizeof layer->label - 1 ? field->length : sizeof layer->label - 1;
    memcpy(layer->label, wire->input + field->payload, length);
    layer->label[length] = '\0';
    layer->path->label = layer->label;
}

/* The layer's own name or type (or its V0 layer's, standing in): checked and reported. */
static cblob_status walk_text(walker *w, const cb_wire *wire, const cb_wire_field *field, cb_walk_kind kind,
                              bool reported)
{
    CB_TRY(check_text(wire, field));
    if (!reported)
        return CBLOB_OK;
    cb_walk_item item = field_item(kind, wire, field);
    return report(w, &item, item.to);
}

/* Which of name, type and blobs a V1 layer has itself. Malformed bytes end the survey; the walk
 * that follows reports them. */
static void survey_v1(const cb_wire *layer_wire, layer_walk *layer)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_wire wire = *layer_wire;
    cb_wire_field field;
    while (cb_wire_next(&wire, &field) == CBLOB_OK && !cb_wire_at_end(&field)) {
        layer->own_name = layer->own_name || field.number == CB_V1_NAME;
        layer->own_type = layer->own_type || field.number == CB_V1_TYPE;
        layer->own_blobs = layer->own_blobs || field.number == CB_V1_BLOBS;
    }
    cb_error_restore(&saved);
}

/* V0LayerParameter (V1's `layer`): its name, type and blobs stand in for the V1 layer's missing
 * ones, as Caffe's upgrade takes them; its blobs are checked either way. */
static cblob_status walk_v0(walker *w, const cb_wire *outer, const cb_wire_field *field, layer_walk *layer)
{
    CB_TRY(cb_wire_expect(outer, field, CB_WIRE_LENGTH, "V0LayerParameter"));
    cb_wire_path path = {.parent = outer->path, .message = &caffe__v0_layer_parameter__descriptor, .field = "layer",
                         .index = -1};
    const bool frame = !(layer->own_name && layer->own_type && layer->own_blobs);
    if (frame) {
        const cb_walk_item item = field_item(CB_WALK_V0_BEGIN, outer, field);
        CB_TRY(report(w, &item, item.from)); /* its tag and length come as kept bytes */
    }
    cb_wire wire = cb_wire_nested(outer, field, &path);
    for (;;) {
        cb_wire_field inner;
        CB_TRY(cb_wire_next(&wire, &inner));
        if (cb_wire_at_end(&inner))
            break;
        if (inner.number == CB_V0_NAME)
            CB_TRY(walk_text(w, &wire, &inner, CB_WALK_LAYER_NAME, !layer->own_name));
        else if (inner.number == CB_V0_TYPE)
            CB_TRY(walk_text(w, &wire, &inner, CB_WALK_LAYER_TYPE, !layer->own_type));
        else if (inner.number == CB_V0_BLOBS)
            CB_TRY(walk_blob_field(w, &wire, &inner, "blobs", layer->own_blobs ? layer->v0_blobs++ : layer->blobs++,
                                   !layer->own_blobs));
    }
    if (!frame)
        return CBLOB_OK;
    CB_TRY(flush(w, cb_wire_field_end(field)));
    const cb_walk_item end = {.kind = CB_WALK_V0_END, .from = cb_wire_field_end(field), .to = cb_wire_field_end(field),
                              .path = outer->path};
    return report(w, &end, end.to);
}

/* A field of one of the layer's lists, marked where it stands when the walker marks them. */
static cblob_status mark_list(walker *w, const cb_wire *wire, const cb_wire_field *field, cb_layer_list list)
{
    if (!w->lists || w->visit == NULL)
        return CBLOB_OK;
    cb_walk_item item = field_item(CB_WALK_LAYER_LIST, wire, field);
    item.list = list;
    return report(w, &item, item.from);
}

/* LayerParameter: name, type and blobs; everything else is kept. */
static cblob_status walk_v2_field(walker *w, const cb_wire *wire, const cb_wire_field *field, layer_walk *layer)
{
    switch (field->number) {
    case CB_LAYER_BOTTOM: return mark_list(w, wire, field, CB_LIST_BOTTOM);
    case CB_LAYER_TOP: return mark_list(w, wire, field, CB_LIST_TOP);
    case CB_LAYER_INCLUDE: return mark_list(w, wire, field, CB_LIST_INCLUDE);
    case CB_LAYER_EXCLUDE: return mark_list(w, wire, field, CB_LIST_EXCLUDE);
    case CB_LAYER_PARAM: return mark_list(w, wire, field, CB_LIST_PARAM_SPEC);
    case CB_LAYER_PHASE: return mark_list(w, wire, field, CB_LIST_PHASE);
    case CB_LAYER_NAME:
        CB_TRY(walk_text(w, wire, field, CB_WALK_LAYER_NAME, true));
        label_layer(wire, field, layer);
        return CBLOB_OK;
    case CB_LAYER_TYPE: return walk_text(w, wire, field, CB_WALK_LAYER_TYPE, true);
    case CB_LAYER_BLOBS: return walk_blob_field(w, wire, field, "blobs", layer->blobs++, true);
    default: return CBLOB_OK;
    }
}

/* V1LayerParameter: name, type (the LayerType enum), blobs and the V0 layer. */
static cblob_status walk_v1_field(walker *w, const cb_wire *wire, const cb_wire_field *field, layer_walk *layer)
{
    switch (field->number) {
    case CB_V1_NAME:
        CB_TRY(walk_text(w, wire, field, CB_WALK_LAYER_NAME, true));
        label_layer(wire, field, layer);
        return CBLOB_OK;
    case CB_V1_TYPE: {
        CB_TRY(cb_wire_expect(wire, field, CB_WIRE_VARINT, "LayerType enum"));
        cb_walk_item item = field_item(CB_WALK_LAYER_TYPE, wire, field);
        item.v1_enum = true;
        item.v1_type = (int32_t)(uint32_t)field->varint; /* int32 varint rules */
        return report(w, &item, item.to);
    }
    case CB_V1_BLOBS: return walk_blob_field(w, wire, field, "blobs", layer->blobs++, true);
    case CB_V1_LAYER: return walk_v0(w, wire, field, layer);
    case CB_V1_BOTTOM: return mark_list(w, wire, field, CB_LIST_BOTTOM);
    case CB_V1_TOP: return mark_list(w, wire, field, CB_LIST_TOP);
    case CB_V1_INCLUDE: return mark_list(w, wire, field, CB_LIST_INCLUDE);
    case CB_V1_EXCLUDE: return mark_list(w, wire, field, CB_LIST_EXCLUDE);
    case CB_V1_PARAM: return mark_list(w, wire, field, CB_LIST_PARAM_NAME);
    case CB_V1_BLOBS_LR: return mark_list(w, wire, field, CB_LIST_BLOBS_LR);
    case CB_V1_WEIGHT_DECAY: return mark_list(w, wire, field, CB_LIST_WEIGHT_DECAY);
    default: return CBLOB_OK;
    }
}

static cblob_status walk_layer(walker *w, const cb_wire *net, const cb_wire_field *field, bool v1, int64_t index)
{
    CB_TRY(cb_wire_expect(net, field, CB_WIRE_LENGTH, v1 ? "V1LayerParameter" : "LayerParameter"));
    cb_wire_path path = {.parent = net->path,
                         .message = v1 ? &caffe__v1_layer_parameter__descriptor : &caffe__layer_parameter__descriptor,
                         .field = v1 ? "layers" : "layer",
                         .index = index};
    layer_walk layer = {.path = &path, .v1 = v1, .index = index};
    cb_wire wire = cb_wire_nested(net, field, &path);
    if (v1)
        survey_v1(&wire, &layer);
    cb_walk_item item = field_item(CB_WALK_LAYER_BEGIN, net, field);
    item.index = index;
    item.format = v1 ? CBLOB_NET_FORMAT_V1 : CBLOB_NET_FORMAT_V2;
    CB_TRY(report(w, &item, item.from)); /* its tag and length come as kept bytes */
    for (;;) {
        cb_wire_field inner;
        CB_TRY(cb_wire_next(&wire, &inner));
        if (cb_wire_at_end(&inner))
            break;
        CB_TRY(v1 ? walk_v1_field(w, &wire, &inner, &layer) : walk_v2_field(w, &wire, &inner, &layer));
    }
    const size_t end = cb_wire_field_end(field);
    CB_TRY(flush(w, end));
    item = (cb_walk_item){.kind = CB_WALK_LAYER_END, .from = end, .to = end, .path = net->path, .index = index};
    return report(w, &item, end);
}

/* ---- the messages ----------------------------------------------------------------------------- */

/* NetParameter: its name and layers (LayerParameter, or V1LayerParameter: never both, as Caffe
 * refuses); every other field is kept. */
cblob_status cb_walk_net(cb_source *source, cb_walk_visit *visit, void *context)
{
    walker w = {source, visit, context, 0, false};
    const cb_wire_path root = cb_wire_root(&caffe__net_parameter__descriptor);
    cb_wire wire = begin(&w, &root);
    int64_t layers = 0;
    bool v1 = false;
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (cb_wire_at_end(&field))
            break;
        if (field.number == CB_NET_NAME) {
            CB_TRY(walk_text(&w, &wire, &field, CB_WALK_NET_NAME, true));
        } else if (field.number == CB_NET_LAYER || field.number == CB_NET_LAYERS) {
            if (layers > 0 && (field.number == CB_NET_LAYERS) != v1)
                return cb_wire_fail(&root, &field, field.offset,
                                    "the net has both layer (field 100) and layers (field 2, V1); Caffe refuses such input too");
            v1 = field.number == CB_NET_LAYERS;
            CB_TRY(walk_layer(&w, &wire, &field, v1, layers++));
        }
    }
    return flush(&w, source->size);
}

cblob_status cb_walk_vector(cb_source *source, cb_walk_visit *visit, void *context)
{
    walker w = {source, visit, context, 0, false};
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto_vector__descriptor);
    cb_wire wire = begin(&w, &root);
    int64_t blobs = 0;
    for (;;) {
        cb_wire_field field;
        CB_TRY(cb_wire_next(&wire, &field));
        if (cb_wire_at_end(&field))
            break;
        if (field.number == CB_VECTOR_BLOBS)
            CB_TRY(walk_blob_field(&w, &wire, &field, "blobs", blobs++, true));
    }
    return flush(&w, source->size);
}

cblob_status cb_walk_blob(cb_source *source, cb_walk_visit *visit, void *context)
{
    walker w = {source, visit, context, 0, false};
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    const cb_wire wire = begin(&w, &root);
    cb_blob_layout layout;
    cb_shape shape;
    CB_TRY(cb_blob_layout_scan(wire, &layout));
    CB_TRY(cb_blob_layout_check(&layout, &root, cb_dtype_find(cb_blob_layout_dtype(&layout))->size, &shape));
    return report_blob(&w, &wire, NULL, 0, source->size, &layout, &shape, 0);
}

cblob_status cb_walk_layer(cb_source *source, cblob_net_format format, cb_walk_visit *visit, void *context)
{
    walker w = {source, visit, context, 0, true};
    const cb_wire_path root = cb_wire_root(&caffe__net_parameter__descriptor);
    cb_wire wire = begin(&w, &root);
    cb_wire_field field;
    CB_TRY(cb_wire_next(&wire, &field));
    if (!cb_wire_at_end(&field))
        CB_TRY(walk_layer(&w, &wire, &field, format == CBLOB_NET_FORMAT_V1, 0));
    return flush(&w, source->size);
}

cblob_status cb_walk_check_net(const uint8_t *bytes, size_t size)
{
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    return cb_walk_net(&source, NULL, NULL);
}
