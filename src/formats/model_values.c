/* SPDX-License-Identifier: BSD-2-Clause */
#include "model_values.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "half.h"
#include "host_memory.h"
#include "io.h"
#include "source.h"
#include "status.h"
#include "threads.h"
#include "zip.h"

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

static size_t dtype_size(uint8_t dtype)
{
    return cb_dtype_find((cblob_dtype)dtype)->size;
}

/* ---- values still in the file -------------------------------------------------------------------- */

/* Reads the values of an UNREAD blob into its arrays: the frame's pieces, in order, tell where each
 * field of values lies in the file (the blob's values are packed: others are read at open). */
static cblob_status read_values(const cblob_model *model, const cb_model_blob *blob, uint8_t *arrays[2])
{
    /* The frame starts with the field's tag and length, which lie in the file as they are. */
    size_t pos = cb_frame_body(blob);
    uint64_t offset = blob->file_offset + pos;
    int64_t filled[2] = {0, 0};
    cb_frame_piece piece;
    while (cb_frame_next(blob, &pos, &piece)) {
        offset += piece.size;
        if (!piece.values)
            continue;
        if (!piece.packed) /* unpacked values were read at open: such a blob is never left in the file */
            return cb_fail(CBLOB_ERR_INTERNAL, "unpacked values left in the file");
        const size_t element = piece.is_double ? 8 : 4;
        const size_t bytes = (size_t)piece.count * element;
        CB_TRY(cb_source_read_values(model->file, offset, arrays[piece.part] + (size_t)filled[piece.part] * element,
                                     bytes, NULL));
        filled[piece.part] += piece.count;
        offset += bytes;
    }
    return CBLOB_OK;
}

void cb_widen_halves_in_place(uint8_t *to, int64_t count, bool bfloat)
{
    const uint8_t *in = to + (size_t)count * 2;
    for (int64_t i = 0; i < count; ++i) {
        uint16_t bits;
        memcpy(&bits, in + (size_t)i * 2, 2);
        const float value = bfloat ? cb_bfloat16_to_float(bits) : cb_half_to_float(bits);
        memcpy(to + (size_t)i * 4, &value, 4);
    }
}

/* Reads the data of an UNREAD blob without a frame (a tensor of a safetensors or npz file) into
 * `to` (the data's bytes in the blob's dtype): the file's bytes straight into place, half floats
 * read into the array's upper part and widened in place (cb_widen_halves_in_place), and the bytes
 * checked against the CRC-32 the npz archive gives. */
static cblob_status read_tensor(const cblob_model *model, const cb_model_blob *blob, uint8_t *to, size_t size)
{
    const bool half = blob->flags & (CB_BLOB_FILE_HALF | CB_BLOB_FILE_BFLOAT16);
    const int64_t count = cb_model_blob_count(blob);
    const size_t file_bytes = half ? (size_t)count * 2 : size;
    uint8_t *in = to + (size - file_bytes);
    const bool checked = blob->flags & CB_BLOB_FILE_CRC;
    uint32_t crc = 0;
    if (blob->flags & CB_BLOB_FILE_DEFLATED)
        CB_TRY(cb_zip_inflate_from_file(model->file, blob->file_offset, (uint64_t)blob->dims[blob->num_axes],
                                        (uint64_t)blob->dims[blob->num_axes + 1], in, file_bytes, &crc));
    else
        CB_TRY(cb_source_read_values(model->file, blob->file_offset, in, file_bytes, checked ? &crc : NULL));
    if (checked) {
        if (crc != blob->values_crc)
            return cb_fail(CBLOB_ERR_PARSE, "malformed npz: a member's values have CRC-32 0x%08" PRIx32 " where the "
                           "archive says 0x%08" PRIx32 " (the archive is corrupt)", crc, blob->values_crc);
    }
    if (half)
        cb_widen_halves_in_place(to, count, blob->flags & CB_BLOB_FILE_BFLOAT16);
    return CBLOB_OK;
}

