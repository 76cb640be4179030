// SPDX-License-Identifier: BSD-2-Clause
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

// Rule is one of a layer's include or exclude rules (Caffe's NetStateRule).
type Rule struct {
	// Phase is the phase the rule asks for (PhaseNone when it asks none).
	Phase Phase
	// MinLevel and MaxLevel bound the net's level (math.MinInt32 and math.MaxInt32 when unset).
	MinLevel, MaxLevel int32
	// Stages the net must have, and NotStages it must not.
	Stages, NotStages []string
}

// ParamSpec is one of a layer's param specs (ParamSpec; V1's param, blobs_lr, weight_decay).
type ParamSpec struct {
	// Name shares the blob with other layers' of the same name ("" when it has none).
	Name string
	// LrMult and DecayMult multiply the learning rate and the weight decay (1 when unset).
	LrMult, DecayMult float32
}

func (m *Model) texts(layer int, count func(p *C.cblob_model, layer C.int64_t) (C.int64_t, error),
	get func(p *C.cblob_model, layer, index C.int64_t) (*C.char, error)) ([]string, error) {
	var out []string
	err := m.do(func(p *C.cblob_model) error {
		n, err := count(p, C.int64_t(layer))
		for i := C.int64_t(0); err == nil && i < n; i++ {
			var text *C.char
			if text, err = get(p, C.int64_t(layer), i); err == nil {
				out = append(out, goString(text))
			}
		}
		return err
	})
	return out, err
}

// Bottoms returns the names of a layer's input blobs.
func (m *Model) Bottoms(layer int) ([]string, error) {
	return m.texts(layer, cModelLayerNumBottoms, cModelLayerBottom)
}

// Tops returns the names of a layer's output blobs.
func (m *Model) Tops(layer int) ([]string, error) {
	return m.texts(layer, cModelLayerNumTops, cModelLayerTop)
}

// Phase returns a layer's phase (PhaseNone when it sets none, always in V1).
func (m *Model) Phase(layer int) (Phase, error) {
	var v C.cblob_phase
	err := m.do(func(p *C.cblob_model) (err error) { v, err = cModelLayerPhase(p, C.int64_t(layer)); return })
	return Phase(v), err
}

// Rules returns a layer's include or exclude rules.
func (m *Model) Rules(layer int, kind RuleKind) ([]Rule, error) {
	var rules []Rule
	err := m.do(func(p *C.cblob_model) error {
		n, err := cModelLayerNumRules(p, C.int64_t(layer), C.cblob_rule_kind(kind))
		for i := C.int64_t(0); err == nil && i < n; i++ {
			phase, low, high, stages, notStages, e := cModelLayerRule(p, C.int64_t(layer), C.cblob_rule_kind(kind), i)
			rule := Rule{Phase: Phase(phase), MinLevel: int32(low), MaxLevel: int32(high)}
			for _, list := range []struct {
				n   C.int64_t
				not C.int32_t
				out *[]string
			}{{stages, 0, &rule.Stages}, {notStages, 1, &rule.NotStages}} {
				for j := C.int64_t(0); e == nil && j < list.n; j++ {
					var text *C.char
					if text, e = cModelLayerRuleStage(p, C.int64_t(layer), C.cblob_rule_kind(kind), i, list.not, j); e == nil {
						*list.out = append(*list.out, goString(text))
					}
				}
			}
			rules, err = append(rules, rule), e
		}
		return err
	})
	return rules, err
}

// ParamSpecs returns a layer's param specs.
func (m *Model) ParamSpecs(layer int) ([]ParamSpec, error) {
	var specs []ParamSpec
	err := m.do(func(p *C.cblob_model) error {
		n, err := cModelLayerNumParamSpecs(p, C.int64_t(layer))
		for i := C.int64_t(0); err == nil && i < n; i++ {
			name, lr, decay, e := cModelLayerParamSpec(p, C.int64_t(layer), i)
			specs, err = append(specs, ParamSpec{Name: goString(name), LrMult: float32(lr), DecayMult: float32(decay)}), e
		}
		return err
	})
	return specs, err
}

// ParamsJSON returns a layer's parameters as a JSON object (convolution_param and the like, by
// Caffe's field names; fields no schema knows under "unknown_fields").
func (m *Model) ParamsJSON(layer int, flags JSONFlags) (string, error) {
	var text string
	err := m.do(func(p *C.cblob_model) (err error) {
		text, err = readText(func(buffer *C.char, size C.size_t) (C.size_t, error) {
			return cModelLayerParamsJSON(p, C.int64_t(layer), C.int32_t(flags), buffer, size)
		})
		return
	})
	return text, err
}

// LayerJSON returns a layer as `cblob inspect --json` (schema 2) lists it.
func (m *Model) LayerJSON(layer int, flags JSONFlags) (string, error) {
	var text string
	err := m.do(func(p *C.cblob_model) (err error) {
		text, err = readText(func(buffer *C.char, size C.size_t) (C.size_t, error) {
			return cModelLayerJSON(p, C.int64_t(layer), C.int32_t(flags), buffer, size)
		})
		return
	})
	return text, err
}

