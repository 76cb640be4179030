/* SPDX-License-Identifier: BSD-2-Clause */
/* OpenBLAS, opened with dlopen (libopenblas.so.0) so that its cblas.h never meets BLIS's and the
 * benchmarks build without it: the level-1 calls Caffe's CPU blob makes, and its thread setting.
 * Shared by bench_math and bench_threads. */
#ifndef CBLOB_BENCH_OPENBLAS_H
#define CBLOB_BENCH_OPENBLAS_H

#include <stdbool.h>

typedef struct bench_openblas {
    void (*set_num_threads)(int);
    int default_threads;
    void (*saxpy)(int, float, const float *, int, float *, int);
    void (*daxpy)(int, double, const double *, int, double *, int);
    float (*sasum)(int, const float *, int);
    double (*dasum)(int, const double *, int);
    float (*sdot)(int, const float *, int, const float *, int);
    double (*ddot)(int, const double *, int, const double *, int);
    void (*sscal)(int, float, float *, int);
    void (*dscal)(int, double, double *, int);
    const char *(*get_config)(void);
} bench_openblas;

/* Fills `out`; false when libopenblas.so.0 or one of its calls is missing. */
bool bench_openblas_open(bench_openblas *out);

#endif
