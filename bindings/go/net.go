// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the reads of several calls into one Go
// value: a layer's rules with their stages, a blob's values as a slice of its element type.
// Param specs are generated records (records_generated.go).

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
