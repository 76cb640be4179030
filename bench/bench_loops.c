/* SPDX-License-Identifier: BSD-2-Clause */
#include "bench_loops.h"

#include <math.h>

void loop_sub_f32(int64_t n, const float *diff, float *data)
{
    for (int64_t i = 0; i < n; ++i)
        data[i] -= diff[i];
}

void loop_sub_f64(int64_t n, const double *diff, double *data)
{
    for (int64_t i = 0; i < n; ++i)
        data[i] -= diff[i];
}

/* Accumulating in the element type, as sasum does (in vector lanes, with -ffast-math). */
double loop_asum_f32(int64_t n, const float *x)
{
    float sum = 0;
    for (int64_t i = 0; i < n; ++i)
        sum += fabsf(x[i]);
    return sum;
}

double loop_asum_f64(int64_t n, const double *x)
{
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
        sum += fabs(x[i]);
    return sum;
}

double loop_sumsq_f32(int64_t n, const float *x)
{
    float sum = 0;
    for (int64_t i = 0; i < n; ++i)
        sum += x[i] * x[i];
    return sum;
}

double loop_sumsq_f64(int64_t n, const double *x)
{
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
        sum += x[i] * x[i];
    return sum;
}

void loop_scale_f32(int64_t n, float factor, float *x)
{
    for (int64_t i = 0; i < n; ++i)
        x[i] *= factor;
}

void loop_scale_f64(int64_t n, double factor, double *x)
{
    for (int64_t i = 0; i < n; ++i)
        x[i] *= factor;
}
