/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob diff [--json] [--atol ABS] [--rtol REL] A B: what differs between two models (or two blob
 * files), as diff(1) says it: exit 0 when equal, 1 when different, 2 on trouble.
 *
 * Layers are matched by name (the k-th of a name in A with the k-th in B, as Caffe's
 * CopyTrainedLayersFrom matches them), through one sort of each side's keys and a merge; against a
 * weights file (npz, safetensors, .npy folder) a net's layers with blobs are keyed as the converters
 * name them (`<layer>@<index>` for a repeated name's later layers). A matched pair's structure is
 * compared field by field over the library's layer JSON (cblob_model_layer_json: type, bottoms,
 * tops, phase, rules, param specs and every parameter), and its blobs by index: shape, dtype and
 * values, read in pieces of 1 MiB in the blobs' own dtypes and compared as doubles. Each difference
 * is one JSON record, which the text output renders and --json writes as it is made.
 *
 * Memory: inputs are opened lazily where the library can (a path to a .caffemodel, .npz or
 * safetensors file), and a lazily opened model keeps each blob's values once they are read, so a
 * side that has read more than RELIEVE_BYTES of values is closed and opened again between layers:
 * the program holds about that much of each model, not both whole. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commands.h"
#include "json_out.h"
#include "tool.h"

#define COMMAND "diff"

/* diff(1)'s statuses: the program's TOOL_FAILED (1) means "different" here, so every trouble is 2. */
enum { DIFF_EQUAL = 0, DIFF_DIFFERENT = 1, DIFF_TROUBLE = 2 };

/* How many bytes of values a lazily opened side may hold before it is opened again. Test hook:
 * CBLOB_TOOL_TEST_RELIEVE_BYTES=N sets it (1: after every layer; tests/tools/cli_diff.py and
 * bench/diff_bench.sh, which measures the memory it saves). */
#define RELIEVE_BYTES ((int64_t)64 << 20)

static int64_t relieve_bytes(void)
{
    const char *hook = getenv("CBLOB_TOOL_TEST_RELIEVE_BYTES");
    char *end = NULL;
    const long long bytes = hook != NULL ? strtoll(hook, &end, 10) : 0;
    return hook != NULL && end != hook && *end == '\0' && bytes > 0 ? (int64_t)bytes : RELIEVE_BYTES;
}

/* ---- the two sides ------------------------------------------------------------------------- */

typedef struct side {
    const char *path;
    const char *label; /* "A" or "B" */
    int32_t flags;     /* how it was opened (opened again the same way) */
    tool_caffe file;
    bool weights_only;  /* an npz, safetensors or .npy folder: blobs, no structure */
    bool holds_weights; /* some blob */
    int64_t num_layers, num_blobs;
    char **keys;    /* per layer, the name it is matched by; NULL: the layer takes no part */
    int64_t *match; /* per layer, the other side's matched layer, or -1 */
    int64_t loaded;    /* bytes of values read since it was opened */
    int64_t read_all;  /* bytes of values read in all */
} side;

static bool is_model(const side *s)
{
    return s->file.model != NULL;
}

static const char *kind_name(cblob_file_kind kind)
{
    switch (kind) {
    case CBLOB_FILE_NET: return "net";
    case CBLOB_FILE_BLOB: return "blob";
    case CBLOB_FILE_BLOB_VECTOR: return "blob_vector";
    case CBLOB_FILE_NPY: return "npy";
    case CBLOB_FILE_NPZ: return "npz";
    case CBLOB_FILE_SAFETENSORS: return "safetensors";
    case CBLOB_FILE_NPY_FOLDER: return "npy_folder";
    default: return "unknown";
    }
}

static const char *kind_text(cblob_file_kind kind)
{
    switch (kind) {
    case CBLOB_FILE_NET: return "net";
    case CBLOB_FILE_BLOB: return "blob (BlobProto)";
    case CBLOB_FILE_BLOB_VECTOR: return "blob vector (BlobProtoVector)";
    case CBLOB_FILE_NPY: return "blob (NumPy .npy)";
    case CBLOB_FILE_NPZ: return "weights (NumPy .npz)";
    case CBLOB_FILE_SAFETENSORS: return "weights (safetensors)";
    case CBLOB_FILE_NPY_FOLDER: return "weights (folder of .npy files)";
    default: return "unknown";
    }
}

/* The side's counts, once opened (and again after opening it anew). */
static cblob_status side_count(side *s)
{
    s->num_layers = 0;
    s->num_blobs = s->file.num_blobs;
    s->weights_only = s->file.kind == CBLOB_FILE_NPZ || s->file.kind == CBLOB_FILE_SAFETENSORS ||
                      s->file.kind == CBLOB_FILE_NPY_FOLDER;
    if (!is_model(s)) {
        s->holds_weights = s->num_blobs > 0;
        return CBLOB_OK;
    }
    TOOL_TRY(cblob_model_num_layers(s->file.model, &s->num_layers));
    for (int64_t i = 0; i < s->num_layers; ++i) {
        int64_t blobs = 0;
        TOOL_TRY(cblob_model_layer_num_blobs(s->file.model, i, &blobs));
        s->num_blobs += blobs;
    }
    s->holds_weights = s->num_blobs > 0;
    return CBLOB_OK;
}

static int side_open(cblob_context *context, side *s, int32_t flags)
{
    /* Lazily where the library can: standard input is read whole. */
    s->flags = flags | (tool_is_stdio(s->path) ? 0 : CBLOB_OPEN_LAZY);
    const int opened = tool_caffe_open(context, COMMAND, s->path, s->flags, 0, &s->file);
    if (opened != TOOL_OK)
        return opened == TOOL_INTERRUPTED ? TOOL_INTERRUPTED : DIFF_TROUBLE;
    if (side_count(s) != CBLOB_OK)
        return tool_library_fail(DIFF_TROUBLE, COMMAND);
    return TOOL_OK;
}

static void side_close(side *s)
{
    for (int64_t i = 0; s->keys != NULL && i < s->num_layers; ++i)
        free(s->keys[i]);
    free(s->keys);
    free(s->match);
    tool_caffe_close(&s->file);
}

/* A lazily opened model keeps the values it has read: once it holds more than RELIEVE_BYTES, it is
 * opened again (its structure only), which gives that memory back. The file must still hold the
 * same layers: a file changed meanwhile is trouble, as the library's lazy reads say it is. */
