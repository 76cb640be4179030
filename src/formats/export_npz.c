/* SPDX-License-Identifier: BSD-2-Clause */
/* NumPy .npz through libzip: a zip of .npy members, stored (not compressed) as numpy.savez writes
 * them. Writing streams: libzip pulls each member from a source that makes its .npy header and
 * then hands out the blob's values, and writes the archive through a source over cblob's sink. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zip.h>

#include "export.h"
#include "identify.h"
#include "model_layers.h"
#include "npy.h"
#include "proto_io.h"
#include "status.h"

#define CB_NPZ_FLAGS (CBLOB_EXPORT_DIFF)
#define CB_NPZ_CHUNK ((size_t)1 << 20)

/* ---- a member: its .npy bytes, pulled by libzip ------------------------------------------------ */

/* libzip keeps every member's source until the archive is closed: the header is sized to fit, as
 * a net of millions of empty blobs makes millions of members. */
typedef struct member {
    const cblob_model *model;
    const cb_tensor *tensor;
    size_t header_size;
    uint64_t position;
    const uint8_t *whole; /* the values in one piece, or NULL: read in chunks */
    uint8_t *chunk;
    uint64_t chunk_start, chunk_size;
    zip_error_t error;
    char header[];
} member;

static zip_int64_t fail_member(member *m, int code)
{
    zip_error_set(&m->error, code, 0);
    return -1;
}

/* Copies up to len bytes of the values from value byte `at`. */
static zip_int64_t read_values(member *m, uint8_t *out, uint64_t at, uint64_t len)
{
    if (m->whole != NULL) {
        memcpy(out, m->whole + at, (size_t)len);
        return (zip_int64_t)len;
    }
    if (at < m->chunk_start || at >= m->chunk_start + m->chunk_size) {
        const size_t element = cb_dtype_find(m->tensor->facts.dtype)->size;
        const int64_t first = (int64_t)(at / element), chunk_elements = (int64_t)(CB_NPZ_CHUNK / element);
        const int64_t n = m->tensor->facts.count - first < chunk_elements ? m->tensor->facts.count - first : chunk_elements;
        if (cb_model_blob_read(m->model, m->tensor->layer, m->tensor->index, m->tensor->part, first, n, m->chunk) !=
            CBLOB_OK)
            return fail_member(m, ZIP_ER_READ);
        m->chunk_start = (uint64_t)first * element;
        m->chunk_size = (uint64_t)n * element;
    }
    const uint64_t offset = at - m->chunk_start;
    const uint64_t n = len < m->chunk_size - offset ? len : m->chunk_size - offset;
    memcpy(out, m->chunk + offset, (size_t)n);
    return (zip_int64_t)n;
}

static zip_int64_t member_read(member *m, uint8_t *out, uint64_t len)
{
    const uint64_t total = m->header_size + m->tensor->bytes;
    if (m->position >= total)
        return 0;
    len = len < total - m->position ? len : total - m->position;
    if (m->position < m->header_size) {
        const uint64_t n = len < m->header_size - m->position ? len : m->header_size - m->position;
        memcpy(out, m->header + m->position, (size_t)n);
        m->position += n;
        return (zip_int64_t)n;
    }
    const zip_int64_t n = read_values(m, out, m->position - m->header_size, len);
    if (n > 0)
        m->position += (uint64_t)n;
    return n;
}

static zip_int64_t member_callback(void *user, void *data, zip_uint64_t len, zip_source_cmd_t command)
{
    member *m = user;
    switch (command) {
    case ZIP_SOURCE_OPEN:
        m->position = 0;
        if (m->whole == NULL && m->chunk == NULL && (m->chunk = malloc(CB_NPZ_CHUNK)) == NULL)
            return fail_member(m, ZIP_ER_MEMORY);
        m->chunk_size = 0;
        return 0;
    case ZIP_SOURCE_READ: return member_read(m, data, len);
    case ZIP_SOURCE_CLOSE:
        free(m->chunk);
        m->chunk = NULL;
        return 0;
    case ZIP_SOURCE_STAT: {
        zip_stat_t *stat = data;
        zip_stat_init(stat);
        stat->size = m->header_size + m->tensor->bytes;
        stat->valid |= ZIP_STAT_SIZE;
        return sizeof *stat;
    }
    case ZIP_SOURCE_ERROR: return zip_error_to_data(&m->error, data, len);
    case ZIP_SOURCE_FREE:
        free(m->chunk);
        zip_error_fini(&m->error);
        free(m);
        return 0;
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
                                              ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
    default: return fail_member(m, ZIP_ER_OPNOTSUPP);
    }
}

