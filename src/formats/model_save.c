/* SPDX-License-Identifier: BSD-2-Clause */
/* Saving a model: re-emitting its records (model.h), and reading blobs' values without making
 * handles.
 *
 * A blob is written from its record when it still fits it: same dtype, same shape, and no diff to
 * add. Its fields are then re-emitted in their order with the current values (from the handle
 * when one was made, else from the record), so unchanged values give the same bytes and changed
 * ones change only their own; write_diff 0 leaves its diff fields out. Otherwise (reshaped, or a
 * diff written since it was read and none in the file) it is written as Caffe's ToProto writes it.
 * Nested messages keep their length bytes when their content kept its size. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "proto_blob.h"
#include "status.h"

/* Values stored in a file sit at any offset (a packed field starts after its tag and length), so
 * each element is copied in and out rather than read through a float or double pointer. */
void cb_convert_floats(void *dst, bool dst_double, const void *src, bool src_double, int64_t n)
{
    uint8_t *out = dst;
    const uint8_t *in = src;
    if (dst_double == src_double) {
        memcpy(dst, src, (size_t)n * (dst_double ? 8 : 4));
    } else if (dst_double) {
        for (int64_t i = 0; i < n; ++i) {
            float f;
            memcpy(&f, in + (size_t)i * 4, 4);
            const double d = f;
            memcpy(out + (size_t)i * 8, &d, 8);
        }
    } else {
        for (int64_t i = 0; i < n; ++i) {
            double d;
            memcpy(&d, in + (size_t)i * 8, 8);
            const float f = (float)d;
            memcpy(out + (size_t)i * 4, &f, 4);
        }
    }
}

/* ---- where a blob's values come from -------------------------------------------------------- */

typedef struct emitter {
    const cblob_model *model;
    bool write_diff;
    cb_sink *sink;
    int64_t layer;      /* for messages */
    const char *layer_name;
    cblob_blob **slots; /* the record's handles (NULL: none made) */
    int64_t next_blob;  /* the index of the next blob operation */
} emitter;

static bool values_double(const cb_op *values)
{
    return values->values_flags & CB_VALUES_DOUBLE;
}

static bool values_of_diff(const cb_op *values)
{
    return values->values_flags & CB_VALUES_OF_DIFF;
}

static size_t element_size(bool is_double)
{
    return is_double ? 8 : 4;
}

/* The stored values of a VALUES operation (inline, or in the blob's array at `first`). */
static const uint8_t *stored_values(const cb_op *blob, const cb_op *values, int64_t first)
{
    if (blob->arrays == NULL)
        return values->payload;
    void *data, *diff;
    cb_op_arrays(blob, &data, &diff);
    const uint8_t *array = values_of_diff(values) ? diff : data;
    return array == NULL ? NULL : array + (size_t)first * element_size(values_double(values));
}

static bool handle_is_double(const cblob_blob *handle)
{
    return handle->dtype->dtype == CBLOB_DTYPE_FLOAT64;
}

