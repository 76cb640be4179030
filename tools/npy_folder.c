/* SPDX-License-Identifier: BSD-2-Clause */
/* opendir's d_type, strndup. */
#define _GNU_SOURCE
#include "npy_folder.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "json_out.h"
#include "npy.h"
#include "status.h"

#define STEM_MAX 100
#define STEM_KEPT 83 /* STEM_MAX less '~' and 16 hex digits */
/* A stem and what uniqueness may append ("_L<index>_<n>"). */
#define STEM_ROOM (STEM_MAX + 48)

/* ---- stems ---------------------------------------------------------------------------------- */

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

/* Names to the first value put under each: an open-addressing hash table (linear in the layers,
 * where a scan per name would be quadratic), comparing ignoring ASCII case when asked. */
typedef struct name_map {
    char **keys;
    int64_t *values;
    size_t mask;
    bool fold_case;
} name_map;

static cblob_status name_map_init(name_map *map, int64_t count, bool fold_case)
{
    size_t capacity = 16;
    while (capacity < 2 * (size_t)count + 2)
        capacity *= 2;
    *map = (name_map){calloc(capacity, sizeof *map->keys), calloc(capacity, sizeof *map->values), capacity - 1, fold_case};
    return map->keys != NULL && map->values != NULL
               ? CBLOB_OK
               : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %" PRId64 " names", count);
}

static void name_map_free(name_map *map)
{
    for (size_t i = 0; map->keys != NULL && i <= map->mask; ++i)
        free(map->keys[i]);
    free(map->keys);
    free(map->values);
}

static size_t name_map_slot(const name_map *map, const char *key)
{
    uint64_t hash = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; ++p)
        hash = (hash ^ (unsigned char)(map->fold_case ? tolower(*p) : *p)) * 1099511628211ull;
    size_t at = (size_t)hash & map->mask;
    while (map->keys[at] != NULL && (map->fold_case ? strcasecmp(map->keys[at], key) : strcmp(map->keys[at], key)) != 0)
        at = (at + 1) & map->mask;
    return at;
}

/* The value of key, or -1. */
static int64_t name_map_get(const name_map *map, const char *key)
{
    const size_t at = name_map_slot(map, key);
    return map->keys[at] != NULL ? map->values[at] : -1;
}

/* Puts key unless it is there; false when it was (or memory ran out: *failed). */
static bool name_map_put(name_map *map, const char *key, int64_t value, bool *failed)
{
    const size_t at = name_map_slot(map, key);
    if (map->keys[at] != NULL)
        return false;
    map->keys[at] = strdup(key);
    map->values[at] = value;
    *failed = map->keys[at] == NULL;
    return !*failed;
}

/* A stem no earlier layer took, ignoring case; the map holds room for each layer's once. */
static cblob_status unique_stem(name_map *stems, const char *name, int64_t layer, char *stem)
{
    bool failed = false;
    make_stem(name, layer, stem);
    const size_t length = strlen(stem);
    for (int64_t n = 1; !name_map_put(stems, stem, layer, &failed) && !failed; ++n)
        snprintf(stem + length, STEM_ROOM - length, n == 1 ? "_L%" PRId64 : "_L%" PRId64 "_%" PRId64, layer, n);
    return failed ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the names of the files") : CBLOB_OK;
}

/* ---- writing -------------------------------------------------------------------------------- */

typedef struct folder_writer {
    cb_out_dir *dir;
    json_out index;
    cb_output *index_output;
    int64_t written;
} folder_writer;

static int write_to_output(const char *text, size_t size, void *context)
{
    return cb_output_write(context, text, size) == CBLOB_OK ? 0 : -1;
}

static json_t *shape_json(const tool_blob_facts *facts)
{
    json_t *shape = json_array();
    for (int32_t i = 0; shape != NULL && i < facts->num_axes; ++i)
        json_array_append_new(shape, json_integer(facts->dims[i]));
    return shape;
}

static void index_entry(json_out *index, const char *file, const char *layer, int64_t layer_index, int64_t blob,
                        cblob_part part, const tool_blob_facts *facts)
{
    char *name = layer != NULL ? tool_utf8(layer) : NULL;
    json_out_open(index, '{');
    json_out_key(index, "file");
    json_out_value(index, json_string(file));
    json_out_key(index, "layer");
    json_out_value(index, layer == NULL ? json_null() : name != NULL ? json_string(name) : NULL);
    json_out_key(index, "layer_index");
    json_out_value(index, layer == NULL ? json_null() : json_integer(layer_index));
    json_out_key(index, "blob");
    json_out_value(index, json_integer(blob));
    json_out_key(index, "part");
    json_out_value(index, json_string(part == CBLOB_PART_DIFF ? "diff" : "data"));
    json_out_key(index, "dtype");
    json_out_value(index, json_string(tool_dtype_name(facts->dtype)));
    json_out_key(index, "shape");
    json_out_value(index, shape_json(facts));
    json_out_close(index, '}');
    free(name);
}

