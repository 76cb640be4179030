/* SPDX-License-Identifier: BSD-2-Clause */
/* A test double of NVRTC (built as libnvrtc.so.13, for tests only), used where the CUDA toolkit
 * is not installed, so that the backend's host-side logic is tested everywhere. It does not
 * compile: it lists the source's cblob_* kernels in a small image the fake driver accepts (a
 * cubin-shaped ELF header followed by the names, or PTX-shaped text), and fails on `#error`
 * like a compiler would. Tests that need real output skip when the toolkit is absent. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "fake_cuda_internal.h"

#define ERROR_INVALID_INPUT 3
#define ERROR_INVALID_OPTION 5

struct _nvrtcProgram {
    char *source;
    char log[256];
    unsigned char *output;
    size_t output_size;
    bool ptx;
};

static const int archs[] = {75, 80, 86, 87, 89, 90, 100, 120};

FAKE_API cbnv_result nvrtcVersion(int *major, int *minor)
{
    *major = 13;
    *minor = 0;
    return CBNV_SUCCESS;
}

FAKE_API const char *nvrtcGetErrorString(cbnv_result result)
{
    return result == CBNV_SUCCESS ? "NVRTC_SUCCESS" : result == CBNV_ERROR_COMPILATION ? "NVRTC_ERROR_COMPILATION"
                                                                                        : "NVRTC_ERROR_INVALID_INPUT";
}

FAKE_API cbnv_result nvrtcGetNumSupportedArchs(int *count)
{
    *count = (int)(sizeof archs / sizeof archs[0]);
    return CBNV_SUCCESS;
}

FAKE_API cbnv_result nvrtcGetSupportedArchs(int *out)
{
    memcpy(out, archs, sizeof archs);
    return CBNV_SUCCESS;
}

FAKE_API cbnv_result nvrtcCreateProgram(cbnv_program *program, const char *source, const char *name, int header_count,
                                        const char *const *headers, const char *const *include_names)
{
    (void)name;
    (void)headers;
    (void)include_names;
    if (program == NULL || source == NULL || header_count != 0)
        return ERROR_INVALID_INPUT;
    cbnv_program made = calloc(1, sizeof *made);
    if (made == NULL || (made->source = strdup(source)) == NULL) {
        free(made);
        return 1;
    }
    *program = made;
    return CBNV_SUCCESS;
}

FAKE_API cbnv_result nvrtcDestroyProgram(cbnv_program *program)
{
    if (program == NULL || *program == NULL)
        return ERROR_INVALID_INPUT;
    free((*program)->source);
    free((*program)->output);
    free(*program);
    *program = NULL;
    return CBNV_SUCCESS;
}

/* Every `cblob_<name>(` in the source, one per line. */
static size_t kernel_names(const char *source, char *out, size_t size)
{
    size_t used = 0;
    for (const char *at = strstr(source, "cblob_"); at != NULL; at = strstr(at + 1, "cblob_")) {
        size_t length = strspn(at, "abcdefghijklmnopqrstuvwxyz0123456789_");
        if (at[length] != '(' || (at > source && (at[-1] == '_' || at[-1] == '.')))
            continue;
        if (used + length + 2 < size) {
            memcpy(out + used, at, length);
            used += length;
            out[used++] = '\n';
        }
    }
    out[used] = '\0';
    return used;
}

FAKE_API cbnv_result nvrtcCompileProgram(cbnv_program program, int option_count, const char *const *options)
{
    const char *arch = NULL;
    for (int i = 0; i < option_count; ++i)
        if (strncmp(options[i], "--gpu-architecture=", 19) == 0)
            arch = options[i] + 19;
    if (arch == NULL || (strncmp(arch, "sm_", 3) != 0 && strncmp(arch, "compute_", 8) != 0))
        return ERROR_INVALID_OPTION;
    if (strstr(program->source, "#error") != NULL) {
        snprintf(program->log, sizeof program->log, "fake.cu(1): error: #error directive: the source asked to fail\n");
        return CBNV_ERROR_COMPILATION;
    }
    char names[4096];
    const size_t length = kernel_names(program->source, names, sizeof names);
    program->ptx = arch[0] == 'c';
    if (program->ptx) {
        char header[96];
        const int header_length = snprintf(header, sizeof header, "// fake PTX\n.version 9.0\n.target %s\n", arch + 8);
        program->output_size = (size_t)header_length + length + 1;
        program->output = malloc(program->output_size);
        if (program->output == NULL)
            return 1;
        memcpy(program->output, header, (size_t)header_length);
        memcpy(program->output + header_length, names, length + 1);
    } else {
        /* An ELF64 header whose (empty) section table ends right after the names. */
        program->output_size = 64 + length;
        program->output = calloc(1, program->output_size);
        if (program->output == NULL)
            return 1;
        memcpy(program->output, "\x7f" "ELF\x02\x01\x01", 7);
        const uint64_t section_table = 64 + length;
        const uint16_t entry_size = 64;
        memcpy(program->output + 0x28, &section_table, sizeof section_table);
        memcpy(program->output + 0x3A, &entry_size, sizeof entry_size);
        memcpy(program->output + 64, names, length);
    }
    return CBNV_SUCCESS;
}

static cbnv_result output(cbnv_program program, bool ptx, size_t *size, char *bytes)
{
    if (program == NULL || program->output == NULL || program->ptx != ptx)
        return ERROR_INVALID_INPUT;
    if (size != NULL)
        *size = program->output_size;
    if (bytes != NULL)
        memcpy(bytes, program->output, program->output_size);
    return CBNV_SUCCESS;
}

FAKE_API cbnv_result nvrtcGetPTXSize(cbnv_program program, size_t *size)
{
    return output(program, true, size, NULL);
}

FAKE_API cbnv_result nvrtcGetPTX(cbnv_program program, char *ptx)
{
    return output(program, true, NULL, ptx);
}

FAKE_API cbnv_result nvrtcGetCUBINSize(cbnv_program program, size_t *size)
{
    return output(program, false, size, NULL);
}

FAKE_API cbnv_result nvrtcGetCUBIN(cbnv_program program, char *cubin)
{
    return output(program, false, NULL, cubin);
}

FAKE_API cbnv_result nvrtcGetProgramLogSize(cbnv_program program, size_t *size)
{
    *size = strlen(program->log) + 1;
    return CBNV_SUCCESS;
}

FAKE_API cbnv_result nvrtcGetProgramLog(cbnv_program program, char *log)
{
    memcpy(log, program->log, strlen(program->log) + 1);
    return CBNV_SUCCESS;
}
