// SPDX-License-Identifier: BSD-2-Clause
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

func newBlob(ptr *C.cblob_blob) *Blob {
	b := &Blob{ptr: ptr}
	runtime.SetFinalizer(b, (*Blob).release)
	return b
}

// created wraps the handle a creating call returned, or passes its error on.
func created(ptr *C.cblob_blob, err error) (*Blob, error) {
	if err != nil {
		return nil, err
	}
	return newBlob(ptr), nil
}

// NewBlob returns a blob of the given dtype and shape (Caffe's Blob(shape)); no dimensions make
// a scalar (count 1). Nothing is allocated until the first access. A negative dimension or more
// than MaxAxes axes is StatusShape, a count whose byte size overflows StatusOverflow.
func NewBlob(ctx *Context, dtype DType, shape ...int64) (*Blob, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := cBlobCreate(c, C.cblob_dtype(dtype), axes(shape), int64s(shape))
	runtime.KeepAlive(ctx)
	runtime.KeepAlive(shape)
	if err != nil {
		return nil, err
	}
	return newBlob(ptr), nil
}

// NewLegacyBlob returns a 4-axis blob (num, channels, height, width), Caffe's Blob(n, c, h, w).
func NewLegacyBlob(ctx *Context, dtype DType, num, channels, height, width int64) (*Blob, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := cBlobCreateLegacy(c, C.cblob_dtype(dtype), C.int64_t(num), C.int64_t(channels), C.int64_t(height), C.int64_t(width))
	runtime.KeepAlive(ctx)
	if err != nil {
		return nil, err
	}
	return newBlob(ptr), nil
}

