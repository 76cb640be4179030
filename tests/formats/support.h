/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers the format test suites share: blobs with known values, serialized copies, and
 * snapshots that prove a failed call changed nothing. */
#ifndef CBLOB_TESTS_FORMATS_SUPPORT_H
#define CBLOB_TESTS_FORMATS_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

#define FT_DTYPES 4
extern const cblob_dtype ft_dtypes[FT_DTYPES];

/* A value exact in every dtype (multiples of 1/8 for floats, small integers otherwise), different
 * for each (seed, i). Python's crosscheck.py uses the same formula. */
double ft_value(cblob_dtype dtype, int seed, int64_t i);

/* A blob of the shape whose data (seed) and, when with_diff, diff (seed + 1) hold ft_value. NULL
 * on failure. */
cblob_blob *ft_blob(cblob_context *context, cblob_dtype dtype, int32_t num_axes, const int64_t *dims, int seed,
                    bool with_diff);

/* Whether part of the blob holds ft_value(dtype, seed, i) at every i. */
bool ft_blob_holds(cblob_blob *blob, cblob_part part, int seed);

/* Whether two blobs have the same shape and the same values in part (converted to double). */
bool ft_same_values(cblob_blob *a, cblob_blob *b, cblob_part part);

bool ft_shape_is(const cblob_blob *blob, int32_t num_axes, const int64_t *dims);

/* The blob's BlobProto bytes (malloc'd) and size; NULL on failure. */
uint8_t *ft_to_proto(cblob_blob *blob, bool write_diff, size_t *size);

/* Everything a failed call must leave alone. */
typedef struct ft_snapshot {
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count, capacity;
    cblob_head heads[2];
    const void *pointers[2];
    uint8_t *bytes[2];
    size_t size;
} ft_snapshot;

bool ft_snapshot_take(cblob_blob *blob, ft_snapshot *out);
/* Compares without moving heads (reads memory only where the head is already AT_CPU or SYNCED). */
bool ft_snapshot_same(cblob_blob *blob, const ft_snapshot *snapshot);
void ft_snapshot_free(ft_snapshot *snapshot);

/* A fresh temporary folder, and a path inside it (static storage, one per call site's buffer). */
bool ft_temp_folder(char *folder, size_t size);
void ft_remove_folder(const char *folder);

/* Reads a whole file (malloc'd); NULL on failure. */
uint8_t *ft_read_file(const char *path, size_t *size);
bool ft_write_file(const char *path, const void *bytes, size_t size);

#endif
