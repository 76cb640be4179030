/* SPDX-License-Identifier: BSD-2-Clause */
#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
    cblob_dtype dtype;
    const char *descr;
    size_t size;
} npy_dtypes[] = {
    {CBLOB_DTYPE_FLOAT32, "<f4", 4},
    {CBLOB_DTYPE_FLOAT64, "<f8", 8},
    {CBLOB_DTYPE_INT32, "<i4", 4},
    {CBLOB_DTYPE_UINT32, "<u4", 4},
};

#define NPY_DTYPES (sizeof npy_dtypes / sizeof npy_dtypes[0])

/* ---- write ----------------------------------------------------------------------------- */

/* The header dict, padded with spaces and a newline so that the values start at a multiple of
 * 64 bytes, as NumPy writes it. */
static size_t make_header(char *header, size_t size, const char *descr, int32_t num_axes, const int64_t *dims)
{
    size_t used = (size_t)snprintf(header, size, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int32_t i = 0; i < num_axes && used < size; ++i)
        used += (size_t)snprintf(header + used, size - used, "%s%" PRId64 "%s", i > 0 ? " " : "", dims[i],
                                 num_axes == 1 || i + 1 < num_axes ? "," : "");
    used += (size_t)snprintf(header + used, size - used, "), }");
    const size_t prefix = sizeof magic + 2 + 2; /* magic, version, header length */
    while ((prefix + used + 1) % 64 != 0 && used < size - 1)
        header[used++] = ' ';
    header[used++] = '\n';
    return used;
}

int npy_write(const char *path, cblob_blob *blob, cblob_part part, char *error, size_t error_size)
{
    int32_t num_axes = 0;
    int64_t dims[CBLOB_MAX_AXES], count = 0;
    cblob_dtype dtype = CBLOB_DTYPE_FLOAT32;
    const void *values = NULL;
    if (cblob_blob_shape(blob, CBLOB_MAX_AXES, dims, &num_axes) != CBLOB_OK ||
        cblob_blob_count(blob, &count) != CBLOB_OK || cblob_blob_dtype(blob, &dtype) != CBLOB_OK ||
        (count > 0 && cblob_blob_cpu_ptr(blob, part, &values) != CBLOB_OK)) {
        snprintf(error, error_size, "%s", cblob_last_error_message());
        return -1;
    }
    size_t index = 0;
    while (index < NPY_DTYPES && npy_dtypes[index].dtype != dtype)
        ++index;
    char header[CBLOB_MAX_AXES * 24 + 256];
    const size_t header_length = make_header(header, sizeof header, npy_dtypes[index].descr, num_axes, dims);
    const unsigned char version_and_length[4] = {1, 0, (unsigned char)(header_length & 0xff),
                                                 (unsigned char)(header_length >> 8)};
    FILE *file = fopen(path, "wb");
    if (file == NULL) {
        snprintf(error, error_size, "cannot create: %s", strerror(errno));
        return -1;
    }
    bool ok = fwrite(magic, 1, sizeof magic, file) == sizeof magic &&
              fwrite(version_and_length, 1, 4, file) == 4 &&
              fwrite(header, 1, header_length, file) == header_length &&
              fwrite(values, npy_dtypes[index].size, (size_t)count, file) == (size_t)count;
    const int write_errno = errno;
    ok = fclose(file) == 0 && ok;
    if (!ok) {
        snprintf(error, error_size, "cannot write: %s", strerror(write_errno));
        remove(path);
        return -1;
    }
    return 0;
}

/* ---- read ------------------------------------------------------------------------------ */

/* The value text after 'key': in the header dict, or NULL. */
static const char *find_key(const char *header, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *at = strstr(header, quoted);
    if (at == NULL)
        return NULL;
    at += strlen(quoted);
    while (isspace((unsigned char)*at))
        ++at;
    if (*at != ':')
        return NULL;
    ++at;
    while (isspace((unsigned char)*at))
        ++at;
    return at;
}

static bool parse_shape(const char *text, int32_t *num_axes, int64_t *dims)
{
    if (text == NULL || *text != '(')
        return false;
    ++text;
    *num_axes = 0;
    for (;;) {
        while (isspace((unsigned char)*text))
            ++text;
        if (*text == ')')
            return true;
        char *end;
        errno = 0;
        const long long dim = strtoll(text, &end, 10);
        if (end == text || errno != 0 || dim < 0 || *num_axes == CBLOB_MAX_AXES)
            return false;
        dims[(*num_axes)++] = dim;
        text = end;
        while (isspace((unsigned char)*text))
            ++text;
        if (*text == ',')
            ++text;
        else if (*text != ')')
            return false;
    }
}