static cblob_status side_relieve(cblob_context *context, side *s, int64_t progress_total, int64_t progress_done)
{
    if (s->loaded < relieve_bytes() || !(s->flags & CBLOB_OPEN_LAZY) || !is_model(s))
        return CBLOB_OK;
    const int64_t layers = s->num_layers, blobs = s->num_blobs;
    tool_caffe_close(&s->file);
    const int opened = tool_caffe_open(context, COMMAND, s->path, s->flags, 0, &s->file);
    if (opened == TOOL_INTERRUPTED)
        return TOOL_STOPPED;
    if (opened != TOOL_OK)
        return TOOL_REPORTED;
    TOOL_TRY(side_count(s));
    s->loaded = 0;
    tool_progress_phase(TOOL_PHASE_WORK, "comparing", s->file.name); /* opening it showed its own */
    tool_progress_total(progress_total);
    tool_progress_add(progress_done);
    if (s->num_layers != layers || s->num_blobs != blobs)
        return tool_own_failure(COMMAND, "%s: changed while it was compared (%" PRId64 " layers and %" PRId64
                                " blobs, then %" PRId64 " and %" PRId64 ")", s->file.name, layers, blobs,
                                s->num_layers, s->num_blobs);
    return CBLOB_OK;
}

/* ---- matching layers ----------------------------------------------------------------------- */

typedef struct layer_entry {
    const char *key;
    int64_t layer;
    int64_t occurrence; /* how many layers of the same key come before it */
} layer_entry;

static int entry_order(const void *x, const void *y)
{
    const layer_entry *a = x, *b = y;
    const int c = strcmp(a->key, b->key);
    if (c != 0)
        return c;
    return a->layer < b->layer ? -1 : a->layer > b->layer;
}

/* The side's taking part layers as entries sorted by key, with their occurrences. */
static layer_entry *sorted_entries(const side *s, int64_t *count)
{
    layer_entry *entries = malloc(((size_t)s->num_layers + 1) * sizeof *entries);
    if (entries == NULL)
        return NULL;
    int64_t n = 0;
    for (int64_t i = 0; i < s->num_layers; ++i)
        if (s->keys[i] != NULL)
            entries[n++] = (layer_entry){.key = s->keys[i], .layer = i};
    qsort(entries, (size_t)n, sizeof *entries, entry_order);
    for (int64_t i = 1; i < n; ++i)
        if (strcmp(entries[i].key, entries[i - 1].key) == 0)
            entries[i].occurrence = entries[i - 1].occurrence + 1;
    *count = n;
    return entries;
}

/* Each layer's key: its name; a net's layer against a weights file: the name the converters give
 * it (UTF-8, `<name>@<index>` for a repeated name's later layers), and only layers with blobs. */
static cblob_status make_keys(side *s, bool as_exported)
{
    s->keys = calloc((size_t)s->num_layers + 1, sizeof *s->keys);
    s->match = malloc(((size_t)s->num_layers + 1) * sizeof *s->match);
    if (s->keys == NULL || s->match == NULL)
        return tool_own_failure(COMMAND, "no memory for %" PRId64 " layers' names", s->num_layers);
    for (int64_t i = 0; i < s->num_layers; ++i) {
        s->match[i] = -1;
        const char *name = NULL;
        int64_t blobs = 0;
        TOOL_TRY(cblob_model_layer_name(s->file.model, i, &name));
        TOOL_TRY(cblob_model_layer_num_blobs(s->file.model, i, &blobs));
        s->keys[i] = as_exported ? tool_utf8(name) : strdup(name);
        if (s->keys[i] == NULL)
            return tool_own_failure(COMMAND, "no memory for %" PRId64 " layers' names", s->num_layers);
    }
    if (!as_exported)
        return CBLOB_OK;
    /* A later layer of a name is `<name>@<index>`, whether or not it has blobs (as the exports). */
    int64_t n = 0;
    layer_entry *entries = sorted_entries(s, &n);
    if (entries == NULL)
        return tool_own_failure(COMMAND, "no memory for %" PRId64 " layers' names", s->num_layers);
    cblob_status status = CBLOB_OK;
    for (int64_t k = 0; k < n && status == CBLOB_OK; ++k) {
        if (entries[k].occurrence == 0)
            continue;
        const int64_t i = entries[k].layer;
        const size_t size = strlen(s->keys[i]) + 24;
        char *key = malloc(size);
        if (key == NULL) {
            status = tool_own_failure(COMMAND, "no memory for %" PRId64 " layers' names", s->num_layers);
            break;
        }
        snprintf(key, size, "%s@%" PRId64, s->keys[i], i);
        entries[k].key = key; /* the sorted entries point at the old keys until freed here */
    }
    for (int64_t k = 0; k < n; ++k)
        if (entries[k].key != s->keys[entries[k].layer]) {
            free(s->keys[entries[k].layer]);
            s->keys[entries[k].layer] = (char *)entries[k].key;
        }
    free(entries);
    /* A weights file holds layers with blobs only: the net's others take no part. */
    for (int64_t i = 0; status == CBLOB_OK && i < s->num_layers; ++i) {
        int64_t blobs = 0;
        cblob_model_layer_num_blobs(s->file.model, i, &blobs);
        if (blobs == 0) {
            free(s->keys[i]);
            s->keys[i] = NULL;
        }
    }
    return status;
}

/* The k-th of a key in A with the k-th in B: both sorted by (key, occurrence), then merged. */
static cblob_status match_layers(side *a, side *b)
{
    int64_t na = 0, nb = 0;
    layer_entry *ea = sorted_entries(a, &na), *eb = ea != NULL ? sorted_entries(b, &nb) : NULL;
    if (ea == NULL || eb == NULL) {
        free(ea);
        return tool_own_failure(COMMAND, "no memory to match %" PRId64 " and %" PRId64 " layers", a->num_layers,
                                b->num_layers);
    }
    for (int64_t i = 0, j = 0; i < na && j < nb;) {
        int c = strcmp(ea[i].key, eb[j].key);
        if (c == 0)
            c = ea[i].occurrence < eb[j].occurrence ? -1 : ea[i].occurrence > eb[j].occurrence;
        if (c < 0) {
            ++i;
        } else if (c > 0) {
            ++j;
        } else {
            a->match[ea[i].layer] = eb[j].layer;
            b->match[eb[j].layer] = ea[i].layer;
            ++i;
            ++j;
        }
    }
    free(ea);
    free(eb);
    return CBLOB_OK;
}

/* ---- the comparison ------------------------------------------------------------------------ */

typedef struct totals {
    int64_t layers_changed, layers_removed, layers_added;
    int64_t blobs_compared, blobs_compared_differing, values_compared, values_differing;
    int64_t blobs_differing; /* the compared that differ, and those in one file only */
    int64_t net_fields;
} totals;

typedef struct diff {
    cblob_context *context;
    side a, b;
    double atol, rtol;
    bool structure, values; /* what is compared */
    bool quiet;             /* status only: stops at the first difference */
    bool same_file;         /* A and B name one file: equal, nothing compared */
    int64_t progress_total; /* bytes of values both sides hold */
    totals totals;
    bool different;
} diff;

/* A number for the report: JSON has no infinity or NaN, so those are the strings the library's
 * JSON writes for them. */
