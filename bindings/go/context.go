// SPDX-License-Identifier: BSD-2-Clause
package cblob

// #include <cblob/cblob.h>
import "C"

import "runtime"

// Context holds what Caffe keeps in its per-thread singleton: the mode (CPU or GPU) and the
// device. Blobs keep their context alive inside the library, so closing a context while blobs
// made in it are open is fine.
type Context struct {
	ptr *C.cblob_context
}

// NewContext returns a context in CPU mode.
func NewContext() (*Context, error) {
	ptr, err := cContextCreate()
	if err != nil {
		return nil, err
	}
	c := &Context{ptr: ptr}
	runtime.SetFinalizer(c, (*Context).Close)
	return c, nil
}

// Close drops the hold on the context. Calling it again does nothing.
func (c *Context) Close() error {
	if c == nil || c.ptr == nil {
		return nil
	}
	cContextDestroy(c.ptr)
	c.ptr = nil
	runtime.SetFinalizer(c, nil)
	return nil
}

func (c *Context) handle() (*C.cblob_context, error) {
	if c == nil || c.ptr == nil {
		return nil, ErrClosed
	}
	return c.ptr, nil
}
