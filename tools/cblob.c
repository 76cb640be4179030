/* SPDX-License-Identifier: BSD-2-Clause */
/* The cblob command-line program: dispatch, help and versions. The help is rendered from the
 * program's manual, docs/cblob.1.md (generated/tools/help.c). */
#include <stdio.h>
#include <string.h>

#include "cblob/cblob.h"
#include "commands.h"
#include "tool.h"

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
    {"info", command_info, tool_info_help},
    {"inspect", command_inspect, tool_inspect_help},
    {"convert", command_convert, tool_convert_help},
    {"diff", command_diff, tool_diff_help},
    {"upgrade", command_upgrade, tool_upgrade_help},
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
        fputs(tool_main_help, stdout);
        return TOOL_OK;
    }
    const command *c = find_command(argv[0]);
    if (c == NULL)
        return tool_fail(TOOL_BAD_INPUT, "help", "%s: unknown command (info, inspect, convert, diff or upgrade)", argv[0]);
    fputs(c->help, stdout);
    return TOOL_OK;
}

int main(int argc, char **argv)
{
    tool_signals_install();
    if (argc < 2) {
        fputs(tool_main_help, stderr);
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
