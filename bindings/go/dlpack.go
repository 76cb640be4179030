// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): DLPack's owned tensors, which call their
// deleter once unless handed over (a judgement of ownership), and host slices over them.
// DLPack's constants and value types, the tensors' field getters and the blobs' exports and
// imports are generated (dlpack_generated.go, codegen/safe_dlpack.py).

package cblob

/*
#include <stdint.h>
#include <cblob/cblob.h>
#include <cblob/dlpack.h>

// DLPack allows a NULL deleter: there is nothing to free then.
static void cbgo_dlpack_delete(DLManagedTensorVersioned *t) {
    if (t->deleter != NULL)
        t->deleter(t);
}

static void cbgo_dlpack_delete_legacy(DLManagedTensor *t) {
    if (t->deleter != NULL)
        t->deleter(t);
}
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// DLPack: a blob's data or diff handed to NumPy, PyTorch, CuPy, JAX or any other DLPack 1.x
// consumer without a copy, and a DLPack tensor taken in as a blob without a copy (the header's
// "DLPack" section). This file reads DLPack's structs through DLPack's own header,
// <cblob/dlpack.h>, which cblob installs beside cblob.h.
//
// ToDLPack returns a *DLPackTensor owning a DLManagedTensorVersioned that views the blob's memory
// (ToDLPackLegacy: a *LegacyDLPackTensor owning the older DLManagedTensor). Exactly one party
// calls the tensor's deleter: the wrapper's Close (or, late, its finalizer); a consumer, once
// Release has handed it the pointer; or cblob, once NewBlobFromDLPack has taken the tensor in.

// DLPackTensor owns a DLManagedTensorVersioned. Close runs its deleter once, unless Release
// handed it to a consumer or NewBlobFromDLPack to cblob; a finalizer runs it for a tensor never
// closed, late. A tensor from ToDLPack views its blob's memory, as a blob sharing that memory
// does: use the two as one blob (one goroutine at a time). The deleter itself may run on any
// goroutine.
type DLPackTensor struct {
	ptr *C.DLManagedTensorVersioned
}

// LegacyDLPackTensor owns a legacy DLManagedTensor (no version, no flags: always writable);
// otherwise as DLPackTensor.
type LegacyDLPackTensor struct {
	ptr *C.DLManagedTensor
}

func newDLPackTensor(ptr *C.DLManagedTensorVersioned) *DLPackTensor {
	t := &DLPackTensor{ptr: ptr}
	runtime.SetFinalizer(t, (*DLPackTensor).Close)
	return t
}

func newLegacyDLPackTensor(ptr *C.DLManagedTensor) *LegacyDLPackTensor {
	t := &LegacyDLPackTensor{ptr: ptr}
	runtime.SetFinalizer(t, (*LegacyDLPackTensor).Close)
	return t
}

// AdoptDLPackTensor takes ownership of a DLManagedTensorVersioned from elsewhere (another
// producer, or an earlier Release): Close runs its deleter. ptr must point to a valid tensor
// (in C memory) whose shape, strides and memory stay valid until the deleter runs; nil is
// StatusInvalidArgument.
func AdoptDLPackTensor(ptr unsafe.Pointer) (*DLPackTensor, error) {
	if ptr == nil {
		return nil, bindingError(StatusInvalidArgument, "a nil DLPack tensor")
	}
	return newDLPackTensor((*C.DLManagedTensorVersioned)(ptr)), nil
}

// AdoptLegacyDLPackTensor is AdoptDLPackTensor for a legacy DLManagedTensor.
func AdoptLegacyDLPackTensor(ptr unsafe.Pointer) (*LegacyDLPackTensor, error) {
	if ptr == nil {
		return nil, bindingError(StatusInvalidArgument, "a nil DLPack tensor")
	}
	return newLegacyDLPackTensor((*C.DLManagedTensor)(ptr)), nil
}

// Close runs the tensor's deleter, unless the tensor was handed over; calling it again does
// nothing.
func (t *DLPackTensor) Close() error {
	if t == nil || t.ptr == nil {
		return nil
	}
	C.cbgo_dlpack_delete(t.ptr)
	t.ptr = nil
	runtime.SetFinalizer(t, nil)
	return nil
}

// Release hands the tensor over: it returns the DLManagedTensorVersioned pointer, whose deleter
// the caller (or the consumer it gives the pointer to) must call exactly once, and leaves the
// wrapper empty (Close then does nothing). nil for a closed or released tensor.
func (t *DLPackTensor) Release() unsafe.Pointer {
	if t == nil || t.ptr == nil {
		return nil
	}
	ptr := unsafe.Pointer(t.ptr)
	t.ptr = nil
	runtime.SetFinalizer(t, nil)
	return ptr
}

// Pointer returns the DLManagedTensorVersioned pointer, still owned by the wrapper (nil after
// Close or Release). It stays valid while the wrapper is open and reachable.
func (t *DLPackTensor) Pointer() unsafe.Pointer {
	if t == nil {
		return nil
	}
	return unsafe.Pointer(t.ptr)
}

// Version returns the DLPack version the producer wrote (cblob writes its header's, 1.3).
func (t *DLPackTensor) Version() (major, minor uint32) {
	if t == nil || t.ptr == nil {
		return 0, 0
	}
	defer runtime.KeepAlive(t)
	return uint32(t.ptr.version.major), uint32(t.ptr.version.minor)
}

// Flags returns the tensor's flags (DLPackFlagReadOnly, ...).
func (t *DLPackTensor) Flags() uint64 {
	if t == nil || t.ptr == nil {
		return 0
	}
	defer runtime.KeepAlive(t)
	return uint64(t.ptr.flags)
}

// ReadOnly reports whether the consumer must not write the memory (an export with readOnly).
func (t *DLPackTensor) ReadOnly() bool {
	return t.Flags()&DLPackFlagReadOnly != 0
}

func (t *DLPackTensor) tensor() *C.DLTensor {
	if t == nil || t.ptr == nil {
		return nil
	}
	return &t.ptr.dl_tensor
}

// Close runs the tensor's deleter, unless the tensor was handed over; calling it again does
// nothing.
func (t *LegacyDLPackTensor) Close() error {
	if t == nil || t.ptr == nil {
		return nil
	}
	C.cbgo_dlpack_delete_legacy(t.ptr)
	t.ptr = nil
	runtime.SetFinalizer(t, nil)
	return nil
}

// Release hands the tensor over, as DLPackTensor.Release does.
func (t *LegacyDLPackTensor) Release() unsafe.Pointer {
	if t == nil || t.ptr == nil {
		return nil
	}
	ptr := unsafe.Pointer(t.ptr)
	t.ptr = nil
	runtime.SetFinalizer(t, nil)
	return ptr
}

// Pointer returns the DLManagedTensor pointer, still owned by the wrapper (nil after Close or
// Release).
func (t *LegacyDLPackTensor) Pointer() unsafe.Pointer {
	if t == nil {
		return nil
	}
	return unsafe.Pointer(t.ptr)
}

func (t *LegacyDLPackTensor) tensor() *C.DLTensor {
	if t == nil || t.ptr == nil {
		return nil
	}
	return &t.ptr.dl_tensor
}

// dlDims copies the shape (or the strides: nil when NULL).
func dlDims(t *C.DLTensor, strides bool) []int64 {
	if t == nil {
		return nil
	}
	ptr := t.shape
	if strides {
		ptr = t.strides
		if ptr == nil {
			return nil
		}
	}
	n := int(t.ndim)
	if n <= 0 || ptr == nil {
		return []int64{}
	}
	dims := make([]int64, n)
	copy(dims, unsafe.Slice((*int64)(unsafe.Pointer(ptr)), n))
	return dims
}

// DLPackSlice returns a host tensor's elements as a slice over its memory: the tensor must be on
// DLCPU or DLCUDAHost, hold T's dtype (StatusDType otherwise) and be C-contiguous
// (StatusInvalidArgument for device memory or other strides). The slice is valid while the
// tensor is open (a closed one is ErrClosed) and, for an export, under the rules of the blob's
// host slices; writing a read-only tensor's memory is not allowed.
func DLPackSlice[T Element](t DLTensorView) ([]T, error) {
	dl := t.tensor()
	if dl == nil {
		return nil, ErrClosed
	}
	defer runtime.KeepAlive(t)
	device := dlDevice(dl)
	if device.Type != DLCPU && device.Type != DLCUDAHost {
		return nil, bindingError(StatusInvalidArgument, fmt.Sprintf("the DLPack tensor is on device type %d, not host memory", device.Type))
	}
	if want := DLDataTypeOf(dtypeOf[T]()); dlDType(dl) != want {
		var zero T
		return nil, bindingError(StatusDType, fmt.Sprintf("the DLPack tensor holds %+v, not %T", dlDType(dl), zero))
	}
	shape := dlDims(dl, false)
	count := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && count > math.MaxInt/int(d)) {
			return nil, bindingError(StatusShape, fmt.Sprintf("the DLPack tensor's shape %v has no element count", shape))
		}
		count *= int(d)
	}
	if count == 0 {
		return []T{}, nil
	}
	if strides := dlDims(dl, true); strides != nil {
		expected := int64(1)
		for axis := len(shape) - 1; axis >= 0; axis-- {
			if shape[axis] != 1 && strides[axis] != expected {
				return nil, bindingError(StatusInvalidArgument, "the DLPack tensor is not C-contiguous")
			}
			expected *= shape[axis]
		}
	}
	var zero T
	if dl.data == nil || (uintptr(dl.data)+uintptr(dl.byte_offset))%unsafe.Alignof(zero) != 0 {
		return nil, bindingError(StatusInvalidArgument, "the DLPack tensor's data is NULL or not aligned for its elements")
	}
	return unsafe.Slice((*T)(unsafe.Add(dl.data, uintptr(dl.byte_offset))), count), nil
}
