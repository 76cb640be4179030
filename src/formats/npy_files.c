/* SPDX-License-Identifier: BSD-2-Clause */
/* opendir's d_type, strndup, strncasecmp. */
#define _GNU_SOURCE
#include "npy_files.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jansson.h>

#include "blob.h"
#include "export_common.h"
#include "io.h"
#include "model_json.h"
#include "model_names.h"
#include "model_values.h"
#include "name_index.h"
#include "npy.h"
#include "status.h"
#include "utf8.h"

#define INDEX_NAME "index.json"

/* ---- one .npy file ---------------------------------------------------------------------------- */

/* A new blob holding a parsed array of a .npy file's bytes. */
static cblob_status blob_from_array(cblob_context *context, const char *name, const cb_npy_array *parsed,
                                    const uint8_t *bytes, cblob_dtype dtype, cblob_blob **out)
{
    const cb_npy_array array = *parsed;
    cblob_dtype target = CBLOB_DTYPE_FLOAT32;
    CB_TRY(cb_npy_blob_dtype(name, &array, dtype, &target));
    cblob_blob *blob = NULL;
    CB_TRY(cb_blob_create(context, target, array.num_axes, array.dims, &blob));
    void *host = NULL;
    cblob_status status = array.count > 0 ? cb_blob_host(blob, CBLOB_PART_DATA, true, &host) : CBLOB_OK;
    if (status == CBLOB_OK && array.count > 0)
        status = cb_npy_convert(name, &array, bytes + array.header_size, 0, array.count, target, host);
    if (status != CBLOB_OK) {
        cb_blob_release(blob);
        return status;
    }
    *out = blob;
    return CBLOB_OK;
}

cblob_status cb_npy_blob_from_bytes(cblob_context *context, const char *name, const uint8_t *bytes, size_t size,
                                    cblob_dtype dtype, cblob_blob **out)
{
    cb_npy_array array;
    CB_TRY(cb_npy_parse(name, bytes, size, &array));
    return blob_from_array(context, name, &array, bytes, dtype, out);
}

/* The values of a .npy file into a blob's memory: straight when they are its dtype, else converted
 * in pieces. */
