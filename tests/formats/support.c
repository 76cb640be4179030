/* SPDX-License-Identifier: BSD-2-Clause */
#include "support.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const cblob_dtype ft_dtypes[FT_DTYPES] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64, CBLOB_DTYPE_INT32,
                                          CBLOB_DTYPE_UINT32};

double ft_value(cblob_dtype dtype, int seed, int64_t i)
{
    const int64_t k = (i * 37 + (int64_t)seed * 101) % 211;
    switch (dtype) {
    case CBLOB_DTYPE_INT32: return (double)(k - 105);
    case CBLOB_DTYPE_UINT32: return (double)k;
    default: return (double)(k - 105) / 8.0;
    }
}

static size_t element_size(cblob_dtype dtype)
{
    return dtype == CBLOB_DTYPE_FLOAT64 ? 8 : 4;
}

static double read_value(const void *values, cblob_dtype dtype, int64_t i)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: return ((const float *)values)[i];
    case CBLOB_DTYPE_FLOAT64: return ((const double *)values)[i];
    case CBLOB_DTYPE_INT32: return ((const int32_t *)values)[i];
    default: return ((const uint32_t *)values)[i];
    }
}

static void write_value(void *values, cblob_dtype dtype, int64_t i, double v)
{
    switch (dtype) {
    case CBLOB_DTYPE_FLOAT32: ((float *)values)[i] = (float)v; break;
    case CBLOB_DTYPE_FLOAT64: ((double *)values)[i] = v; break;
    case CBLOB_DTYPE_INT32: ((int32_t *)values)[i] = (int32_t)v; break;
    default: ((uint32_t *)values)[i] = (uint32_t)v; break;
    }
}

static bool fill(cblob_blob *blob, cblob_part part, int seed)
{
    cblob_dtype dtype;
    int64_t count;
    void *values = NULL;
    if (cblob_blob_dtype(blob, &dtype) != CBLOB_OK || cblob_blob_count(blob, &count) != CBLOB_OK ||
        cblob_blob_mutable_cpu_ptr(blob, part, &values) != CBLOB_OK)
        return false;
    for (int64_t i = 0; i < count; ++i)
        write_value(values, dtype, i, ft_value(dtype, seed, i));
    return true;
}

cblob_blob *ft_blob(cblob_context *context, cblob_dtype dtype, int32_t num_axes, const int64_t *dims, int seed,
                    bool with_diff)
{
    cblob_blob *blob = NULL;
    if (cblob_blob_create(context, dtype, num_axes, dims, &blob) != CBLOB_OK)
        return NULL;
    if (!fill(blob, CBLOB_PART_DATA, seed) || (with_diff && !fill(blob, CBLOB_PART_DIFF, seed + 1))) {
        cblob_blob_destroy(blob);
        return NULL;
    }
    return blob;
}

bool ft_blob_holds(cblob_blob *blob, cblob_part part, int seed)
{
    cblob_dtype dtype;
    int64_t count;
    const void *values = NULL;
    if (cblob_blob_dtype(blob, &dtype) != CBLOB_OK || cblob_blob_count(blob, &count) != CBLOB_OK ||
        cblob_blob_cpu_ptr(blob, part, &values) != CBLOB_OK)
        return false;
    for (int64_t i = 0; i < count; ++i)
        if (read_value(values, dtype, i) != ft_value(dtype, seed, i))
            return false;
    return true;
}

bool ft_shape_is(const cblob_blob *blob, int32_t num_axes, const int64_t *dims)
{
    int64_t shape[CBLOB_MAX_AXES];
    int32_t n = -1;
    return cblob_blob_shape(blob, CBLOB_MAX_AXES, shape, &n) == CBLOB_OK && n == num_axes &&
           (num_axes == 0 || memcmp(shape, dims, (size_t)num_axes * sizeof *dims) == 0);
}

bool ft_same_values(cblob_blob *a, cblob_blob *b, cblob_part part)
{
    int64_t shape[CBLOB_MAX_AXES], count_a, count_b;
    int32_t n;
    cblob_dtype dtype_a, dtype_b;
    const void *values_a = NULL, *values_b = NULL;
    if (cblob_blob_shape(a, CBLOB_MAX_AXES, shape, &n) != CBLOB_OK || !ft_shape_is(b, n, shape) ||
        cblob_blob_count(a, &count_a) != CBLOB_OK || cblob_blob_count(b, &count_b) != CBLOB_OK ||
        count_a != count_b || cblob_blob_dtype(a, &dtype_a) != CBLOB_OK || cblob_blob_dtype(b, &dtype_b) != CBLOB_OK ||
        cblob_blob_cpu_ptr(a, part, &values_a) != CBLOB_OK || cblob_blob_cpu_ptr(b, part, &values_b) != CBLOB_OK)
        return false;
    for (int64_t i = 0; i < count_a; ++i)
        if (read_value(values_a, dtype_a, i) != read_value(values_b, dtype_b, i))
            return false;
    return true;
}

