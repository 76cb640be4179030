/* SPDX-License-Identifier: BSD-2-Clause */
/* Opening a model: the walk over a NetParameter (walk.h) builds it (model.h), from bytes in memory
 * or from a file read as the walk needs it.
 *
 * Eagerly, every value is copied once, straight from the input to the array its blob keeps (from a
 * file: read into it, on the pool's threads). Lazily (cblob_model_open_file_lazy, CBLOB_OPEN_LAZY),
 * the same walk leaves the packed values of blobs larger than a page in the file: such a blob is
 * UNREAD, and its values are read on first access (model_values.c). Either way the file is read
 * once, and its bytes are let go of behind the walk, so a model of many small layers holds about
 * one copy of its file while it is opened.
 *
 * The file stays open while a lazily opened model lives; every read checks that it is still the
 * file that was opened (io.h), and fails with CBLOB_ERR_IO rather than mix two files. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caffe_fields.h"
#include "identify.h"
#include "model_open.h"
#include "model_values.h"
#include "status.h"
#include "walk.h"

/* A blob whose values take more bytes than this, all packed, stays in the file when opened lazily. */
#define CB_LAZY_VALUES_MIN ((size_t)4096)

typedef struct builder {
    cblob_model *model;
    cb_source *source;
    bool lazy;
    bool frames;           /* keep blobs' frames (a net's: to save it); a vector's blobs need none */
    cb_layer_draft draft;
    cb_bytes *into;        /* where kept bytes go: the model's top bytes, the layer's, the blob's frame */
    size_t lead_end;       /* the top bytes before the layer being built */
    size_t name_at, name_length; /* the net's name in the top bytes (name_at SIZE_MAX: none) */
    bool in_frame;         /* inside a V0 layer the draft keeps as a frame */
    size_t frame_at;
    cb_model_blob blob;    /* the blob being built ... */
    bool in_blob;
    int64_t filled[2];     /* ... and the elements of each part copied so far */
} builder;

/* Copies bytes the walk made readable (a field's tag and length, a name) to the end of `into`. */
static cblob_status keep_read(builder *b, cb_bytes *into, size_t from, size_t to)
{
    return cb_bytes_append(into, b->source->bytes + from, to - from);
}

/* Copies the source's bytes [from, to) to the end of `into` (read from a file only now). */
static cblob_status keep(builder *b, cb_bytes *into, size_t from, size_t to)
{
    if (to == from)
        return CBLOB_OK;
    CB_TRY(cb_bytes_reserve(into, to - from));
    CB_TRY(cb_source_copy(b->source, from, to - from, into->data + into->size));
    into->size += to - from;
    return CBLOB_OK;
}

/* ---- blobs ----------------------------------------------------------------------------------- */

static uint8_t diff_dtype(const cb_blob_layout *layout)
{
    return layout->values[CB_VALUES_DOUBLE_DIFF].count > 0 ? CBLOB_DTYPE_FLOAT64
           : layout->values[CB_VALUES_DIFF].count > 0      ? CBLOB_DTYPE_FLOAT32
                                                           : 0;
}

/* Whether a blob's values stay in the file (lazily opened): all packed, and more than a page. */
static bool stays_in_file(const builder *b, const cb_model_blob *blob, const cb_blob_layout *layout)
{
    if (!b->lazy || b->source->file == NULL)
        return false;
    for (int i = 0; i < CB_VALUES_FIELDS; ++i)
        if (layout->values[i].unpacked)
            return false;
    return cb_model_blob_part_bytes(blob, CBLOB_PART_DATA) + cb_model_blob_part_bytes(blob, CBLOB_PART_DIFF) >
           CB_LAZY_VALUES_MIN;
}

static cblob_status begin_blob(builder *b, const cb_walk_item *item)
{
    const cb_shape *shape = item->shape;
    b->blob = (cb_model_blob){.dtype = (uint8_t)cb_blob_layout_dtype(item->layout),
                              .diff_dtype = diff_dtype(item->layout),
                              .num_axes = (uint8_t)shape->num_axes,
                              .at = (uint32_t)b->draft.bytes.size,
                              .file_offset = item->from,
                              .flags = b->in_frame ? CB_BLOB_IN_FRAME : 0};
    b->in_blob = true;
    b->filled[0] = b->filled[1] = 0;
    CB_TRY(cb_model_keep_dims(b->model, shape->dims, shape->num_axes, &b->blob.dims));
    b->draft.frame.size = 0;
    b->into = &b->draft.frame;
    if (stays_in_file(b, &b->blob, item->layout)) {
        b->blob.flags |= CB_BLOB_UNREAD;
        return CBLOB_OK;
    }
    CB_TRY(cb_model_alloc_array(b->model, cb_model_blob_part_bytes(&b->blob, CBLOB_PART_DATA), CB_BLOB_DATA_HOST,
                                &b->blob.data, &b->blob.flags));
    return cb_model_alloc_array(b->model, cb_model_blob_part_bytes(&b->blob, CBLOB_PART_DIFF), CB_BLOB_DIFF_HOST,
                                &b->blob.diff, &b->blob.flags);
}

