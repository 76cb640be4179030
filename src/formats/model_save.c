/* SPDX-License-Identifier: BSD-2-Clause */
/* Saving a model: its bytes written back (model.h) with each blob in its place.
 *
 * A blob is written from its frame when it still fits it: same dtype, same shape, and no diff to
 * add. Its fields are then written in their order with the current values (from the handle when
 * one was made, else from its arrays), so unchanged values give the same bytes and changed ones
 * change only their own; write_diff 0 leaves its diff fields out. Otherwise (reshaped, a diff
 * written since it was read and none in the file, or a blob without a frame) it is written as
 * Caffe's ToProto writes it. A layer's length, and its V0 layer's, are written anew only when
 * their content changed size. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "caffe_fields.h"
#include "model_values.h"
#include "proto_blob.h"
#include "status.h"
#include "varint.h"

typedef struct emitter {
    const cblob_model *model;
    bool write_diff;
    int64_t layer; /* for messages */
} emitter;

static size_t element_size(bool is_double)
{
    return is_double ? 8 : 4;
}

static bool handle_is_double(const cblob_blob *handle)
{
    return handle->dtype->dtype == CBLOB_DTYPE_FLOAT64;
}

/* ---- values ------------------------------------------------------------------------------------ */

/* Writes `count` elements of a piece of values: the payload of a packed field as it is, a run of
 * unpacked elements each behind the piece's tag (through a small buffer). */
static void write_values(cb_sink *sink, const cb_frame_piece *piece, const uint8_t *values, int64_t count)
{
    const size_t element = element_size(piece->is_double);
    if (piece->packed) {
        cb_sink_write(sink, values, (size_t)count * element);
        return;
    }
    uint8_t buffer[8192];
    const size_t stride = piece->size + element;
    const int64_t step = (int64_t)(sizeof buffer / stride);
    for (int64_t done = 0; done < count; done += step) {
        const int64_t n = count - done < step ? count - done : step;
        for (int64_t i = 0; i < n; ++i) {
            memcpy(buffer + (size_t)i * stride, piece->bytes, piece->size);
            memcpy(buffer + (size_t)i * stride + piece->size, values + (size_t)(done + i) * element, element);
        }
        cb_sink_write(sink, buffer, (size_t)n * stride);
    }
}

/* Writes a handle's values converted to the piece's element type, through a small buffer. */
static void write_converted(cb_sink *sink, const cb_frame_piece *piece, const uint8_t *values, bool from_double)
{
    uint8_t buffer[8192];
    const int64_t step = (int64_t)(sizeof buffer / 8);
    for (int64_t done = 0; done < piece->count; done += step) {
        const int64_t n = piece->count - done < step ? piece->count - done : step;
        cb_convert_floats(buffer, piece->is_double, values + (size_t)done * element_size(from_double), from_double, n);
        write_values(sink, piece, buffer, n);
    }
}

/* A diff of the other dtype (double_data beside float diff) was converted when the handle was
 * made: when the handle still holds exactly that conversion, the stored values are written, so
 * that the conversion back cannot change a bit (a signalling NaN, a double that is no float). */
static bool still_converted(const uint8_t *stored, bool stored_double, const uint8_t *current, int64_t count)
{
    uint8_t buffer[8192];
    const int64_t step = (int64_t)(sizeof buffer / 8);
    for (int64_t done = 0; done < count; done += step) {
        const int64_t n = count - done < step ? count - done : step;
        cb_convert_floats(buffer, !stored_double, stored + (size_t)done * element_size(stored_double), stored_double, n);
        if (memcmp(buffer, current + (size_t)done * element_size(!stored_double), (size_t)n * element_size(!stored_double)) != 0)
            return false;
    }
    return true;
}

/* The payload of a field of values: `count` elements of its part from element `first`. The
 * blob's arrays hold each part in its field's element type. */
static cblob_status write_payload(cb_sink *sink, const cb_model_blob *blob, const cb_frame_piece *piece, int64_t first)
{
    const size_t element = element_size(piece->is_double);
    const uint8_t *stored = piece->part == CBLOB_PART_DATA ? blob->data : blob->diff;
    if (stored != NULL)
        stored += (size_t)first * element;
    const cblob_blob *handle = blob->handle;
    if (handle == NULL) {
        write_values(sink, piece, stored, piece->count);
        return CBLOB_OK;
    }
    void *host = NULL;
    CB_TRY(cb_blob_host((cblob_blob *)handle, (cblob_part)piece->part, false, &host));
    const bool handle_double = handle_is_double(handle);
    const uint8_t *current = (const uint8_t *)host + (size_t)first * element_size(handle_double);
    if (handle_double == piece->is_double)
        write_values(sink, piece, current, piece->count);
    else if (stored != NULL && still_converted(stored, piece->is_double, current, piece->count))
        write_values(sink, piece, stored, piece->count);
    else
        write_converted(sink, piece, current, handle_double);
    return CBLOB_OK;
}

