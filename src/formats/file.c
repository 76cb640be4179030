/* SPDX-License-Identifier: BSD-2-Clause */
/* Files of any kind (ABI 1.2, codegen/api/24_files.yaml): one open that reads a file once, tells
 * its kind from the first bytes and hands them to the reader of that kind. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "blob.h"
#include "context.h"
#include "export_common.h"
#include "formats_blob.h"
#include "identify.h"
#include "io.h"
#include "model.h"
#include "model_open.h"
#include "model_text.h"
#include "model_values.h"
#include "npy_files.h"
#include "status.h"
#include "wire.h"

#define CB_OPEN_FLAGS (CBLOB_OPEN_LAZY | CBLOB_OPEN_NPY_BY_NAME)

struct cblob_file {
    cblob_file_kind kind;
    char *name; /* the path or name it was opened by */
    cblob_model *model;
    cblob_blob **blobs; /* a .npy file's */
    int64_t num_blobs;
    cblob_model *store; /* a BlobProto's or a vector's blobs, as one layer (handles made on first use) */
};

static void file_free(cblob_file *file)
{
    if (file == NULL)
        return;
    if (file->model != NULL)
        cb_model_free(file->model);
    if (file->store != NULL)
        cb_model_free(file->store);
    for (int64_t i = 0; i < file->num_blobs; ++i)
        cb_blob_release(file->blobs[i]);
    free(file->blobs);
    free(file->name);
    free(file);
}

static cblob_status file_new(const char *name, cblob_file **out)
{
    cblob_file *file = cb_calloc(1, sizeof *file);
    if (file == NULL || (file->name = cb_strdup(name)) == NULL) {
        free(file);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to open %s", name);
    }
    *out = file;
    return CBLOB_OK;
}

static cblob_status check_open(cblob_context *context, int32_t flags, cblob_dtype dtype)
{
    CB_REQUIRE(context);
    if (flags & ~CB_OPEN_FLAGS)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "flags 0x%x has bits other than CBLOB_OPEN_LAZY and "
                       "CBLOB_OPEN_NPY_BY_NAME", (unsigned)flags);
    if (dtype != 0 && cb_dtype_find(dtype) == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "dtype %d is none of cblob_dtype's values (0 keeps each .npy "
                       "array's own)", (int)dtype);
    return CBLOB_OK;
}

/* The size bytes of a source holding text, NUL-terminated, into *out (the caller frees it); `what`
 * names the message for a text over protobuf's limit. */
