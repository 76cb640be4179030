// SPDX-License-Identifier: BSD-2-Clause
package cblob

// #include <cblob/cblob.h>
import "C"

import "runtime"

// Caffe's BlobProto and BlobProtoVector (.binaryproto files), and telling the kinds of Caffe
// message apart. Reading checks everything before it creates or changes anything: malformed
// input is StatusParse with a message naming the field and byte offset. Writing always makes a
// fresh message: float32 blobs write data, float64 and integer blobs double_data.

// ToProto serializes the blob as a BlobProto (Caffe's ToProto into a fresh message): its shape,
// its data and, with writeDiff, its diff. A blob that never had a shape is StatusState.
func (b *Blob) ToProto(writeDiff bool) ([]byte, error) {
	var bytes []byte
	err := b.do(func(p *C.cblob_blob) (err error) {
		bytes, err = readBytes(func(buffer *C.uint8_t, size C.size_t) (C.size_t, error) {
			return cBlobToProto(p, boolInt(writeDiff), buffer, size)
		})
		return
	})
	return bytes, err
}

// SaveProto writes the blob as a BlobProto file (a .binaryproto), replacing path atomically.
func (b *Blob) SaveProto(path string, writeDiff bool) error {
	return withPath(path, func(cpath *C.char) error {
		return b.do(func(p *C.cblob_blob) error { return cBlobToProtoFile(p, boolInt(writeDiff), cpath) })
	})
}

// LoadProto loads a serialized BlobProto into this blob (Caffe's FromProto). With reshape the
// blob takes the BlobProto's shape; without, the shapes must be equal by Caffe's ShapeEquals
// (StatusShape otherwise). Values are converted to the blob's dtype; the diff is loaded when the
// BlobProto has one. On failure the blob is unchanged.
func (b *Blob) LoadProto(data []byte, reshape bool) error {
	err := b.do(func(p *C.cblob_blob) error {
		return cBlobFromProto(p, bytesPtr(data), C.size_t(len(data)), boolInt(reshape))
	})
	runtime.KeepAlive(data)
	return err
}

// LoadProtoFile loads a BlobProto file into this blob, as LoadProto does.
func (b *Blob) LoadProtoFile(path string, reshape bool) error {
	return withPath(path, func(cpath *C.char) error {
		return b.do(func(p *C.cblob_blob) error { return cBlobFromProtoFile(p, cpath, boolInt(reshape)) })
	})
}

// ShapeEqualsProto is Caffe's ShapeEquals: whether this blob's shape is the BlobProto's (legacy
// dims compare 1-padded, as Caffe does). Only the shape is read.
func (b *Blob) ShapeEqualsProto(data []byte) (bool, error) {
	var v C.int32_t
	err := b.do(func(p *C.cblob_blob) (err error) {
		v, err = cBlobShapeEqualsProto(p, bytesPtr(data), C.size_t(len(data)))
		return
	})
	runtime.KeepAlive(data)
	return v != 0, err
}

// NewBlobFromProto returns a blob from a serialized BlobProto: float64 when it holds
// double_data, else float32, with its shape, data and diff.
func NewBlobFromProto(ctx *Context, data []byte) (*Blob, error) {
	blob, err := newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {
		return cBlobCreateFromProto(c, bytesPtr(data), C.size_t(len(data)))
	})
	runtime.KeepAlive(data)
	return blob, err
}

// NewBlobFromProtoFile returns a blob from a BlobProto file, as NewBlobFromProto makes it.
func NewBlobFromProtoFile(ctx *Context, path string) (*Blob, error) {
	var blob *Blob
	err := withPath(path, func(cpath *C.char) (err error) {
		blob, err = newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) { return cBlobCreateFromProtoFile(c, cpath) })
		return
	})
	return blob, err
}

// BlobVectorToProto serializes blobs as a BlobProtoVector, each as ToProto writes it.
func BlobVectorToProto(blobs []*Blob, writeDiff bool) ([]byte, error) {
	list, first, err := handles(blobs)
	if err != nil {
		return nil, err
	}
	bytes, err := readBytes(func(buffer *C.uint8_t, size C.size_t) (C.size_t, error) {
		return cBlobVectorToProto(first, C.int64_t(len(list)), boolInt(writeDiff), buffer, size)
	})
	runtime.KeepAlive(blobs)
	runtime.KeepAlive(list)
	return bytes, err
}

// SaveBlobVector writes blobs as a BlobProtoVector file, replacing path atomically.
func SaveBlobVector(path string, blobs []*Blob, writeDiff bool) error {
	list, first, err := handles(blobs)
	if err != nil {
		return err
	}
	err = withPath(path, func(cpath *C.char) error {
		return cBlobVectorToProtoFile(first, C.int64_t(len(list)), boolInt(writeDiff), cpath)
	})
	runtime.KeepAlive(blobs)
	runtime.KeepAlive(list)
	return err
}

// BlobVectorFromProto reads a serialized BlobProtoVector into new blobs, each made as
// NewBlobFromProto makes it. The caller closes them.
func BlobVectorFromProto(ctx *Context, data []byte) ([]*Blob, error) {
	blobs, err := readVector(ctx, func(c *C.cblob_context, max C.int64_t, out **C.cblob_blob) (C.int64_t, error) {
		return cBlobVectorFromProto(c, bytesPtr(data), C.size_t(len(data)), max, out)
	})
	runtime.KeepAlive(data)
	return blobs, err
}

// BlobVectorFromProtoFile reads a BlobProtoVector file into new blobs.
func BlobVectorFromProtoFile(ctx *Context, path string) ([]*Blob, error) {
	var blobs []*Blob
	err := withPath(path, func(cpath *C.char) (err error) {
		blobs, err = readVector(ctx, func(c *C.cblob_context, max C.int64_t, out **C.cblob_blob) (C.int64_t, error) {
			return cBlobVectorFromProtoFile(c, cpath, max, out)
		})
		return
	})
	return blobs, err
}

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

// DetectProto tells which Caffe message the bytes hold (a net, a BlobProto or a
// BlobProtoVector), from their top-level fields; the reader of that kind checks the rest.
func DetectProto(data []byte) (ProtoKind, error) {
	kind, err := cProtoDetect(bytesPtr(data), C.size_t(len(data)))
	runtime.KeepAlive(data)
	return ProtoKind(kind), err
}

// DetectProtoFile is DetectProto for a file (mapped, not read whole).
func DetectProtoFile(path string) (ProtoKind, error) {
	var kind C.cblob_proto_kind
	err := withPath(path, func(cpath *C.char) (err error) { kind, err = cProtoDetectFile(cpath); return })
	return ProtoKind(kind), err
}

// withPath runs a call with a path copied into C memory.
func withPath(path string, call func(cpath *C.char) error) error {
	return withString(path, "the path", call)
}
