/* SPDX-License-Identifier: BSD-2-Clause */
/* The public entry points for BlobProto and BlobProtoVector, and format detection. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats_blob.h"
#include "alloc.h"
#include "identify.h"
#include "io.h"
#include "model_open.h"
#include "model_text.h"
#include "model_values.h"
#include "proto_blob.h"
#include "proto_io.h"
#include "status.h"

/* ---- detection ---------------------------------------------------------------------------- */

CBLOB_API cblob_status cblob_proto_detect(const uint8_t *bytes, size_t size, cblob_proto_kind *out_kind)
{
    CB_ENTER();
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_kind);
    return cb_proto_detect_kind(bytes, size, out_kind);
}

/* Read as needed: the top-level fields, and the structure of field 1's BlobProtos, not their values. */
CBLOB_API cblob_status cblob_proto_detect_file(const char *path, cblob_proto_kind *out_kind)
{
    CB_ENTER();
    CB_REQUIRE(path);
    CB_REQUIRE(out_kind);
    cb_file_reading file;
    CB_TRY(cb_file_reading_open(NULL, path, &file));
    cblob_status status = cb_proto_detect_source(&file.source, out_kind);
    if (status == CBLOB_OK)
        status = cb_source_check(&file.source);
    cb_file_reading_close(&file);
    return status;
}

/* ---- blobs read into a model's records ------------------------------------------------------------ */

cblob_status cb_read_blobs(cblob_context *context, cb_source *source, bool vector, const uint8_t *head,
                           size_t head_size, cblob_model **out)
{
    const cblob_proto_kind kind = vector ? CBLOB_PROTO_BLOB_VECTOR : CBLOB_PROTO_BLOB;
    const bool prefix = head_size < source->size;
    cblob_model *blobs = NULL;
    cblob_status status = cb_model_build_blobs(context, source, vector, &blobs);
    /* Another kind of Caffe file can read as this one too, only empty, or fail in a way that says
     * little: detection says what it is when it is sure. */
    if (status != CBLOB_OK || (vector && blobs->layers[0].num_blobs == 0))
        status = cb_explain_kind(head, head_size, prefix, kind, status);
    if (status != CBLOB_OK) {
        if (blobs != NULL)
            cb_model_free(blobs);
        return status;
    }
    *out = blobs;
    return CBLOB_OK;
}

/* Blobs read from a file: the file read as needed, its refusals explained. */
static cblob_status read_file_blobs(cblob_context *context, const char *path, bool vector, cblob_model **out)
{
    cb_file_reading file;
    CB_TRY(cb_file_reading_open(context, path, &file));
    cblob_model *blobs = NULL;
    cblob_status status = cb_read_blobs(context, &file.source, vector, file.head.bytes, file.head.size, &blobs);
    status = cb_file_reading_finish(&file, vector ? CBLOB_FILE_BLOB_VECTOR : CBLOB_FILE_BLOB, status);
    cb_file_reading_close(&file);
    if (status != CBLOB_OK) {
        if (blobs != NULL)
            cb_model_free(blobs);
        return status;
    }
    *out = blobs;
    return CBLOB_OK;
}

static cblob_status read_bytes_blobs(cblob_context *context, const uint8_t *bytes, size_t size, bool vector,
                                     cblob_model **out)
{
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    return cb_explain_bytes("the bytes", bytes, size, vector ? CBLOB_FILE_BLOB_VECTOR : CBLOB_FILE_BLOB,
                            cb_read_blobs(context, &source, vector, bytes, size, out));
}

/* ---- one blob ------------------------------------------------------------------------------ */

static cblob_status blob_to_buffer(cblob_blob *blob, int32_t write_diff, uint8_t *buffer, size_t buffer_size,
                                   size_t *out_size, const char *path, bool legacy_dims)
{
    cb_blob_message message;
    CB_TRY(cb_blob_message_init(&message, blob, write_diff == 1, "the blob"));
    cblob_status status = legacy_dims ? cb_blob_message_legacy_dims(&message, blob, "the blob") : CBLOB_OK;
    if (status == CBLOB_OK)
        status = path != NULL ? cb_pack_to_file(blob->context, &message.proto.base, path)
                              : cb_pack_to_buffer(&message.proto.base, buffer, buffer_size, out_size);
    cb_blob_message_clear(&message);
    return status;
}

