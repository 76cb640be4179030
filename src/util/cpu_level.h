/* SPDX-License-Identifier: BSD-2-Clause */
/* Which x86-64 level this CPU runs: the one definition the kernels' run-time choices
 * (generated/cpu/kernels_*.c, ops.yaml `wide`) and cblob_cpu_features (src/core/info.c) share;
 * here in util, below both. */
#ifndef CBLOB_CPU_LEVEL_H
#define CBLOB_CPU_LEVEL_H

#include <stdbool.h>

/* x86-64-v4: AVX-512 F, BW, CD, DQ and VL, the features GCC's target_clones("arch=x86-64-v4")
 * resolver asks for. false on other architectures. Cheap: the answer is kept after the first call. */
bool cb_cpu_x86_64_v4(void);

/* x86-64-v3: AVX2, FMA and BMI2 (the features of that level the kernels' clones use). */
bool cb_cpu_x86_64_v3(void);

/* Whether the BLAS-1 kernels ask for cache lines ahead of large operands (CB_STREAMED in
 * templates/cpu/kernels.c.j2): on Intel's cores, yes; elsewhere, no. Measured side by side, the
 * same kernels with and without the prefetches, one thread: on an Intel Xeon (family 6, model
 * 207) they made the sums and scale 1.10-1.25x faster at 1e7-1e8 elements; on an AMD EPYC (Zen
 * 3) they made every op 1.19-1.46x slower there, and up to 1.14x slower in cache, where AMD's
 * own prefetchers already keep the lines coming (docs/benchmarks.md, "CPU math"). The results
 * are the same bit for bit either way. Cheap: the answer is kept after the first call. */
bool cb_cpu_prefetch_pays(void);

/* For tests: 1 or 0 forces cb_cpu_prefetch_pays' answer, so that both paths of the kernels run
 * on any CPU; -1 gives it back to the CPU. */
void cb_cpu_force_prefetch(int forced);

#endif
