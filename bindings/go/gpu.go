// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): SetGPUData (a device buffer with a release
// function). IsNoGPU (types_generated.go) and the GPUVersions record (records_generated.go) are
// generated.

package cblob

/*
#include <stdint.h>
#include <stdlib.h>
#include <cblob/cblob.h>

// Exported by gpu_release.go.
extern void cbgoRunRelease(void *ptr, void *user_data);
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// The GPU backend (CUDA). The library loads and works without a GPU; the calls that need one
// then fail with the status that says why (StatusNoDriver, StatusStubDriver, StatusNoDevice,
// StatusDriverTooOld, StatusNvrtcMissing, StatusCublasMissing), which IsNoGPU recognises.
//
// Device pointers and CUDA streams are uintptr values: they are addresses on the device or
// driver objects, never Go memory, and Go code cannot dereference them.

// ---- contexts ---------------------------------------------------------------------------------

// ---- blobs ------------------------------------------------------------------------------------

// SetGPUData makes a caller's device buffer the blob's device data (Caffe's set_gpu_data): the
// current copy is then on the device, and cblob never frees the buffer. ptr must be memory of
// the context's device covering sizeBytes (the library checks with the driver), allocated until
// release runs. release, if not nil, runs once when cblob lets go of the buffer (the blob is
// closed or given another buffer), on whatever thread drops the last holder; it must not panic
// and must not call into this package's functions on the same blob. On failure it never runs.
// The size rule and sharing are those of SetCPUData.
func (b *Blob) SetGPUData(ptr uintptr, sizeBytes uintptr, release func()) error {
	var callback C.cblob_release_fn
	var slot unsafe.Pointer
	if release != nil {
		slot = C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
		if slot == nil {
			return bindingError(StatusOutOfMemory, "no memory for the release callback's handle")
		}
		*(*C.uintptr_t)(slot) = C.uintptr_t(cgo.NewHandle(release))
		callback = C.cblob_release_fn(C.cbgoRunRelease)
	}
	// A device address, never Go memory: its bits go to C as they are.
	pointer := *(*unsafe.Pointer)(unsafe.Pointer(&ptr))
	err := b.do(func(p *C.cblob_blob) error {
		return cBlobSetGPUData(p, pointer, C.size_t(sizeBytes), callback, slot)
	})
	if err != nil && slot != nil {
		// On failure the library never calls release.
		cgo.Handle(*(*C.uintptr_t)(slot)).Delete()
		C.free(slot)
	}
	return err
}
