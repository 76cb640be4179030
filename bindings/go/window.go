// SPDX-License-Identifier: BSD-2-Clause
package cblob

// #include <cblob/cblob.h>
import "C"

// NeoML's window blobs: a window views size rows of a parent's first axis from a position. It
// owns no memory and holds its parent (closing the parent's *Blob frees nothing while a window of
// it is open). A window is a *Blob: every method takes it. If the parent later gets new storage
// (a reshape past its capacity, Share, SetCPUData of another size), the window keeps viewing the
// old storage, detached, until it is positioned again (SetWindowPosition, ShiftWindow,
// SetWindowSize), which re-attaches it to the parent's current storage and shape. Slices over a
// window's memory follow the package's rules for host slices, with both the window and its
// parent counting as "the blob".

// Window returns a window of size rows over this blob's first axis, at row 0 (NeoML's
// CreateWindowBlob); its shape is this blob's with the first dimension set to size.
func (b *Blob) Window(size int64) (*Blob, error) {
	return b.derive(func(p *C.cblob_blob) (*C.cblob_blob, error) { return cWindowCreate(p, C.int64_t(size)) })
}

// IsWindow reports whether the blob is a window.
func (b *Blob) IsWindow() (bool, error) {
	var v C.int32_t
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cBlobIsWindow(p); return })
	return v != 0, err
}

// WindowPosition returns the window's first row in its parent (NeoML's GetParentPos).
func (b *Blob) WindowPosition() (int64, error) {
	var v C.int64_t
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cWindowPosition(p); return })
	return int64(v), err
}

// WindowSize returns the number of parent rows the window views.
func (b *Blob) WindowSize() (int64, error) {
	var v C.int64_t
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cWindowSize(p); return })
	return int64(v), err
}

// SetWindowPosition moves the window to start at row position (NeoML's SetParentPos), which
// must be in [0, rows - size] (StatusOutOfRange otherwise, naming the bounds).
func (b *Blob) SetWindowPosition(position int64) error {
	return b.do(func(p *C.cblob_blob) error { return cWindowSetPosition(p, C.int64_t(position)) })
}

// ShiftWindow moves the window by delta rows (NeoML's ShiftParentPos).
func (b *Blob) ShiftWindow(delta int64) error {
	return b.do(func(p *C.cblob_blob) error { return cWindowShift(p, C.int64_t(delta)) })
}

// SetWindowSize makes the window size rows long at its current position.
func (b *Blob) SetWindowSize(size int64) error {
	return b.do(func(p *C.cblob_blob) error { return cWindowSetSize(p, C.int64_t(size)) })
}

// WindowParent returns the blob the window views (NeoML's GetParent), as a new holder the caller
// closes.
func (b *Blob) WindowParent() (*Blob, error) {
	return b.derive(cWindowParent)
}

// WindowOwner returns the first blob up the chain of parents that is not a window (NeoML's
// GetOwner), as a new holder the caller closes.
func (b *Blob) WindowOwner() (*Blob, error) {
	return b.derive(cWindowOwner)
}
