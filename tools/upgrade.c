/* SPDX-License-Identifier: BSD-2-Clause */
/* cblob upgrade: a V0 or V1 net (a .caffemodel or a prototxt) in Caffe's current format, as
 * Caffe's upgrade_net_proto_binary and upgrade_net_proto_text write it: the library's
 * cblob_model_upgrade, written by the library's one writer of each form. The output is never the
 * input, and an existing V0 or V1 net is never replaced (the arguments given the wrong way round). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "commands.h"
#include "tool.h"

#define USAGE_HINT "try 'cblob upgrade --help'"

typedef struct upgrade_args {
    const char *input, *output, *format_name;
    bool text; /* prototxt (else caffemodel) */
    bool quiet, output_existed;
    tool_progress_mode progress;
} upgrade_args;

/* One line on stderr for bad usage or a bad input (tool_fail), exit status 2. */
#define fail(...) tool_fail(TOOL_BAD_INPUT, "upgrade", __VA_ARGS__)

/* Whether a name's extension says text: .prototxt or .pbtxt (1), a binary model (0), or nothing (-1). */
static int extension_text(const char *path)
{
    const char *dot = tool_extension(path);
    if (dot == NULL)
        return -1;
    if (strcasecmp(dot, ".prototxt") == 0 || strcasecmp(dot, ".pbtxt") == 0)
        return 1;
    if (strcasecmp(dot, ".caffemodel") == 0 || strcasecmp(dot, ".binaryproto") == 0)
        return 0;
    return -1;
}

static const char *format_text(cblob_net_format format)
{
    return format == CBLOB_NET_FORMAT_V1 ? "V1 or V0 (field layers = 2)" : "the current format (field layer = 100)";
}

static int parse_args(int argc, char **argv, upgrade_args *args)
{
    const char *words[2] = {NULL, NULL};
    int num_words = 0;
    bool options = true;
    for (int i = 0; i < argc; ++i) {
        if (options && strcmp(argv[i], "--") == 0) {
            options = false;
            continue;
        }
        if (options && argv[i][0] == '-' && argv[i][1] != '\0') {
            const char *value = NULL;
            switch (tool_parse_option("upgrade", tool_upgrade_options, tool_upgrade_num_options, argc, argv, &i,
                                      &value)) {
            case TOOL_UPGRADE_TO:
                if (args->format_name != NULL)
                    return fail("--to is given twice (%s and %s)", args->format_name, value);
                if (strcasecmp(value, "prototxt") != 0 && strcasecmp(value, "caffemodel") != 0)
                    return fail("--to %s: upgrade writes caffemodel (binary, with the weights) or prototxt (the "
                                "definition, as text)", value);
                args->format_name = value;
                args->text = strcasecmp(value, "prototxt") == 0;
                break;
            case TOOL_UPGRADE_QUIET: args->quiet = true; break;
            case TOOL_UPGRADE_PROGRESS: args->progress = TOOL_PROGRESS_ALWAYS; break;
            case TOOL_UPGRADE_HELP: break;
            default: return TOOL_BAD_INPUT;
            }
            continue;
        }
        if (num_words == 2)
            return fail("%s: one input and one output: cblob upgrade IN OUT (%s)", argv[i], USAGE_HINT);
        words[num_words++] = argv[i];
    }
    if (num_words < 2)
        return fail("%s: cblob upgrade IN OUT (%s)", num_words == 0 ? "the input and the output are missing"
                                                                      : "the output is missing", USAGE_HINT);
    args->input = words[0];
    args->output = words[1];
    return TOOL_OK;
}

/* What the arguments say together, checked before the input is read. */
static int check_args(upgrade_args *args)
{
    const int progress = tool_progress_option("upgrade", args->quiet, &args->progress);
    if (progress != TOOL_OK)
        return progress;
    if (tool_is_stdio(args->output))
        return fail("-: upgrade writes a file (OUT); standard output is not one");
    const int named = extension_text(args->output);
    if (args->format_name == NULL)
        args->text = named == 1;
    else if (named >= 0 && named != (int)args->text)
        return fail("%s: its name says %s, but --to %s writes %s: name the output for what it holds", args->output,
                    named ? "a prototxt" : "a binary model", args->format_name,
                    args->text ? "a prototxt" : "a binary model");
    struct stat info;
    const bool input_exists = tool_is_stdio(args->input) || stat(args->input, &info) == 0;
    args->output_existed = lstat(args->output, &info) == 0;
    if (!input_exists && args->output_existed)
        return fail("%s: no such file, but %s exists: the input comes first (cblob upgrade IN OUT)", args->input,
                    args->output);
    if (strcmp(args->input, args->output) == 0 || tool_same_file(args->input, args->output))
        return fail("%s is the input %s (the same file): cblob never writes over an input; name another output",
                    args->output, args->input);
    return TOOL_OK;
}

