/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared by the fuzz targets: one context for the whole run, and a check that reports a broken
 * invariant as a crash, which is how libFuzzer (and the replay runner) see failures. */
#ifndef CBLOB_TESTS_FUZZ_H
#define CBLOB_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cblob/cblob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline cblob_context *fuzz_context(void)
{
    static cblob_context *context;
    if (context == NULL && cblob_context_create(&context) != CBLOB_OK)
        abort();
    return context;
}

#define FUZZ_ASSERT(cond) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", __FILE__, __LINE__, #cond, cblob_last_error_message()); \
            abort(); \
        } \
    } while (0)

/* The BlobProto bytes of a blob (malloc'd). */
static inline uint8_t *fuzz_to_proto(cblob_blob *blob, size_t *size)
{
    FUZZ_ASSERT(cblob_blob_to_proto(blob, 1, NULL, 0, size) == CBLOB_OK);
    uint8_t *bytes = malloc(*size + 1);
    FUZZ_ASSERT(bytes != NULL && cblob_blob_to_proto(blob, 1, bytes, *size, size) == CBLOB_OK);
    return bytes;
}

#endif
