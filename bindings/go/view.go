// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): host views: slices over a blob's memory,
// generic over the element type.

package cblob

// #include <cblob/cblob.h>
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// View returns data or diff as a slice over the blob's host memory (Caffe's cpu_data /
// cpu_diff), syncing from the GPU when the current copy is there. Writes through it are not
// seen as writes (the head does not move to the host): use MutableView to write. T must be the
// blob's element type (StatusDType otherwise). See the package documentation for how long the
// slice stays valid.
func View[T Element](b *Blob, part Part) ([]T, error) {
	return hostSlice[T](b, part, cBlobCPUPtr)
}

// MutableView returns data or diff as a writable slice over the blob's host memory (Caffe's
// mutable_cpu_data / mutable_cpu_diff): it syncs like View, then marks the host copy current.
func MutableView[T Element](b *Blob, part Part) ([]T, error) {
	return hostSlice[T](b, part, cBlobMutableCPUPtr)
}

// Data is View(b, PartData).
func Data[T Element](b *Blob) ([]T, error) { return View[T](b, PartData) }

// Diff is View(b, PartDiff).
func Diff[T Element](b *Blob) ([]T, error) { return View[T](b, PartDiff) }

// MutableData is MutableView(b, PartData).
func MutableData[T Element](b *Blob) ([]T, error) { return MutableView[T](b, PartData) }

// MutableDiff is MutableView(b, PartDiff).
func MutableDiff[T Element](b *Blob) ([]T, error) { return MutableView[T](b, PartDiff) }

func checkElement[T Element](b *Blob) error {
	dtype, err := b.DType()
	if err != nil {
		return err
	}
	if want := dtypeOf[T](); dtype != want {
		var zero T
		return bindingError(StatusDType, fmt.Sprintf("the blob holds %v elements, not %T", dtype, zero))
	}
	return nil
}

func hostSlice[T Element](b *Blob, part Part, pointer func(*C.cblob_blob, C.cblob_part) (unsafe.Pointer, error)) ([]T, error) {
	if err := checkElement[T](b); err != nil {
		return nil, err
	}
	count, err := b.Count()
	if err != nil {
		return nil, err
	}
	if count > math.MaxInt {
		return nil, bindingError(StatusOverflow, fmt.Sprintf("%d elements do not fit in a slice", count))
	}
	p, err := b.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := pointer(p, C.cblob_part(part))
	runtime.KeepAlive(b)
	if err != nil {
		return nil, err
	}
	if ptr == nil {
		return []T{}, nil
	}
	return unsafe.Slice((*T)(ptr), int(count)), nil
}
