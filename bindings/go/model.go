// SPDX-License-Identifier: BSD-2-Clause
package cblob

// #include <cblob/cblob.h>
import "C"

import "runtime"

// Model is a Caffe net's weights: its name, format, and layers, each with a name, a type and
// blobs. Open one from a .caffemodel (OpenModelFile, OpenModel) or build one (NewModel,
// AddLayer) and save it (Save, Bytes). It keeps what locates blobs: saving writes a
// weights-only NetParameter (layer names, types and blobs), which is what Caffe's
// CopyTrainedLayersFrom reads.
//
// Blobs come out of a model as new holders (LayerBlob): each is a *Blob of its own that the
// caller closes, that stays valid after the model is closed, and whose changes are what the
// model saves. A model's pure getters (Name, Format, NumLayers, Layer, FindLayer, LayerBlob)
// may be called from several goroutines at once; anything else needs one goroutine at a time,
// and Close must not race with other calls. A finalizer closes a model you forget, late.
type Model struct {
	ptr *C.cblob_model
}

// Layer describes one layer of a model.
type Layer struct {
	// Name is the layer's name ("" when the file gives none).
	Name string
	// Type is Caffe's layer type: the type string of the current format ("Convolution"), or the
	// LayerType enum name of V1 ("CONVOLUTION").
	Type string
	// NumBlobs is the number of parameter blobs (0 for layers such as pooling).
	NumBlobs int
}

