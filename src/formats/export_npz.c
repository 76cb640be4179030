/* SPDX-License-Identifier: BSD-2-Clause */
/* NumPy .npz: a zip of .npy members (zip.h), stored (not compressed) as numpy.savez writes them.
 * Writing streams each member's .npy header and values to the sink; reading walks the central
 * directory and reads each member's values straight into the array its blob keeps. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "export_common.h"
#include "identify.h"
#include "npy.h"
#include "status.h"
#include "zip.h"

#define CB_NPZ_FLAGS (CBLOB_EXPORT_DIFF)
#define CB_NPZ_CHUNK ((size_t)1 << 20)
/* A zip entry's name has a 16-bit length. */
#define CB_ZIP_MAX_NAME 65535

/* ---- writing ---------------------------------------------------------------------------------- */

typedef struct npz_output {
    const cblob_model *model;
    int32_t flags;
} npz_output;

typedef struct npz_writer {
    cb_tensor_list list;
    char *name; /* a member's name: its key and ".npy" */
    size_t capacity;
} npz_writer;

static cblob_status member_name(void *context, int64_t i, const char **out, size_t *length)
{
    npz_writer *w = context;
    const char *key = NULL;
    CB_TRY(cb_tensor_key(&w->list, &w->list.items[i], &key));
    const size_t size = strlen(key) + 5;
    if (strlen(key) + 4 > CB_ZIP_MAX_NAME)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "layer %" PRId64 "'s key is %zu bytes; a zip member's name holds at "
                       "most %d (rename the layer)", w->list.items[i].layer, strlen(key), CB_ZIP_MAX_NAME - 4);
    if (size > w->capacity) {
        char *grown = cb_realloc(w->name, size);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte member name", size);
        w->name = grown;
        w->capacity = size;
    }
    snprintf(w->name, size, "%s.npy", key);
    *out = w->name;
    *length = size - 1;
    return CBLOB_OK;
}

/* One member: the .npy header, then the values. */
/* A member's .npy: its header (into header, header_size bytes) and its values' facts and bytes. */
static cblob_status member_npy(npz_writer *w, int64_t i, cb_blob_facts *facts, uint8_t *header, size_t *header_size,
                               uint64_t *bytes)
{
    CB_TRY(cb_tensor_facts(&w->list, &w->list.items[i], facts, bytes));
    *header_size = cb_npy_make_header(facts->dtype, facts->num_axes, facts->dims, header);
    return CBLOB_OK;
}

static cblob_status write_member(npz_writer *w, cb_zip_writer *zip, const npz_output *output, int64_t i)
{
    const char *name = NULL;
    size_t length = 0, header_size = 0;
    CB_TRY(member_name(w, i, &name, &length));
    cb_blob_facts facts;
    uint64_t bytes = 0;
    uint8_t header[CB_NPY_WRITE_HEADER_BYTES];
    CB_TRY(member_npy(w, i, &facts, header, &header_size, &bytes));
    CB_TRY(cb_zip_begin_member(zip, name, length, header_size + bytes));
    cb_sink_write(zip->sink, header, header_size);
    CB_TRY(cb_tensor_write(&w->list, output->model, &w->list.items[i], &facts, zip->sink));
    return cb_zip_end_member(zip);
}

/* The archive's size, for the call's progress: a local header (30 bytes and the name) before each
 * member's .npy bytes (and a data descriptor after them, written to a FIFO or a device), a central
 * directory entry (46 bytes and the name) for each, and the end
 * record (22). Only an archive past 4 GiB differs (Zip64's records), and the progress then follows
 * what was written. */
static cblob_status add_member_size(npz_writer *w, const cb_sink *sink, int64_t i, size_t name_length, uint64_t *size)
{
    cb_blob_facts facts;
    uint64_t bytes = 0;
    size_t header_size = 0;
    uint8_t header[CB_NPY_WRITE_HEADER_BYTES];
    CB_TRY(member_npy(w, i, &facts, header, &header_size, &bytes));
    *size += 30 + name_length + header_size + bytes + cb_zip_descriptor_size(sink, header_size + bytes) + 46 +
             name_length;
    return CBLOB_OK;
}

