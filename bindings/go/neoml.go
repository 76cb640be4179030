// SPDX-License-Identifier: BSD-2-Clause
package cblob

// #include <cblob/cblob.h>
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// NeoML's CDnnBlob operations: the named 7-axis layout, typed copies, clones and conversions,
// transposes, merges and splits, fills and adds. Each runs where the memory it works on is
// current (host or device); the header's "NeoML blob operations" section has the rules, the
// conversions and the overlap checks.

// do runs a call on this blob's handle and keeps the blob alive through it.
func (b *Blob) do(call func(p *C.cblob_blob) error) error {
	p, err := b.handle()
	if err != nil {
		return err
	}
	err = call(p)
	runtime.KeepAlive(b)
	return err
}

// derive runs a call that makes a new blob from this one.
func (b *Blob) derive(call func(p *C.cblob_blob) (*C.cblob_blob, error)) (*Blob, error) {
	p, err := b.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := call(p)
	runtime.KeepAlive(b)
	return created(ptr, err)
}

// newIn runs a call that makes a new blob in a context.
func newIn(ctx *Context, call func(c *C.cblob_context) (*C.cblob_blob, error)) (*Blob, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := call(c)
	runtime.KeepAlive(ctx)
	return created(ptr, err)
}

// NewTensor returns a 7-axis NeoML blob from up to 7 dimensions, left-aligned as NeoML's
// CreateTensor: dims[i] becomes axis i (BatchLength first) and the other axes are 1.
func NewTensor(ctx *Context, dtype DType, dims ...int64) (*Blob, error) {
	return newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		ptr, err := cBlobCreateTensor(c, C.cblob_dtype(dtype), axes(dims), int64s(dims))
		runtime.KeepAlive(dims)
		return ptr, err
	})
}

// NewVector returns NeoML's vector blob (size, 1, 1, 1, 1, 1, 1): the size is the BatchLength.
func NewVector(ctx *Context, dtype DType, size int64) (*Blob, error) {
	return newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobCreateVector(c, C.cblob_dtype(dtype), C.int64_t(size))
	})
}

// NewMatrix returns NeoML's matrix blob (height, width, 1, 1, 1, 1, 1).
func NewMatrix(ctx *Context, dtype DType, height, width int64) (*Blob, error) {
	return newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobCreateMatrix(c, C.cblob_dtype(dtype), C.int64_t(height), C.int64_t(width))
	})
}

// NewDataBlob returns (batchLength, batchWidth, 1, 1, 1, 1, channels), NeoML's CreateDataBlob.
func NewDataBlob(ctx *Context, dtype DType, batchLength, batchWidth, channels int64) (*Blob, error) {
	return newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobCreateData(c, C.cblob_dtype(dtype), C.int64_t(batchLength), C.int64_t(batchWidth), C.int64_t(channels))
	})
}

// NewListBlob returns (batchLength, batchWidth, listSize, 1, 1, 1, channels), NeoML's
// CreateListBlob.
func NewListBlob(ctx *Context, dtype DType, batchLength, batchWidth, listSize, channels int64) (*Blob, error) {
	return newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobCreateList(c, C.cblob_dtype(dtype), C.int64_t(batchLength), C.int64_t(batchWidth), C.int64_t(listSize), C.int64_t(channels))
	})
}

// NewImage2DBlob returns (batchLength, batchWidth, 1, height, width, 1, channels), NeoML's
// Create2DImageBlob.
func NewImage2DBlob(ctx *Context, dtype DType, batchLength, batchWidth, height, width, channels int64) (*Blob, error) {
	return newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobCreateImage2d(c, C.cblob_dtype(dtype), C.int64_t(batchLength), C.int64_t(batchWidth), C.int64_t(height), C.int64_t(width), C.int64_t(channels))
	})
}

// NewImage3DBlob returns (batchLength, batchWidth, 1, height, width, depth, channels), NeoML's
// Create3DImageBlob.
func NewImage3DBlob(ctx *Context, dtype DType, batchLength, batchWidth, height, width, depth, channels int64) (*Blob, error) {
	return newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobCreateImage3d(c, C.cblob_dtype(dtype), C.int64_t(batchLength), C.int64_t(batchWidth), C.int64_t(height), C.int64_t(width), C.int64_t(depth), C.int64_t(channels))
	})
}

// NewLike returns a blob with this one's shape and context and the given dtype (NeoML's
// CreateBlob(type, pattern)), zero-filled on first access; nothing is copied (Clone copies).
func (b *Blob) NewLike(dtype DType) (*Blob, error) {
	return b.derive(func(p *C.cblob_blob) (*C.cblob_blob, error) { return cBlobCreateLike(p, C.cblob_dtype(dtype)) })
}

// ---- the named layout -----------------------------------------------------------------------

// Dim returns the size of a named axis; it needs exactly 7 axes (StatusShape otherwise).
func (b *Blob) Dim(dim Dim) (int64, error) {
	var v C.int64_t
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cBlobDim(p, C.cblob_dim(dim)); return })
	return int64(v), err
}

