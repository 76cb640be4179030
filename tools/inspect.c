/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob inspect [--json] [--params] [--shapes] FILE: what a Caffe file holds, as a table or as one
 * JSON object (docs/inspect-schema-2.json). Both are written layer by layer as they are made, and
 * blob values are read in pieces without making blob handles, so memory stays near the model's own
 * size whatever the shape of the file. With --shapes no value is read: a net from a path is opened
 * lazily (its structure only), so a large model is listed reading a few KiB per layer. */
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

/* ---- layer facts the table and JSON share ---------------------------------------------------- */

/* A layer's text from a two-call library function, in a buffer that grows as needed. */
typedef cblob_status layer_text_fn(const cblob_model *model, int64_t layer, int32_t flags, char *buffer,
                                   size_t buffer_size, size_t *out_length);

typedef struct text_buffer {
    char *text;
    size_t size;
} text_buffer;

static cblob_status layer_text(layer_text_fn *fn, const cblob_model *model, int64_t layer, text_buffer *buffer)
{
    size_t length = 0;
    cblob_status status = fn(model, layer, 0, NULL, 0, &length);
    if (status == CBLOB_OK && length + 1 > buffer->size) {
        char *grown = realloc(buffer->text, length + 1);
        if (grown == NULL)
            return tool_own_failure("inspect", "no memory for %zu bytes of a layer's JSON", length + 1);
        buffer->text = grown;
        buffer->size = length + 1;
    }
    if (status == CBLOB_OK)
        status = fn(model, layer, 0, buffer->text, buffer->size, &length);
    return status;
}

