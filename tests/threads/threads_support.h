/* SPDX-License-Identifier: BSD-2-Clause */
/* What the thread tests share: blobs of reproducible values, and counting the process's threads. */
#ifndef CBLOB_TESTS_THREADS_SUPPORT_H
#define CBLOB_TESTS_THREADS_SUPPORT_H

#include <dirent.h>
#include <stdint.h>

#include "cblob/cblob.h"
#include "threads.h"

/* Elements enough for every operation to split over 5 threads once tests give a thread 64 KiB of
 * work at least (split_small_work), and odd so that the last range is a short one. */
#define BIG (1500 * 1000 + 17)

/* Splits every operation from 64 KiB per thread, whatever its own threshold (up to 4 MiB): the
 * tests' blobs stay small (and quick under ThreadSanitizer) while every operation still runs on
 * several threads. */
static inline void split_small_work(void)
{
    cb_split_bytes_override = (size_t)64 << 10;
}

/* A value in [-1, 1) from a 64-bit LCG: the same sequence on every run and platform. */
static inline double next_value(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / (double)(1ull << 52) - 1.0;
}

/* A 1-axis blob of n elements of `dtype` whose data (and diff) hold values of the LCG from seed. */
static inline cblob_blob *random_blob(cblob_context *context, cblob_dtype dtype, int64_t n, uint64_t seed)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create(context, dtype, 1, &n, &blob) != CBLOB_OK)
        return NULL;
    for (cblob_part part = CBLOB_PART_DATA; part <= CBLOB_PART_DIFF; ++part) {
        void *ptr = NULL;
        if (cblob_blob_mutable_cpu_ptr(blob, part, &ptr) != CBLOB_OK) {
            cblob_blob_destroy(blob);
            return NULL;
        }
        for (int64_t i = 0; i < n; ++i) {
            const double v = next_value(&seed);
            switch (dtype) {
            case CBLOB_DTYPE_FLOAT32: ((float *)ptr)[i] = (float)v; break;
            case CBLOB_DTYPE_FLOAT64: ((double *)ptr)[i] = v; break;
            case CBLOB_DTYPE_INT32: ((int32_t *)ptr)[i] = (int32_t)(v * 1e9); break;
            case CBLOB_DTYPE_UINT32: ((uint32_t *)ptr)[i] = (uint32_t)((v + 1) * 2e9); break;
            }
        }
    }
    return blob;
}

/* The threads of this process now (the entries of /proc/self/task), or -1. */
static inline int process_threads(void)
{
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL)
        return -1;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(tasks)) != NULL;)
        count += entry->d_name[0] != '.';
    closedir(tasks);
    return count;
}

#endif
