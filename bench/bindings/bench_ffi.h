/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef CBLOB_BENCH_FFI_H
#define CBLOB_BENCH_FFI_H

#include <stdint.h>

/* Does nothing: the cost of calling it is the language's bare FFI cost. */
void bench_ffi_empty(void);

/* Does nothing, with the signature of a pure getter (cblob_blob_count's): for FFIs whose cost
 * grows with the arguments (Python's ctypes), the bare cost of a call shaped like the getter. */
int32_t bench_ffi_empty_getter(const void *handle, int64_t *out_value);

#endif