/* One blob: its data, and its diff when it has one. */
static cblob_status write_blob(folder_writer *w, const char *stem, const char *layer, int64_t layer_index,
                               int64_t index, const tool_blob *blob)
{
    tool_blob_facts facts;
    CB_TRY(tool_blob_facts_of(blob, &facts));
    for (int part = 0; part <= (facts.has_diff ? 1 : 0); ++part) {
        char file[STEM_ROOM + 48];
        snprintf(file, sizeof file, "%s_%" PRId64 "%s.npy", stem, index, part ? "_diff" : "");
        cb_output *output = NULL;
        CB_TRY(cb_output_open_in(w->dir, file, &output));
        const cblob_status status = npy_write(output, blob, &facts, (cblob_part)part);
        if (status != CBLOB_OK) {
            cb_output_abort(output);
            return status;
        }
        CB_TRY(cb_output_commit(output));
        index_entry(&w->index, file, layer, layer_index, index, (cblob_part)part, &facts);
        ++w->written;
    }
    return CBLOB_OK;
}

static cblob_status write_net(folder_writer *w, const cblob_model *model)
{
    int64_t layers = 0;
    cblob_model_num_layers(model, &layers);
    name_map stems;
    CB_TRY(name_map_init(&stems, layers, true));
    cblob_status status = CBLOB_OK;
    for (int64_t i = 0; status == CBLOB_OK && i < layers; ++i) {
        const char *name = "";
        int64_t blobs = 0;
        cblob_model_layer_name(model, i, &name);
        cblob_model_layer_num_blobs(model, i, &blobs);
        tool_progress("convert", i + 1, layers, name);
        char stem[STEM_ROOM];
        if (blobs > 0)
            status = unique_stem(&stems, name, i, stem);
        for (int64_t j = 0; status == CBLOB_OK && j < blobs; ++j) {
            const tool_blob blob = tool_model_blob(model, i, j);
            status = write_blob(w, stem, name, i, j, &blob);
        }
    }
    tool_progress_done();
    name_map_free(&stems);
    return status;
}

static const char *kind_name(tool_kind kind)
{
    return kind == TOOL_KIND_NET ? "net" : kind == TOOL_KIND_BLOB ? "blob" : "blob_vector";
}

static cblob_status write_all(folder_writer *w, const tool_caffe *file)
{
    CB_TRY(cb_output_open_in(w->dir, "index.json", &w->index_output));
    json_out_start(&w->index, write_to_output, w->index_output);
    json_out_open(&w->index, '{');
    json_out_key(&w->index, "schema");
    json_out_value(&w->index, json_integer(1));
    json_out_key(&w->index, "source");
    char *source = tool_utf8(file->name);
    json_out_value(&w->index, source != NULL ? json_string(source) : NULL);
    free(source);
    json_out_key(&w->index, "kind");
    json_out_value(&w->index, json_string(kind_name(file->kind)));
    json_out_key(&w->index, "files");
    json_out_open(&w->index, '[');
    cblob_status status = file->model != NULL ? write_net(w, file->model) : CBLOB_OK;
    for (int64_t j = 0; status == CBLOB_OK && j < file->num_blobs; ++j) {
        const tool_blob blob = tool_handle_blob(file->blobs[j]);
        status = write_blob(w, "blob", NULL, 0, j, &blob);
    }
    json_out_close(&w->index, ']');
    json_out_close(&w->index, '}');
    json_out_finish(&w->index);
    if (status == CBLOB_OK)
        status = cb_output_write(w->index_output, "\n", 1);
    if (status == CBLOB_OK && w->index.failed)
        status = cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory to write index.json");
    /* index.json last: it lists only files that are in place. */
    cb_output *index = w->index_output;
    w->index_output = NULL;
    if (status != CBLOB_OK) {
        cb_output_abort(index);
        return status;
    }
    return cb_output_commit(index);
}

cblob_status npy_folder_write(const tool_caffe *file, const char *folder, int64_t *written)
{
    if (mkdir(folder, 0777) != 0 && errno != EEXIST)
        return cb_fail(CBLOB_ERR_IO, "%s: cannot make the folder: %s", folder, strerror(errno));
    folder_writer w = {0};
    CB_TRY(cb_out_dir_open(folder, &w.dir));
    cblob_status status = write_all(&w, file);
    if (status == CBLOB_OK)
        status = cb_out_dir_sync(w.dir);
    cb_out_dir_close(w.dir);
    *written = w.written;
    return status;
}

/* ---- reading back --------------------------------------------------------------------------- */

/* A layer's blobs are numbered from 0 without gaps: an index past this is not a layer's. */
#define MAX_BLOB_INDEX (1 << 20)