static cblob_status layer_names(const cblob_model *model, int64_t layer, const char **name, const char **type,
                                int64_t *blobs)
{
    if (cblob_model_layer_name(model, layer, name) != CBLOB_OK || cblob_model_layer_type(model, layer, type) != CBLOB_OK ||
        cblob_model_layer_num_blobs(model, layer, blobs) != CBLOB_OK)
        return CBLOB_ERR_INTERNAL; /* the library said why */
    return CBLOB_OK;
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static int write_stdout(const char *text, size_t size, void *context)
{
    return fwrite(text, 1, size, context) == size ? 0 : -1;
}

/* JSON has no NaN or infinity: those (and the min and max of an empty blob) are null. */
static json_t *number(double value)
{
    return isfinite(value) ? json_real(value) : json_null();
}

static cblob_status add_stats(json_t *object, const tool_blob *blob, const tool_blob_facts *facts)
{
    tool_stats stats;
    TOOL_TRY(tool_stats_compute(blob, facts, &stats));
    const char *const names[5] = {"sum", "asum", "sumsq", "min", "max"};
    const double values[5] = {stats.sum, stats.asum, stats.sumsq, stats.min, stats.max};
    for (int i = 0; i < 5; ++i)
        if (json_object_set_new(object, names[i], number(values[i])) != 0)
            return tool_own_failure("inspect", "no memory for a blob's statistics");
    return CBLOB_OK;
}

/* The library's layer JSON (schema 2's $defs/layer) with each blob's statistics added. */
static cblob_status json_layer(json_out *out, const cblob_model *model, int64_t layer, bool stats, text_buffer *buffer)
{
    TOOL_TRY(layer_text(cblob_model_layer_json, model, layer, buffer));
    json_error_t error;
    json_t *object = json_loads(buffer->text, 0, &error);
    json_t *blobs = json_object_get(object, "blobs");
    cblob_status status = json_is_array(blobs) ? CBLOB_OK
                                               : tool_own_failure("inspect", "layer %" PRId64 ": the library's JSON does not parse: %s", layer, error.text);
    for (size_t j = 0; status == CBLOB_OK && stats && j < json_array_size(blobs); ++j) {
        const tool_blob blob = tool_model_blob(model, layer, (int64_t)j);
        tool_blob_facts facts;
        status = tool_blob_facts_of(&blob, &facts);
        if (status == CBLOB_OK)
            status = add_stats(json_array_get(blobs, j), &blob, &facts);
    }
    if (status == CBLOB_OK)
        json_out_value(out, json_incref(object));
    json_decref(object);
    return status;
}

/* A blob file's blob: what the library's layer JSON says of a blob, and its statistics. */
static cblob_status json_blob(json_out *out, cblob_blob *handle, bool stats)
{
    const tool_blob blob = tool_handle_blob(handle);
    tool_blob_facts facts;
    TOOL_TRY(tool_blob_facts_of(&blob, &facts));
    json_t *shape = json_array();
    for (int32_t i = 0; i < facts.num_axes; ++i)
        json_array_append_new(shape, json_integer(facts.dims[i]));
    json_t *object = json_pack("{s:o, s:I, s:s, s:b}", "shape", shape, "count", (json_int_t)facts.count, "dtype",
                               tool_dtype_name(facts.dtype), "has_diff", facts.has_diff);
    cblob_status status = object == NULL ? tool_own_failure("inspect", "no memory for a blob's JSON")
                          : stats        ? add_stats(object, &blob, &facts)
                                         : CBLOB_OK;
    if (status == CBLOB_OK)
        json_out_value(out, json_incref(object));
    json_decref(object);
    return status;
}

/* Schema 2's kinds: a model read from any file is a net; a .npy file holds one blob. */
static const char *kind_name(cblob_file_kind kind)
{
    return kind == CBLOB_FILE_BLOB || kind == CBLOB_FILE_NPY ? "blob"
           : kind == CBLOB_FILE_BLOB_VECTOR             ? "blob_vector"
                                                         : "net";
}

static json_t *text_or_null(const char *text)
{
    if (text == NULL)
        return json_null();
    char *valid = tool_utf8(text);
    json_t *value = valid != NULL ? json_string(valid) : NULL;
    free(valid);
    return value;
}

static void json_header(json_out *out, const tool_caffe *file, int64_t *layers)
{
    const char *name = NULL;
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    *layers = 0;
    if (file->model != NULL) {
        cblob_model_name(file->model, &name);
        cblob_model_format(file->model, &format);
        cblob_model_num_layers(file->model, layers);
    }
    json_out_key(out, "schema");
    json_out_value(out, json_integer(2));
    json_out_key(out, "file");
    json_out_value(out, text_or_null(file->name));
    json_out_key(out, "kind");
    json_out_value(out, json_string(kind_name(file->kind)));
    json_out_key(out, "format");
    json_out_value(out, file->model == NULL ? json_null() : json_string(format == CBLOB_NET_FORMAT_V1 ? "V1" : "V2"));
    json_out_key(out, "name");
    json_out_value(out, text_or_null(name));
}

static cblob_status print_json(const tool_caffe *file, bool stats)
{
    json_out out;
    json_out_start(&out, write_stdout, stdout);
    json_out_open(&out, '{');
    int64_t layers;
    json_header(&out, file, &layers);
    json_out_key(&out, "layers");
    json_out_open(&out, '[');
    text_buffer buffer = {0};
    cblob_status status = CBLOB_OK;
    for (int64_t i = 0; status == CBLOB_OK && !out.failed && i < layers; ++i) {
        const char *name = "";
        cblob_model_layer_name(file->model, i, &name);
        tool_progress("inspect", i + 1, layers, name);
        status = json_layer(&out, file->model, i, stats, &buffer);
    }
    free(buffer.text);
    json_out_close(&out, ']');
    json_out_key(&out, "blobs");
    json_out_open(&out, '[');
    for (int64_t j = 0; status == CBLOB_OK && j < file->num_blobs; ++j)
        status = json_blob(&out, file->blobs[j], stats);
    json_out_close(&out, ']');
    json_out_close(&out, '}');
    json_out_finish(&out);
    fputc('\n', stdout);
    tool_progress_done();
    if (status == CBLOB_OK && out.failed && !ferror(stdout))
        status = tool_own_failure("inspect", "no memory to write the JSON");
    return status;
}

/* ---- table ---------------------------------------------------------------------------------- */

/* "bottom, bottom -> top, top", as the library gives the names. */
static char *io_text(const cblob_model *model, int64_t layer)
{
    int64_t bottoms = 0, tops = 0;
    cblob_model_layer_num_bottoms(model, layer, &bottoms);
    cblob_model_layer_num_tops(model, layer, &tops);
    size_t size = 8;
    const char *name;
    for (int64_t i = 0; i < bottoms + tops; ++i) {
        if ((i < bottoms ? cblob_model_layer_bottom(model, layer, i, &name)
                         : cblob_model_layer_top(model, layer, i - bottoms, &name)) == CBLOB_OK)
            size += strlen(name) + 4;
    }
    char *text = malloc(size);
    if (text == NULL)
        return NULL;
    size_t used = 0;
    text[0] = '\0';
    for (int64_t i = 0; i < bottoms + tops; ++i) {
        name = "";
        if (i < bottoms)
            cblob_model_layer_bottom(model, layer, i, &name);
        else
            cblob_model_layer_top(model, layer, i - bottoms, &name);
        const char *separator = i == bottoms ? (bottoms > 0 ? " -> " : "-> ") : i > 0 ? ", " : "";
        used += (size_t)snprintf(text + used, size - used, "%s%s", separator, name);
    }
    if (bottoms > 0 && tops == 0)
        snprintf(text + used, size - used, " ->");
    return text;
}

/* Wider cells overflow their column rather than widen it for every row. */
#define NAME_WIDTH_MAX 40
#define IO_WIDTH_MAX 48

static int capped_width(const char *text, int cap)
{
    const int width = tool_escaped_width(text);
    return width < cap ? width : cap;
}

/* An empty name shows as "" rather than as a blank cell. */
static const char *shown(const char *name)
{
    return name[0] != '\0' ? name : "\"\"";
}

typedef struct table {
    bool stats; /* the min, max and sum columns */
    int layer, type, io, shape, count;
    int64_t with_blobs, blobs, values;
} table;

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

static int digits(int64_t value)
{
    char text[24];
    return snprintf(text, sizeof text, "%" PRId64, value);
}

static cblob_status measure_blob(table *t, const tool_blob *blob)
{
    tool_blob_facts facts;
    TOOL_TRY(tool_blob_facts_of(blob, &facts));
    char shape[CBLOB_MAX_AXES * 21 + 4];
    tool_shape_text(&facts, shape, sizeof shape);
    t->shape = max_int(t->shape, (int)strlen(shape));
    t->count = max_int(t->count, digits(facts.count));
    t->values += facts.count;
    ++t->blobs;
    return CBLOB_OK;
}

/* The columns' widths and the totals, from every layer's names and blobs' shapes. */
static cblob_status measure(const tool_caffe *file, bool stats, table *t)
{
    *t = (table){.stats = stats, .layer = 5, .type = 4, .io = 15, .shape = 5, .count = 5};
    int64_t layers = 0;
    if (file->model != NULL)
        cblob_model_num_layers(file->model, &layers);
    for (int64_t i = 0; i < layers; ++i) {
        const char *name, *type;
        int64_t blobs;
        TOOL_TRY(layer_names(file->model, i, &name, &type, &blobs));
        char *io = io_text(file->model, i);
        if (io == NULL)
            return tool_own_failure("inspect", "no memory for a layer's bottoms and tops");
        t->layer = max_int(t->layer, capped_width(shown(name), NAME_WIDTH_MAX));
        t->type = max_int(t->type, capped_width(type, NAME_WIDTH_MAX));
        t->io = max_int(t->io, capped_width(io, IO_WIDTH_MAX));
        free(io);
        t->with_blobs += blobs > 0;
        for (int64_t j = 0; j < blobs; ++j) {
            const tool_blob blob = tool_model_blob(file->model, i, j);
            TOOL_TRY(measure_blob(t, &blob));
        }
    }
    for (int64_t j = 0; j < file->num_blobs; ++j) {
        const tool_blob blob = tool_handle_blob(file->blobs[j]);
        TOOL_TRY(measure_blob(t, &blob));
    }
    return CBLOB_OK;
}

static void print_stat(double value, int width)
{
    if (isnan(value))
        printf("  %*s", width, "-");
    else
        printf("  %*.*g", width, width > 12 ? 8 : 6, value);
}

static cblob_status print_blob_row(const table *t, const tool_blob *blob, int64_t index)
{
    tool_blob_facts facts;
    TOOL_TRY(tool_blob_facts_of(blob, &facts));
    char shape[CBLOB_MAX_AXES * 21 + 4];
    tool_shape_text(&facts, shape, sizeof shape);
    printf("  %4" PRId64 "  %-*s  %*" PRId64 "  %-7s  %-4s", index, t->shape, shape, t->count, facts.count,
           tool_dtype_name(facts.dtype), facts.has_diff ? "yes" : "no");
    if (!t->stats) {
        putchar('\n');
        return CBLOB_OK;
    }
    tool_stats stats;
    TOOL_TRY(tool_stats_compute(blob, &facts, &stats));
    print_stat(stats.min, 12);
    print_stat(stats.max, 12);
    print_stat(stats.sum, 14);
    putchar('\n');
    return CBLOB_OK;
}

/* A layer's parameters, on a line of their own under its rows (only when it has some). */
static cblob_status print_params(const table *t, const cblob_model *model, int64_t layer, text_buffer *buffer)
{
    TOOL_TRY(layer_text(cblob_model_layer_params_json, model, layer, buffer));
    if (strcmp(buffer->text, "{}") != 0) {
        printf("  %*s  params ", t->layer, "");
        tool_print_escaped(stdout, buffer->text, 0);
        putchar('\n');
    }
    return CBLOB_OK;
}

static cblob_status print_layer(const table *t, const cblob_model *model, int64_t layer, bool params,
                                text_buffer *buffer)
{
    const char *name, *type;
    int64_t blobs;
    TOOL_TRY(layer_names(model, layer, &name, &type, &blobs));
    char *io = io_text(model, layer);
    if (io == NULL)
        return tool_own_failure("inspect", "no memory for a layer's bottoms and tops");
    putchar(' ');
    putchar(' ');
    tool_print_escaped(stdout, shown(name), t->layer);
    fputs("  ", stdout);
    tool_print_escaped(stdout, type, t->type);
    fputs("  ", stdout);
    tool_print_escaped(stdout, io, t->io);
    free(io);
    if (blobs == 0)
        printf("  %4s\n", "-");
    cblob_status status = CBLOB_OK;
    for (int64_t j = 0; status == CBLOB_OK && j < blobs; ++j) {
        if (j > 0)
            printf("  %*s  %*s  %*s", t->layer, "", t->type, "", t->io, "");
        const tool_blob blob = tool_model_blob(model, layer, j);
        status = print_blob_row(t, &blob, j);
    }
    return status == CBLOB_OK && params ? print_params(t, model, layer, buffer) : status;
}

static void print_stat_titles(const table *t)
{
    if (t->stats)
        printf("  %12s  %12s  %14s", "min", "max", "sum");
    putchar('\n');
}

static void print_header(const tool_caffe *file, const table *t)
{
    printf("file    ");
    tool_print_escaped(stdout, file->name, 0);
    if (file->model == NULL) {
        printf("\nkind    %s\n", file->kind == CBLOB_FILE_BLOB  ? "blob (BlobProto)"
                                : file->kind == CBLOB_FILE_NPY ? "blob (NumPy .npy)"
                                                               : "blob vector (BlobProtoVector)");
        printf("blobs   %" PRId64 " (%" PRId64 " values)\n\n", t->blobs, t->values);
        printf("  %4s  %-*s  %*s  %-7s  %-4s", "blob", t->shape, "shape", t->count, "count", "dtype", "diff");
        print_stat_titles(t);
        return;
    }
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    const char *name = NULL;
    int64_t layers = 0;
    cblob_model_format(file->model, &format);
    cblob_model_name(file->model, &name);
    cblob_model_num_layers(file->model, &layers);
    if (file->kind == CBLOB_FILE_NET)
        printf("\nkind    net, format %s\nname    ", format == CBLOB_NET_FORMAT_V1 ? "V1 (V1LayerParameter, field layers = 2)"
                                                                                 : "V2 (LayerParameter, field layer = 100)");
    else
        printf("\nkind    %s: weights, a layer per key's layer\nname    ",
               file->kind == CBLOB_FILE_NPZ ? "NumPy .npz" : file->kind == CBLOB_FILE_SAFETENSORS ? "safetensors"
                                                                                                  : "folder of .npy files");
    tool_print_escaped(stdout, name != NULL ? name : "(none)", 0);
    printf("\nlayers  %" PRId64 " (%" PRId64 " with blobs: %" PRId64 " blobs, %" PRId64 " values)\n\n", layers,
           t->with_blobs, t->blobs, t->values);
    printf("  %-*s  %-*s  %-*s  %4s  %-*s  %*s  %-7s  %-4s", t->layer, "layer", t->type, "type", t->io,
           "bottoms -> tops", "blob", t->shape, "shape", t->count, "count", "dtype", "diff");
    print_stat_titles(t);
}

static cblob_status print_table(const tool_caffe *file, bool params, bool stats)
{
    table t;
    TOOL_TRY(measure(file, stats, &t));
    print_header(file, &t);
    int64_t layers = 0;
    if (file->model != NULL)
        cblob_model_num_layers(file->model, &layers);
    text_buffer buffer = {0};
    cblob_status status = CBLOB_OK;
    for (int64_t i = 0; status == CBLOB_OK && i < layers; ++i) {
        const char *name = "";
        cblob_model_layer_name(file->model, i, &name);
        tool_progress("inspect", i + 1, layers, name);
        status = print_layer(&t, file->model, i, params, &buffer);
    }
    free(buffer.text);
    for (int64_t j = 0; status == CBLOB_OK && j < file->num_blobs; ++j) {
        const tool_blob blob = tool_handle_blob(file->blobs[j]);
        status = print_blob_row(&t, &blob, j);
    }
    tool_progress_done();
    return status;
}

/* ---- the command ---------------------------------------------------------------------------- */

int command_inspect(int argc, char **argv)
{
    bool json = false, params = false, shapes = false, options_done = false;
    const char *path = NULL;
    for (int i = 0; i < argc; ++i) {
        const bool option = !options_done && argv[i][0] == '-' && argv[i][1] != '\0';
        if (option && strcmp(argv[i], "--json") == 0)
            json = true;
        else if (option && strcmp(argv[i], "--params") == 0)
            params = true;
        else if (option && strcmp(argv[i], "--shapes") == 0)
            shapes = true;
        else if (option && strcmp(argv[i], "--") == 0)
            options_done = true;
        else if (option)
            return tool_fail(TOOL_BAD_INPUT, "inspect", "%s: unknown option (try 'cblob inspect --help')", argv[i]);
        else if (path != NULL)
            return tool_fail(TOOL_BAD_INPUT, "inspect", "%s: one FILE only (%s was given first)", argv[i], path);
        else
            path = argv[i];
    }
    if (path == NULL)
        return tool_fail(TOOL_BAD_INPUT, "inspect", "FILE is missing (cblob inspect [--json] [--params] [--shapes] FILE)");
    cblob_context *context = NULL;
    if (cblob_context_create(&context) != CBLOB_OK)
        return tool_fail(TOOL_FAILED, "inspect", "%s", cblob_last_error_message());
    tool_caffe file;
    const int opened = tool_caffe_open(context, "inspect", path, shapes ? CBLOB_OPEN_LAZY : 0, 0, &file);
    if (opened != TOOL_OK) {
        cblob_context_destroy(context);
        return opened;
    }
    cblob_status status;
    status = json ? print_json(&file, !shapes) : print_table(&file, params, !shapes);
    tool_caffe_close(&file);
    cblob_context_destroy(context);
    if (status == CBLOB_OK && (fflush(stdout) != 0 || ferror(stdout)))
        status = tool_own_failure("inspect", "standard output: cannot write: %s", strerror(errno));
    return status == CBLOB_OK ? TOOL_OK : tool_report(status, TOOL_FAILED, "inspect");
}