static cblob_status check_proto_flags(int32_t flags)
{
    if (flags & ~(CBLOB_PROTO_DIFF | CBLOB_PROTO_LEGACY_DIMS))
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "flags is %" PRId32 "; cblob_proto_flags' bits are 1 and 2", flags);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_to_proto(cblob_blob *blob, int32_t write_diff, uint8_t *buffer, size_t buffer_size,
                                           size_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(out_size);
    return blob_to_buffer(blob, write_diff, buffer, buffer_size, out_size, NULL, false);
}

CBLOB_API cblob_status cblob_blob_to_proto_file(cblob_blob *blob, int32_t write_diff, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(path);
    return blob_to_buffer(blob, write_diff, NULL, 0, NULL, path, false);
}

CBLOB_API cblob_status cblob_blob_to_proto_file_with(cblob_blob *blob, int32_t flags, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(check_proto_flags(flags));
    CB_REQUIRE(path);
    return blob_to_buffer(blob, (flags & CBLOB_PROTO_DIFF) != 0, NULL, 0, NULL, path,
                          (flags & CBLOB_PROTO_LEGACY_DIMS) != 0);
}

/* One top-level BlobProto: scanned (values counted, not read) and explained when it is surely
 * another kind. */
static cblob_status scan_blob(cb_source *source, const uint8_t *head, size_t head_size, cb_blob_layout *out)
{
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_wire wire = cb_wire_begin(source->bytes, source->size, &root);
    wire.need = cb_source_wire_need;
    wire.source = source;
    cb_blob_layout layout;
    cblob_status status = cb_blob_layout_scan(wire, &layout);
    if (status != CBLOB_OK || layout.known_fields == 0)
        status = cb_explain_kind(head, head_size, head_size < source->size, CBLOB_PROTO_BLOB, status);
    if (status != CBLOB_OK)
        return status;
    *out = layout;
    return CBLOB_OK;
}

/* Caffe's FromProto into a blob: the whole input is needed (read once, as the scan left it). */
static cblob_status load_blob(cblob_blob *blob, cb_source *source, const uint8_t *head, size_t head_size, bool reshape)
{
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_blob_layout layout;
    CB_TRY(scan_blob(source, head, head_size, &layout));
    CB_TRY(cb_source_need(source, 0, source->size));
    /* Every byte is read: the call's last progress report comes before the blob changes. */
    CB_TRY(cb_progress_finish(cb_progress_current(CB_PROGRESS_READING)));
    return cb_blob_load(blob, source->bytes, &layout, &root, reshape);
}

CBLOB_API cblob_status cblob_blob_from_proto(cblob_blob *blob, const uint8_t *bytes, size_t size, int32_t reshape)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(bytes);
    CB_TRY(cb_check_bool("reshape", reshape));
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    return load_blob(blob, &source, bytes, size, reshape == 1);
}

CBLOB_API cblob_status cblob_blob_from_proto_file(cblob_blob *blob, const char *path, int32_t reshape)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(path);
    CB_TRY(cb_check_bool("reshape", reshape));
    cb_file_reading file;
    CB_TRY(cb_file_reading_open(blob->context, path, &file));
    const cblob_status status = cb_file_reading_finish(
        &file, CBLOB_FILE_BLOB, load_blob(blob, &file.source, file.head.bytes, file.head.size, reshape == 1));
    cb_file_reading_close(&file);
    return status;
}

CBLOB_API cblob_status cblob_blob_shape_equals_proto(const cblob_blob *blob, const uint8_t *bytes, size_t size,
                                                     int32_t *out_equal)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_equal);
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    cb_blob_layout layout;
    CB_TRY(scan_blob(&source, bytes, size, &layout));
    *out_equal = cb_blob_layout_shape_equals(&layout, &blob->shape) ? 1 : 0;
    return CBLOB_OK;
}

/* The one blob read, given to the caller (the model of it is let go of). */
static cblob_status only_blob(cblob_model *blobs, cblob_blob **out)
{
    cblob_blob *handle = NULL;
    const cblob_status status = cb_model_blob_handle(blobs, 0, 0, &handle);
    if (status == CBLOB_OK) {
        cb_blob_retain(handle);
        *out = handle;
    }
    cb_model_free(blobs);
    return status;
}

