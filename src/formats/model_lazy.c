/* SPDX-License-Identifier: BSD-2-Clause */
/* Opening a model lazily: its structure now, each blob's values on first access.
 *
 * The open reads the file with pread into an image of it (io.h, cb_input_file_image: the parts not
 * read stay zero and cost no memory), in blocks of CB_SURVEY_BLOCK bytes: every field header, and
 * the whole of every field except the payloads of packed value fields (data, diff, double_data,
 * double_diff). Blobs small enough to be kept inline (cb_model_keeps_inline), blobs of unpacked
 * values and blobs without values are read whole. The builder of model_open.c then makes the
 * records from the image exactly as from the file, except that blobs whose values go in arrays are
 * LAZY and UNREAD: their arrays are made, and their values read straight into them, on first
 * access (cb_model_load_values). A model of large blobs is opened reading a few KiB per layer.
 *
 * The file stays open while the model lives. Every read checks that it is still the file that was
 * opened (io.h); when it changed, the access fails with CBLOB_ERR_IO rather than mix two files.
 * Anything unusual in the structure (a malformed field, a group) makes the open read that whole
 * message, so the builder reports faults as an eager open would. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host_memory.h"
#include "identify.h"
#include "io.h"
#include "model.h"
#include "progress.h"
#include "proto_blob.h"
#include "status.h"
#include "threads.h"

/* The open reads the file in blocks of this size, each once. */
#define CB_SURVEY_BLOCK ((size_t)1024)
/* Bytes enough for any field's tag and length (or varint value): 10 + 10, and then some. */
#define CB_FIELD_HEADER_MAX 24

typedef struct surveyor {
    const cb_input_file *file;
    uint8_t *image;
    size_t size;
    uint8_t *done; /* a bit per block already read */
} surveyor;

static bool block_read(const surveyor *s, size_t block)
{
    return s->done[block / 8] & (1u << (block % 8));
}

/* Reads the blocks covering [from, to) that were not read yet, runs of them at once. */
static cblob_status ensure(surveyor *s, size_t from, size_t to)
{
    if (to > s->size)
        to = s->size;
    if (from >= to)
        return CBLOB_OK;
    const size_t last = (to - 1) / CB_SURVEY_BLOCK;
    for (size_t block = from / CB_SURVEY_BLOCK; block <= last;) {
        if (block_read(s, block)) {
            ++block;
            continue;
        }
        size_t end = block;
        while (end <= last && !block_read(s, end))
            s->done[end / 8] |= (uint8_t)(1u << (end % 8)), ++end;
        const size_t start_byte = block * CB_SURVEY_BLOCK;
        const size_t end_byte = end * CB_SURVEY_BLOCK < s->size ? end * CB_SURVEY_BLOCK : s->size;
        CB_TRY(cb_input_file_read(s->file, start_byte, s->image + start_byte, end_byte - start_byte));
        block = end;
    }
    return CBLOB_OK;
}

/* ---- the survey ----------------------------------------------------------------------------- */

typedef enum cb_message_kind { CB_NET, CB_LAYER, CB_V1_LAYER, CB_V0_LAYER, CB_BLOB } cb_message_kind;

/* The field number of the tag at pos, and whether it starts a group, read from the image. */
static bool peek_group(const uint8_t *image, size_t pos, size_t end)
{
    uint64_t tag = 0;
    size_t length = 0;
    return pos < end && cb_varint_decode(image + pos, end - pos, &tag, &length) == CB_VARINT_OK && (tag & 7) == 3;
}

static cblob_status survey_message(surveyor *s, size_t start, size_t end, cb_message_kind kind);

/* A BlobProto: its fields but the packed values; the values too when they will be kept inline,
 * and everything when the blob is not ordinary (no values, unpacked values, a fault). */
