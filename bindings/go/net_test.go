// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// Net structure, lossless saving, exports read back and net surgery through the Go layer.

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"example.com/cblob"
)

func varint(v uint64) []byte {
	return binary.AppendUvarint(nil, v)
}

func field(number int, payload []byte) []byte {
	out := varint(uint64(number<<3 | 2))
	return append(append(out, varint(uint64(len(payload)))...), payload...)
}

func intField(number int, v uint64) []byte {
	return append(varint(uint64(number<<3)), varint(v)...)
}

// A V2 net: layer conv1 with bottom, top, phase TEST, a param spec, an include rule, convolution
// parameters, a field of a fork, and a 2-value blob.
func structuredNet() []byte {
	spec := append(field(1, []byte("w")), 0x1d, 0, 0, 0, 0x40) // lr_mult 2
	rule := append(intField(1, 0), field(4, []byte("s"))...)
	values := make([]byte, 8)
	binary.LittleEndian.PutUint32(values, math.Float32bits(1.5))
	binary.LittleEndian.PutUint32(values[4:], math.Float32bits(-2))
	blob := append(field(7, field(1, varint(2))), field(5, values)...)
	var layer []byte
	for _, f := range [][]byte{field(1, []byte("conv1")), field(2, []byte("Convolution")), field(3, []byte("data")),
		field(4, []byte("conv1")), intField(10, 1), field(6, spec), field(8, rule), field(106, intField(1, 8)),
		field(5000, []byte("fork")), field(7, blob)} {
		layer = append(layer, f...)
	}
	return append(field(1, []byte("net")), field(100, layer)...)
}

func TestNetStructureAndLosslessSave(t *testing.T) {
	ctx := newContext(t)
	data := structuredNet()
	m, err := cblob.OpenModel(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := must[[]string](t)(m.Bottoms(0)); !reflect.DeepEqual(got, []string{"data"}) {
		t.Fatalf("bottoms %q", got)
	}
	if got := must[[]string](t)(m.Tops(0)); !reflect.DeepEqual(got, []string{"conv1"}) {
		t.Fatalf("tops %q", got)
	}
	if got := must[cblob.Phase](t)(m.Phase(0)); got != cblob.PhaseTest {
		t.Fatalf("phase %v", got)
	}
	rules := must[[]cblob.Rule](t)(m.Rules(0, cblob.RuleKindInclude))
	if len(rules) != 1 || rules[0].Phase != cblob.PhaseTrain || !reflect.DeepEqual(rules[0].Stages, []string{"s"}) ||
		rules[0].MinLevel != math.MinInt32 {
		t.Fatalf("rules %+v", rules)
	}
	specs := must[[]cblob.ParamSpec](t)(m.ParamSpecs(0))
	if len(specs) != 1 || specs[0] != (cblob.ParamSpec{Name: "w", LrMult: 2, DecayMult: 1}) {
		t.Fatalf("param specs %+v", specs)
	}
	params := must[string](t)(m.ParamsJSON(0, 0))
	if params != `{"convolution_param":{"num_output":8},"unknown_fields":[{"field":5000,"wire_type":2,"count":1,"bytes":4,"first_bytes":"666f726b"}]}` {
		t.Fatalf("params %s", params)
	}
	if layer := must[string](t)(m.LayerJSON(0, 0)); !strings.Contains(layer, `"bottoms":["data"]`) {
		t.Fatalf("layer %s", layer)
	}
	if values := must[any](t)(m.BlobValues(0, 0, cblob.PartData)); !reflect.DeepEqual(values, []float32{1.5, -2}) {
		t.Fatalf("values %v", values)
	}
	if saved := must[[]byte](t)(m.Bytes(true)); !bytes.Equal(saved, data) {
		t.Fatal("saving changed the bytes")
	}
}

func TestExportsReadBackAndSurgery(t *testing.T) {
	ctx := newContext(t)
	m, err := cblob.OpenModel(ctx, structuredNet())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, open := range []func() (*cblob.Model, error){
		func() (*cblob.Model, error) { return cblob.OpenSafetensors(ctx, must[[]byte](t)(m.Safetensors(0))) },
		func() (*cblob.Model, error) { return cblob.OpenNpz(ctx, must[[]byte](t)(m.Npz(0))) },
	} {
		read, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if values := must[any](t)(read.BlobValues(0, 0, cblob.PartData)); !reflect.DeepEqual(values, []float32{1.5, -2}) {
			t.Fatalf("read back %v", values)
		}
		if err := m.ReplaceBlobs(read); err != nil {
			t.Fatal(err)
		}
		read.Close()
	}
	torch := must[[]byte](t)(m.Safetensors(cblob.ExportFlagsTorchNames))
	if !bytes.Contains(torch, []byte(`"conv1.weight"`)) {
		t.Fatal("no PyTorch name")
	}
	if unmapped := must[[]int](t)(m.TorchUnmapped()); len(unmapped) != 0 {
		t.Fatalf("unmapped %v", unmapped)
	}
	empty, _ := cblob.NewModel(ctx, cblob.NetFormatV2, "")
	defer empty.Close()
	wrong, _ := cblob.NewBlob(ctx, cblob.DTypeFloat32, 3)
	defer wrong.Close()
	if err := empty.AddLayer("conv1", "", wrong); err != nil {
		t.Fatal(err)
	}
	if err := m.ReplaceBlobs(empty); err == nil || !strings.Contains(err.Error(), "conv1 blob 0") {
		t.Fatalf("a wrong shape: %v", err)
	}
}
