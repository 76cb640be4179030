/* SPDX-License-Identifier: BSD-2-Clause */
#include "tool.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tool_fail(int status, const char *command, const char *subject, const char *format, ...)
{
    tool_progress_done();
    fprintf(stderr, "cblob %s: %s: ", command, subject);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    return status;
}

const char *tool_library_message(void)
{
    const char *message = cblob_last_error_message();
    const char *colon = strstr(message, ": ");
    return strncmp(message, "cblob_", 6) == 0 && colon != NULL ? colon + 2 : message;
}

const char *tool_library_message_about(const char *subject)
{
    const char *message = tool_library_message();
    const size_t length = strlen(subject);
    return strncmp(message, subject, length) == 0 && strncmp(message + length, ": ", 2) == 0 ? message + length + 2
                                                                                            : message;
}

static bool progress_shown;

void tool_progress(const char *command, int64_t done, int64_t total, const char *what)
{
    if (!isatty(STDERR_FILENO))
        return;
    fprintf(stderr, "\r\033[K%s: %lld/%lld %.60s", command, (long long)done, (long long)total, what);
    fflush(stderr);
    progress_shown = true;
}

void tool_progress_done(void)
{
    if (progress_shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        progress_shown = false;
    }
}

const char *tool_dtype_name(cblob_dtype dtype)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return "float32";
    case CBLOB_DTYPE_FLOAT64: return "float64";
    case CBLOB_DTYPE_INT32: return "int32";
    case CBLOB_DTYPE_UINT32: return "uint32";
    default: return "unknown";
    }
}

bool tool_has_diff(const cblob_blob *blob)
{
    cblob_head head = CBLOB_HEAD_UNINITIALIZED;
    return cblob_blob_head(blob, CBLOB_PART_DIFF, &head) == CBLOB_OK && head != CBLOB_HEAD_UNINITIALIZED;
}

/* Whether a failure is the input's fault (exit 2) or the machine's (exit 1). */
static int status_for(cblob_status status)
{
    return status == CBLOB_ERR_OUT_OF_MEMORY ? TOOL_FAILED : TOOL_BAD_INPUT;
}

static int load_net(cblob_context *context, const char *command, tool_file *file)
{
    cblob_status status = cblob_model_open_file(context, file->path, &file->model);
    if (status != CBLOB_OK)
        return tool_fail(status_for(status), command, file->path, "%s", tool_library_message_about(file->path));
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    cblob_model_format(file->model, &format);
    file->format = format == CBLOB_NET_FORMAT_V1 ? "V1" : "V2";
    cblob_model_name(file->model, &file->name);
    cblob_model_num_layers(file->model, &file->num_layers);
    file->layers = calloc((size_t)file->num_layers + 1, sizeof *file->layers);
    if (file->layers == NULL)
        return tool_fail(TOOL_FAILED, command, file->path, "out of memory");
    for (int64_t i = 0; i < file->num_layers; ++i) {
        tool_layer *layer = &file->layers[i];
        cblob_model_layer_name(file->model, i, &layer->name);
        cblob_model_layer_type(file->model, i, &layer->type);
        int64_t count = 0;
        cblob_model_layer_num_blobs(file->model, i, &count);
        layer->blobs = calloc((size_t)count + 1, sizeof *layer->blobs);
        if (layer->blobs == NULL)
            return tool_fail(TOOL_FAILED, command, file->path, "out of memory");
        for (; layer->num_blobs < count; ++layer->num_blobs)
            cblob_model_layer_blob(file->model, i, layer->num_blobs, &layer->blobs[layer->num_blobs]);
    }
    return TOOL_OK;
}

