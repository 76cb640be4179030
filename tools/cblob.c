/* SPDX-License-Identifier: BSD-2-Clause */
/* The cblob command-line program: dispatch, help and versions. */
#include <stdio.h>
#include <string.h>

#include "cblob/cblob.h"
#include "commands.h"
#include "tool.h"

static const char info_help[] =
    "usage: cblob info\n"
    "\n"
    "Prints the library's version and ABI version, the BLAS library and CPU features in use, and\n"
    "what was found of the GPU stack (CUDA driver, NVRTC, cuBLAS).\n";

static const char inspect_help[] =
    "usage: cblob inspect [--json] [--params] [--shapes] FILE\n"
    "\n"
    "What a Caffe file holds: a .caffemodel (NetParameter, V2, V1 or V0), a .binaryproto (BlobProto)\n"
    "or a BlobProtoVector, found from its contents (FILE - reads standard input). A table lists each\n"
    "layer with its type, its bottoms -> tops, and its blobs' shapes, counts, dtypes and data\n"
    "statistics (min, max, sum, accumulated in double); names are shown with C escapes for control\n"
    "characters, bytes that are not UTF-8 and backslashes, so nothing in a file reaches the\n"
    "terminal raw.\n"
    "\n"
    "  --params   each layer's parameters too (convolution_param, ...), as JSON on a line of its own\n"
    "  --shapes   no statistics: no value is read, and a .caffemodel named by its path is opened\n"
    "             lazily (its structure only), which lists a large model in a fraction of the time\n"
    "  --json     one JSON object instead (schema 2, docs/inspect-schema-2.json), ASCII only:\n"
    "             {\"schema\": 2, \"file\", \"kind\": \"net\" | \"blob\" | \"blob_vector\", \"format\": \"V1\" |\n"
    "             \"V2\" | null, \"name\", \"layers\": [{\"name\", \"type\", \"bottoms\", \"tops\", \"phase\":\n"
    "             \"TRAIN\" | \"TEST\" | null, \"include\", \"exclude\", \"param\", \"params\", \"blobs\"}],\n"
    "             \"blobs\"} with each blob as {\"shape\", \"count\", \"dtype\", \"has_diff\", \"sum\", \"asum\",\n"
    "             \"sumsq\", \"min\", \"max\"} (null for the min and max of an empty blob); \"blobs\" holds\n"
    "             a blob file's blobs, \"layers\" a net's. Names that are not UTF-8 have U+FFFD in place\n"
    "             of each bad byte. \"params\" is always there with --json.\n";

static const char convert_help[] =
    "usage: cblob convert FILE --to npy DIR\n"
    "       cblob convert FILE.npy... [--vector] [--dtype T] --to binaryproto OUT\n"
    "       cblob convert WEIGHTS --to npz OUT\n"
    "       cblob convert WEIGHTS [--names torch] --to safetensors OUT\n"
    "       cblob convert WEIGHTS --like BASE.caffemodel --to caffemodel OUT\n"
    "\n"
    "  --to npy DIR        every blob of a Caffe file (net or blob file) as a .npy file in DIR (made\n"
    "                      when missing): <layer>_<index>.npy, its diff (when the file has one) as\n"
    "                      <layer>_<index>_diff.npy, blob_<index>.npy for blob files; and index.json\n"
    "                      mapping each file to its layer name, layer index, blob index, part (data or\n"
    "                      diff), dtype and shape. Layer names become file names safe on any file\n"
    "                      system: characters other than letters, digits, '.', '-', '_' become '_',\n"
    "                      names longer than 100 bytes are cut and end in ~ and a hash, and names that\n"
    "                      would collide (even ignoring case) get _L<layer index> appended to the later\n"
    "                      one. Files are made inside DIR only (a link planted there is replaced, never\n"
    "                      followed), each appears whole or not at all.\n"
    "  --to binaryproto OUT  .npy files (little-endian float32, float64, int32 or uint32, C order) as\n"
    "                      one BlobProto, or a BlobProtoVector when given several files or --vector\n"
    "  --dtype T           convert .npy values of other dtypes (int64, uint64, int16, uint16, int8,\n"
    "                      uint8, bool, float16, or one of the four) to T (float32, float64, int32,\n"
    "                      uint32), refusing a value that does not fit: an integer T cannot hold\n"
    "                      exactly, a float out of T's range, a fraction or an out-of-range value for\n"
    "                      an integer T\n"
    "  --to npz OUT        a net's blobs as one NumPy .npz (numpy.load reads it): keys <layer>/<index>,\n"
    "                      diffs as <layer>/<index>/diff; a repeated layer name's later layers are\n"
    "                      <layer>@<layer index>\n"
    "  --to safetensors OUT  the same as safetensors: keys <layer>.<index> (diffs <key>.diff);\n"
    "                      --names torch gives PyTorch's names (Convolution, Deconvolution,\n"
    "                      InnerProduct and Scale: weight, bias; BatchNorm: running_mean, running_var,\n"
    "                      scaled by Caffe's factor; PReLU: weight) and says which layers it could not\n"
    "                      map; __metadata__ holds the net's name, format and each layer's type\n"
    "  --like BASE --to caffemodel OUT\n"
    "                      BASE with its blobs replaced by the weights' (matched by layer name and\n"
    "                      blob index; a .npy folder's index.json matches by layer index first), every\n"
    "                      shape checked first: one error lists every mismatch and nothing is written.\n"
    "                      Everything else of BASE is kept byte for byte.\n"
    "\n"
    "WEIGHTS is a Caffe net (.caffemodel), an .npz, a .safetensors file or a folder of .npy files (as\n"
    "--to npy writes it; without index.json, files named <layer>_<index>.npy). - as an input reads\n"
    "standard input (once), as OUT writes standard output (the output is then made in memory\n"
    "first). Files are written atomically: a temporary beside OUT renamed over it once complete; a\n"
    "link is followed to its target, whose mode is kept; a device or FIFO is written in place.\n";