/* ---- blobs --------------------------------------------------------------------------------------- */

/* Whether a made handle can still be written from its blob's frame. */
static bool fits_frame(const emitter *e, const cb_model_blob *blob, const cblob_blob *handle)
{
    if (handle->dtype->dtype != blob->dtype || handle->shape.num_axes != blob->num_axes)
        return false;
    for (int32_t i = 0; i < blob->num_axes; ++i)
        if (handle->shape.dims[i] != blob->dims[i])
            return false;
    /* A diff written since the file was read, where the file has none, needs a field of its own. */
    return !e->write_diff || blob->diff_dtype != 0 || cb_blob_never_accessed(handle, CBLOB_PART_DIFF);
}

static bool piece_written(const emitter *e, const cb_frame_piece *piece)
{
    return !piece->values || e->write_diff || piece->part == CBLOB_PART_DATA;
}

static uint64_t piece_size(const cb_frame_piece *piece)
{
    if (!piece->values)
        return piece->size;
    if (!piece->packed) /* a run: each element behind its tag */
        return (uint64_t)piece->count * (piece->size + element_size(piece->is_double));
    return piece->size + (uint64_t)piece->count * element_size(piece->is_double);
}

static cblob_status write_from_frame(const emitter *e, const cb_model_blob *blob, cb_sink *sink)
{
    cb_frame_piece piece;
    uint64_t size = 0;
    for (size_t pos = 0; cb_frame_next(blob, &pos, &piece);)
        size += piece_written(e, &piece) ? piece_size(&piece) : 0;
    /* The field's tag, and its length: the frame's when unchanged. */
    size_t tag = 0, length = 0;
    uint64_t value = 0, original = 0;
    cb_varint_decode(blob->frame, blob->frame_size, &value, &tag);
    cb_varint_decode(blob->frame + tag, blob->frame_size - tag, &original, &length);
    cb_sink_write(sink, blob->frame, tag);
    if (size == original) {
        cb_sink_write(sink, blob->frame + tag, length);
    } else {
        uint8_t encoded[CB_VARINT_MAX_BYTES];
        cb_sink_write(sink, encoded, cb_varint_encode(encoded, size));
    }
    int64_t first[2] = {0, 0};
    for (size_t pos = 0; cb_frame_next(blob, &pos, &piece);) {
        if (piece_written(e, &piece)) {
            if (!piece.values || piece.packed) /* a run's tags go with its elements */
                cb_sink_write(sink, piece.bytes, piece.size);
            if (piece.values)
                CB_TRY(write_payload(sink, blob, &piece, first[piece.part]));
        }
        if (piece.values)
            first[piece.part] += piece.count;
    }
    return sink->status;
}

/* The tag of a blob written as ToProto writes it: its frame's, else the layer format's. */
static void write_tag(const emitter *e, const cb_model_blob *blob, cb_sink *sink)
{
    if (blob->frame != NULL) {
        uint64_t value = 0;
        size_t tag = 0;
        cb_varint_decode(blob->frame, blob->frame_size, &value, &tag);
        cb_sink_write(sink, blob->frame, tag);
        return;
    }
    uint8_t encoded[CB_VARINT_MAX_BYTES];
    const uint32_t field = e->model->format == CBLOB_NET_FORMAT_V1 ? CB_V1_BLOBS : CB_LAYER_BLOBS;
    cb_sink_write(sink, encoded, cb_varint_encode(encoded, (uint64_t)field << 3 | CB_WIRE_LENGTH));
}

/* A blob as Caffe's ToProto writes it: the tag, then a fresh BlobProto of its handle or arrays. */
static cblob_status write_fresh(const emitter *e, int64_t index, const cb_model_blob *blob, cb_sink *sink)
{
    char what[160];
    snprintf(what, sizeof what, "layer %" PRId64 " (%.64s) blob %" PRId64, e->layer,
             e->model->layers[e->layer].name, index);
    cb_blob_message message;
    void *zeros = NULL;
    cblob_status status = CBLOB_OK;
    if (blob->handle != NULL) {
        status = cb_blob_message_init(&message, blob->handle, e->write_diff, what);
    } else {
        cb_shape shape;
        const size_t element = cb_dtype_find((cblob_dtype)blob->dtype)->size;
        status = cb_shape_make(blob->num_axes, blob->dims, element, &shape);
        /* A blob that never had a diff writes zeros, as a handle's untouched diff reads. */
        if (status == CBLOB_OK && e->write_diff && blob->diff == NULL && shape.count > 0 &&
            (zeros = cb_calloc((size_t)shape.count, element)) == NULL)
            status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %s's diff", what);
        if (status == CBLOB_OK)
            status = cb_blob_message_init_values(&message, (cblob_dtype)blob->dtype, &shape, blob->data,
                                                 blob->diff != NULL ? blob->diff : zeros, e->write_diff, what);
    }
    if (status == CBLOB_OK) {
        const size_t size = protobuf_c_message_get_packed_size(&message.proto.base);
        write_tag(e, blob, sink);
        uint8_t length[CB_VARINT_MAX_BYTES];
        cb_sink_write(sink, length, cb_varint_encode(length, size));
        protobuf_c_message_pack_to_buffer(&message.proto.base, &sink->base);
        cb_blob_message_clear(&message);
    }
    free(zeros);
    return status;
}