static cblob_status copy_values(cb_source *source, const char *name, const cb_npy_array *array, cblob_dtype target,
                                void *host)
{
    cblob_dtype own = 0;
    if (cb_npy_blob_dtype(name, array, 0, &own) != CBLOB_OK)
        own = 0;
    if (own == target)
        return cb_source_copy(source, array->header_size, (size_t)array->value_bytes, host);
    enum { PIECE = 1 << 16 };
    const size_t element = cb_npy_element_size(array), to_size = cb_dtype_find(target)->size;
    uint8_t *piece = malloc(PIECE * element);
    if (piece == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a piece of values");
    cblob_status status = CBLOB_OK;
    for (int64_t first = 0; status == CBLOB_OK && first < array->count; first += PIECE) {
        const int64_t n = array->count - first < PIECE ? array->count - first : PIECE;
        status = cb_source_copy(source, array->header_size + (size_t)first * element, (size_t)n * element, piece);
        if (status == CBLOB_OK)
            status = cb_npy_convert(name, array, piece, first, n, target, (uint8_t *)host + (size_t)first * to_size);
    }
    free(piece);
    return status;
}

cblob_status cb_npy_blob_from_source(cblob_context *context, const char *name, cb_source *source, cblob_dtype dtype,
                                     cblob_blob **out)
{
    size_t header_size = 0;
    CB_TRY(cb_source_need(source, 0, CB_NPY_PREAMBLE_BYTES));
    CB_TRY(cb_npy_header_size(name, source->bytes, source->size < CB_NPY_PREAMBLE_BYTES ? source->size
                                                                                       : CB_NPY_PREAMBLE_BYTES,
                              &header_size));
    CB_TRY(cb_source_need(source, 0, header_size));
    cb_npy_array array;
    CB_TRY(cb_npy_parse(name, source->bytes, source->size, &array)); /* reads the header only */
    cblob_dtype target = CBLOB_DTYPE_FLOAT32;
    CB_TRY(cb_npy_blob_dtype(name, &array, dtype, &target));
    cblob_blob *blob = NULL;
    CB_TRY(cb_blob_create(context, target, array.num_axes, array.dims, &blob));
    void *host = NULL;
    cblob_status status = array.count > 0 ? cb_blob_host(blob, CBLOB_PART_DATA, true, &host) : CBLOB_OK;
    if (status == CBLOB_OK && array.count > 0)
        status = copy_values(source, name, &array, target, host);
    if (status != CBLOB_OK) {
        cb_blob_release(blob);
        return status;
    }
    *out = blob;
    return CBLOB_OK;
}

/* A blob's part as .npy bytes: a blob of a model (read without making its handle) or a handle. */
typedef struct npy_part {
    const cblob_model *model;
    int64_t layer, index;
    cblob_blob *handle; /* when not NULL, the blob */
    cblob_part part;
} npy_part;

static cblob_status part_facts(const npy_part *p, cb_blob_facts *out)
{
    if (p->handle == NULL)
        return cb_model_blob_facts(p->model, p->layer, p->index, out);
    if (p->handle->shape.num_axes < 0)
        return cb_fail(CBLOB_ERR_STATE, "the blob has no shape (it was created empty and never reshaped)");
    cb_blob_facts facts = {.dtype = p->handle->dtype->dtype, .num_axes = p->handle->shape.num_axes,
                           .count = p->handle->shape.count,
                           .has_diff = cb_blob_head(p->handle, CBLOB_PART_DIFF) != CBLOB_HEAD_UNINITIALIZED};
    memcpy(facts.dims, p->handle->shape.dims, (size_t)facts.num_axes * sizeof *facts.dims);
    *out = facts;
    return CBLOB_OK;
}

static cblob_status emit_part(const void *what, cb_sink *sink)
{
    const npy_part *p = what;
    cb_blob_facts facts;
    CB_TRY(part_facts(p, &facts));
    uint8_t header[CB_NPY_WRITE_HEADER_BYTES];
    const size_t header_size = cb_npy_make_header(facts.dtype, facts.num_axes, facts.dims, header);
    const uint64_t bytes = (uint64_t)facts.count * cb_dtype_find(facts.dtype)->size;
    cb_sink_expect(sink, header_size + bytes);
    cb_sink_write(sink, header, header_size);
    if (p->handle == NULL) {
        const cb_tensor tensor = {.layer = p->layer, .index = (uint32_t)p->index, .part = (uint8_t)p->part,
                                  .kind = CB_TENSOR_PLAIN};
        return cb_tensor_write(p->model, &tensor, &facts, sink);
    }
    if (sink->kind == CB_SINK_COUNT || bytes == 0) {
        cb_sink_skip(sink, bytes);
        return CBLOB_OK;
    }
    void *values = NULL;
    CB_TRY(cb_blob_host(p->handle, p->part, false, &values));
    cb_sink_write(sink, values, (size_t)bytes);
    return sink->status;
}

static cblob_status check_part_args(cblob_blob *blob, cblob_part part)
{
    CB_REQUIRE(blob);
    return cb_check_part(part);
}

CBLOB_API cblob_status cblob_blob_to_npy(cblob_blob *blob, cblob_part part, uint8_t *buffer, size_t buffer_size,
                                         size_t *out_size)
{
    CB_ENTER();
    CB_TRY(check_part_args(blob, part));
    CB_REQUIRE(out_size);
    const npy_part p = {.handle = blob, .part = part};
    return cb_emit_to_buffer(emit_part, &p, ".npy array", buffer, buffer_size, out_size);
}

CBLOB_API cblob_status cblob_blob_to_npy_file(cblob_blob *blob, cblob_part part, const char *path)
{
    CB_ENTER();
    CB_TRY(check_part_args(blob, part));
    CB_REQUIRE(path);
    const npy_part p = {.handle = blob, .part = part};
    cb_blob_facts facts;
    CB_TRY(part_facts(&p, &facts)); /* before anything is created */
    return cb_emit_to_file(blob->context, emit_part, &p, path);
}

/* ---- writing a folder ------------------------------------------------------------------------- */

#define STEM_MAX 100
#define STEM_KEPT 83 /* STEM_MAX less '~' and 16 hex digits */
/* A stem and what uniqueness may append ("_L<index>_<n>"). */
#define STEM_ROOM (STEM_MAX + 48)

static uint64_t fnv1a(const char *text)
{
    uint64_t hash = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; ++p)
        hash = (hash ^ *p) * 1099511628211ull;
    return hash;
}