/* Writes a handle's values converted to the field's element type, through a small buffer. */
static void write_converted(cb_sink *sink, const uint8_t *values, bool from_double, bool to_double, int64_t count)
{
    uint8_t buffer[8192];
    const int64_t step = (int64_t)(sizeof buffer / 8);
    for (int64_t done = 0; done < count; done += step) {
        const int64_t n = count - done < step ? count - done : step;
        cb_convert_floats(buffer, to_double, values + (size_t)done * element_size(from_double), from_double, n);
        cb_sink_write(sink, buffer, (size_t)n * element_size(to_double));
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

/* The payload of VALUES: `count` elements from element `first` of its part. */
static cblob_status write_payload(emitter *e, const cb_op *blob, const cblob_blob *handle, const cb_op *values,
                                  int64_t first, int64_t count, int64_t element)
{
    const bool field_double = values_double(values);
    const uint8_t *stored = stored_values(blob, values, first);
    if (handle == NULL) {
        cb_sink_write(e->sink, stored + (size_t)element * element_size(field_double),
                      (size_t)count * element_size(field_double));
        return CBLOB_OK;
    }
    void *host = NULL;
    CB_TRY(cb_blob_host((cblob_blob *)handle, values_of_diff(values) ? CBLOB_PART_DIFF : CBLOB_PART_DATA, false, &host));
    const bool handle_double = handle_is_double(handle);
    const uint8_t *current = (const uint8_t *)host + (size_t)(first + element) * element_size(handle_double);
    if (handle_double == field_double)
        cb_sink_write(e->sink, current, (size_t)count * element_size(field_double));
    else if (stored != NULL &&
             still_converted(stored + (size_t)element * element_size(field_double), field_double, current, count))
        cb_sink_write(e->sink, stored + (size_t)element * element_size(field_double),
                      (size_t)count * element_size(field_double));
    else
        write_converted(e->sink, current, handle_double, field_double, count);
    return CBLOB_OK;
}

static cblob_status write_values(emitter *e, const cb_op *blob, const cblob_blob *handle, const cb_op *values,
                                 int64_t first)
{
    if (!(values->values_flags & CB_VALUES_UNPACKED)) {
        cb_sink_write(e->sink, values->tag, values->tag_size);
        cb_sink_write(e->sink, values->length, values->length_size);
        return write_payload(e, blob, handle, values, first, values->count, 0);
    }
    for (int64_t i = 0; i < values->count; ++i) {
        cb_sink_write(e->sink, values->tag, values->tag_size);
        CB_TRY(write_payload(e, blob, handle, values, first, 1, i));
    }
    return CBLOB_OK;
}

/* ---- sizes ------------------------------------------------------------------------------------ */

static uint64_t values_size(const cb_op *values)
{
    const uint64_t payload = (uint64_t)values->count * element_size(values_double(values));
    if (values->values_flags & CB_VALUES_UNPACKED)
        return (uint64_t)values->count * (values->tag_size + element_size(values_double(values)));
    return values->tag_size + values->length_size + payload;
}

static void write_frame(cb_sink *sink, const cb_op *op, uint64_t inner)
{
    cb_sink_write(sink, op->tag, op->tag_size);
    if (inner == op->original) {
        cb_sink_write(sink, op->length, op->length_size);
    } else {
        uint8_t length[10];
        cb_sink_write(sink, length, cb_varint_encode(length, inner));
    }
}

/* ---- blobs ------------------------------------------------------------------------------------ */

/* Whether a made handle can still be written from its blob's record. */
static bool fits_record(const emitter *e, const cb_op *blob, const cblob_blob *handle)
{
    cb_op loaded = *blob;
    cb_op_load_dims(&loaded);
    if (handle_is_double(handle) != ((blob->blob_flags & CB_BLOB_DOUBLE) != 0) ||
        handle->shape.num_axes != loaded.num_axes)
        return false;
    for (int32_t i = 0; i < loaded.num_axes; ++i)
        if (handle->shape.dims[i] != loaded.dims[i])
            return false;
    /* A diff written since the file was read, where the file has none, needs a field of its own. */
    return !e->write_diff || (blob->blob_flags & CB_BLOB_HAS_DIFF) || cb_blob_never_accessed(handle, CBLOB_PART_DIFF);
}

static bool values_written(const emitter *e, const cb_op *values)
{
    return e->write_diff || !values_of_diff(values);
}

/* The BlobProto's size as its record writes it. */
static uint64_t record_blob_size(const emitter *e, const cb_op *blob)
{
    if (blob->blob_flags & CB_BLOB_RAW)
        return blob->size;
    uint64_t size = 0;
    for (const uint8_t *cursor = blob->inner;;) {
        cb_op op;
        cb_op_read(&cursor, blob->arrays != NULL, &op);
        if (op.code == CB_OP_END)
            return size;
        if (op.code == CB_OP_BYTES)
            size += op.size;
        else if (op.code == CB_OP_VALUES && values_written(e, &op))
            size += values_size(&op);
    }
}

static cblob_status write_record_blob(emitter *e, const cb_op *blob, const cblob_blob *handle)
{
    write_frame(e->sink, blob, record_blob_size(e, blob));
    if (blob->blob_flags & CB_BLOB_RAW) {
        cb_sink_write(e->sink, blob->bytes, blob->size);
        return CBLOB_OK;
    }
    int64_t first[2] = {0, 0};
    for (const uint8_t *cursor = blob->inner;;) {
        cb_op op;
        cb_op_read(&cursor, blob->arrays != NULL, &op);
        if (op.code == CB_OP_END)
            return CBLOB_OK;
        if (op.code == CB_OP_BYTES) {
            cb_sink_write(e->sink, op.bytes, op.size);
        } else if (op.code == CB_OP_VALUES) {
            const int part = values_of_diff(&op);
            if (values_written(e, &op))
                CB_TRY(write_values(e, blob, handle, &op, first[part]));
            first[part] += op.count;
        }
    }
}

/* A blob as Caffe's ToProto writes it: the tag, then a fresh BlobProto. */
static cblob_status write_fresh_blob(emitter *e, const cb_op *op, cblob_blob *handle, int64_t index)
{
    char what[160];
    snprintf(what, sizeof what, "layer %" PRId64 " (%.64s) blob %" PRId64, e->layer, e->layer_name, index);
    cb_blob_message message;
    CB_TRY(cb_blob_message_init(&message, handle, e->write_diff, what));
    const size_t size = protobuf_c_message_get_packed_size(&message.proto.base);
    cb_sink_write(e->sink, op->tag, op->tag_size);
    uint8_t length[10];
    cb_sink_write(e->sink, length, cb_varint_encode(length, size));
    protobuf_c_message_pack_to_buffer(&message.proto.base, &e->sink->base);
    cb_blob_message_clear(&message);
    return CBLOB_OK;
}

static cblob_status write_blob(emitter *e, const cb_op *op)
{
    const int64_t index = e->next_blob++;
    cblob_blob *handle = e->slots != NULL ? e->slots[index] : NULL;
    if (op->code == CB_OP_BLOB && (handle == NULL || fits_record(e, op, handle)))
        return write_record_blob(e, op, handle);
    return write_fresh_blob(e, op, handle, index);
}

/* ---- operations --------------------------------------------------------------------------------- */

static cblob_status write_ops(emitter *e, const uint8_t *ops);

/* The size of operations as written: a counting sink over a copy of the emitter. */
static cblob_status measure_ops(const emitter *e, const uint8_t *ops, uint64_t *out)
{
    cb_sink counter;
    cb_sink_count(&counter);
    emitter measuring = *e;
    measuring.sink = &counter;
    CB_TRY(write_ops(&measuring, ops));
    CB_TRY(counter.status);
    *out = counter.size;
    return CBLOB_OK;
}

static cblob_status write_ops(emitter *e, const uint8_t *ops)
{
    for (const uint8_t *cursor = ops;;) {
        cb_op op;
        cb_op_read(&cursor, false, &op);
        switch (op.code) {
        case CB_OP_END: return e->sink->status;
        case CB_OP_BYTES: cb_sink_write(e->sink, op.bytes, op.size); break;
        case CB_OP_TEXT:
            cb_sink_write(e->sink, op.tag, op.tag_size);
            cb_sink_write(e->sink, op.length, op.length_size);
            cb_sink_write(e->sink, op.bytes, op.size);
            break;
        case CB_OP_MESSAGE: {
            uint64_t inner = 0;
            const int64_t next_blob = e->next_blob;
            CB_TRY(measure_ops(e, op.inner, &inner));
            e->next_blob = next_blob;
            write_frame(e->sink, &op, inner);
            CB_TRY(write_ops(e, op.inner));
            break;
        }
        case CB_OP_BLOB:
        case CB_OP_NEW_BLOB: CB_TRY(write_blob(e, &op)); break;
        default: return cb_fail(CBLOB_ERR_INTERNAL, "a layer record holds operation %d", op.code);
        }
    }
}

static cblob_status write_model(const cblob_model *model, bool write_diff, cb_sink *sink)
{
    cb_sink_write(sink, model->head.data, model->head.size);
    for (int64_t i = 0; i < model->num_layers; ++i) {
        emitter e = {.model = model, .write_diff = write_diff, .sink = sink, .layer = i,
                     .layer_name = cb_record_name(model->layers[i]), .slots = cb_record_slots(model->layers[i])};
        CB_TRY(write_ops(&e, cb_record_ops(model->layers[i])));
    }
    cb_sink_write(sink, model->trailer.data, model->trailer.size);
    return sink->status;
}

cblob_status cb_model_emit(const cblob_model *model, bool write_diff, cb_sink *sink)
{
    pthread_mutex_lock(&((cblob_model *)model)->lock);
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
    pthread_mutex_unlock(&((cblob_model *)model)->lock);
    return status;
}

/* ---- reading values without a handle ---------------------------------------------------------- */

cblob_status cb_model_blob_facts(const cblob_model *model, int64_t layer, int64_t index, cb_blob_facts *out)
{
    cb_model_blob found;
    CB_TRY(cb_model_find_blob(model, layer, index, &found));
    cb_blob_facts facts = {0};
    if (found.handle != NULL) {
        const cblob_blob *handle = found.handle;
        facts.dtype = handle->dtype->dtype;
        facts.num_axes = handle->shape.num_axes;
        memcpy(facts.dims, handle->shape.dims, sizeof facts.dims);
        facts.count = handle->shape.count;
        facts.has_diff = !cb_blob_never_accessed(handle, CBLOB_PART_DIFF);
    } else {
        cb_shape shape;
        CB_TRY(cb_model_blob_shape(&found.op, &shape));
        facts.dtype = (found.op.blob_flags & CB_BLOB_DOUBLE) ? CBLOB_DTYPE_FLOAT64 : CBLOB_DTYPE_FLOAT32;
        facts.num_axes = shape.num_axes;
        memcpy(facts.dims, shape.dims, sizeof facts.dims);
        facts.count = shape.count;
        facts.has_diff = found.op.blob_flags & CB_BLOB_HAS_DIFF;
    }
    *out = facts;
    return CBLOB_OK;
}

/* Elements [start, start + count) of a part from a record, converted to the blob's dtype. */
static void read_stored(const cb_op *blob, bool diff, int64_t start, int64_t count, uint8_t *out)
{
    const bool blob_double = blob->blob_flags & CB_BLOB_DOUBLE;
    memset(out, 0, (size_t)count * element_size(blob_double));
    if (blob->blob_flags & CB_BLOB_RAW)
        return;
    int64_t at = 0;
    for (const uint8_t *cursor = blob->inner;;) {
        cb_op op;
        cb_op_read(&cursor, blob->arrays != NULL, &op);
        if (op.code == CB_OP_END)
            return;
        if (op.code != CB_OP_VALUES || values_of_diff(&op) != diff)
            continue;
        const int64_t from = start > at ? start : at;
        const int64_t to = start + count < at + op.count ? start + count : at + op.count;
        if (from < to) {
            const uint8_t *stored = stored_values(blob, &op, at);
            cb_convert_floats(out + (size_t)(from - start) * element_size(blob_double), blob_double,
                              stored + (size_t)(from - at) * element_size(values_double(&op)), values_double(&op),
                              to - from);
        }
        at += op.count;
    }
}

cblob_status cb_model_blob_read(const cblob_model *model, int64_t layer, int64_t index, cblob_part part, int64_t start,
                                int64_t count, void *out)
{
    pthread_mutex_lock(&((cblob_model *)model)->lock);
    cb_model_blob found;
    cblob_status status = cb_model_find_blob(model, layer, index, &found);
    if (status == CBLOB_OK && found.handle == NULL)
        status = cb_model_load_values(model, &found.op);
    if (status == CBLOB_OK && found.handle != NULL) {
        void *host = NULL;
        status = cb_blob_host(found.handle, part, false, &host);
        if (status == CBLOB_OK && count > 0)
            memcpy(out, (const uint8_t *)host + (size_t)start * found.handle->dtype->size,
                   (size_t)count * found.handle->dtype->size);
    } else if (status == CBLOB_OK) {
        read_stored(&found.op, part == CBLOB_PART_DIFF, start, count, out);
    }
    pthread_mutex_unlock(&((cblob_model *)model)->lock);
    return status;
}

cblob_status cb_model_blob_values(const cblob_model *model, int64_t layer, int64_t index, cblob_part part,
                                  const void **out)
{
    cb_model_blob found;
    pthread_mutex_lock(&((cblob_model *)model)->lock);
    cblob_status status = cb_model_find_blob(model, layer, index, &found);
    if (status == CBLOB_OK && found.handle == NULL)
        status = cb_model_load_values(model, &found.op);
    pthread_mutex_unlock(&((cblob_model *)model)->lock);
    CB_TRY(status);
    *out = NULL;
    if (found.handle != NULL) {
        void *host = NULL;
        CB_TRY(cb_blob_host(found.handle, part, false, &host));
        *out = host;
    } else if (found.op.arrays != NULL) {
        void *data, *diff;
        cb_op_arrays(&found.op, &data, &diff);
        const bool same_dtype = part == CBLOB_PART_DATA || ((found.op.blob_flags & CB_BLOB_DOUBLE) != 0) ==
                                                               ((found.op.blob_flags & CB_BLOB_DIFF_DOUBLE) != 0);
        *out = part == CBLOB_PART_DATA ? data : same_dtype ? diff : NULL;
    }
    return CBLOB_OK;
}
