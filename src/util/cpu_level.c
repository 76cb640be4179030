/* SPDX-License-Identifier: BSD-2-Clause */
#include "cpu_level.h"

#include <stdatomic.h>

/* What this CPU is, found once: its x86-64 level (the low two bits) and whether Intel made it. */
enum { NOT_LOOKED = 0, LEVEL_BASELINE = 1, LEVEL_V3 = 2, LEVEL_V4 = 3, LEVEL_BITS = 3, MADE_BY_INTEL = 4 };

static int detect(void)
{
    int found = LEVEL_BASELINE;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        found = LEVEL_V4;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
        found = LEVEL_V3;
    if (__builtin_cpu_is("intel"))
        found |= MADE_BY_INTEL;
#endif
    return found;
}

/* Kept after the first call; threads that race to it compute the same answer. */
static int cpu(void)
{
    static atomic_int known = NOT_LOOKED;
    int value = atomic_load_explicit(&known, memory_order_relaxed);
    if (value == NOT_LOOKED) {
        value = detect();
        atomic_store_explicit(&known, value, memory_order_relaxed);
    }
    return value;
}

bool cb_cpu_x86_64_v4(void)
{
    return (cpu() & LEVEL_BITS) == LEVEL_V4;
}

bool cb_cpu_x86_64_v3(void)
{
    return (cpu() & LEVEL_BITS) >= LEVEL_V3;
}

/* cb_cpu_force_prefetch's setting: -1 while the CPU decides. */
static atomic_int prefetch_forced = -1;

bool cb_cpu_prefetch_pays(void)
{
    const int forced = atomic_load_explicit(&prefetch_forced, memory_order_relaxed);
    return forced >= 0 ? forced != 0 : (cpu() & MADE_BY_INTEL) != 0;
}

void cb_cpu_force_prefetch(int forced)
{
    atomic_store_explicit(&prefetch_forced, forced < 0 ? -1 : forced != 0, memory_order_relaxed);
}
