/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob inspect [--json] FILE: what a Caffe file holds, as a table or as one JSON object. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tool.h"

/* ---- one blob's description ------------------------------------------------------------ */

typedef struct blob_row {
    char shape[CBLOB_MAX_AXES * 21 + 4]; /* "20x1x5x5", or "()" for a scalar */
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    cblob_dtype dtype;
    bool has_diff;
    tool_stats stats;
} blob_row;

static cblob_status describe(cblob_blob *blob, blob_row *row)
{
    cblob_status status = cblob_blob_shape(blob, CBLOB_MAX_AXES, row->dims, &row->num_axes);
    if (status == CBLOB_OK)
        status = cblob_blob_dtype(blob, &row->dtype);
    if (status == CBLOB_OK)
        status = tool_stats_compute(blob, &row->stats);
    if (status != CBLOB_OK)
        return status;
    row->has_diff = tool_has_diff(blob);
    size_t used = 0;
    row->shape[0] = '\0';
    for (int32_t i = 0; i < row->num_axes; ++i)
        used += (size_t)snprintf(row->shape + used, sizeof row->shape - used, "%s%" PRId64, i > 0 ? "x" : "",
                                 row->dims[i]);
    if (row->num_axes == 0)
        snprintf(row->shape, sizeof row->shape, "()");
    return CBLOB_OK;
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at text, or 0. */
static size_t utf8_length(const unsigned char *text)
{
    const unsigned char c = text[0];
    size_t length = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    if (c >= 0xf5)
        length = 0;
    for (size_t i = 1; i < length; ++i)
        if ((text[i] & 0xc0) != 0x80)
            return 0;
    return length;
}

/* A JSON string; bytes that are not UTF-8 (names are bytes in a protobuf file) become U+FFFD. */
static void json_string(FILE *out, const char *text)
{
    if (text == NULL) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        if (*p == '"' || *p == '\\') {
            fprintf(out, "\\%c", *p++);
        } else if (*p < 0x20) {
            fprintf(out, "\\u%04x", *p++);
        } else if (*p < 0x80) {
            fputc(*p++, out);
        } else {
            const size_t length = utf8_length(p);
            if (length == 0) {
                fputs("\\ufffd", out);
                ++p;
            } else {
                fwrite(p, 1, length, out);
                p += length;
            }
        }
    }
    fputc('"', out);
}

/* JSON has no NaN or infinity: those (and the min/max of an empty blob) are null. */
static void json_number(FILE *out, double value)
{
    if (isfinite(value))
        fprintf(out, "%.17g", value);
    else
        fputs("null", out);
}

static void json_blob(FILE *out, const blob_row *row)
{
    fputs("{\"shape\": [", out);
    for (int32_t i = 0; i < row->num_axes; ++i)
        fprintf(out, "%s%" PRId64, i > 0 ? ", " : "", row->dims[i]);
    fprintf(out, "], \"count\": %" PRId64 ", \"dtype\": \"%s\", \"has_diff\": %s", row->stats.count,
            tool_dtype_name(row->dtype), row->has_diff ? "true" : "false");
    const char *const names[5] = {"sum", "asum", "sumsq", "min", "max"};
    const double values[5] = {row->stats.sum, row->stats.asum, row->stats.sumsq, row->stats.min, row->stats.max};
    for (int i = 0; i < 5; ++i) {
        fprintf(out, ", \"%s\": ", names[i]);
        json_number(out, values[i]);
    }
    fputc('}', out);
}

static const char *kind_name(cblob_proto_kind kind)
{
    return kind == CBLOB_PROTO_NET ? "net" : kind == CBLOB_PROTO_BLOB ? "blob" : "blob_vector";
}

static int print_json(const tool_file *file, blob_row **rows)
{
    FILE *out = stdout;
    fputs("{\"file\": ", out);
    json_string(out, file->path);
    fprintf(out, ", \"kind\": \"%s\", \"format\": ", kind_name(file->kind));
    json_string(out, file->format);
    fputs(", \"name\": ", out);
    json_string(out, file->name);
    fputs(", \"layers\": [", out);
    for (int64_t i = 0; i < file->num_layers; ++i) {
        const tool_layer *layer = &file->layers[i];
        fputs(i > 0 ? ", {\"name\": " : "{\"name\": ", out);
        json_string(out, layer->name);
        fputs(", \"type\": ", out);
        json_string(out, layer->type);
        fputs(", \"blobs\": [", out);
        for (int64_t j = 0; j < layer->num_blobs; ++j) {
            fputs(j > 0 ? ", " : "", out);
            json_blob(out, &rows[i][j]);
        }
        fputs("]}", out);
    }
    fputs("], \"blobs\": [", out);
    for (int64_t j = 0; j < file->num_blobs; ++j) {
        fputs(j > 0 ? ", " : "", out);
        json_blob(out, &rows[file->num_layers][j]);
    }
    fputs("]}\n", out);
    return TOOL_OK;
}

/* ---- table ----------------------------------------------------------------------------- */

typedef struct widths {
    int layer, type, shape, count;
} widths;

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

static int digits(int64_t value)
{
    char text[24];
    return snprintf(text, sizeof text, "%" PRId64, value);
}

static void print_blob_row(FILE *out, const widths *w, const char *layer, const char *type, int64_t index,
                           const blob_row *row)
{
    if (w->layer > 0)
        fprintf(out, "  %-*s  %-*s", w->layer, layer, w->type, type);
    fprintf(out, "  %4" PRId64 "  %-*s  %*" PRId64 "  %-7s  %-4s  %12.6g  %12.6g  %14.8g\n", index, w->shape, row->shape,
            w->count, row->stats.count, tool_dtype_name(row->dtype), row->has_diff ? "yes" : "no", row->stats.min,
            row->stats.max, row->stats.sum);
}