/* A run of unpacked elements: each one's tag joins the frame, its value the array. */
static cblob_status unpacked_values(builder *b, const cb_walk_item *item, uint8_t *to, size_t element)
{
    const size_t tag_size = item->stride - element;
    if (b->frames)
        CB_TRY(cb_bytes_reserve(&b->draft.frame, (size_t)item->count * tag_size));
    const uint8_t *at = b->source->bytes + item->from;
    for (int64_t i = 0; i < item->count; ++i, at += item->stride) {
        if (b->frames) {
            memcpy(b->draft.frame.data + b->draft.frame.size, at, tag_size);
            b->draft.frame.size += tag_size;
        }
        memcpy(to + (size_t)i * element, at + tag_size, element);
    }
    return CBLOB_OK;
}

/* A field of values: its tag (and length) join the frame; its payload goes to its array, or stays
 * in the file. Unpacked values are never left in the file (they were read to be walked). */
static cblob_status blob_values(builder *b, const cb_walk_item *item)
{
    const cb_wire_field *field = item->field;
    const size_t element = item->is_double ? 8 : 4;
    uint8_t *array = item->part == CBLOB_PART_DATA ? b->blob.data : b->blob.diff;
    const size_t filled = (size_t)b->filled[item->part] * element;
    if (field->type != CB_WIRE_LENGTH) {
        b->filled[item->part] += item->count;
        return unpacked_values(b, item, array + filled, element);
    }
    if (b->frames)
        CB_TRY(keep_read(b, &b->draft.frame, field->offset, field->payload));
    if (!(b->blob.flags & CB_BLOB_UNREAD)) /* else the array is made on first access */
        CB_TRY(cb_source_copy(b->source, field->payload, field->length, array + filled));
    b->filled[item->part] += (int64_t)(field->length / element);
    return CBLOB_OK;
}

static cblob_status end_blob(builder *b)
{
    if (b->draft.frame.size > UINT32_MAX)
        return cb_fail(CBLOB_ERR_OVERFLOW, "a BlobProto takes more than 4 GiB besides its values; Caffe reads at most 2 GiB");
    b->blob.frame_size = (uint32_t)b->draft.frame.size;
    if (b->frames)
        CB_TRY(cb_arena_keep(&b->model->arena, &b->draft.frame, 1, &b->blob.frame));
    CB_TRY(cb_bytes_append(&b->draft.blobs, &b->blob, sizeof b->blob));
    b->in_blob = false; /* the draft holds it now */
    b->into = &b->draft.bytes;
    return CBLOB_OK;
}

/* ---- layers ----------------------------------------------------------------------------------- */

/* A name or type's field into the layer's bytes; *at is where its text lies there. */
static cblob_status keep_text(builder *b, const cb_walk_item *item, size_t *at, size_t *length)
{
    *at = b->draft.bytes.size + (item->field->payload - item->field->offset);
    *length = item->field->length;
    return keep(b, &b->draft.bytes, item->from, item->to); /* a huge name is let go of as it is copied */
}

static cblob_status layer_type(builder *b, const cb_walk_item *item)
{
    if (!item->v1_enum) {
        b->draft.type_text = NULL;
        return keep_text(b, item, &b->draft.type_at, &b->draft.type_length);
    }
    /* V1's enum: its name (or number, for a value the enum does not name) follows the bytes. */
    const char *known = cb_v1_type_name(item->v1_type);
    snprintf(b->draft.type_number, sizeof b->draft.type_number, "%" PRId32, item->v1_type);
    b->draft.type_text = known != NULL ? known : b->draft.type_number;
    b->draft.type_at = SIZE_MAX;
    return keep(b, &b->draft.bytes, item->from, item->to);
}

