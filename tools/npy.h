/* SPDX-License-Identifier: BSD-2-Clause */
/* NumPy's .npy format (version 1.0 written; 1.0, 2.0 and 3.0 read): a header describing dtype,
 * order and shape, then the values in C order. Only the dtypes a blob has, little-endian. */
#ifndef CBLOB_TOOLS_NPY_H
#define CBLOB_TOOLS_NPY_H

#include <stddef.h>

#include "cblob/cblob.h"

/* Writes part (data or diff) of blob to path. On failure writes a message into error and removes
 * any partial file. */
int npy_write(const char *path, cblob_blob *blob, cblob_part part, char *error, size_t error_size);

/* Reads path into a new blob of the file's dtype and shape. On failure writes a message into
 * error and returns the library status (CBLOB_ERR_IO or CBLOB_ERR_PARSE for the file's faults). */
cblob_status npy_read(cblob_context *context, const char *path, cblob_blob **out, char *error, size_t error_size);

#endif
