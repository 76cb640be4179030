// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): DLPack, owned tensors that call their
// deleter once, and the imports that take them.

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

// DLDeviceType is DLPack's DLDeviceType.
type DLDeviceType int32

// The device types cblob exports and takes, and CUDA managed memory, which it does not take.
const (
	DLCPU         DLDeviceType = 1  // kDLCPU: host memory
	DLCUDA        DLDeviceType = 2  // kDLCUDA: CUDA device memory
	DLCUDAHost    DLDeviceType = 3  // kDLCUDAHost: pinned host memory (cudaMallocHost)
	DLCUDAManaged DLDeviceType = 13 // kDLCUDAManaged: CUDA managed memory
)

// DLDataTypeCode is DLPack's DLDataTypeCode.
type DLDataTypeCode uint8

// DLPack's type codes for the dtypes cblob has, and two it has not.
const (
	DLInt    DLDataTypeCode = 0 // kDLInt: signed integers
	DLUInt   DLDataTypeCode = 1 // kDLUInt: unsigned integers
	DLFloat  DLDataTypeCode = 2 // kDLFloat: IEEE floats
	DLBfloat DLDataTypeCode = 4 // kDLBfloat: bfloat16
	DLBool   DLDataTypeCode = 6 // kDLBool
)

// DLPack's flags (DLManagedTensorVersioned.flags).
const (
	DLPackFlagReadOnly uint64 = 1 // DLPACK_FLAG_BITMASK_READ_ONLY: the consumer must not write
	DLPackFlagIsCopied uint64 = 2 // DLPACK_FLAG_BITMASK_IS_COPIED: the producer made a copy
)

// DLDevice is DLPack's DLDevice: where a tensor's memory lives.
type DLDevice struct {
	Type DLDeviceType
	ID   int32
}

// DLDataType is DLPack's DLDataType: an element type.
type DLDataType struct {
	Code  DLDataTypeCode
	Bits  uint8
	Lanes uint16
}

// DLDataTypeOf returns the DLPack type of a cblob dtype (float32 is kDLFloat 32, int32 kDLInt
// 32, ...).
func DLDataTypeOf(dtype DType) DLDataType {
	switch dtype {
	case DTypeFloat32:
		return DLDataType{DLFloat, 32, 1}
	case DTypeFloat64:
		return DLDataType{DLFloat, 64, 1}
	case DTypeInt32:
		return DLDataType{DLInt, 32, 1}
	case DTypeUint32:
		return DLDataType{DLUInt, 32, 1}
	}
	return DLDataType{}
}

// DType returns the cblob dtype of a DLPack type, and false when cblob has none.
func (t DLDataType) DType() (DType, bool) {
	for _, d := range []DType{DTypeFloat32, DTypeFloat64, DTypeInt32, DTypeUint32} {
		if DLDataTypeOf(d) == t {
			return d, true
		}
	}
	return 0, false
}

// DLTensorView is the view both tensor types offer (the DLTensor's fields). After Close or
// Release its methods return zero values.
type DLTensorView interface {
	// Data returns the data pointer: the first element for cblob's exports (a device address
	// for device memory, which Go code cannot dereference); 0 without elements.
	Data() uintptr
	// ByteOffset returns the bytes from Data to the first element (0 in cblob's exports).
	ByteOffset() uint64
	// Device returns where the memory lives: DLCPU, DLCUDAHost (pinned) or DLCUDA for cblob's
	// exports.
	Device() DLDevice
	// DType returns the element type as DLPack codes it.
	DType() DLDataType
	// NDim returns the number of axes.
	NDim() int
	// Shape returns a copy of the dimensions.
	Shape() []int64
	// Strides returns a copy of the strides in elements, or nil for C-contiguous (cblob's
	// exports).
	Strides() []int64
	tensor() *C.DLTensor
}

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

// Data implements DLTensorView.
func (t *DLPackTensor) Data() uintptr { defer runtime.KeepAlive(t); return dlData(t.tensor()) }

// ByteOffset implements DLTensorView.
func (t *DLPackTensor) ByteOffset() uint64 {
	defer runtime.KeepAlive(t)
	return dlByteOffset(t.tensor())
}

