/* SPDX-License-Identifier: BSD-2-Clause */
/* The cblob command-line program. */
#include <stdio.h>
#include <string.h>

#include "cblob/cblob.h"
#include "commands.h"
#include "tool.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cblob <command> [arguments]\n"
            "\n"
            "commands:\n"
            "  info                       versions, ABI version, BLAS and CPU features in use, the GPU stack\n"
            "  inspect [--json] FILE      what a Caffe file holds: a .caffemodel (NetParameter, V2 or V1),\n"
            "                             a .binaryproto (BlobProto) or a BlobProtoVector, found from its\n"
            "                             contents; each layer with its blobs' shapes, counts and data\n"
            "                             statistics (sums in double). --json prints one JSON object:\n"
            "                             {file, kind, format, name, layers: [{name, type, blobs}], blobs}\n"
            "                             with each blob as {shape, count, dtype, has_diff, sum, asum,\n"
            "                             sumsq, min, max} (null for min/max of an empty blob)\n"
            "  convert FILE --to npy DIR  every blob of a Caffe file as a .npy file in DIR (created if\n"
            "                             missing): <layer>_<index>.npy for a net (characters other than\n"
            "                             letters, digits, '.', '-', '_' in layer names become '_'),\n"
            "                             blob_<index>.npy for blob files; a blob's diff, when the file\n"
            "                             has one, as <...>_diff.npy\n"
            "  convert FILE.npy... [--vector] --to binaryproto OUT\n"
            "                             .npy files (little-endian float32, float64, int32 or uint32,\n"
            "                             C order) to one BlobProto file, or to a BlobProtoVector when\n"
            "                             given several files or --vector\n"
            "  help                       this text\n"
            "\n"
            "exit status: 0 done, 1 the work failed (for example, an output could not be written),\n"
            "2 bad usage or a missing, unreadable or corrupt input file (one line on stderr names it).\n"
            "On a terminal, long work shows its progress on stderr.\n");
}

static int command_info(void)
{
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
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "info") == 0)
        return command_info();
    if (strcmp(argv[1], "inspect") == 0)
        return command_inspect(argc - 2, argv + 2);
    if (strcmp(argv[1], "convert") == 0)
        return command_convert(argc - 2, argv + 2);
    fprintf(stderr, "cblob: unknown command '%s' (try 'cblob help')\n", argv[1]);
    return TOOL_BAD_INPUT;
}
