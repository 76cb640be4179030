// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// NeoML's blob operations through the Go layer: the named layout, typed copies, conversions,
// transposes, merges and splits, fills, windows and mappings.

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"example.com/cblob"
)

func iota32(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}

func filled(t *testing.T, ctx *cblob.Context, values []float32, shape ...int64) *cblob.Blob {
	t.Helper()
	b := newBlob(t, ctx, cblob.DTypeFloat32, shape...)
	if err := cblob.CopyIn(b, cblob.PartData, values); err != nil {
		t.Fatal(err)
	}
	return b
}

func values32(t *testing.T, b *cblob.Blob, part cblob.Part) []float32 {
	t.Helper()
	return must[[]float32](t)(cblob.ToSlice[float32](b, part))
}

func TestLayoutCreatorsAndGetters(t *testing.T) {
	ctx := newContext(t)
	shapeOf := func(b *cblob.Blob, err error) []int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		return must[[]int64](t)(b.Shape())
	}
	cases := []struct {
		got, want []int64
	}{
		{shapeOf(cblob.NewTensor(ctx, cblob.DTypeFloat32, 2, 3)), []int64{2, 3, 1, 1, 1, 1, 1}},
		{shapeOf(cblob.NewVector(ctx, cblob.DTypeInt32, 5)), []int64{5, 1, 1, 1, 1, 1, 1}},
		{shapeOf(cblob.NewMatrix(ctx, cblob.DTypeFloat64, 2, 4)), []int64{2, 4, 1, 1, 1, 1, 1}},
		{shapeOf(cblob.NewDataBlob(ctx, cblob.DTypeFloat32, 2, 3, 4)), []int64{2, 3, 1, 1, 1, 1, 4}},
		{shapeOf(cblob.NewListBlob(ctx, cblob.DTypeFloat32, 2, 3, 5, 4)), []int64{2, 3, 5, 1, 1, 1, 4}},
		{shapeOf(cblob.NewImage2DBlob(ctx, cblob.DTypeUint32, 1, 2, 3, 4, 5)), []int64{1, 2, 1, 3, 4, 1, 5}},
	}
	for i, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Fatalf("case %d: shape %v, want %v", i, c.got, c.want)
		}
	}
	volume := must[*cblob.Blob](t)(cblob.NewImage3DBlob(ctx, cblob.DTypeFloat32, 1, 2, 3, 4, 5, 6))
	defer volume.Close()
	if d := must[int64](t)(volume.Dim(cblob.DimDepth)); d != 5 {
		t.Fatalf("depth %d", d)
	}
	if n, s, g := must[int64](t)(volume.ObjectCount()), must[int64](t)(volume.ObjectSize()), must[int64](t)(volume.GeometricalSize()); n != 2 || s != 360 || g != 60 {
		t.Fatalf("objects %d, size %d, geometrical %d", n, s, g)
	}
	like := must[*cblob.Blob](t)(volume.NewLike(cblob.DTypeFloat64))
	defer like.Close()
	if !must[bool](t)(like.EqualShape(volume)) || must[cblob.DType](t)(like.DType()) != cblob.DTypeFloat64 {
		t.Fatal("NewLike: another shape or dtype")
	}
	if !must[bool](t)(like.EqualDims(volume, 0, 6)) {
		t.Fatal("EqualDims")
	}
	_, err := like.EqualDims(volume, 9)
	wantStatus(t, err, cblob.StatusOutOfRange)

	plain := newBlob(t, ctx, cblob.DTypeFloat32, 2, 6)
	_, err = plain.Dim(cblob.DimHeight)
	if e := wantStatus(t, err, cblob.StatusShape); !strings.HasPrefix(e.Message, "cblob_blob_dim: ") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = cblob.NewMatrix(ctx, cblob.DTypeFloat32, -1, 2)
	wantStatus(t, err, cblob.StatusShape)
	if err := plain.Reinterpret(3, 4); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, plain.Reinterpret(5), cblob.StatusShape)
}