func newModel(ptr *C.cblob_model, err error) (*Model, error) {
	if err != nil {
		return nil, err
	}
	m := &Model{ptr: ptr}
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

// NewModel returns an empty model to fill with AddLayer and save. An empty name means the net
// has none. A V1 model's layer types must be LayerType names ("CONVOLUTION") or numbers.
func NewModel(ctx *Context, format NetFormat, name string) (*Model, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	var cname *C.char
	if name != "" {
		if cname, err = cString(name, "the net's name"); err != nil {
			return nil, err
		}
		defer freeString(cname)
	}
	ptr, err := cModelCreate(c, C.cblob_net_format(format), cname)
	runtime.KeepAlive(ctx)
	return newModel(ptr, err)
}

// OpenModel reads a serialized NetParameter (a .caffemodel) in the current or the V1 format,
// every layer in file order. Each blob is float32, or float64 where the file holds double_data.
// Malformed input is StatusParse, with the field path and byte offset. data may be reused once
// the call returns.
func OpenModel(ctx *Context, data []byte) (*Model, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := cModelOpen(c, bytesPtr(data), C.size_t(len(data)))
	runtime.KeepAlive(ctx)
	runtime.KeepAlive(data)
	return newModel(ptr, err)
}

// OpenModelFile reads a .caffemodel file as OpenModel does; the file is mapped, not read whole.
func OpenModelFile(ctx *Context, path string) (*Model, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	var ptr *C.cblob_model
	err = withPath(path, func(cpath *C.char) (err error) { ptr, err = cModelOpenFile(c, cpath); return })
	runtime.KeepAlive(ctx)
	return newModel(ptr, err)
}

// Close frees the model and drops its holds on its blobs; blobs taken from it stay valid.
// Calling it again does nothing.
func (m *Model) Close() error {
	if m == nil || m.ptr == nil {
		return nil
	}
	cModelDestroy(m.ptr)
	m.ptr = nil
	runtime.SetFinalizer(m, nil)
	return nil
}

func (m *Model) do(call func(p *C.cblob_model) error) error {
	if m == nil || m.ptr == nil {
		return ErrClosed
	}
	err := call(m.ptr)
	runtime.KeepAlive(m)
	return err
}

// Format returns how the net stores its layers (the file's, or the one it was created with).
func (m *Model) Format() (NetFormat, error) {
	var v C.cblob_net_format
	err := m.do(func(p *C.cblob_model) (err error) { v, err = cModelFormat(p); return })
	return NetFormat(v), err
}

// Name returns the net's name ("" when it has none).
func (m *Model) Name() (string, error) {
	var name string
	err := m.do(func(p *C.cblob_model) error {
		text, err := cModelName(p)
		name = goString(text)
		return err
	})
	return name, err
}

// NumLayers returns the number of layers.
func (m *Model) NumLayers() (int, error) {
	var v C.int64_t
	err := m.do(func(p *C.cblob_model) (err error) { v, err = cModelNumLayers(p); return })
	return int(v), err
}

// Layer returns the name, type and number of blobs of layer i.
func (m *Model) Layer(i int) (Layer, error) {
	var layer Layer
	err := m.do(func(p *C.cblob_model) error {
		name, err := cModelLayerName(p, C.int64_t(i))
		if err != nil {
			return err
		}
		kind, err := cModelLayerType(p, C.int64_t(i))
		if err != nil {
			return err
		}
		count, err := cModelLayerNumBlobs(p, C.int64_t(i))
		layer = Layer{Name: goString(name), Type: goString(kind), NumBlobs: int(count)}
		return err
	})
	return layer, err
}

// Layers returns every layer's description, in file order.
func (m *Model) Layers() ([]Layer, error) {
	n, err := m.NumLayers()
	if err != nil {
		return nil, err
	}
	layers := make([]Layer, n)
	for i := range layers {
		if layers[i], err = m.Layer(i); err != nil {
			return nil, err
		}
	}
	return layers, nil
}

// FindLayer returns the index of the first layer with the given name, or -1 when none has it.
func (m *Model) FindLayer(name string) (int, error) {
	var v C.int64_t
	err := m.do(func(p *C.cblob_model) error {
		return withString(name, "the layer name", func(cname *C.char) (err error) { v, err = cModelFindLayer(p, cname); return })
	})
	return int(v), err
}

// LayerBlob returns blob index of layer, as a new holder the caller closes.
func (m *Model) LayerBlob(layer, index int) (*Blob, error) {
	var blob *Blob
	err := m.do(func(p *C.cblob_model) (err error) {
		blob, err = created(cModelLayerBlob(p, C.int64_t(layer), C.int64_t(index)))
		return
	})
	return blob, err
}

// LayerBlobs returns every blob of a layer, as new holders the caller closes.
func (m *Model) LayerBlobs(layer int) ([]*Blob, error) {
	info, err := m.Layer(layer)
	if err != nil {
		return nil, err
	}
	blobs := make([]*Blob, info.NumBlobs)
	for i := range blobs {
		if blobs[i], err = m.LayerBlob(layer, i); err != nil {
			for _, b := range blobs[:i] {
				b.Close()
			}
			return nil, err
		}
	}
	return blobs, nil
}

// AddLayer appends a layer with a name, a type and blobs. The model becomes a holder of each
// blob (nothing is copied): the values saved are the blobs' values at save time.
func (m *Model) AddLayer(name, layerType string, blobs ...*Blob) error {
	list, first, err := handles(blobs)
	if err != nil {
		return err
	}
	err = m.do(func(p *C.cblob_model) error {
		return withString(name, "the layer name", func(cname *C.char) error {
			return withString(layerType, "the layer type", func(ctype *C.char) error {
				return cModelAddLayer(p, cname, ctype, first, C.int64_t(len(list)))
			})
		})
	})
	runtime.KeepAlive(blobs)
	runtime.KeepAlive(list)
	return err
}

// Bytes serializes the model as a NetParameter in its format: the name, then each layer's name,
// type and blobs (with their diffs when writeDiff).
func (m *Model) Bytes(writeDiff bool) ([]byte, error) {
	var bytes []byte
	err := m.do(func(p *C.cblob_model) (err error) {
		bytes, err = readBytes(func(buffer *C.uint8_t, size C.size_t) (C.size_t, error) {
			return cModelToProto(p, boolInt(writeDiff), buffer, size)
		})
		return
	})
	return bytes, err
}

// Save writes the model as a .caffemodel file, replacing path atomically (a failed save leaves
// no partial file).
func (m *Model) Save(path string, writeDiff bool) error {
	return m.do(func(p *C.cblob_model) error {
		return withPath(path, func(cpath *C.char) error { return cModelToProtoFile(p, boolInt(writeDiff), cpath) })
	})
}

// withString runs a call with a string copied into C memory.
func withString(text, what string, call func(ctext *C.char) error) error {
	ctext, err := cString(text, what)
	if err != nil {
		return err
	}
	defer freeString(ctext)
	return call(ctext)
}

// goString copies a string the library owns; nil gives "".
func goString(text *C.char) string {
	if text == nil {
		return ""
	}
	return C.GoString(text)
}
