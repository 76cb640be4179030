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

enum { PREFETCH_UNKNOWN = -1 };

static atomic_int prefetch_forced = PREFETCH_UNKNOWN;

static bool detect_prefetch(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_is("intel");
#else
    return false;
#endif
}

bool cb_cpu_prefetch_pays(void)
{
    static atomic_int known = PREFETCH_UNKNOWN;
    const int forced = atomic_load_explicit(&prefetch_forced, memory_order_relaxed);
    if (forced != PREFETCH_UNKNOWN)
        return forced != 0;
    int value = atomic_load_explicit(&known, memory_order_relaxed);
    if (value == PREFETCH_UNKNOWN) {
        value = detect_prefetch();
        atomic_store_explicit(&known, value, memory_order_relaxed);
    }
    return value != 0;
}

void cb_cpu_force_prefetch(int forced)
{
    atomic_store_explicit(&prefetch_forced, forced < 0 ? PREFETCH_UNKNOWN : forced != 0, memory_order_relaxed);
}