// ObjectCount returns BatchLength * BatchWidth * ListSize of a 7-axis blob.
func (b *Blob) ObjectCount() (int64, error) {
	var v C.int64_t
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cBlobObjectCount(p); return })
	return int64(v), err
}

// ObjectSize returns Height * Width * Depth * Channels of a 7-axis blob.
func (b *Blob) ObjectSize() (int64, error) {
	var v C.int64_t
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cBlobObjectSize(p); return })
	return int64(v), err
}

// GeometricalSize returns Height * Width * Depth of a 7-axis blob.
func (b *Blob) GeometricalSize() (int64, error) {
	var v C.int64_t
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cBlobGeometricalSize(p); return })
	return int64(v), err
}

// EqualShape reports whether both blobs have the same axes and dimensions (dtypes are not
// compared).
func (b *Blob) EqualShape(other *Blob) (bool, error) {
	var v C.int32_t
	err := b.with(other, func(p, q *C.cblob_blob) (err error) { v, err = cBlobEqualShape(p, q); return })
	return v != 0, err
}

// EqualDims reports whether both blobs have the same dimension on each listed axis (each must
// exist in both; a negative axis counts from each blob's end).
func (b *Blob) EqualDims(other *Blob, axesToCompare ...int) (bool, error) {
	list := make([]C.int32_t, len(axesToCompare))
	for i, a := range axesToCompare {
		list[i] = C.int32_t(a)
	}
	var first *C.int32_t
	if len(list) > 0 {
		first = &list[0]
	}
	var v C.int32_t
	err := b.with(other, func(p, q *C.cblob_blob) (err error) {
		v, err = cBlobEqualDims(p, q, C.int32_t(len(list)), first)
		return
	})
	runtime.KeepAlive(list)
	return v != 0, err
}

// Reinterpret gives the blob another shape with the same count (NeoML's
// ReinterpretDimensions): memory and contents stay. It works on windows.
func (b *Blob) Reinterpret(shape ...int64) error {
	err := b.do(func(p *C.cblob_blob) error { return cBlobReinterpret(p, axes(shape), int64s(shape)) })
	runtime.KeepAlive(shape)
	return err
}

// ---- typed copies, clones and conversions -----------------------------------------------------

// elements points C at a typed slice for one call; nil for an empty one.
func elements[T Element](values []T) unsafe.Pointer {
	if len(values) == 0 {
		return nil
	}
	return unsafe.Pointer(&values[0])
}

// CopyIn copies values into data or diff (NeoML's CopyFrom(T*)); T must be the blob's element
// type and values must hold exactly Count elements.
func CopyIn[T Element](b *Blob, part Part, values []T) error {
	err := b.do(func(p *C.cblob_blob) error {
		return cBlobCopyIn(p, C.cblob_part(part), C.cblob_dtype(dtypeOf[T]()), elements(values), C.int64_t(len(values)))
	})
	runtime.KeepAlive(values)
	return err
}

// CopyOut copies data or diff into out (NeoML's CopyTo), which must hold exactly Count
// elements of the blob's type.
func CopyOut[T Element](b *Blob, part Part, out []T) error {
	err := b.do(func(p *C.cblob_blob) error {
		return cBlobCopyOut(p, C.cblob_part(part), C.cblob_dtype(dtypeOf[T]()), elements(out), C.int64_t(len(out)))
	})
	runtime.KeepAlive(out)
	return err
}

// ToSlice returns a copy of data or diff in Go memory.
func ToSlice[T Element](b *Blob, part Part) ([]T, error) {
	if err := checkElement[T](b); err != nil {
		return nil, err
	}
	count, err := b.Count()
	if err != nil {
		return nil, err
	}
	if count > int64(^uint(0)>>1) {
		return nil, bindingError(StatusOverflow, fmt.Sprintf("%d elements do not fit in a slice", count))
	}
	out := make([]T, count)
	return out, CopyOut(b, part, out)
}

// ConvertFrom copies source's data or diff into this blob, converting values to its dtype
// (NeoML's CopyFrom(blob)); the shapes must be equal.
func (b *Blob) ConvertFrom(source *Blob, part Part) error {
	return b.with(source, func(p, q *C.cblob_blob) error { return cBlobConvertFrom(p, q, C.cblob_part(part)) })
}

// ConvertFromTruncating is ConvertFrom with NeoML's float-to-integer rule: the fraction is
// truncated toward zero (NeoML's VectorConvert), then saturated; NaN gives 0. Other pairs convert
// as ConvertFrom does. Since ABI 1.1.
func (b *Blob) ConvertFromTruncating(source *Blob, part Part) error {
	return b.with(source, func(p, q *C.cblob_blob) error {
		return cBlobConvertFromTruncating(p, q, C.cblob_part(part))
	})
}

// DeepCopy returns a new, independent blob with this one's dtype, shape, data and diff
// (NeoML's GetCopy).
func (b *Blob) DeepCopy() (*Blob, error) {
	return b.derive(cBlobDeepCopy)
}