static cblob_status survey_blob(surveyor *s, const cb_wire_field *field)
{
    const size_t start = field->payload, end = field->payload + field->length;
    CB_TRY(survey_message(s, start, end, CB_BLOB));
    cb_saved_error saved;
    cb_error_save(&saved);
    const cb_wire_path path = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_blob_layout layout;
    cb_shape shape;
    const bool ordinary = cb_blob_layout_scan(cb_wire_range(s->image, start, field->length, &path), &layout) ==
                              CBLOB_OK &&
                          cb_blob_layout_check(&layout, &path, cb_blob_layout_dtype(&layout) == CBLOB_DTYPE_FLOAT64 ? 8 : 4,
                                               &shape) == CBLOB_OK;
    cb_error_restore(&saved);
    bool unpacked = layout.has_group;
    for (int i = 0; i < CB_VALUES_FIELDS && ordinary; ++i)
        unpacked = unpacked || layout.values[i].unpacked;
    if (!ordinary || unpacked || shape.count == 0 || cb_model_keeps_inline(&layout, &shape))
        return ensure(s, start, end);
    return CBLOB_OK;
}

static bool is_value_field(uint32_t number)
{
    return number == 5 || number == 6 || number == 8 || number == 9;
}

/* Reads what the builder will look at in the message [start, end) of the given kind. */
static cblob_status survey_message(surveyor *s, size_t start, size_t end, cb_message_kind kind)
{
    cb_saved_error saved;
    cb_error_save(&saved);
    cb_wire wire = cb_wire_range(s->image, start, end - start, NULL);
    for (;;) {
        const size_t at = wire.pos;
        CB_TRY(ensure(s, at, at + CB_FIELD_HEADER_MAX));
        cb_wire_field field;
        if (peek_group(s->image, at, end) || cb_wire_next(&wire, &field) != CBLOB_OK) {
            cb_error_restore(&saved);
            return ensure(s, at, end); /* the builder walks it and says what is wrong */
        }
        if (field.number == 0)
            return CBLOB_OK;
        if (field.type != CB_WIRE_LENGTH) {
            if (kind == CB_BLOB && is_value_field(field.number)) /* unpacked values: the rest, at once */
                return ensure(s, at, end);
            continue;
        }
        const size_t payload_end = field.payload + field.length;
        if (kind == CB_NET && (field.number == 100 || field.number == 2))
            CB_TRY(survey_message(s, field.payload, payload_end, field.number == 2 ? CB_V1_LAYER : CB_LAYER));
        else if ((kind == CB_LAYER && field.number == 7) || (kind == CB_V1_LAYER && field.number == 6) ||
                 (kind == CB_V0_LAYER && field.number == 50))
            CB_TRY(survey_blob(s, &field));
        else if (kind == CB_V1_LAYER && field.number == 1)
            CB_TRY(survey_message(s, field.payload, payload_end, CB_V0_LAYER));
        else if (!(kind == CB_BLOB && is_value_field(field.number)))
            CB_TRY(ensure(s, field.payload, payload_end));
    }
}

/* ---- opening ------------------------------------------------------------------------------- */