static cblob_status end_layer(builder *b)
{
    if (b->model->format == CBLOB_NET_FORMAT_V1 && b->draft.type_at == SIZE_MAX && b->draft.type_text == NULL)
        b->draft.type_text = "NONE"; /* the enum's default */
    CB_TRY(cb_model_keep_layer(b->model, &b->draft, b->lead_end));
    b->into = &b->model->top;
    return CBLOB_OK;
}

static cblob_status visit(void *context, const cb_walk_item *item)
{
    builder *b = context;
    switch (item->kind) {
    case CB_WALK_KEPT: return keep(b, b->into, item->from, item->to);
    case CB_WALK_NET_NAME:
        b->name_at = b->model->top.size + (item->field->payload - item->field->offset);
        b->name_length = item->field->length;
        return keep(b, &b->model->top, item->from, item->to);
    case CB_WALK_LAYER_BEGIN:
        b->model->format = item->format;
        b->lead_end = b->model->top.size;
        b->into = &b->draft.bytes;
        return CBLOB_OK;
    case CB_WALK_LAYER_NAME: return keep_text(b, item, &b->draft.name_at, &b->draft.name_length);
    case CB_WALK_LAYER_TYPE: return layer_type(b, item);
    case CB_WALK_V0_BEGIN:
        b->in_frame = true;
        b->frame_at = b->draft.bytes.size;
        return CBLOB_OK;
    case CB_WALK_V0_END: {
        b->in_frame = false;
        const cb_frame frame = {(uint32_t)b->frame_at, (uint32_t)b->draft.bytes.size};
        return cb_bytes_append(&b->draft.frames, &frame, sizeof frame);
    }
    case CB_WALK_BLOB_BEGIN: return begin_blob(b, item);
    case CB_WALK_BLOB_VALUES: return blob_values(b, item);
    case CB_WALK_BLOB_END: return end_blob(b);
    case CB_WALK_LAYER_END: return end_layer(b);
    case CB_WALK_LAYER_LIST: return CBLOB_OK; /* the open's walk marks none: lists are indexed on first use */
    }
    return CBLOB_OK;
}

/* The net's name: a NUL after its text, in the top bytes (the layers after it stand one byte on). */
static cblob_status name_the_net(builder *b)
{
    cblob_model *model = b->model;
    if (b->name_at == SIZE_MAX)
        return CBLOB_OK;
    const size_t nul = b->name_at + b->name_length;
    CB_TRY(cb_bytes_reserve(&model->top, 1));
    memmove(model->top.data + nul + 1, model->top.data + nul, model->top.size - nul);
    model->top.data[nul] = '\0';
    ++model->top.size;
    if (model->top.size > UINT32_MAX)
        return cb_fail(CBLOB_ERR_OVERFLOW, "the net's fields other than layers take more than 4 GiB");
    for (int64_t i = 0; i < model->num_layers; ++i)
        model->layers[i].lead_end += model->layers[i].lead_end >= nul; /* the NUL ends a lead */
    model->name_nul = nul;
    model->name = (const char *)model->top.data + b->name_at;
    return CBLOB_OK;
}

static void builder_free(builder *b)
{
    if (b->in_blob)
        cb_model_blob_free_arrays(&b->blob);
    cb_layer_draft_free(&b->draft);
}

/* Walks the source as `what` (cb_walk_net, _vector or _blob) into a new model. */
static cblob_status build(cblob_context *context, cb_source *source, bool lazy,
                          cblob_status (*walk)(cb_source *, cb_walk_visit *, void *), cblob_model **out)
{
    builder b = {.source = source, .lazy = lazy, .frames = walk == cb_walk_net, .name_at = SIZE_MAX};
    /* What an eager open copies anyway is read in one go; a lazy one reads blobs whose values it
     * keeps (a page at most). */
    source->read_whole_below = lazy ? CB_LAZY_VALUES_MIN + 512 : (size_t)64 << 10;
    cb_layer_draft_init(&b.draft);
    CB_TRY(cb_model_new(context, CBLOB_NET_FORMAT_V2, &b.model));
    b.into = &b.model->top;
    cblob_status status = walk(source, visit, &b);
    if (status == CBLOB_OK && walk != cb_walk_net) /* a vector's or a blob's blobs: one layer holds them */
        status = cb_model_keep_layer(b.model, &b.draft, 0);
    if (status == CBLOB_OK)
        status = name_the_net(&b);
    builder_free(&b);
    if (status != CBLOB_OK) {
        cb_model_free(b.model);
        return status;
    }
    *out = b.model;
    return CBLOB_OK;
}

/* ---- opening -------------------------------------------------------------------------------------- */