static json_t *number(double value)
{
    if (isnan(value))
        return json_string("nan");
    if (isinf(value))
        return json_string(value > 0 ? "inf" : "-inf");
    return json_real(value);
}

static json_t *shape_json(const tool_blob_facts *facts)
{
    json_t *shape = json_array();
    for (int32_t i = 0; shape != NULL && i < facts->num_axes; ++i)
        json_array_append_new(shape, json_integer(facts->dims[i]));
    return json_pack("{s:o?, s:s, s:I}", "shape", shape, "dtype", tool_dtype_name(facts->dtype), "count",
                     (json_int_t)facts->count);
}

typedef struct value_stats {
    int64_t differing, nan_mismatches;
    double max_abs, max_rel;
} value_stats;

/* The count values from start, as doubles in values (read in their dtype, then widened in place
 * from the end, where no value not yet widened is written over). */
static cblob_status read_doubles(side *s, const tool_blob *blob, cblob_dtype dtype, int64_t start, int64_t count,
                                 double *values, size_t size)
{
    TOOL_TRY(tool_blob_read(blob, CBLOB_PART_DATA, start, count, values, size));
    const size_t element = tool_dtype_size(dtype);
    const unsigned char *raw = (const unsigned char *)values;
    for (int64_t i = count - 1; dtype != CBLOB_DTYPE_FLOAT64 && i >= 0; --i) {
        if (dtype == CBLOB_DTYPE_FLOAT32) {
            float v;
            memcpy(&v, raw + (size_t)i * element, sizeof v);
            values[i] = v;
        } else if (dtype == CBLOB_DTYPE_INT32) {
            int32_t v;
            memcpy(&v, raw + (size_t)i * element, sizeof v);
            values[i] = v;
        } else {
            uint32_t v;
            memcpy(&v, raw + (size_t)i * element, sizeof v);
            values[i] = v;
        }
    }
    s->loaded += count * (int64_t)element;
    s->read_all += count * (int64_t)element;
    tool_progress_add(count * (int64_t)element);
    return CBLOB_OK;
}

#define PIECE_VALUES (TOOL_PIECE_BYTES / sizeof(double))

/* A read that failed, said with the file and the blob (the library's detail names neither). A stop
 * the program asked for, or a failure said already, is left as it is. */
static cblob_status read_failure(cblob_status status, const side *s, const char *where)
{
    if (status == CBLOB_OK || status == TOOL_REPORTED || status == TOOL_STOPPED ||
        (status == CBLOB_ERR_CANCELLED && tool_interrupted() != 0))
        return status;
    return tool_own_failure(COMMAND, "%s, %s: %s", s->file.name, where, cblob_last_error_detail());
}

static cblob_status compare_values(diff *d, const tool_blob *ta, const tool_blob_facts *fa, const tool_blob *tb,
                                   const tool_blob_facts *fb, const char *where, value_stats *out)
{
    static double av[PIECE_VALUES], bv[PIECE_VALUES];
    value_stats st = {0};
    for (int64_t start = 0; start < fa->count; start += (int64_t)PIECE_VALUES) {
        if (tool_interrupted() != 0)
            return TOOL_STOPPED;
        const int64_t n = fa->count - start < (int64_t)PIECE_VALUES ? fa->count - start : (int64_t)PIECE_VALUES;
        TOOL_TRY(read_failure(read_doubles(&d->a, ta, fa->dtype, start, n, av, sizeof av), &d->a, where));
        TOOL_TRY(read_failure(read_doubles(&d->b, tb, fb->dtype, start, n, bv, sizeof bv), &d->b, where));
        for (int64_t i = 0; i < n; ++i) {
            const double a = av[i], b = bv[i];
            if (isnan(a) || isnan(b)) {
                if (!(isnan(a) && isnan(b))) { /* NaN equals NaN at the same place only */
                    ++st.differing;
                    ++st.nan_mismatches;
                }
                continue;
            }
            if (a == b) /* 0 and -0 too, and an infinity and itself */
                continue;
            const double abs_diff = fabs(b - a), rel_diff = a != 0 ? abs_diff / fabs(a) : INFINITY;
            st.max_abs = abs_diff > st.max_abs ? abs_diff : st.max_abs;
            st.max_rel = rel_diff > st.max_rel ? rel_diff : st.max_rel;
            /* numpy.isclose(b, a): an infinity is close to itself only. */
            if (isinf(a) || isinf(b) || !(abs_diff <= d->atol + d->rtol * fabs(a)))
                ++st.differing;
        }
    }
    *out = st;
    return CBLOB_OK;
}

static bool same_shape(const tool_blob_facts *a, const tool_blob_facts *b)
{
    return a->num_axes == b->num_axes && memcmp(a->dims, b->dims, (size_t)a->num_axes * sizeof a->dims[0]) == 0;
}

/* A blob record, or NULL in *out when the blobs are equal. */
static cblob_status compare_blob(diff *d, const tool_blob *ta, const tool_blob *tb, int64_t index, json_t **out)
{
    *out = NULL;
    char where[200], name[160];
    const char *raw = NULL;
    if (ta->handle == NULL && cblob_model_layer_name(ta->model, ta->layer, &raw) == CBLOB_OK && raw != NULL) {
        tool_escape_into(raw, 64, name, sizeof name);
        snprintf(where, sizeof where, "layer %" PRId64 " (%s), blob %" PRId64, ta->layer, name, index);
    } else {
        snprintf(where, sizeof where, "blob %" PRId64, index);
    }
    tool_blob_facts fa, fb;
    TOOL_TRY(tool_blob_facts_of(ta, &fa));
    TOOL_TRY(tool_blob_facts_of(tb, &fb));
    const bool values_compared = fa.count == fb.count;
    value_stats st = {0};
    if (values_compared)
        TOOL_TRY(compare_values(d, ta, &fa, tb, &fb, where, &st));
    ++d->totals.blobs_compared;
    d->totals.values_compared += values_compared ? fa.count : 0;
    d->totals.values_differing += st.differing;
    if (same_shape(&fa, &fb) && fa.dtype == fb.dtype && st.differing == 0)
        return CBLOB_OK;
    ++d->totals.blobs_differing;
    ++d->totals.blobs_compared_differing;
    json_t *record = json_pack("{s:I, s:s, s:o?, s:o?, s:b}", "index", (json_int_t)index, "status", "changed", "a",
                               shape_json(&fa), "b", shape_json(&fb), "values_compared", values_compared);
    if (record != NULL && values_compared)
        json_object_update_new(record, json_pack("{s:I, s:I, s:o?, s:o?}", "differing", (json_int_t)st.differing,
                                                 "nan_mismatches", (json_int_t)st.nan_mismatches, "max_abs_diff",
                                                 number(st.max_abs), "max_rel_diff", number(st.max_rel)));
    if (record == NULL)
        return tool_own_failure(COMMAND, "no memory for a blob's report");
    *out = record;
    return CBLOB_OK;
}