/* One .npy file of the folder: which layer (by index.json's index, or by name), blob and part. */
typedef struct entry {
    char *file;
    char *layer;
    int64_t layer_index; /* -1 when the name is all there is */
    int64_t blob;
    bool diff;
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

static cblob_status entries_add(entry_list *list, const char *file, const char *layer, size_t layer_length,
                                int64_t layer_index, int64_t blob, bool diff)
{
    if (list->count == list->capacity) {
        const size_t next = list->capacity > 0 ? 2 * list->capacity : 64;
        entry *grown = realloc(list->items, next * sizeof *grown);
        if (grown == NULL)
            return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for %zu files", next);
        list->items = grown;
        list->capacity = next;
    }
    entry e = {strdup(file), strndup(layer, layer_length), layer_index, blob, diff};
    if (e.file == NULL || e.layer == NULL) {
        free(e.file);
        free(e.layer);
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the name of %s", file);
    }
    list->items[list->count++] = e;
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
    json_t *layer_index = json_object_get(item, "layer_index"), *blob = json_object_get(item, "blob");
    if (file == NULL || !is_plain_npy_name(file) || part == NULL || (strcmp(part, "data") != 0 && strcmp(part, "diff") != 0) ||
        !json_is_integer(blob) || json_integer_value(blob) < 0 || json_integer_value(blob) > MAX_BLOB_INDEX)
        return cb_fail(CBLOB_ERR_PARSE, "%s: files[%zu] lacks a .npy file name of the folder, a blob index or a part "
                       "(data or diff)", index_name, i);
    if (layer == NULL || !json_is_integer(layer_index) || json_integer_value(layer_index) < 0)
        return cb_fail(CBLOB_ERR_PARSE, "%s: files[%zu] names no layer: the folder holds a blob file's blobs, not a "
                       "net's", index_name, i);
    return entries_add(list, file, layer, strlen(layer), json_integer_value(layer_index), json_integer_value(blob),
                       strcmp(part, "diff") == 0);
}

static cblob_status read_index(const char *index_name, entry_list *list)
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
    json_decref(index);
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
    return entries_add(list, file, file, digits - 1, -1, strtoll(file + digits, NULL, 10), diff);
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

static bool same_layer(const entry *a, const entry *b)
{
    return a->layer_index == b->layer_index && strcmp(a->layer, b->layer) == 0;
}

static cblob_status read_npy(cblob_context *context, const char *folder, const entry *e, cblob_dtype dtype,
                             cblob_blob **out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, e->file);
    cb_input input;
    CB_TRY(cb_input_open(path, &input));
    npy_array array;
    cblob_status status = npy_parse(path, input.bytes, input.size, &array);
    if (status == CBLOB_OK)
        status = npy_to_blob(context, path, &array, dtype, out);
    cb_input_close(&input);
    return status;
}

static bool same_shape(cblob_blob *a, cblob_blob *b, int64_t *count)
{
    int64_t da[CBLOB_MAX_AXES], db[CBLOB_MAX_AXES];
    int32_t na = 0, nb = 0;
    cblob_blob_shape(a, CBLOB_MAX_AXES, da, &na);
    cblob_blob_shape(b, CBLOB_MAX_AXES, db, &nb);
    cblob_blob_count(a, count);
    return na == nb && memcmp(da, db, (size_t)na * sizeof *da) == 0;
}

/* A diff file's values into its blob's diff: the same shape, converted to the blob's dtype. */
static cblob_status add_diff(cblob_context *context, const char *folder, const entry *e, cblob_blob *blob)
{
    cblob_dtype dtype = CBLOB_DTYPE_FLOAT32;
    cblob_blob_dtype(blob, &dtype);
    cblob_blob *diff = NULL;
    CB_TRY(read_npy(context, folder, e, dtype, &diff));
    int64_t count = 0;
    cblob_status status = same_shape(blob, diff, &count)
                              ? CBLOB_OK
                              : cb_fail(CBLOB_ERR_SHAPE, "%s/%s: the diff's shape is not its blob's", folder, e->file);
    const void *from = NULL;
    void *to = NULL;
    if (status == CBLOB_OK && count > 0 &&
        ((status = cblob_blob_cpu_ptr(diff, CBLOB_PART_DATA, &from)) != CBLOB_OK ||
         (status = cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DIFF, &to)) != CBLOB_OK))
        status = tool_library_error(status, e->file);
    if (status == CBLOB_OK && count > 0)
        memcpy(to, from, (size_t)count * (dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4));
    cblob_blob_destroy(diff);
    return status;
}

/* The base net's layers, for matching entries to them. */
typedef struct base_layers {
    const cblob_model *model;
    int64_t count;
    name_map first; /* each name's first layer */
} base_layers;

