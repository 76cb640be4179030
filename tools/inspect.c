/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob inspect [--json] [--params] [--shapes] FILE: what a Caffe file holds, as a table or as one
 * JSON object (docs/inspect-schema-2.json). Both are written layer by layer as they are made, and
 * blob values are read in pieces without making blob handles, so memory stays near the model's own
 * size whatever the shape of the file. With --shapes no value is read: a net from a path is opened
 * lazily (its structure only), so a large model is listed reading a few KiB per layer.
 *
 * At a terminal the statistics' progress is shown in bytes (terminal.h); a layer's rows are printed
 * whole once its statistics are made, after the progress line is cleared, so no progress text is
 * ever left on a row. The table's columns keep their widths whatever the names: a cell wider than its
 * column goes on over the lines below, in the same column. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commands.h"
#include "json_out.h"
#include "tool.h"

/* ---- layer facts the table and JSON share ---------------------------------------------------- */

/* A layer's text from a two-call library function, in a buffer that grows as needed. */
static cblob_status layer_names(const cblob_model *model, int64_t layer, const char **name, const char **type,
                                int64_t *blobs)
{
    if (cblob_model_layer_name(model, layer, name) != CBLOB_OK || cblob_model_layer_type(model, layer, type) != CBLOB_OK ||
        cblob_model_layer_num_blobs(model, layer, blobs) != CBLOB_OK)
        return CBLOB_ERR_INTERNAL; /* the library said why */
    return CBLOB_OK;
}

/* A layer's failure said with the layer it happened in (the library's message names the field).
 * A stop the program asked for, or a failure said already, is left as it is. */
static cblob_status layer_failure(cblob_status status, const cblob_model *model, int64_t layer)
{
    if (status == CBLOB_OK || status == TOOL_REPORTED || status == TOOL_STOPPED ||
        (status == CBLOB_ERR_CANCELLED && tool_interrupted() != 0))
        return status;
    char detail[1024], name[160];
    snprintf(detail, sizeof detail, "%s", cblob_last_error_detail()); /* before the next call replaces it */
    const char *raw = NULL;
    if (cblob_model_layer_name(model, layer, &raw) != CBLOB_OK || raw == NULL)
        raw = "";
    tool_escape_into(raw, 64, name, sizeof name);
    return tool_own_failure("inspect", "layer %" PRId64 " (%s): %s", layer, name, detail);
}

/* What ends standard output when the output stopped part-way (a failure, or a signal): a line no
 * JSON parser and no reader of the table takes for the rest of a document, so that a pipeline
 * never reads what was written as the whole (standard error says why; the exit status is not 0). */
#define INCOMPLETE_LINE "!! cblob inspect: the output above is incomplete: it stopped part-way"

