// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): NeoML's typed copies, generic over the
// element type (Go methods cannot be), and newIn, which the generated DLPack imports use.

package cblob

// #include <cblob/cblob.h>
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// NeoML's typed copies (CopyFrom(T*), CopyTo), by hand: Go methods cannot be generic, so they
// are functions generic over the element type, which they check against the blob's. NeoML's
// other CDnnBlob operations (the named 7-axis layout, clones and conversions, transposes, merges
// and splits, fills and adds) are one library call each, generated (safe_generated.go). Each
// runs where the memory it works on is current (host or device); the header's "NeoML blob
// operations" section has the rules, the conversions and the overlap checks.

// newIn runs a call that makes a new blob in a context.
func newIn(ctx *Context, call func(c *C.cblob_context) (*C.cblob_blob, error)) (*Blob, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := call(c)
	runtime.KeepAlive(ctx)
	return blobCreated(ptr, err)
}

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
