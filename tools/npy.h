/* SPDX-License-Identifier: BSD-2-Clause */
/* NumPy's .npy format (version 1.0 written; 1.0, 2.0 and 3.0 read): a header describing dtype,
 * order and shape, then the values in C order. A blob holds float32, float64, int32 or uint32
 * (little-endian); int64, uint64, int16, uint16, int8, uint8, bool and float16 arrays are read
 * too, and become a blob only when a dtype to convert them to is given. */
#ifndef CBLOB_TOOLS_NPY_H
#define CBLOB_TOOLS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "cblob/cblob.h"
#include "io.h"
#include "tool.h"

/* An array's description and where its values lie in the file's bytes. */
typedef struct npy_array {
    int type; /* the row of npy.c's table of dtypes */
    int32_t num_axes;
    int64_t dims[CBLOB_MAX_AXES];
    int64_t count;
    const uint8_t *values;
} npy_array;

/* Reads the header of a .npy file's bytes (bounded by size: the bytes need no terminator) and
 * checks that the values it describes are exactly what follows. CBLOB_ERR_PARSE names the file
 * and what is wrong; a dtype no reader here takes (big-endian, complex, structured, ...) says how
 * to save it in one it does. */
cblob_status npy_parse(const char *name, const uint8_t *bytes, size_t size, npy_array *out);

/* No dtype asked for: the blob takes the array's own, which must be one a blob holds. */
#define NPY_DTYPE_AS_IS ((cblob_dtype)0)

/* Parses a .npy's dtype name ("float32", ...) as --dtype gives it; false when it is not one a
 * blob holds. */
bool npy_dtype_parse(const char *text, cblob_dtype *out);

/* A new blob holding the array, in the dtype asked for (or its own). Conversion refuses a value
 * that does not fit: an integer a float type cannot hold exactly, a float outside the target's
 * range, or a non-integral or out-of-range value for an integer type; the message names the
 * first such value and its index. An array whose dtype a blob does not hold, given no dtype,
 * fails with a message saying how to convert it (here or with NumPy). */
cblob_status npy_to_blob(cblob_context *context, const char *name, const npy_array *array, cblob_dtype dtype,
                         cblob_blob **out);

/* Writes a part of a blob as a .npy file to output, reading its values in pieces. */
cblob_status npy_write(cb_output *output, const tool_blob *blob, const tool_blob_facts *facts, cblob_part part);

#endif