// Clone returns a new, independent blob of the given dtype with this one's shape, and its data
// and diff converted.
func (b *Blob) Clone(dtype DType) (*Blob, error) {
	return b.derive(func(p *C.cblob_blob) (*C.cblob_blob, error) { return cBlobClone(p, C.cblob_dtype(dtype)) })
}

// Transposed returns a new blob with axes axis1 and axis2 swapped, in shape, data and diff
// (NeoML's GetTransposed); a negative axis counts from the end.
func (b *Blob) Transposed(axis1, axis2 int) (*Blob, error) {
	return b.derive(func(p *C.cblob_blob) (*C.cblob_blob, error) {
		return cBlobTransposed(p, C.int32_t(axis1), C.int32_t(axis2))
	})
}

// TransposeFrom writes source's data or diff with its axes axis1 and axis2 swapped into this
// blob (NeoML's TransposeFrom); this blob's shape must be source's with the two swapped.
func (b *Blob) TransposeFrom(source *Blob, part Part, axis1, axis2 int) error {
	return b.with(source, func(p, q *C.cblob_blob) error {
		return cBlobTransposeFrom(p, q, C.cblob_part(part), C.int32_t(axis1), C.int32_t(axis2))
	})
}

// ---- merge and split ----------------------------------------------------------------------

// withList runs a call that takes this blob and an array of others.
func (b *Blob) withList(others []*Blob, call func(p *C.cblob_blob, n C.int32_t, list **C.cblob_blob) error) error {
	list, first, err := handles(others)
	if err != nil {
		return err
	}
	err = b.do(func(p *C.cblob_blob) error { return call(p, C.int32_t(len(list)), first) })
	runtime.KeepAlive(others)
	runtime.KeepAlive(list)
	return err
}

// Merge writes the concatenation of the inputs along axis into this blob (NeoML's MergeByDim).
// Every dimension is checked; inputs must not share memory with this blob.
func (b *Blob) Merge(part Part, axis int, inputs ...*Blob) error {
	return b.withList(inputs, func(p *C.cblob_blob, n C.int32_t, list **C.cblob_blob) error {
		return cBlobMerge(p, C.cblob_part(part), C.int32_t(axis), n, list)
	})
}

// Split cuts this blob along axis into the outputs, in order (NeoML's SplitByDim).
func (b *Blob) Split(part Part, axis int, outputs ...*Blob) error {
	return b.withList(outputs, func(p *C.cblob_blob, n C.int32_t, list **C.cblob_blob) error {
		return cBlobSplit(p, C.cblob_part(part), C.int32_t(axis), n, list)
	})
}

// MergeObjects joins whole objects of 7-axis blobs (NeoML's MergeByObject).
func (b *Blob) MergeObjects(part Part, inputs ...*Blob) error {
	return b.withList(inputs, func(p *C.cblob_blob, n C.int32_t, list **C.cblob_blob) error {
		return cBlobMergeObjects(p, C.cblob_part(part), n, list)
	})
}

// SplitObjects cuts each object of this 7-axis blob into the outputs' objects (NeoML's
// SplitByObject).
func (b *Blob) SplitObjects(part Part, outputs ...*Blob) error {
	return b.withList(outputs, func(p *C.cblob_blob, n C.int32_t, list **C.cblob_blob) error {
		return cBlobSplitObjects(p, C.cblob_part(part), n, list)
	})
}

// ---- fills and adds -------------------------------------------------------------------------

// Fill sets every element of data or diff to value (NeoML's Fill). For an integer blob the value
// must be an integer (StatusInvalidArgument otherwise) in the dtype's range (StatusOverflow
// otherwise).
func (b *Blob) Fill(part Part, value float64) error {
	return b.do(func(p *C.cblob_blob) error { return cBlobFill(p, C.cblob_part(part), C.double(value)) })
}

// FillObject sets one object of a 7-axis blob to value (NeoML's FillObject).
func (b *Blob) FillObject(part Part, object int64, value float64) error {
	return b.do(func(p *C.cblob_blob) error {
		return cBlobFillObject(p, C.cblob_part(part), C.int64_t(object), C.double(value))
	})
}

// Clear sets data or diff to zero (NeoML's Clear).
func (b *Blob) Clear(part Part) error {
	return b.do(func(p *C.cblob_blob) error { return cBlobClear(p, C.cblob_part(part)) })
}

// ClearObject sets one object of a 7-axis blob to zero (NeoML's ClearObject).
func (b *Blob) ClearObject(part Part, object int64) error {
	return b.do(func(p *C.cblob_blob) error { return cBlobClearObject(p, C.cblob_part(part), C.int64_t(object)) })
}

// Add adds source's data or diff to this blob's, element by element (NeoML's Add); dtypes and
// shapes must be equal, integers wrap, and a blob may be added to itself.
func (b *Blob) Add(source *Blob, part Part) error {
	return b.with(source, func(p, q *C.cblob_blob) error { return cBlobAdd(p, q, C.cblob_part(part)) })
}
