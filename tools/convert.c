/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob convert: Caffe files to .npy files and folders, .npz and safetensors; .npy files to a
 * .binaryproto; weights (npz, safetensors, a .npy folder, a net) back into a .caffemodel like
 * another; and a net's definition, without its weights, as a prototxt. Every input is opened once, by the library; an output is never one of the inputs, and
 * an existing file of another format is replaced only with --force. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "tool.h"

typedef enum target_format {
    FORMAT_NPY,
    FORMAT_BINARYPROTO,
    FORMAT_NPZ,
    FORMAT_SAFETENSORS,
    FORMAT_CAFFEMODEL,
    FORMAT_PROTOTXT
} target_format;

#define NUM_FORMATS 6
static const char *const format_names[NUM_FORMATS] = {"npy",         "binaryproto", "npz",
                                                      "safetensors", "caffemodel",  "prototxt"};
#define FORMATS "npy, binaryproto, npz, safetensors, caffemodel or prototxt"
#define USAGE_HINT "try 'cblob convert --help'"

typedef struct convert_args {
    const char **inputs;
    int num_inputs;
    const char *format_name, *output, *like, *weights, *dtype_name, *names;
    target_format format;
    cblob_dtype dtype; /* 0: each .npy array's own */
    bool vector, force, allow_missing, npy_names, quiet;
    tool_progress_mode progress;
    bool output_existed; /* something was at the output's name before: what an interrupt leaves */
    /* Where the old spelling left the output: the position among the words of the first word after
     * --to FORMAT (-1: no --to). */
    int word_after_to;
} convert_args;

/* One line on stderr for bad usage or a bad input (tool_fail), exit status 2. */
#define fail(...) tool_fail(TOOL_BAD_INPUT, "convert", __VA_ARGS__)

/* ---- writing one output ----------------------------------------------------------------------- */

/* A library writer's two-call form, for standard output: the bytes are made in memory first. A
 * signal stops the writing between pieces; stdout_started says whether any byte went out. */
typedef cblob_status bytes_fn(const void *what, uint8_t *buffer, size_t buffer_size, size_t *out_size);

static bool stdout_started;

static cblob_status write_stdout(bytes_fn *fn, const void *what)
{
    size_t size = 0;
    TOOL_TRY(fn(what, NULL, 0, &size));
    uint8_t *bytes = malloc(size > 0 ? size : 1);
    if (bytes == NULL)
        return tool_own_failure("convert", "no memory for the %zu bytes to write to standard output", size);
    cblob_status status = fn(what, bytes, size, &size);
    if (status == CBLOB_OK && tool_interrupted() != 0)
        status = TOOL_STOPPED;
    stdout_started = status == CBLOB_OK && size > 0;
    if (status == CBLOB_OK && !tool_write_stdout(bytes, size))
        status = errno == EINTR && tool_interrupted() != 0
                     ? TOOL_STOPPED
                     : tool_own_failure("convert", "standard output: cannot write: %s", strerror(errno));
    free(bytes);
    return status;
}