/* ---- the archive: written through the sink ----------------------------------------------------- */

typedef struct archive {
    cb_sink *sink;
    bool written;
    zip_error_t error;
} archive;

static zip_int64_t fail_archive(archive *a, int code, int system)
{
    zip_error_set(&a->error, code, system);
    return -1;
}

static zip_int64_t archive_callback(void *user, void *data, zip_uint64_t len, zip_source_cmd_t command)
{
    archive *a = user;
    switch (command) {
    case ZIP_SOURCE_STAT: return fail_archive(a, ZIP_ER_READ, ENOENT); /* how libzip learns the archive is new */
    case ZIP_SOURCE_BEGIN_WRITE: return 0;
    case ZIP_SOURCE_WRITE:
        cb_sink_write(a->sink, data, (size_t)len);
        a->written = true;
        return a->sink->status == CBLOB_OK ? (zip_int64_t)len : fail_archive(a, ZIP_ER_WRITE, 0);
    case ZIP_SOURCE_SEEK_WRITE: {
        const zip_int64_t at = zip_source_seek_compute_offset(a->sink->position, a->sink->size, data, len, &a->error);
        if (at < 0)
            return -1;
        cb_sink_seek(a->sink, (uint64_t)at);
        return 0;
    }
    case ZIP_SOURCE_TELL_WRITE: return (zip_int64_t)a->sink->position;
    case ZIP_SOURCE_COMMIT_WRITE: return 0;
    case ZIP_SOURCE_ROLLBACK_WRITE: return 0;
    case ZIP_SOURCE_REMOVE: return 0; /* an archive of no members: written as such after zip_close */
    case ZIP_SOURCE_ERROR: return zip_error_to_data(&a->error, data, len);
    case ZIP_SOURCE_FREE: return 0;
    case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_STAT, ZIP_SOURCE_BEGIN_WRITE, ZIP_SOURCE_WRITE,
                                              ZIP_SOURCE_SEEK_WRITE, ZIP_SOURCE_TELL_WRITE, ZIP_SOURCE_COMMIT_WRITE,
                                              ZIP_SOURCE_ROLLBACK_WRITE, ZIP_SOURCE_REMOVE, ZIP_SOURCE_ERROR,
                                              ZIP_SOURCE_FREE, ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                              ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, -1);
    default: return fail_archive(a, ZIP_ER_OPNOTSUPP, 0);
    }
}

static cblob_status zip_failure(zip_t *zip, const char *what)
{
    return cb_fail(CBLOB_ERR_IO, "npz: %s: %s", what, zip != NULL ? zip_strerror(zip) : "libzip failed");
}

/* One member per tensor, stored, dated 1980-01-01 (the same model gives the same bytes). */
/* A zip entry's name has a 16-bit length. */
#define CB_ZIP_MAX_NAME 65535

static cblob_status add_member(zip_t *zip, const cblob_model *model, const cb_tensor *tensor)
{
    if (strlen(tensor->key) + 4 > CB_ZIP_MAX_NAME)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "layer %" PRId64 "'s key is %zu bytes; a zip member's name holds at "
                       "most %d (rename the layer)", tensor->layer, strlen(tensor->key), CB_ZIP_MAX_NAME - 4);
    uint8_t header[CB_NPY_WRITE_HEADER_BYTES];
    const size_t header_size = cb_npy_make_header(tensor->facts.dtype, tensor->facts.num_axes, tensor->facts.dims, header);
    member *m = calloc(1, sizeof *m + header_size);
    char *name = malloc(strlen(tensor->key) + 5);
    if (m == NULL || name == NULL) {
        free(m);
        free(name);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for npz member \"%.64s\"", tensor->key);
    }
    *m = (member){.model = model, .tensor = tensor, .header_size = header_size};
    memcpy(m->header, header, header_size);
    zip_error_init(&m->error);
    const void *whole = NULL;
    cblob_status status = cb_model_blob_values(model, tensor->layer, tensor->index, tensor->part, &whole);
    m->whole = whole;
    sprintf(name, "%s.npy", tensor->key);
    zip_source_t *source = status == CBLOB_OK ? zip_source_function(zip, member_callback, m) : NULL;
    if (source == NULL) {
        zip_error_fini(&m->error);
        free(m);
        free(name);
        return status != CBLOB_OK ? status : zip_failure(zip, "cannot make a member");
    }
    const zip_int64_t index = zip_file_add(zip, name, source, ZIP_FL_ENC_GUESS);
    free(name);
    if (index < 0) {
        zip_source_free(source);
        return zip_failure(zip, "cannot add a member");
    }
    if (zip_set_file_compression(zip, (zip_uint64_t)index, ZIP_CM_STORE, 0) != 0 ||
        zip_file_set_dostime(zip, (zip_uint64_t)index, 0, (0 << 9) | (1 << 5) | 1, 0) != 0)
        return zip_failure(zip, "cannot store a member");
    return CBLOB_OK;
}

