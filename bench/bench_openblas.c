/* SPDX-License-Identifier: BSD-2-Clause */
#include "bench_openblas.h"

#include <dlfcn.h>
#include <stddef.h>

bool bench_openblas_open(bench_openblas *out)
{
    void *library = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL)
        return false;
    int (*get_num_threads)(void) = (int (*)(void))dlsym(library, "openblas_get_num_threads");
#define CB_LOAD(field, name) *(void **)&out->field = dlsym(library, name)
    CB_LOAD(set_num_threads, "openblas_set_num_threads");
    CB_LOAD(saxpy, "cblas_saxpy");
    CB_LOAD(daxpy, "cblas_daxpy");
    CB_LOAD(sasum, "cblas_sasum");
    CB_LOAD(dasum, "cblas_dasum");
    CB_LOAD(sdot, "cblas_sdot");
    CB_LOAD(ddot, "cblas_ddot");
    CB_LOAD(sscal, "cblas_sscal");
    CB_LOAD(dscal, "cblas_dscal");
    CB_LOAD(get_config, "openblas_get_config");
#undef CB_LOAD
    if (get_num_threads == NULL || out->set_num_threads == NULL || out->saxpy == NULL || out->daxpy == NULL ||
        out->sasum == NULL || out->dasum == NULL || out->sdot == NULL || out->ddot == NULL || out->sscal == NULL ||
        out->dscal == NULL)
        return false;
    out->default_threads = get_num_threads();
    return true;
}
