/* SPDX-License-Identifier: BSD-2-Clause */
#include "tool.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* ---- errors ------------------------------------------------------------------------------- */

int tool_fail(int exit_status, const char *command, const char *format, ...)
{
    tool_progress_clear();
    fprintf(stderr, "cblob %s: ", command);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    return exit_status;
}

int tool_library_fail(int exit_status, const char *command)
{
    return tool_fail(exit_status, command, "%s", cblob_last_error_detail());
}

int tool_input_exit(cblob_status status)
{
    return status == CBLOB_ERR_OUT_OF_MEMORY || status == TOOL_REPORTED ? TOOL_FAILED : TOOL_BAD_INPUT;
}

cblob_status tool_own_failure(const char *command, const char *format, ...)
{
    tool_progress_clear();
    fprintf(stderr, "cblob %s: ", command);
    va_list args;
    va_start(args, format);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    return TOOL_REPORTED;
}

int tool_report(cblob_status status, int exit_status, const char *command)
{
    /* A stop the program asked for (a signal) is said by the command, with what it left as it was. */
    if (status == TOOL_STOPPED || (status == CBLOB_ERR_CANCELLED && tool_interrupted() != 0))
        return TOOL_INTERRUPTED;
    return status == TOOL_REPORTED ? exit_status : tool_library_fail(exit_status, command);
}

/* ---- options ------------------------------------------------------------------------------ */

int tool_parse_option(const char *command, const tool_option *table, size_t count, int argc, char **argv, int *i,
                const char **value)
{
    const char *arg = argv[*i];
    for (size_t k = 0; k < count; ++k) {
        const size_t length = strlen(table[k].name);
        if (strncmp(arg, table[k].name, length) != 0 || (arg[length] != '\0' && arg[length] != '='))
            continue;
        *value = NULL;
        if (table[k].value == NULL && arg[length] == '=') {
            tool_fail(TOOL_BAD_INPUT, command, "%s takes no value (try 'cblob %s --help')", table[k].name, command);
            return -1;
        }
        if (table[k].value != NULL && arg[length] == '=') {
            *value = arg + length + 1;
        } else if (table[k].value != NULL && *i + 1 < argc) {
            *value = argv[++*i];
        } else if (table[k].value != NULL) {
            tool_fail(TOOL_BAD_INPUT, command, "%s %s: its value is missing (try 'cblob %s --help')", table[k].name,
                      table[k].value, command);
            return -1;
        }
        return table[k].id;
    }
    tool_fail(TOOL_BAD_INPUT, command, "%s: unknown option (try 'cblob %s --help')", arg, command);
    return -1;
}

int tool_progress_option(const char *command, bool quiet, tool_progress_mode *mode)
{
    if (quiet && *mode == TOOL_PROGRESS_ALWAYS)
        return tool_fail(TOOL_BAD_INPUT, command, "--quiet and --progress: give one or the other");
    if (quiet)
        *mode = TOOL_PROGRESS_NEVER;
    return TOOL_OK;
}

/* ---- inputs and outputs ------------------------------------------------------------------- */

bool tool_is_stdio(const char *path)
{
    return strcmp(path, "-") == 0;
}

bool tool_writes_stdout(const char *path)
{
    struct stat output, standard;
    return tool_is_stdio(path) || (stat(path, &output) == 0 && fstat(STDOUT_FILENO, &standard) == 0 &&
                                   output.st_dev == standard.st_dev && output.st_ino == standard.st_ino);
}

const char *tool_extension(const char *path)
{
    const char *slash = strrchr(path, '/');
    return strrchr(slash != NULL ? slash + 1 : path, '.');
}

bool tool_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return !tool_is_stdio(a) && !tool_is_stdio(b) && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

const char *tool_input_name(const char *path)
{
    return tool_is_stdio(path) ? "standard input" : path;
}

cblob_context *tool_context(const char *command)
{
    cblob_context *context = NULL;
    if (cblob_context_create(&context) != CBLOB_OK) {
        tool_fail(TOOL_FAILED, command, "%s", cblob_last_error_detail());
        return NULL;
    }
    cblob_context_set_progress(context, tool_library_progress, NULL);
    return context;
}