static const char main_help[] =
    "usage: cblob <command> [arguments]\n"
    "       cblob <command> --help       a command's options and output\n"
    "       cblob --version\n"
    "\n"
    "commands:\n"
    "  info                              versions, ABI version, BLAS, CPU features, the GPU stack\n"
    "  inspect [--json] [--params] [--shapes] FILE\n"
    "                                    what a Caffe file holds: layers, bottoms -> tops, blobs\n"
    "  convert FILE --to npy DIR         blobs as .npy files, with index.json\n"
    "  convert FILE.npy... --to binaryproto OUT\n"
    "  convert WEIGHTS --to npz|safetensors OUT\n"
    "  convert WEIGHTS --like BASE.caffemodel --to caffemodel OUT\n"
    "  help [COMMAND]                    this text, or a command's\n"
    "\n"
    "exit status: 0 done, 1 the work failed (for example, an output could not be written),\n"
    "2 bad usage or a missing, unreadable or corrupt input file (one line on stderr names it).\n"
    "On a terminal, long work shows its progress on stderr.\n";

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static int command_info(int argc, char **argv)
{
    if (argc > 0)
        return tool_fail(TOOL_BAD_INPUT, "info", "%s: unexpected argument (cblob info takes none)", argv[0]);
    const uint32_t abi = cblob_abi_version();
    printf("cblob %s\n", cblob_version());
    printf("abi:  %u.%u (header %d.%d)\n", (unsigned)(abi >> 16), (unsigned)(abi & 0xffff),
           CBLOB_ABI_VERSION_MAJOR, CBLOB_ABI_VERSION_MINOR);
    printf("blas: %s\n", cblob_blas_info());
    printf("cpu:  %s\n", cblob_cpu_features());
    char gpu[16384];
    size_t length = 0;
    if (cblob_gpu_report(gpu, sizeof gpu, &length) == CBLOB_OK)
        fputs(gpu, stdout);
    return TOOL_OK;
}

static const command commands[] = {
    {"info", command_info, info_help},
    {"inspect", command_inspect, inspect_help},
    {"convert", command_convert, convert_help},
};

#define NUM_COMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < NUM_COMMANDS; ++i)
        if (strcmp(name, commands[i].name) == 0)
            return &commands[i];
    return NULL;
}

static bool is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* -h or --help among a command's options (not after "--"). */
static bool asks_for_help(int argc, char **argv)
{
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; ++i)
        if (is_help(argv[i]))
            return true;
    return false;
}

static int help(int argc, char **argv)
{
    if (argc == 0) {
        fputs(main_help, stdout);
        return TOOL_OK;
    }
    const command *c = find_command(argv[0]);
    if (c == NULL)
        return tool_fail(TOOL_BAD_INPUT, "help", "%s: unknown command (info, inspect or convert)", argv[0]);
    fputs(c->help, stdout);
    return TOOL_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(main_help, stderr);
        return TOOL_BAD_INPUT;
    }
    if (strcmp(argv[1], "help") == 0 || is_help(argv[1]))
        return help(argc - 2, argv + 2);
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("cblob %s (ABI %u.%u)\n", cblob_version(), (unsigned)(cblob_abi_version() >> 16),
               (unsigned)(cblob_abi_version() & 0xffff));
        return TOOL_OK;
    }
    const command *c = find_command(argv[1]);
    if (c == NULL) {
        fprintf(stderr, "cblob: unknown %s '%s' (try 'cblob help')\n", argv[1][0] == '-' ? "option" : "command",
                argv[1]);
        return TOOL_BAD_INPUT;
    }
    if (asks_for_help(argc - 2, argv + 2)) {
        fputs(c->help, stdout);
        return TOOL_OK;
    }
    return c->run(argc - 2, argv + 2);
}
