// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): BlobValues, a blob's values as a slice
// of the element type its dtype picks. A layer's rules and param specs are generated records
// (records_generated.go).

package cblob

// #include <cblob/cblob.h>
import "C"

import (
	"runtime"
	"unsafe"
)

// A model opened from a file keeps every field of it (bottoms, tops, phases, rules, parameters,
// fields of Caffe forks) and saves byte for byte what it read, changed blobs' values aside. The
// methods below read a layer's structure, its blobs without making handles, and export the
// blobs as safetensors or NumPy .npz; OpenSafetensors and OpenNpz read those back into a model
// for ReplaceBlobs (net surgery).

// BlobValues returns a copy of a blob's data or diff without making its handle: a []float32,
// []float64, []int32 or []uint32 by its dtype.
func (m *Model) BlobValues(layer, index int, part Part) (any, error) {
	dtype, err := m.BlobDType(layer, index)
	if err != nil {
		return nil, err
	}
	shape, err := m.BlobShape(layer, index)
	if err != nil {
		return nil, err
	}
	count := 1
	for _, d := range shape {
		count *= int(d)
	}
	var values any
	var first unsafe.Pointer
	var size int
	switch dtype {
	case DTypeFloat64:
		v := make([]float64, count+1)
		values, first, size = v[:count], unsafe.Pointer(&v[0]), 8*count
	case DTypeInt32:
		v := make([]int32, count+1)
		values, first, size = v[:count], unsafe.Pointer(&v[0]), 4*count
	case DTypeUint32:
		v := make([]uint32, count+1)
		values, first, size = v[:count], unsafe.Pointer(&v[0]), 4*count
	default:
		v := make([]float32, count+1)
		values, first, size = v[:count], unsafe.Pointer(&v[0]), 4*count
	}
	err = m.do(func(p *C.cblob_model) error {
		return cModelLayerBlobRead(p, C.int64_t(layer), C.int64_t(index), C.cblob_part(part), 0, C.int64_t(count), first,
			C.size_t(size))
	})
	runtime.KeepAlive(values)
	return values, err
}