cblob_status tool_open(cblob_context *context, const char *path, int32_t flags, cblob_dtype dtype, cblob_file **out)
{
    tool_progress_phase(TOOL_PHASE_READ, "reading", tool_input_name(path));
    if (tool_is_stdio(path))
        return cblob_file_open_fd(context, STDIN_FILENO, "standard input", flags, dtype, out);
    return cblob_file_open(context, path, flags, dtype, out);
}

bool tool_write_stdout(const uint8_t *bytes, size_t size)
{
    tool_progress_clear();
    while (size > 0) {
        if (tool_interrupted() != 0) {
            errno = EINTR;
            return false;
        }
        const size_t piece = size < TOOL_PIECE_BYTES ? size : TOOL_PIECE_BYTES;
        const ssize_t n = write(STDOUT_FILENO, bytes, piece);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        bytes += n;
        size -= (size_t)n;
    }
    return true;
}

int tool_caffe_open(cblob_context *context, const char *command, const char *path, int32_t flags, cblob_dtype dtype,
                    tool_caffe *out)
{
    tool_caffe file = {.name = tool_input_name(path)};
    cblob_status status = tool_open(context, path, flags, dtype, &file.file);
    struct stat info;
    /* /dev/stdin, a pipe or a FIFO named as a file: the program's way to read one is "-". */
    if (status == CBLOB_ERR_IO && !tool_is_stdio(path) && stat(path, &info) == 0 &&
        (S_ISFIFO(info.st_mode) || S_ISCHR(info.st_mode)))
        return tool_fail(TOOL_BAD_INPUT, command, "%s (give - to read standard input)", cblob_last_error_detail());
    if (status == CBLOB_ERR_CANCELLED && tool_interrupted() != 0)
        return TOOL_INTERRUPTED;
    if (status != CBLOB_OK)
        return tool_library_fail(tool_input_exit(status), command);
    cblob_file_get_kind(file.file, &file.kind);
    if (cblob_file_model(file.file, &file.model) != CBLOB_OK) {
        cblob_file_num_blobs(file.file, &file.num_blobs);
        if ((file.blobs = calloc((size_t)file.num_blobs + 1, sizeof *file.blobs)) == NULL) {
            tool_caffe_close(&file);
            return tool_fail(TOOL_FAILED, command, "no memory for %" PRId64 " blobs", file.num_blobs);
        }
        for (int64_t i = 0; status == CBLOB_OK && i < file.num_blobs; ++i)
            status = cblob_file_blob(file.file, i, &file.blobs[i]);
    }
    if (status != CBLOB_OK) {
        tool_caffe_close(&file);
        return tool_library_fail(TOOL_FAILED, command);
    }
    *out = file;
    return TOOL_OK;
}

void tool_caffe_close(tool_caffe *file)
{
    for (int64_t i = 0; file->blobs != NULL && i < file->num_blobs; ++i)
        cblob_blob_destroy(file->blobs[i]);
    free(file->blobs);
    cblob_file_destroy(file->file);
    *file = (tool_caffe){0};
}

/* ---- blobs -------------------------------------------------------------------------------- */

tool_blob tool_model_blob(const cblob_model *model, int64_t layer, int64_t index)
{
    return (tool_blob){.model = model, .layer = layer, .index = index};
}

tool_blob tool_handle_blob(cblob_blob *blob)
{
    return (tool_blob){.handle = blob};
}

static bool handle_has_diff(const cblob_blob *blob)
{
    cblob_head head = CBLOB_HEAD_UNINITIALIZED;
    return cblob_blob_head(blob, CBLOB_PART_DIFF, &head) == CBLOB_OK && head != CBLOB_HEAD_UNINITIALIZED;
}

