// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the one function exported to C: a device
// buffer's release callback.

package cblob

// The release callback SetGPUData gives the library. It lives in a file of its own: a file that
// exports a Go function to C may only declare C functions in its preamble.

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// cbgoRunRelease runs and forgets the Go function whose handle userData holds (a C allocation
// made by SetGPUData), on whichever thread the library lets go of the buffer.
//
//export cbgoRunRelease
func cbgoRunRelease(ptr unsafe.Pointer, userData unsafe.Pointer) {
	handle := cgo.Handle(*(*C.uintptr_t)(userData))
	C.free(userData)
	release := handle.Value().(func())
	handle.Delete()
	release()
}
