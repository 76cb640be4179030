// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): readVector, which adopts the blobs a
// BlobProtoVector read makes.

package cblob

// #include <cblob/cblob.h>
import "C"

import "runtime"

// Caffe's BlobProto and BlobProtoVector (.binaryproto files), and telling the kinds of Caffe
// message apart. Reading checks everything before it creates or changes anything: malformed
// input is StatusParse with a message naming the field and byte offset. Writing always makes a
// fresh message: float32 blobs write data, float64 and integer blobs double_data.

// readVector asks for the number of blobs, then reads them into owned handles.
func readVector(ctx *Context, call func(c *C.cblob_context, max C.int64_t, out **C.cblob_blob) (C.int64_t, error)) ([]*Blob, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(ctx)
	count, err := call(c, 0, nil)
	if err != nil || count == 0 {
		return []*Blob{}, err
	}
	list := make([]*C.cblob_blob, count)
	count, err = call(c, count, &list[0])
	if err != nil {
		return nil, err
	}
	blobs := make([]*Blob, count)
	for i := range blobs {
		blobs[i] = newBlob(list[i])
	}
	return blobs, nil
}

// withPath runs a call with a path copied into C memory.
func withPath(path string, call func(cpath *C.char) error) error {
	return withString(path, "the path", call)
}