// BlobShape returns a blob's shape without making its handle.
func (m *Model) BlobShape(layer, index int) ([]int64, error) {
	var shape []int64
	err := m.do(func(p *C.cblob_model) error {
		dims := make([]C.int64_t, MaxAxes)
		n, err := cModelLayerBlobShape(p, C.int64_t(layer), C.int64_t(index), MaxAxes, &dims[0])
		for i := 0; err == nil && i < int(n); i++ {
			shape = append(shape, int64(dims[i]))
		}
		if err == nil && shape == nil {
			shape = []int64{}
		}
		return err
	})
	return shape, err
}

// BlobDType returns a blob's dtype without making its handle.
func (m *Model) BlobDType(layer, index int) (DType, error) {
	var v C.cblob_dtype
	err := m.do(func(p *C.cblob_model) (err error) {
		v, err = cModelLayerBlobDType(p, C.int64_t(layer), C.int64_t(index))
		return
	})
	return DType(v), err
}

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

// Safetensors exports the model's blobs as safetensors bytes (keys <layer>.<index>, or PyTorch's
// names with ExportFlagsTorchNames; diffs with ExportFlagsDiff).
func (m *Model) Safetensors(flags ExportFlags) ([]byte, error) {
	var bytes []byte
	err := m.do(func(p *C.cblob_model) (err error) {
		bytes, err = readBytes(func(buffer *C.uint8_t, size C.size_t) (C.size_t, error) {
			return cModelToSafetensors(p, C.int32_t(flags), buffer, size)
		})
		return
	})
	return bytes, err
}

// SaveSafetensors writes Safetensors's bytes to a file, atomically.
func (m *Model) SaveSafetensors(path string, flags ExportFlags) error {
	return m.do(func(p *C.cblob_model) error {
		return withPath(path, func(cpath *C.char) error { return cModelToSafetensorsFile(p, C.int32_t(flags), cpath) })
	})
}

// Npz exports the model's blobs as a NumPy .npz (keys <layer>/<index>, diffs with ExportFlagsDiff).
func (m *Model) Npz(flags ExportFlags) ([]byte, error) {
	var bytes []byte
	err := m.do(func(p *C.cblob_model) (err error) {
		bytes, err = readBytes(func(buffer *C.uint8_t, size C.size_t) (C.size_t, error) {
			return cModelToNpz(p, C.int32_t(flags), buffer, size)
		})
		return
	})
	return bytes, err
}

// SaveNpz writes Npz's bytes to a file, atomically.
func (m *Model) SaveNpz(path string, flags ExportFlags) error {
	return m.do(func(p *C.cblob_model) error {
		return withPath(path, func(cpath *C.char) error { return cModelToNpzFile(p, C.int32_t(flags), cpath) })
	})
}

// TorchUnmapped returns the layers whose blobs ExportFlagsTorchNames cannot name.
func (m *Model) TorchUnmapped() ([]int, error) {
	var layers []int
	err := m.do(func(p *C.cblob_model) error {
		n, err := cModelTorchUnmapped(p, nil, 0)
		if err != nil || n == 0 {
			return err
		}
		out := make([]C.int64_t, n)
		if n, err = cModelTorchUnmapped(p, &out[0], n); err == nil {
			for _, v := range out[:n] {
				layers = append(layers, int(v))
			}
		}
		return err
	})
	return layers, err
}

// ReplaceBlobs copies each layer's blobs of weights into the layer of m with its name (by index,
// every shape checked first: one error lists every mismatch, and nothing changes then).
func (m *Model) ReplaceBlobs(weights *Model) error {
	return m.do(func(p *C.cblob_model) error {
		return weights.do(func(w *C.cblob_model) error { return cModelReplaceBlobs(p, w) })
	})
}

func openWith(ctx *Context, data []byte, open func(c *C.cblob_context, bytes *C.uint8_t, size C.size_t) (*C.cblob_model, error)) (*Model, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	ptr, err := open(c, bytesPtr(data), C.size_t(len(data)))
	runtime.KeepAlive(ctx)
	runtime.KeepAlive(data)
	return newModel(ptr, err)
}

func openFileWith(ctx *Context, path string, open func(c *C.cblob_context, cpath *C.char) (*C.cblob_model, error)) (*Model, error) {
	c, err := ctx.handle()
	if err != nil {
		return nil, err
	}
	var ptr *C.cblob_model
	err = withPath(path, func(cpath *C.char) (err error) { ptr, err = open(c, cpath); return })
	runtime.KeepAlive(ctx)
	return newModel(ptr, err)
}

// OpenSafetensors reads safetensors bytes into a model: one layer per layer name, blobs by index
// (keys <layer>.<index> or PyTorch's names).
func OpenSafetensors(ctx *Context, data []byte) (*Model, error) {
	return openWith(ctx, data, cModelOpenSafetensors)
}

// OpenSafetensorsFile reads a .safetensors file as OpenSafetensors does.
func OpenSafetensorsFile(ctx *Context, path string) (*Model, error) {
	return openFileWith(ctx, path, cModelOpenSafetensorsFile)
}

// OpenNpz reads .npz bytes (keys <layer>/<index>) into a model.
func OpenNpz(ctx *Context, data []byte) (*Model, error) {
	return openWith(ctx, data, cModelOpenNpz)
}

// OpenNpzFile reads a .npz file as OpenNpz does.
func OpenNpzFile(ctx *Context, path string) (*Model, error) {
	return openFileWith(ctx, path, cModelOpenNpzFile)
}