// Device implements DLTensorView.
func (t *DLPackTensor) Device() DLDevice { defer runtime.KeepAlive(t); return dlDevice(t.tensor()) }

// DType implements DLTensorView.
func (t *DLPackTensor) DType() DLDataType { defer runtime.KeepAlive(t); return dlDType(t.tensor()) }

// NDim implements DLTensorView.
func (t *DLPackTensor) NDim() int { defer runtime.KeepAlive(t); return dlNDim(t.tensor()) }

// Shape implements DLTensorView.
func (t *DLPackTensor) Shape() []int64 { defer runtime.KeepAlive(t); return dlDims(t.tensor(), false) }

// Strides implements DLTensorView.
func (t *DLPackTensor) Strides() []int64 {
	defer runtime.KeepAlive(t)
	return dlDims(t.tensor(), true)
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

// Data implements DLTensorView.
func (t *LegacyDLPackTensor) Data() uintptr { defer runtime.KeepAlive(t); return dlData(t.tensor()) }

// ByteOffset implements DLTensorView.
func (t *LegacyDLPackTensor) ByteOffset() uint64 {
	defer runtime.KeepAlive(t)
	return dlByteOffset(t.tensor())
}

// Device implements DLTensorView.
func (t *LegacyDLPackTensor) Device() DLDevice {
	defer runtime.KeepAlive(t)
	return dlDevice(t.tensor())
}

// DType implements DLTensorView.
func (t *LegacyDLPackTensor) DType() DLDataType {
	defer runtime.KeepAlive(t)
	return dlDType(t.tensor())
}

// NDim implements DLTensorView.
func (t *LegacyDLPackTensor) NDim() int { defer runtime.KeepAlive(t); return dlNDim(t.tensor()) }

// Shape implements DLTensorView.
func (t *LegacyDLPackTensor) Shape() []int64 {
	defer runtime.KeepAlive(t)
	return dlDims(t.tensor(), false)
}

// Strides implements DLTensorView.
func (t *LegacyDLPackTensor) Strides() []int64 {
	defer runtime.KeepAlive(t)
	return dlDims(t.tensor(), true)
}

func dlData(t *C.DLTensor) uintptr {
	if t == nil {
		return 0
	}
	return uintptr(t.data)
}

func dlByteOffset(t *C.DLTensor) uint64 {
	if t == nil {
		return 0
	}
	return uint64(t.byte_offset)
}

func dlDevice(t *C.DLTensor) DLDevice {
	if t == nil {
		return DLDevice{}
	}
	return DLDevice{Type: DLDeviceType(t.device.device_type), ID: int32(t.device.device_id)}
}

func dlDType(t *C.DLTensor) DLDataType {
	if t == nil {
		return DLDataType{}
	}
	return DLDataType{Code: DLDataTypeCode(t.dtype.code), Bits: uint8(t.dtype.bits), Lanes: uint16(t.dtype.lanes)}
}

func dlNDim(t *C.DLTensor) int {
	if t == nil {
		return 0
	}
	return int(t.ndim)
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

// ToDLPack exports data or diff as a DLPack tensor viewing it, without copying (the header's
// cblob_blob_to_dlpack). MemoryHost gives DLCPU (DLCUDAHost for pinned memory), MemoryDevice
// DLCUDA (it needs a GPU: without one, the no-GPU status). The export moves the head as View
// (readOnly, which also sets the tensor's read-only flag) or MutableView would, so the copy it
// views is current now; like a GPUPtr pointer, it stays the same memory afterwards, whatever the
// head. The tensor holds the memory until its deleter runs: the blob may be closed, reshaped past
// its capacity or made to share other memory meanwhile. Giving the blob another buffer
// (SetCPUData on exported host data) is StatusState until then.
func (b *Blob) ToDLPack(part Part, memory Memory, readOnly bool) (*DLPackTensor, error) {
	var ptr *C.DLManagedTensorVersioned
	err := b.do(func(p *C.cblob_blob) (err error) {
		ptr, err = cBlobToDlpack(p, C.cblob_part(part), C.cblob_memory(memory), boolInt(readOnly))
		return
	})
	if err != nil {
		return nil, err
	}
	return newDLPackTensor(ptr), nil
}

// ToDLPackLegacy exports data or diff as a legacy DLManagedTensor (for consumers that only take
// that): writable, with the head moved as for a write; otherwise as ToDLPack.
func (b *Blob) ToDLPackLegacy(part Part, memory Memory) (*LegacyDLPackTensor, error) {
	var ptr *C.DLManagedTensor
	err := b.do(func(p *C.cblob_blob) (err error) {
		ptr, err = cBlobToDlpackLegacy(p, C.cblob_part(part), C.cblob_memory(memory))
		return
	})
	if err != nil {
		return nil, err
	}
	return newLegacyDLPackTensor(ptr), nil
}

// NewBlobFromDLPack returns a blob whose data is the tensor's memory, without copying (the
// header's cblob_blob_from_dlpack): C-contiguous float32, float64, int32 or uint32 on DLCPU,
// DLCUDAHost or DLCUDA (the context's device); the diff is new memory. On success cblob owns the
// tensor (t is released: its Close does nothing) and runs the deleter once nothing uses the
// memory any more. On failure t still owns the tensor, its deleter not run: StatusDType for
// another element type or lanes, StatusInvalidArgument for a read-only tensor, another device or
// major version, StatusShape for strides that are not row-major, ...
func NewBlobFromDLPack(ctx *Context, t *DLPackTensor) (*Blob, error) {
	if t == nil || t.ptr == nil {
		return nil, ErrClosed
	}
	b, err := newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) { return cBlobFromDlpack(c, t.ptr) })
	if err == nil {
		t.Release()
	}
	runtime.KeepAlive(t)
	return b, err
}