cblob_status cb_model_load_values(const cblob_model *model, cb_model_blob *blob)
{
    if (!(blob->flags & CB_BLOB_UNREAD))
        return CBLOB_OK;
    if (blob->frame == NULL) { /* a tensor's data (its diff, if any, was read at open) */
        const size_t size = cb_model_blob_part_bytes(blob, CBLOB_PART_DATA);
        uint8_t *data = NULL;
        CB_TRY(cb_host_alloc(size, false, (void **)&data));
        cb_context_use_threads(model->context);
        const cblob_status status = read_tensor(model, blob, data, size);
        if (status != CBLOB_OK) {
            cb_host_free(data, size);
            return status;
        }
        blob->data = data;
        blob->flags = (uint8_t)((blob->flags & ~(CB_BLOB_UNREAD | CB_BLOB_FILE_HALF | CB_BLOB_FILE_BFLOAT16 |
                                                 CB_BLOB_FILE_CRC | CB_BLOB_FILE_DEFLATED)) |
                                CB_BLOB_DATA_HOST);
        return CBLOB_OK;
    }
    const size_t sizes[2] = {cb_model_blob_part_bytes(blob, CBLOB_PART_DATA),
                             cb_model_blob_part_bytes(blob, CBLOB_PART_DIFF)};
    uint8_t *arrays[2] = {NULL, NULL};
    cblob_status status = CBLOB_OK;
    for (int part = 0; part < 2 && status == CBLOB_OK; ++part)
        if (sizes[part] > 0)
            status = cb_host_alloc(sizes[part], false, (void **)&arrays[part]);
    if (status == CBLOB_OK) {
        cb_context_use_threads(model->context);
        status = read_values(model, blob, arrays);
    }
    if (status != CBLOB_OK) {
        cb_host_free(arrays[0], sizes[0]);
        cb_host_free(arrays[1], sizes[1]);
        return status;
    }
    blob->data = arrays[0];
    blob->diff = arrays[1];
    blob->flags = (uint8_t)((blob->flags & ~CB_BLOB_UNREAD) | (arrays[0] != NULL ? CB_BLOB_DATA_HOST : 0) |
                            (arrays[1] != NULL ? CB_BLOB_DIFF_HOST : 0));
    return CBLOB_OK;
}

cblob_status cb_model_load_all(const cblob_model *model)
{
    if (model->file == NULL)
        return CBLOB_OK;
    for (int64_t i = 0; i < model->num_layers; ++i)
        for (uint32_t j = 0; j < model->layers[i].num_blobs; ++j)
            CB_TRY(cb_model_load_values(model, &model->layers[i].blobs[j]));
    return CBLOB_OK;
}

/* ---- handles ---------------------------------------------------------------------------------- */

static void release_values(void *ptr, void *size)
{
    cb_host_free(ptr, (size_t)(uintptr_t)size);
}

/* Gives a blob's arrays to a new handle, reshaped to target: adopted as its fresh storage when they
 * are host memory of its dtype and nothing pins host memory, else copied (a diff of the other
 * dtype converted). Every step that can fail runs before anything changes. adopted[part] tells
 * which were taken. */
