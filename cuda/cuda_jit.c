/* SPDX-License-Identifier: BSD-2-Clause */
#include "cuda_jit.h"
#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

/* A cubin for sm_XY runs on any device of major X and minor at least Y; PTX is finished by the
 * driver, which must know NVRTC's PTX version: a driver at least as new as NVRTC. */
cblob_status cb_cuda_target_for(const cb_cuda_nvrtc *compiler, int driver_version, int compute_capability,
                                cb_cuda_target *out)
{
    const int oldest = compiler->archs[0], newest = compiler->archs[compiler->arch_count - 1];
    if (compute_capability < oldest)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT,
                       "NVRTC %d.%d cannot compile for compute capability %d.%d (it supports %d.%d to %d.%d)",
                       compiler->major, compiler->minor, compute_capability / 10, compute_capability % 10, oldest / 10,
                       oldest % 10, newest / 10, newest % 10);
    int best = oldest;
    for (int i = 0; i < compiler->arch_count; ++i)
        if (compiler->archs[i] <= compute_capability)
            best = compiler->archs[i];
    const bool cubin = best / 10 == compute_capability / 10;
    const int nvrtc_version = compiler->major * 1000 + compiler->minor * 10;
    if (!cubin && driver_version != 0 && driver_version < nvrtc_version)
        return cb_fail(CBLOB_ERR_DRIVER_TOO_OLD,
                       "compute capability %d.%d needs PTX from NVRTC %d.%d (it has no cubin target of major %d), which "
                       "the driver, supporting CUDA %d.%d, is too old to load: update the NVIDIA driver to CUDA %d.%d or "
                       "newer",
                       compute_capability / 10, compute_capability % 10, compiler->major, compiler->minor,
                       compute_capability / 10, driver_version / 1000, driver_version % 1000 / 10, compiler->major,
                       compiler->minor);
    out->compute_capability = compute_capability;
    out->ptx = !cubin;
    snprintf(out->name, sizeof out->name, "%s_%d", cubin ? "sm" : "compute", best);
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
    char *log = cb_malloc(length);
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
    unsigned char *bytes = cb_malloc(size);
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