// NewBlobFromDLPackOnStream is NewBlobFromDLPack with the stream the tensor is ready on (the one
// a DLPack consumer passes to the producer's __dlpack__(stream=...)): for a CUDA tensor the
// context's stream waits for the work queued on stream so far, so cblob reads what the producer
// wrote. stream is a CUstream or cudaStream_t of the tensor's device, as Context.SetStream takes
// it; 0 (or CU_STREAM_LEGACY, DLPack's 1) is the legacy default stream, CU_STREAM_PER_THREAD
// (DLPack's 2) the calling thread's, and the context's own stream (Context.Stream) adds no wait.
// A stream of another device or CUDA context is StatusInvalidArgument, and t stays the caller's.
// For a host tensor the stream is not used (the tensor must be ready when handed over).
func NewBlobFromDLPackOnStream(ctx *Context, t *DLPackTensor, stream uintptr) (*Blob, error) {
	if t == nil || t.ptr == nil {
		return nil, ErrClosed
	}
	// A driver object, never Go memory: its bits go to C as they are.
	streamPointer := *(*unsafe.Pointer)(unsafe.Pointer(&stream))
	b, err := newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobFromDlpackOnStream(c, t.ptr, streamPointer)
	})
	if err == nil {
		t.Release()
	}
	runtime.KeepAlive(t)
	return b, err
}

// NewBlobFromDLPackLegacyOnStream is NewBlobFromDLPackOnStream for a legacy DLManagedTensor.
func NewBlobFromDLPackLegacyOnStream(ctx *Context, t *LegacyDLPackTensor, stream uintptr) (*Blob, error) {
	if t == nil || t.ptr == nil {
		return nil, ErrClosed
	}
	streamPointer := *(*unsafe.Pointer)(unsafe.Pointer(&stream))
	b, err := newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobFromDlpackLegacyOnStream(c, t.ptr, streamPointer)
	})
	if err == nil {
		t.Release()
	}
	runtime.KeepAlive(t)
	return b, err
}

// NewBlobFromDLPackLegacy is NewBlobFromDLPack for a legacy DLManagedTensor.
func NewBlobFromDLPackLegacy(ctx *Context, t *LegacyDLPackTensor) (*Blob, error) {
	if t == nil || t.ptr == nil {
		return nil, ErrClosed
	}
	b, err := newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) { return cBlobFromDlpackLegacy(c, t.ptr) })
	if err == nil {
		t.Release()
	}
	runtime.KeepAlive(t)
	return b, err
}