CBLOB_API cblob_status cblob_blob_create_from_proto(cblob_context *context, const uint8_t *bytes, size_t size,
                                                    cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_blob);
    /* Decoded straight into the new blob's own storage (proto_blob.h). */
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    const cb_wire_path root = cb_wire_root(&caffe__blob_proto__descriptor);
    cb_blob_layout layout;
    CB_TRY(cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_BLOB, scan_blob(&source, bytes, size, &layout)));
    cblob_blob *blob = NULL;
    CB_TRY(cb_blob_new(context, cb_blob_layout_dtype(&layout), &blob));
    const cblob_status status =
        cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_BLOB, cb_blob_load(blob, bytes, &layout, &root, true));
    if (status != CBLOB_OK) {
        cb_blob_release(blob);
        return status;
    }
    *out_blob = blob;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_blob_create_from_proto_file(cblob_context *context, const char *path,
                                                         cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_blob);
    cb_context_use_threads(context);
    cblob_model *blobs = NULL;
    CB_TRY(read_file_blobs(context, path, false, &blobs));
    return only_blob(blobs, out_blob);
}

/* ---- one blob in protobuf's text format --------------------------------------------------- */

cblob_status cb_blob_text(cblob_blob *blob, bool write_diff, cb_bytes *out)
{
    cb_blob_message message;
    CB_TRY(cb_blob_message_init(&message, blob, write_diff, "the blob"));
    const size_t size = protobuf_c_message_get_packed_size(&message.proto.base);
    uint8_t *bytes = cb_malloc(size + 1);
    cblob_status status = bytes != NULL ? CBLOB_OK
                                        : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the blob's %zu bytes", size);
    if (status == CBLOB_OK)
        protobuf_c_message_pack(&message.proto.base, bytes);
    cb_blob_message_clear(&message);
    if (status == CBLOB_OK)
        status = cb_text_message(&caffe__blob_proto__descriptor, bytes, size, out);
    free(bytes);
    return status;
}

typedef struct blob_text_output {
    cblob_blob *blob;
    bool write_diff;
} blob_text_output;

static cblob_status emit_blob_text(const void *what, cb_sink *sink)
{
    const blob_text_output *output = what;
    cb_bytes text = {0};
    return cb_text_emit(cb_blob_text(output->blob, output->write_diff, &text), &text, sink);
}

CBLOB_API cblob_status cblob_blob_to_prototxt(cblob_blob *blob, int32_t write_diff, char *buffer, size_t buffer_size,
                                              size_t *out_length)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(out_length);
    cb_bytes text = {0};
    return cb_text_return(cb_blob_text(blob, write_diff == 1, &text), &text, buffer, buffer_size, out_length);
}

CBLOB_API cblob_status cblob_blob_to_prototxt_file(cblob_blob *blob, int32_t write_diff, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(blob);
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(path);
    const blob_text_output output = {blob, write_diff == 1};
    return cb_emit_to_file(blob->context, emit_blob_text, &output, path);
}

CBLOB_API cblob_status cblob_blob_create_from_prototxt(cblob_context *context, const uint8_t *text, size_t size,
                                                       cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(text);
    CB_REQUIRE(out_blob);
    cb_context_use_threads(context);
    cb_source source;
    cb_source_memory(&source, text, size, NULL);
    cblob_model *blobs = NULL;
    CB_TRY(cb_blob_open_text_source(context, "the text", &source, size, &blobs));
    return only_blob(blobs, out_blob);
}

CBLOB_API cblob_status cblob_blob_create_from_prototxt_file(cblob_context *context, const char *path,
                                                            cblob_blob **out_blob)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_blob);
    cb_context_use_threads(context);
    cblob_model *blobs = NULL;
    CB_TRY(cb_open_text_file(context, path, cb_blob_open_text_source, &blobs));
    return only_blob(blobs, out_blob);
}

/* ---- blob vectors ------------------------------------------------------------------------- */