static int load_blobs(cblob_context *context, const char *command, tool_file *file)
{
    cblob_status status;
    if (file->kind == CBLOB_PROTO_BLOB) {
        file->blobs = calloc(1, sizeof *file->blobs);
        if (file->blobs == NULL)
            return tool_fail(TOOL_FAILED, command, file->path, "out of memory");
        status = cblob_blob_create_from_proto_file(context, file->path, &file->blobs[0]);
        file->num_blobs = status == CBLOB_OK ? 1 : 0;
    } else {
        int64_t count = 0;
        status = cblob_blob_vector_from_proto_file(context, file->path, 0, NULL, &count);
        if (status == CBLOB_OK) {
            file->blobs = calloc((size_t)count + 1, sizeof *file->blobs);
            if (file->blobs == NULL)
                return tool_fail(TOOL_FAILED, command, file->path, "out of memory");
            status = cblob_blob_vector_from_proto_file(context, file->path, count, file->blobs, &file->num_blobs);
        }
    }
    if (status != CBLOB_OK)
        return tool_fail(status_for(status), command, file->path, "%s", tool_library_message_about(file->path));
    return TOOL_OK;
}

int tool_file_load(cblob_context *context, const char *command, const char *path, tool_file *out)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    cblob_status status = cblob_proto_detect_file(path, &out->kind);
    if (status != CBLOB_OK)
        return tool_fail(status_for(status), command, path, "%s", tool_library_message_about(path));
    if (isatty(STDERR_FILENO)) {
        fprintf(stderr, "\r\033[K%s: reading %.60s", command, path);
        fflush(stderr);
    }
    const int result = out->kind == CBLOB_PROTO_NET ? load_net(context, command, out) : load_blobs(context, command, out);
    if (isatty(STDERR_FILENO) && result == TOOL_OK) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    return result;
}

void tool_file_free(tool_file *file)
{
    for (int64_t i = 0; file->layers != NULL && i < file->num_layers; ++i) {
        for (int64_t j = 0; j < file->layers[i].num_blobs; ++j)
            cblob_blob_destroy(file->layers[i].blobs[j]);
        free(file->layers[i].blobs);
    }
    free(file->layers);
    for (int64_t i = 0; i < file->num_blobs; ++i)
        cblob_blob_destroy(file->blobs[i]);
    free(file->blobs);
    cblob_model_destroy(file->model);
    memset(file, 0, sizeof *file);
}

#define TOOL_ACCUMULATE(CTYPE)                                      \
    do {                                                            \
        const CTYPE *values = data;                                 \
        for (int64_t i = 0; i < count; ++i) {                       \
            const double v = (double)values[i];                     \
            sum += v;                                               \
            asum += fabs(v);                                        \
            sumsq += v * v;                                         \
            low = v < low ? v : low;                                \
            high = v > high ? v : high;                             \
        }                                                           \
    } while (0)

cblob_status tool_stats_compute(cblob_blob *blob, tool_stats *out)
{
    int64_t count = 0;
    cblob_dtype dtype = CBLOB_DTYPE_FLOAT32;
    const void *data = NULL;
    cblob_status status = cblob_blob_count(blob, &count);
    if (status == CBLOB_OK)
        status = cblob_blob_dtype(blob, &dtype);
    if (status == CBLOB_OK && count > 0)
        status = cblob_blob_cpu_ptr(blob, CBLOB_PART_DATA, &data);
    if (status != CBLOB_OK)
        return status;
    double sum = 0, asum = 0, sumsq = 0, low = INFINITY, high = -INFINITY;
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: TOOL_ACCUMULATE(float); break;
    case CBLOB_DTYPE_FLOAT64: TOOL_ACCUMULATE(double); break;
    case CBLOB_DTYPE_INT32: TOOL_ACCUMULATE(int32_t); break;
    case CBLOB_DTYPE_UINT32: TOOL_ACCUMULATE(uint32_t); break;
    default: break;
    }
    *out = (tool_stats){.count = count,
                        .sum = sum,
                        .asum = asum,
                        .sumsq = sumsq,
                        .min = count > 0 ? low : NAN,
                        .max = count > 0 ? high : NAN};
    return CBLOB_OK;
}
