// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): mapped ranges as scoped Mapping[T] values
// that end with Close.

package cblob

// #include <cblob/cblob.h>
import "C"

import (
	"fmt"
	"unsafe"
)

// Mapping is an open mapping of a range of a blob's data or diff (NeoML's GetBuffer): a slice
// over host memory until Close (NeoML's ReleaseBuffer). Where the part's current copy is on the
// device, the range is staged through host memory: copied from the device when mapped with
// read access, and back when a mapping with write access is closed. Otherwise the slice is the
// blob's host memory itself.
//
// A blob's mappings close last in, first out (StatusState otherwise, and nothing changes). An
// open mapping holds its blob, so a mapping that is never closed keeps the blob's memory for
// good; closing the *Blob it was made through closes the blob's open mappings first, newest
// first. Finalizers never close mappings (that changes the blob, which another goroutine may be
// using). While mapped, a blob cannot change shape, share memory or take a buffer, and a mapped
// window cannot move (StatusState).
type Mapping[T Element] struct {
	blob   *Blob
	buffer *C.cblob_buffer
	slice  []T
}

// unmapper is what a Blob keeps of its open mappings.
type unmapper interface {
	unmap() error
}

// Map maps count elements of data or diff from position for the given access. T must be the
// blob's element type; the range must lie within the count (StatusOutOfRange otherwise). With
// AccessWrite only, the slice starts with unspecified values (the range is not copied from the
// device), which the caller must overwrite.
func Map[T Element](b *Blob, part Part, position, count int64, access Access) (*Mapping[T], error) {
	if err := checkElement[T](b); err != nil {
		return nil, err
	}
	if count < 0 || count > int64(^uint(0)>>1) {
		return nil, bindingError(StatusOutOfRange, fmt.Sprintf("%d elements cannot be mapped", count))
	}
	var buffer *C.cblob_buffer
	var ptr unsafe.Pointer
	err := b.do(func(p *C.cblob_blob) (err error) {
		buffer, ptr, err = cBlobMap(p, C.cblob_part(part), C.int64_t(position), C.int64_t(count), C.cblob_access(access))
		return
	})
	if err != nil {
		return nil, err
	}
	m := &Mapping[T]{blob: b, buffer: buffer, slice: []T{}}
	if ptr != nil {
		m.slice = unsafe.Slice((*T)(ptr), int(count))
	}
	b.mappings = append(b.mappings, m)
	return m, nil
}

// Slice returns the mapped elements; valid until the mapping is closed.
func (m *Mapping[T]) Slice() []T {
	return m.slice
}

// Close ends the mapping: a range staged from the device with write access is copied back, and
// that copy can fail (StatusDevice), leaving the mapping open so that Close may be called
// again. Calling Close on a closed mapping does nothing.
func (m *Mapping[T]) Close() error {
	if m == nil || m.buffer == nil {
		return nil
	}
	return m.unmap()
}

func (m *Mapping[T]) unmap() error {
	if err := cBufferUnmap(m.buffer); err != nil {
		return err
	}
	m.buffer, m.slice = nil, nil
	list := m.blob.mappings
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == unmapper(m) {
			m.blob.mappings = append(list[:i], list[i+1:]...)
			break
		}
	}
	return nil
}