/* A blob only one side has. */
static cblob_status lone_blob(const tool_blob *blob, int64_t index, bool in_a, json_t **out)
{
    tool_blob_facts facts;
    TOOL_TRY(tool_blob_facts_of(blob, &facts));
    *out = json_pack("{s:I, s:s, s:o?}", "index", (json_int_t)index, "status", in_a ? "removed" : "added",
                     in_a ? "a" : "b", shape_json(&facts));
    return *out != NULL ? CBLOB_OK : tool_own_failure(COMMAND, "no memory for a blob's report");
}

/* ---- structure ----------------------------------------------------------------------------- */

static char *child_path(const char *path, const char *key, int64_t index)
{
    const size_t size = strlen(path) + (key != NULL ? strlen(key) : 0) + 26;
    char *child = malloc(size);
    if (child == NULL)
        return NULL;
    if (key != NULL)
        snprintf(child, size, "%s%s%s", path, path[0] != '\0' ? "." : "", key);
    else
        snprintf(child, size, "%s[%" PRId64 "]", path, index);
    return child;
}

static bool add_change(json_t *changes, const char *path, json_t *a, json_t *b)
{
    json_t *change = json_pack("{s:s}", "field", path);
    if (change == NULL)
        return false;
    if (a != NULL)
        json_object_set(change, "a", a);
    if (b != NULL)
        json_object_set(change, "b", b);
    return json_array_append_new(changes, change) == 0;
}

/* Every field that differs, by its path ("params.convolution_param.num_output", "bottoms[1]"): objects
 * key by key, arrays of one length item by item, anything else as a whole. False: no memory. */
static bool json_changes(const char *path, json_t *a, json_t *b, json_t *changes)
{
    if (json_is_object(a) && json_is_object(b)) {
        const char *key;
        json_t *value;
        json_object_foreach(a, key, value) {
            json_t *other = json_object_get(b, key);
            char *child = child_path(path, key, 0);
            const bool done = child != NULL && (other == NULL ? add_change(changes, child, value, NULL)
                                                              : json_changes(child, value, other, changes));
            free(child);
            if (!done)
                return false;
        }
        json_object_foreach(b, key, value) {
            if (json_object_get(a, key) != NULL)
                continue;
            char *child = child_path(path, key, 0);
            const bool done = child != NULL && add_change(changes, child, NULL, value);
            free(child);
            if (!done)
                return false;
        }
        return true;
    }
    if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); ++i) {
            char *child = child_path(path, NULL, (int64_t)i);
            const bool done = child != NULL && json_changes(child, json_array_get(a, i), json_array_get(b, i), changes);
            free(child);
            if (!done)
                return false;
        }
        return true;
    }
    return json_equal(a, b) ? true : add_change(changes, path, a, b);
}

/* A layer's structure as the library renders it (schema 2's layer), without its name and blobs. */
static cblob_status layer_structure(const cblob_model *model, int64_t layer, json_t **out)
{
    size_t length = 0;
    TOOL_TRY(cblob_model_layer_json(model, layer, 0, NULL, 0, &length));
    char *text = malloc(length + 1);
    if (text == NULL)
        return tool_own_failure(COMMAND, "no memory for %zu bytes of a layer's JSON", length + 1);
    cblob_status status = cblob_model_layer_json(model, layer, 0, text, length + 1, &length);
    json_error_t error;
    json_t *object = status == CBLOB_OK ? json_loadb(text, length, 0, &error) : NULL;
    free(text);
    TOOL_TRY(status);
    if (!json_is_object(object)) {
        json_decref(object);
        return tool_own_failure(COMMAND, "layer %" PRId64 ": the library's JSON does not parse: %s", layer, error.text);
    }
    json_object_del(object, "name");
    json_object_del(object, "blobs");
    *out = object;
    return CBLOB_OK;
}

/* ---- layers -------------------------------------------------------------------------------- */

static json_t *layer_record(const side *s, int64_t layer, const char *status)
{
    const char *name = "", *type = "";
    cblob_model_layer_name(s->file.model, layer, &name);
    cblob_model_layer_type(s->file.model, layer, &type);
    return json_pack("{s:o?, s:s, s:o?}", "name", json_text_or_null(name), "status", status, "type", json_text_or_null(type));
}

/* A matched pair: its record, or NULL in *out when equal. */
static cblob_status compare_layers(diff *d, int64_t la, int64_t lb, json_t **out)
{
    *out = NULL;
    json_t *changes = json_array(), *blobs = json_array();
    cblob_status status = changes != NULL && blobs != NULL ? CBLOB_OK
                                                           : tool_own_failure(COMMAND, "no memory for a layer's report");
    if (status == CBLOB_OK && d->structure) {
        json_t *sa = NULL, *sb = NULL;
        status = layer_structure(d->a.file.model, la, &sa);
        if (status == CBLOB_OK)
            status = layer_structure(d->b.file.model, lb, &sb);
        if (status == CBLOB_OK && !json_changes("", sa, sb, changes))
            status = tool_own_failure(COMMAND, "no memory for a layer's report");
        json_decref(sa);
        json_decref(sb);
    }
    int64_t na = 0, nb = 0;
    if (status == CBLOB_OK && d->values) {
        cblob_model_layer_num_blobs(d->a.file.model, la, &na);
        cblob_model_layer_num_blobs(d->b.file.model, lb, &nb);
    }
    for (int64_t k = 0; status == CBLOB_OK && k < (na > nb ? na : nb); ++k) {
        const tool_blob ta = tool_model_blob(d->a.file.model, la, k), tb = tool_model_blob(d->b.file.model, lb, k);
        json_t *record = NULL;
        if (k < na && k < nb) {
            status = compare_blob(d, &ta, &tb, k, &record);
        } else {
            ++d->totals.blobs_differing;
            status = lone_blob(k < na ? &ta : &tb, k, k < na, &record);
        }
        if (record != NULL && json_array_append_new(blobs, record) != 0)
            status = tool_own_failure(COMMAND, "no memory for a layer's report");
        if (d->quiet && json_array_size(blobs) > 0)
            break; /* the status is known */
    }
    if (status == CBLOB_OK && (json_array_size(changes) > 0 || json_array_size(blobs) > 0)) {
        json_t *record = layer_record(&d->a, la, "changed");
        if (record == NULL ||
            json_object_update_new(record, json_pack("{s:I, s:I, s:O, s:O}", "a_index", (json_int_t)la, "b_index",
                                                     (json_int_t)lb, "changes", changes, "blobs", blobs)) != 0) {
            json_decref(record);
            status = tool_own_failure(COMMAND, "no memory for a layer's report");
        } else {
            *out = record;
        }
    }
    json_decref(changes);
    json_decref(blobs);
    return status;
}

