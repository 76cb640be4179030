/* SPDX-License-Identifier: BSD-2-Clause */
#include "npy.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef enum value_kind { KIND_FLOAT, KIND_INT, KIND_UINT, KIND_BOOL } value_kind;

/* Every dtype read. Those a blob holds come first; the others convert with a dtype given. */
static const struct npy_type {
    const char *descr; /* as NumPy writes it on a little-endian machine */
    const char *name;
    size_t size;
    value_kind kind;
    cblob_dtype dtype; /* a blob's own, or NPY_DTYPE_AS_IS */
} types[] = {
    {"<f4", "float32", 4, KIND_FLOAT, CBLOB_DTYPE_FLOAT32},
    {"<f8", "float64", 8, KIND_FLOAT, CBLOB_DTYPE_FLOAT64},
    {"<i4", "int32", 4, KIND_INT, CBLOB_DTYPE_INT32},
    {"<u4", "uint32", 4, KIND_UINT, CBLOB_DTYPE_UINT32},
    {"<i8", "int64", 8, KIND_INT, NPY_DTYPE_AS_IS},
    {"<u8", "uint64", 8, KIND_UINT, NPY_DTYPE_AS_IS},
    {"<i2", "int16", 2, KIND_INT, NPY_DTYPE_AS_IS},
    {"<u2", "uint16", 2, KIND_UINT, NPY_DTYPE_AS_IS},
    {"|i1", "int8", 1, KIND_INT, NPY_DTYPE_AS_IS},
    {"|u1", "uint8", 1, KIND_UINT, NPY_DTYPE_AS_IS},
    {"|b1", "bool", 1, KIND_BOOL, NPY_DTYPE_AS_IS},
    {"<f2", "float16", 2, KIND_FLOAT, NPY_DTYPE_AS_IS},
};

#define NUM_TYPES ((int)(sizeof types / sizeof types[0]))

static const char *const blob_dtypes_text = "float32, float64, int32 or uint32";

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
static bool take_shape(cursor *c, npy_array *array)
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

static cblob_status parse_descr(const char *name, const char *descr, size_t length, npy_array *array)
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
                       "%s holds big-endian values (%.3s); cblob reads little-endian .npy files: save it with "
                       "numpy.save(path, a.astype(a.dtype.newbyteorder('<')))",
                       name, descr);
    return cb_fail(CBLOB_ERR_PARSE,
                   "%s holds dtype '%.*s', which cblob does not read (a blob holds %s; int64, uint64, int16, uint16, "
                   "int8, uint8, bool and float16 convert with --dtype): save it with numpy.save(path, "
                   "a.astype(numpy.float32))",
                   name, (int)(length < 32 ? length : 32), descr, blob_dtypes_text);
}

