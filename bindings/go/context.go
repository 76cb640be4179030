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

// Mode returns where copies and math run.
func (c *Context) Mode() (Mode, error) {
	p, err := c.handle()
	if err != nil {
		return 0, err
	}
	mode, err := cContextMode(p)
	runtime.KeepAlive(c)
	return Mode(mode), err
}

// SetMode sets where copies and math run. ModeGPU needs a working GPU: without one it fails
// with the status that says why (StatusNoDriver, StatusNoDevice, ...) and the mode stays as it
// was.
func (c *Context) SetMode(mode Mode) error {
	p, err := c.handle()
	if err != nil {
		return err
	}
	err = cContextSetMode(p, C.cblob_mode(mode))
	runtime.KeepAlive(c)
	return err
}