typedef struct npz_output {
    const cblob_model *model;
    int32_t flags;
} npz_output;

/* An archive of no members: its end record alone, as numpy.savez writes it. */
static void empty_archive(cb_sink *sink)
{
    static const uint8_t end[22] = {'P', 'K', 5, 6};
    cb_sink_write(sink, end, sizeof end);
}

/* The archive's size as libzip writes it for members of known size, stored: a local header (30
 * bytes and the name) before each member's .npy bytes, a central directory entry (46 bytes and the
 * name) for each, and the end record. Only an archive past 4 GiB differs (ZIP64's extra fields),
 * and the call's progress then follows what was written. */
static uint64_t archive_size(const cb_tensor_list *list)
{
    uint64_t size = 22;
    for (int64_t i = 0; i < list->count; ++i) {
        const cb_tensor *t = &list->items[i];
        uint8_t header[CB_NPY_WRITE_HEADER_BYTES];
        const uint64_t name = strlen(t->key) + 4;
        size += 30 + name + cb_npy_make_header(t->facts.dtype, t->facts.num_axes, t->facts.dims, header) + t->bytes +
                46 + name;
    }
    return size;
}

static cblob_status emit_npz(const void *what, cb_sink *sink)
{
    const npz_output *output = what;
    cb_tensor_list list;
    CB_TRY(cb_tensor_list_make(output->model, '/', false, output->flags & CBLOB_EXPORT_DIFF, &list));
    if (sink->progress != NULL)
        cb_sink_expect(sink, archive_size(&list));
    archive a = {.sink = sink};
    zip_error_init(&a.error);
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t *source = zip_source_function_create(archive_callback, &a, &error);
    zip_t *zip = source != NULL ? zip_open_from_source(source, ZIP_CREATE | ZIP_TRUNCATE, &error) : NULL;
    cblob_status status = zip == NULL ? cb_fail(CBLOB_ERR_IO, "npz: %s", zip_error_strerror(&error)) : CBLOB_OK;
    if (zip == NULL && source != NULL)
        zip_source_free(source);
    for (int64_t i = 0; status == CBLOB_OK && i < list.count; ++i)
        status = add_member(zip, output->model, &list.items[i]);
    if (zip != NULL && status == CBLOB_OK) {
        if (zip_close(zip) == 0)
            zip = NULL;
        else
            status = sink->status != CBLOB_OK ? sink->status : zip_failure(zip, "cannot write the archive");
    }
    if (zip != NULL)
        zip_discard(zip); /* an archive not closed (a failure) is let go of whole */
    if (status == CBLOB_OK && !a.written)
        empty_archive(sink);
    zip_error_fini(&error);
    zip_error_fini(&a.error);
    cb_tensor_list_free(&list);
    return status == CBLOB_OK ? sink->status : status;
}

static cblob_status check_flags(int32_t flags)
{
    if (flags & ~CB_NPZ_FLAGS)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "flags 0x%x has bits npz does not take (only CBLOB_EXPORT_DIFF)",
                       (unsigned)flags);
    return CBLOB_OK;
}

CBLOB_API cblob_status cblob_model_to_npz(const cblob_model *model, int32_t flags, uint8_t *buffer, size_t buffer_size,
                                          size_t *out_size)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags));
    CB_REQUIRE(out_size);
    const npz_output output = {model, flags};
    return cb_emit_to_buffer(emit_npz, &output, "npz", buffer, buffer_size, out_size);
}

CBLOB_API cblob_status cblob_model_to_npz_file(const cblob_model *model, int32_t flags, const char *path)
{
    CB_ENTER();
    CB_REQUIRE(model);
    CB_TRY(check_flags(flags));
    CB_REQUIRE(path);
    const npz_output output = {model, flags};
    return cb_emit_to_file(model->context, emit_npz, &output, path);
}

/* ---- reading ------------------------------------------------------------------------------------ */

static cblob_status npy_fail(const char *name, const char *what)
{
    return cb_fail(CBLOB_ERR_PARSE, "malformed npz: member \"%.64s\": %s", name, what);
}