static cblob_status fill(cblob_blob *handle, const cb_shape *target, const cb_model_blob *blob, bool adopted[2])
{
    void *values[CB_PARTS] = {blob->data, blob->diff};
    const uint8_t dtypes[CB_PARTS] = {blob->dtype, blob->diff_dtype};
    const bool host[CB_PARTS] = {blob->flags & CB_BLOB_DATA_HOST, blob->flags & CB_BLOB_DIFF_HOST};
    cb_reshape plan;
    CB_TRY(cb_reshape_prepare(handle, target->num_axes, target->dims, &plan));
    /* The data head becomes AT_CPU even without values (Caffe's mutable_cpu_data). */
    CB_TRY(cb_reshape_ensure_storage(handle, &plan));
    const cb_device *pinning = cb_context_pinning_device(handle->context);
    void *destination[CB_PARTS] = {NULL, NULL};
    for (int part = 0; part < CB_PARTS; ++part) {
        adopted[part] = false;
        if (values[part] == NULL && part == CBLOB_PART_DIFF)
            continue; /* no diff: the diff stays as it is */
        adopted[part] = values[part] != NULL && host[part] && plan.fresh[part] != NULL && pinning == NULL &&
                        dtypes[part] == blob->dtype;
        if (adopted[part])
            continue;
        void *base;
        cblob_status status = cb_storage_mutable_cpu(cb_reshape_storage(handle, &plan, part), pinning, &base);
        if (status != CBLOB_OK) {
            cb_reshape_abandon(&plan);
            return status;
        }
        if (values[part] != NULL)
            destination[part] = base;
    }
    for (int part = 0; part < CB_PARTS; ++part) {
        if (adopted[part]) {
            const size_t size = cb_model_blob_part_bytes(blob, (cblob_part)part);
            cb_storage_set_cpu(plan.fresh[part], values[part], (cb_release){release_values, (void *)(uintptr_t)size});
        } else if (destination[part] != NULL && dtypes[part] == blob->dtype) {
            cb_parallel_copy(destination[part], values[part], (size_t)target->count * dtype_size(blob->dtype));
        } else if (destination[part] != NULL) {
            cb_convert_floats(destination[part], blob->dtype == CBLOB_DTYPE_FLOAT64, values[part],
                              dtypes[part] == CBLOB_DTYPE_FLOAT64, target->count);
        }
    }
    cb_reshape_commit(handle, &plan);
    return CBLOB_OK;
}

/* Makes a blob's handle, as cblob_blob_create_from_proto makes a blob. Its values leave the record
 * (the handle holds them now), except a diff of the other dtype: saving compares the handle's with
 * it (model_save.c). */
static cblob_status make_handle(const cblob_model *model, cb_model_blob *blob)
{
    CB_TRY(cb_model_load_values(model, blob));
    cb_shape shape;
    CB_TRY(cb_shape_make(blob->num_axes, blob->dims, dtype_size(blob->dtype), &shape));
    cblob_blob *handle = NULL;
    bool adopted[2] = {false, false};
    cblob_status status = cb_blob_new(model->context, (cblob_dtype)blob->dtype, &handle);
    if (status == CBLOB_OK)
        status = fill(handle, &shape, blob, adopted);
    if (status != CBLOB_OK) {
        cb_blob_release(handle);
        return status;
    }
    /* What the handle adopted is its own now; what it copied is dropped (the arena's stays put). */
    const uint8_t host[2] = {CB_BLOB_DATA_HOST, CB_BLOB_DIFF_HOST};
    void **arrays[2] = {&blob->data, &blob->diff};
    for (int part = 0; part < 2; ++part) {
        if (part == CBLOB_PART_DIFF && blob->diff_dtype != blob->dtype)
            continue;
        if (!adopted[part] && (blob->flags & host[part]))
            cb_host_free(*arrays[part], cb_model_blob_part_bytes(blob, (cblob_part)part));
        *arrays[part] = NULL;
        blob->flags &= (uint8_t)~host[part];
    }
    blob->handle = handle;
    return CBLOB_OK;
}

static cblob_status handle_locked(const cblob_model *model, int64_t layer, int64_t index, cblob_blob **out)
{
    cb_model_blob *blob = NULL;
    CB_TRY(cb_model_blob_at(model, layer, index, &blob));
    if (blob->handle == NULL)
        CB_TRY(make_handle(model, blob));
    *out = blob->handle;
    return CBLOB_OK;
}

cblob_status cb_model_blob_handle(const cblob_model *model, int64_t layer, int64_t index, cblob_blob **out)
{
    cb_model_lock(model);
    const cblob_status status = handle_locked(model, layer, index, out);
    cb_model_unlock(model);
    return status;
}

/* ---- reading values without a handle ---------------------------------------------------------- */

static void facts_of(const cb_model_blob *blob, cb_blob_facts *out)
{
    *out = (cb_blob_facts){0};
    if (blob->handle != NULL) {
        const cblob_blob *handle = blob->handle;
        out->dtype = handle->dtype->dtype;
        out->num_axes = handle->shape.num_axes;
        memcpy(out->dims, handle->shape.dims, (size_t)handle->shape.num_axes * sizeof *out->dims);
        out->count = handle->shape.count;
        out->has_diff = !cb_blob_never_accessed(handle, CBLOB_PART_DIFF);
        return;
    }
    out->dtype = (cblob_dtype)blob->dtype;
    out->num_axes = blob->num_axes;
    memcpy(out->dims, blob->dims, (size_t)blob->num_axes * sizeof *out->dims);
    out->count = cb_model_blob_count(blob);
    out->has_diff = blob->diff_dtype != 0;
}

