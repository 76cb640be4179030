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

#endif