/* A layer only one side has: its record, with its blobs. */
static cblob_status lone_layer(diff *d, const side *s, int64_t layer, bool in_a, json_t **out)
{
    json_t *record = layer_record(s, layer, in_a ? "removed" : "added");
    json_t *blobs = json_array();
    int64_t count = 0;
    cblob_status status = record != NULL && blobs != NULL ? CBLOB_OK
                                                          : tool_own_failure(COMMAND, "no memory for a layer's report");
    if (status == CBLOB_OK && d->values)
        status = cblob_model_layer_num_blobs(s->file.model, layer, &count);
    for (int64_t k = 0; status == CBLOB_OK && k < count; ++k) {
        const tool_blob blob = tool_model_blob(s->file.model, layer, k);
        json_t *entry = NULL;
        status = lone_blob(&blob, k, in_a, &entry);
        if (status == CBLOB_OK && json_array_append_new(blobs, entry) != 0)
            status = tool_own_failure(COMMAND, "no memory for a layer's report");
    }
    if (status == CBLOB_OK &&
        json_object_update_new(record, json_pack("{s:o, s:o, s:[], s:O}", "a_index", in_a ? json_integer(layer) : json_null(),
                                                 "b_index", in_a ? json_null() : json_integer(layer), "changes",
                                                 "blobs", blobs)) != 0)
        status = tool_own_failure(COMMAND, "no memory for a layer's report");
    json_decref(blobs);
    if (status != CBLOB_OK) {
        json_decref(record);
        return status;
    }
    d->totals.blobs_differing += count;
    *out = record;
    return CBLOB_OK;
}

/* ---- output -------------------------------------------------------------------------------- */

typedef struct report {
    diff *d;
    bool json;
    json_out out;
    bool opened_list; /* the JSON's "layers" or "blobs" list is open */
} report;

#define INCOMPLETE_LINE "!! cblob diff: the output above is incomplete: it stopped part-way"

static int write_stdout(const char *text, size_t size, void *context)
{
    tool_progress_clear();
    const bool written = fwrite(text, 1, size, context) == size && fflush(context) == 0;
    tool_stdout_written(size > 0 && text[size - 1] == '\n');
    return written ? 0 : -1;
}

/* A JSON value on one line, escaped for a terminal. */
static void print_value(json_t *value)
{
    if (value == NULL) {
        fputs("(absent)", stdout);
        return;
    }
    char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
    tool_print_escaped(stdout, text != NULL ? text : "?", 0);
    free(text);
}

static void print_facts(json_t *facts)
{
    json_t *shape = json_object_get(facts, "shape");
    if (json_array_size(shape) == 0)
        fputs("()", stdout);
    for (size_t i = 0; i < json_array_size(shape); ++i)
        printf("%s%" JSON_INTEGER_FORMAT, i > 0 ? "x" : "", json_integer_value(json_array_get(shape, i)));
    printf(" %s", json_string_value(json_object_get(facts, "dtype")));
}

static void print_stat(const char *what, json_t *value)
{
    if (json_is_string(value))
        printf(", %s %s", what, json_string_value(value));
    else
        printf(", %s %.9g", what, json_real_value(value));
}

/* "<indent><field>: <a> -> <b>", a change of one field. */
static void print_change(const char *indent, json_t *change)
{
    printf("%s", indent);
    tool_print_escaped(stdout, json_string_value(json_object_get(change, "field")), 0);
    printf(": ");
    print_value(json_object_get(change, "a"));
    printf(" -> ");
    print_value(json_object_get(change, "b"));
    putchar('\n');
}

static void print_blob(json_t *blob, const char *indent)
{
    const char *status = json_string_value(json_object_get(blob, "status"));
    printf("%sblob %" JSON_INTEGER_FORMAT ": ", indent, json_integer_value(json_object_get(blob, "index")));
    json_t *a = json_object_get(blob, "a"), *b = json_object_get(blob, "b");
    if (strcmp(status, "changed") != 0) {
        printf("%s (", status);
        print_facts(a != NULL ? a : b);
        printf(")\n");
        return;
    }
    if (!json_equal(json_object_get(a, "shape"), json_object_get(b, "shape")) ||
        !json_equal(json_object_get(a, "dtype"), json_object_get(b, "dtype"))) {
        print_facts(a);
        printf(" -> ");
        print_facts(b);
        printf("; ");
    }
    if (!json_is_true(json_object_get(blob, "values_compared"))) {
        printf("values not compared (%" JSON_INTEGER_FORMAT " and %" JSON_INTEGER_FORMAT " values)\n",
               json_integer_value(json_object_get(a, "count")), json_integer_value(json_object_get(b, "count")));
        return;
    }
    printf("%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " values differ",
           json_integer_value(json_object_get(blob, "differing")), json_integer_value(json_object_get(a, "count")));
    const json_int_t nans = json_integer_value(json_object_get(blob, "nan_mismatches"));
    if (nans > 0)
        printf(" (%" JSON_INTEGER_FORMAT " NaN against a number)", nans);
    print_stat("max abs diff", json_object_get(blob, "max_abs_diff"));
    print_stat("max rel diff", json_object_get(blob, "max_rel_diff"));
    putchar('\n');
}

static void print_layer(json_t *layer)
{
    const char *status = json_string_value(json_object_get(layer, "status"));
    printf("%-8s ", status);
    tool_print_escaped(stdout, json_string_value(json_object_get(layer, "name")), 0);
    printf(" (");
    tool_print_escaped(stdout, json_string_value(json_object_get(layer, "type")), 0);
    if (strcmp(status, "changed") == 0)
        printf(", layer %" JSON_INTEGER_FORMAT " of A, %" JSON_INTEGER_FORMAT " of B)\n",
               json_integer_value(json_object_get(layer, "a_index")), json_integer_value(json_object_get(layer, "b_index")));
    else
        printf(", layer %" JSON_INTEGER_FORMAT " of %s)\n",
               json_integer_value(json_object_get(layer, strcmp(status, "removed") == 0 ? "a_index" : "b_index")),
               strcmp(status, "removed") == 0 ? "A" : "B");
    json_t *changes = json_object_get(layer, "changes");
    for (size_t i = 0; i < json_array_size(changes); ++i)
        print_change("         ", json_array_get(changes, i));
    json_t *blobs = json_object_get(layer, "blobs");
    for (size_t i = 0; i < json_array_size(blobs); ++i)
        print_blob(json_array_get(blobs, i), "         ");
}

typedef enum record_kind { RECORD_NET, RECORD_LAYER, RECORD_BLOB } record_kind;

