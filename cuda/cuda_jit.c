/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

cblob_status cb_cuda_target_for(const cb_cuda_nvrtc *compiler, int driver_version, int compute_capability,
                                cb_cuda_target *out)
{
    (void)driver_version;
    const int oldest = compiler->archs[0], newest = compiler->archs[compiler->arch_count - 1];
    if (compute_capability < oldest)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "NVRTC %d.%d cannot compile for compute capability %d.%d (it supports %d.%d to %d.%d)",
                       compiler->major, compiler->minor, compute_capability / 10, compute_capability % 10, oldest / 10,
                       oldest % 10, newest / 10, newest % 10);
    int best = oldest;
    bool exact = false;
    for (int i = 0; i < compiler->arch_count; ++i) {
        if (compiler->archs[i] <= compute_capability)
            best = compiler->archs[i];
        exact = exact || compiler->archs[i] == compute_capability;
    }
    out->compute_capability = compute_capability;
    out->ptx = !exact;
    snprintf(out->name, sizeof out->name, "%s_%d", exact ? "sm" : "compute", exact ? compute_capability : best);
    return CBLOB_OK;
}

int cb_cuda_compile_options(const cb_cuda_target *target, char storage[CB_CUDA_MAX_OPTIONS][48],
                            const char *options[CB_CUDA_MAX_OPTIONS])
{
    snprintf(storage[0], sizeof storage[0], "--gpu-architecture=%s", target->name);
    snprintf(storage[1], sizeof storage[1], "--fmad=false");
    options[0] = storage[0];
    options[1] = storage[1];
    return 2;
}

void cb_cuda_image_free(cb_cuda_image *image)
{
    free(image->bytes);
    image->bytes = NULL;
    image->size = 0;
}

/* The start of NVRTC's log, for the error message. */
static void read_log(const cb_cuda_nvrtc *compiler, cbnv_program program, char *text, size_t size)
{
    size_t length = 0;
    text[0] = '\0';
    if (compiler->api.nvrtcGetProgramLogSize(program, &length) != CBNV_SUCCESS || length == 0)
        return;
    char *log = malloc(length);
    if (log == NULL)
        return;
    if (compiler->api.nvrtcGetProgramLog(program, log) == CBNV_SUCCESS)
        snprintf(text, size, "%s", log);
    free(log);
}

static cblob_status take_output(const cb_cuda_nvrtc *compiler, cbnv_program program, bool ptx, cb_cuda_image *out)
{
    size_t size = 0;
    cbnv_result result = ptx ? compiler->api.nvrtcGetPTXSize(program, &size) : compiler->api.nvrtcGetCUBINSize(program, &size);
    if (result != CBNV_SUCCESS || size == 0)
        return cb_fail(CBLOB_ERR_COMPILE, "NVRTC produced no %s (%s)", ptx ? "PTX" : "cubin",
                       compiler->api.nvrtcGetErrorString(result));
    unsigned char *bytes = malloc(size);
    if (bytes == NULL)
        return cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a %zu-byte compiled kernel", size);
    result = ptx ? compiler->api.nvrtcGetPTX(program, (char *)bytes) : compiler->api.nvrtcGetCUBIN(program, (char *)bytes);
    if (result != CBNV_SUCCESS) {
        free(bytes);
        return cb_fail(CBLOB_ERR_COMPILE, "NVRTC could not hand out its output (%s)", compiler->api.nvrtcGetErrorString(result));
    }
    *out = (cb_cuda_image){bytes, size, ptx};
    return CBLOB_OK;
}

cblob_status cb_cuda_compile_source(const cb_cuda_nvrtc *compiler, const char *name, const char *source,
                                    const cb_cuda_target *target, cb_cuda_image *out)
{
    char storage[CB_CUDA_MAX_OPTIONS][48];
    const char *options[CB_CUDA_MAX_OPTIONS];
    const int option_count = cb_cuda_compile_options(target, storage, options);
    char file_name[96];
    snprintf(file_name, sizeof file_name, "cblob_%s.cu", name);
    cbnv_program program = NULL;
    cbnv_result result = compiler->api.nvrtcCreateProgram(&program, source, file_name, 0, NULL, NULL);
    if (result != CBNV_SUCCESS)
        return cb_fail(CBLOB_ERR_COMPILE, "NVRTC could not create the %s program (%s)", name,
                       compiler->api.nvrtcGetErrorString(result));
    result = compiler->api.nvrtcCompileProgram(program, option_count, options);
    cblob_status status;
    if (result != CBNV_SUCCESS) {
        char log[480];
        read_log(compiler, program, log, sizeof log);
        status = cb_fail(CBLOB_ERR_COMPILE, "NVRTC %d.%d failed to compile the %s kernels for %s (%s): %s",
                         compiler->major, compiler->minor, name, target->name, compiler->api.nvrtcGetErrorString(result),
                         log[0] != '\0' ? log : "no log");
    } else {
        status = take_output(compiler, program, target->ptx, out);
    }
    compiler->api.nvrtcDestroyProgram(&program);
    return status;
}

cblob_status cb_cuda_compile(const cb_cuda_nvrtc *compiler, const cb_cuda_family *family,
                             const cb_cuda_target *target, cb_cuda_image *out)
{
    return cb_cuda_compile_source(compiler, family->name, family->source, target, out);
}