/* Reads exactly size bytes of a member. */
static bool read_exactly(zip_file_t *file, void *out, uint64_t size)
{
    uint8_t *at = out;
    while (size > 0) {
        const zip_int64_t n = zip_fread(file, at, size);
        if (n <= 0)
            return false;
        at += n;
        size -= (uint64_t)n;
    }
    return true;
}

/* A member's .npy header, read through the one .npy codec (src/util/npy.h). */
static cblob_status read_header(zip_file_t *file, const char *name, const char *what, uint64_t member_size,
                                cb_npy_array *out)
{
    uint8_t preamble[CB_NPY_PREAMBLE_BYTES];
    const size_t got = member_size < sizeof preamble ? (size_t)member_size : sizeof preamble;
    size_t header_size = 0;
    if (!read_exactly(file, preamble, got))
        return npy_fail(name, "it could not be read (truncated or corrupt)");
    CB_TRY(cb_npy_header_size(what, preamble, got, &header_size));
    if (header_size > member_size)
        return npy_fail(name, "its .npy header runs past the member");
    uint8_t *header = malloc(header_size);
    if (header == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte .npy header", header_size);
    memcpy(header, preamble, got);
    cblob_status status = read_exactly(file, header + got, header_size - got)
                              ? cb_npy_parse_header(what, header, header_size, out)
                              : npy_fail(name, "its header could not be read (truncated or corrupt)");
    free(header);
    if (status == CBLOB_OK && out->value_bytes != member_size - header_size)
        status = npy_fail(name, "its data is not the size its shape gives");
    return status;
}

/* The member's values into host memory, in pieces, converted to `to` unless it is their own. */
static cblob_status read_member_values(zip_file_t *file, const char *name, const char *what, const cb_npy_array *array,
                                cblob_dtype to, uint8_t *host)
{
    const size_t from_size = cb_npy_element_size(array), to_size = cb_dtype_find(to)->size;
    cblob_dtype own = 0;
    if (cb_npy_blob_dtype(what, array, 0, &own) != CBLOB_OK)
        own = 0; /* no blob's dtype: converted, and that message is not the caller's */
    if (own == to)
        return read_exactly(file, host, array->value_bytes) ? CBLOB_OK
                                                             : npy_fail(name, "its data could not be read (truncated or corrupt)");
    const int64_t per_piece = (int64_t)(CB_NPZ_CHUNK / from_size);
    uint8_t *piece = malloc(CB_NPZ_CHUNK);
    cblob_status status = piece != NULL ? CBLOB_OK : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a piece of values");
    for (int64_t first = 0; status == CBLOB_OK && first < array->count; first += per_piece) {
        const int64_t n = array->count - first < per_piece ? array->count - first : per_piece;
        status = read_exactly(file, piece, (uint64_t)n * from_size)
                     ? cb_npy_convert(what, array, piece, first, n, to, host + (size_t)first * to_size)
                     : npy_fail(name, "its data could not be read (truncated or corrupt)");
    }
    free(piece);
    return status;
}

/* libzip checks a member's CRC-32 when its end is read: a member whose bytes do not match it is
 * refused, as NumPy refuses it (zipfile.BadZipFile). */
static cblob_status check_end(zip_file_t *file, const char *name)
{
    uint8_t extra;
    const zip_int64_t n = zip_fread(file, &extra, 1);
    if (n == 0)
        return CBLOB_OK;
    return n < 0 ? cb_fail(CBLOB_ERR_PARSE, "malformed npz: member \"%.64s\": %s (the archive is corrupt)", name,
                           zip_file_strerror(file))
                 : npy_fail(name, "it holds more bytes than its size says");
}

static cblob_status read_npy(cblob_context *context, zip_file_t *file, const char *name, uint64_t member_size,
                             cblob_dtype dtype, cblob_blob **out)
{
    char what[128];
    snprintf(what, sizeof what, "npz member \"%.64s\"", name);
    cb_npy_array array;
    CB_TRY(read_header(file, name, what, member_size, &array));
    cblob_dtype target = CBLOB_DTYPE_FLOAT32;
    CB_TRY(cb_npy_blob_dtype(what, &array, dtype, &target));
    cblob_blob *blob;
    CB_TRY(cb_blob_create(context, target, array.num_axes, array.dims, &blob));
    void *host = NULL;
    cblob_status status = array.count > 0 ? cb_blob_host(blob, CBLOB_PART_DATA, true, &host) : CBLOB_OK;
    if (status == CBLOB_OK && array.count > 0)
        status = read_member_values(file, name, what, &array, target, host);
    if (status == CBLOB_OK)
        status = check_end(file, name);
    if (status != CBLOB_OK) {
        cb_blob_release(blob);
        return status;
    }
    *out = blob;
    return CBLOB_OK;
}

/* `<layer>/<index>` or `<layer>/<index>/diff`, then ".npy". */
static bool split_member(const char *name, size_t *layer_length, int64_t *index, bool *diff)
{
    size_t length = strlen(name);
    if (length < 4 || strcmp(name + length - 4, ".npy") != 0)
        return false;
    length -= 4;
    *diff = length > 5 && strncmp(name + length - 5, "/diff", 5) == 0;
    if (*diff)
        length -= 5;
    size_t slash = length;
    while (slash > 0 && name[slash - 1] != '/')
        --slash;
    if (slash == 0 || slash == length || length - slash > 18)
        return false;
    int64_t value = 0;
    for (size_t i = slash; i < length; ++i) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        value = value * 10 + (name[i] - '0');
    }
    *layer_length = slash - 1;
    *index = value;
    return true;
}

