/* SPDX-License-Identifier: BSD-2-Clause */
/* Fuzzes the BlobProto readers: detection, creation, loading into blobs of every dtype (with and
 * without reshape) and ShapeEquals. A blob read from the input must write back to bytes that read
 * as the same blob. */
#include <string.h>

#include "fuzz.h"

static void round_trip(cblob_blob *blob)
{
    size_t size = 0;
    uint8_t *bytes = fuzz_to_proto(blob, &size);
    cblob_blob *again = NULL;
    FUZZ_ASSERT(cblob_blob_create_from_proto(fuzz_context(), bytes, size, &again) == CBLOB_OK);
    size_t again_size = 0;
    uint8_t *again_bytes = fuzz_to_proto(again, &again_size);
    FUZZ_ASSERT(again_size == size && memcmp(bytes, again_bytes, size) == 0);
    free(bytes);
    free(again_bytes);
    cblob_blob_destroy(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cblob_context *context = fuzz_context();
    cblob_proto_kind kind;
    (void)cblob_proto_detect(data, size, &kind);

    cblob_blob *blob = NULL;
    if (cblob_blob_create_from_proto(context, data, size, &blob) == CBLOB_OK) {
        round_trip(blob);
        cblob_blob_destroy(blob);
    }
    static const cblob_dtype dtypes[4] = {CBLOB_DTYPE_FLOAT32, CBLOB_DTYPE_FLOAT64, CBLOB_DTYPE_INT32,
                                          CBLOB_DTYPE_UINT32};
    for (int d = 0; d < 4; ++d) {
        cblob_blob *target = NULL;
        FUZZ_ASSERT(cblob_blob_create(context, dtypes[d], 2, (const int64_t[]){2, 3}, &target) == CBLOB_OK);
        int32_t equal = -1;
        const cblob_status equals = cblob_blob_shape_equals_proto(target, data, size, &equal);
        const cblob_status fixed = cblob_blob_from_proto(target, data, size, 0);
        /* Without reshape, a load can only succeed when ShapeEquals says yes. */
        FUZZ_ASSERT(fixed != CBLOB_OK || (equals == CBLOB_OK && equal == 1));
        (void)cblob_blob_from_proto(target, data, size, 1);
        cblob_blob_destroy(target);
    }
    return 0;
}