static cblob_status survey_and_build(cblob_context *context, cb_input_file *file, const cb_input *image,
                                     cblob_model **out)
{
    const size_t blocks = (image->size + CB_SURVEY_BLOCK - 1) / CB_SURVEY_BLOCK;
    surveyor s = {file, (uint8_t *)image->bytes, image->size, calloc(blocks / 8 + 1, 1)};
    if (s.done == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to note which parts of the file were read");
    cblob_status status = survey_message(&s, 0, image->size, CB_NET);
    free(s.done);
    CB_TRY(status);
    return cb_model_build_lazy(context, image->bytes, image->size, out);
}

cblob_status cb_model_open_lazy_file(cblob_context *context, cb_input_file *file, cblob_model **out)
{
    cb_input image;
    CB_TRY(cb_input_file_image(file, &image));
    cblob_model *model = NULL;
    cblob_status status = survey_and_build(context, file, &image, &model);
    cb_input_close(&image);
    if (status == CBLOB_OK && model->num_layers == 0) { /* a blob, a vector, nothing: the caller reads it whole */
        cb_model_free(model);
        return CBLOB_ERR_PARSE;
    }
    if (status != CBLOB_OK)
        return status;
    model->file = file;
    *out = model;
    return CBLOB_OK;
}

cblob_status cb_model_open_lazy(cblob_context *context, const char *path, cblob_model **out)
{
    cb_input_file *file = NULL;
    CB_TRY(cb_input_file_open(path, &file));
    cblob_status status = cb_model_open_lazy_file(context, file, out);
    if (status == CBLOB_OK)
        return CBLOB_OK;
    if (status != CBLOB_ERR_IO && status != CBLOB_ERR_OUT_OF_MEMORY) {
        /* The eager open reads the whole file (from the same descriptor) and explains what it holds. */
        cb_input whole;
        status = cb_input_file_read_all(file, &whole);
        if (status == CBLOB_OK) {
            status = cb_explain_bytes(path, whole.bytes, whole.size, CBLOB_FILE_NET,
                                      cb_model_build(context, whole.bytes, whole.size, NULL, NULL, out));
            cb_input_close(&whole);
        }
    }
    cb_input_file_close(file);
    return status;
}

CBLOB_API cblob_status cblob_model_open_file_lazy(cblob_context *context, const char *path, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    return cb_model_open_lazy(context, path, out_model);
}

/* ---- loading values -------------------------------------------------------------------------- */

typedef struct cb_file_range {
    const cb_input_file *file;
    uint64_t offset;
    uint8_t *to;
} cb_file_range;

static cblob_status read_range(void *arg, int64_t begin, int64_t end)
{
    const cb_file_range *range = arg;
    return cb_input_file_read(range->file, range->offset + (uint64_t)begin, range->to + begin, (size_t)(end - begin));
}

/* Values are read in pieces of this size, each told to the call's progress. */
#define CB_LOAD_PIECE CB_READ_PIECE

/* Reads bytes of the file straight into their place, large ones on the pool's threads, which
 * first-touch the fresh pages they fill; a call that reads the whole model (cb_model_load_all)
 * tells its progress after each piece. */
static cblob_status read_into(const cb_input_file *file, uint64_t offset, void *to, size_t length)
{
    cb_progress *progress = cb_progress_current(CB_PROGRESS_READING);
    const size_t most = progress != NULL ? CB_LOAD_PIECE : length; /* in one piece when no one is told */
    for (size_t done = 0; done < length;) {
        const size_t piece = length - done < most ? length - done : most;
        cb_file_range range = {file, offset + done, (uint8_t *)to + done};
        CB_TRY(cb_parallel_for((int64_t)piece, 2, 4096, read_range, &range));
        CB_TRY(cb_progress_add(progress, piece));
        done += piece;
    }
    return CBLOB_OK;
}

/* A run of unpacked elements, each behind its tag: read whole, then the elements picked out. */
static cblob_status read_unpacked(const cb_input_file *file, uint64_t offset, const cb_op *values, size_t element,
                                  uint8_t *to)
{
    const size_t stride = values->tag_size + element, size = (size_t)values->count * stride;
    uint8_t *run = NULL;
    CB_TRY(cb_host_alloc(size, false, (void **)&run));
    cblob_status status = read_into(file, offset, run, size);
    for (int64_t i = 0; status == CBLOB_OK && i < values->count; ++i)
        memcpy(to + (size_t)i * element, run + (size_t)i * stride + values->tag_size, element);
    cb_host_free(run, size);
    return status;
}

/* Reads every VALUES operation of the blob into the arrays; the file offset moves over the
 * BlobProto's bytes as the operations hold them, in order. */
static cblob_status read_values(const cb_input_file *file, const cb_op *blob, uint8_t *arrays[2])
{
    uint64_t offset = blob->file_offset;
    for (const uint8_t *cursor = blob->inner;;) {
        cb_op op;
        cb_op_read(&cursor, true, &op);
        if (op.code == CB_OP_END)
            return CBLOB_OK;
        if (op.code == CB_OP_BYTES) {
            offset += op.size;
            continue;
        }
        const size_t element = (op.values_flags & CB_VALUES_DOUBLE) ? 8 : 4;
        uint8_t *to = arrays[(op.values_flags & CB_VALUES_OF_DIFF) ? 1 : 0] + (size_t)op.first * element;
        if (op.values_flags & CB_VALUES_UNPACKED) {
            CB_TRY(read_unpacked(file, offset, &op, element, to));
            offset += (uint64_t)op.count * (op.tag_size + element);
        } else {
            offset += op.tag_size + op.length_size;
            CB_TRY(read_into(file, offset, to, (size_t)op.count * element));
            offset += (uint64_t)op.count * element;
        }
    }
}

static size_t part_bytes(const cb_op *blob, bool diff)
{
    if (diff && !(blob->blob_flags & CB_BLOB_HAS_DIFF))
        return 0;
    int64_t count = 1;
    for (int32_t i = 0; i < blob->num_axes; ++i)
        count *= blob->dims[i];
    const bool is_double = diff ? (blob->blob_flags & CB_BLOB_DIFF_DOUBLE) : (blob->blob_flags & CB_BLOB_DOUBLE);
    return (size_t)count * (is_double ? 8 : 4);
}

cblob_status cb_model_load_values(const cblob_model *model, cb_op *blob)
{
    if (!(blob->blob_flags & CB_BLOB_UNREAD))
        return CBLOB_OK;
    const size_t sizes[2] = {part_bytes(blob, false), part_bytes(blob, true)};
    uint8_t *arrays[2] = {NULL, NULL};
    cblob_status status = CBLOB_OK;
    for (int part = 0; part < 2 && status == CBLOB_OK; ++part)
        if (sizes[part] > 0)
            status = cb_host_alloc(sizes[part], false, (void **)&arrays[part]);
    if (status == CBLOB_OK) {
        cb_context_use_threads(model->context);
        status = read_values(model->file, blob, arrays);
    }
    if (status != CBLOB_OK) {
        cb_host_free(arrays[0], sizes[0]);
        cb_host_free(arrays[1], sizes[1]);
        return status;
    }
    cb_op_set_arrays(blob, arrays[0], arrays[1]);
    *blob->flags &= (uint8_t)~CB_BLOB_UNREAD;
    blob->blob_flags &= (uint8_t)~CB_BLOB_UNREAD;
    return CBLOB_OK;
}

/* The bytes of the file read_values reads for an UNREAD blob. */
static uint64_t values_in_file(const cb_op *blob)
{
    uint64_t bytes = 0;
    for (const uint8_t *cursor = blob->inner;;) {
        cb_op op;
        cb_op_read(&cursor, true, &op);
        if (op.code == CB_OP_END)
            return bytes;
        if (op.code == CB_OP_VALUES)
            bytes += (uint64_t)op.count * (((op.values_flags & CB_VALUES_DOUBLE) ? 8 : 4) +
                                           ((op.values_flags & CB_VALUES_UNPACKED) ? op.tag_size : 0));
    }
}

/* Loads the UNREAD blobs of the operations, depth first; or, with a count, adds up the bytes that
 * takes. */
static cblob_status load_all_in(const cblob_model *model, const uint8_t *ops, uint64_t *count)
{
    for (const uint8_t *cursor = ops;;) {
        cb_op op;
        cb_op_read(&cursor, false, &op);
        if (op.code == CB_OP_END)
            return CBLOB_OK;
        if (op.code == CB_OP_MESSAGE)
            CB_TRY(load_all_in(model, op.inner, count));
        if (op.code == CB_OP_BLOB && count != NULL && (op.blob_flags & CB_BLOB_UNREAD))
            *count += values_in_file(&op);
        else if (op.code == CB_OP_BLOB && count == NULL)
            CB_TRY(cb_model_load_values(model, &op));
    }
}

cblob_status cb_model_load_all(const cblob_model *model)
{
    if (model->file == NULL)
        return CBLOB_OK;
    cb_progress *progress = cb_progress_current(CB_PROGRESS_READING);
    if (progress != NULL) {
        uint64_t total = 0;
        for (int64_t i = 0; i < model->num_layers; ++i)
            CB_TRY(load_all_in(model, cb_record_ops(model->layers[i]), &total));
        CB_TRY(cb_progress_size(progress, (int64_t)total));
    }
    for (int64_t i = 0; i < model->num_layers; ++i)
        CB_TRY(load_all_in(model, cb_record_ops(model->layers[i]), NULL));
    return CBLOB_OK;
}
