// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the progress callback exported to C
// (cblob_progress_fn), in a file of its own: a file that exports a Go function to C may only
// declare C functions in its preamble.

package cblob

/*
#include <stdint.h>
*/
import "C"

import "unsafe"

// cbgoProgress is the cblob_progress_fn of every context with a Go progress function: userData
// is the function's key in the progress table (never a pointer into Go memory). 0 lets the call
// go on, 1 stops it.
//
//export cbgoProgress
func cbgoProgress(userData unsafe.Pointer, done C.int64_t, total C.int64_t) C.int32_t {
	if runProgress(uintptr(userData), int64(done), int64(total)) {
		return 0
	}
	return 1
}
