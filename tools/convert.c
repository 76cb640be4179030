/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob convert: Caffe files to .npy folders, .npz and safetensors; .npy files to a .binaryproto;
 * and weights (npz, safetensors, a .npy folder, a net) back into a .caffemodel like another. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "npy.h"
#include "npy_folder.h"
#include "status.h"
#include "tool.h"

typedef enum target_format { FORMAT_NPY, FORMAT_BINARYPROTO, FORMAT_NPZ, FORMAT_SAFETENSORS, FORMAT_CAFFEMODEL } target_format;

static const char *const format_names[] = {"npy", "binaryproto", "npz", "safetensors", "caffemodel"};
#define FORMATS "npy, binaryproto, npz, safetensors or caffemodel"

typedef struct convert_args {
    const char **inputs;
    int num_inputs;
    const char *format_name, *output, *like, *dtype_name, *names;
    target_format format;
    cblob_dtype dtype;
    bool vector;
} convert_args;

/* ---- writing one file (or standard output) -------------------------------------------------- */

/* A library writer's two-call form, for standard output: the bytes are made in memory (the model's
 * size again: npz goes back to each member's header once it is written, which a pipe cannot). */
typedef cblob_status bytes_fn(const void *what, uint8_t *buffer, size_t buffer_size, size_t *out_size);

