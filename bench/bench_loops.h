/* SPDX-License-Identifier: BSD-2-Clause */
/* Plain loops, the baseline a user would write by hand, compiled as a tuned program would be:
 * -O3 -march=native -ffast-math (bench/CMakeLists.txt), so that the compiler vectorises them,
 * sums included (-ffast-math lets it reorder the additions). */
#ifndef CBLOB_BENCH_LOOPS_H
#define CBLOB_BENCH_LOOPS_H

#include <stdint.h>

void loop_sub_f32(int64_t n, const float *diff, float *data);
void loop_sub_f64(int64_t n, const double *diff, double *data);
double loop_asum_f32(int64_t n, const float *x);
double loop_asum_f64(int64_t n, const double *x);
double loop_sumsq_f32(int64_t n, const float *x);
double loop_sumsq_f64(int64_t n, const double *x);
void loop_scale_f32(int64_t n, float factor, float *x);
void loop_scale_f64(int64_t n, double factor, double *x);

#endif
