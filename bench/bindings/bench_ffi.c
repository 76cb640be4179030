/* SPDX-License-Identifier: BSD-2-Clause */
/* The empty C calls the binding benchmark measures each language's FFI against. Built into its
 * own small library (libbench_ffi.so), not into libcblob, so the call crosses a shared-library
 * boundary (PLT) exactly as a libcblob call does. */
#include "bench_ffi.h"

void bench_ffi_empty(void)
{
}

int32_t bench_ffi_empty_getter(const void *handle, int64_t *out_value)
{
    (void)handle;
    (void)out_value;
    return 0;
}