static cblob_status write_stdout(bytes_fn *fn, const void *what)
{
    size_t size = 0;
    CB_TRY(fn(what, NULL, 0, &size));
    uint8_t *bytes = malloc(size > 0 ? size : 1);
    if (bytes == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for the %zu bytes to write to standard output", size);
    cb_output *output = NULL;
    cblob_status status = fn(what, bytes, size, &size);
    if (status == CBLOB_OK)
        status = cb_output_open_fd(STDOUT_FILENO, "standard output", &output);
    if (status == CBLOB_OK && (status = cb_output_write(output, bytes, size)) != CBLOB_OK)
        cb_output_abort(output);
    else if (status == CBLOB_OK)
        status = cb_output_commit(output);
    free(bytes);
    return status;
}

/* ---- Caffe file to a .npy folder ------------------------------------------------------------ */

static int to_npy(cblob_context *context, const convert_args *args)
{
    tool_caffe file;
    cblob_status status = tool_caffe_open(context, args->inputs[0], &file);
    if (status != CBLOB_OK)
        return tool_report(tool_input_exit(status), "convert");
    int64_t written = 0;
    status = npy_folder_write(&file, args->output, &written);
    tool_caffe_close(&file);
    if (status != CBLOB_OK)
        return tool_report(TOOL_FAILED, "convert");
    printf("wrote %" PRId64 " .npy file%s and index.json to %s\n", written, written == 1 ? "" : "s", args->output);
    return TOOL_OK;
}

/* ---- .npy files to a .binaryproto ------------------------------------------------------------ */

static const char *kind_text(tool_kind kind)
{
    static const char *const names[] = {[TOOL_KIND_NET] = "a Caffe net (.caffemodel)",
                                        [TOOL_KIND_BLOB] = "a BlobProto (.binaryproto)",
                                        [TOOL_KIND_BLOB_VECTOR] = "a BlobProtoVector",
                                        [TOOL_KIND_NPY] = "a .npy file",
                                        [TOOL_KIND_NPZ] = "a NumPy .npz file",
                                        [TOOL_KIND_SAFETENSORS] = "a safetensors file"};
    return names[kind];
}

static cblob_status read_npy_input(cblob_context *context, const char *path, cblob_dtype dtype, cblob_blob **out)
{
    const char *name = tool_input_name(path);
    cb_input input;
    CB_TRY(tool_read(path, &input));
    tool_kind kind = TOOL_KIND_NPY;
    npy_array array;
    cblob_status status = tool_identify(name, input.bytes, input.size, &kind);
    if (status == CBLOB_OK && kind != TOOL_KIND_NPY)
        status = cb_fail(CBLOB_ERR_PARSE, "%s is %s, not a .npy file: --to binaryproto takes .npy files", name,
                         kind_text(kind));
    if (status == CBLOB_OK)
        status = npy_parse(name, input.bytes, input.size, &array);
    if (status == CBLOB_OK)
        status = npy_to_blob(context, name, &array, dtype, out);
    cb_input_close(&input);
    return status;
}

typedef struct blob_list {
    cblob_blob **blobs;
    int64_t count;
    bool vector;
} blob_list;

static cblob_status blobs_to_bytes(const void *what, uint8_t *buffer, size_t buffer_size, size_t *out_size)
{
    const blob_list *list = what;
    const cblob_status status = list->vector
                                    ? cblob_blob_vector_to_proto(list->blobs, list->count, 0, buffer, buffer_size, out_size)
                                    : cblob_blob_to_proto(list->blobs[0], 0, buffer, buffer_size, out_size);
    return status == CBLOB_OK ? CBLOB_OK : tool_library_error(status, "standard output");
}

static cblob_status write_blobs(const blob_list *list, const char *output)
{
    if (tool_is_stdio(output))
        return write_stdout(blobs_to_bytes, list);
    const cblob_status status = list->vector ? cblob_blob_vector_to_proto_file(list->blobs, list->count, 0, output)
                                             : cblob_blob_to_proto_file(list->blobs[0], 0, output);
    return status == CBLOB_OK ? CBLOB_OK : tool_library_error(status, output);
}

static int to_binaryproto(cblob_context *context, const convert_args *args)
{
    blob_list list = {calloc((size_t)args->num_inputs, sizeof *list.blobs), 0, args->vector || args->num_inputs > 1};
    if (list.blobs == NULL)
        return tool_fail(TOOL_FAILED, "convert", "no memory for %d blobs", args->num_inputs);
    cblob_status status = CBLOB_OK;
    for (; status == CBLOB_OK && list.count < args->num_inputs; ++list.count) {
        tool_progress("convert", list.count + 1, args->num_inputs, args->inputs[list.count]);
        status = read_npy_input(context, args->inputs[list.count], args->dtype, &list.blobs[list.count]);
    }
    tool_progress_done();
    int result = status == CBLOB_OK ? TOOL_OK : tool_report(tool_input_exit(status), "convert");
    if (result == TOOL_OK && write_blobs(&list, args->output) != CBLOB_OK)
        result = tool_report(TOOL_FAILED, "convert");
    else if (result == TOOL_OK && !tool_is_stdio(args->output))
        printf("wrote %s (%s of %d blob%s)\n", args->output, list.vector ? "BlobProtoVector" : "BlobProto",
               args->num_inputs, args->num_inputs == 1 ? "" : "s");
    for (int64_t i = 0; i < list.count; ++i)
        cblob_blob_destroy(list.blobs[i]);
    free(list.blobs);
    return result;
}

/* ---- any weights as a model ------------------------------------------------------------------- */

static bool is_folder(const char *path)
{
    struct stat info;
    return !tool_is_stdio(path) && stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

/* npz and safetensors bytes, read already. */
static cblob_status open_export(cblob_context *context, const char *name, tool_kind kind, const cb_input *input,
                                cblob_model **out)
{
    const cblob_status status = kind == TOOL_KIND_NPZ ? cblob_model_open_npz(context, input->bytes, input->size, out)
                                                      : cblob_model_open_safetensors(context, input->bytes, input->size, out);
    return status == CBLOB_OK ? CBLOB_OK : tool_library_error(status, name);
}

/* Weights of any kind as a model: a Caffe net, npz, safetensors or a folder of .npy files (whose
 * layers are named to be found in base, when given). */
static cblob_status open_weights(cblob_context *context, const char *path, const cblob_model *base, cblob_dtype dtype,
                                 cblob_model **out)
{
    if (is_folder(path))
        return npy_folder_read(context, path, base, dtype, out);
    const char *name = tool_input_name(path);
    cb_input input;
    CB_TRY(tool_read(path, &input));
    tool_kind kind = TOOL_KIND_NET;
    cblob_status status = tool_identify(name, input.bytes, input.size, &kind);
    if (status == CBLOB_OK && (kind == TOOL_KIND_NPZ || kind == TOOL_KIND_SAFETENSORS))
        status = open_export(context, name, kind, &input, out);
    else if (status == CBLOB_OK && kind == TOOL_KIND_NET)
        status = tool_net_open(context, path, &input, out);
    else if (status == CBLOB_OK)
        status = cb_fail(CBLOB_ERR_PARSE, "%s is %s; weights come as a .caffemodel, an .npz, a .safetensors file or "
                         "a folder of .npy files", name, kind_text(kind));
    cb_input_close(&input);
    return status;
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
    const cblob_status status = job->npz ? cblob_model_to_npz(job->model, job->flags, buffer, buffer_size, out_size)
                                         : cblob_model_to_safetensors(job->model, job->flags, buffer, buffer_size, out_size);
    return status == CBLOB_OK ? CBLOB_OK : tool_library_error(status, "standard output");
}

static cblob_status export_model(const export_job *job, const char *output)
{
    if (tool_is_stdio(output))
        return write_stdout(export_to_bytes, job);
    const cblob_status status = job->npz ? cblob_model_to_npz_file(job->model, job->flags, output)
                                         : cblob_model_to_safetensors_file(job->model, job->flags, output);
    return status == CBLOB_OK ? CBLOB_OK : tool_library_error(status, output);
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
    cblob_model *model = NULL;
    cblob_status status = open_weights(context, args->inputs[0], NULL, args->dtype, &model);
    if (status != CBLOB_OK)
        return tool_report(tool_input_exit(status), "convert");
    const bool torch = args->names != NULL && strcmp(args->names, "torch") == 0;
    const export_job job = {model, CBLOB_EXPORT_DIFF | (torch ? CBLOB_EXPORT_TORCH_NAMES : 0),
                            args->format == FORMAT_NPZ};
    int result = TOOL_OK;
    if (export_model(&job, args->output) != CBLOB_OK)
        result = tool_report(TOOL_FAILED, "convert");
    else if (!tool_is_stdio(args->output))
        printf("wrote %s (%s)\n", args->output, args->format_name);
    if (result == TOOL_OK && torch)
        note_unmapped(model);
    cblob_model_destroy(model);
    return result;
}

/* ---- weights into a .caffemodel like BASE ----------------------------------------------------- */

static cblob_status model_to_bytes(const void *what, uint8_t *buffer, size_t buffer_size, size_t *out_size)
{
    const cblob_status status = cblob_model_to_proto(what, 1, buffer, buffer_size, out_size);
    return status == CBLOB_OK ? CBLOB_OK : tool_library_error(status, "standard output");
}

static cblob_status save_model(const cblob_model *model, const char *output)
{
    if (tool_is_stdio(output))
        return write_stdout(model_to_bytes, model);
    const cblob_status status = cblob_model_to_proto_file(model, 1, output);
    return status == CBLOB_OK ? CBLOB_OK : tool_library_error(status, output);
}

static int to_caffemodel(cblob_context *context, const convert_args *args)
{
    tool_caffe base;
    cblob_status status = tool_caffe_open(context, args->like, &base);
    if (status == CBLOB_OK && base.kind != TOOL_KIND_NET) {
        status = cb_fail(CBLOB_ERR_PARSE, "--like %s: %s is %s, not a Caffe net", args->like, base.name,
                         kind_text(base.kind));
        tool_caffe_close(&base);
    }
    if (status != CBLOB_OK)
        return tool_report(tool_input_exit(status), "convert");
    cblob_model *weights = NULL;
    status = open_weights(context, args->inputs[0], base.model, args->dtype, &weights);
    int result = status == CBLOB_OK ? TOOL_OK : tool_report(tool_input_exit(status), "convert");
    /* Every layer and shape is checked before anything changes: one message lists every mismatch. */
    if (result == TOOL_OK && (status = cblob_model_replace_blobs(base.model, weights)) != CBLOB_OK) {
        tool_library_error(status, tool_input_name(args->inputs[0]));
        result = tool_fail(tool_input_exit(status), "convert", "%s (like %s); nothing was written", tool_error(),
                           base.name);
    }
    if (result == TOOL_OK && save_model(base.model, args->output) != CBLOB_OK)
        result = tool_report(TOOL_FAILED, "convert");
    else if (result == TOOL_OK && !tool_is_stdio(args->output))
        printf("wrote %s (%s with the blobs of %s)\n", args->output, base.name, tool_input_name(args->inputs[0]));
    cblob_model_destroy(weights);
    tool_caffe_close(&base);
    return result;
}

/* ---- the command -------------------------------------------------------------------------------- */

#define USAGE_HINT "try 'cblob convert --help'"

/* An option's value: "--name value" or "--name=value"; NULL (after saying so) when missing. */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
    const size_t length = strlen(name);
    if (argv[*i][length] == '=')
        return argv[*i] + length + 1;
    if (*i + 1 < argc)
        return argv[++*i];
    tool_fail(TOOL_BAD_INPUT, "convert", "%s: its value is missing (%s)", name, USAGE_HINT);
    return NULL;
}

static bool is_option(const char *arg, const char *name)
{
    const size_t length = strlen(name);
    return strncmp(arg, name, length) == 0 && (arg[length] == '\0' || arg[length] == '=');
}

/* --to FORMAT OUTPUT. */
static int parse_to(int argc, char **argv, int *i, convert_args *args)
{
    const char *format = option_value(argc, argv, i, "--to");
    if (format == NULL)
        return TOOL_BAD_INPUT;
    args->format_name = format;
    size_t f = 0;
    while (f < sizeof format_names / sizeof format_names[0] && strcasecmp(format, format_names[f]) != 0)
        ++f;
    if (f == sizeof format_names / sizeof format_names[0])
        return tool_fail(TOOL_BAD_INPUT, "convert", "%s: unknown format (" FORMATS ")", format);
    args->format = (target_format)f;
    const char *output_kind = args->format == FORMAT_NPY ? "folder (DIR)" : "file (OUT, or - for standard output)";
    /* "cblob convert in.caffemodel out --to npy": the output was given, but before the format. */
    if (*i + 1 >= argc && args->num_inputs >= 2)
        return tool_fail(TOOL_BAD_INPUT, "convert", "--to %s: the output %s comes after the format (was %s meant "
                         "as the output? %s)", format, output_kind, args->inputs[args->num_inputs - 1], USAGE_HINT);
    if (*i + 1 >= argc)
        return tool_fail(TOOL_BAD_INPUT, "convert", "--to %s: the output %s is missing (%s)", format, output_kind,
                         USAGE_HINT);
    args->output = argv[++*i];
    return TOOL_OK;
}

static int parse_option(int argc, char **argv, int *i, convert_args *args)
{
    const char *arg = argv[*i];
    if (is_option(arg, "--to"))
        return parse_to(argc, argv, i, args);
    if (strcmp(arg, "--vector") == 0) {
        args->vector = true;
        return TOOL_OK;
    }
    const char **slot = is_option(arg, "--like") ? &args->like : is_option(arg, "--dtype") ? &args->dtype_name
                        : is_option(arg, "--names")                                        ? &args->names
                                                                                           : NULL;
    if (slot == NULL)
        return tool_fail(TOOL_BAD_INPUT, "convert", "%s: unknown option (%s)", arg, USAGE_HINT);
    const char *name = is_option(arg, "--like") ? "--like" : is_option(arg, "--dtype") ? "--dtype" : "--names";
    *slot = option_value(argc, argv, i, name);
    return *slot != NULL ? TOOL_OK : TOOL_BAD_INPUT;
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
        } else
            args->inputs[args->num_inputs++] = argv[i];
    }
    return TOOL_OK;
}