static cblob_status vector_to_buffer(cblob_blob *const *blobs, int64_t num_blobs, int32_t write_diff, uint8_t *buffer,
                                     size_t buffer_size, size_t *out_size, const char *path, bool legacy_dims)
{
    cb_blob_message *messages = cb_calloc((size_t)num_blobs + 1, sizeof *messages);
    Caffe__BlobProto **protos = cb_calloc((size_t)num_blobs + 1, sizeof *protos);
    cblob_status status = messages != NULL && protos != NULL
                              ? CBLOB_OK
                              : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " messages", num_blobs);
    int64_t made = 0;
    for (; status == CBLOB_OK && made < num_blobs; ++made) {
        char what[48];
        snprintf(what, sizeof what, "blobs[%" PRId64 "]", made);
        status = cb_blob_message_init(&messages[made], blobs[made], write_diff == 1, what);
        if (status == CBLOB_OK && legacy_dims)
            status = cb_blob_message_legacy_dims(&messages[made], blobs[made], what);
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
    return vector_to_buffer(blobs, num_blobs, write_diff, buffer, buffer_size, out_size, NULL, false);
}

CBLOB_API cblob_status cblob_blob_vector_to_proto_file(cblob_blob *const *blobs, int64_t num_blobs,
                                                       int32_t write_diff, const char *path)
{
    CB_ENTER();
    CB_TRY(cb_check_blob_array("blobs", blobs, num_blobs));
    CB_TRY(cb_check_bool("write_diff", write_diff));
    CB_REQUIRE(path);
    return vector_to_buffer(blobs, num_blobs, write_diff, NULL, 0, NULL, path, false);
}

CBLOB_API cblob_status cblob_blob_vector_to_proto_file_with(cblob_blob *const *blobs, int64_t num_blobs, int32_t flags,
                                                            const char *path)
{
    CB_ENTER();
    CB_TRY(cb_check_blob_array("blobs", blobs, num_blobs));
    CB_TRY(check_proto_flags(flags));
    CB_REQUIRE(path);
    return vector_to_buffer(blobs, num_blobs, (flags & CBLOB_PROTO_DIFF) != 0, NULL, 0, NULL, path,
                            (flags & CBLOB_PROTO_LEGACY_DIMS) != 0);
}

static cblob_status check_room(int64_t max_blobs, cblob_blob **out_blobs)
{
    if (max_blobs < 0)
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "max_blobs is %" PRId64 "; it cannot be negative", max_blobs);
    if (max_blobs > 0 && out_blobs == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "out_blobs is NULL but max_blobs is %" PRId64, max_blobs);
    return CBLOB_OK;
}

/* The blobs read, written to the caller's array (when given) only when all were made and fit; the
 * model of them is let go of. */
static cblob_status give_blobs(cblob_model *blobs, int64_t max_blobs, cblob_blob **out_blobs, int64_t *out_num_blobs)
{
    const int64_t count = blobs->layers[0].num_blobs;
    cblob_status status = CBLOB_OK;
    if (out_blobs != NULL && max_blobs < count)
        status = cb_fail(CBLOB_ERR_OUT_OF_RANGE, "out_blobs has room for %" PRId64 " blobs but the vector holds %" PRId64,
                         max_blobs, count);
    for (int64_t i = 0; status == CBLOB_OK && out_blobs != NULL && i < count; ++i) {
        cblob_blob *handle = NULL;
        status = cb_model_blob_handle(blobs, 0, i, &handle);
    }
    for (int64_t i = 0; status == CBLOB_OK && out_blobs != NULL && i < count; ++i) {
        cb_blob_retain(blobs->layers[0].blobs[i].handle);
        out_blobs[i] = blobs->layers[0].blobs[i].handle;
    }
    if (status == CBLOB_OK)
        *out_num_blobs = count;
    cb_model_free(blobs);
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
    cb_context_use_threads(context);
    cblob_model *blobs = NULL;
    CB_TRY(read_bytes_blobs(context, bytes, size, true, &blobs));
    return give_blobs(blobs, max_blobs, out_blobs, out_num_blobs);
}

CBLOB_API cblob_status cblob_blob_vector_from_proto_file(cblob_context *context, const char *path, int64_t max_blobs,
                                                         cblob_blob **out_blobs, int64_t *out_num_blobs)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_TRY(check_room(max_blobs, out_blobs));
    CB_REQUIRE(out_num_blobs);
    cb_context_use_threads(context);
    cblob_model *blobs = NULL;
    CB_TRY(read_file_blobs(context, path, true, &blobs));
    return give_blobs(blobs, max_blobs, out_blobs, out_num_blobs);
}