/* One difference (a net-level field, a layer, a blob file's blob): written at once. */
static void report_record(report *r, json_t *record, record_kind kind)
{
    r->d->different = true;
    if (r->d->quiet) {
        json_decref(record);
        return;
    }
    if (r->json) {
        json_out_value(&r->out, record);
        return;
    }
    tool_progress_clear();
    if (kind == RECORD_NET)
        print_change("net      ", record);
    else if (kind == RECORD_LAYER)
        print_layer(record);
    else
        print_blob(record, "");
    tool_stdout_written(true);
    json_decref(record);
}

static json_t *side_json(const side *s)
{
    const char *name = NULL;
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    if (is_model(s)) {
        cblob_model_name(s->file.model, &name);
        cblob_model_format(s->file.model, &format);
    }
    return json_pack("{s:o?, s:s, s:o?, s:o?, s:o?, s:I}", "file", json_text_or_null(s->file.name), "kind",
                     kind_name(s->file.kind), "format",
                     s->file.kind == CBLOB_FILE_NET ? json_string(format == CBLOB_NET_FORMAT_V1 ? "V1" : "V2") : json_null(),
                     "name", json_text_or_null(name), "layers", is_model(s) ? json_integer(s->num_layers) : json_null(),
                     "blobs", (json_int_t)s->num_blobs);
}

static void print_side(const char *marker, const side *s)
{
    printf("%s ", marker);
    tool_print_escaped(stdout, s->file.name, 0);
    printf("  (%s", kind_text(s->file.kind));
    const char *name = NULL;
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    if (is_model(s)) {
        cblob_model_name(s->file.model, &name);
        cblob_model_format(s->file.model, &format);
    }
    if (s->file.kind == CBLOB_FILE_NET)
        printf(" %s", format == CBLOB_NET_FORMAT_V1 ? "V1" : "V2");
    if (name != NULL) {
        printf(" \"");
        tool_print_escaped(stdout, name, 0);
        printf("\"");
    }
    if (is_model(s))
        printf(", %" PRId64 " layers", s->num_layers);
    printf(", %" PRId64 " blobs)\n", s->num_blobs);
}

/* Why a part was not compared, or NULL. */
static const char *not_compared_reason(const diff *d, char *text, size_t size)
{
    if (d->same_file) {
        snprintf(text, size, "A and B are the same file: equal without reading it");
        return text;
    }
    const side *dry = !d->a.holds_weights ? &d->a : !d->b.holds_weights ? &d->b : NULL;
    const side *bare = d->a.weights_only ? &d->a : d->b.weights_only ? &d->b : NULL;
    if (!d->values && dry != NULL) {
        snprintf(text, size, "%s holds no weights%s: blobs were not compared", dry->label,
                 dry->file.kind == CBLOB_FILE_NET ? " (a net definition)" : "");
        return text;
    }
    if (!d->structure && bare != NULL && is_model(&d->a)) {
        snprintf(text, size, "%s holds weights only (%s): layers' structure was not compared, and only layers "
                 "with blobs", bare->label, kind_name(bare->file.kind));
        return text;
    }
    return NULL;
}

static void report_start(report *r)
{
    diff *d = r->d;
    if (d->quiet)
        return;
    if (!r->json) {
        tool_progress_clear();
        print_side("---", &d->a);
        print_side("+++", &d->b);
        char reason[256];
        if (not_compared_reason(d, reason, sizeof reason) != NULL)
            printf("note: %s\n", reason);
        tool_stdout_written(true);
        return;
    }
    json_out_start(&r->out, write_stdout, stdout);
    json_out_open(&r->out, '{');
    json_out_key(&r->out, "schema");
    json_out_value(&r->out, json_integer(1));
    json_out_key(&r->out, "a");
    json_out_value(&r->out, side_json(&d->a));
    json_out_key(&r->out, "b");
    json_out_value(&r->out, side_json(&d->b));
    json_out_key(&r->out, "atol");
    json_out_value(&r->out, json_real(d->atol));
    json_out_key(&r->out, "rtol");
    json_out_value(&r->out, json_real(d->rtol));
    char reason[256];
    const char *why = not_compared_reason(d, reason, sizeof reason);
    json_out_key(&r->out, "compared");
    json_out_value(&r->out, json_pack("{s:b, s:b, s:o?}", "structure", d->structure, "values", d->values, "reason",
                                      why != NULL ? json_string(why) : json_null()));
}

/* The "net", "layers" and "blobs" lists: one opens as the one before closes. */
static void report_list(report *r, const char *key)
{
    if (r->d->quiet || !r->json)
        return;
    if (r->opened_list)
        json_out_close(&r->out, ']');
    json_out_key(&r->out, key);
    json_out_open(&r->out, '[');
    r->opened_list = true;
}

static json_t *summary_json(const diff *d)
{
    const totals *t = &d->totals;
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "net_fields_changed", (json_int_t)t->net_fields,
                     "layers_changed", (json_int_t)t->layers_changed, "layers_removed", (json_int_t)t->layers_removed,
                     "layers_added", (json_int_t)t->layers_added, "blobs_compared", (json_int_t)t->blobs_compared,
                     "blobs_differing", (json_int_t)t->blobs_differing, "blobs_compared_differing",
                     (json_int_t)t->blobs_compared_differing, "values_compared",
                     (json_int_t)t->values_compared, "values_differing", (json_int_t)t->values_differing);
}

static void report_end(report *r)
{
    const diff *d = r->d;
    const totals *t = &d->totals;
    if (d->quiet)
        return;
    if (r->json) {
        json_out_key(&r->out, "summary");
        json_out_value(&r->out, summary_json(d));
        json_out_key(&r->out, "equal");
        json_out_value(&r->out, json_boolean(!d->different));
        json_out_close(&r->out, '}');
        json_out_finish(&r->out);
        tool_progress_clear();
        if (!r->out.failed) {
            fputc('\n', stdout);
            tool_stdout_written(true);
        }
        return;
    }
    tool_progress_clear();
    const int64_t lone_blobs = t->blobs_differing - t->blobs_compared_differing;
    if (d->same_file) {
        printf("equal: the same file\n");
    } else if (!d->different) {
        printf("equal: %" PRId64 " blobs, %" PRId64 " values compared\n", t->blobs_compared, t->values_compared);
    } else {
        printf("differ:");
        if (t->net_fields > 0)
            printf(" %" PRId64 " net field%s;", t->net_fields, t->net_fields == 1 ? "" : "s");
        if (is_model(&d->a))
            printf(" %" PRId64 " layer%s changed, %" PRId64 " removed, %" PRId64 " added;", t->layers_changed,
                   t->layers_changed == 1 ? "" : "s", t->layers_removed, t->layers_added);
        printf(" %" PRId64 " of %" PRId64 " blobs compared differ (%" PRId64 " of %" PRId64 " values)",
               t->blobs_compared_differing, t->blobs_compared, t->values_differing, t->values_compared);
        if (lone_blobs > 0)
            printf(", %" PRId64 " blob%s in one file only", lone_blobs, lone_blobs == 1 ? "" : "s");
        putchar('\n');
    }
    tool_stdout_written(true);
}