/* What the options say together, checked before any file is read. */
static int check_args(convert_args *args)
{
    static const char *const input_of[] = {"a Caffe file", ".npy files", "weights", "weights", "weights"};
    if (args->format_name == NULL)
        return tool_fail(TOOL_BAD_INPUT, "convert", "--to FORMAT OUTPUT is missing (%s)", USAGE_HINT);
    if (args->num_inputs == 0)
        return tool_fail(TOOL_BAD_INPUT, "convert", "--to %s: the input is missing: %s (%s)", args->format_name,
                         input_of[args->format], USAGE_HINT);
    if (args->num_inputs > 1 && args->format != FORMAT_BINARYPROTO)
        return tool_fail(TOOL_BAD_INPUT, "convert", "%s: --to %s takes one input (%s was given first)",
                         args->inputs[1], args->format_name, args->inputs[0]);
    if (args->vector && args->format != FORMAT_BINARYPROTO)
        return tool_fail(TOOL_BAD_INPUT, "convert", "--vector: only --to binaryproto writes a BlobProtoVector");
    if (args->like != NULL && args->format != FORMAT_CAFFEMODEL)
        return tool_fail(TOOL_BAD_INPUT, "convert", "--like %s: only --to caffemodel takes a base net", args->like);
    if (args->like == NULL && args->format == FORMAT_CAFFEMODEL)
        return tool_fail(TOOL_BAD_INPUT, "convert", "--to caffemodel: --like BASE.caffemodel is missing (the net "
                         "whose blobs the weights replace; everything else of it is kept)");
    if (args->names != NULL && (args->format != FORMAT_SAFETENSORS || (strcmp(args->names, "torch") != 0 &&
                                                                       strcmp(args->names, "caffe") != 0)))
        return tool_fail(TOOL_BAD_INPUT, "convert", "--names %s: --to safetensors takes --names torch or caffe",
                         args->names);
    if (args->dtype_name != NULL && (args->format == FORMAT_NPY || !npy_dtype_parse(args->dtype_name, &args->dtype)))
        return tool_fail(TOOL_BAD_INPUT, "convert", "--dtype %s: %s", args->dtype_name,
                         args->format == FORMAT_NPY ? "--dtype converts .npy inputs; --to npy writes blobs as they are"
                                                    : "a blob holds float32, float64, int32 or uint32");
    if (args->format == FORMAT_NPY && tool_is_stdio(args->output))
        return tool_fail(TOOL_BAD_INPUT, "convert", "--to npy -: npy writes a folder, not standard output");
    int stdin_uses = args->like != NULL && tool_is_stdio(args->like);
    for (int i = 0; i < args->num_inputs; ++i)
        stdin_uses += tool_is_stdio(args->inputs[i]);
    if (stdin_uses > 1)
        return tool_fail(TOOL_BAD_INPUT, "convert", "-: standard input can be read once only");
    return TOOL_OK;
}

int command_convert(int argc, char **argv)
{
    convert_args args = {.inputs = calloc((size_t)argc + 1, sizeof *args.inputs), .dtype = NPY_DTYPE_AS_IS};
    if (args.inputs == NULL)
        return tool_fail(TOOL_FAILED, "convert", "out of memory");
    int status = parse_args(argc, argv, &args);
    if (status == TOOL_OK)
        status = check_args(&args);
    cblob_context *context = NULL;
    if (status == TOOL_OK && cblob_context_create(&context) != CBLOB_OK)
        status = tool_fail(TOOL_FAILED, "convert", "%s", cblob_last_error_message());
    if (status == TOOL_OK) {
        switch (args.format) {
        case FORMAT_NPY: status = to_npy(context, &args); break;
        case FORMAT_BINARYPROTO: status = to_binaryproto(context, &args); break;
        case FORMAT_NPZ:
        case FORMAT_SAFETENSORS: status = to_export(context, &args); break;
        case FORMAT_CAFFEMODEL: status = to_caffemodel(context, &args); break;
        }
    }
    cblob_context_destroy(context);
    free(args.inputs);
    return status;
}