static int print_table(const tool_file *file, blob_row **rows)
{
    FILE *out = stdout;
    const bool net = file->kind == CBLOB_PROTO_NET;
    widths w = {.layer = net ? 5 : 0, .type = 4, .shape = 5, .count = 5};
    int64_t values = 0, with_blobs = 0, blobs = net ? 0 : file->num_blobs;
    for (int64_t i = 0; i <= file->num_layers; ++i) {
        const int64_t n = i < file->num_layers ? file->layers[i].num_blobs : file->num_blobs;
        if (i < file->num_layers) {
            w.layer = max_int(w.layer, (int)strlen(file->layers[i].name));
            w.type = max_int(w.type, (int)strlen(file->layers[i].type));
            with_blobs += n > 0;
            blobs += n;
        }
        for (int64_t j = 0; j < n; ++j) {
            w.shape = max_int(w.shape, (int)strlen(rows[i][j].shape));
            w.count = max_int(w.count, digits(rows[i][j].stats.count));
            values += rows[i][j].stats.count;
        }
    }
    fprintf(out, "file    %s\n", file->path);
    if (net) {
        fprintf(out, "kind    net, format %s (%s)\n", file->format,
                strcmp(file->format, "V1") == 0 ? "V1LayerParameter, field layers = 2" : "LayerParameter, field layer = 100");
        fprintf(out, "name    %s\n", file->name != NULL ? file->name : "(none)");
        fprintf(out, "layers  %" PRId64 " (%" PRId64 " with blobs: %" PRId64 " blobs, %" PRId64 " values)\n",
                file->num_layers, with_blobs, blobs, values);
    } else {
        fprintf(out, "kind    %s\n", file->kind == CBLOB_PROTO_BLOB ? "blob (BlobProto)" : "blob vector (BlobProtoVector)");
        fprintf(out, "blobs   %" PRId64 " (%" PRId64 " values)\n", blobs, values);
    }
    fputc('\n', out);
    if (net)
        fprintf(out, "  %-*s  %-*s", w.layer, "layer", w.type, "type");
    fprintf(out, "  %4s  %-*s  %*s  %-7s  %-4s  %12s  %12s  %14s\n", "blob", w.shape, "shape", w.count, "count", "dtype",
            "diff", "min", "max", "sum");
    for (int64_t i = 0; i < file->num_layers; ++i) {
        const tool_layer *layer = &file->layers[i];
        if (layer->num_blobs == 0)
            fprintf(out, "  %-*s  %-*s  %4s\n", w.layer, layer->name, w.type, layer->type, "-");
        for (int64_t j = 0; j < layer->num_blobs; ++j)
            print_blob_row(out, &w, j == 0 ? layer->name : "", j == 0 ? layer->type : "", j, &rows[i][j]);
    }
    for (int64_t j = 0; j < file->num_blobs; ++j)
        print_blob_row(out, &w, "", "", j, &rows[file->num_layers][j]);
    return TOOL_OK;
}

/* ---- the command ----------------------------------------------------------------------- */

/* rows[i] describes layer i's blobs; rows[num_layers] a blob file's blobs. */
static int describe_all(const tool_file *file, blob_row ***out)
{
    blob_row **rows = calloc((size_t)file->num_layers + 1, sizeof *rows);
    int status = rows != NULL ? TOOL_OK : tool_fail(TOOL_FAILED, "inspect", file->path, "out of memory");
    for (int64_t i = 0; status == TOOL_OK && i <= file->num_layers; ++i) {
        const bool blob_file = i == file->num_layers;
        const int64_t n = blob_file ? file->num_blobs : file->layers[i].num_blobs;
        cblob_blob *const *blobs = blob_file ? file->blobs : file->layers[i].blobs;
        if (!blob_file)
            tool_progress("inspect", i + 1, file->num_layers, file->layers[i].name);
        rows[i] = calloc((size_t)n + 1, sizeof *rows[i]);
        if (rows[i] == NULL)
            status = tool_fail(TOOL_FAILED, "inspect", file->path, "out of memory");
        for (int64_t j = 0; status == TOOL_OK && j < n; ++j)
            if (describe(blobs[j], &rows[i][j]) != CBLOB_OK)
                status = tool_fail(TOOL_FAILED, "inspect", file->path, "%s", tool_library_message());
    }
    tool_progress_done();
    *out = rows;
    return status;
}

int command_inspect(int argc, char **argv)
{
    bool json = false;
    const char *path = NULL;
    for (int i = 0; i < argc; ++i) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (path == NULL && (argv[i][0] != '-' || argv[i][1] == '\0'))
            path = argv[i];
        else
            return tool_fail(TOOL_BAD_INPUT, "inspect", argv[i], "unexpected argument (usage: cblob inspect [--json] FILE)");
    }
    if (path == NULL)
        return tool_fail(TOOL_BAD_INPUT, "inspect", "usage", "cblob inspect [--json] FILE");
    cblob_context *context = NULL;
    if (cblob_context_create(&context) != CBLOB_OK)
        return tool_fail(TOOL_FAILED, "inspect", path, "%s", tool_library_message());
    tool_file file;
    int status = tool_file_load(context, "inspect", path, &file);
    blob_row **rows = NULL;
    if (status == TOOL_OK)
        status = describe_all(&file, &rows);
    if (status == TOOL_OK)
        status = json ? print_json(&file, rows) : print_table(&file, rows);
    for (int64_t i = 0; rows != NULL && i <= file.num_layers; ++i)
        free(rows[i]);
    free(rows);
    tool_file_free(&file);
    cblob_context_destroy(context);
    return status;
}