static void mark_incomplete(bool midline)
{
    tool_progress_clear();
    printf("%s%s\n", midline ? "\n" : "", INCOMPLETE_LINE);
    tool_stdout_written(true);
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static int write_stdout(const char *text, size_t size, void *context)
{
    tool_progress_clear();
    const bool written = fwrite(text, 1, size, context) == size && fflush(context) == 0;
    tool_stdout_written(size > 0 && text[size - 1] == '\n');
    return written ? 0 : -1;
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

/* A layer's JSON as the library writes it (cblob_model_layer_json_write), rewritten as it comes in
 * the program's style, each blob's statistics added as its object closes: no layer is ever held
 * whole, so a layer of any size takes the same memory. */
typedef struct layer_stream {
    json_restyle restyle;
    const cblob_model *model;
    int64_t layer;
    cblob_status status; /* a failure of the program's own (a blob's statistics), said already */
} layer_stream;

static int32_t restyle_piece(void *user_data, const char *text, size_t size)
{
    layer_stream *s = user_data;
    return json_restyle_write(&s->restyle, text, size) == 0 ? 0 : 1;
}

static int add_blob_stats(json_out *out, int64_t index, void *context)
{
    layer_stream *s = context;
    const tool_blob blob = tool_model_blob(s->model, s->layer, index);
    tool_blob_facts facts;
    tool_stats stats;
    s->status = tool_blob_facts_of(&blob, &facts);
    if (s->status == CBLOB_OK)
        s->status = tool_stats_compute(&blob, &facts, &stats);
    if (s->status != CBLOB_OK)
        return -1;
    const char *const keys[5] = {", \"sum\": ", ", \"asum\": ", ", \"sumsq\": ", ", \"min\": ", ", \"max\": "};
    const double values[5] = {stats.sum, stats.asum, stats.sumsq, stats.min, stats.max};
    for (int i = 0; i < 5; ++i) {
        json_out_raw(out, keys[i], strlen(keys[i]));
        json_out_raw_json(out, number(values[i]));
    }
    return out->failed ? -1 : 0;
}

/* The library's layer JSON (schema 2's $defs/layer) with each blob's statistics added. */
static cblob_status json_layer(json_out *out, const cblob_model *model, int64_t layer, bool stats)
{
    layer_stream s = {.model = model, .layer = layer, .status = CBLOB_OK};
    json_restyle_start(&s.restyle, out, "blobs", stats ? add_blob_stats : NULL, &s);
    json_out_raw_item(out);
    const cblob_status status = cblob_model_layer_json_write(model, layer, 0, restyle_piece, &s);
    if (s.status != CBLOB_OK)
        return s.status;
    if (out->failed)
        return CBLOB_OK; /* standard output failed: print_json says so */
    if (status == CBLOB_ERR_CANCELLED || (status == CBLOB_OK && !json_restyle_finish(&s.restyle)))
        return tool_own_failure("inspect", "layer %" PRId64 ": the library's JSON does not parse", layer);
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
    json_out_value(out, json_text_or_null(file->name));
    json_out_key(out, "kind");
    json_out_value(out, json_string(kind_name(file->kind)));
    json_out_key(out, "format");
    json_out_value(out, file->model == NULL ? json_null() : json_string(format == CBLOB_NET_FORMAT_V1 ? "V1" : "V2"));
    json_out_key(out, "name");
    json_out_value(out, json_text_or_null(name));
}

static cblob_status print_json(const tool_caffe *file, bool stats, int64_t value_bytes)
{
    tool_progress_phase(TOOL_PHASE_WORK, "statistics of", file->name);
    tool_progress_total(value_bytes);
    json_out out;
    json_out_start(&out, write_stdout, stdout);
    json_out_open(&out, '{');
    int64_t layers;
    json_header(&out, file, &layers);
    json_out_key(&out, "layers");
    json_out_open(&out, '[');
    cblob_status status = CBLOB_OK;
    for (int64_t i = 0; status == CBLOB_OK && !out.failed && i < layers; ++i)
        status = layer_failure(json_layer(&out, file->model, i, stats), file->model, i);
    for (int64_t j = 0; status == CBLOB_OK && !out.failed && j <= file->num_blobs; ++j) {
        if (j == 0) {
            json_out_close(&out, ']');
            json_out_key(&out, "blobs");
            json_out_open(&out, '[');
        }
        if (j < file->num_blobs)
            status = json_blob(&out, file->blobs[j], stats);
    }
    /* The document is closed only when all of it was made: one that stopped is never valid. */
    const bool whole = status == CBLOB_OK && !out.failed;
    if (whole) {
        json_out_close(&out, ']');
        json_out_close(&out, '}');
    }
    json_out_finish(&out);
    tool_progress_clear();
    if (whole && !out.failed) {
        fputc('\n', stdout);
        tool_stdout_written(true);
    } else {
        mark_incomplete(true);
    }
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

/* The most a column takes; a wider cell goes on over the lines below. */
#define NAME_WIDTH_MAX 40
#define TYPE_WIDTH_MAX 28
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
    int64_t value_bytes; /* what the statistics read: their progress's total */
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
    t->value_bytes += facts.count * (int64_t)tool_dtype_size(facts.dtype);
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
        t->type = max_int(t->type, capped_width(type, TYPE_WIDTH_MAX));
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

/* A line of the table, made whole before it is printed (so that progress is cleared once per
 * line, never mid-line) and without trailing spaces. */
typedef struct line {
    char text[8192];
    size_t used;
} line;

static void line_add(line *l, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void line_add(line *l, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    const int n = vsnprintf(l->text + l->used, sizeof l->text - l->used, format, args);
    va_end(args);
    if (n > 0)
        l->used = l->used + (size_t)n < sizeof l->text ? l->used + (size_t)n : sizeof l->text - 1;
}

/* Escaped text (one column per character) padded to width. */
static void line_cell(line *l, const char *escaped, int width)
{
    int columns = 0;
    for (const unsigned char *p = (const unsigned char *)escaped; *p != '\0'; ++p)
        columns += (*p & 0xc0) != 0x80;
    line_add(l, "  %s%*s", escaped, width > columns ? width - columns : 0, "");
}

static void line_print(line *l)
{
    while (l->used > 0 && l->text[l->used - 1] == ' ')
        --l->used;
    l->text[l->used] = '\0';
    tool_progress_clear();
    puts(l->text);
    tool_stdout_written(true);
    l->used = 0;
}

/* A blob's row: its facts, and its statistics when the table shows them. */
typedef struct blob_row {
    tool_blob_facts facts;
    tool_stats stats;
} blob_row;

static cblob_status blob_row_make(const table *t, const tool_blob *blob, blob_row *out)
{
    TOOL_TRY(tool_blob_facts_of(blob, &out->facts));
    return t->stats ? tool_stats_compute(blob, &out->facts, &out->stats) : CBLOB_OK;
}

static void stat_cell(line *l, double value, int width)
{
    if (isnan(value))
        line_add(l, "  %*s", width, "-");
    else
        line_add(l, "  %*.*g", width, width > 12 ? 8 : 6, value);
}

static void blob_cells(line *l, const table *t, const blob_row *row, int64_t index)
{
    char shape[CBLOB_MAX_AXES * 21 + 4];
    tool_shape_text(&row->facts, shape, sizeof shape);
    line_add(l, "  %4" PRId64 "  %-*s  %*" PRId64 "  %-7s  %-4s", index, t->shape, shape, t->count, row->facts.count,
             tool_dtype_name(row->facts.dtype), row->facts.has_diff ? "yes" : "no");
    if (t->stats) {
        stat_cell(l, row->stats.min, 12);
        stat_cell(l, row->stats.max, 12);
        stat_cell(l, row->stats.sum, 14);
    }
}

/* A layer's parameters, on a line of their own under its rows (only when it has some), printed as
 * the library writes them (cblob_model_layer_params_json_write), escaped for the terminal whole
 * characters at a time (a piece may end inside one: its bytes wait for the next). */
typedef struct params_stream {
    const table *t;
    char held[2]; /* the first two bytes: "{}" is no parameters, and no line */
    size_t held_used, carried;
    bool started;
    char text[4096];
} params_stream;

static void params_print(params_stream *s, const char *text, size_t size)
{
    while (size > 0) {
        const size_t n = size < sizeof s->text - 1 - s->carried ? size : sizeof s->text - 1 - s->carried;
        memcpy(s->text + s->carried, text, n);
        text += n;
        size -= n;
        const size_t end = s->carried + n;
        size_t cut = end;
        for (size_t back = 1; back <= 3 && back <= end; ++back) {
            const unsigned char c = (unsigned char)s->text[end - back];
            if ((c & 0xc0) == 0x80)
                continue;
            const size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
            if (need > back)
                cut = end - back;
            break;
        }
        char kept[4];
        s->carried = end - cut;
        memcpy(kept, s->text + cut, s->carried);
        s->text[cut] = '\0';
        tool_print_escaped(stdout, s->text, 0);
        memcpy(s->text, kept, s->carried);
    }
}

static int32_t params_piece(void *user_data, const char *text, size_t size)
{
    params_stream *s = user_data;
    for (; s->held_used < 2 && size > 0; --size)
        s->held[s->held_used++] = *text++;
    if (s->held_used == 2 && !s->started && memcmp(s->held, "{}", 2) != 0) {
        tool_progress_clear();
        printf("  %*s  params ", s->t->layer, "");
        s->started = true;
        params_print(s, s->held, 2);
    }
    if (s->started)
        params_print(s, text, size);
    return ferror(stdout) ? 1 : 0;
}

static cblob_status print_params(const table *t, const cblob_model *model, int64_t layer)
{
    params_stream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return tool_own_failure("inspect", "no memory for a layer's parameters");
    s->t = t;
    const cblob_status status = cblob_model_layer_params_json_write(model, layer, 0, params_piece, s);
    if (s->started) { /* a line that stopped part-way ends too: the mark of an incomplete output follows */
        putchar('\n');
        tool_stdout_written(true);
    }
    free(s);
    return status;
}

/* The layer's rows: its name, type and bottoms -> tops (each over as many lines as it needs) beside
 * its blobs, one a line. */
static cblob_status print_rows(const table *t, const char *name, const char *type, const char *io,
                               const blob_row *rows, int64_t blobs)
{
    tool_lines cells[3];
    const char *raw[3] = {shown(name), type, io};
    const int widths[3] = {t->layer, t->type, t->io};
    int made = 0;
    for (; made < 3 && tool_lines_wrap(raw[made], widths[made], &cells[made]); ++made)
        continue;
    cblob_status status = made == 3 ? CBLOB_OK : tool_own_failure("inspect", "no memory for a layer's row");
    int64_t count = blobs > 0 ? blobs : 1;
    for (int c = 0; c < made; ++c)
        count = cells[c].count > count ? cells[c].count : count;
    line l = {.used = 0};
    for (int64_t k = 0; status == CBLOB_OK && k < count; ++k) {
        for (int c = 0; c < 3; ++c)
            line_cell(&l, tool_lines_get(&cells[c], (int)k), widths[c]);
        if (k < blobs)
            blob_cells(&l, t, &rows[k], k);
        else if (k == 0)
            line_add(&l, "  %4s", "-");
        line_print(&l);
    }
    for (int c = 0; c < made; ++c)
        tool_lines_free(&cells[c]);
    return status;
}

static cblob_status print_layer(const table *t, const cblob_model *model, int64_t layer, bool params)
{
    const char *name, *type;
    int64_t blobs;
    TOOL_TRY(layer_names(model, layer, &name, &type, &blobs));
    /* Every blob's statistics first: the rows are printed whole, after them. */
    blob_row *rows = calloc((size_t)blobs + 1, sizeof *rows);
    char *io = io_text(model, layer);
    cblob_status status = rows != NULL && io != NULL ? CBLOB_OK
                                                     : tool_own_failure("inspect", "no memory for a layer's row");
    for (int64_t j = 0; status == CBLOB_OK && j < blobs; ++j) {
        const tool_blob blob = tool_model_blob(model, layer, j);
        status = blob_row_make(t, &blob, &rows[j]);
    }
    if (status == CBLOB_OK)
        status = print_rows(t, name, type, io, rows, blobs);
    free(rows);
    free(io);
    return status == CBLOB_OK && params ? print_params(t, model, layer) : status;
}

static void stat_titles(line *l, const table *t)
{
    if (t->stats)
        line_add(l, "  %12s  %12s  %14s", "min", "max", "sum");
    line_print(l);
}

static void print_header(const tool_caffe *file, const table *t)
{
    tool_progress_clear();
    printf("file    ");
    tool_print_escaped(stdout, file->name, 0);
    line l = {.used = 0};
    if (file->model == NULL) {
        printf("\nkind    %s\n", file->kind == CBLOB_FILE_BLOB  ? "blob (BlobProto)"
                                : file->kind == CBLOB_FILE_NPY ? "blob (NumPy .npy)"
                                                               : "blob vector (BlobProtoVector)");
        printf("blobs   %" PRId64 " (%" PRId64 " values)\n\n", t->blobs, t->values);
        line_add(&l, "  %4s  %-*s  %*s  %-7s  %-4s", "blob", t->shape, "shape", t->count, "count", "dtype", "diff");
        stat_titles(&l, t);
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
    line_add(&l, "  %-*s  %-*s  %-*s  %4s  %-*s  %*s  %-7s  %-4s", t->layer, "layer", t->type, "type", t->io,
             "bottoms -> tops", "blob", t->shape, "shape", t->count, "count", "dtype", "diff");
    stat_titles(&l, t);
}

static cblob_status print_table(const tool_caffe *file, const table *t, bool params)
{
    print_header(file, t);
    tool_progress_phase(TOOL_PHASE_WORK, "statistics of", file->name);
    tool_progress_total(t->value_bytes);
    int64_t layers = 0;
    if (file->model != NULL)
        cblob_model_num_layers(file->model, &layers);
    cblob_status status = CBLOB_OK;
    for (int64_t i = 0; status == CBLOB_OK && i < layers; ++i)
        status = tool_interrupted() != 0 ? TOOL_STOPPED
                                         : layer_failure(print_layer(t, file->model, i, params), file->model, i);
    for (int64_t j = 0; status == CBLOB_OK && j < file->num_blobs; ++j) {
        const tool_blob blob = tool_handle_blob(file->blobs[j]);
        blob_row row;
        status = blob_row_make(t, &blob, &row);
        line l = {.used = 0};
        if (status == CBLOB_OK) {
            blob_cells(&l, t, &row, j);
            line_print(&l);
        }
    }
    tool_progress_clear();
    if (status != CBLOB_OK)
        mark_incomplete(false);
    return status;
}

/* ---- the parameter summary ------------------------------------------------------------------- */

/* The values of a layer's blobs (a blob file's blob: layer -1, blob `index`) and their bytes. */
static cblob_status parameters_of(const tool_caffe *file, int64_t layer, int64_t index, int64_t *values,
                                  int64_t *bytes)
{
    *values = *bytes = 0;
    int64_t blobs = 1;
    if (layer >= 0)
        TOOL_TRY(cblob_model_layer_num_blobs(file->model, layer, &blobs));
    for (int64_t j = 0; j < blobs; ++j) {
        const tool_blob blob = layer >= 0 ? tool_model_blob(file->model, layer, j) : tool_handle_blob(file->blobs[index]);
        tool_blob_facts facts;
        TOOL_TRY(tool_blob_facts_of(&blob, &facts));
        *values += facts.count;
        *bytes += facts.count * (int64_t)tool_dtype_size(facts.dtype);
    }
    return CBLOB_OK;
}

/* Per layer (or blob) its parameters' values and bytes, then the total: as Keras' summary(). */
static cblob_status print_summary(const tool_caffe *file)
{
    int64_t layers = 0;
    if (file->model != NULL)
        cblob_model_num_layers(file->model, &layers);
    const int64_t rows = file->model != NULL ? layers : file->num_blobs;
    int name_width = 5, type_width = 4, value_width = 10, byte_width = 5;
    int64_t total_values = 0, total_bytes = 0, with = 0;
    for (int64_t i = 0; i < rows; ++i) {
        int64_t values, bytes;
        TOOL_TRY(parameters_of(file, file->model != NULL ? i : -1, i, &values, &bytes));
        total_values += values;
        total_bytes += bytes;
        with += values > 0;
        if (file->model != NULL) {
            const char *name, *type;
            int64_t blobs;
            TOOL_TRY(layer_names(file->model, i, &name, &type, &blobs));
            name_width = max_int(name_width, capped_width(shown(name), NAME_WIDTH_MAX));
            type_width = max_int(type_width, capped_width(type, TYPE_WIDTH_MAX));
        }
    }
    value_width = max_int(value_width, digits(total_values));
    byte_width = max_int(byte_width, digits(total_bytes));
    tool_progress_clear();
    printf("file    ");
    tool_print_escaped(stdout, file->name, 0);
    printf("\n\n");
    line l = {.used = 0};
    if (file->model != NULL)
        line_add(&l, "  %-*s  %-*s  %*s  %*s", name_width, "layer", type_width, "type", value_width, "parameters",
                 byte_width, "bytes");
    else
        line_add(&l, "  %4s  %*s  %*s", "blob", value_width, "parameters", byte_width, "bytes");
    line_print(&l);
    for (int64_t i = 0; i < rows; ++i) {
        if (tool_interrupted() != 0)
            return TOOL_STOPPED;
        int64_t values, bytes;
        TOOL_TRY(parameters_of(file, file->model != NULL ? i : -1, i, &values, &bytes));
        l.used = 0;
        if (file->model == NULL) {
            line_add(&l, "  %4" PRId64 "  %*" PRId64 "  %*" PRId64, i, value_width, values, byte_width, bytes);
            line_print(&l);
            continue;
        }
        const char *name, *type;
        int64_t blobs;
        TOOL_TRY(layer_names(file->model, i, &name, &type, &blobs));
        tool_lines cells[2];
        const bool made = tool_lines_wrap(shown(name), name_width, &cells[0]);
        if (!made || !tool_lines_wrap(type, type_width, &cells[1])) {
            if (made)
                tool_lines_free(&cells[0]);
            return tool_own_failure("inspect", "no memory for a layer's row");
        }
        const int count = cells[0].count > cells[1].count ? cells[0].count : cells[1].count;
        for (int k = 0; k < (count > 0 ? count : 1); ++k) { /* a long name goes on over the lines below */
            line_cell(&l, tool_lines_get(&cells[0], k), name_width);
            line_cell(&l, tool_lines_get(&cells[1], k), type_width);
            if (k == 0)
                line_add(&l, "  %*" PRId64 "  %*" PRId64, value_width, values, byte_width, bytes);
            line_print(&l);
        }
        tool_lines_free(&cells[0]);
        tool_lines_free(&cells[1]);
    }
    printf("\ntotal   %" PRId64 " parameters in %" PRId64 " of %" PRId64 " %s, %" PRId64 " bytes (%.1f MiB)\n",
           total_values, with, rows, file->model != NULL ? "layers" : "blobs", total_bytes,
           (double)total_bytes / (1024.0 * 1024.0));
    return CBLOB_OK;
}

/* ---- the command ---------------------------------------------------------------------------- */

typedef struct inspect_args {
    bool json, params, shapes, summary;
    tool_progress_mode progress;
    const char *path;
} inspect_args;

static int parse_args(int argc, char **argv, inspect_args *args)
{
    bool options_done = false, quiet = false;
    for (int i = 0; i < argc; ++i) {
        const char *value = NULL;
        if (options_done || argv[i][0] != '-' || argv[i][1] == '\0') {
            if (args->path != NULL)
                return tool_fail(TOOL_BAD_INPUT, "inspect", "%s: one FILE only (%s was given first)", argv[i],
                                 args->path);
            args->path = argv[i];
            continue;
        }
        if (strcmp(argv[i], "--") == 0) {
            options_done = true;
            continue;
        }
        switch (tool_parse_option("inspect", tool_inspect_options, tool_inspect_num_options, argc, argv, &i, &value)) {
        case TOOL_INSPECT_JSON: args->json = true; break;
        case TOOL_INSPECT_PARAMS: args->params = true; break;
        case TOOL_INSPECT_SHAPES: args->shapes = true; break;
        case TOOL_INSPECT_SUMMARY: args->summary = true; break;
        case TOOL_INSPECT_QUIET: quiet = true; break;
        case TOOL_INSPECT_PROGRESS: args->progress = TOOL_PROGRESS_ALWAYS; break;
        case TOOL_INSPECT_HELP: break; /* cblob.c prints the help before the command runs */
        default: return TOOL_BAD_INPUT;
        }
    }
    if (args->path == NULL)
        return tool_fail(TOOL_BAD_INPUT, "inspect", "FILE is missing (cblob inspect [--json] [--params] [--shapes] FILE)");
    if (args->summary && (args->json || args->params))
        return tool_fail(TOOL_BAD_INPUT, "inspect", "--summary prints a table of its own: without %s (--json lists "
                         "every blob's count and dtype)", args->json ? "--json" : "--params");
    return tool_progress_option("inspect", quiet, &args->progress);
}

int command_inspect(int argc, char **argv)
{
    inspect_args args = {.progress = TOOL_PROGRESS_AUTO};
    const int parsed = parse_args(argc, argv, &args);
    if (parsed != TOOL_OK)
        return parsed;
    tool_progress_setup("inspect", args.progress);
    cblob_context *context = tool_context("inspect");
    if (context == NULL)
        return TOOL_FAILED;
    tool_caffe file;
    int result = tool_caffe_open(context, "inspect", args.path, args.shapes || args.summary ? CBLOB_OPEN_LAZY : 0, 0,
                                 &file);
    if (result == TOOL_OK && args.summary) {
        cblob_status status = print_summary(&file);
        tool_caffe_close(&file);
        if (status == CBLOB_OK && (fflush(stdout) != 0 || ferror(stdout)) && tool_interrupted() == 0)
            status = tool_own_failure("inspect", "standard output: cannot write: %s", strerror(errno));
        result = status == CBLOB_OK ? TOOL_OK : tool_report(status, TOOL_FAILED, "inspect");
    } else if (result == TOOL_OK) {
        table t;
        cblob_status status = measure(&file, !args.shapes, &t);
        if (status == CBLOB_OK)
            status = args.json ? print_json(&file, !args.shapes, t.value_bytes) : print_table(&file, &t, args.params);
        tool_caffe_close(&file);
        if (status == CBLOB_OK && (fflush(stdout) != 0 || ferror(stdout)) && tool_interrupted() == 0)
            status = tool_own_failure("inspect", "standard output: cannot write: %s", strerror(errno));
        result = status == CBLOB_OK ? TOOL_OK : tool_report(status, TOOL_FAILED, "inspect");
    }
    cblob_context_destroy(context);
    if (result == TOOL_INTERRUPTED)
        return tool_interrupt_exit("inspect", "stopped before all of %s was shown (inspect writes no file)",
                                   tool_input_name(args.path));
    /* A signal that came once the work was done stopped nothing, but is still said. */
    if (result == TOOL_OK && tool_interrupted() != 0)
        return tool_interrupt_exit("inspect", "after all of %s was shown", tool_input_name(args.path));
    return result;
}