// NewEmptyBlob returns a blob with no axes, count 0 and no storage (Caffe's default-constructed
// Blob), to be shaped later with Reshape.
func NewEmptyBlob(ctx *Context, dtype DType) (*Blob, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := cBlobCreateEmpty(c, C.cblob_dtype(dtype))
	runtime.KeepAlive(ctx)
	if err != nil {
		return nil, err
	}
	return newBlob(ptr), nil
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

// release drops the hold; the finalizer calls it. It never ends mappings: that changes the
// blob, which another goroutine may be using, and a Blob with open mappings is reachable from
// them anyway (an open mapping holds its blob).
func (b *Blob) release() {
	if b.ptr != nil {
		cBlobDestroy(b.ptr)
		b.ptr = nil
	}
}

func (b *Blob) handle() (*C.cblob_blob, error) {
	if b == nil || b.ptr == nil {
		return nil, ErrClosed
	}
	return b.ptr, nil
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

// DType returns the element type.
func (b *Blob) DType() (DType, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobDType(p)
	runtime.KeepAlive(b)
	return DType(v), err
}

// Count returns the number of elements: the product of the dimensions (0 for an empty blob).
func (b *Blob) Count() (int64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobCount(p)
	runtime.KeepAlive(b)
	return int64(v), err
}

// CountRange returns the product of the dimensions of axes [start, end); each bound is
// -NumAxes to NumAxes, a negative one counting from the end, and start must not come after end.
func (b *Blob) CountRange(start, end int) (int64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobCountRange(p, C.int32_t(start), C.int32_t(end))
	runtime.KeepAlive(b)
	return int64(v), err
}

// NumAxes returns the number of axes.
func (b *Blob) NumAxes() (int, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobNumAxes(p)
	runtime.KeepAlive(b)
	return int(v), err
}

// Shape returns the dimensions.
func (b *Blob) Shape() ([]int64, error) {
	p, err := b.handle()
	if err != nil {
		return nil, err
	}
	dims := make([]int64, MaxAxes)
	n, err := cBlobShape(p, MaxAxes, int64s(dims))
	runtime.KeepAlive(b)
	if err != nil {
		return nil, err
	}
	return dims[:n], nil
}

// ShapeAt returns the dimension of one axis; a negative axis counts from the end (-1 is the
// last).
func (b *Blob) ShapeAt(axis int) (int64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobShapeAt(p, C.int32_t(axis))
	runtime.KeepAlive(b)
	return int64(v), err
}

// CanonicalAxis maps an axis in [-NumAxes, NumAxes) to [0, NumAxes) (Caffe's
// CanonicalAxisIndex).
func (b *Blob) CanonicalAxis(axis int) (int, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobCanonicalAxis(p, C.int32_t(axis))
	runtime.KeepAlive(b)
	return int(v), err
}

// LegacyShape is Caffe's LegacyShape(index) for index in [-4, 4): the dimension, or 1 for an
// axis the blob does not have. Only for blobs of at most 4 axes.
func (b *Blob) LegacyShape(index int) (int64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobLegacyShape(p, C.int32_t(index))
	runtime.KeepAlive(b)
	return int64(v), err
}

// Num is LegacyShape(0).
func (b *Blob) Num() (int64, error) { return b.LegacyShape(0) }

// Channels is LegacyShape(1).
func (b *Blob) Channels() (int64, error) { return b.LegacyShape(1) }

// Height is LegacyShape(2).
func (b *Blob) Height() (int64, error) { return b.LegacyShape(2) }

// Width is LegacyShape(3).
func (b *Blob) Width() (int64, error) { return b.LegacyShape(3) }

// ShapeString returns Caffe's shape string, such as "2 3 4 5 (120)".
func (b *Blob) ShapeString() (string, error) {
	p, err := b.handle()
	if err != nil {
		return "", err
	}
	defer runtime.KeepAlive(b)
	length, err := cBlobShapeString(p, nil, 0)
	if err != nil {
		return "", err
	}
	buffer := make([]byte, int(length)+1)
	length, err = cBlobShapeString(p, (*C.char)(unsafe.Pointer(&buffer[0])), C.size_t(len(buffer)))
	if err != nil {
		return "", err
	}
	return string(buffer[:length]), nil
}

// Capacity returns the number of elements the storage holds (at least the count).
func (b *Blob) Capacity() (int64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobCapacity(p)
	runtime.KeepAlive(b)
	return int64(v), err
}

// Offset returns the row-major offset of the given leading indices (missing trailing ones count
// as 0); each must be in [0, ShapeAt(i)).
func (b *Blob) Offset(indices ...int64) (int64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobOffset(p, axes(indices), int64s(indices))
	runtime.KeepAlive(b)
	return int64(v), err
}

// OffsetLegacy is Caffe's offset(n, c, h, w) with every index checked strictly; only for blobs
// of at most 4 axes.
func (b *Blob) OffsetLegacy(n, c, h, w int64) (int64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobOffsetLegacy(p, C.int64_t(n), C.int64_t(c), C.int64_t(h), C.int64_t(w))
	runtime.KeepAlive(b)
	return int64(v), err
}

// Reshape gives the blob a new shape. Storage (and contents) are replaced only when the new
// count exceeds the capacity. On failure nothing changes.
func (b *Blob) Reshape(shape ...int64) error {
	p, err := b.handle()
	if err != nil {
		return err
	}
	err = cBlobReshape(p, axes(shape), int64s(shape))
	runtime.KeepAlive(b)
	return err
}

// ReshapeLegacy reshapes to 4 axes (num, channels, height, width).
func (b *Blob) ReshapeLegacy(num, channels, height, width int64) error {
	p, err := b.handle()
	if err != nil {
		return err
	}
	err = cBlobReshapeLegacy(p, C.int64_t(num), C.int64_t(channels), C.int64_t(height), C.int64_t(width))
	runtime.KeepAlive(b)
	return err
}

// ReshapeLike reshapes to another blob's shape (of any dtype), Caffe's ReshapeLike.
func (b *Blob) ReshapeLike(other *Blob) error {
	return b.with(other, func(p, q *C.cblob_blob) error { return cBlobReshapeLike(p, q) })
}

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

// ReadElement reads one element of data or diff, converted to float64 (exact for every dtype),
// at the given leading indices (Caffe's data_at / diff_at).
func (b *Blob) ReadElement(part Part, indices ...int64) (float64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobReadElement(p, C.cblob_part(part), axes(indices), int64s(indices))
	runtime.KeepAlive(b)
	runtime.KeepAlive(indices)
	return float64(v), err
}

// Head returns where the current copy of data or diff lives.
func (b *Blob) Head(part Part) (Head, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobHead(p, C.cblob_part(part))
	runtime.KeepAlive(b)
	return Head(v), err
}

// Share makes this blob use other's data or diff memory (Caffe's ShareData / ShareDiff): both
// then see one memory, kept alive until its last holder lets go. Counts must be equal (shapes
// may differ) and dtypes the same.
func (b *Blob) Share(other *Blob, part Part) error {
	return b.with(other, func(p, q *C.cblob_blob) error { return cBlobShare(p, q, C.cblob_part(part)) })
}

// ShareData is Share(other, PartData).
func (b *Blob) ShareData(other *Blob) error { return b.Share(other, PartData) }

// ShareDiff is Share(other, PartDiff).
func (b *Blob) ShareDiff(other *Blob) error { return b.Share(other, PartDiff) }

// CopyFrom copies source's data or diff into this blob (Caffe's CopyFrom). Shapes must be equal
// unless reshape is true, which reshapes this blob to source first.
func (b *Blob) CopyFrom(source *Blob, part Part, reshape bool) error {
	return b.with(source, func(p, q *C.cblob_blob) error {
		return cBlobCopyFrom(p, q, C.cblob_part(part), boolInt(reshape))
	})
}

// Update computes data = data - diff (Caffe's Update). Data never written or read is
// StatusState; integer blobs are StatusNotImplemented, as in Caffe.
func (b *Blob) Update() error {
	p, err := b.handle()
	if err != nil {
		return err
	}
	err = cBlobUpdate(p)
	runtime.KeepAlive(b)
	return err
}

// Asum returns the sum of absolute values of data or diff (0 for memory never accessed).
func (b *Blob) Asum(part Part) (float64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobAsum(p, C.cblob_part(part))
	runtime.KeepAlive(b)
	return float64(v), err
}

// Sumsq returns the sum of squares of data or diff (0 for memory never accessed).
func (b *Blob) Sumsq(part Part) (float64, error) {
	p, err := b.handle()
	if err != nil {
		return 0, err
	}
	v, err := cBlobSumsq(p, C.cblob_part(part))
	runtime.KeepAlive(b)
	return float64(v), err
}

// Scale multiplies data or diff by factor, where its current copy is.
func (b *Blob) Scale(part Part, factor float64) error {
	p, err := b.handle()
	if err != nil {
		return err
	}
	err = cBlobScale(p, C.cblob_part(part), C.double(factor))
	runtime.KeepAlive(b)
	return err
}

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
