/* SPDX-License-Identifier: BSD-2-Clause */
/* Prints the sizes and field offsets of DLPack's structs as the C compiler lays them out from
 * DLPack's header (<cblob/dlpack.h>, the one cblob installs), one "name value" per line ("Type.field" is
 * the field's offset, "Type.field.size" its size). The
 * binding suites compile and run it (common.sh: dlpack_layout) and check their mirrors of the
 * structs (Rust's cblob::dlpack, C#'s CBlob.DLPack) against its output. */
#include <stddef.h>
#include <stdio.h>

#include <cblob/dlpack.h>

#define SIZE(type) printf("%s.size %zu\n", #type, sizeof(type))
#define FIELD(type, field) \
    printf("%s.%s %zu\n%s.%s.size %zu\n", #type, #field, offsetof(type, field), #type, #field, sizeof(((type *)0)->field))

int main(void)
{
    SIZE(DLPackVersion);
    FIELD(DLPackVersion, major);
    FIELD(DLPackVersion, minor);
    SIZE(DLDevice);
    FIELD(DLDevice, device_type);
    FIELD(DLDevice, device_id);
    SIZE(DLDataType);
    FIELD(DLDataType, code);
    FIELD(DLDataType, bits);
    FIELD(DLDataType, lanes);
    SIZE(DLTensor);
    FIELD(DLTensor, data);
    FIELD(DLTensor, device);
    FIELD(DLTensor, ndim);
    FIELD(DLTensor, dtype);
    FIELD(DLTensor, shape);
    FIELD(DLTensor, strides);
    FIELD(DLTensor, byte_offset);
    SIZE(DLManagedTensor);
    FIELD(DLManagedTensor, dl_tensor);
    FIELD(DLManagedTensor, manager_ctx);
    FIELD(DLManagedTensor, deleter);
    SIZE(DLManagedTensorVersioned);
    FIELD(DLManagedTensorVersioned, version);
    FIELD(DLManagedTensorVersioned, manager_ctx);
    FIELD(DLManagedTensorVersioned, deleter);
    FIELD(DLManagedTensorVersioned, flags);
    FIELD(DLManagedTensorVersioned, dl_tensor);
    printf("kDLCPU %d\nkDLCUDA %d\nkDLCUDAHost %d\nkDLCUDAManaged %d\n", kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged);
    printf("kDLInt %d\nkDLUInt %d\nkDLFloat %d\nkDLBfloat %d\nkDLBool %d\n", kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool);
    printf("DLPACK_FLAG_BITMASK_READ_ONLY %lu\nDLPACK_FLAG_BITMASK_IS_COPIED %lu\n",
           (unsigned long)DLPACK_FLAG_BITMASK_READ_ONLY, (unsigned long)DLPACK_FLAG_BITMASK_IS_COPIED);
    printf("DLPACK_MAJOR_VERSION %d\n", DLPACK_MAJOR_VERSION);
    return ferror(stdout) ? 1 : 0;
}
