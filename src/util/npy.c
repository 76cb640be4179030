/* SPDX-License-Identifier: BSD-2-Clause */
#include "npy.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "half.h"
#include "status.h"

static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef enum value_kind { KIND_FLOAT, KIND_INT, KIND_UINT, KIND_BOOL } value_kind;

/* Every dtype read. Those a blob holds come first; the others convert when a dtype is asked for. */
static const struct npy_type {
    const char *descr; /* as NumPy writes it on a little-endian machine */
    const char *name;
    size_t size;
    value_kind kind;
    cblob_dtype dtype; /* a blob's own, or 0 */
} types[] = {
    {"<f4", "float32", 4, KIND_FLOAT, CBLOB_DTYPE_FLOAT32},
    {"<f8", "float64", 8, KIND_FLOAT, CBLOB_DTYPE_FLOAT64},
    {"<i4", "int32", 4, KIND_INT, CBLOB_DTYPE_INT32},
    {"<u4", "uint32", 4, KIND_UINT, CBLOB_DTYPE_UINT32},
    {"<i8", "int64", 8, KIND_INT, 0},
    {"<u8", "uint64", 8, KIND_UINT, 0},
    {"<i2", "int16", 2, KIND_INT, 0},
    {"<u2", "uint16", 2, KIND_UINT, 0},
    {"|i1", "int8", 1, KIND_INT, 0},
    {"|u1", "uint8", 1, KIND_UINT, 0},
    {"|b1", "bool", 1, KIND_BOOL, 0},
    {"<f2", "float16", 2, KIND_FLOAT, 0},
};

#define NUM_TYPES ((int)(sizeof types / sizeof types[0]))
#define BLOB_DTYPES "float32, float64, int32 or uint32"
#define OTHER_DTYPES "int64, uint64, int16, uint16, int8, uint8, bool and float16"

/* ---- the header ----------------------------------------------------------------------------- */

/* The header dict, read from [at, end): no terminator is assumed. */
typedef struct cursor {
    const char *at, *end;
} cursor;

static void skip_space(cursor *c)
{
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r'))
        ++c->at;
}

