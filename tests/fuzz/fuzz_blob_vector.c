/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the BlobProtoVector reader: the count query and the read must agree, and what is read
 * must write back to a vector that reads the same. */
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cblob_context *context = fuzz_context();
    int64_t count = -1;
    if (cblob_blob_vector_from_proto(context, data, size, 0, NULL, &count) != CBLOB_OK)
        return 0;
    FUZZ_ASSERT(count >= 0);
    cblob_blob **blobs = calloc((size_t)count + 1, sizeof *blobs);
    int64_t read = -1;
    FUZZ_ASSERT(blobs != NULL && cblob_blob_vector_from_proto(context, data, size, count, blobs, &read) == CBLOB_OK);
    FUZZ_ASSERT(read == count);
    size_t bytes_size = 0;
    FUZZ_ASSERT(cblob_blob_vector_to_proto(blobs, count, 1, NULL, 0, &bytes_size) == CBLOB_OK);
    uint8_t *bytes = malloc(bytes_size + 1);
    FUZZ_ASSERT(bytes != NULL && cblob_blob_vector_to_proto(blobs, count, 1, bytes, bytes_size, &bytes_size) == CBLOB_OK);
    int64_t again = -1;
    FUZZ_ASSERT(cblob_blob_vector_from_proto(context, bytes, bytes_size, 0, NULL, &again) == CBLOB_OK && again == count);
    free(bytes);
    for (int64_t i = 0; i < count; ++i)
        cblob_blob_destroy(blobs[i]);
    free(blobs);
    return 0;
}
