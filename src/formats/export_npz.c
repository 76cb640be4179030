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
#include "model_layers.h"
#include "proto_io.h"
#include "status.h"

#define CB_NPZ_FLAGS (CBLOB_EXPORT_DIFF)
#define CB_NPZ_CHUNK ((size_t)1 << 20)

/* ---- .npy headers ----------------------------------------------------------------------------- */

static const char *npy_descr(cblob_dtype dtype)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT64: return "<f8";
    case CBLOB_DTYPE_INT32: return "<i4";
    case CBLOB_DTYPE_UINT32: return "<u4";
    default: return "<f4";
    }
}

/* NumPy's format 1.0 header: magic, version, length, then the dict padded with spaces to a
 * multiple of 64 bytes with a newline. Returns its size (at most 1024 for 32 dims). */
static size_t npy_header(const cb_blob_facts *facts, char *out)
{
    char dict[900];
    int used = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", npy_descr(facts->dtype));
    for (int32_t i = 0; i < facts->num_axes; ++i)
        used += snprintf(dict + used, sizeof dict - (size_t)used, "%" PRId64 "%s", facts->dims[i],
                         facts->num_axes == 1 ? "," : i + 1 < facts->num_axes ? ", " : "");
    used += snprintf(dict + used, sizeof dict - (size_t)used, "), }");
    const size_t total = (10 + (size_t)used + 1 + 63) / 64 * 64;
    const size_t length = total - 10;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)(length & 0xff);
    out[9] = (char)(length >> 8);
    memcpy(out + 10, dict, (size_t)used);
    memset(out + 10 + used, ' ', total - 10 - (size_t)used - 1);
    out[total - 1] = '\n';
    return total;
}

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
static cblob_status add_member(zip_t *zip, const cblob_model *model, const cb_tensor *tensor)
{
    char header[1024];
    const size_t header_size = npy_header(&tensor->facts, header);
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

static cblob_status emit_npz(const void *what, cb_sink *sink)
{
    const npz_output *output = what;
    cb_tensor_list list;
    CB_TRY(cb_tensor_list_make(output->model, '/', false, output->flags & CBLOB_EXPORT_DIFF, &list));
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
    return cb_emit_to_file(emit_npz, &output, path);
}

/* ---- reading ------------------------------------------------------------------------------------ */

static cblob_status npy_fail(const char *name, const char *what)
{
    return cb_fail(CBLOB_ERR_PARSE, "malformed npz: member \"%.64s\": %s", name, what);
}

/* The dict's value after `key` (a NUL-terminated copy of the header), or NULL. */
static const char *dict_value(const char *dict, const char *key)
{
    const char *at = strstr(dict, key);
    if (at == NULL)
        return NULL;
    at += strlen(key);
    while (*at == ' ')
        ++at;
    return *at == ':' ? at + 1 + strspn(at + 1, " ") : NULL;
}

static cblob_status parse_dict(const char *name, const char *dict, cblob_dtype *dtype, cb_shape *shape)
{
    static const struct {
        const char *descr;
        cblob_dtype dtype;
    } dtypes[] = {{"'<f4'", CBLOB_DTYPE_FLOAT32}, {"'<f8'", CBLOB_DTYPE_FLOAT64}, {"'<i4'", CBLOB_DTYPE_INT32},
                  {"'<u4'", CBLOB_DTYPE_UINT32}};
    const char *descr = dict_value(dict, "'descr'"), *order = dict_value(dict, "'fortran_order'"),
               *dims = dict_value(dict, "'shape'");
    if (descr == NULL || order == NULL || dims == NULL || *dims != '(')
        return npy_fail(name, "the .npy header lacks descr, fortran_order or shape");
    bool known = false;
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; ++i)
        if (strncmp(descr, dtypes[i].descr, strlen(dtypes[i].descr)) == 0) {
            *dtype = dtypes[i].dtype;
            known = true;
        }
    if (!known)
        return npy_fail(name, "its dtype is none of <f4, <f8, <i4, <u4");
    if (strncmp(order, "False", 5) != 0)
        return npy_fail(name, "a Fortran-order array (save it with numpy.ascontiguousarray)");
    int64_t values[CBLOB_MAX_AXES];
    int32_t axes = 0;
    for (const char *p = dims + 1; *p != ')';) {
        p += strspn(p, " ,");
        if (*p == ')')
            break;
        char *end;
        const long long dim = strtoll(p, &end, 10);
        if (end == p || dim < 0 || axes == CBLOB_MAX_AXES)
            return npy_fail(name, "its shape is not a tuple of at most 32 non-negative dims");
        values[axes++] = dim;
        p = end;
    }
    if (cb_shape_make(axes, values, cb_dtype_find(*dtype)->size, shape) != CBLOB_OK)
        return npy_fail(name, "its dims' product overflows");
    return CBLOB_OK;
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

static cblob_status read_npy(cblob_context *context, zip_file_t *file, const char *name, uint64_t member_size,
                             cblob_blob **out)
{
    uint8_t start[12];
    if (member_size < 10 || !read_exactly(file, start, 10) || memcmp(start, "\x93NUMPY", 6) != 0)
        return npy_fail(name, "not a .npy array (no \\x93NUMPY magic)");
    uint64_t header = start[8] | (uint64_t)start[9] << 8, prefix = 10;
    if (start[6] >= 2) {
        if (!read_exactly(file, start + 10, 2))
            return npy_fail(name, "truncated header");
        header |= (uint64_t)start[10] << 16 | (uint64_t)start[11] << 24;
        prefix = 12;
    }
    if (header > member_size - prefix || header > 1 << 20)
        return npy_fail(name, "its header runs past the member");
    char *dict = malloc((size_t)header + 1);
    if (dict == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a .npy header");
    cb_shape shape;
    cblob_dtype dtype = CBLOB_DTYPE_FLOAT32;
    cblob_status status = read_exactly(file, dict, header) ? CBLOB_OK : npy_fail(name, "truncated header");
    dict[header] = '\0';
    if (status == CBLOB_OK)
        status = parse_dict(name, dict, &dtype, &shape);
    free(dict);
    CB_TRY(status);
    const uint64_t bytes = (uint64_t)shape.count * cb_dtype_find(dtype)->size;
    if (bytes != member_size - prefix - header)
        return npy_fail(name, "its data is not the size its shape gives");
    cblob_blob *blob;
    CB_TRY(cb_blob_create(context, dtype, shape.num_axes, shape.dims, &blob));
    void *host = NULL;
    status = bytes > 0 ? cb_blob_host(blob, CBLOB_PART_DATA, true, &host) : CBLOB_OK;
    if (status == CBLOB_OK && bytes > 0 && !read_exactly(file, host, bytes))
        status = npy_fail(name, "its data could not be read (truncated or corrupt)");
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

static cblob_status read_member(cblob_context *context, zip_t *zip, zip_uint64_t i, cb_tensor_set *set)
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
    cblob_status status = read_npy(context, file, name, stat.size, &blob);
    zip_fclose(file);
    if (status == CBLOB_OK)
        status = cb_tensor_set_add(set, name, layer_length, index, diff, false, blob, name);
    return status;
}

static cblob_status open_npz(cblob_context *context, const uint8_t *bytes, size_t size, cblob_model **out)
{
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
        status = read_member(context, zip, (zip_uint64_t)i, &set);
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
    return open_npz(context, bytes, size, out_model);
}

CBLOB_API cblob_status cblob_model_open_npz_file(cblob_context *context, const char *path, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_input input;
    CB_TRY(cb_input_open(path, &input));
    const cblob_status status = open_npz(context, input.bytes, input.size, out_model);
    cb_input_close(&input);
    return status;
}