static cblob_status read_member(cblob_context *context, zip_t *zip, zip_uint64_t i, cblob_dtype dtype,
                                cb_tensor_set *set)
{
    const char *name = zip_get_name(zip, i, ZIP_FL_ENC_RAW);
    zip_stat_t stat;
    if (name == NULL || zip_stat_index(zip, i, 0, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE))
        return cb_fail(CBLOB_ERR_PARSE, "malformed npz: member %llu: %s", (unsigned long long)i, zip_strerror(zip));
    size_t layer_length = 0;
    int64_t index = 0;
    bool diff = false;
    if (!split_member(name, &layer_length, &index, &diff))
        return npy_fail(name, "its name is not <layer>/<index>.npy (or <layer>/<index>/diff.npy)");
    zip_file_t *file = zip_fopen_index(zip, i, 0);
    if (file == NULL)
        return cb_fail(CBLOB_ERR_PARSE, "malformed npz: member \"%.64s\": %s", name, zip_strerror(zip));
    cblob_blob *blob = NULL;
    cblob_status status = read_npy(context, file, name, stat.size, dtype, &blob);
    zip_fclose(file);
    if (status == CBLOB_OK)
        status = cb_tensor_set_add(set, name, layer_length, index, diff, false, blob, name);
    return status;
}

cblob_status cb_model_open_npz_bytes(cblob_context *context, const uint8_t *bytes, size_t size, cblob_dtype dtype,
                                     cblob_model **out)
{
    if (size == 0) /* a zip holds at least its 22-byte end record: libzip would read nothing as empty */
        return cb_fail(CBLOB_ERR_PARSE, "malformed npz: no bytes (an empty archive is 22 bytes, its end record)");
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t *source = zip_source_buffer_create(bytes, size, 0, &error);
    zip_t *zip = source != NULL ? zip_open_from_source(source, ZIP_RDONLY, &error) : NULL;
    if (zip == NULL) {
        const cblob_status status = cb_fail(CBLOB_ERR_PARSE, "malformed npz: %s", zip_error_strerror(&error));
        if (source != NULL)
            zip_source_free(source);
        zip_error_fini(&error);
        return status;
    }
    zip_error_fini(&error);
    cb_tensor_set set = {0};
    cblob_status status = CBLOB_OK;
    const zip_int64_t entries = zip_get_num_entries(zip, 0);
    for (zip_int64_t i = 0; status == CBLOB_OK && i < entries; ++i)
        status = read_member(context, zip, (zip_uint64_t)i, dtype, &set);
    if (status == CBLOB_OK)
        status = cb_tensor_set_model(context, &set, NULL, NULL, NULL, out);
    cb_tensor_set_free(&set);
    zip_discard(zip);
    return status;
}

CBLOB_API cblob_status cblob_model_open_npz(cblob_context *context, const uint8_t *bytes, size_t size,
                                            cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_model);
    return cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_NPZ,
                            cb_model_open_npz_bytes(context, bytes, size, 0, out_model));
}

CBLOB_API cblob_status cblob_model_open_npz_file(cblob_context *context, const char *path, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_input input;
    CB_TRY(cb_read_file(context, path, &input));
    const cblob_status status = cb_explain_bytes(path, input.bytes, input.size, CBLOB_FILE_NPZ,
                                                 cb_model_open_npz_bytes(context, input.bytes, input.size, 0, out_model));
    cb_input_close(&input);
    return status;
}
