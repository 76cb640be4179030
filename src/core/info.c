/* SPDX-License-Identifier: BSD-2-Clause */
/* Versions and what the library found on this machine (for `cblob info`). */
#include <pthread.h>
#include <stdio.h>

#include <blis.h>

#include "cblob/cblob.h"
#include "cpu_level.h"

#ifndef CBLOB_VERSION_STRING
#  error "the build defines CBLOB_VERSION_STRING"
#endif

CBLOB_API const char *cblob_version(void)
{
    return CBLOB_VERSION_STRING;
}

CBLOB_API uint32_t cblob_abi_version(void)
{
    return ((uint32_t)CBLOB_ABI_VERSION_MAJOR << 16) | (uint32_t)CBLOB_ABI_VERSION_MINOR;
}

static pthread_once_t describe_once = PTHREAD_ONCE_INIT;
static char blas_text[128];
static char cpu_text[160];

static const char *blis_threading(void)
{
    if (bli_info_get_enable_openmp())
        return "OpenMP";
    if (bli_info_get_enable_pthreads())
        return "pthreads";
    return "single-threaded";
}

static void describe(void)
{
    /* BLIS reports -1 when BLIS_NUM_THREADS and friends are unset: it then runs one thread. */
    const long threads = (long)bli_thread_get_num_threads();
    snprintf(blas_text, sizeof blas_text, "BLIS %s, %s, %ld thread%s%s", bli_info_get_version_str(), blis_threading(),
             threads < 1 ? 1 : threads, threads > 1 ? "s" : "", threads < 1 ? " (BLIS_NUM_THREADS unset)" : "");

#if defined(__x86_64__)
    __builtin_cpu_init();
    const bool v4 = cb_cpu_x86_64_v4(), v3 = cb_cpu_x86_64_v3();
    /* The same three levels the generated kernels are cloned for (templates/cpu/kernels.c.j2). */
    snprintf(cpu_text, sizeof cpu_text, "kernels: %s; cpu has:%s%s%s%s",
             v4 ? "x86-64-v4 (AVX-512)" : v3 ? "x86-64-v3 (AVX2, FMA)" : "x86-64 baseline (SSE2)",
             __builtin_cpu_supports("sse4.2") ? " sse4.2" : "", __builtin_cpu_supports("avx2") ? " avx2" : "",
             __builtin_cpu_supports("fma") ? " fma" : "", __builtin_cpu_supports("avx512f") ? " avx512f" : "");
#else
    snprintf(cpu_text, sizeof cpu_text, "kernels: portable C (no x86-64 vector clones on this architecture)");
#endif
}

CBLOB_API const char *cblob_blas_info(void)
{
    pthread_once(&describe_once, describe);
    return blas_text;
}

CBLOB_API const char *cblob_cpu_features(void)
{
    pthread_once(&describe_once, describe);
    return cpu_text;
}
