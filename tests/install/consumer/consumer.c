/* SPDX-License-Identifier: BSD-2-Clause */
/* A program that uses an installed cblob the way a user's would: through <cblob/cblob.h> and
 * <cblob/dlpack.h> only, found with pkg-config or find_package(cblob CONFIG). It checks that the
 * library it runs against is the ABI it was built for, and uses a blob and a DLPack export. It
 * is also valid C++, which the install test compiles it as. */
#include <stdio.h>

/* cblob.h first: it only declares DLPack's structs, which dlpack.h then defines. */
#include <cblob/cblob.h>
#include <cblob/dlpack.h>

#define TRY(call) \
    do { \
        cblob_status status_ = (call); \
        if (status_ != CBLOB_OK) { \
            fprintf(stderr, "%s: %s\n", #call, cblob_last_error_message()); \
            return 1; \
        } \
    } while (0)

int main(void)
{
    /* The rule cblob_abi_version's documentation gives: the same major, at least this minor. */
    const uint32_t abi = cblob_abi_version();
    const int major = (int)(abi >> 16), minor = (int)(abi & 0xFFFF);
    if (major != CBLOB_ABI_VERSION_MAJOR || minor < CBLOB_ABI_VERSION_MINOR) {
        fprintf(stderr, "built for ABI %d.%d, loaded %d.%d\n", CBLOB_ABI_VERSION_MAJOR, CBLOB_ABI_VERSION_MINOR, major,
                minor);
        return 1;
    }
    cblob_context *context = NULL;
    cblob_blob *blob = NULL;
    const int64_t shape[2] = {2, 3};
    TRY(cblob_context_create(&context));
    TRY(cblob_blob_create(context, CBLOB_DTYPE_FLOAT32, 2, shape, &blob));
    TRY(cblob_blob_fill(blob, CBLOB_PART_DATA, 1.5));
    double sum = 0;
    TRY(cblob_blob_asum(blob, CBLOB_PART_DATA, &sum));
    DLManagedTensorVersioned *tensor = NULL;
    TRY(cblob_blob_to_dlpack(blob, CBLOB_PART_DATA, CBLOB_MEMORY_HOST, 1, &tensor));
    const float first = ((const float *)tensor->dl_tensor.data)[0];
    tensor->deleter(tensor);
    cblob_blob_destroy(blob);
    cblob_context_destroy(context);
    if (sum != 9.0 || first != 1.5f) {
        fprintf(stderr, "asum %g, first element %g; expected 9 and 1.5\n", sum, (double)first);
        return 1;
    }
    printf("consumer: cblob %s (ABI %d.%d), asum 9, DLPack %d.%d\n", cblob_version(), major, minor,
           DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
    return 0;
}