cblob_status tool_blob_facts_of(const tool_blob *blob, tool_blob_facts *out)
{
    tool_blob_facts facts = {0};
    int32_t has_diff = 0;
    cblob_status status;
    if (blob->handle != NULL) {
        status = cblob_blob_shape(blob->handle, CBLOB_MAX_AXES, facts.dims, &facts.num_axes);
        if (status == CBLOB_OK)
            status = cblob_blob_dtype(blob->handle, &facts.dtype);
        has_diff = handle_has_diff(blob->handle);
    } else {
        status = cblob_model_layer_blob_shape(blob->model, blob->layer, blob->index, CBLOB_MAX_AXES, facts.dims,
                                              &facts.num_axes);
        if (status == CBLOB_OK)
            status = cblob_model_layer_blob_dtype(blob->model, blob->layer, blob->index, &facts.dtype);
        if (status == CBLOB_OK)
            status = cblob_model_layer_blob_has_diff(blob->model, blob->layer, blob->index, &has_diff);
    }
    if (status != CBLOB_OK)
        return status;
    facts.count = 1;
    for (int32_t i = 0; i < facts.num_axes; ++i)
        facts.count *= facts.dims[i]; /* the library checked that it fits */
    facts.has_diff = has_diff != 0;
    *out = facts;
    return CBLOB_OK;
}

size_t tool_dtype_size(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

cblob_status tool_blob_read(const tool_blob *blob, cblob_part part, int64_t start, int64_t count, void *buffer,
                            size_t buffer_size)
{
    if (blob->handle == NULL) {
        const cblob_status status = cblob_model_layer_blob_read(blob->model, blob->layer, blob->index, part, start,
                                                                count, buffer, buffer_size);
        return status;
    }
    cblob_dtype dtype = CBLOB_DTYPE_FLOAT32;
    const void *values = NULL;
    cblob_status status = cblob_blob_dtype(blob->handle, &dtype);
    if (status == CBLOB_OK && count > 0)
        status = cblob_blob_cpu_ptr(blob->handle, part, &values);
    if (status != CBLOB_OK)
        return status;
    if (count > 0)
        memcpy(buffer, (const char *)values + (size_t)start * tool_dtype_size(dtype), (size_t)count * tool_dtype_size(dtype));
    return CBLOB_OK;
}

#define TOOL_ACCUMULATE(CTYPE)                                      \
    do {                                                            \
        const CTYPE *values = (const CTYPE *)piece;                 \
        for (int64_t i = 0; i < n; ++i) {                           \
            const double v = (double)values[i];                     \
            stats.sum += v;                                         \
            stats.asum += fabs(v);                                  \
            stats.sumsq += v * v;                                   \
            low = v < low ? v : low;                                \
            high = v > high ? v : high;                             \
        }                                                           \
    } while (0)

cblob_status tool_stats_compute(const tool_blob *blob, const tool_blob_facts *facts, tool_stats *out)
{
    static double piece[TOOL_PIECE_BYTES / sizeof(double)];
    const int64_t per_piece = (int64_t)(sizeof piece / tool_dtype_size(facts->dtype));
    tool_stats stats = {0};
    double low = INFINITY, high = -INFINITY;
    for (int64_t start = 0; start < facts->count; start += per_piece) {
        if (tool_interrupted() != 0)
            return TOOL_STOPPED;
        const int64_t n = facts->count - start < per_piece ? facts->count - start : per_piece;
        const cblob_status status = tool_blob_read(blob, CBLOB_PART_DATA, start, n, piece, sizeof piece);
        if (status != CBLOB_OK)
            return status;
        tool_progress_add(n * (int64_t)tool_dtype_size(facts->dtype));
        switch (facts->dtype) {
        case CBLOB_DTYPE_FLOAT32: TOOL_ACCUMULATE(float); break;
        case CBLOB_DTYPE_FLOAT64: TOOL_ACCUMULATE(double); break;
        case CBLOB_DTYPE_INT32: TOOL_ACCUMULATE(int32_t); break;
        case CBLOB_DTYPE_UINT32: TOOL_ACCUMULATE(uint32_t); break;
        default: break;
        }
    }
    stats.min = facts->count > 0 ? low : NAN;
    stats.max = facts->count > 0 ? high : NAN;
    *out = stats;
    return CBLOB_OK;
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

void tool_shape_text(const tool_blob_facts *facts, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int32_t i = 0; i < facts->num_axes && used < size; ++i)
        used += (size_t)snprintf(out + used, size - used, "%s%" PRId64, i > 0 ? "x" : "", facts->dims[i]);
    if (facts->num_axes == 0)
        snprintf(out, size, "()");
}