cblob_status cb_model_blob_facts(const cblob_model *model, int64_t layer, int64_t index, cb_blob_facts *out)
{
    cb_model_lock(model);
    cb_model_blob *blob = NULL;
    const cblob_status status = cb_model_blob_at(model, layer, index, &blob);
    if (status == CBLOB_OK)
        facts_of(blob, out);
    cb_model_unlock(model);
    return status;
}

/* Elements [start, start + count) of a part from a blob's arrays, in the blob's dtype. */
static void read_arrays(const cb_model_blob *blob, cblob_part part, int64_t start, int64_t count, uint8_t *out)
{
    const size_t element = dtype_size(blob->dtype);
    const void *array = part == CBLOB_PART_DATA ? blob->data : blob->diff;
    const uint8_t dtype = part == CBLOB_PART_DATA ? blob->dtype : blob->diff_dtype;
    if (array == NULL) {
        memset(out, 0, (size_t)count * element);
        return;
    }
    if (dtype == blob->dtype) {
        memcpy(out, (const uint8_t *)array + (size_t)start * element, (size_t)count * element);
        return;
    }
    const size_t from_element = dtype_size(dtype);
    cb_convert_floats(out, blob->dtype == CBLOB_DTYPE_FLOAT64, (const uint8_t *)array + (size_t)start * from_element,
                      dtype == CBLOB_DTYPE_FLOAT64, count);
}

cblob_status cb_model_blob_read(const cblob_model *model, int64_t layer, int64_t index, cblob_part part, int64_t start,
                                int64_t count, void *out)
{
    cb_model_lock(model);
    cb_model_blob *blob = NULL;
    cblob_status status = cb_model_blob_at(model, layer, index, &blob);
    if (status == CBLOB_OK && blob->handle == NULL)
        status = cb_model_load_values(model, blob);
    if (status == CBLOB_OK && blob->handle != NULL) {
        void *host = NULL;
        status = cb_blob_host(blob->handle, part, false, &host);
        /* out may be the very memory read (a model's blobs replaced by a model sharing them). */
        if (status == CBLOB_OK && count > 0)
            memmove(out, (const uint8_t *)host + (size_t)start * blob->handle->dtype->size,
                    (size_t)count * blob->handle->dtype->size);
    } else if (status == CBLOB_OK && count > 0) {
        read_arrays(blob, part, start, count, out);
    }
    cb_model_unlock(model);
    return status;
}

cblob_status cb_model_blob_values(const cblob_model *model, int64_t layer, int64_t index, cblob_part part,
                                  const void **out)
{
    cb_model_lock(model);
    cb_model_blob *blob = NULL;
    cblob_status status = cb_model_blob_at(model, layer, index, &blob);
    if (status == CBLOB_OK && blob->handle == NULL)
        status = cb_model_load_values(model, blob);
    const void *values = NULL;
    if (status == CBLOB_OK && blob->handle != NULL) {
        void *host = NULL;
        status = cb_blob_host(blob->handle, part, false, &host);
        values = host;
    } else if (status == CBLOB_OK) {
        values = part == CBLOB_PART_DATA ? blob->data : blob->diff_dtype == blob->dtype ? blob->diff : NULL;
    }
    cb_model_unlock(model);
    CB_TRY(status);
    *out = values;
    return CBLOB_OK;
}

/* ---- the public calls -------------------------------------------------------------------------- */

CBLOB_API cblob_status cblob_model_layer_blob(const cblob_model *model, int64_t layer, int64_t index,
                                              cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_REQUIRE(out_blob);
    cblob_blob *blob;
    CB_TRY(cb_model_blob_handle(model, layer, index, &blob));
    cb_blob_retain(blob);
    *out_blob = blob;
    return CBLOB_OK;
}

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