/* Windows refuses these as a file's name before its first '.', whatever follows. */
static bool is_device_name(const char *stem)
{
    static const char *const devices[] = {"con", "prn", "aux", "nul"};
    const size_t length = strcspn(stem, ".");
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; ++i)
        if (length == 3 && strncasecmp(stem, devices[i], 3) == 0)
            return true;
    return length == 4 && (strncasecmp(stem, "com", 3) == 0 || strncasecmp(stem, "lpt", 3) == 0) && stem[3] >= '1' &&
           stem[3] <= '9';
}

static void make_stem(const char *name, int64_t layer, char *stem)
{
    if (name[0] == '\0') {
        snprintf(stem, STEM_ROOM, "layer%" PRId64, layer);
        return;
    }
    size_t used = 0;
    if (name[0] == '.')
        stem[used++] = '_';
    for (const char *p = name + (name[0] == '.'); *p != '\0' && used <= STEM_MAX; ++p)
        stem[used++] = isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_' ? *p : '_';
    stem[used] = '\0';
    if (used > STEM_MAX)
        snprintf(stem + STEM_KEPT, STEM_ROOM - STEM_KEPT, "~%016" PRIx64, fnv1a(name));
    if (is_device_name(stem)) {
        memmove(stem + 1, stem, strlen(stem) + 1);
        stem[0] = '_';
    }
}

typedef struct folder_writer {
    cb_out_dir *dir;
    cb_output *index;
    bool index_started; /* an entry was written: the next one needs a separator */
    int64_t written;
    /* Each layer's stem (NULL for layers without blobs), unique ignoring case. */
    char **stems;
    cb_name_index taken;
} folder_writer;