static cblob_status read_text(const char *name, const char *what, cb_source *source, uint64_t size, char **out)
{
    if (size > CB_PROTO_MAX_MESSAGE)
        return cb_fail(CBLOB_ERR_OVERFLOW, "%s: %s's text of %" PRIu64 " bytes, over protobuf's limit", name, what, size);
    char *text = cb_malloc((size_t)size + 1);
    if (text == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the %" PRIu64 " bytes of %s", size, name);
    const cblob_status status = cb_source_copy(source, 0, (size_t)size, text);
    if (status != CBLOB_OK) {
        free(text);
        return status;
    }
    text[size] = '\0';
    *out = text;
    return CBLOB_OK;
}

cblob_status cb_blob_open_text_source(cblob_context *context, const char *name, cb_source *source, uint64_t size,
                                      cblob_model **out_blobs)
{
    char *text = NULL;
    CB_TRY(read_text(name, "a blob", source, size, &text));
    cb_bytes bytes = {0};
    cblob_status status = cb_text_to_blob_bytes(name, text, (size_t)size, &bytes);
    free(text);
    if (status == CBLOB_OK) {
        const uint8_t *data = bytes.size > 0 ? bytes.data : (const uint8_t *)"";
        cb_source from_text;
        cb_source_memory(&from_text, data, bytes.size, NULL);
        status = cb_read_blobs(context, &from_text, false, data, bytes.size, out_blobs);
    }
    cb_bytes_free(&bytes);
    return status;
}

cblob_status cb_open_text_file(cblob_context *context, const char *path, cb_text_opener *open, cblob_model **out)
{
    cb_file_reading reading;
    CB_TRY(cb_file_reading_open(context, path, &reading));
    cblob_model *model = NULL;
    cblob_status status = open(context, path, &reading.source, reading.head.file_size, &model);
    if (status == CBLOB_OK)
        status = cb_source_check(&reading.source); /* the file did not change while it was read */
    cb_file_reading_close(&reading);
    if (status != CBLOB_OK) {
        if (model != NULL)
            cb_model_free(model);
        return status;
    }
    *out = model;
    return CBLOB_OK;
}

/* A file of a kind cblob reads, from its source, by the reader of that kind. For a net, a file
 * being read (reading: else NULL, bytes in memory) keeps the lazily opened model's file. */
static cblob_status open_kind(cblob_context *context, cb_source *source, cb_file_reading *reading, const uint8_t *head,
                              size_t head_size, cblob_file_kind kind, int32_t flags, cblob_dtype dtype,
                              cblob_file *file);

/* A "net" of no layers: the other kinds of Caffe file are valid protobuf of one. Its bytes, all
 * read already, are read again as the kind they surely are. */
static cblob_status reopen_as_other_kind(cblob_context *context, cblob_dtype dtype, cblob_file *file)
{
    uint8_t *bytes = NULL;
    size_t size = 0;
    CB_TRY(cb_model_original_top(file->model, &bytes, &size));
    cblob_proto_kind exact = CBLOB_PROTO_NET;
    cblob_status status = cb_proto_detect_kind(bytes, size, &exact);
    if (status == CBLOB_OK)
        status = cb_explain_kind(bytes, size, false, CBLOB_PROTO_NET, CBLOB_OK);
    if (status != CBLOB_OK && exact != CBLOB_PROTO_NET) {
        cb_model_free(file->model);
        file->model = NULL;
        cb_source source;
        cb_source_memory(&source, bytes, size, NULL);
        status = open_kind(context, &source, NULL, bytes, size, (cblob_file_kind)exact, 0, dtype, file);
    } else {
        status = CBLOB_OK; /* a net of a name only */
    }
    free(bytes);
    return status;
}

static cblob_status open_net(cblob_context *context, cb_source *source, cb_file_reading *reading, int32_t flags,
                             cblob_dtype dtype, cblob_file *file)
{
    file->kind = CBLOB_FILE_NET;
    if (reading != NULL)
        CB_TRY(cb_model_open_reading(context, reading, flags & CBLOB_OPEN_LAZY, true, &file->model));
    else
        CB_TRY(cb_model_build_any(context, source, &file->model));
    return file->model->num_layers == 0 ? reopen_as_other_kind(context, dtype, file) : CBLOB_OK;
}

cblob_status cb_model_open_text_source(cblob_context *context, const char *name, cb_source *source, uint64_t size,
                                       cblob_model **out_model)
{
    char *text = NULL;
    CB_TRY(read_text(name, "a net", source, size, &text));
    const cblob_status status = cb_model_open_prototxt(context, name, text, (size_t)size, out_model);
    free(text);
    return status;
}

static cblob_status open_kind(cblob_context *context, cb_source *source, cb_file_reading *reading, const uint8_t *head,
                              size_t head_size, cblob_file_kind kind, int32_t flags, cblob_dtype dtype,
                              cblob_file *file)
{
    file->kind = kind;
    switch (kind) {
    case CB_FILE_TEXT_NET: /* all of it in head when there is no reading (a stream read whole) */
        file->kind = CBLOB_FILE_NET;
        return cb_model_open_text_source(context, file->name, source,
                                         reading != NULL ? reading->head.file_size : head_size, &file->model);
    case CB_FILE_TEXT_BLOB:
        file->kind = CBLOB_FILE_BLOB;
        return cb_blob_open_text_source(context, file->name, source,
                                        reading != NULL ? reading->head.file_size : head_size, &file->store);
    case CBLOB_FILE_NET: return open_net(context, source, reading, flags, dtype, file);
    case CBLOB_FILE_BLOB:
    case CBLOB_FILE_BLOB_VECTOR:
        return cb_read_blobs(context, source, kind == CBLOB_FILE_BLOB_VECTOR, head, head_size, &file->store);
    case CBLOB_FILE_NPY:
        if ((file->blobs = cb_calloc(1, sizeof *file->blobs)) == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a blob handle");
        CB_TRY(cb_npy_blob_from_source(context, file->name, source, dtype, &file->blobs[0]));
        file->num_blobs = 1;
        return CBLOB_OK;
    case CBLOB_FILE_NPZ:
        return cb_model_open_npz_source(context, source, file->name, dtype, flags & CBLOB_OPEN_LAZY, &file->model);
    case CBLOB_FILE_SAFETENSORS:
        return cb_model_open_safetensors_source(context, source, file->name, flags & CBLOB_OPEN_LAZY, &file->model);
    default: return cb_fail(CBLOB_ERR_INTERNAL, "no reader of kind %d", (int)kind);
    }
}

static cblob_status open_path(cblob_context *context, const char *path, int32_t flags, cblob_dtype dtype,
                              cblob_file *file)
{
    if (cb_path_is_folder(path)) {
        file->kind = CBLOB_FILE_NPY_FOLDER;
        return cb_npy_folder_read(context, path, flags & CBLOB_OPEN_NPY_BY_NAME, dtype, &file->model);
    }
    cb_file_reading reading;
    cblob_file_kind kind = CBLOB_FILE_NET;
    CB_TRY(cb_file_reading_identify(NULL, path, &reading, &kind)); /* cblob_file_open's scope counts */
    cblob_status status = open_kind(context, &reading.source, &reading, reading.head.bytes, reading.head.size, kind,
                                    flags, dtype, file);
    /* A text's errors name its line and column already: no explanation of what the file is. */
    if (!CB_FILE_IS_TEXT(kind) || status == CBLOB_OK)
        status = cb_file_reading_finish(&reading, kind, status);
    if (status == CBLOB_OK && file->model != NULL) /* a lazily opened safetensors or npz file */
        cb_model_keep_file(file->model, &reading);
    cb_file_reading_close(&reading);
    return status;
}

CBLOB_API cblob_status cblob_file_open(cblob_context *context, const char *path, int32_t flags, cblob_dtype dtype,
                                       cblob_file **out_file)
{
    CB_ENTER();
    CB_REQUIRE(path);
    CB_TRY(check_open(context, flags, dtype));
    CB_REQUIRE(out_file);
    cb_context_use_threads(context);
    cblob_file *file = NULL;
    CB_TRY(file_new(path, &file));
    cb_progress progress;
    cb_context_begin_progress(context, CB_PROGRESS_READING, &progress);
    cblob_status status = open_path(context, path, flags, dtype, file);
    if (status == CBLOB_OK)
        status = cb_progress_finish(&progress);
    cb_progress_end(&progress, status);
    if (status != CBLOB_OK) {
        file_free(file);
        return status;
    }
    *out_file = file;
    return CBLOB_OK;
}

/* A stream's kind from its head: nothing of a kind cblob reads is read past its head, and a Caffe
 * message past protobuf's 2 GiB limit. */
static cblob_status stream_kind(void *context, const uint8_t *head, size_t size, bool complete, size_t *limit)
{
    const cblob_file *file = context;
    cblob_file_kind kind = CBLOB_FILE_NET;
    CB_TRY(cb_identify(file->name, head, size, complete ? size : UINT64_MAX, &kind));
    *limit = kind <= CBLOB_FILE_BLOB_VECTOR ? CB_PROTO_MAX_MESSAGE : SIZE_MAX;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_file_open_fd(cblob_context *context, int32_t fd, const char *name, int32_t flags,
                                          cblob_dtype dtype, cblob_file **out_file)
{
    CB_ENTER();
    CB_TRY(check_open(context, flags, dtype));
    if (fd < 0)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "fd is %d; a descriptor is not negative", (int)fd);
    CB_REQUIRE(out_file);
    cb_context_use_threads(context);
    cblob_file *file = NULL;
    CB_TRY(file_new(name != NULL ? name : "the descriptor", &file));
    cb_input input = {0};
    cblob_file_kind kind = CBLOB_FILE_NET;
    cb_progress progress;
    cb_context_begin_progress(context, CB_PROGRESS_READING, &progress);
    cblob_status status = cb_input_read_fd(fd, file->name, stream_kind, file, &input);
    cb_source source;
    cb_source_memory(&source, input.bytes, input.size, &input);
    if (status == CBLOB_OK)
        status = cb_identify(file->name, input.bytes, input.size, input.size, &kind);
    if (status == CBLOB_OK) {
        status = open_kind(context, &source, NULL, input.bytes, input.size, kind, flags & ~CBLOB_OPEN_LAZY, dtype, file);
        if (!CB_FILE_IS_TEXT(kind)) /* a text's errors name their line and column already */
            status = cb_explain_bytes(file->name, input.bytes, input.size, kind, status);
    }
    if (status == CBLOB_OK)
        status = cb_progress_finish(&progress);
    cb_progress_end(&progress, status);
    cb_input_close(&input);
    if (status != CBLOB_OK) {
        file_free(file);
        return status;
    }
    *out_file = file;
    return CBLOB_OK;
}

CBLOB_API void cblob_file_destroy(cblob_file *file)
{
    CB_ENTER();
    file_free(file);
}

CBLOB_API cblob_status cblob_file_get_kind(const cblob_file *file, cblob_file_kind *out_kind)
{
    CB_ENTER();
    CB_REQUIRE(file);
    CB_REQUIRE(out_kind);
    *out_kind = file->kind;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_file_model(cblob_file *file, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(file);
    if (file->model == NULL)
        return cb_fail(CBLOB_ERR_STATE, "%s holds blobs, not a model (cblob_file_blob)", file->name);
    CB_REQUIRE(out_model);
    *out_model = file->model;
    return CBLOB_OK;
}

static cblob_status require_blobs(const cblob_file *file)
{
    CB_REQUIRE(file);
    if (file->model != NULL)
        return cb_fail(CBLOB_ERR_STATE, "%s holds a model, not blobs (cblob_file_model)", file->name);
    return CBLOB_OK;
}

static int64_t num_blobs(const cblob_file *file)
{
    return file->store != NULL ? (int64_t)file->store->layers[0].num_blobs : file->num_blobs;
}

CBLOB_API cblob_status cblob_file_num_blobs(const cblob_file *file, int64_t *out_count)
{
    CB_ENTER();
    CB_TRY(require_blobs(file));
    CB_REQUIRE(out_count);
    *out_count = num_blobs(file);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_file_blob(const cblob_file *file, int64_t index, cblob_blob **out_blob)
{
    CB_ENTER();
    CB_TRY(require_blobs(file));
    if (index < 0 || index >= num_blobs(file))
        return cb_fail(CBLOB_ERR_OUT_OF_RANGE, "blob %" PRId64 " of %" PRId64, index, num_blobs(file));
    CB_REQUIRE(out_blob);
    cblob_blob *blob = NULL;
    if (file->store != NULL)
        CB_TRY(cb_model_blob_handle(file->store, 0, index, &blob));
    else
        blob = file->blobs[index];
    cb_blob_retain(blob);
    *out_blob = blob;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_file_detect(const char *path, cblob_file_kind *out_kind)
{
    CB_ENTER();
    CB_REQUIRE(path);
    CB_REQUIRE(out_kind);
    if (cb_path_is_folder(path)) {
        *out_kind = CBLOB_FILE_NPY_FOLDER;
        return CBLOB_OK;
    }
    cb_input_file *input = NULL;
    CB_TRY(cb_input_file_open(path, &input));
    cb_file_head head = {0};
    cblob_file_kind kind = CBLOB_FILE_NET;
    const cblob_status status = cb_identify_file(path, input, &head, &kind);
    cb_file_head_free(&head);
    cb_input_file_close(input);
    CB_TRY(status);
    *out_kind = kind == CB_FILE_TEXT_NET ? CBLOB_FILE_NET : kind == CB_FILE_TEXT_BLOB ? CBLOB_FILE_BLOB : kind;
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_open_prototxt_file(cblob_context *context, const char *path,
                                                      cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    return cb_open_text_file(context, path, cb_model_open_text_source, out_model);
}

/* ---- .npy folders ------------------------------------------------------------------------------ */

static cblob_status check_folder_args(int32_t flags, const char *folder, int64_t *out_num_files)
{
    if (flags & ~CBLOB_EXPORT_DIFF)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "flags 0x%x has bits other than CBLOB_EXPORT_DIFF", (unsigned)flags);
    CB_REQUIRE(folder);
    CB_REQUIRE(out_num_files);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_to_npy_folder(const cblob_model *model, int32_t flags, const char *folder,
                                                 int64_t *out_num_files)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_folder_args(flags, folder, out_num_files));
    cb_context_use_threads(model->context);
    const cb_npy_folder_source source = {.model = model, .kind = "net"};
    return cb_npy_folder_write(model->context, &source, flags & CBLOB_EXPORT_DIFF, folder, out_num_files);
}

CBLOB_API cblob_status cblob_file_to_npy_folder(const cblob_file *file, int32_t flags, const char *folder,
                                                int64_t *out_num_files)
{
    CB_ENTER();
    CB_REQUIRE(file);
    CB_TRY(check_folder_args(flags, folder, out_num_files));
    const cb_npy_folder_source source = {.model = file->model, .blobs = file->blobs, .num_blobs = file->num_blobs,
                                         .store = file->store, .source = file->name,
                                         .kind = file->kind == CBLOB_FILE_BLOB          ? "blob"
                                                 : file->kind == CBLOB_FILE_BLOB_VECTOR ? "blob_vector"
                                                 : file->kind == CBLOB_FILE_NPY         ? "blob"
                                                                                        : "net"};
    const cblob_context *context = file->model != NULL   ? file->model->context
                                   : file->store != NULL ? file->store->context
                                   : file->num_blobs > 0 ? file->blobs[0]->context
                                                         : NULL;
    return cb_npy_folder_write(context, &source, flags & CBLOB_EXPORT_DIFF, folder, out_num_files);
}