func TestTypedCopiesConversionsAndTransposes(t *testing.T) {
	ctx := newContext(t)
	a := filled(t, ctx, []float32{0.5, 1.5, -2.5, 1e10, -1e10, float32(math.NaN())}, 2, 3)
	wantStatus(t, cblob.CopyIn(a, cblob.PartData, make([]float64, 6)), cblob.StatusDType)
	wantStatus(t, cblob.CopyIn(a, cblob.PartData, make([]float32, 5)), cblob.StatusShape)
	wantStatus(t, cblob.CopyOut(a, cblob.PartData, make([]float32, 7)), cblob.StatusShape)

	ints := must[*cblob.Blob](t)(a.Clone(cblob.DTypeInt32))
	defer ints.Close()
	if v := must[[]int32](t)(cblob.ToSlice[int32](ints, cblob.PartData)); !reflect.DeepEqual(v, []int32{0, 2, -2, math.MaxInt32, math.MinInt32, 0}) {
		t.Fatalf("converted %v", v)
	}
	back := newBlob(t, ctx, cblob.DTypeFloat64, 2, 3)
	if err := back.ConvertFrom(ints, cblob.PartData); err != nil {
		t.Fatal(err)
	}
	if v := must[float64](t)(back.ReadElement(cblob.PartData, 0, 1)); v != 2 {
		t.Fatalf("converted back %v", v)
	}
	truncated := newBlob(t, ctx, cblob.DTypeInt32, 2, 3)
	if err := truncated.ConvertFromTruncating(a, cblob.PartData); err != nil {
		t.Fatal(err)
	}
	if v := must[[]int32](t)(cblob.ToSlice[int32](truncated, cblob.PartData)); !reflect.DeepEqual(v, []int32{0, 1, -2, math.MaxInt32, math.MinInt32, 0}) {
		t.Fatalf("truncated %v", v)
	}
	c := must[*cblob.Blob](t)(a.DeepCopy())
	defer c.Close()
	if err := c.Fill(cblob.PartData, 1); err != nil {
		t.Fatal(err)
	}
	if v := must[float64](t)(a.ReadElement(cblob.PartData, 0, 0)); v != 0.5 {
		t.Fatalf("a deep copy is not independent: %v", v)
	}

	m := filled(t, ctx, iota32(6), 2, 3)
	tr := must[*cblob.Blob](t)(m.Transposed(0, -1))
	defer tr.Close()
	if v := values32(t, tr, cblob.PartData); !reflect.DeepEqual(v, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("transposed %v", v)
	}
	u := newBlob(t, ctx, cblob.DTypeFloat32, 3, 2)
	if err := u.TransposeFrom(m, cblob.PartData, 1, 0); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, u.TransposeFrom(m, cblob.PartData, 0, 0), cblob.StatusShape)
}

func TestMergeSplitFillAndAdd(t *testing.T) {
	ctx := newContext(t)
	top := filled(t, ctx, []float32{1, 2, 3}, 1, 3)
	bottom := filled(t, ctx, []float32{4, 5, 6, 7, 8, 9}, 2, 3)
	whole := newBlob(t, ctx, cblob.DTypeFloat32, 3, 3)
	if err := whole.Merge(cblob.PartData, 0, top, bottom); err != nil {
		t.Fatal(err)
	}
	if v := values32(t, whole, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("merged %v", v)
	}
	wantStatus(t, whole.Merge(cblob.PartData, 0, top, top), cblob.StatusShape)
	left := newBlob(t, ctx, cblob.DTypeFloat32, 3, 1)
	right := newBlob(t, ctx, cblob.DTypeFloat32, 3, 2)
	if err := whole.Split(cblob.PartData, 1, left, right); err != nil {
		t.Fatal(err)
	}
	if v := values32(t, left, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 4, 7}) {
		t.Fatalf("left %v", v)
	}

	objects := must[*cblob.Blob](t)(cblob.NewDataBlob(ctx, cblob.DTypeFloat32, 1, 2, 3))
	defer objects.Close()
	first := must[*cblob.Blob](t)(cblob.NewDataBlob(ctx, cblob.DTypeFloat32, 1, 2, 1))
	defer first.Close()
	second := must[*cblob.Blob](t)(cblob.NewDataBlob(ctx, cblob.DTypeFloat32, 1, 2, 2))
	defer second.Close()
	if err := cblob.CopyIn(objects, cblob.PartData, iota32(6)); err != nil {
		t.Fatal(err)
	}
	if err := objects.SplitObjects(cblob.PartData, first, second); err != nil {
		t.Fatal(err)
	}
	if v := values32(t, first, cblob.PartData); !reflect.DeepEqual(v, []float32{0, 3}) {
		t.Fatalf("first objects %v", v)
	}
	joined := must[*cblob.Blob](t)(objects.NewLike(cblob.DTypeFloat32))
	defer joined.Close()
	if err := joined.MergeObjects(cblob.PartData, first, second); err != nil {
		t.Fatal(err)
	}
	if err := joined.FillObject(cblob.PartDiff, 1, 2); err != nil {
		t.Fatal(err)
	}
	if v := values32(t, joined, cblob.PartDiff); !reflect.DeepEqual(v, []float32{0, 0, 0, 2, 2, 2}) {
		t.Fatalf("diff after FillObject %v", v)
	}
	if err := joined.ClearObject(cblob.PartDiff, 1); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, joined.FillObject(cblob.PartDiff, 2, 1), cblob.StatusOutOfRange)
	if err := joined.Add(joined, cblob.PartData); err != nil { // a blob may be added to itself
		t.Fatal(err)
	}
	if v := values32(t, joined, cblob.PartData); !reflect.DeepEqual(v, []float32{0, 2, 4, 6, 8, 10}) {
		t.Fatalf("doubled %v", v)
	}
	if err := joined.Clear(cblob.PartData); err != nil {
		t.Fatal(err)
	}
	ints := newBlob(t, ctx, cblob.DTypeInt32, 2)
	wantStatus(t, ints.Fill(cblob.PartData, 0.5), cblob.StatusInvalidArgument)
	wantStatus(t, ints.Fill(cblob.PartData, 1e10), cblob.StatusOverflow)
}

