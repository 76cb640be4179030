/* SPDX-License-Identifier: BSD-2-Clause */
/* The public entry points for BlobProto and BlobProtoVector, and format detection. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "io.h"
#include "proto_io.h"
#include "proto_net.h"
#include "identify.h"
#include "status.h"

/* ---- detection ---------------------------------------------------------------------------- */

CBLOB_API cblob_status cblob_proto_detect(const uint8_t *bytes, size_t size, cblob_proto_kind *out_kind)
{
    CB_ENTER();
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_kind);
    return cb_proto_detect_kind(bytes, size, out_kind);
}

CBLOB_API cblob_status cblob_proto_detect_file(const char *path, cblob_proto_kind *out_kind)
{
    CB_ENTER();
    CB_REQUIRE(path);
    CB_REQUIRE(out_kind);
    cb_input input;
    CB_TRY(cb_input_open(path, &input));
    cblob_status status = cb_proto_detect_kind(input.bytes, input.size, out_kind);
    cb_input_close(&input);
    return status;
}

/* ---- one blob ------------------------------------------------------------------------------ */

static cblob_status blob_to_buffer(cblob_blob *blob, int32_t write_diff, uint8_t *buffer, size_t buffer_size,
                                   size_t *out_size, const char *path)
{
    cb_blob_message message;
    CB_TRY(cb_blob_message_init(&message, blob, write_diff == 1, "the blob"));
    cblob_status status = path != NULL ? cb_pack_to_file(blob->context, &message.proto.base, path)
                                       : cb_pack_to_buffer(&message.proto.base, buffer, buffer_size, out_size);
    cb_blob_message_clear(&message);
    return status;
}

CBLOB_API cblob_status cblob_blob_to_proto(cblob_blob *blob, int32_t write_diff, uint8_t *buffer, size_t buffer_size,
                                           size_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(out_size);
    return blob_to_buffer(blob, write_diff, buffer, buffer_size, out_size, NULL);
}

CBLOB_API cblob_status cblob_blob_to_proto_file(cblob_blob *blob, int32_t write_diff, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(path);
    return blob_to_buffer(blob, write_diff, NULL, 0, NULL, path);
}

static cblob_status load_blob(cblob_blob *blob, const uint8_t *bytes, size_t size, bool reshape)
{
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_blob_layout layout;
    CB_TRY(cb_blob_scan(bytes, size, &layout));
    return cb_blob_load(blob, bytes, &layout, &root, reshape);
}

CBLOB_API cblob_status cblob_blob_from_proto(cblob_blob *blob, const uint8_t *bytes, size_t size, int32_t reshape)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(bytes);
    CB_TRY(cb_check_bool("reshape", reshape));
    return load_blob(blob, bytes, size, reshape == 1);
}

CBLOB_API cblob_status cblob_blob_from_proto_file(cblob_blob *blob, const char *path, int32_t reshape)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(path);
    CB_TRY(cb_check_bool("reshape", reshape));
    cb_input input;
    CB_TRY(cb_read_file(blob->context, path, &input));
    cblob_status status = load_blob(blob, input.bytes, input.size, reshape == 1);
    cb_input_close(&input);
    return status;
}

CBLOB_API cblob_status cblob_blob_shape_equals_proto(const cblob_blob *blob, const uint8_t *bytes, size_t size,
                                                     int32_t *out_equal)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_equal);
    cb_blob_layout layout;
    CB_TRY(cb_blob_scan(bytes, size, &layout));
    *out_equal = cb_blob_layout_shape_equals(&layout, &blob->shape) ? 1 : 0;
    return CBLOB_OK;
}

/* A new blob of the dtype the BlobProto holds, loaded from it. */
static cblob_status create_blob(cblob_context *context, const uint8_t *input, const cb_blob_layout *layout,
                                const cb_wire_path *path, cblob_blob **out)
{
    cblob_blob *blob;
    CB_TRY(cb_blob_new(context, cb_blob_layout_dtype(layout), &blob));
    cblob_status status = cb_blob_load(blob, input, layout, path, true);
    if (status != CBLOB_OK) {
        cb_blob_release(blob);
        return status;
    }
    *out = blob;
    return CBLOB_OK;
}

cblob_status cb_blob_create_from_proto_bytes(cblob_context *context, const uint8_t *bytes, size_t size, cblob_blob **out)
{
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_blob_layout layout;
    CB_TRY(cb_blob_scan(bytes, size, &layout));
    return create_blob(context, bytes, &layout, &root, out);
}

CBLOB_API cblob_status cblob_blob_create_from_proto(cblob_context *context, const uint8_t *bytes, size_t size,
                                                    cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_blob);
    return cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_BLOB,
                            cb_blob_create_from_proto_bytes(context, bytes, size, out_blob));
}

CBLOB_API cblob_status cblob_blob_create_from_proto_file(cblob_context *context, const char *path,
                                                         cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_blob);
    cb_input input;
    CB_TRY(cb_read_file(context, path, &input));
    cblob_status status = cb_explain_bytes(path, input.bytes, input.size, CBLOB_FILE_BLOB,
                                           cb_blob_create_from_proto_bytes(context, input.bytes, input.size, out_blob));
    cb_input_close(&input);
    return status;
}

/* ---- blob vectors ------------------------------------------------------------------------- */