/* An existing OUT that holds a V0 or V1 net is what a user gave as the input, the wrong way round:
 * never replaced (the user removes it first if that is meant). */
static int check_existing_output(cblob_context *context, const upgrade_args *args)
{
    struct stat info;
    if (stat(args->output, &info) != 0 || !S_ISREG(info.st_mode) || info.st_size == 0)
        return TOOL_OK;
    cblob_model *old = NULL;
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    cblob_file_kind kind = CBLOB_FILE_NET;
    if (cblob_file_detect(args->output, &kind) != CBLOB_OK || kind != CBLOB_FILE_NET)
        return args->text ? TOOL_OK
                          : fail("%s exists and is not a Caffe net; upgrade replaces only a net (remove it first if "
                                 "you mean it)", args->output);
    cblob_status status = extension_text(args->output) == 1 ? cblob_model_open_prototxt_file(context, args->output, &old)
                                                           : cblob_model_open_file_lazy(context, args->output, &old);
    if (status == CBLOB_OK)
        status = cblob_model_format(old, &format);
    cblob_model_destroy(old);
    if (status == CBLOB_OK && format != CBLOB_NET_FORMAT_V2)
        return fail("%s exists and holds a V1 or V0 net, which upgrade would replace: are the arguments the wrong way "
                    "round? cblob upgrade IN OUT (remove %s first if you mean it)", args->output, args->output);
    return TOOL_OK;
}

static int upgrade(cblob_context *context, const upgrade_args *args)
{
    int result = check_existing_output(context, args);
    if (result != TOOL_OK)
        return result;
    tool_caffe net;
    if ((result = tool_caffe_open(context, "upgrade", args->input, CBLOB_OPEN_LAZY, 0, &net)) != TOOL_OK)
        return result;
    if (net.kind != CBLOB_FILE_NET || net.model == NULL) {
        result = fail("%s is not a Caffe net (a .caffemodel or a prototxt); upgrade turns V0 and V1 nets into the "
                      "current format", net.name);
        tool_caffe_close(&net);
        return result;
    }
    cblob_net_format format = CBLOB_NET_FORMAT_V2;
    int64_t num_layers = 0;
    cblob_model *upgraded = NULL;
    cblob_status status = cblob_model_format(net.model, &format);
    if (status == CBLOB_OK)
        status = cblob_model_upgrade(net.model, &upgraded);
    if (status != CBLOB_OK) {
        result = tool_fail(tool_input_exit(status), "upgrade", "%s: %s; nothing was written", net.name,
                           cblob_last_error_detail());
        tool_caffe_close(&net);
        return result;
    }
    if (format == CBLOB_NET_FORMAT_V2) {
        tool_progress_clear();
        fprintf(stderr, "cblob upgrade: %s is in the current format already (Caffe's tools write it all the same; "
                "so does upgrade, with input fields and BatchNorm param specs upgraded if it has them)\n", net.name);
    }
    tool_progress_phase(TOOL_PHASE_WRITE, "writing", args->output);
    status = args->text ? cblob_model_to_prototxt_file(upgraded, args->output)
                        : cblob_model_to_proto_file(upgraded, 1, args->output);
    if (status == CBLOB_OK)
        status = cblob_model_num_layers(upgraded, &num_layers);
    if (status != CBLOB_OK) {
        result = tool_report(status, TOOL_FAILED, "upgrade");
    } else if (!args->quiet) {
        tool_progress_clear();
        printf("wrote %s (%s: %s -> the current format, %lld layers, %s)\n", args->output, net.name,
               format_text(format), (long long)num_layers,
               args->text ? "the definition, without weights" : "the blobs bit for bit");
        tool_stdout_written(true);
    }
    cblob_model_destroy(upgraded);
    tool_caffe_close(&net);
    return result;
}

int command_upgrade(int argc, char **argv)
{
    upgrade_args args = {.progress = TOOL_PROGRESS_AUTO};
    int status = parse_args(argc, argv, &args);
    if (status == TOOL_OK)
        status = check_args(&args);
    cblob_context *context = NULL;
    if (status == TOOL_OK) {
        tool_progress_setup("upgrade", args.progress);
        context = tool_context("upgrade");
        status = context != NULL ? TOOL_OK : TOOL_FAILED;
    }
    if (status == TOOL_OK)
        status = upgrade(context, &args);
    cblob_context_destroy(context);
    if (status == TOOL_INTERRUPTED || (status == TOOL_OK && tool_interrupted() != 0))
        status = args.output_existed ? tool_interrupt_exit("upgrade", "%s was left as it was", args.output)
                                     : tool_interrupt_exit("upgrade", "nothing was written (%s was not made)",
                                                           args.output);
    return status;
}
