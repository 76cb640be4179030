/* SPDX-License-Identifier: BSD-2-Clause */
/* NumPy's .npy format (src/util): the one .npy codec of cblob, for single .npy files, the members
 * of an .npz and the files of a .npy folder alike. Version 1.0 is written; 1.0, 2.0 and 3.0 are
 * read. A header describes dtype, order and shape; the values follow in C order.
 *
 * A blob holds float32, float64, int32 or uint32 (little-endian): arrays of those become a blob
 * as they are. int64, uint64, int16, uint16, int8, uint8, bool and float16 arrays are read too,
 * and convert to a blob's dtype only when one is asked for, refusing any value that does not fit
 * (an integer a float type cannot hold exactly, a float outside the target's range, a fraction
 * or an out-of-range value for an integer type). */
#ifndef CBLOB_UTIL_NPY_H
#define CBLOB_UTIL_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"

/* The bytes before a header's length is known: magic, version, and a 2- or 4-byte length. */
#define CB_NPY_PREAMBLE_BYTES 12
/* Headers longer than this are refused (NumPy writes a few hundred bytes; 32 axes fit easily). */
#define CB_NPY_MAX_HEADER_BYTES ((size_t)1 << 16)
/* Room for any header cb_npy_make_header writes. */
#define CB_NPY_WRITE_HEADER_BYTES 1024

/* An array's description, from its header. */
typedef struct cb_npy_array {
    int type; /* a row of npy.c's table of dtypes */
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count;
    size_t header_size;   /* bytes before the values */
    uint64_t value_bytes; /* count times the element's size */
} cb_npy_array;

/* The size of the whole header, from its first bytes (available is at least
 * CB_NPY_PREAMBLE_BYTES, or all there is). CBLOB_ERR_PARSE names `name` and what is wrong. */
cblob_status cb_npy_header_size(const char *name, const uint8_t *bytes, size_t available, size_t *out);
/* Parses the header at the start of bytes[0, available) (its whole size must be there). */
cblob_status cb_npy_parse_header(const char *name, const uint8_t *bytes, size_t available, cb_npy_array *out);
/* Both, and a check that exactly the values the header describes follow in bytes[0, size). */
cblob_status cb_npy_parse(const char *name, const uint8_t *bytes, size_t size, cb_npy_array *out);

const char *cb_npy_type_name(const cb_npy_array *array);
size_t cb_npy_element_size(const cb_npy_array *array);

/* The dtype the array becomes: `requested` when it is a dtype (0 asks for the array's own), the
 * array's own otherwise, which must be one a blob holds (a message says how to convert it). */
cblob_status cb_npy_blob_dtype(const char *name, const cb_npy_array *array, cblob_dtype requested, cblob_dtype *out);
/* Values [first, first + count) of the array, read from `values` (which starts at element
 * first), into out as `to`: copied when `to` is the array's own dtype, else converted, refusing
 * (CBLOB_ERR_PARSE, naming the value and its index) one that does not fit. */
cblob_status cb_npy_convert(const char *name, const cb_npy_array *array, const void *values, int64_t first,
                            int64_t count, cblob_dtype to, void *out);

/* The index of the first of count values of a blob's dtype `from` that a blob's dtype `to` cannot
 * hold by cb_npy_convert's rule (integers exactly, floats within range), its value in *value; -1
 * when every value fits (or a dtype is none of a blob's). */
int64_t cb_npy_first_misfit(cblob_dtype from, const void *values, int64_t count, cblob_dtype to, double *value);

/* Writes the version 1.0 header of an array of dtype and shape into out, padded with spaces and a
 * newline so that the values start at a multiple of 64 bytes, as NumPy writes it; returns its
 * size. */
size_t cb_npy_make_header(cblob_dtype dtype, int32_t num_axes, const int64_t *dims,
                          uint8_t out[CB_NPY_WRITE_HEADER_BYTES]);

#endif