func TestWindowsViewTheirParent(t *testing.T) {
	ctx := newContext(t)
	parent := filled(t, ctx, iota32(8), 4, 2)
	w := must[*cblob.Blob](t)(parent.Window(2))
	defer w.Close()
	if !must[bool](t)(w.IsWindow()) || must[bool](t)(parent.IsWindow()) {
		t.Fatal("IsWindow")
	}
	if err := w.ShiftWindow(1); err != nil {
		t.Fatal(err)
	}
	if v := values32(t, w, cblob.PartData); !reflect.DeepEqual(v, []float32{2, 3, 4, 5}) {
		t.Fatalf("window %v", v)
	}
	e := wantStatus(t, w.SetWindowPosition(3), cblob.StatusOutOfRange)
	if !strings.Contains(e.Message, "outside [0, 2]") {
		t.Fatalf("message %q", e.Message)
	}
	if p := must[int64](t)(w.WindowPosition()); p != 1 {
		t.Fatalf("position %d after a failed move", p)
	}
	if err := w.SetWindowSize(3); err != nil {
		t.Fatal(err)
	}
	if n := must[int64](t)(w.WindowSize()); n != 3 {
		t.Fatalf("size %d", n)
	}
	if err := w.Fill(cblob.PartData, -1); err != nil {
		t.Fatal(err)
	}
	if v := values32(t, parent, cblob.PartData); !reflect.DeepEqual(v, []float32{0, 1, -1, -1, -1, -1, -1, -1}) {
		t.Fatalf("parent %v", v)
	}
	inner := must[*cblob.Blob](t)(w.Window(1))
	defer inner.Close()
	owner := must[*cblob.Blob](t)(inner.WindowOwner())
	defer owner.Close()
	p := must[*cblob.Blob](t)(inner.WindowParent())
	defer p.Close()
	if !must[bool](t)(p.IsWindow()) || must[bool](t)(owner.IsWindow()) || must[int64](t)(owner.Count()) != 8 {
		t.Fatal("parent and owner")
	}
	// Closing the parent's *Blob frees nothing while a window of it is open.
	parent.Close()
	if v := values32(t, w, cblob.PartData); len(v) != 6 || v[5] != -1 {
		t.Fatalf("window after its parent's Close %v", v)
	}
	_, err := parent.Window(1)
	if err != cblob.ErrClosed {
		t.Fatalf("Window of a closed blob: %v", err)
	}
}

func TestMappingsAreScoped(t *testing.T) {
	ctx := newContext(t)
	b := newBlob(t, ctx, cblob.DTypeFloat32, 6)
	m := must[*cblob.Mapping[float32]](t)(cblob.Map[float32](b, cblob.PartData, 1, 3, cblob.AccessReadWrite))
	copy(m.Slice(), []float32{1, 2, 3})
	if err := m.Close(); err != nil || m.Close() != nil {
		t.Fatalf("Close: %v", err)
	}
	if m.Slice() != nil {
		t.Fatal("a closed mapping's slice")
	}
	if v := values32(t, b, cblob.PartData); !reflect.DeepEqual(v, []float32{0, 1, 2, 3, 0, 0}) {
		t.Fatalf("after the mapping %v", v)
	}
	_, err := cblob.Map[float32](b, cblob.PartData, 4, 3, cblob.AccessRead)
	if e := wantStatus(t, err, cblob.StatusOutOfRange); !strings.HasPrefix(e.Message, "cblob_blob_map: ") {
		t.Fatalf("message %q", e.Message)
	}
	_, err = cblob.Map[int32](b, cblob.PartData, 0, 1, cblob.AccessRead)
	wantStatus(t, err, cblob.StatusDType)

	// Last in, first out; the blob cannot change shape while mapped.
	first := must[*cblob.Mapping[float32]](t)(cblob.Map[float32](b, cblob.PartData, 0, 2, cblob.AccessRead))
	second := must[*cblob.Mapping[float32]](t)(cblob.Map[float32](b, cblob.PartDiff, 0, 2, cblob.AccessWrite))
	wantStatus(t, first.Close(), cblob.StatusState)
	wantStatus(t, b.Reshape(7), cblob.StatusState)
	second.Slice()[1] = 5
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if s := must[float64](t)(b.Asum(cblob.PartDiff)); s != 5 {
		t.Fatalf("diff asum %v", s)
	}

	// Closing the blob ends its open mappings, newest first.
	c := newBlob(t, ctx, cblob.DTypeFloat32, 4)
	older := must[*cblob.Mapping[float32]](t)(cblob.Map[float32](c, cblob.PartData, 0, 4, cblob.AccessRead))
	newer := must[*cblob.Mapping[float32]](t)(cblob.Map[float32](c, cblob.PartData, 0, 1, cblob.AccessReadWrite))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if older.Slice() != nil || newer.Slice() != nil || older.Close() != nil {
		t.Fatal("the blob's Close left a mapping open")
	}
}
