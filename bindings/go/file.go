// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the File type's lifetime, which outlives
// Close while a model it lent is open, and the model it lends (cblob_file_model).

package cblob

// #include <cblob/cblob.h>
import "C"

import (
	"runtime"
	"sync"
)

// File is a file opened whatever it holds (OpenFile): a .caffemodel, a .binaryproto, a
// BlobProtoVector, a .npy, an .npz, a .safetensors file or a .npy folder, read once, its kind told
// from its bytes. A file the library cannot read is refused with a message that says what it is
// (a prototxt, an HDF5 snapshot, a zip, a pickle, ...). A file holding a model gives it with
// Model; a file of blobs gives them with Blob. Close frees it (a finalizer does, late, for one
// never closed); blobs taken from it live on, and so does a model it lent until that is closed
// too. Close must not race with other calls.
type File struct {
	ptr   *C.cblob_file // nil after Close
	mu    sync.Mutex    // guards held and loans (a lent model's finalizer runs on another goroutine)
	held  *C.cblob_file // the handle until the file is closed and every lent model is
	loans int           // lent models not yet closed
}

// newFile wraps a handle the caller owns; a finalizer drops it if it is never closed.
func newFile(ptr *C.cblob_file) *File {
	f := &File{ptr: ptr, held: ptr}
	runtime.SetFinalizer(f, (*File).release)
	return f
}

// fileCreated wraps the handle a creating call returned, or passes its error on.
func fileCreated(ptr *C.cblob_file, err error) (*File, error) {
	if err != nil {
		return nil, err
	}
	return newFile(ptr), nil
}

// Close frees the file, its model and its holds on its blobs (blobs the caller holds stay
// valid); a model it lent keeps the file's handle until that model is closed too. Calling Close
// again does nothing; the finalizer calls it, late, for a file never closed.
func (f *File) Close() error {
	if f != nil {
		f.release()
		runtime.SetFinalizer(f, nil)
	}
	return nil
}

// release gives the file up once (Close, or the finalizer).
func (f *File) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ptr = nil
	f.freeUnused()
}

// endLoan is a lent model's release (Model.Close, or its finalizer).
func (f *File) endLoan() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loans--
	f.freeUnused()
}

// freeUnused destroys the handle once neither the file nor a lent model uses it (mu held).
func (f *File) freeUnused() {
	if f.ptr == nil && f.loans == 0 && f.held != nil {
		cFileDestroy(f.held)
		f.held = nil
	}
}

// handle returns the handle, or ErrClosed after Close.
func (f *File) handle() (*C.cblob_file, error) {
	if f == nil || f.ptr == nil {
		return nil, ErrClosed
	}
	return f.ptr, nil
}

// do runs a call on the handle and keeps the object alive through it.
func (f *File) do(call func(p *C.cblob_file) error) error {
	p, err := f.handle()
	if err != nil {
		return err
	}
	err = call(p)
	runtime.KeepAlive(f)
	return err
}

// Model returns the model of a net, an .npz, a safetensors file or a .npy folder: the file's
// own, lent. Close it when done, like any model: it keeps the file's handle until then (so it
// stays valid after the file is closed), and closing it never frees the file's model. A model
// read from an .npz, a safetensors file or a .npy folder has the keys' layers. A file of blobs
// is StatusState.
func (f *File) Model() (*Model, error) {
	var m *Model
	err := f.do(func(p *C.cblob_file) error {
		raw, err := cFileModel(p)
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.loans++
		f.mu.Unlock()
		m = &Model{ptr: raw, lender: f}
		runtime.SetFinalizer(m, (*Model).release)
		return nil
	})
	return m, err
}