static cblob_status parse_header(const char *header, cblob_dtype *dtype, size_t *item_size, int32_t *num_axes,
                                 int64_t *dims, char *error, size_t error_size)
{
    const char *descr = find_key(header, "descr");
    const char *order = find_key(header, "fortran_order");
    const char *shape = find_key(header, "shape");
    if (descr == NULL || order == NULL || shape == NULL) {
        snprintf(error, error_size, "not a .npy file: the header lacks descr, fortran_order or shape");
        return CBLOB_ERR_PARSE;
    }
    if (strncmp(order, "False", 5) != 0) {
        snprintf(error, error_size, "a Fortran-ordered array (save it with numpy.ascontiguousarray first)");
        return CBLOB_ERR_PARSE;
    }
    size_t index = 0;
    while (index < NPY_DTYPES &&
           !(descr[0] == '\'' && strncmp(descr + 1, npy_dtypes[index].descr, 3) == 0 && descr[4] == '\''))
        ++index;
    if (index == NPY_DTYPES) {
        const char *end = strchr(descr + 1, '\'');
        snprintf(error, error_size, "dtype %.*s is not one a blob holds (little-endian float32, float64, int32, uint32)",
                 end != NULL ? (int)(end - descr + 1) : 8, descr);
        return CBLOB_ERR_PARSE;
    }
    if (!parse_shape(shape, num_axes, dims)) {
        snprintf(error, error_size, "the header's shape is not a tuple of at most %d non-negative integers",
                 CBLOB_MAX_AXES);
        return CBLOB_ERR_PARSE;
    }
    *dtype = npy_dtypes[index].dtype;
    *item_size = npy_dtypes[index].size;
    return CBLOB_OK;
}

/* Reads the preamble and header; leaves the file at the first value. */
static cblob_status read_header(FILE *file, char **out, char *error, size_t error_size)
{
    unsigned char preamble[sizeof magic + 2];
    if (fread(preamble, 1, sizeof preamble, file) != sizeof preamble || memcmp(preamble, magic, sizeof magic) != 0) {
        snprintf(error, error_size, "not a .npy file (no \\x93NUMPY magic)");
        return CBLOB_ERR_PARSE;
    }
    const int major = preamble[sizeof magic];
    unsigned char length_bytes[4] = {0, 0, 0, 0};
    const size_t length_size = major == 1 ? 2 : 4;
    if ((major < 1 || major > 3) || fread(length_bytes, 1, length_size, file) != length_size) {
        snprintf(error, error_size, "unsupported .npy version %d", major);
        return CBLOB_ERR_PARSE;
    }
    const size_t length = (size_t)length_bytes[0] | (size_t)length_bytes[1] << 8 | (size_t)length_bytes[2] << 16 |
                          (size_t)length_bytes[3] << 24;
    if (length > (1u << 20)) {
        snprintf(error, error_size, "a %zu-byte .npy header is implausibly long", length);
        return CBLOB_ERR_PARSE;
    }
    char *header = malloc(length + 1);
    if (header == NULL) {
        snprintf(error, error_size, "out of memory");
        return CBLOB_ERR_OUT_OF_MEMORY;
    }
    if (fread(header, 1, length, file) != length) {
        free(header);
        snprintf(error, error_size, "truncated .npy header");
        return CBLOB_ERR_PARSE;
    }
    header[length] = '\0';
    *out = header;
    return CBLOB_OK;
}

/* The values must fill the rest of the file exactly; checked before anything is allocated, so a
 * header that promises terabytes fails at once. */
static cblob_status check_data_size(FILE *file, size_t item_size, int32_t num_axes, const int64_t *dims, char *error,
                                    size_t error_size)
{
    struct stat info;
    const long offset = ftell(file);
    if (offset < 0 || fstat(fileno(file), &info) != 0) {
        snprintf(error, error_size, "cannot read: %s", strerror(errno));
        return CBLOB_ERR_IO;
    }
    uint64_t needed = item_size;
    bool overflow = false;
    for (int32_t i = 0; i < num_axes; ++i)
        overflow = overflow || __builtin_mul_overflow(needed, (uint64_t)dims[i], &needed);
    const uint64_t held = (uint64_t)info.st_size - (uint64_t)offset;
    if (overflow || needed != held) {
        snprintf(error, error_size, "the header's shape needs %s%" PRIu64 " bytes of values but the file holds %" PRIu64,
                 overflow ? "more than " : "", overflow ? UINT64_MAX : needed, held);
        return CBLOB_ERR_PARSE;
    }
    return CBLOB_OK;
}

cblob_status npy_read(cblob_context *context, const char *path, cblob_blob **out, char *error, size_t error_size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        snprintf(error, error_size, "cannot open: %s", strerror(errno));
        return CBLOB_ERR_IO;
    }
    char *header = NULL;
    cblob_dtype dtype = CBLOB_DTYPE_FLOAT32;
    size_t item_size = 0;
    int32_t num_axes = 0;
    int64_t dims[CBLOB_MAX_AXES];
    cblob_status status = read_header(file, &header, error, error_size);
    if (status == CBLOB_OK)
        status = parse_header(header, &dtype, &item_size, &num_axes, dims, error, error_size);
    free(header);
    cblob_blob *blob = NULL;
    if (status == CBLOB_OK)
        status = check_data_size(file, item_size, num_axes, dims, error, error_size);
    if (status == CBLOB_OK && (status = cblob_blob_create(context, dtype, num_axes, dims, &blob)) != CBLOB_OK)
        snprintf(error, error_size, "%s", tool_library_message());
    int64_t count = 0;
    void *values = NULL;
    if (status == CBLOB_OK) {
        cblob_blob_count(blob, &count);
        if (count > 0 && (status = cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &values)) != CBLOB_OK)
            snprintf(error, error_size, "%s", tool_library_message());
    }
    if (status == CBLOB_OK && count > 0 && fread(values, item_size, (size_t)count, file) != (size_t)count) {
        snprintf(error, error_size, "cannot read the values: %s", ferror(file) ? strerror(errno) : "the file got shorter");
        status = CBLOB_ERR_IO;
    }
    fclose(file);
    if (status != CBLOB_OK) {
        cblob_blob_destroy(blob);
        return status;
    }
    *out = blob;
    return CBLOB_OK;
}
