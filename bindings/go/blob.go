// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Blob type, Close (which ends open
// mappings) and SetCPUData (values copied into C memory the blob owns).

package cblob

/*
#include <stdlib.h>
#include <cblob/cblob.h>

// The release callback of buffers SetCPUData gives the library: they come from malloc. Not
// static: Go takes its address, which the linker must resolve.
void cbgo_free_buffer(void *ptr, void *user_data);
void cbgo_free_buffer(void *ptr, void *user_data) { (void)user_data; free(ptr); }
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Blob is Caffe's Blob: an N-d array (at most MaxAxes axes, C-contiguous) holding data and diff
// (the gradient), each allocated on first access, zero-filled, and moved between host and GPU
// only when an accessor needs it. See the package documentation for handles, errors, host
// memory and goroutines.
type Blob struct {
	ptr *C.cblob_blob
	// Mappings made through this Blob and not closed yet, oldest first (see Map).
	mappings []unmapper
}

// Close ends the mappings made through this Blob that are still open (newest first; see Map)
// and drops the hold on the blob; memory it shares with other blobs, or that windows view,
// lives on while they hold it. Calling Close again does nothing. The error is the first a
// mapping's end reported (a device copy that failed); the hold is dropped even then.
func (b *Blob) Close() error {
	if b == nil || b.ptr == nil {
		return nil
	}
	var first error
	open := b.mappings
	b.mappings = nil
	for i := len(open) - 1; i >= 0; i-- {
		// A mapping that fails to end stays open in the library (its Close may try again).
		if err := open[i].unmap(); err != nil && first == nil {
			first = err
		}
	}
	b.release()
	runtime.SetFinalizer(b, nil)
	return first
}

// axes is the length of a shape or index list as the C ABI takes it, saturated: the library
// rejects more than MaxAxes before it reads any.
func axes(dims []int64) C.int32_t {
	if len(dims) > MaxAxes {
		return C.int32_t(MaxAxes + 1)
	}
	return C.int32_t(len(dims))
}

// int64s points C at a slice's elements for the duration of one call (cgo allows Go memory
// without Go pointers there); nil for an empty slice.
func int64s(dims []int64) *C.int64_t {
	if len(dims) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&dims[0]))
}

// ---- shape ------------------------------------------------------------------------------------

// with runs a call that takes this blob and another.
func (b *Blob) with(other *Blob, call func(p, q *C.cblob_blob) error) error {
	p, err := b.handle()
	if err != nil {
		return err
	}
	q, err := other.handle()
	if err != nil {
		return err
	}
	err = call(p, q)
	runtime.KeepAlive(b)
	runtime.KeepAlive(other)
	return err
}

// ---- memory -----------------------------------------------------------------------------------

// ShareData is Share(other, PartData).
func (b *Blob) ShareData(other *Blob) error { return b.Share(other, PartData) }

// ShareDiff is Share(other, PartDiff).
func (b *Blob) ShareDiff(other *Blob) error { return b.Share(other, PartDiff) }

// SetCPUData makes a copy of values the blob's host data (Caffe's set_cpu_data). The library
// may not keep Go memory, so the values are copied once into a C buffer that the blob then owns
// (freed when the blob is closed or given another buffer); fill blobs in place through
// MutableData instead when you can. values must hold at least Count elements of the blob's type.
// If the storage does not hold exactly Count elements (after a shrinking reshape), data and diff
// first get fresh storage, as in Caffe. Blobs sharing the data see the new buffer.
func SetCPUData[T Element](b *Blob, values []T) error {
	if err := checkElement[T](b); err != nil {
		return err
	}
	p, err := b.handle()
	if err != nil {
		return err
	}
	var zero T
	size := uintptr(len(values)) * unsafe.Sizeof(zero)
	buffer := C.malloc(C.size_t(size) + 1) // +1: malloc(0) may return NULL
	if buffer == nil {
		return bindingError(StatusOutOfMemory, "no memory for a copy of the values")
	}
	copy(unsafe.Slice((*T)(buffer), len(values)), values)
	err = cBlobSetCPUData(p, buffer, C.size_t(size), C.cblob_release_fn(C.cbgo_free_buffer), nil)
	runtime.KeepAlive(b)
	if err != nil {
		C.free(buffer) // on failure the library does not take the buffer
	}
	return err
}
