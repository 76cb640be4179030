/* SPDX-License-Identifier: BSD-2-Clause */
#include "cpu_level.h"

#include <stdatomic.h>

enum { LEVEL_UNKNOWN, LEVEL_BASELINE, LEVEL_V3, LEVEL_V4 };

static int detect(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return LEVEL_V4;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
        return LEVEL_V3;
#endif
    return LEVEL_BASELINE;
}

/* Kept after the first call; threads that race to it compute the same answer. */
static int level(void)
{
    static atomic_int known = LEVEL_UNKNOWN;
    int value = atomic_load_explicit(&known, memory_order_relaxed);
    if (value == LEVEL_UNKNOWN) {
        value = detect();
        atomic_store_explicit(&known, value, memory_order_relaxed);
    }
    return value;
}

bool cb_cpu_x86_64_v4(void)
{
    return level() == LEVEL_V4;
}

bool cb_cpu_x86_64_v3(void)
{
    return level() >= LEVEL_V3;
}