uint8_t *ft_to_proto(cblob_blob *blob, bool write_diff, size_t *size)
{
    size_t needed = 0;
    if (cblob_blob_to_proto(blob, write_diff, NULL, 0, &needed) != CBLOB_OK)
        return NULL;
    uint8_t *bytes = malloc(needed + 1);
    if (bytes == NULL || cblob_blob_to_proto(blob, write_diff, bytes, needed, size) != CBLOB_OK || *size != needed) {
        free(bytes);
        return NULL;
    }
    return bytes;
}

bool ft_snapshot_take(cblob_blob *blob, ft_snapshot *out)
{
    memset(out, 0, sizeof *out);
    cblob_dtype dtype;
    if (cblob_blob_shape(blob, CBLOB_MAX_AXES, out->dims, &out->num_axes) != CBLOB_OK ||
        cblob_blob_count(blob, &out->count) != CBLOB_OK || cblob_blob_capacity(blob, &out->capacity) != CBLOB_OK ||
        cblob_blob_dtype(blob, &dtype) != CBLOB_OK)
        return false;
    out->size = (size_t)out->count * element_size(dtype);
    for (int part = 0; part < 2; ++part) {
        if (cblob_blob_head(blob, part, &out->heads[part]) != CBLOB_OK)
            return false;
        if (out->heads[part] != CBLOB_HEAD_AT_CPU && out->heads[part] != CBLOB_HEAD_SYNCED)
            continue;
        if (cblob_blob_cpu_ptr(blob, part, &out->pointers[part]) != CBLOB_OK)
            return false;
        out->bytes[part] = malloc(out->size + 1);
        if (out->bytes[part] == NULL)
            return false;
        if (out->size > 0)
            memcpy(out->bytes[part], out->pointers[part], out->size);
    }
    return true;
}

bool ft_snapshot_same(cblob_blob *blob, const ft_snapshot *snapshot)
{
    ft_snapshot now;
    bool same = ft_snapshot_take(blob, &now) && now.num_axes == snapshot->num_axes &&
                memcmp(now.dims, snapshot->dims, sizeof now.dims) == 0 && now.count == snapshot->count &&
                now.capacity == snapshot->capacity && now.heads[0] == snapshot->heads[0] &&
                now.heads[1] == snapshot->heads[1] && now.pointers[0] == snapshot->pointers[0] &&
                now.pointers[1] == snapshot->pointers[1];
    for (int part = 0; same && part < 2; ++part)
        same = (now.bytes[part] == NULL) == (snapshot->bytes[part] == NULL) &&
               (now.bytes[part] == NULL || memcmp(now.bytes[part], snapshot->bytes[part], now.size) == 0);
    ft_snapshot_free(&now);
    return same;
}

void ft_snapshot_free(ft_snapshot *snapshot)
{
    free(snapshot->bytes[0]);
    free(snapshot->bytes[1]);
    snapshot->bytes[0] = snapshot->bytes[1] = NULL;
}

bool ft_temp_folder(char *folder, size_t size)
{
    const char *base = getenv("TMPDIR");
    snprintf(folder, size, "%s/cblob-test-XXXXXX", base != NULL && base[0] != '\0' ? base : "/tmp");
    return mkdtemp(folder) != NULL;
}

void ft_remove_folder(const char *folder)
{
    DIR *dir = opendir(folder);
    if (dir == NULL)
        return;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
        unlink(path);
    }
    closedir(dir);
    rmdir(folder);
}

uint8_t *ft_read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    uint8_t *bytes = NULL;
    size_t used = 0, capacity = 0;
    for (;;) {
        if (used == capacity) {
            capacity = capacity ? capacity * 2 : 65536;
            uint8_t *grown = realloc(bytes, capacity);
            if (grown == NULL)
                break;
            bytes = grown;
        }
        const size_t n = fread(bytes + used, 1, capacity - used, file);
        used += n;
        if (n == 0)
            break;
    }
    const bool ok = !ferror(file);
    fclose(file);
    if (!ok) {
        free(bytes);
        return NULL;
    }
    *size = used;
    return bytes != NULL ? bytes : malloc(1);
}

bool ft_write_file(const char *path, const void *bytes, size_t size)
{
    FILE *file = fopen(path, "wb");
    if (file == NULL)
        return false;
    const bool ok = fwrite(bytes, 1, size, file) == size;
    return fclose(file) == 0 && ok;
}
