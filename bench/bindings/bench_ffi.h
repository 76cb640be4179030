/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef CBLOB_BENCH_FFI_H
#define CBLOB_BENCH_FFI_H

/* Does nothing: the cost of calling it is the language's bare FFI cost. */
void bench_ffi_empty(void);

#endif