/* "wrote ...", on standard output, unless --quiet. */
static void say_wrote(const convert_args *args, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void say_wrote(const convert_args *args, const char *format, ...)
{
    if (args->quiet || tool_writes_stdout(args->output))
        return;
    tool_progress_clear();
    va_list list;
    va_start(list, format);
    vprintf(format, list);
    va_end(list);
    tool_stdout_written(true);
}

/* Begins the phase of writing the output (terminal.h). */
static void writing(const convert_args *args)
{
    tool_progress_phase(TOOL_PHASE_WRITE, "writing", tool_is_stdio(args->output) ? "standard output" : args->output);
}

/* ---- what an output may replace --------------------------------------------------------------- */

/* The format a name's extension names (-1: none), and a few that cblob does not write. */
static int extension_format(const char *path, const char **extension)
{
    static const struct {
        const char *extension;
        int format;
    } known[] = {{".npy", FORMAT_NPY},       {".binaryproto", FORMAT_BINARYPROTO}, {".npz", FORMAT_NPZ},
                 {".safetensors", FORMAT_SAFETENSORS}, {".caffemodel", FORMAT_CAFFEMODEL}, {".prototxt", FORMAT_PROTOTXT},
                 {".h5", NUM_FORMATS},       {".hdf5", NUM_FORMATS},               {".pt", NUM_FORMATS},
                 {".pth", NUM_FORMATS},      {".pkl", NUM_FORMATS},                {".onnx", NUM_FORMATS},
                 {".json", NUM_FORMATS}};
    const char *dot = tool_extension(path);
    *extension = dot;
    for (size_t i = 0; dot != NULL && i < sizeof known / sizeof known[0]; ++i)
        if (strcasecmp(dot, known[i].extension) == 0)
            return known[i].format;
    return -1;
}

/* The format a file of that kind is written by. */
static target_format kind_format(cblob_file_kind kind)
{
    switch (kind) {
    case CBLOB_FILE_NET: return FORMAT_CAFFEMODEL;
    case CBLOB_FILE_BLOB:
    case CBLOB_FILE_BLOB_VECTOR: return FORMAT_BINARYPROTO;
    case CBLOB_FILE_NPZ: return FORMAT_NPZ;
    case CBLOB_FILE_SAFETENSORS: return FORMAT_SAFETENSORS;
    default: return FORMAT_NPY;
    }
}

static const char *kind_text(cblob_file_kind kind)
{
    switch (kind) {
    case CBLOB_FILE_NET: return "a Caffe net (.caffemodel)";
    case CBLOB_FILE_BLOB: return "a BlobProto (.binaryproto)";
    case CBLOB_FILE_BLOB_VECTOR: return "a BlobProtoVector";
    case CBLOB_FILE_NPY: return "a NumPy .npy file";
    case CBLOB_FILE_NPZ: return "a NumPy .npz file";
    case CBLOB_FILE_SAFETENSORS: return "a safetensors file";
    default: return "a folder of .npy files";
    }
}

/* Whether a file's first 4 KiB hold text only (no control byte but tab and line ends): a binary
 * Caffe file has some in its first bytes (its tags and lengths). */
static bool is_text_file(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return false;
    unsigned char head[4096];
    const size_t size = fread(head, 1, sizeof head, file);
    fclose(file);
    for (size_t i = 0; i < size; ++i)
        if ((head[i] < 0x20 && head[i] != '\t' && head[i] != '\n' && head[i] != '\r') || head[i] == 0x7f)
            return false;
    return size > 0;
}

/* The output is none of the inputs, names the format it gets, and replaces a file of another
 * format only with --force: checked before anything is read or written. */
static int check_output(const convert_args *args)
{
    const char *output = args->output;
    if (tool_is_stdio(output))
        return TOOL_OK;
    for (int i = 0; i <= args->num_inputs + 1; ++i) {
        const char *input = i < args->num_inputs ? args->inputs[i] : i == args->num_inputs ? args->like : args->weights;
        if (input != NULL && tool_same_file(input, output))
            return fail("%s is the input %s%s (the same file): cblob never writes over an input; name another output",
                        output, input, i == args->num_inputs ? " given to --like" : i > args->num_inputs ? " given to --weights" : "");
    }
    const char *extension = NULL;
    const int named = extension_format(output, &extension);
    const bool one_npy = args->format == FORMAT_NPY && named == FORMAT_NPY;
    if (named >= 0 && named != (int)args->format && !one_npy)
        return fail("%s: its name says %s (%s), but --to %s writes %s: name the output for what it holds, or give "
                    "--to %s", output, named < NUM_FORMATS ? format_names[named] : "a format cblob does not write",
                    extension, args->format_name, args->format_name,
                    named < NUM_FORMATS ? format_names[named] : args->format_name);
    /* Standard output (/dev/stdout redirected to a file) is written through, not replaced: the
     * shell's redirection already chose what happens to the file (> empties it, >> appends). */
    if (tool_writes_stdout(output))
        return TOOL_OK;
    struct stat info;
    if (stat(output, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size == 0 || args->force)
        return TOOL_OK; /* nothing there, a folder, a device, a FIFO, an empty file, or the user's say */
    /* A prototxt replaces text (a prototxt cblob or a person wrote) without --force; a binary file
     * of any kind, a .caffemodel above all, only with it. */
    if (args->format == FORMAT_PROTOTXT && is_text_file(output))
        return TOOL_OK;
    cblob_file_kind kind = CBLOB_FILE_NET;
    if (cblob_file_detect(output, &kind) != CBLOB_OK)
        return fail("%s exists and holds something cblob does not write (%s); replacing it needs --force", output,
                    cblob_last_error_detail());
    if (kind_format(kind) != args->format || args->format == FORMAT_PROTOTXT)
        return fail("%s exists and holds %s; replacing it with %s needs --force", output, kind_text(kind),
                    args->format_name);
    return TOOL_OK;
}

/* ---- Caffe file to .npy ------------------------------------------------------------------------- */

static cblob_status npy_bytes(const void *what, uint8_t *buffer, size_t buffer_size, size_t *out_size)
{
    return cblob_blob_to_npy((cblob_blob *)what, CBLOB_PART_DATA, buffer, buffer_size, out_size);
}

/* The one blob of a file of one blob as one .npy file (OUT.npy, or -), or every blob into a
 * folder with index.json. */
static int to_npy(cblob_context *context, const convert_args *args)
{
    tool_caffe file;
    const int opened = tool_caffe_open(context, "convert", args->inputs[0], 0, args->dtype, &file);
    if (opened != TOOL_OK)
        return opened;
    const char *extension = NULL;
    const bool stdio = tool_is_stdio(args->output);
    const bool one_file = stdio || extension_format(args->output, &extension) == FORMAT_NPY;
    int result = TOOL_OK;
    cblob_status status = CBLOB_OK;
    if (one_file && (file.model != NULL || file.num_blobs != 1)) {
        result = fail("--to npy %s: %s is %s, whose blobs go in a folder: a .npy file holds one blob; name a folder%s",
                      args->output, file.name, kind_text(file.kind), stdio ? ", not standard output" : "");
    } else if (stdio) {
        writing(args);
        status = write_stdout(npy_bytes, file.blobs[0]);
    } else if (one_file) {
        writing(args);
        status = cblob_blob_to_npy_file(file.blobs[0], CBLOB_PART_DATA, args->output);
        if (status == CBLOB_OK)
            say_wrote(args, "wrote %s (the blob of %s)\n", args->output, file.name);
    } else {
        int64_t written = 0;
        writing(args);
        status = cblob_file_to_npy_folder(file.file, CBLOB_EXPORT_DIFF, args->output, &written);
        if (status == CBLOB_OK)
            say_wrote(args, "wrote %" PRId64 " .npy file%s and index.json to %s\n", written, written == 1 ? "" : "s",
                      args->output);
    }
    if (status != CBLOB_OK)
        result = tool_report(status, TOOL_FAILED, "convert");
    tool_caffe_close(&file);
    return result;
}

/* ---- .npy files to a .binaryproto ------------------------------------------------------------- */

typedef struct blob_list {
    cblob_blob **blobs;
    int64_t count;
    bool vector;
} blob_list;

static cblob_status blobs_to_bytes(const void *what, uint8_t *buffer, size_t buffer_size, size_t *out_size)
{
    const blob_list *list = what;
    return list->vector ? cblob_blob_vector_to_proto(list->blobs, list->count, 0, buffer, buffer_size, out_size)
                        : cblob_blob_to_proto(list->blobs[0], 0, buffer, buffer_size, out_size);
}

static cblob_status write_blobs(const blob_list *list, const char *output)
{
    if (tool_is_stdio(output))
        return write_stdout(blobs_to_bytes, list);
    return list->vector ? cblob_blob_vector_to_proto_file(list->blobs, list->count, 0, output)
                        : cblob_blob_to_proto_file(list->blobs[0], 0, output);
}

/* An input's one blob: a .npy file's (or a BlobProto's). */
static int take_blob(cblob_context *context, const convert_args *args, int i, cblob_blob **out)
{
    tool_caffe file;
    const int opened = tool_caffe_open(context, "convert", args->inputs[i], 0, args->dtype, &file);
    if (opened != TOOL_OK)
        return opened;
    int result = TOOL_OK;
    if (file.model != NULL || file.num_blobs != 1)
        result = fail("%s is %s, not a .npy file: --to binaryproto takes .npy files (or one BlobProto as text)",
                      file.name, kind_text(file.kind));
    else {
        cblob_blob_retain(file.blobs[0]);
        *out = file.blobs[0];
    }
    tool_caffe_close(&file);
    return result;
}

static int to_binaryproto(cblob_context *context, const convert_args *args)
{
    blob_list list = {calloc((size_t)args->num_inputs, sizeof *list.blobs), 0, args->vector || args->num_inputs > 1};
    if (list.blobs == NULL)
        return tool_fail(TOOL_FAILED, "convert", "no memory for %d blobs", args->num_inputs);
    int result = TOOL_OK;
    for (; result == TOOL_OK && list.count < args->num_inputs; ++list.count)
        result = take_blob(context, args, (int)list.count, &list.blobs[list.count]);
    cblob_status status = CBLOB_OK;
    if (result == TOOL_OK)
        writing(args);
    if (result == TOOL_OK && (status = write_blobs(&list, args->output)) != CBLOB_OK)
        result = tool_report(status, TOOL_FAILED, "convert");
    else if (result == TOOL_OK)
        say_wrote(args, "wrote %s (%s of %d blob%s)\n", args->output, list.vector ? "BlobProtoVector" : "BlobProto",
                  args->num_inputs, args->num_inputs == 1 ? "" : "s");
    for (int64_t i = 0; i < list.count; ++i)
        cblob_blob_destroy(list.blobs[i]);
    free(list.blobs);
    return result;
}

/* ---- weights of any kind ------------------------------------------------------------------------ */

/* Weights: a Caffe net, an .npz, a safetensors file or a folder of .npy files, as a model. */
static int open_weights(cblob_context *context, const convert_args *args, tool_caffe *out)
{
    const int32_t flags = args->npy_names ? CBLOB_OPEN_NPY_BY_NAME : 0;
    const int opened = tool_caffe_open(context, "convert", args->inputs[0], flags, args->dtype, out);
    if (opened != TOOL_OK)
        return opened;
    if (out->model == NULL) {
        const int result = fail("%s is %s; weights come as a .caffemodel, an .npz, a .safetensors file or a folder of "
                                ".npy files", out->name, kind_text(out->kind));
        tool_caffe_close(out);
        return result;
    }
    if (args->dtype_name != NULL && out->kind != CBLOB_FILE_NPZ && out->kind != CBLOB_FILE_NPY_FOLDER) {
        const int result = fail("--dtype %s: converts .npy values (.npy files, .npz, .npy folders); %s is %s, whose "
                                "values keep their dtype", args->dtype_name, out->name, kind_text(out->kind));
        tool_caffe_close(out);
        return result;
    }
    return TOOL_OK;
}

/* ---- npz and safetensors ------------------------------------------------------------------------ */

typedef struct export_job {
    const cblob_model *model;
    int32_t flags;
    bool npz;
} export_job;

static cblob_status export_to_bytes(const void *what, uint8_t *buffer, size_t buffer_size, size_t *out_size)
{
    const export_job *job = what;
    return job->npz ? cblob_model_to_npz(job->model, job->flags, buffer, buffer_size, out_size)
                    : cblob_model_to_safetensors(job->model, job->flags, buffer, buffer_size, out_size);
}

static cblob_status export_model(const export_job *job, const char *output)
{
    if (tool_is_stdio(output))
        return write_stdout(export_to_bytes, job);
    return job->npz ? cblob_model_to_npz_file(job->model, job->flags, output)
                    : cblob_model_to_safetensors_file(job->model, job->flags, output);
}

/* Says (on stderr: it is not an error) which layers kept <layer>.<index> keys under --names torch. */
static void note_unmapped(const cblob_model *model)
{
    int64_t count = 0;
    if (cblob_model_torch_unmapped(model, NULL, 0, &count) != CBLOB_OK || count == 0)
        return;
    int64_t *layers = malloc((size_t)count * sizeof *layers);
    if (layers == NULL || cblob_model_torch_unmapped(model, layers, count, &count) != CBLOB_OK) {
        free(layers);
        return;
    }
    tool_progress_clear();
    fprintf(stderr, "cblob convert: --names torch: %" PRId64 " layer%s with blobs PyTorch has no names for keep "
            "<layer>.<index> keys:", count, count == 1 ? "" : "s");
    for (int64_t i = 0; i < count && i < 20; ++i) {
        const char *name = "", *type = "";
        cblob_model_layer_name(model, layers[i], &name);
        cblob_model_layer_type(model, layers[i], &type);
        fputs(i > 0 ? ", " : " ", stderr);
        tool_print_escaped(stderr, name, 0);
        fputs(" (", stderr);
        tool_print_escaped(stderr, type, 0);
        fputc(')', stderr);
    }
    if (count > 20)
        fprintf(stderr, " and %" PRId64 " more", count - 20);
    fputc('\n', stderr);
    free(layers);
}

static int to_export(cblob_context *context, const convert_args *args)
{
    tool_caffe weights;
    const int opened = open_weights(context, args, &weights);
    if (opened != TOOL_OK)
        return opened;
    const bool torch = args->names != NULL && strcmp(args->names, "torch") == 0;
    const export_job job = {weights.model, CBLOB_EXPORT_DIFF | (torch ? CBLOB_EXPORT_TORCH_NAMES : 0),
                            args->format == FORMAT_NPZ};
    int result = TOOL_OK;
    writing(args);
    const cblob_status status = export_model(&job, args->output);
    if (status != CBLOB_OK)
        result = tool_report(status, TOOL_FAILED, "convert");
    else
        say_wrote(args, "wrote %s (%s)\n", args->output, format_names[args->format]);
    if (result == TOOL_OK && torch && tool_interrupted() == 0)
        note_unmapped(weights.model);
    tool_caffe_close(&weights);
    return result;
}

/* ---- weights into a .caffemodel like BASE ----------------------------------------------------- */

static cblob_status model_to_bytes(const void *what, uint8_t *buffer, size_t buffer_size, size_t *out_size)
{
    return cblob_model_to_proto(what, 1, buffer, buffer_size, out_size);
}

static cblob_status save_model(const cblob_model *model, const convert_args *args)
{
    writing(args);
    if (tool_is_stdio(args->output))
        return write_stdout(model_to_bytes, model);
    return cblob_model_to_proto_file(model, 1, args->output);
}

static int to_caffemodel(cblob_context *context, const convert_args *args)
{
    tool_caffe base;
    int result = tool_caffe_open(context, "convert", args->like, 0, 0, &base);
    if (result != TOOL_OK)
        return result;
    if (base.kind != CBLOB_FILE_NET) {
        result = fail("--like %s: %s is %s, not a Caffe net", args->like, base.name, kind_text(base.kind));
        tool_caffe_close(&base);
        return result;
    }
    tool_caffe weights;
    if ((result = open_weights(context, args, &weights)) != TOOL_OK) {
        tool_caffe_close(&base);
        return result;
    }
    /* Every layer and shape is checked before anything changes: one message lists every mismatch,
     * and, unless --allow-missing, every blob of BASE the weights give no values. */
    int64_t kept = 0;
    cblob_status status = cblob_model_replace_blobs_with(base.model, weights.model,
                                                         args->allow_missing ? 0 : CBLOB_REPLACE_ALL, &kept);
    if (status != CBLOB_OK)
        result = tool_fail(tool_input_exit(status), "convert", "%s (like %s)%s; nothing was written",
                           cblob_last_error_detail(), base.name,
                           args->allow_missing || strstr(cblob_last_error_detail(), "no values") == NULL
                               ? ""
                               : "; --allow-missing keeps BASE's values for blobs the weights lack");
    else if ((status = save_model(base.model, args)) != CBLOB_OK)
        result = tool_report(status, TOOL_FAILED, "convert");
    else
        say_wrote(args, "wrote %s (%s with the blobs of %s)\n", args->output, base.name, weights.name);
    if (result == TOOL_OK && kept > 0 && tool_interrupted() == 0)
        fprintf(stderr, "cblob convert: --allow-missing: %" PRId64 " blob%s of %s kept %s values: %s has none for "
                "them\n", kept, kept == 1 ? "" : "s", base.name, kept == 1 ? "its" : "their", weights.name);
    tool_caffe_close(&weights);
    tool_caffe_close(&base);
    return result;
}

/* ---- a definition with trained weights attached ------------------------------------------------ */

/* Says on standard error which layers one side of an attach left out, as Caffe logs them: those
 * holding blobs always (weights lost, or a layer left without), the others unless --quiet. */
static void say_unmatched(const convert_args *args, const tool_caffe *definition, const tool_caffe *weights,
                          cblob_attach_list which)
{
    int64_t count = 0;
    if (cblob_model_attach_unmatched(definition->model, weights->model, which, NULL, 0, &count) != CBLOB_OK ||
        count == 0)
        return;
    int64_t *layers = malloc((size_t)count * sizeof *layers);
    if (layers == NULL ||
        cblob_model_attach_unmatched(definition->model, weights->model, which, layers, count, &count) != CBLOB_OK) {
        free(layers);
        return;
    }
    const bool ignored = which == CBLOB_ATTACH_IGNORED;
    const cblob_model *listed = ignored ? weights->model : definition->model;
    for (int64_t i = 0; i < count; ++i) {
        const char *name = "";
        int64_t blobs = 0;
        cblob_model_layer_name(listed, layers[i], &name);
        cblob_model_layer_num_blobs(listed, layers[i], &blobs);
        if (blobs == 0 && args->quiet)
            continue;
        if (ignored)
            fprintf(stderr, "cblob convert: ignoring source layer %s of %s (%" PRId64 " blob%s): %s has no layer of "
                    "that name\n", name, weights->name, blobs, blobs == 1 ? "" : "s", definition->name);
        else
            fprintf(stderr, "cblob convert: layer %s of %s gets no weights (it keeps its %" PRId64 " blob%s): %s has no "
                    "layer of that name\n", name, definition->name, blobs, blobs == 1 ? "" : "s", weights->name);
    }
    free(layers);
}

static int attach_weights(cblob_context *context, const convert_args *args)
{
    tool_caffe definition, weights;
    int result = tool_caffe_open(context, "convert", args->inputs[0], 0, 0, &definition);
    if (result != TOOL_OK)
        return result;
    if (definition.kind != CBLOB_FILE_NET) {
        result = fail("%s is %s; --weights attaches weights to a net's definition (a prototxt or a Caffe net)",
                      definition.name, kind_text(definition.kind));
        tool_caffe_close(&definition);
        return result;
    }
    if ((result = tool_caffe_open(context, "convert", args->weights, 0, 0, &weights)) != TOOL_OK) {
        tool_caffe_close(&definition);
        return result;
    }
    cblob_model *net = NULL;
    cblob_status status = CBLOB_OK;
    if (weights.kind != CBLOB_FILE_NET)
        result = fail("--weights %s: %s is %s, not a Caffe net", args->weights, weights.name, kind_text(weights.kind));
    else if ((status = cblob_model_attach_weights(definition.model, weights.model, &net)) != CBLOB_OK)
        result = tool_fail(tool_input_exit(status), "convert", "%s (%s with the weights of %s); nothing was written",
                           cblob_last_error_detail(), definition.name, weights.name);
    else if ((status = save_model(net, args)) != CBLOB_OK)
        result = tool_report(status, TOOL_FAILED, "convert");
    else
        say_wrote(args, "wrote %s (%s with the weights of %s)\n", args->output, definition.name, weights.name);
    if (result == TOOL_OK && tool_interrupted() == 0) {
        say_unmatched(args, &definition, &weights, CBLOB_ATTACH_IGNORED);
        say_unmatched(args, &definition, &weights, CBLOB_ATTACH_UNFILLED);
    }
    cblob_model_destroy(net);
    tool_caffe_close(&weights);
    tool_caffe_close(&definition);
    return result;
}

/* ---- a net's definition as a prototxt ------------------------------------------------------------ */

/* The library's text calls as write_stdout's two-call form: their length leaves out the NUL they
 * write, so the first call asks for room for it too. */
static cblob_status text_size(const uint8_t *buffer, size_t length, size_t *out_size)
{
    *out_size = buffer == NULL ? length + 1 : length;
    return CBLOB_OK;
}

static cblob_status definition_bytes(const void *what, uint8_t *buffer, size_t size, size_t *out_size)
{
    size_t length = 0;
    TOOL_TRY(cblob_model_to_prototxt(what, (char *)buffer, size, &length));
    return text_size(buffer, length, out_size);
}

static cblob_status blob_text_bytes(const void *what, uint8_t *buffer, size_t size, size_t *out_size)
{
    size_t length = 0;
    TOOL_TRY(cblob_blob_to_prototxt((cblob_blob *)what, 0, (char *)buffer, size, &length));
    return text_size(buffer, length, out_size);
}

/* A BlobProto (a mean file) as protobuf's text format. */
static int blob_to_prototxt(const convert_args *args, tool_caffe *file)
{
    writing(args);
    const cblob_status status = tool_is_stdio(args->output) ? write_stdout(blob_text_bytes, file->blobs[0])
                                                            : cblob_blob_to_prototxt_file(file->blobs[0], 0, args->output);
    if (status != CBLOB_OK)
        return tool_report(status, TOOL_FAILED, "convert");
    say_wrote(args, "wrote %s (the BlobProto of %s as text)\n", args->output, file->name);
    return TOOL_OK;
}

/* The net's definition, without its weights: a .caffemodel opened lazily (no value is read); or a
 * BlobProto as text. */
static int to_prototxt(cblob_context *context, const convert_args *args)
{
    tool_caffe net;
    int result = tool_caffe_open(context, "convert", args->inputs[0], CBLOB_OPEN_LAZY, 0, &net);
    if (result != TOOL_OK)
        return result;
    if (net.kind == CBLOB_FILE_BLOB && net.num_blobs == 1) {
        result = blob_to_prototxt(args, &net);
        tool_caffe_close(&net);
        return result;
    }
    if (net.kind != CBLOB_FILE_NET) {
        result = fail("%s is %s; --to prototxt writes a Caffe net's definition (a .caffemodel) or one BlobProto (a "
                      ".binaryproto) as text", net.name, kind_text(net.kind));
        tool_caffe_close(&net);
        return result;
    }
    writing(args);
    const cblob_status status = tool_is_stdio(args->output) ? write_stdout(definition_bytes, net.model)
                                                            : cblob_model_to_prototxt_file(net.model, args->output);
    if (status != CBLOB_OK)
        result = tool_report(status, TOOL_FAILED, "convert");
    else
        say_wrote(args, "wrote %s (the definition of %s, without its weights)\n", args->output, net.name);
    tool_caffe_close(&net);
    return result;
}

/* ---- the command -------------------------------------------------------------------------------- */

/* --to FORMAT: one word (since 1.2; an output right after it is the old spelling, see resolve_output). */
static int parse_to(const char *format, convert_args *args)
{
    size_t f = 0;
    while (f < NUM_FORMATS && strcasecmp(format, format_names[f]) != 0)
        ++f;
    if (f == NUM_FORMATS)
        return fail("%s: unknown format (" FORMATS ")", format);
    args->format = (target_format)f;
    args->format_name = format_names[f];
    args->word_after_to = args->num_inputs;
    return TOOL_OK;
}

/* An option that takes a value, given once. */
static int set_value(const char **slot, const char *name, const char *value)
{
    if (*slot != NULL)
        return fail("%s is given twice (%s and %s)", name, *slot, value);
    *slot = value;
    return TOOL_OK;
}

/* The option at argv[*i], by the table the manual gives (generated/tools/help.h). */
static int parse_option(int argc, char **argv, int *i, convert_args *args)
{
    const char *value = NULL;
    switch (tool_parse_option("convert", tool_convert_options, tool_convert_num_options, argc, argv, i, &value)) {
    case TOOL_CONVERT_TO:
        if (args->format_name != NULL)
            return fail("--to is given twice (%s and %s)", args->format_name, value);
        return parse_to(value, args);
    case TOOL_CONVERT_OUTPUT: return set_value(&args->output, "-o", value);
    case TOOL_CONVERT_LIKE: return set_value(&args->like, "--like", value);
    case TOOL_CONVERT_WEIGHTS: return set_value(&args->weights, "--weights", value);
    case TOOL_CONVERT_NAMES: return set_value(&args->names, "--names", value);
    case TOOL_CONVERT_DTYPE: return set_value(&args->dtype_name, "--dtype", value);
    case TOOL_CONVERT_VECTOR: args->vector = true; return TOOL_OK;
    case TOOL_CONVERT_FORCE: args->force = true; return TOOL_OK;
    case TOOL_CONVERT_ALLOW_MISSING: args->allow_missing = true; return TOOL_OK;
    case TOOL_CONVERT_NPY_NAMES: args->npy_names = true; return TOOL_OK;
    case TOOL_CONVERT_QUIET: args->quiet = true; return TOOL_OK;
    case TOOL_CONVERT_PROGRESS: args->progress = TOOL_PROGRESS_ALWAYS; return TOOL_OK;
    case TOOL_CONVERT_HELP: return TOOL_OK; /* cblob.c prints the help before the command runs */
    default: return TOOL_BAD_INPUT;
    }
}

static int parse_args(int argc, char **argv, convert_args *args)
{
    bool options_done = false;
    for (int i = 0; i < argc; ++i) {
        if (!options_done && strcmp(argv[i], "--") == 0)
            options_done = true;
        else if (!options_done && argv[i][0] == '-' && argv[i][1] != '\0') {
            const int status = parse_option(argc, argv, &i, args);
            if (status != TOOL_OK)
                return status;
        } else {
            args->inputs[args->num_inputs++] = argv[i];
        }
    }
    return TOOL_OK;
}

/* The output: -o OUT; or, in the old spelling `IN... --to FORMAT OUT`, the last word when it comes
 * right after --to FORMAT and an input came before --to. Anything else could take an input for the
 * output (`--to npz IN OUT` wrote over IN before 1.2), so it is refused with the spelling that says
 * which is which. */
static int resolve_output(convert_args *args)
{
    if (args->output != NULL)
        return TOOL_OK;
    const bool old_spelling = args->format_name != NULL && args->word_after_to > 0 &&
                              args->word_after_to == args->num_inputs - 1;
    if (old_spelling) {
        args->output = args->inputs[--args->num_inputs];
        return TOOL_OK;
    }
    const char *const output_kind = args->format == FORMAT_NPY ? "folder (DIR)" : "file (OUT, or - for standard output)";
    if (args->format_name != NULL && args->word_after_to == 0 && args->num_inputs == 1)
        return fail("--to %s %s: the input is missing, or the output: cblob convert IN -o OUT --to %s (%s)",
                    args->format_name, args->inputs[0], args->format_name, USAGE_HINT);
    if (args->num_inputs >= 2)
        return fail("which is the output? %s was given last; say it with -o: cblob convert %s%s -o %s%s%s", 
                    args->inputs[args->num_inputs - 1], args->inputs[0], args->num_inputs > 2 ? " ..." : "",
                    args->inputs[args->num_inputs - 1], args->format_name != NULL ? " --to " : "",
                    args->format_name != NULL ? args->format_name : "");
    if (args->format_name != NULL)
        return fail("--to %s: the output %s is missing: -o OUT, or --to %s OUT after the input (%s)", args->format_name,
                    output_kind, args->format_name, USAGE_HINT);
    return fail("the output is missing: -o OUT, or --to FORMAT OUT after the input (%s)", USAGE_HINT);
}

/* --to from the output's name when it is not given. */
static int resolve_format(convert_args *args)
{
    if (args->format_name != NULL)
        return TOOL_OK;
    const char *extension = NULL;
    const int named = extension_format(args->output, &extension);
    if (named < 0 || named >= NUM_FORMATS)
        return fail("--to FORMAT is missing, and %s's name does not say one (" FORMATS ")", args->output);
    args->format = (target_format)named;
    args->format_name = format_names[named];
    return TOOL_OK;
}

static bool dtype_parse(const char *text, cblob_dtype *out)
{
    static const struct {
        const char *name;
        cblob_dtype dtype;
    } dtypes[] = {{"float32", CBLOB_DTYPE_FLOAT32}, {"float64", CBLOB_DTYPE_FLOAT64}, {"int32", CBLOB_DTYPE_INT32},
                  {"uint32", CBLOB_DTYPE_UINT32}};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i)
        if (strcmp(text, dtypes[i].name) == 0) {
            *out = dtypes[i].dtype;
            return true;
        }
    return false;
}

/* What the options say together, checked before any file is read. */
static int check_args(convert_args *args)
{
    static const char *const input_of[] = {"a Caffe file", ".npy files", "weights", "weights", "weights", "a Caffe net"};
    if (args->num_inputs == 0 && args->output == NULL && args->format_name == NULL)
        return fail("the input and the output are missing: cblob convert IN -o OUT [--to FORMAT] (%s)", USAGE_HINT);
    if (args->format_name != NULL && args->num_inputs == 0)
        return fail("--to %s: the input is missing: %s (%s)", args->format_name, input_of[args->format], USAGE_HINT);
    int status = resolve_output(args);
    if (status == TOOL_OK)
        status = resolve_format(args);
    if (status != TOOL_OK)
        return status;
    if (args->num_inputs == 0)
        return fail("--to %s: the input is missing: %s (%s)", args->format_name, input_of[args->format], USAGE_HINT);
    if (args->num_inputs > 1 && args->format != FORMAT_BINARYPROTO)
        return fail("%s: --to %s takes one input (%s was given first)", args->inputs[1], args->format_name,
                    args->inputs[0]);
    if (args->vector && args->format != FORMAT_BINARYPROTO)
        return fail("--vector: only --to binaryproto writes a BlobProtoVector");
    if (args->like != NULL && args->format != FORMAT_CAFFEMODEL)
        return fail("--like %s: only --to caffemodel takes a base net", args->like);
    if (args->weights != NULL && args->format != FORMAT_CAFFEMODEL)
        return fail("--weights %s: only --to caffemodel attaches weights to a definition", args->weights);
    if (args->weights != NULL && args->like != NULL)
        return fail("--weights %s and --like %s: give one (--like BASE: IN's blobs into BASE; --weights W: W's "
                    "blobs into the definition IN)", args->weights, args->like);
    if (args->like == NULL && args->weights == NULL && args->format == FORMAT_CAFFEMODEL)
        return fail("--to caffemodel: --like BASE.caffemodel (the net whose blobs the weights replace; everything "
                    "else of it is kept) or --weights W.caffemodel (the trained net whose blobs the definition IN "
                    "gets) is missing");
    if (args->allow_missing && (args->format != FORMAT_CAFFEMODEL || args->weights != NULL))
        return fail("--allow-missing: only --to caffemodel --like BASE replaces blobs");
    if (args->names != NULL && (args->format != FORMAT_SAFETENSORS || (strcmp(args->names, "torch") != 0 &&
                                                                       strcmp(args->names, "caffe") != 0)))
        return fail("--names %s: --to safetensors takes --names torch or caffe", args->names);
    if (args->dtype_name != NULL && args->format == FORMAT_PROTOTXT)
        return fail("--dtype %s: --to prototxt writes a net's definition, which holds no values", args->dtype_name);
    if (args->dtype_name != NULL && (args->format == FORMAT_NPY || !dtype_parse(args->dtype_name, &args->dtype)))
        return fail("--dtype %s: %s", args->dtype_name,
                    args->format == FORMAT_NPY ? "--dtype converts .npy inputs; --to npy writes blobs as they are"
                                               : "a blob holds float32, float64, int32 or uint32");
    int stdin_uses = (args->like != NULL && tool_is_stdio(args->like)) +
                     (args->weights != NULL && tool_is_stdio(args->weights));
    for (int i = 0; i < args->num_inputs; ++i)
        stdin_uses += tool_is_stdio(args->inputs[i]);
    if (stdin_uses > 1)
        return fail("-: standard input can be read once only");
    const int progress = tool_progress_option("convert", args->quiet, &args->progress);
    if (progress != TOOL_OK)
        return progress;
    struct stat info;
    args->output_existed = !tool_is_stdio(args->output) && lstat(args->output, &info) == 0;
    return check_output(args);
}

/* The one line a signal's stop ends with: what was left as it was. */
static int interrupted(const convert_args *args, int status)
{
    if (tool_is_stdio(args->output))
        return tool_interrupt_exit("convert", stdout_started ? "standard output got part of the output"
                                                             : "nothing was written to standard output");
    if (status != TOOL_INTERRUPTED) /* the signal came once the work was done */
        return tool_interrupt_exit("convert", "after %s was written whole", args->output);
    if (args->output_existed)
        return tool_interrupt_exit("convert", "%s was left as it was", args->output);
    return tool_interrupt_exit("convert", "nothing was written (%s was not made)", args->output);
}

int command_convert(int argc, char **argv)
{
    convert_args args = {.inputs = calloc((size_t)argc + 1, sizeof *args.inputs), .word_after_to = -1};
    if (args.inputs == NULL)
        return tool_fail(TOOL_FAILED, "convert", "out of memory");
    args.progress = TOOL_PROGRESS_AUTO;
    int status = parse_args(argc, argv, &args);
    if (status == TOOL_OK)
        status = check_args(&args);
    cblob_context *context = NULL;
    if (status == TOOL_OK) {
        tool_progress_setup("convert", args.progress);
        context = tool_context("convert");
        status = context != NULL ? TOOL_OK : TOOL_FAILED;
    }
    if (status == TOOL_OK) {
        switch (args.format) {
        case FORMAT_NPY: status = to_npy(context, &args); break;
        case FORMAT_BINARYPROTO: status = to_binaryproto(context, &args); break;
        case FORMAT_NPZ:
        case FORMAT_SAFETENSORS: status = to_export(context, &args); break;
        case FORMAT_CAFFEMODEL:
            status = args.weights != NULL ? attach_weights(context, &args) : to_caffemodel(context, &args);
            break;
        case FORMAT_PROTOTXT: status = to_prototxt(context, &args); break;
        }
    }
    cblob_context_destroy(context);
    if (status == TOOL_INTERRUPTED || (status == TOOL_OK && tool_interrupted() != 0))
        status = interrupted(&args, status);
    free(args.inputs);
    return status;
}