cblob_status cb_model_original_top(const cblob_model *model, uint8_t **out, size_t *out_size)
{
    const size_t size = model->top.size - (model->name_nul != SIZE_MAX);
    uint8_t *bytes = malloc(size + 1);
    if (bytes == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu bytes", size);
    if (model->name_nul == SIZE_MAX) {
        if (size > 0) /* a net without top fields may have no bytes at all */
            memcpy(bytes, model->top.data, size);
    } else {
        memcpy(bytes, model->top.data, model->name_nul);
        memcpy(bytes + model->name_nul, model->top.data + model->name_nul + 1, size - model->name_nul);
    }
    *out = bytes;
    *out_size = size;
    return CBLOB_OK;
}

/* A net of no layers is a net of a name (and other top-level fields) only, or another kind of
 * Caffe file, which is valid protobuf of such a net: then it is refused, saying what it is. Its
 * top bytes are the whole input. */
static cblob_status check_has_layers(const cblob_model *model)
{
    if (model->num_layers > 0)
        return CBLOB_OK;
    uint8_t *bytes = NULL;
    size_t size = 0;
    CB_TRY(cb_model_original_top(model, &bytes, &size));
    const cblob_status status = cb_explain_kind(bytes, size, false, CBLOB_PROTO_NET, CBLOB_OK);
    free(bytes);
    return status;
}

cblob_status cb_model_build_any(cblob_context *context, cb_source *source, cblob_model **out)
{
    const cblob_status status = build(context, source, false, cb_walk_net, out);
    return status == CBLOB_OK ? CBLOB_OK : cb_explain_kind(source->bytes, source->size, false, CBLOB_PROTO_NET, status);
}

cblob_status cb_model_build(cblob_context *context, const uint8_t *bytes, size_t size, const cb_input *input,
                            cblob_model **out)
{
    cb_source source;
    cb_source_memory(&source, bytes, size, input);
    cblob_model *model = NULL;
    cblob_status status = cb_model_build_any(context, &source, &model);
    if (status == CBLOB_OK)
        status = check_has_layers(model);
    if (status != CBLOB_OK) {
        if (model != NULL)
            cb_model_free(model);
        return status;
    }
    *out = model;
    return CBLOB_OK;
}

cblob_status cb_model_open_reading(cblob_context *context, cb_file_reading *reading, bool lazy, bool any_layers,
                                   cblob_model **out)
{
    const cb_file_head *head = &reading->head;
    const bool prefix = head->size < head->file_size;
    /* A file whose first bytes surely hold a BlobProto or a vector is not walked as a net. */
    cblob_status status = cb_explain_kind(head->bytes, head->size, prefix, CBLOB_PROTO_NET, CBLOB_OK);
    cblob_model *model = NULL;
    if (status == CBLOB_OK) {
        status = build(context, &reading->source, lazy, cb_walk_net, &model);
        if (status != CBLOB_OK)
            status = cb_explain_kind(head->bytes, head->size, prefix, CBLOB_PROTO_NET, status);
        else if (!any_layers)
            status = check_has_layers(model);
    }
    status = cb_file_reading_finish(reading, CBLOB_FILE_NET, status);
    if (status != CBLOB_OK) {
        if (model != NULL)
            cb_model_free(model);
        return status;
    }
    if (lazy) { /* the model reads its values from the file: it keeps it */
        model->file = reading->file;
        reading->file = NULL;
    }
    *out = model;
    return CBLOB_OK;
}

cblob_status cb_model_build_blobs(cblob_context *context, cb_source *source, bool vector, cblob_model **out)
{
    return build(context, source, false, vector ? cb_walk_vector : cb_walk_blob, out);
}

/* Opens a net from a path: the file kept by a lazily opened model, else closed. */
static cblob_status open_path(cblob_context *context, const char *path, bool lazy, cblob_model **out)
{
    cb_file_reading reading;
    CB_TRY(cb_file_reading_open(context, path, &reading));
    const cblob_status status = cb_model_open_reading(context, &reading, lazy, false, out);
    cb_file_reading_close(&reading);
    return status;
}

CBLOB_API cblob_status cblob_model_open(cblob_context *context, const uint8_t *bytes, size_t size,
                                        cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    return cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_NET, cb_model_build(context, bytes, size, NULL, out_model));
}

CBLOB_API cblob_status cblob_model_open_file(cblob_context *context, const char *path, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    return open_path(context, path, false, out_model);
}

CBLOB_API cblob_status cblob_model_open_file_lazy(cblob_context *context, const char *path, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    return open_path(context, path, true, out_model);
}
