/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers shared by the NeoML operation suites: blobs of any dtype filled with known values, read
 * back as doubles, and a seeded random generator whose seed every failure message prints. */
#ifndef CBLOB_TESTS_NEOML_TEST_H
#define CBLOB_TESTS_NEOML_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const cblob_dtype all_dtypes[] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64, CBLOB_DTYPE_INT32,
                                         CBLOB_DTYPE_UINT32};
#define NUM_DTYPES 4

static inline size_t dtype_size(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

static inline const char *dtype_name(cblob_dtype dtype)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return "float32";
    case CBLOB_DTYPE_FLOAT64: return "float64";
    case CBLOB_DTYPE_INT32: return "int32";
    case CBLOB_DTYPE_UINT32: return "uint32";
    default: return "?";
    }
}

static inline double value_at(const void *array, cblob_dtype dtype, int64_t i)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return ((const float *)array)[i];
    case CBLOB_DTYPE_FLOAT64: return ((const double *)array)[i];
    case CBLOB_DTYPE_INT32: return ((const int32_t *)array)[i];
    default: return ((const uint32_t *)array)[i];
    }
}

/* v must be exact in the dtype (the tests pick such values). */
static inline void set_value(void *array, cblob_dtype dtype, int64_t i, double v)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: ((float *)array)[i] = (float)v; break;
    case CBLOB_DTYPE_FLOAT64: ((double *)array)[i] = v; break;
    case CBLOB_DTYPE_INT32: ((int32_t *)array)[i] = (int32_t)v; break;
    default: ((uint32_t *)array)[i] = (uint32_t)v; break;
    }
}

/* A value that identifies element i of a blob tagged `tag`, exact in every dtype. */
static inline double tagged(int64_t i, int tag)
{
    return (double)(tag * 100000 + i % 100000);
}

/* Writes tagged(i, tag) into every element of the part through copy_in. 0 on failure. */
static inline int fill_tagged(cblob_blob *blob, cblob_part part, int tag)
{
    cblob_dtype dtype;
    int64_t count;
    if (cblob_blob_dtype(blob, &dtype) != CBLOB_OK || cblob_blob_count(blob, &count) != CBLOB_OK)
        return 0;
    void *array = malloc((size_t)(count > 0 ? count : 1) * dtype_size(dtype));
    for (int64_t i = 0; i < count; ++i)
        set_value(array, dtype, i, tagged(i, tag));
    const int ok = cblob_blob_copy_in(blob, part, dtype, array, count) == CBLOB_OK;
    free(array);
    return ok;
}

/* The part's values as doubles (malloc'd, at least one slot); NULL on failure. */
static inline double *read_values(cblob_blob *blob, cblob_part part)
{
    cblob_dtype dtype;
    int64_t count;
    if (cblob_blob_dtype(blob, &dtype) != CBLOB_OK || cblob_blob_count(blob, &count) != CBLOB_OK)
        return NULL;
    void *array = malloc((size_t)(count > 0 ? count : 1) * dtype_size(dtype));
    double *values = malloc((size_t)(count > 0 ? count : 1) * sizeof *values);
    if (cblob_blob_copy_out(blob, part, dtype, array, count) != CBLOB_OK) {
        free(array);
        free(values);
        return NULL;
    }
    for (int64_t i = 0; i < count; ++i)
        values[i] = value_at(array, dtype, i);
    free(array);
    return values;
}

static inline int64_t shape_count(int32_t num_axes, const int64_t *dims)
{
    int64_t count = 1;
    for (int32_t i = 0; i < num_axes; ++i)
        count *= dims[i];
    return count;
}

/* xorshift64*: deterministic across platforms, so a printed seed reproduces a failure. */
typedef struct rng {
    uint64_t state;
} rng;

static inline uint64_t rng_next(rng *r)
{
    r->state ^= r->state >> 12;
    r->state ^= r->state << 25;
    r->state ^= r->state >> 27;
    return r->state * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [low, high]. */
static inline int64_t rng_range(rng *r, int64_t low, int64_t high)
{
    return low + (int64_t)(rng_next(r) % (uint64_t)(high - low + 1));
}

#endif
