/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the one .npy codec (src/util/npy.h) as every reader uses it (cblob_file_open's .npy
 * files, .npz members, .npy folders): the header is parsed within the bytes it is given (they
 * have no terminator: an input that ends inside the header must fail, not read past it), and what
 * it accepts becomes a blob of the shape it announced, in its own dtype where a blob holds it and
 * converted to float64 where every value fits. */
#include <string.h>

#include "fuzz.h"
#include "npy.h"
#include "npy_files.h"

static void check_blob(cblob_blob *blob, const cb_npy_array *array)
{
    int64_t dims[CBLOB_MAX_AXES], count = -1;
    int32_t axes = -1;
    FUZZ_ASSERT(cblob_blob_shape(blob, CBLOB_MAX_AXES, dims, &axes) == CBLOB_OK && axes == array->num_axes);
    FUZZ_ASSERT(memcmp(dims, array->dims, (size_t)axes * sizeof *dims) == 0);
    FUZZ_ASSERT(cblob_blob_count(blob, &count) == CBLOB_OK && count == array->count);
    cblob_blob_destroy(blob);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy of exactly size bytes, so that the sanitizer sees any read past them. */
    uint8_t *bytes = malloc(size > 0 ? size : 1);
    FUZZ_ASSERT(bytes != NULL);
    memcpy(bytes, data, size);
    cb_npy_array array;
    if (cb_npy_parse("fuzz.npy", bytes, size, &array) == CBLOB_OK) {
        FUZZ_ASSERT(array.header_size <= size && array.header_size + array.value_bytes == size);
        cblob_blob *blob = NULL;
        if (cb_npy_blob_from_bytes(fuzz_context(), "fuzz.npy", bytes, size, 0, &blob) == CBLOB_OK)
            check_blob(blob, &array);
        if (cb_npy_blob_from_bytes(fuzz_context(), "fuzz.npy", bytes, size, CBLOB_DTYPE_FLOAT64, &blob) == CBLOB_OK)
            check_blob(blob, &array);
    }
    free(bytes);
    return 0;
}
