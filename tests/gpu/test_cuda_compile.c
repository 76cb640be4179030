/* SPDX-License-Identifier: BSD-2-Clause */
/* Every CUDA kernel family (each template with all its dtypes, as the backend compiles it)
 * compiles with the real NVRTC for sm_80 and sm_90: as a cubin, whose entry points are checked,
 * and as PTX, which nvJitLink then assembles for the same architecture. NVRTC and nvJitLink need
 * no GPU; without the CUDA toolkit the tests skip and say so. Families added to codegen/ops.yaml
 * are covered without touching this file. */
#define _GNU_SOURCE /* memmem */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda/families.h"
#include "cuda_jit.h"
#include "harness.h"

typedef int (*link_create_fn)(void **handle, uint32_t count, const char **options);
typedef int (*link_add_fn)(void *handle, int kind, const void *data, size_t size, const char *name);
typedef int (*link_handle_fn)(void *handle);
typedef int (*link_size_fn)(void *handle, size_t *size);
typedef int (*link_bytes_fn)(void *handle, void *bytes);
typedef int (*link_destroy_fn)(void **handle);

#define NVJITLINK_INPUT_PTX 2

typedef struct nvjitlink {
    link_create_fn create;
    link_add_fn add;
    link_handle_fn complete;
    link_size_fn cubin_size, log_size;
    link_bytes_fn cubin, log;
    link_destroy_fn destroy;
} nvjitlink;

/* nvJitLink's header maps each call to a symbol versioned by the toolkit (13.0). */
static bool load_nvjitlink(nvjitlink *link)
{
    void *library = dlopen("libnvJitLink.so.13", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL)
        library = dlopen("/usr/local/cuda/lib64/libnvJitLink.so.13", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL)
        return false;
    *(void **)&link->create = dlsym(library, "__nvJitLinkCreate_13_0");
    *(void **)&link->add = dlsym(library, "__nvJitLinkAddData_13_0");
    *(void **)&link->complete = dlsym(library, "__nvJitLinkComplete_13_0");
    *(void **)&link->cubin_size = dlsym(library, "__nvJitLinkGetLinkedCubinSize_13_0");
    *(void **)&link->cubin = dlsym(library, "__nvJitLinkGetLinkedCubin_13_0");
    *(void **)&link->log_size = dlsym(library, "__nvJitLinkGetErrorLogSize_13_0");
    *(void **)&link->log = dlsym(library, "__nvJitLinkGetErrorLog_13_0");
    *(void **)&link->destroy = dlsym(library, "__nvJitLinkDestroy_13_0");
    return link->create && link->add && link->complete && link->cubin_size && link->cubin && link->log_size &&
           link->log && link->destroy;
}

static bool names_every_kernel(const cb_cuda_family *family, const unsigned char *image, size_t size, char *missing,
                               size_t missing_size)
{
    for (int row = 0; row < CB_CUDA_DTYPE_ROWS; ++row) {
        const char *name = family->kernels[row];
        if (name != NULL && memmem(image, size, name, strlen(name) + 1) == NULL) {
            snprintf(missing, missing_size, "%s", name);
            return false;
        }
    }
    return true;
}

/* PTX through nvJitLink into a cubin for sm_<arch>; its error log when it fails. */
static bool link_ptx(const nvjitlink *link, const cb_cuda_image *ptx, int arch, unsigned char **cubin, size_t *size,
                     char *log, size_t log_size)
{
    char option[32];
    snprintf(option, sizeof option, "-arch=sm_%d", arch);
    const char *options[] = {option};
    void *handle = NULL;
    log[0] = '\0';
    if (link->create(&handle, 1, options) != 0) {
        snprintf(log, log_size, "nvJitLinkCreate failed");
        return false;
    }
    bool linked = link->add(handle, NVJITLINK_INPUT_PTX, ptx->bytes, ptx->size, "family.ptx") == 0 &&
                  link->complete(handle) == 0 && link->cubin_size(handle, size) == 0 && (*cubin = malloc(*size)) != NULL &&
                  link->cubin(handle, *cubin) == 0;
    size_t needed = 0;
    if (!linked && link->log_size(handle, &needed) == 0 && needed > 0 && needed <= log_size)
        link->log(handle, log);
    link->destroy(&handle);
    return linked;
}

static void every_family_compiles_for(int arch)
{
    const cb_cuda_nvrtc *compiler = NULL;
    if (cb_cuda_nvrtc_ready(&compiler) != CBLOB_OK)
        SKIP("NVRTC is not installed (the CUDA toolkit's libnvrtc.so.13): nothing to compile with");
    if (strstr(compiler->path, "fake_cuda") != NULL)
        SKIP("NVRTC is the test double here; this test needs the real one");
    nvjitlink link;
    if (!load_nvjitlink(&link))
        SKIP("nvJitLink (libnvJitLink.so.13 from the CUDA toolkit) is not installed: the PTX cannot be checked");
    for (int id = 0; id < CB_CUDA_FAMILY_COUNT; ++id) {
        const cb_cuda_family *family = &cb_cuda_families[id];
        char missing[96];
        cb_cuda_target target;
        CHECK_OK(cb_cuda_target_for(compiler, 0, arch, &target));
        CHECK(!target.ptx);
        cb_cuda_image cubin = {0};
        CHECK_OK(cb_cuda_compile(compiler, family, &target, &cubin));
        CHECK_MSG(cubin.size > 4 && memcmp(cubin.bytes, "\x7f" "ELF", 4) == 0, "%s for sm_%d: not a cubin", family->name,
                  arch);
        CHECK_MSG(names_every_kernel(family, cubin.bytes, cubin.size, missing, sizeof missing),
                  "the %s cubin for sm_%d lacks %s", family->name, arch, missing);
        cb_cuda_image_free(&cubin);

        cb_cuda_target virtual_target = {arch, true, ""};
        snprintf(virtual_target.name, sizeof virtual_target.name, "compute_%d", arch);
        cb_cuda_image ptx = {0};
        CHECK_OK(cb_cuda_compile(compiler, family, &virtual_target, &ptx));
        CHECK_MSG(strstr((const char *)ptx.bytes, ".target sm_") != NULL, "%s: not PTX", family->name);
        unsigned char *linked = NULL;
        size_t linked_size = 0;
        char log[2048];
        CHECK_MSG(link_ptx(&link, &ptx, arch, &linked, &linked_size, log, sizeof log),
                  "nvJitLink rejected the %s PTX for sm_%d: %s", family->name, arch, log);
        CHECK_MSG(names_every_kernel(family, linked, linked_size, missing, sizeof missing),
                  "the %s program linked for sm_%d lacks %s", family->name, arch, missing);
        free(linked);
        cb_cuda_image_free(&ptx);
        int dtypes = 0;
        for (int row = 0; row < CB_CUDA_DTYPE_ROWS; ++row)
            dtypes += family->kernels[row] != NULL;
        printf("%s: %d dtypes compiled for sm_%d and compute_%d (checked by nvJitLink)\n", family->name, dtypes, arch,
               arch);
    }
}

TEST(every_family_compiles_for_sm_80) { every_family_compiles_for(80); }
TEST(every_family_compiles_for_sm_90) { every_family_compiles_for(90); }