static cblob_status vector_to_buffer(cblob_blob *const *blobs, int64_t num_blobs, int32_t write_diff, uint8_t *buffer,
                                     size_t buffer_size, size_t *out_size, const char *path)
{
    cb_blob_message *messages = calloc((size_t)num_blobs + 1, sizeof *messages);
    Caffe__BlobProto **protos = calloc((size_t)num_blobs + 1, sizeof *protos);
    cblob_status status = messages != NULL && protos != NULL
                              ? CBLOB_OK
                              : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " messages", num_blobs);
    int64_t made = 0;
    for (; status == CBLOB_OK && made < num_blobs; ++made) {
        char what[48];
        snprintf(what, sizeof what, "blobs[%" PRId64 "]", made);
        status = cb_blob_message_init(&messages[made], blobs[made], write_diff == 1, what);
        protos[made] = &messages[made].proto;
    }
    if (status == CBLOB_OK) {
        Caffe__BlobProtoVector vector;
        caffe__blob_proto_vector__init(&vector);
        vector.n_blobs = (size_t)num_blobs;
        vector.blobs = protos;
        status = path != NULL ? cb_pack_to_file(num_blobs > 0 ? blobs[0]->context : NULL, &vector.base, path)
                              : cb_pack_to_buffer(&vector.base, buffer, buffer_size, out_size);
    }
    for (int64_t i = 0; messages != NULL && i < made; ++i)
        cb_blob_message_clear(&messages[i]);
    free(messages);
    free(protos);
    return status;
}

CBLOB_API cblob_status cblob_blob_vector_to_proto(cblob_blob *const *blobs, int64_t num_blobs, int32_t write_diff,
                                                  uint8_t *buffer, size_t buffer_size, size_t *out_size)
{
    CB_ENTER();
    CB_TRY(cb_check_blob_array("blobs", blobs, num_blobs));
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(out_size);
    return vector_to_buffer(blobs, num_blobs, write_diff, buffer, buffer_size, out_size, NULL);
}

CBLOB_API cblob_status cblob_blob_vector_to_proto_file(cblob_blob *const *blobs, int64_t num_blobs,
                                                       int32_t write_diff, const char *path)
{
    CB_ENTER();
    CB_TRY(cb_check_blob_array("blobs", blobs, num_blobs));
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(path);
    return vector_to_buffer(blobs, num_blobs, write_diff, NULL, 0, NULL, path);
}

static cblob_status check_room(int64_t max_blobs, cblob_blob **out_blobs)
{
    if (max_blobs < 0)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "max_blobs is %" PRId64 "; it cannot be negative", max_blobs);
    if (max_blobs > 0 && out_blobs == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "out_blobs is NULL but max_blobs is %" PRId64, max_blobs);
    return CBLOB_OK;
}

static cblob_status read_vector(cblob_context *context, const cb_input *input, int64_t max_blobs,
                                cblob_blob **out_blobs, int64_t *out_num_blobs)
{
    cb_blob_list list;
    CB_TRY(cb_vector_scan(input->bytes, input->size, &list));
    cblob_status status = CBLOB_OK;
    if (out_blobs != NULL && max_blobs < list.count)
        status = cb_fail(CBLOB_ERR_OUT_OF_RANGE, "out_blobs has room for %" PRId64 " blobs but the vector holds %" PRId64,
                         max_blobs, list.count);
    /* Made into a scratch array first: the caller's array is written only on success. */
    cblob_blob **made = NULL;
    int64_t count = 0;
    if (status == CBLOB_OK && out_blobs != NULL && list.count > 0) {
        made = calloc((size_t)list.count, sizeof *made);
        if (made == NULL)
            status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " blob handles", list.count);
        const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
        while (status == CBLOB_OK && count < list.count) {
            const cb_blob_layout *layout = &list.items[count];
            status = create_blob(context, input->bytes, layout, &root, &made[count]);
            if (status == CBLOB_OK) {
                cb_input_done_with(input, layout->offset, layout->length);
                ++count;
            }
        }
    }
    if (status == CBLOB_OK) {
        for (int64_t i = 0; i < count; ++i)
            out_blobs[i] = made[i];
        *out_num_blobs = list.count;
    } else {
        for (int64_t i = 0; i < count; ++i)
            cb_blob_release(made[i]);
    }
    free(made);
    cb_blob_list_free(&list);
    return status;
}

CBLOB_API cblob_status cblob_blob_vector_from_proto(cblob_context *context, const uint8_t *bytes, size_t size,
                                                    int64_t max_blobs, cblob_blob **out_blobs, int64_t *out_num_blobs)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_TRY(check_room(max_blobs, out_blobs));
    CB_REQUIRE(out_num_blobs);
    const cb_input input = cb_input_bytes(bytes, size);
    return cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_BLOB_VECTOR,
                            read_vector(context, &input, max_blobs, out_blobs, out_num_blobs));
}

CBLOB_API cblob_status cblob_blob_vector_from_proto_file(cblob_context *context, const char *path, int64_t max_blobs,
                                                         cblob_blob **out_blobs, int64_t *out_num_blobs)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_TRY(check_room(max_blobs, out_blobs));
    CB_REQUIRE(out_num_blobs);
    cb_input input;
    CB_TRY(cb_read_file(context, path, &input));
    cblob_status status = cb_explain_bytes(path, input.bytes, input.size, CBLOB_FILE_BLOB_VECTOR,
                                           read_vector(context, &input, max_blobs, out_blobs, out_num_blobs));
    cb_input_close(&input);
    return status;
}

cblob_status cb_blob_vector_read(cblob_context *context, const cb_input *input, cblob_blob ***out_blobs,
                                 int64_t *out_count)
{
    int64_t count = 0;
    CB_TRY(read_vector(context, input, 0, NULL, &count));
    cblob_blob **blobs = calloc((size_t)count + 1, sizeof *blobs);
    if (blobs == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " blob handles", count);
    const cblob_status status = read_vector(context, input, count, blobs, &count);
    if (status != CBLOB_OK) {
        free(blobs);
        return status;
    }
    *out_blobs = blobs;
    *out_count = count;
    return CBLOB_OK;
}
