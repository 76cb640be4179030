// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Context type and its constructor; its
// one-call methods and lifetime are generated.

package cblob

// #include <cblob/cblob.h>
import "C"

// Context holds what Caffe keeps in its per-thread singleton: the mode (CPU or GPU) and the
// device. Blobs keep their context alive inside the library, so closing a context while blobs
// made in it are open is fine.
type Context struct {
	ptr      *C.cblob_context
	progress *progressEntry // SetProgress's function, forgotten with the Context
}

// NewContext returns a context in CPU mode.
func NewContext() (*Context, error) {
	return contextCreated(cContextCreate())
}