static cblob_status write_blob(void *context, int64_t index, const cb_model_blob *blob, cb_sink *sink)
{
    const emitter *e = context;
    if (blob->frame != NULL && (blob->handle == NULL || fits_frame(e, blob, blob->handle)))
        return write_from_frame(e, blob, sink);
    return write_fresh(e, index, blob, sink);
}

/* ---- the model ----------------------------------------------------------------------------------- */

cblob_status cb_model_emit_layer(const cblob_model *model, int64_t layer, bool write_diff, cb_sink *sink)
{
    emitter e = {.model = model, .write_diff = write_diff, .layer = layer};
    return cb_layer_emit(&model->layers[layer], write_blob, &e, sink);
}

static cblob_status write_model(const cblob_model *model, bool write_diff, cb_sink *sink)
{
    size_t top = 0;
    for (int64_t i = 0; i < model->num_layers; ++i) {
        cb_model_emit_top(model, top, model->layers[i].lead_end, sink);
        top = model->layers[i].lead_end;
        emitter e = {.model = model, .write_diff = write_diff, .layer = i};
        CB_TRY(cb_layer_emit(&model->layers[i], write_blob, &e, sink));
    }
    cb_model_emit_top(model, top, model->top.size, sink);
    return sink->status;
}

static cblob_status model_emit(const cblob_model *model, bool write_diff, cb_sink *sink)
{
    cb_model_lock(model);
    /* Measured first: a message over protobuf's limit is refused before anything is written. A
     * lazily opened model reads every value first: a save writes them all. */
    cb_sink counter;
    cb_sink_count(&counter);
    cblob_status status = cb_model_load_all(model);
    if (status == CBLOB_OK)
        status = write_model(model, write_diff, &counter);
    if (status == CBLOB_OK && counter.size > CB_PROTO_MAX_MESSAGE)
        status = cb_fail(CBLOB_ERR_OVERFLOW,
                         "the NetParameter would take %llu bytes, over protobuf's 2 GiB message limit (which Caffe enforces)",
                         (unsigned long long)counter.size);
    if (status == CBLOB_OK && sink->kind != CB_SINK_COUNT)
        cb_sink_expect(sink, counter.size);
    if (status == CBLOB_OK)
        status = sink->kind == CB_SINK_COUNT ? (sink->size = counter.size, CBLOB_OK) : write_model(model, write_diff, sink);
    cb_model_unlock(model);
    return status;
}

cblob_status cb_model_serialize(const cblob_model *model, uint8_t **out, size_t *out_size)
{
    cb_sink counter;
    cb_sink_count(&counter);
    CB_TRY(model_emit(model, true, &counter));
    uint8_t *bytes = cb_malloc(counter.size + 1);
    if (bytes == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %llu bytes of a NetParameter",
                       (unsigned long long)counter.size);
    cb_sink sink;
    cb_sink_buffer(&sink, bytes, counter.size);
    const cblob_status status = model_emit(model, true, &sink);
    if (status != CBLOB_OK) {
        cb_free(bytes);
        return status;
    }
    *out = bytes;
    *out_size = counter.size;
    return CBLOB_OK;
}

/* ---- the public calls ----------------------------------------------------------------------------- */

typedef struct model_output {
    const cblob_model *model;
    bool write_diff;
} model_output;

static cblob_status emit_model(const void *what, cb_sink *sink)
{
    const model_output *output = what;
    return model_emit(output->model, output->write_diff, sink);
}

CBLOB_API cblob_status cblob_model_to_proto(const cblob_model *model, int32_t write_diff, uint8_t *buffer,
                                            size_t buffer_size, size_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(out_size);
    const model_output output = {model, write_diff == 1};
    return cb_emit_to_buffer(emit_model, &output, "NetParameter", buffer, buffer_size, out_size);
}

CBLOB_API cblob_status cblob_model_to_proto_file(const cblob_model *model, int32_t write_diff, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(path);
    const model_output output = {model, write_diff == 1};
    return cb_emit_to_file(model->context, emit_model, &output, path);
}
