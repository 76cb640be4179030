// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// The bindings' scenario, Caffe formats part: a real LeNet model and the bundled sample against
// their independently decoded answers; BlobProto and BlobProtoVector round trips; building and
// saving a model; parse errors with the library's message.

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"example.com/cblob"
)

// checkModel opens a model and checks every layer's name, type, blob shapes, first values and
// sums against its .layers.txt; the caller closes the model.
func checkModel(t *testing.T, modelPath, expectedPath string) *cblob.Model {
	t.Helper()
	name, expected := expectedLayers(t, expectedPath)
	ctx := newContext(t)
	m, err := cblob.OpenModelFile(ctx, modelPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if got := must[string](t)(m.Name()); got != name {
		t.Fatalf("net name %q, want %q", got, name)
	}
	if f := must[cblob.NetFormat](t)(m.Format()); f != cblob.NetFormatV2 {
		t.Fatalf("format %v", f)
	}
	layers := must[[]cblob.Layer](t)(m.Layers())
	if len(layers) != len(expected) {
		t.Fatalf("%d layers, want %d", len(layers), len(expected))
	}
	for i, want := range expected {
		got := layers[i]
		if got.Name != want.name || got.Type != want.kind || got.NumBlobs != len(want.blobs) {
			t.Fatalf("layer %d: %+v, want %s %s with %d blobs", i, got, want.name, want.kind, len(want.blobs))
		}
		blobs := must[[]*cblob.Blob](t)(m.LayerBlobs(i))
		for j, b := range blobs {
			w := want.blobs[j]
			shape := must[[]int64](t)(b.Shape())
			if !reflect.DeepEqual(shape, w.shape) {
				t.Fatalf("%s.blobs[%d] shape %v, want %v", got.Name, j, shape, w.shape)
			}
			data := must[[]float32](t)(cblob.Data[float32](b))
			sum := 0.0
			for _, x := range data {
				sum += float64(x)
			}
			if int64(len(data)) != w.count || !agree(float64(data[0]), w.first) || !agree(sum, w.sum) {
				t.Fatalf("%s.blobs[%d]: %d values, first %v, sum %v; want %d, %v, %v", got.Name, j, len(data), data[0], sum, w.count, w.first, w.sum)
			}
			b.Close()
		}
	}
	if i := must[int](t)(m.FindLayer("ip2")); i != 7 {
		t.Fatalf("FindLayer(ip2) = %d", i)
	}
	if i := must[int](t)(m.FindLayer("no such layer")); i != -1 {
		t.Fatalf("FindLayer of a missing layer = %d", i)
	}
	return m
}

func TestLeNetFromTheSharedCaffeFiles(t *testing.T) {
	file := filepath.Join(caffeDataDir(), "lenet_iter_10000.caffemodel")
	answers := filepath.Join(caffeDataDir(), "lenet_iter_10000.layers.txt")
	if _, err := os.Stat(answers); err != nil {
		t.Skipf("the shared Caffe files are absent: %v", err)
	}
	m := checkModel(t, file, answers)
	ip1 := must[*cblob.Blob](t)(m.LayerBlob(5, 0))
	defer ip1.Close()
	m.Close()
	if s := must[[]int64](t)(ip1.Shape()); !reflect.DeepEqual(s, []int64{500, 800}) {
		t.Fatalf("ip1 weights %v after the model was closed", s)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if k := must[cblob.ProtoKind](t)(cblob.DetectProto(data)); k != cblob.ProtoKindNet {
		t.Fatalf("kind %v", k)
	}
	again := must[*cblob.Model](t)(cblob.OpenModel(newContext(t), data))
	defer again.Close()
	b := must[*cblob.Blob](t)(again.LayerBlob(5, 0))
	defer b.Close()
	if x, y := must[float64](t)(b.Asum(cblob.PartData)), must[float64](t)(ip1.Asum(cblob.PartData)); x != y {
		t.Fatalf("asum %v from bytes, %v from the file", x, y)
	}
}

func TestTheBundledSampleModel(t *testing.T) {
	path := filepath.Join(samplesDir(), "tiny_lenet.caffemodel")
	m := checkModel(t, path, filepath.Join(samplesDir(), "tiny_lenet.layers.txt"))
	if k := must[cblob.ProtoKind](t)(cblob.DetectProtoFile(path)); k != cblob.ProtoKindNet {
		t.Fatalf("kind %v", k)
	}
	// Saved again, the bytes are the file's: cblob wrote the sample.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := must[[]byte](t)(m.Bytes(false)); !reflect.DeepEqual(got, data) {
		t.Fatalf("%d bytes written, the file has %d", len(got), len(data))
	}
}

func TestBlobProtoBytesRoundTrip(t *testing.T) {
	ctx := newContext(t)
	b := newBlob(t, ctx, cblob.DTypeFloat32, 2, 3)
	copy(must[[]float32](t)(cblob.MutableData[float32](b)), []float32{1, -2, 3.5, 0, 1e-3, -7.25})
	for i, d := 0, must[[]float32](t)(cblob.MutableDiff[float32](b)); i < len(d); i++ {
		d[i] = 0.5
	}
	data := must[[]byte](t)(b.ToProto(true))
	if k := must[cblob.ProtoKind](t)(cblob.DetectProto(data)); k != cblob.ProtoKindBlob {
		t.Fatalf("kind %v", k)
	}
	if !must[bool](t)(b.ShapeEqualsProto(data)) {
		t.Fatal("ShapeEqualsProto of its own bytes")
	}
	back := must[*cblob.Blob](t)(cblob.NewBlobFromProto(ctx, data))
	defer back.Close()
	if got, want := must[[]float32](t)(cblob.Data[float32](back)), must[[]float32](t)(cblob.Data[float32](b)); !reflect.DeepEqual(got, want) {
		t.Fatalf("data %v, want %v", got, want)
	}
	if s := must[float64](t)(back.Asum(cblob.PartDiff)); s != 3 {
		t.Fatalf("diff asum %v", s)
	}

	doubles := newBlob(t, ctx, cblob.DTypeFloat64, 6)
	e := wantStatus(t, doubles.LoadProto(data, false), cblob.StatusShape)
	if !strings.HasPrefix(e.Message, "cblob_blob_from_proto: ") {
		t.Fatalf("message %q", e.Message)
	}
	if err := doubles.LoadProto(data, true); err != nil {
		t.Fatal(err)
	}
	if v := must[float64](t)(doubles.ReadElement(cblob.PartData, 1, 2)); v != -7.25 {
		t.Fatalf("element %v", v)
	}
	// Without a diff in the bytes, the diff stays.
	if err := doubles.Fill(cblob.PartDiff, 9); err != nil {
		t.Fatal(err)
	}
	if err := doubles.LoadProto(must[[]byte](t)(b.ToProto(false)), false); err != nil {
		t.Fatal(err)
	}
	if s := must[float64](t)(doubles.Asum(cblob.PartDiff)); s != 54 {
		t.Fatalf("diff asum %v", s)
	}
}

func TestBlobProtoFilesAndVectors(t *testing.T) {
	ctx := newContext(t)
	dir := t.TempDir()
	a := newBlob(t, ctx, cblob.DTypeFloat64, 3)
	if err := cblob.CopyIn(a, cblob.PartData, []float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	ints := newBlob(t, ctx, cblob.DTypeInt32, 2, 2)
	if err := cblob.CopyIn(ints, cblob.PartData, []int32{4, -5, 6, 1 << 30}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "a.binaryproto")
	if err := a.SaveProto(path, false); err != nil {
		t.Fatal(err)
	}
	read := must[*cblob.Blob](t)(cblob.NewBlobFromProtoFile(ctx, path))
	defer read.Close()
	if v := must[[]float64](t)(cblob.ToSlice[float64](read, cblob.PartData)); !reflect.DeepEqual(v, []float64{1, 2, 3}) {
		t.Fatalf("read %v", v)
	}
	into := newBlob(t, ctx, cblob.DTypeFloat32)
	if err := into.LoadProtoFile(path, true); err != nil {
		t.Fatal(err)
	}
	if v := must[[]float32](t)(cblob.ToSlice[float32](into, cblob.PartData)); !reflect.DeepEqual(v, []float32{1, 2, 3}) {
		t.Fatalf("loaded %v", v)
	}

	data := must[[]byte](t)(cblob.BlobVectorToProto([]*cblob.Blob{a, ints}, false))
	if k := must[cblob.ProtoKind](t)(cblob.DetectProto(data)); k != cblob.ProtoKindBlobVector {
		t.Fatalf("kind %v", k)
	}
	blobs := must[[]*cblob.Blob](t)(cblob.BlobVectorFromProto(ctx, data))
	if len(blobs) != 2 {
		t.Fatalf("%d blobs", len(blobs))
	}
	// Integer blobs travel as double_data and come back as float64, exactly.
	if v := must[[]float64](t)(cblob.ToSlice[float64](blobs[1], cblob.PartData)); !reflect.DeepEqual(v, []float64{4, -5, 6, 1 << 30}) {
		t.Fatalf("ints came back as %v", v)
	}
	for _, b := range blobs {
		b.Close()
	}
	vpath := filepath.Join(dir, "v.binaryproto")
	if err := cblob.SaveBlobVector(vpath, []*cblob.Blob{ints}, false); err != nil {
		t.Fatal(err)
	}
	if blobs := must[[]*cblob.Blob](t)(cblob.BlobVectorFromProtoFile(ctx, vpath)); len(blobs) != 1 {
		t.Fatalf("%d blobs from the file", len(blobs))
	}
	if blobs := must[[]*cblob.Blob](t)(cblob.BlobVectorFromProto(ctx, nil)); len(blobs) != 0 {
		t.Fatalf("%d blobs from no bytes", len(blobs))
	}
	_, err := cblob.NewBlobFromProtoFile(ctx, filepath.Join(dir, "missing.binaryproto"))
	if e := wantStatus(t, err, cblob.StatusIO); !strings.Contains(e.Message, "missing.binaryproto") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = cblob.DetectProtoFile("bad\x00path")
	wantStatus(t, err, cblob.StatusInvalidArgument)
}

func TestBuildSaveAndReopenAModel(t *testing.T) {
	ctx := newContext(t)
	weights := newBlob(t, ctx, cblob.DTypeFloat32, 2, 2)
	if err := cblob.CopyIn(weights, cblob.PartData, []float32{0.5, -1, 2, 4}); err != nil {
		t.Fatal(err)
	}
	bias := newBlob(t, ctx, cblob.DTypeFloat32, 2)
	m := must[*cblob.Model](t)(cblob.NewModel(ctx, cblob.NetFormatV2, "built"))
	defer m.Close()
	if err := m.AddLayer("data", "Input"); err != nil {
		t.Fatal(err)
	}
	if err := m.AddLayer("fc", "InnerProduct", weights, bias); err != nil {
		t.Fatal(err)
	}
	// The model holds the blobs: it writes their values at save time, also after they are closed.
	if err := bias.Fill(cblob.PartData, 0.25); err != nil {
		t.Fatal(err)
	}
	bias.Close()
	path := filepath.Join(t.TempDir(), "built.caffemodel")
	if err := m.Save(path, false); err != nil {
		t.Fatal(err)
	}
	read := must[*cblob.Model](t)(cblob.OpenModelFile(ctx, path))
	defer read.Close()
	layers := must[[]cblob.Layer](t)(read.Layers())
	want := []cblob.Layer{{Name: "data", Type: "Input"}, {Name: "fc", Type: "InnerProduct", NumBlobs: 2}}
	if !reflect.DeepEqual(layers, want) || must[string](t)(read.Name()) != "built" {
		t.Fatalf("layers %+v", layers)
	}
	b := must[*cblob.Blob](t)(read.LayerBlob(1, 1))
	defer b.Close()
	if v := must[[]float32](t)(cblob.ToSlice[float32](b, cblob.PartData)); !reflect.DeepEqual(v, []float32{0.25, 0.25}) {
		t.Fatalf("bias %v", v)
	}
	// Changes through a blob taken from the model are what the model saves.
	if err := b.Fill(cblob.PartData, 1); err != nil {
		t.Fatal(err)
	}
	again := must[*cblob.Model](t)(cblob.OpenModel(ctx, must[[]byte](t)(read.Bytes(false))))
	defer again.Close()
	b2 := must[*cblob.Blob](t)(again.LayerBlob(1, 1))
	defer b2.Close()
	if s := must[float64](t)(b2.Asum(cblob.PartData)); s != 2 {
		t.Fatalf("saved bias asum %v", s)
	}
	_, err := read.LayerBlob(1, 2)
	wantStatus(t, err, cblob.StatusOutOfRange)
	m.Close()
	if _, err := m.NumLayers(); err != cblob.ErrClosed {
		t.Fatalf("NumLayers after Close: %v", err)
	}
}

func TestFormatErrorsCarryTheLibraryMessage(t *testing.T) {
	ctx := newContext(t)
	v1 := must[*cblob.Model](t)(cblob.NewModel(ctx, cblob.NetFormatV1, "old"))
	defer v1.Close()
	e := wantStatus(t, v1.AddLayer("conv", "Convolution"), cblob.StatusInvalidArgument)
	if !strings.HasPrefix(e.Message, "cblob_model_add_layer: ") {
		t.Fatalf("message %q", e.Message)
	}
	if err := v1.AddLayer("conv", "CONVOLUTION"); err != nil {
		t.Fatal(err)
	}
	read := must[*cblob.Model](t)(cblob.OpenModel(ctx, must[[]byte](t)(v1.Bytes(false))))
	defer read.Close()
	if l := must[cblob.Layer](t)(read.Layer(0)); l.Type != "CONVOLUTION" || must[cblob.NetFormat](t)(read.Format()) != cblob.NetFormatV1 {
		t.Fatalf("V1 layer %+v", l)
	}

	sample, err := os.ReadFile(filepath.Join(samplesDir(), "tiny_lenet.caffemodel"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cblob.OpenModel(ctx, sample[:len(sample)/2])
	e = wantStatus(t, err, cblob.StatusParse)
	if !strings.HasPrefix(e.Message, "cblob_model_open: ") || !strings.Contains(e.Message, "NetParameter.layer at byte ") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = cblob.NewModel(ctx, cblob.NetFormatV2, "a\x00b")
	wantStatus(t, err, cblob.StatusInvalidArgument)
}