static bool take(cursor *c, char expected)
{
    skip_space(c);
    if (c->at < c->end && *c->at == expected) {
        ++c->at;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes (all NumPy writes in a header). */
static bool take_string(cursor *c, const char **text, size_t *length)
{
    skip_space(c);
    if (c->at >= c->end || (*c->at != '\'' && *c->at != '"'))
        return false;
    const char quote = *c->at++;
    const char *start = c->at;
    while (c->at < c->end && *c->at != quote && *c->at != '\\')
        ++c->at;
    if (c->at >= c->end || *c->at != quote)
        return false;
    *text = start;
    *length = (size_t)(c->at++ - start);
    return true;
}

static bool take_word(cursor *c, const char *word)
{
    skip_space(c);
    const size_t length = strlen(word);
    if ((size_t)(c->end - c->at) < length || memcmp(c->at, word, length) != 0)
        return false;
    c->at += length;
    return true;
}

/* A tuple of non-negative integers: "()", "(3,)", "(2, 3)". */
static bool take_shape(cursor *c, cb_npy_array *array)
{
    if (!take(c, '('))
        return false;
    array->num_axes = 0;
    while (!take(c, ')')) {
        skip_space(c);
        int64_t dim = 0;
        const char *start = c->at;
        while (c->at < c->end && *c->at >= '0' && *c->at <= '9')
            if (__builtin_mul_overflow(dim, 10, &dim) || __builtin_add_overflow(dim, *c->at++ - '0', &dim))
                return false;
        if (c->at == start || array->num_axes == CBLOB_MAX_AXES)
            return false;
        array->dims[array->num_axes++] = dim;
        if (!take(c, ',')) {
            if (!take(c, ')'))
                return false;
            break;
        }
    }
    return true;
}

static cblob_status parse_descr(const char *name, const char *descr, size_t length, cb_npy_array *array)
{
    for (int i = 0; i < NUM_TYPES; ++i) {
        const char *own = types[i].descr;
        /* One-byte types may be written with '|', '<' or '=' alike. */
        const bool byte_order_free = types[i].size == 1 && length == 3 && strchr("|<=", descr[0]) != NULL;
        if (length == 3 && (memcmp(descr, own, 3) == 0 || (byte_order_free && memcmp(descr + 1, own + 1, 2) == 0))) {
            array->type = i;
            return CBLOB_OK;
        }
    }
    if (length == 3 && descr[0] == '>')
        return cb_fail(CBLOB_ERR_PARSE,
                       "%s holds big-endian values (%.3s); cblob reads little-endian .npy arrays: save it with "
                       "numpy.save(path, a.astype(a.dtype.newbyteorder('<')))",
                       name, descr);
    return cb_fail(CBLOB_ERR_PARSE,
                   "%s holds dtype '%.*s', which cblob does not read (a blob holds " BLOB_DTYPES "; " OTHER_DTYPES
                   " convert when a dtype is asked for): save it with numpy.save(path, a.astype(numpy.float32))",
                   name, (int)(length < 32 ? length : 32), descr);
}

/* One key's value; NumPy writes exactly descr, fortran_order and shape. */
static cblob_status parse_entry(const char *name, cursor *c, cb_npy_array *array, int *seen)
{
    const char *key, *text;
    size_t key_length, length;
    if (!take_string(c, &key, &key_length) || !take(c, ':'))
        return cb_fail(CBLOB_ERR_PARSE, "%s: the .npy header is not a dict of quoted keys", name);
    if (key_length == 5 && memcmp(key, "descr", 5) == 0) {
        if (!take_string(c, &text, &length))
            return cb_fail(CBLOB_ERR_PARSE, "%s holds a structured array or a dtype cblob does not read "
                           "(a blob holds " BLOB_DTYPES ")", name);
        CB_TRY(parse_descr(name, text, length, array));
        *seen |= 1;
    } else if (key_length == 13 && memcmp(key, "fortran_order", 13) == 0) {
        if (take_word(c, "True"))
            return cb_fail(CBLOB_ERR_PARSE, "%s is a Fortran-ordered array: save it with numpy.ascontiguousarray first",
                           name);
        if (!take_word(c, "False"))
            return cb_fail(CBLOB_ERR_PARSE, "%s: fortran_order is neither True nor False", name);
        *seen |= 2;
    } else if (key_length == 5 && memcmp(key, "shape", 5) == 0) {
        if (!take_shape(c, array))
            return cb_fail(CBLOB_ERR_PARSE, "%s: the header's shape is not a tuple of at most %d non-negative integers",
                           name, CBLOB_MAX_AXES);
        *seen |= 4;
    } else {
        return cb_fail(CBLOB_ERR_PARSE, "%s: the .npy header has a key '%.*s' NumPy does not write", name,
                       (int)(key_length < 32 ? key_length : 32), key);
    }
    return CBLOB_OK;
}

static cblob_status parse_dict(const char *name, const char *header, size_t length, cb_npy_array *array)
{
    cursor c = {header, header + length};
    int seen = 0;
    if (!take(&c, '{'))
        return cb_fail(CBLOB_ERR_PARSE, "%s: the .npy header is not a dict", name);
    while (!take(&c, '}')) {
        CB_TRY(parse_entry(name, &c, array, &seen));
        if (!take(&c, ',')) {
            if (!take(&c, '}'))
                return cb_fail(CBLOB_ERR_PARSE, "%s: the .npy header dict is not closed", name);
            break;
        }
    }
    skip_space(&c);
    if (seen != 7 || c.at != c.end)
        return cb_fail(CBLOB_ERR_PARSE, "%s: the .npy header lacks descr, fortran_order or shape, or has more", name);
    return CBLOB_OK;
}

cblob_status cb_npy_header_size(const char *name, const uint8_t *bytes, size_t available, size_t *out)
{
    if (available < 8 || memcmp(bytes, magic, sizeof magic) != 0)
        return cb_fail(CBLOB_ERR_PARSE, "%s is not a .npy array (no \\x93NUMPY magic)", name);
    const int major = bytes[sizeof magic];
    const size_t length_size = major == 1 ? 2 : 4;
    if (major < 1 || major > 3)
        return cb_fail(CBLOB_ERR_PARSE, "%s: unsupported .npy version %d", name, major);
    if (available < 8 + length_size)
        return cb_fail(CBLOB_ERR_PARSE, "%s: truncated .npy header", name);
    const uint8_t *l = bytes + 8;
    const size_t length = length_size == 2 ? (size_t)l[0] | (size_t)l[1] << 8
                                           : (size_t)l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24;
    if (length > CB_NPY_MAX_HEADER_BYTES)
        return cb_fail(CBLOB_ERR_PARSE, "%s: a %zu-byte .npy header (cblob reads at most %zu)", name, length,
                       CB_NPY_MAX_HEADER_BYTES);
    *out = 8 + length_size + length;
    return CBLOB_OK;
}

cblob_status cb_npy_parse_header(const char *name, const uint8_t *bytes, size_t available, cb_npy_array *out)
{
    size_t size = 0;
    CB_TRY(cb_npy_header_size(name, bytes, available, &size));
    if (size > available)
        return cb_fail(CBLOB_ERR_PARSE, "%s: truncated .npy header (%zu bytes announced, %zu there)", name, size,
                       available);
    const size_t start = bytes[sizeof magic] == 1 ? 10 : 12;
    cb_npy_array array = {.header_size = size};
    CB_TRY(parse_dict(name, (const char *)bytes + start, size - start, &array));
    uint64_t needed = types[array.type].size, count = 1;
    bool overflow = false;
    for (int32_t i = 0; i < array.num_axes; ++i)
        overflow = overflow || __builtin_mul_overflow(needed, (uint64_t)array.dims[i], &needed) ||
                   __builtin_mul_overflow(count, (uint64_t)array.dims[i], &count);
    if (overflow || count > INT64_MAX)
        return cb_fail(CBLOB_ERR_PARSE, "%s: the header's shape holds more than 2^63 values", name);
    array.count = (int64_t)count;
    array.value_bytes = needed;
    *out = array;
    return CBLOB_OK;
}

cblob_status cb_npy_parse(const char *name, const uint8_t *bytes, size_t size, cb_npy_array *out)
{
    cb_npy_array array;
    CB_TRY(cb_npy_parse_header(name, bytes, size, &array));
    const uint64_t held = size - array.header_size;
    if (array.value_bytes != held)
        return cb_fail(CBLOB_ERR_PARSE, "%s: the header's shape needs %" PRIu64 " bytes of values but %" PRIu64
                       " follow", name, array.value_bytes, held);
    *out = array;
    return CBLOB_OK;
}

const char *cb_npy_type_name(const cb_npy_array *array)
{
    return types[array->type].name;
}

size_t cb_npy_element_size(const cb_npy_array *array)
{
    return types[array->type].size;
}

/* ---- values --------------------------------------------------------------------------------- */

static const struct npy_type *type_of(cblob_dtype dtype)
{
    for (int i = 0; i < NUM_TYPES; ++i)
        if (types[i].dtype == dtype)
            return &types[i];
    return NULL;
}

cblob_status cb_npy_blob_dtype(const char *name, const cb_npy_array *array, cblob_dtype requested, cblob_dtype *out)
{
    if (requested != 0) {
        if (type_of(requested) == NULL)
            return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "dtype %d is none of " BLOB_DTYPES, (int)requested);
        *out = requested;
        return CBLOB_OK;
    }
    const struct npy_type *from = &types[array->type];
    if (from->dtype == 0)
        return cb_fail(CBLOB_ERR_PARSE,
                       "%s holds %s values%s; a blob holds " BLOB_DTYPES ": ask for a dtype to convert them, "
                       "refusing values that do not fit (cblob convert --dtype float32), or cast with NumPy: "
                       "numpy.save(path, numpy.load(path).astype(numpy.float32))",
                       name, from->name, strcmp(from->name, "int64") == 0 ? " (NumPy's default integer type)" : "");
    *out = from->dtype;
    return CBLOB_OK;
}

/* Value i of values (an array of type), exactly (long double holds every int64, uint64 and double). */
static long double value_at(const struct npy_type *type, const uint8_t *values, int64_t i)
{
    const uint8_t *p = values + (size_t)i * type->size;
    uint64_t raw = 0;
    for (size_t b = type->size; b-- > 0;)
        raw = raw << 8 | p[b];
    const unsigned bits = (unsigned)type->size * 8;
    switch (type->kind) {
    case KIND_BOOL: return raw != 0;
    case KIND_UINT: return (long double)raw;
    case KIND_INT:
        return bits < 64 && raw >> (bits - 1) ? (long double)(int64_t)(raw - (1ull << bits)) : (long double)(int64_t)raw;
    default: break;
    }
    if (type->size == 2)
        return cb_half_to_float((uint16_t)raw);
    if (type->size == 4) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    double d;
    memcpy(&d, p, 8);
    return d;
}

/* Whether v fits the target: integers exactly, floats within range (rounded). */
static bool fits(long double v, value_kind from, const struct npy_type *to)
{
    if (to->kind == KIND_FLOAT) {
        const long double converted = to->size == 4 ? (long double)(float)v : (long double)(double)v;
        if (from != KIND_FLOAT)
            return converted == v;
        return isnan(v) || isinf(v) || isfinite(converted);
    }
    if (isnan(v) || v != truncl(v))
        return false;
    return to->kind == KIND_INT ? v >= INT32_MIN && v <= INT32_MAX : v >= 0 && v <= UINT32_MAX;
}

static void store(const struct npy_type *to, long double v, void *values, int64_t i)
{
    switch (to->dtype) {
    case CBLOB_DTYPE_FLOAT32: ((float *)values)[i] = (float)v; break;
    case CBLOB_DTYPE_FLOAT64: ((double *)values)[i] = (double)v; break;
    case CBLOB_DTYPE_INT32: ((int32_t *)values)[i] = (int32_t)v; break;
    default: ((uint32_t *)values)[i] = (uint32_t)v; break;
    }
}

cblob_status cb_npy_convert(const char *name, const cb_npy_array *array, const void *values, int64_t first,
                            int64_t count, cblob_dtype to_dtype, void *out)
{
    const struct npy_type *from = &types[array->type], *to = type_of(to_dtype);
    if (to == NULL)
        return cb_fail(CBLOB_ERR_INVALID_ARGUMENT, "dtype %d is none of " BLOB_DTYPES, (int)to_dtype);
    if (from == to) {
        if (count > 0)
            memcpy(out, values, (size_t)count * to->size);
        return CBLOB_OK;
    }
    for (int64_t i = 0; i < count; ++i) {
        const long double v = value_at(from, values, i);
        if (!fits(v, from->kind, to))
            return cb_fail(CBLOB_ERR_PARSE, "%s: value %.21Lg at index %" PRId64 " does not fit %s%s", name, v,
                           first + i, to->name,
                           from->kind != KIND_FLOAT && to->kind == KIND_FLOAT ? " exactly (ask for float64)" : "");
        store(to, v, out, i);
    }
    return CBLOB_OK;
}

int64_t cb_npy_first_misfit(cblob_dtype from_dtype, const void *values, int64_t count, cblob_dtype to_dtype,
                            double *value)
{
    const struct npy_type *from = type_of(from_dtype), *to = type_of(to_dtype);
    if (from == NULL || to == NULL || from == to)
        return -1;
    for (int64_t i = 0; i < count; ++i) {
        const long double v = value_at(from, values, i);
        if (!fits(v, from->kind, to)) {
            *value = (double)v;
            return i;
        }
    }
    return -1;
}

/* ---- writing -------------------------------------------------------------------------------- */

size_t cb_npy_make_header(cblob_dtype dtype, int32_t num_axes, const int64_t *dims,
                          uint8_t out[CB_NPY_WRITE_HEADER_BYTES])
{
    const struct npy_type *type = type_of(dtype);
    char *text = (char *)out;
    const size_t size = CB_NPY_WRITE_HEADER_BYTES, prefix = 10; /* magic, version, header length */
    size_t used = prefix;
    used += (size_t)snprintf(text + used, size - used, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                             type != NULL ? type->descr : "<f4");
    for (int32_t i = 0; i < num_axes; ++i)
        used += (size_t)snprintf(text + used, size - used, "%s%" PRId64 "%s", i > 0 ? " " : "", dims[i],
                                 num_axes == 1 || i + 1 < num_axes ? "," : "");
    used += (size_t)snprintf(text + used, size - used, "), }");
    while ((used + 1) % 64 != 0)
        text[used++] = ' ';
    text[used++] = '\n';
    const size_t length = used - prefix;
    memcpy(out, magic, sizeof magic);
    out[6] = 1;
    out[7] = 0;
    out[8] = (uint8_t)(length & 0xff);
    out[9] = (uint8_t)(length >> 8);
    return used;
}