static cblob_status base_layers_make(const cblob_model *model, base_layers *out)
{
    *out = (base_layers){.model = model};
    if (model == NULL)
        return CBLOB_OK;
    cblob_model_num_layers(model, &out->count);
    CB_TRY(name_map_init(&out->first, out->count, false));
    bool failed = false;
    for (int64_t i = 0; i < out->count && !failed; ++i) {
        const char *name = "";
        cblob_model_layer_name(model, i, &name);
        name_map_put(&out->first, name, i, &failed);
    }
    return failed ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the base's layer names") : CBLOB_OK;
}

/* The layer's name as replace_blobs should look for it in base (see npy_folder.h): its name when
 * that finds the layer index.json gives, "<name>@<index>" when an earlier layer has the name. */
static char *layer_key(const entry *e, const base_layers *base)
{
    const char *name = NULL;
    if (base->model != NULL && e->layer_index >= 0 && e->layer_index < base->count &&
        cblob_model_layer_name(base->model, e->layer_index, &name) == CBLOB_OK) {
        char *shown = tool_utf8(name);
        const bool same = shown != NULL && strcmp(shown, e->layer) == 0;
        free(shown);
        if (same && name_map_get(&base->first, name) == e->layer_index)
            return strdup(name);
        if (same) {
            const size_t size = strlen(name) + 24;
            char *key = malloc(size);
            if (key != NULL)
                snprintf(key, size, "%s@%" PRId64, name, e->layer_index);
            return key;
        }
    }
    return strdup(e->layer);
}

/* One layer from its entries [first, end): blobs by index without gaps, diffs into them. */
static cblob_status add_layer(cblob_context *context, const char *folder, const entry *first, const entry *end,
                              cblob_dtype dtype, const base_layers *base, cblob_model *model)
{
    const int64_t count = end[-1].blob + 1;
    cblob_blob **blobs = calloc((size_t)count, sizeof *blobs);
    char *key = layer_key(first, base);
    cblob_status status = blobs != NULL && key != NULL
                              ? CBLOB_OK
                              : cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for layer %s", first->layer);
    for (const entry *e = first; status == CBLOB_OK && e < end; ++e) {
        if (e > first && e->blob == e[-1].blob && e->diff == e[-1].diff)
            status = cb_fail(CBLOB_ERR_PARSE, "%s: %s and %s are the same blob part", folder, e[-1].file, e->file);
        else if (!e->diff)
            status = read_npy(context, folder, e, dtype, &blobs[e->blob]);
        else if (blobs[e->blob] == NULL)
            status = cb_fail(CBLOB_ERR_PARSE, "%s/%s: a diff without its blob's data", folder, e->file);
        else
            status = add_diff(context, folder, e, blobs[e->blob]);
    }
    for (int64_t i = 0; status == CBLOB_OK && i < count; ++i)
        if (blobs[i] == NULL)
            status = cb_fail(CBLOB_ERR_PARSE, "%s: layer %s has blob %" PRId64 " but no blob %" PRId64, folder,
                             first->layer, count - 1, i);
    if (status == CBLOB_OK && (status = cblob_model_add_layer(model, key, "", blobs, count)) != CBLOB_OK)
        status = tool_library_error(status, folder);
    for (int64_t i = 0; blobs != NULL && i < count; ++i)
        cblob_blob_destroy(blobs[i]);
    free(blobs);
    free(key);
    return status;
}

cblob_status npy_folder_read(cblob_context *context, const char *folder, const cblob_model *base, cblob_dtype dtype,
                             cblob_model **out)
{
    char index_name[4096];
    snprintf(index_name, sizeof index_name, "%s/index.json", folder);
    struct stat info;
    entry_list list = {0};
    base_layers layers;
    cblob_status status = base_layers_make(base, &layers);
    if (status == CBLOB_OK)
        status = stat(index_name, &info) == 0 ? read_index(index_name, &list) : list_folder(folder, &list);
    cblob_model *model = NULL;
    if (status == CBLOB_OK && (status = cblob_model_create(context, CBLOB_NET_FORMAT_V2, NULL, &model)) != CBLOB_OK)
        status = tool_library_error(status, folder);
    if (status == CBLOB_OK)
        qsort(list.items, list.count, sizeof *list.items, entry_order);
    for (size_t i = 0, end; status == CBLOB_OK && i < list.count; i = end) {
        for (end = i + 1; end < list.count && same_layer(&list.items[i], &list.items[end]); ++end)
            ;
        tool_progress("convert", (int64_t)end, (int64_t)list.count, list.items[i].layer);
        status = add_layer(context, folder, &list.items[i], &list.items[end], dtype, &layers, model);
    }
    tool_progress_done();
    entries_free(&list);
    if (base != NULL)
        name_map_free(&layers.first);
    if (status != CBLOB_OK) {
        cblob_model_destroy(model);
        return status;
    }
    *out = model;
    return CBLOB_OK;
}