/* ---- the walk ------------------------------------------------------------------------------ */

static const char *format_name(cblob_net_format format)
{
    return format == CBLOB_NET_FORMAT_V1 ? "V1" : "V2";
}

/* The net's name and format (V1 or V2), when both are nets. */
static cblob_status compare_net_fields(report *r)
{
    diff *d = r->d;
    if (!d->structure)
        return CBLOB_OK;
    const char *na = NULL, *nb = NULL;
    cblob_net_format fa = CBLOB_NET_FORMAT_V2, fb = CBLOB_NET_FORMAT_V2;
    TOOL_TRY(cblob_model_name(d->a.file.model, &na));
    TOOL_TRY(cblob_model_name(d->b.file.model, &nb));
    TOOL_TRY(cblob_model_format(d->a.file.model, &fa));
    TOOL_TRY(cblob_model_format(d->b.file.model, &fb));
    json_t *changes[2] = {NULL, NULL};
    if ((na == NULL) != (nb == NULL) || (na != NULL && strcmp(na, nb) != 0))
        changes[0] = json_pack("{s:s, s:o?, s:o?}", "field", "name", "a", json_text_or_null(na), "b", json_text_or_null(nb));
    if (fa != fb)
        changes[1] = json_pack("{s:s, s:s, s:s}", "field", "format", "a", format_name(fa), "b", format_name(fb));
    const bool made[2] = {changes[0] != NULL || !((na == NULL) != (nb == NULL) || (na != NULL && strcmp(na, nb) != 0)),
                          changes[1] != NULL || fa == fb};
    if (!made[0] || !made[1]) {
        json_decref(changes[0]);
        json_decref(changes[1]);
        return tool_own_failure(COMMAND, "no memory for the report");
    }
    for (int i = 0; i < 2; ++i)
        if (changes[i] != NULL) {
            ++d->totals.net_fields;
            report_record(r, changes[i], RECORD_NET);
        }
    return CBLOB_OK;
}

static bool done_early(const diff *d)
{
    return d->quiet && d->different;
}

static cblob_status walk_models(report *r)
{
    diff *d = r->d;
    report_list(r, "net");
    TOOL_TRY(compare_net_fields(r));
    report_list(r, "layers");
    for (int64_t i = 0; i < d->a.num_layers && !done_early(d); ++i) {
        if (d->a.keys[i] == NULL)
            continue;
        if (tool_interrupted() != 0)
            return TOOL_STOPPED;
        json_t *record = NULL;
        const int64_t j = d->a.match[i];
        if (j < 0) {
            TOOL_TRY(lone_layer(d, &d->a, i, true, &record));
            ++d->totals.layers_removed;
        } else {
            TOOL_TRY(compare_layers(d, i, j, &record));
            d->totals.layers_changed += record != NULL;
        }
        if (record != NULL)
            report_record(r, record, RECORD_LAYER);
        TOOL_TRY(side_relieve(d->context, &d->a, d->progress_total, d->a.read_all + d->b.read_all));
        TOOL_TRY(side_relieve(d->context, &d->b, d->progress_total, d->a.read_all + d->b.read_all));
    }
    for (int64_t j = 0; j < d->b.num_layers && !done_early(d); ++j) {
        if (d->b.keys[j] == NULL || d->b.match[j] >= 0)
            continue;
        json_t *record = NULL;
        TOOL_TRY(lone_layer(d, &d->b, j, false, &record));
        ++d->totals.layers_added;
        report_record(r, record, RECORD_LAYER);
    }
    report_list(r, "blobs"); /* a net's blobs are its layers' */
    return CBLOB_OK;
}

static cblob_status walk_blob_files(report *r)
{
    diff *d = r->d;
    report_list(r, "net");
    report_list(r, "layers");
    report_list(r, "blobs");
    const int64_t count = d->a.num_blobs > d->b.num_blobs ? d->a.num_blobs : d->b.num_blobs;
    for (int64_t k = 0; k < count && !done_early(d); ++k) {
        const tool_blob ta = tool_handle_blob(k < d->a.num_blobs ? d->a.file.blobs[k] : NULL);
        const tool_blob tb = tool_handle_blob(k < d->b.num_blobs ? d->b.file.blobs[k] : NULL);
        json_t *record = NULL;
        if (k < d->a.num_blobs && k < d->b.num_blobs) {
            TOOL_TRY(compare_blob(d, &ta, &tb, k, &record));
        } else {
            ++d->totals.blobs_differing;
            TOOL_TRY(lone_blob(k < d->a.num_blobs ? &ta : &tb, k, k < d->a.num_blobs, &record));
        }
        if (record != NULL)
            report_record(r, record, RECORD_BLOB);
    }
    return CBLOB_OK;
}

static cblob_status run_diff(diff *d, bool json)
{
    report r = {.d = d, .json = json};
    /* What is compared: a weights file has no structure; a side without blobs has no values. */
    if (is_model(&d->a)) {
        d->structure = !d->a.weights_only && !d->b.weights_only;
        d->values = d->a.holds_weights && d->b.holds_weights;
        if (!d->structure && !d->values)
            return tool_own_failure(COMMAND, "nothing to compare: %s holds weights only, and %s none",
                                    (d->a.weights_only ? &d->a : &d->b)->file.name,
                                    (d->a.weights_only ? &d->b : &d->a)->file.name);
        const bool exported = !d->structure;
        TOOL_TRY(make_keys(&d->a, exported && !d->a.weights_only));
        TOOL_TRY(make_keys(&d->b, exported && !d->b.weights_only));
        TOOL_TRY(match_layers(&d->a, &d->b));
    } else {
        d->structure = false;
        d->values = true;
    }
    int64_t total = 0;
    for (int s = 0; s < 2; ++s) {
        const side *one = s == 0 ? &d->a : &d->b;
        for (int64_t i = 0; i < one->num_layers && d->values; ++i) {
            int64_t blobs = 0;
            cblob_model_layer_num_blobs(one->file.model, i, &blobs);
            for (int64_t k = 0; k < blobs; ++k) {
                tool_blob_facts facts;
                const tool_blob blob = tool_model_blob(one->file.model, i, k);
                if (tool_blob_facts_of(&blob, &facts) == CBLOB_OK)
                    total += facts.count * (int64_t)tool_dtype_size(facts.dtype);
            }
        }
    }
    tool_progress_phase(TOOL_PHASE_WORK, "comparing", d->b.file.name);
    d->progress_total = total > 0 ? total : -1;
    tool_progress_total(d->progress_total);
    report_start(&r);
    const cblob_status status = is_model(&d->a) ? walk_models(&r) : walk_blob_files(&r);
    if (status == CBLOB_OK && !(json && r.out.failed)) {
        if (json && !d->quiet)
            json_out_close(&r.out, ']');
        report_end(&r);
    }
    tool_progress_clear();
    if (!d->quiet && (status != CBLOB_OK || (json && r.out.failed))) {
        if (json)
            json_out_finish(&r.out);
        printf("%s%s\n", json ? "\n" : "", INCOMPLETE_LINE);
        tool_stdout_written(true);
    }
    if (status == CBLOB_OK && json && r.out.failed && !ferror(stdout))
        return tool_own_failure(COMMAND, "no memory to write the JSON");
    return status;
}