static cblob_status emit_npz(const void *what, cb_sink *sink)
{
    const npz_output *output = what;
    npz_writer w = {0};
    CB_TRY(cb_tensor_list_make(output->model, '/', false, output->flags & CBLOB_EXPORT_DIFF, &w.list));
    cb_zip_writer zip = {.sink = sink};
    cblob_status status = CBLOB_OK;
    /* Names first: one too long for a zip is refused before anything is written. */
    uint64_t size = 22; /* the end record */
    for (int64_t i = 0; i < w.list.count && status == CBLOB_OK; ++i) {
        const char *name = NULL;
        size_t length = 0;
        status = member_name(&w, i, &name, &length);
        if (status == CBLOB_OK && sink->progress != NULL)
            status = add_member_size(&w, sink, i, length, &size);
    }
    if (status == CBLOB_OK && sink->progress != NULL)
        cb_sink_expect(sink, size);
    for (int64_t i = 0; i < w.list.count && status == CBLOB_OK; ++i)
        status = write_member(&w, &zip, output, i);
    if (status == CBLOB_OK)
        status = cb_zip_finish(&zip, member_name, &w);
    cb_zip_writer_free(&zip);
    free(w.name);
    cb_tensor_list_free(&w.list);
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

typedef struct npz_reader {
    cb_zip_reader zip;
    char *name; /* the entry's name as UTF-8 (cb_zip_entry_name), NUL-terminated */
    size_t capacity;
    bool lazy; /* large stored data members of a file stay in it */
} npz_reader;

/* The next entry and its name (false past the last). A name that is no tensor's is refused. */
static cblob_status next_member(npz_reader *r, cb_zip_entry *entry, bool *more, size_t *layer_length, int64_t *index,
                                bool *diff)
{
    CB_TRY(cb_zip_next(&r->zip, entry, more));
    if (!*more)
        return CBLOB_OK;
    size_t length = 0;
    CB_TRY(cb_zip_entry_name(entry, &r->name, &r->capacity, &length));
    if (memchr(r->name, 0, length) != NULL || !split_member(r->name, layer_length, index, diff))
        return npy_fail(r->name, "its name is not <layer>/<index>.npy (or <layer>/<index>/diff.npy)");
    return CBLOB_OK;
}

/* A member's .npy header, read through the one .npy codec (src/util/npy.h). */
static cblob_status read_header(cb_zip_member *member, const char *name, const char *what, cb_npy_array *out)
{
    const uint64_t size = member->entry->size;
    uint8_t preamble[CB_NPY_PREAMBLE_BYTES];
    const size_t got = size < sizeof preamble ? (size_t)size : sizeof preamble;
    size_t header_size = 0;
    CB_TRY(cb_zip_member_read(member, preamble, got));
    CB_TRY(cb_npy_header_size(what, preamble, got, &header_size));
    if (header_size > size)
        return npy_fail(name, "its .npy header runs past the member");
    /* A version 1 preamble is shorter than the bytes read for any version's: a header that ends
     * inside them holds no dictionary (fuzz_npz: a 10-byte header was given 12). */
    if (header_size < got)
        return npy_fail(name, "its .npy header is too short to hold its dictionary");
    uint8_t *header = cb_malloc(header_size);
    if (header == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte .npy header", header_size);
    memcpy(header, preamble, got);
    cblob_status status = cb_zip_member_read(member, header + got, header_size - got);
    if (status == CBLOB_OK)
        status = cb_npy_parse_header(what, header, header_size, out);
    free(header);
    if (status == CBLOB_OK && out->value_bytes != size - header_size)
        status = npy_fail(name, "its data is not the size its shape gives");
    return status;
}

/* The member's values into `to`, converted to `dtype` unless it is their own. */
static cblob_status read_values(cb_zip_member *member, const char *what, const cb_npy_array *array, cblob_dtype dtype,
                                uint8_t *to)
{
    const size_t from_size = cb_npy_element_size(array), to_size = cb_dtype_find(dtype)->size;
    cblob_dtype own = 0;
    if (cb_npy_blob_dtype(what, array, 0, &own) != CBLOB_OK)
        own = 0; /* no blob's dtype: converted, and that message is not the caller's */
    if (own == dtype)
        return cb_zip_member_read(member, to, (size_t)array->value_bytes);
    const int64_t per_piece = (int64_t)(CB_NPZ_CHUNK / from_size);
    uint8_t *piece = cb_malloc(CB_NPZ_CHUNK);
    cblob_status status = piece != NULL ? CBLOB_OK : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a piece of values");
    for (int64_t first = 0; status == CBLOB_OK && first < array->count; first += per_piece) {
        const int64_t n = array->count - first < per_piece ? array->count - first : per_piece;
        status = cb_zip_member_read(member, piece, (size_t)n * from_size);
        if (status == CBLOB_OK)
            status = cb_npy_convert(what, array, piece, first, n, dtype, to + (size_t)first * to_size);
    }
    free(piece);
    return status;
}

/* Whether a member's values stay in the file (a lazy open): a data member (stored, or deflated:
 * inflated on first access) in a file, holding the blob's dtype as it is, of more than
 * CB_LAZY_VALUES_MIN bytes. */
static bool stays_in_file(const npz_reader *r, const cb_tensor_set *set, int64_t i, const cb_npy_array *array,
                          cblob_dtype target, const char *what)
{
    cblob_dtype own = 0;
    return r->lazy && r->zip.source->file != NULL && !cb_tensor_set_is_diff(set, i) &&
           array->value_bytes > CB_LAZY_VALUES_MIN && cb_npy_blob_dtype(what, array, 0, &own) == CBLOB_OK &&
           own == target;
}

static cblob_status place_member(npz_reader *r, cb_tensor_set *set, const cb_zip_entry *entry, int64_t i,
                                 cblob_dtype dtype)
{
    char what[128];
    snprintf(what, sizeof what, "npz member \"%.64s\"", r->name);
    cb_zip_member member;
    CB_TRY(cb_zip_member_open(&r->zip, entry, &member));
    cb_npy_array array;
    cblob_dtype target = CBLOB_DTYPE_FLOAT32, to_dtype = 0;
    void *to = NULL;
    cblob_status status = read_header(&member, r->name, what, &array);
    if (status == CBLOB_OK)
        status = cb_npy_blob_dtype(what, &array, dtype, &target);
    if (status == CBLOB_OK && stays_in_file(r, set, i, &array, target, what)) {
        /* Its CRC-32 is checked when its values are read; a deflated member is inflated from its
         * first compressed byte then, its .npy header (inflated now: member.produced bytes)
         * dropped. */
        const bool deflated = member.inflater != NULL;
        status = cb_tensor_set_defer(set, i, target, array.num_axes, array.dims,
                                     member.data + (deflated ? 0 : member.produced),
                                     (uint8_t)(CB_BLOB_FILE_CRC | (deflated ? CB_BLOB_FILE_DEFLATED : 0)),
                                     cb_zip_rest_crc(&member), deflated ? entry->compressed : 0,
                                     deflated ? member.produced : 0);
        cb_zip_member_close(&member);
        return status;
    }
    if (status == CBLOB_OK)
        status = cb_tensor_set_place(set, i, target, array.num_axes, array.dims, &to, &to_dtype);
    if (status == CBLOB_OK && array.count > 0)
        status = read_values(&member, what, &array, to_dtype, to);
    if (status == CBLOB_OK)
        return cb_zip_member_finish(&member);
    cb_zip_member_close(&member);
    return status;
}

/* Places the members of one kind (data, then diffs), in the archive's order. */
static cblob_status place_members(npz_reader *r, cb_tensor_set *set, cblob_dtype dtype, bool diffs)
{
    cb_zip_rewind(&r->zip);
    for (int64_t i = 0;; ++i) {
        cb_zip_entry entry;
        bool more = false, diff = false;
        size_t layer_length = 0;
        int64_t index = 0;
        CB_TRY(next_member(r, &entry, &more, &layer_length, &index, &diff));
        if (!more)
            return CBLOB_OK;
        if (diff == diffs)
            CB_TRY(place_member(r, set, &entry, i, dtype));
    }
}

cblob_status cb_model_open_npz_source(cblob_context *context, cb_source *source, const char *name, cblob_dtype dtype,
                                      bool lazy, cblob_model **out)
{
    (void)name;
    npz_reader r = {.lazy = lazy};
    CB_TRY(cb_zip_open(source, &r.zip));
    cb_tensor_set set = {0};
    cblob_status status = CBLOB_OK;
    for (;;) {
        cb_zip_entry entry;
        bool more = false, diff = false;
        size_t layer_length = 0;
        int64_t index = 0;
        status = next_member(&r, &entry, &more, &layer_length, &index, &diff);
        if (status != CBLOB_OK || !more)
            break;
        status = cb_tensor_set_note(&set, r.name, layer_length, index, diff, false, r.name);
        if (status != CBLOB_OK)
            break;
    }
    if (status == CBLOB_OK)
        status = cb_tensor_set_layout(&set, context, NULL, NULL, NULL);
    if (status == CBLOB_OK)
        status = place_members(&r, &set, dtype, false);
    if (status == CBLOB_OK)
        status = place_members(&r, &set, dtype, true);
    if (status == CBLOB_OK)
        status = cb_tensor_set_finish(&set, out);
    cb_tensor_set_free(&set);
    free(r.name);
    return status;
}

CBLOB_API cblob_status cblob_model_open_npz(cblob_context *context, const uint8_t *bytes, size_t size,
                                            cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(bytes);
    CB_REQUIRE(out_model);
    cb_source source;
    cb_source_memory(&source, bytes, size, NULL);
    return cb_explain_bytes("the bytes", bytes, size, CBLOB_FILE_NPZ,
                            cb_model_open_npz_source(context, &source, "the bytes", 0, false, out_model));
}

CBLOB_API cblob_status cblob_model_open_npz_file(cblob_context *context, const char *path, cblob_model **out_model)
{
    CB_ENTER();
    CB_REQUIRE(context);
    CB_REQUIRE(path);
    CB_REQUIRE(out_model);
    cb_context_use_threads(context);
    cb_file_reading file;
    CB_TRY(cb_file_reading_open(context, path, &file));
    cblob_model *model = NULL;
    const cblob_status status =
        cb_file_reading_finish(&file, CBLOB_FILE_NPZ, cb_model_open_npz_source(context, &file.source, path, 0, false, &model));
    cb_file_reading_close(&file);
    if (status != CBLOB_OK) {
        if (model != NULL)
            cb_model_free(model);
        return status;
    }
    *out_model = model;
    return CBLOB_OK;
}