/* A stem no earlier layer took, ignoring case (so also on a case-insensitive file system). */
static cblob_status unique_stem(folder_writer *w, const char *name, int64_t layer)
{
    char stem[STEM_ROOM];
    make_stem(name, layer, stem);
    const size_t length = strlen(stem);
    for (int64_t n = 1;; ++n) {
        if ((w->stems[layer] = strdup(stem)) == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the names of the files");
        if (cb_name_index_put(&w->taken, layer) < 0)
            return CBLOB_OK;
        free(w->stems[layer]);
        w->stems[layer] = NULL;
        snprintf(stem + length, STEM_ROOM - length, n == 1 ? "_L%" PRId64 : "_L%" PRId64 "_%" PRId64, layer, n);
    }
}

/* Writes text to index.json (a failure fails its commit). */
static void index_write(folder_writer *w, const char *text)
{
    (void)cb_output_write(w->index, text, strlen(text));
}

/* JSON text of a name that may not be UTF-8 (bad bytes as U+FFFD), or of null. */
static json_t *name_json(const char *name)
{
    return name != NULL ? cb_json_text(name, strlen(name)) : json_null();
}

static cblob_status index_entry(folder_writer *w, const char *file, const char *layer, int64_t layer_index,
                                int64_t blob, cblob_part part, const cb_blob_facts *facts)
{
    json_t *shape = json_array();
    for (int32_t i = 0; shape != NULL && i < facts->num_axes; ++i)
        json_array_append_new(shape, json_integer(facts->dims[i]));
    json_t *entry = json_pack("{s:s, s:o, s:o, s:I, s:s, s:s, s:o}", "file", file, "layer", name_json(layer),
                              "layer_index", layer != NULL ? json_integer(layer_index) : json_null(), "blob",
                              (json_int_t)blob, "part", part == CBLOB_PART_DIFF ? "diff" : "data", "dtype",
                              cb_dtype_find(facts->dtype)->name, "shape", shape);
    char *text = entry != NULL ? json_dumps(entry, JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER) : NULL;
    json_decref(entry);
    if (text == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for index.json");
    index_write(w, w->index_started ? ",\n  " : "\n  ");
    index_write(w, text);
    w->index_started = true;
    free(text);
    return CBLOB_OK;
}

/* One blob: its data, and its diff when it has one and diffs are asked for. */
static cblob_status write_blob(folder_writer *w, const char *stem, const char *layer, int64_t layer_index,
                               npy_part *p, bool diffs)
{
    cb_blob_facts facts;
    CB_TRY(part_facts(p, &facts));
    for (int part = 0; part <= (diffs && facts.has_diff ? 1 : 0); ++part) {
        char file[STEM_ROOM + 48];
        snprintf(file, sizeof file, "%s_%" PRId64 "%s.npy", stem, p->index, part ? "_diff" : "");
        p->part = (cblob_part)part;
        cb_output *output = NULL;
        CB_TRY(cb_output_open_in(w->dir, file, &output));
        cb_sink sink;
        cb_sink_output(&sink, output);
        const cblob_status status = emit_part(p, &sink);
        if (status != CBLOB_OK) {
            cb_sink_fail(&sink, status);
            cb_sink_file_abort(&sink);
            return status;
        }
        CB_TRY(cb_sink_file_commit(&sink));
        CB_TRY(index_entry(w, file, layer, layer_index, p->index, (cblob_part)part, &facts));
        ++w->written;
    }
    return CBLOB_OK;
}

static cblob_status write_model(folder_writer *w, const cblob_model *model, bool diffs)
{
    w->stems = calloc((size_t)model->num_layers + 1, sizeof *w->stems);
    if (w->stems == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " layers' file names", model->num_layers);
    CB_TRY(cb_name_index_init((const char *const *)w->stems, model->num_layers, true, &w->taken));
    for (int64_t i = 0; i < model->num_layers; ++i) {
        const int64_t blobs = model->layers[i].num_blobs;
        const char *name = model->layers[i].name;
        if (blobs > 0)
            CB_TRY(unique_stem(w, name, i));
        for (int64_t j = 0; j < blobs; ++j) {
            npy_part p = {.model = model, .layer = i, .index = j};
            CB_TRY(write_blob(w, w->stems[i], name, i, &p, diffs));
        }
    }
    return CBLOB_OK;
}

/* The bytes of the .npy files of a blob (its data, and its diff when it has one and diffs are asked). */
static cblob_status blob_files_size(npy_part *p, bool diffs, uint64_t *total)
{
    cb_blob_facts facts;
    CB_TRY(part_facts(p, &facts));
    uint8_t header[CB_NPY_WRITE_HEADER_BYTES];
    const uint64_t one = cb_npy_make_header(facts.dtype, facts.num_axes, facts.dims, header) +
                         (uint64_t)facts.count * cb_dtype_find(facts.dtype)->size;
    *total += diffs && facts.has_diff ? 2 * one : one;
    return CBLOB_OK;
}

/* The .npy files' bytes, the call's progress total. */
static cblob_status folder_size(const cb_npy_folder_source *source, bool diffs, uint64_t *out)
{
    uint64_t total = 0;
    for (int64_t i = 0; source->model != NULL && i < source->model->num_layers; ++i)
        for (int64_t j = 0; j < (int64_t)source->model->layers[i].num_blobs; ++j) {
            npy_part p = {.model = source->model, .layer = i, .index = j};
            CB_TRY(blob_files_size(&p, diffs, &total));
        }
    for (int64_t j = 0; j < source->num_blobs; ++j) {
        npy_part p = {.handle = source->blobs[j], .index = j};
        CB_TRY(blob_files_size(&p, diffs, &total));
    }
    for (int64_t j = 0; source->store != NULL && j < (int64_t)source->store->layers[0].num_blobs; ++j) {
        npy_part p = {.model = source->store, .layer = 0, .index = j};
        CB_TRY(blob_files_size(&p, diffs, &total));
    }
    *out = total;
    return CBLOB_OK;
}

static cblob_status write_all(folder_writer *w, const cb_npy_folder_source *source, bool diffs)
{
    cb_progress *progress = cb_progress_current(CB_PROGRESS_WRITING);
    if (progress != NULL) {
        uint64_t total = 0;
        CB_TRY(folder_size(source, diffs, &total));
        CB_TRY(cb_progress_size(progress, (int64_t)total));
    }
    /* Every file, index.json among them, is staged: nothing in the folder changes until all are
     * written and the progress callback had its last word. */
    CB_TRY(cb_out_dir_stage(w->dir));
    CB_TRY(cb_output_open_in(w->dir, INDEX_NAME, &w->index));
    json_t *head = json_pack("{s:i, s:o, s:s}", "schema", 1, "source", name_json(source->source), "kind", source->kind);
    char *text = head != NULL ? json_dumps(head, JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER) : NULL;
    json_decref(head);
    if (text == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for index.json");
    text[strlen(text) - 1] = '\0'; /* the object stays open for "files" */
    index_write(w, text);
    free(text);
    index_write(w, ", \"files\": [");
    if (source->model != NULL)
        CB_TRY(write_model(w, source->model, diffs));
    for (int64_t j = 0; j < source->num_blobs; ++j) {
        npy_part p = {.handle = source->blobs[j], .index = j};
        CB_TRY(write_blob(w, "blob", NULL, 0, &p, diffs));
    }
    for (int64_t j = 0; source->store != NULL && j < (int64_t)source->store->layers[0].num_blobs; ++j) {
        npy_part p = {.model = source->store, .layer = 0, .index = j};
        CB_TRY(write_blob(w, "blob", NULL, 0, &p, diffs));
    }
    index_write(w, w->index_started ? "\n]}\n" : "]}\n");
    cb_output *index = w->index;
    w->index = NULL;
    CB_TRY(cb_output_commit(index));
    CB_TRY(cb_progress_finish(progress));
    /* An index of an earlier conversion must not outlive the files it lists: gone (durably)
     * before any file is moved into place, back (the new one) once every file is. */
    CB_TRY(cb_out_dir_remove(w->dir, INDEX_NAME));
    CB_TRY(cb_out_dir_sync(w->dir));
    return cb_out_dir_publish(w->dir, INDEX_NAME);
}

static cblob_status write_folder(const cb_npy_folder_source *source, bool diffs, const char *folder,
                                 int64_t *out_num_files)
{
    folder_writer w = {0};
    CB_TRY(cb_out_dir_create(folder, &w.dir));
    const cblob_status status = write_all(&w, source, diffs);
    if (w.index != NULL)
        cb_output_abort(w.index);
    for (int64_t i = 0; w.stems != NULL && source->model != NULL && i < source->model->num_layers; ++i)
        free(w.stems[i]);
    free(w.stems);
    cb_name_index_free(&w.taken);
    if (status == CBLOB_OK) {
        cb_out_dir_close(w.dir);
        *out_num_files = w.written;
    } else {
        cb_out_dir_abandon(w.dir);
    }
    return status;
}

cblob_status cb_npy_folder_write(const cblob_context *context, const cb_npy_folder_source *source, bool diffs,
                                 const char *folder, int64_t *out_num_files)
{
    cb_progress progress;
    cb_context_begin_progress(context, CB_PROGRESS_WRITING, &progress);
    return cb_progress_end(&progress, write_folder(source, diffs, folder, out_num_files));
}

/* ---- reading a folder ------------------------------------------------------------------------- */

/* A layer's blobs are numbered from 0 without gaps: an index past this is not a layer's. */
#define MAX_BLOB_INDEX ((int64_t)1 << 20)

/* One .npy file of the folder: which layer (by index.json's index, or by name), blob and part,
 * and (from index.json) what it holds. */
typedef struct entry {
    char *file;
    char *layer;
    int64_t layer_index; /* -1 when the name is all there is */
    int64_t blob;
    bool diff;
    const char *dtype; /* index.json's, or NULL */
    json_t *shape;     /* index.json's, or NULL */
} entry;

typedef struct entry_list {
    entry *items;
    size_t count, capacity;
} entry_list;

static void entries_free(entry_list *list)
{
    for (size_t i = 0; i < list->count; ++i) {
        free(list->items[i].file);
        free(list->items[i].layer);
    }
    free(list->items);
}

static cblob_status entries_add(entry_list *list, const entry *e, size_t layer_length)
{
    if (list->count == list->capacity) {
        const size_t next = list->capacity > 0 ? 2 * list->capacity : 64;
        entry *grown = realloc(list->items, next * sizeof *grown);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu files", next);
        list->items = grown;
        list->capacity = next;
    }
    entry copy = *e;
    copy.file = strdup(e->file);
    copy.layer = strndup(e->layer, layer_length);
    if (copy.file == NULL || copy.layer == NULL) {
        free(copy.file);
        free(copy.layer);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the name of %s", e->file);
    }
    list->items[list->count++] = copy;
    return CBLOB_OK;
}

/* A file name index.json may give: one component of the folder, a .npy file. */
static bool is_plain_npy_name(const char *file)
{
    const size_t length = strlen(file);
    return length > 4 && strcmp(file + length - 4, ".npy") == 0 && strchr(file, '/') == NULL && file[0] != '.';
}

static cblob_status index_entry_read(const char *index_name, json_t *item, size_t i, entry_list *list)
{
    const char *file = json_string_value(json_object_get(item, "file"));
    const char *layer = json_string_value(json_object_get(item, "layer"));
    const char *part = json_string_value(json_object_get(item, "part"));
    const char *dtype = json_string_value(json_object_get(item, "dtype"));
    json_t *layer_index = json_object_get(item, "layer_index"), *blob = json_object_get(item, "blob");
    json_t *shape = json_object_get(item, "shape");
    if (file == NULL || !is_plain_npy_name(file) || part == NULL || (strcmp(part, "data") != 0 && strcmp(part, "diff") != 0) ||
        !json_is_integer(blob) || json_integer_value(blob) < 0 || json_integer_value(blob) > MAX_BLOB_INDEX ||
        dtype == NULL || !json_is_array(shape))
        return cb_fail(CBLOB_ERR_PARSE, "%s: files[%zu] lacks a .npy file name of the folder, a blob index, a part "
                       "(data or diff), a dtype or a shape", index_name, i);
    if (layer == NULL || !json_is_integer(layer_index) || json_integer_value(layer_index) < 0)
        return cb_fail(CBLOB_ERR_PARSE, "%s: files[%zu] names no layer: the folder holds a blob file's blobs, not a "
                       "net's", index_name, i);
    const entry e = {(char *)file, (char *)layer, json_integer_value(layer_index), json_integer_value(blob),
                     strcmp(part, "diff") == 0, dtype, shape};
    return entries_add(list, &e, json_string_length(json_object_get(item, "layer")));
}

static cblob_status read_index(const char *index_name, json_t **out, entry_list *list)
{
    cb_input input;
    CB_TRY(cb_input_open(index_name, &input));
    json_error_t error;
    json_t *index = json_loadb((const char *)input.bytes, input.size, 0, &error);
    cb_input_close(&input);
    json_t *files = json_object_get(index, "files");
    cblob_status status = json_is_array(files) ? CBLOB_OK
                          : index == NULL ? cb_fail(CBLOB_ERR_PARSE, "%s: line %d: %s", index_name, error.line, error.text)
                                          : cb_fail(CBLOB_ERR_PARSE, "%s has no \"files\" array", index_name);
    for (size_t i = 0; status == CBLOB_OK && i < json_array_size(files); ++i)
        status = index_entry_read(index_name, json_array_get(files, i), i, list);
    *out = index; /* the entries' dtype and shape point into it */
    return status;
}

/* <layer>_<blob>.npy or <layer>_<blob>_diff.npy. */
static cblob_status name_entry_read(const char *folder, const char *file, entry_list *list)
{
    size_t end = strlen(file) - 4;
    const bool diff = end > 5 && memcmp(file + end - 5, "_diff", 5) == 0;
    end -= diff ? 5 : 0;
    size_t digits = end;
    while (digits > 0 && isdigit((unsigned char)file[digits - 1]))
        --digits;
    if (digits == end || digits < 2 || file[digits - 1] != '_' || end - digits > 7 ||
        strtoll(file + digits, NULL, 10) > MAX_BLOB_INDEX)
        return cb_fail(CBLOB_ERR_PARSE, "%s/%s is not named <layer>_<index>.npy, and the folder has no index.json "
                       "to say which blob it is", folder, file);
    const entry e = {(char *)file, (char *)file, -1, strtoll(file + digits, NULL, 10), diff, NULL, NULL};
    return entries_add(list, &e, digits - 1);
}

static cblob_status list_folder(const char *folder, entry_list *list)
{
    DIR *dir = opendir(folder);
    if (dir == NULL)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot list the folder: %s", folder, strerror(errno));
    cblob_status status = CBLOB_OK;
    const struct dirent *item;
    while (status == CBLOB_OK && (item = readdir(dir)) != NULL)
        if (is_plain_npy_name(item->d_name))
            status = name_entry_read(folder, item->d_name, list);
    closedir(dir);
    if (status == CBLOB_OK && list->count == 0)
        return cb_fail(CBLOB_ERR_PARSE, "%s holds no .npy files", folder);
    return status;
}

/* Layers in index order (or by name), blobs by index, data before diff. */
static int entry_order(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->layer_index != y->layer_index)
        return x->layer_index < y->layer_index ? -1 : 1;
    const int names = strcmp(x->layer, y->layer);
    if (names != 0)
        return names;
    if (x->blob != y->blob)
        return x->blob < y->blob ? -1 : 1;
    return (int)x->diff - (int)y->diff;
}

/* The file holds what index.json says it does (a folder written over by a failed conversion
 * would mix two). */
static cblob_status check_against_index(const char *path, const entry *e, const cb_npy_array *array)
{
    if (e->dtype == NULL)
        return CBLOB_OK;
    bool same = strcmp(cb_npy_type_name(array), e->dtype) == 0 && json_array_size(e->shape) == (size_t)array->num_axes;
    for (int32_t i = 0; same && i < array->num_axes; ++i)
        same = json_integer_value(json_array_get(e->shape, (size_t)i)) == array->dims[i];
    if (!same)
        return cb_fail(CBLOB_ERR_PARSE, "%s does not hold what index.json lists (%s of %zu axes): the folder mixes "
                       "two conversions; convert into a fresh folder", path, e->dtype, json_array_size(e->shape));
    return CBLOB_OK;
}

/* One .npy file's values, placed in its blob (or its diff). */
static cblob_status read_entry(const char *folder, const entry *e, cblob_dtype dtype, cb_tensor_set *set, int64_t i)
{
    char *path = malloc(strlen(folder) + strlen(e->file) + 2);
    if (path == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the path of %s", e->file);
    sprintf(path, "%s/%s", folder, e->file);
    cb_input input;
    cblob_status status = cb_input_open(path, &input);
    if (status == CBLOB_OK) {
        cb_npy_array array;
        cblob_dtype target = CBLOB_DTYPE_FLOAT32, to_dtype = 0;
        void *to = NULL;
        status = cb_npy_parse(path, input.bytes, input.size, &array);
        if (status == CBLOB_OK)
            status = check_against_index(path, e, &array);
        if (status == CBLOB_OK)
            status = cb_npy_blob_dtype(path, &array, dtype, &target);
        if (status == CBLOB_OK)
            status = cb_tensor_set_place(set, i, target, array.num_axes, array.dims, &to, &to_dtype);
        if (status == CBLOB_OK && array.count > 0)
            status = cb_npy_convert(path, &array, input.bytes + array.header_size, 0, array.count, to_dtype, to);
        cb_input_close(&input);
    }
    free(path);
    return status;
}

/* The layer part of each entry's key: its name, or `<name>@<index>` for a later layer of a name
 * an earlier one has (as the exports write it; cblob_model_replace_blobs finds either). */
static cblob_status layer_keys(const entry_list *list, char ***out)
{
    char **keys = calloc(list->count + 1, sizeof *keys);
    const char **names = malloc((list->count + 1) * sizeof *names);
    cb_name_index first = {0};
    cblob_status status = keys != NULL && names != NULL ? CBLOB_OK
                                                        : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu names", list->count);
    for (size_t i = 0; status == CBLOB_OK && i < list->count; ++i)
        names[i] = list->items[i].layer;
    if (status == CBLOB_OK)
        status = cb_name_index_init(names, (int64_t)list->count, false, &first);
    for (size_t i = 0; status == CBLOB_OK && i < list->count; ++i) {
        const entry *e = &list->items[i];
        const int64_t held = cb_name_index_put(&first, (int64_t)i);
        const bool repeat = held >= 0 && list->items[held].layer_index != e->layer_index;
        const size_t size = strlen(e->layer) + 24;
        if ((keys[i] = malloc(size)) == NULL)
            status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a layer's name");
        else
            snprintf(keys[i], size, repeat ? "%s@%" PRId64 : "%s", e->layer, e->layer_index);
    }
    cb_name_index_free(&first);
    free(names);
    *out = keys;
    return status;
}

static cblob_status read_entries(cblob_context *context, const char *folder, const entry_list *list, cblob_dtype dtype,
                                 cblob_model **out)
{
    char **keys = NULL;
    cb_tensor_set set = {0};
    cblob_status status = layer_keys(list, &keys);
    for (size_t i = 0; status == CBLOB_OK && i < list->count; ++i)
        status = cb_tensor_set_note(&set, keys[i], strlen(keys[i]), list->items[i].blob, list->items[i].diff, false,
                                    list->items[i].file);
    if (status == CBLOB_OK)
        status = cb_tensor_set_layout(&set, context, NULL, NULL, NULL);
    /* Sorted, each blob's data comes before its diff. */
    for (size_t i = 0; status == CBLOB_OK && i < list->count; ++i)
        status = read_entry(folder, &list->items[i], dtype, &set, (int64_t)i);
    if (status == CBLOB_OK)
        status = cb_tensor_set_finish(&set, out);
    cb_tensor_set_free(&set);
    for (size_t i = 0; keys != NULL && i < list->count; ++i)
        free(keys[i]);
    free(keys);
    return status;
}

/* The bytes of the folder's .npy files and index.json: a call's progress total, before it reads
 * (files index.json does not list make it an estimate, which the last report corrects). */
static void expect_folder_size(const char *folder)
{
    cb_progress *progress = cb_progress_current(CB_PROGRESS_READING);
    DIR *dir = progress != NULL ? opendir(folder) : NULL;
    if (dir == NULL)
        return;
    int64_t total = 0;
    const struct dirent *item;
    while ((item = readdir(dir)) != NULL) {
        struct stat info;
        const size_t length = strlen(item->d_name);
        if ((strcmp(item->d_name, INDEX_NAME) == 0 || (length > 4 && strcmp(item->d_name + length - 4, ".npy") == 0)) &&
            fstatat(dirfd(dir), item->d_name, &info, 0) == 0 && S_ISREG(info.st_mode))
            total += (int64_t)info.st_size;
    }
    closedir(dir);
    cb_progress_set_total(progress, total);
}

cblob_status cb_npy_folder_read(cblob_context *context, const char *folder, bool by_name, cblob_dtype dtype,
                                cblob_model **out)
{
    expect_folder_size(folder);
    char *index_name = malloc(strlen(folder) + sizeof "/" INDEX_NAME);
    if (index_name == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the path of %s/" INDEX_NAME, folder);
    sprintf(index_name, "%s/" INDEX_NAME, folder);
    struct stat info;
    const bool indexed = stat(index_name, &info) == 0;
    entry_list list = {0};
    json_t *index = NULL;
    cblob_status status = CBLOB_OK;
    if (indexed)
        status = read_index(index_name, &index, &list);
    else if (by_name)
        status = list_folder(folder, &list);
    else
        status = cb_fail(CBLOB_ERR_PARSE, "%s has no " INDEX_NAME ": a conversion into it was interrupted or failed "
                         "(its " INDEX_NAME " comes last), or its .npy files are one's own (read them by their names "
                         "<layer>_<index>.npy with CBLOB_OPEN_NPY_BY_NAME, cblob convert --npy-names)", folder);
    if (status == CBLOB_OK) {
        qsort(list.items, list.count, sizeof *list.items, entry_order);
        status = read_entries(context, folder, &list, dtype, out);
    }
    entries_free(&list);
    json_decref(index);
    free(index_name);
    return status;
}
