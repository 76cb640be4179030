// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Model type, whose lent form a File
// ends (file.go), and the loops over a model's layers and a layer's blobs (Layers, LayerBlobs:
// closing what was taken when one fails), and the string helpers withString and goString.
// Model.Layer is a generated record (records_generated.go).

package cblob

// #include <cblob/cblob.h>
import "C"

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
	ptr    *C.cblob_model
	lender *File // the file whose model this is (File.Model), nil for a model of its own
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