/* One key's value; NumPy writes exactly descr, fortran_order and shape. */
static cblob_status parse_entry(const char *name, cursor *c, npy_array *array, int *seen)
{
    const char *key, *text;
    size_t key_length, length;
    if (!take_string(c, &key, &key_length) || !take(c, ':'))
        return cb_fail(CBLOB_ERR_PARSE, "%s: the .npy header is not a dict of quoted keys", name);
    if (key_length == 5 && memcmp(key, "descr", 5) == 0) {
        if (!take_string(c, &text, &length))
            return cb_fail(CBLOB_ERR_PARSE, "%s holds a structured array or a dtype cblob does not read "
                           "(a blob holds %s)", name, blob_dtypes_text);
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

static cblob_status parse_dict(const char *name, const char *header, size_t length, npy_array *array)
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

cblob_status npy_parse(const char *name, const uint8_t *bytes, size_t size, npy_array *out)
{
    if (size < sizeof magic + 2 || memcmp(bytes, magic, sizeof magic) != 0)
        return cb_fail(CBLOB_ERR_PARSE, "%s is not a .npy file (no \\x93NUMPY magic)", name);
    const int major = bytes[sizeof magic];
    const size_t length_size = major == 1 ? 2 : 4;
    if (major < 1 || major > 3 || size < sizeof magic + 2 + length_size)
        return cb_fail(CBLOB_ERR_PARSE, "%s: unsupported .npy version %d", name, major);
    const uint8_t *l = bytes + sizeof magic + 2;
    const size_t length = length_size == 2 ? (size_t)l[0] | (size_t)l[1] << 8
                                           : (size_t)l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24;
    const size_t start = sizeof magic + 2 + length_size;
    if (length > size - start)
        return cb_fail(CBLOB_ERR_PARSE, "%s: truncated .npy header (%zu bytes announced, %zu there)", name, length,
                       size - start);
    npy_array array = {0};
    CB_TRY(parse_dict(name, (const char *)bytes + start, length, &array));
    uint64_t needed = types[array.type].size, count = 1;
    bool overflow = false;
    for (int32_t i = 0; i < array.num_axes; ++i)
        overflow = overflow || __builtin_mul_overflow(needed, (uint64_t)array.dims[i], &needed) ||
                   __builtin_mul_overflow(count, (uint64_t)array.dims[i], &count);
    const uint64_t held = size - start - length;
    if (overflow || needed != held || count > INT64_MAX)
        return cb_fail(CBLOB_ERR_PARSE, "%s: the header's shape needs %s%" PRIu64 " bytes of values but the file holds %" PRIu64,
                       name, overflow ? "more than " : "", overflow ? UINT64_MAX : needed, held);
    array.count = (int64_t)count;
    array.values = bytes + start + length;
    *out = array;
    return CBLOB_OK;
}

/* ---- values into a blob --------------------------------------------------------------------- */

bool npy_dtype_parse(const char *text, cblob_dtype *out)
{
    for (int i = 0; i < NUM_TYPES; ++i)
        if (types[i].dtype != NPY_DTYPE_AS_IS && strcmp(text, types[i].name) == 0) {
            *out = types[i].dtype;
            return true;
        }
    return false;
}

static const struct npy_type *type_of(cblob_dtype dtype)
{
    for (int i = 0; i < NUM_TYPES; ++i)
        if (types[i].dtype == dtype)
            return &types[i];
    return &types[0];
}

static float half_to_float(uint16_t h)
{
    const int exponent = h >> 10 & 0x1f, mantissa = h & 0x3ff;
    const float sign = h & 0x8000 ? -1.0f : 1.0f;
    if (exponent == 0)
        return sign * ldexpf((float)mantissa, -24);
    if (exponent == 31)
        return mantissa != 0 ? NAN : sign * INFINITY;
    return sign * ldexpf((float)(mantissa | 0x400), exponent - 25);
}

/* Value i of the array, exactly (long double holds every int64, uint64 and double). */
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
    case KIND_INT: return bits < 64 && raw >> (bits - 1) ? (long double)(int64_t)(raw - (1ull << bits)) : (long double)(int64_t)raw;
    default: break;
    }
    if (type->size == 2)
        return half_to_float((uint16_t)raw);
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

static cblob_status convert(const char *name, const npy_array *array, const struct npy_type *to, void *values)
{
    const struct npy_type *from = &types[array->type];
    for (int64_t i = 0; i < array->count; ++i) {
        const long double v = value_at(from, array->values, i);
        if (!fits(v, from->kind, to))
            return cb_fail(CBLOB_ERR_PARSE, "%s: value %.21Lg at index %" PRId64 " does not fit %s%s: nothing was "
                           "converted", name, v, i, to->name,
                           from->kind != KIND_FLOAT && to->kind == KIND_FLOAT ? " exactly (try --dtype float64)" : "");
        store(to, v, values, i);
    }
    return CBLOB_OK;
}

static cblob_status refuse_unconverted(const char *name, const npy_array *array)
{
    const char *type = types[array->type].name;
    return cb_fail(CBLOB_ERR_PARSE,
                   "%s holds %s values%s; a blob holds %s: give --dtype float32 (or float64, int32, uint32) to "
                   "convert them, refusing values that do not fit, or cast with NumPy: numpy.save(path, "
                   "numpy.load(path).astype(numpy.float32))",
                   name, type, strcmp(type, "int64") == 0 ? " (NumPy's default integer type)" : "", blob_dtypes_text);
}

cblob_status npy_to_blob(cblob_context *context, const char *name, const npy_array *array, cblob_dtype dtype,
                         cblob_blob **out)
{
    const struct npy_type *from = &types[array->type];
    if (dtype == NPY_DTYPE_AS_IS && from->dtype == NPY_DTYPE_AS_IS)
        return refuse_unconverted(name, array);
    const struct npy_type *to = type_of(dtype != NPY_DTYPE_AS_IS ? dtype : from->dtype);
    cblob_blob *blob = NULL;
    cblob_status status = cblob_blob_create(context, to->dtype, array->num_axes, array->dims, &blob);
    void *values = NULL;
    if (status == CBLOB_OK && array->count > 0)
        status = cblob_blob_mutable_cpu_ptr(blob, CBLOB_PART_DATA, &values);
    if (status != CBLOB_OK) {
        cblob_blob_destroy(blob);
        return tool_library_error(status, name);
    }
    if (from == to && array->count > 0)
        memcpy(values, array->values, (size_t)array->count * to->size);
    else if (from != to)
        status = convert(name, array, to, values);
    if (status != CBLOB_OK) {
        cblob_blob_destroy(blob);
        return status;
    }
    *out = blob;
    return CBLOB_OK;
}

/* ---- writing -------------------------------------------------------------------------------- */

/* The preamble and header dict, padded with spaces and a newline so that the values start at a
 * multiple of 64 bytes, as NumPy writes it. */
static size_t make_header(char *out, size_t size, const char *descr, const tool_blob_facts *facts)
{
    const size_t prefix = sizeof magic + 4; /* magic, version, header length */
    size_t used = prefix;
    used += (size_t)snprintf(out + used, size - used, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int32_t i = 0; i < facts->num_axes; ++i)
        used += (size_t)snprintf(out + used, size - used, "%s%" PRId64 "%s", i > 0 ? " " : "", facts->dims[i],
                                 facts->num_axes == 1 || i + 1 < facts->num_axes ? "," : "");
    used += (size_t)snprintf(out + used, size - used, "), }");
    while ((used + 1) % 64 != 0)
        out[used++] = ' ';
    out[used++] = '\n';
    const size_t length = used - prefix;
    memcpy(out, magic, sizeof magic);
    out[6] = 1;
    out[7] = 0;
    out[8] = (char)(length & 0xff);
    out[9] = (char)(length >> 8);
    return used;
}

cblob_status npy_write(cb_output *output, const tool_blob *blob, const tool_blob_facts *facts, cblob_part part)
{
    /* At most 32 axes of 20 digits and 3 more characters each. */
    char header[64 + CBLOB_MAX_AXES * 24 + 128];
    const struct npy_type *type = type_of(facts->dtype);
    CB_TRY(cb_output_write(output, header, make_header(header, sizeof header, type->descr, facts)));
    static uint8_t piece[TOOL_PIECE_BYTES];
    const int64_t per_piece = (int64_t)(sizeof piece / type->size);
    for (int64_t start = 0; start < facts->count; start += per_piece) {
        const int64_t n = facts->count - start < per_piece ? facts->count - start : per_piece;
        CB_TRY(tool_blob_read(blob, part, start, n, piece, sizeof piece));
        CB_TRY(cb_output_write(output, piece, (size_t)n * type->size));
    }
    return CBLOB_OK;
}