/* ---- the command --------------------------------------------------------------------------- */

typedef struct diff_args {
    const char *paths[2];
    int num_paths;
    bool json, quiet, npy_names;
    double atol, rtol;
    tool_progress_mode progress;
} diff_args;

static int parse_tolerance(const char *option, const char *value, double *out)
{
    char *end = NULL;
    errno = 0;
    const double parsed = strtod(value, &end);
    if (value[0] == '\0' || *end != '\0' || errno != 0 || !isfinite(parsed) || parsed < 0)
        return tool_fail(DIFF_TROUBLE, COMMAND, "%s %s: not a number >= 0 (such as 1e-6)", option, value);
    *out = parsed;
    return TOOL_OK;
}

static int parse_args(int argc, char **argv, diff_args *args)
{
    bool options_done = false;
    for (int i = 0; i < argc; ++i) {
        const char *value = NULL;
        if (options_done || argv[i][0] != '-' || argv[i][1] == '\0') {
            if (args->num_paths == 2)
                return tool_fail(DIFF_TROUBLE, COMMAND, "%s: two files only (%s and %s were given first)", argv[i],
                                 args->paths[0], args->paths[1]);
            args->paths[args->num_paths++] = argv[i];
            continue;
        }
        if (strcmp(argv[i], "--") == 0) {
            options_done = true;
            continue;
        }
        int parsed = TOOL_OK;
        switch (tool_parse_option(COMMAND, tool_diff_options, tool_diff_num_options, argc, argv, &i, &value)) {
        case TOOL_DIFF_JSON: args->json = true; break;
        case TOOL_DIFF_ATOL: parsed = parse_tolerance("--atol", value, &args->atol); break;
        case TOOL_DIFF_RTOL: parsed = parse_tolerance("--rtol", value, &args->rtol); break;
        case TOOL_DIFF_NPY_NAMES: args->npy_names = true; break;
        case TOOL_DIFF_QUIET: args->quiet = true; break;
        case TOOL_DIFF_PROGRESS: args->progress = TOOL_PROGRESS_ALWAYS; break;
        case TOOL_DIFF_HELP: break; /* cblob.c prints the help before the command runs */
        default: return DIFF_TROUBLE;
        }
        if (parsed != TOOL_OK)
            return parsed;
    }
    if (args->num_paths < 2)
        return tool_fail(DIFF_TROUBLE, COMMAND, "%s (cblob diff [--json] [--atol ABS] [--rtol REL] A B)",
                         args->num_paths == 0 ? "A and B are missing" : "B is missing: diff compares two files");
    if (tool_is_stdio(args->paths[0]) && tool_is_stdio(args->paths[1]))
        return tool_fail(DIFF_TROUBLE, COMMAND, "- - : standard input can be read once (give one of A and B as -)");
    if (args->quiet && args->json)
        return tool_fail(DIFF_TROUBLE, COMMAND, "--quiet and --json: give one or the other (--quiet prints nothing)");
    return tool_progress_option(COMMAND, args->quiet, &args->progress) == TOOL_OK ? TOOL_OK : DIFF_TROUBLE;
}

int command_diff(int argc, char **argv)
{
    diff_args args = {.progress = TOOL_PROGRESS_AUTO};
    const int parsed = parse_args(argc, argv, &args);
    if (parsed != TOOL_OK)
        return parsed;
    tool_progress_setup(COMMAND, args.progress);
    diff d = {.atol = args.atol, .rtol = args.rtol, .quiet = args.quiet,
              .a = {.path = args.paths[0], .label = "A"}, .b = {.path = args.paths[1], .label = "B"}};
    d.context = tool_context(COMMAND);
    if (d.context == NULL)
        return DIFF_TROUBLE;
    const int32_t flags = args.npy_names ? CBLOB_OPEN_NPY_BY_NAME : 0;
    int result = side_open(d.context, &d.a, flags);
    /* One file named twice is equal to itself: its values are not read (as diff(1) does). */
    const bool same = result == TOOL_OK && tool_same_file(args.paths[0], args.paths[1]);
    if (result == TOOL_OK && !same)
        result = side_open(d.context, &d.b, flags);
    if (result == TOOL_OK && !same && is_model(&d.a) != is_model(&d.b))
        result = tool_fail(DIFF_TROUBLE, COMMAND, "%s is %s and %s %s: diff compares two nets (or weights) or two "
                           "blob files", d.a.file.name, is_model(&d.a) ? "a net" : "a blob file", d.b.file.name,
                           is_model(&d.b) ? "a net" : "a blob file");
    if (result == TOOL_OK && same) {
        /* The report of a comparison that compared nothing, B described as A (its file). */
        d.same_file = true;
        d.b = d.a;
        d.b.label = "B";
        d.b.file.name = tool_input_name(args.paths[1]);
        report r = {.d = &d, .json = args.json};
        report_start(&r);
        report_list(&r, "net");
        report_list(&r, "layers");
        report_list(&r, "blobs");
        if (args.json && !args.quiet)
            json_out_close(&r.out, ']');
        report_end(&r);
        d.b = (side){0}; /* A's, closed once */
        result = fflush(stdout) == 0 && !ferror(stdout) ? DIFF_EQUAL
                 : tool_fail(DIFF_TROUBLE, COMMAND, "standard output: cannot write: %s", strerror(errno));
    } else if (result == TOOL_OK) {
        cblob_status status = run_diff(&d, args.json);
        if (status == CBLOB_OK && (fflush(stdout) != 0 || ferror(stdout)) && tool_interrupted() == 0)
            status = tool_own_failure(COMMAND, "standard output: cannot write: %s", strerror(errno));
        result = status == CBLOB_OK ? (d.different ? DIFF_DIFFERENT : DIFF_EQUAL)
                                    : tool_report(status, DIFF_TROUBLE, COMMAND);
    }
    side_close(&d.a);
    side_close(&d.b);
    cblob_context_destroy(d.context);
    if (result == TOOL_INTERRUPTED)
        return tool_interrupt_exit(COMMAND, "stopped before %s and %s were compared (diff writes no file)",
                                   tool_input_name(args.paths[0]), tool_input_name(args.paths[1]));
    return result;
}
