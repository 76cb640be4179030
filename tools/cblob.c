/* The cblob command-line program. */
#include <stdio.h>
#include <string.h>

#include "cblob/cblob.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cblob <command> [arguments]\n"
            "\n"
            "commands:\n"
            "  info       versions, ABI version, BLAS and CPU features in use, the GPU stack\n"
            "  help       this text\n");
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
    fprintf(stderr, "cblob: unknown command '%s' (try 'cblob help')\n", argv[1]);
    return 2;
}
