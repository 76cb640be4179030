// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// DLPack through the Go layer: round trips that share memory, who runs the deleter (counted by a
// counting deleter put in front of the producer's, in internal/dlpacktest), refused imports that
// leave the tensor with the caller, and the read-only flag. Device exports are in gpu_test.go,
// which runs against the test double of the driver too. The Go layer reads DLPack's structs
// through DLPack's own header, so there is no mirror of their layout to check.

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"example.com/cblob"
	"example.com/cblob/internal/dlpacktest"
)

func toDLPack(t *testing.T, b *cblob.Blob, part cblob.Part, readOnly bool) *cblob.DLPackTensor {
	t.Helper()
	tensor := must[*cblob.DLPackTensor](t)(b.ToDLPack(part, cblob.MemoryHost, readOnly))
	t.Cleanup(func() { tensor.Close() })
	return tensor
}

func wantDeletes(t *testing.T, c dlpacktest.Counter, n int, what string) {
	t.Helper()
	if got := c.Deletes(); got != n {
		t.Fatalf("%s: the deleter ran %d times, want %d", what, got, n)
	}
}

func TestDLPackRoundTripSharesMemory(t *testing.T) {
	ctx := newContext(t)
	b := filled(t, ctx, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	tensor := toDLPack(t, b, cblob.PartData, false)
	if s := tensor.Shape(); !reflect.DeepEqual(s, []int64{2, 3}) || tensor.NDim() != 2 {
		t.Fatalf("shape %v, ndim %d", s, tensor.NDim())
	}
	if tensor.Strides() != nil || tensor.ByteOffset() != 0 {
		t.Fatalf("strides %v, byte offset %d", tensor.Strides(), tensor.ByteOffset())
	}
	if d := tensor.Device(); d != (cblob.DLDevice{Type: cblob.DLCPU, ID: 0}) {
		t.Fatalf("device %+v", d)
	}
	if dt := tensor.DType(); dt != (cblob.DLDataType{Code: cblob.DLFloat, Bits: 32, Lanes: 1}) {
		t.Fatalf("dtype %+v", dt)
	}
	if d, ok := tensor.DType().DType(); !ok || d != cblob.DTypeFloat32 {
		t.Fatalf("cblob dtype %v %v", d, ok)
	}
	if major, _ := tensor.Version(); major != 1 || tensor.ReadOnly() || tensor.Flags() != 0 {
		t.Fatalf("version %d, flags %d", major, tensor.Flags())
	}
	data := must[[]float32](t)(cblob.Data[float32](b))
	if tensor.Data() == 0 || tensor.Data() != uintptr(unsafe.Pointer(&data[0])) {
		t.Fatal("the tensor does not view the blob's memory")
	}

	back := must[*cblob.Blob](t)(cblob.NewBlobFromDLPack(ctx, tensor))
	defer back.Close()
	if tensor.Pointer() != nil || tensor.Data() != 0 {
		t.Fatal("the imported tensor is still the wrapper's")
	}
	if s := must[[]int64](t)(back.Shape()); !reflect.DeepEqual(s, []int64{2, 3}) {
		t.Fatalf("imported shape %v", s)
	}
	must[[]float32](t)(cblob.MutableData[float32](back))[4] = 50
	if v := values32(t, b, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 2, 3, 4, 50, 6}) {
		t.Fatalf("written through the import, read through the original: %v", v)
	}
	must[[]float32](t)(cblob.MutableData[float32](b))[0] = -1
	if v := must[float64](t)(back.ReadElement(cblob.PartData, 0, 0)); v != -1 {
		t.Fatalf("written through the original, read through the import: %v", v)
	}
	if v := values32(t, back, cblob.PartDiff); !reflect.DeepEqual(v, make([]float32, 6)) {
		t.Fatalf("the import's diff %v", v)
	}
	b.Close()
	if v := values32(t, back, cblob.PartData); v[4] != 50 {
		t.Fatalf("after the original's Close: %v", v)
	}
}

func TestDLPackDeleterRunsOnceOnClose(t *testing.T) {
	ctx := newContext(t)
	b := filled(t, ctx, []float32{1, 2}, 2)
	tensor := toDLPack(t, b, cblob.PartData, true)
	count := dlpacktest.CountDeletes(tensor.Pointer())
	// The tensor holds the buffer: replacing it in place is refused until the deleter runs.
	wantStatus(t, cblob.SetCPUData(b, []float32{5, 6}), cblob.StatusState)
	wantDeletes(t, count, 0, "while open")
	if err := tensor.Close(); err != nil {
		t.Fatal(err)
	}
	tensor.Close()
	wantDeletes(t, count, 1, "after two Closes")
	if err := cblob.SetCPUData(b, []float32{5, 6}); err != nil {
		t.Fatal(err)
	}

	// The tensor outlives its blob and keeps the values it viewed.
	tensor = toDLPack(t, b, cblob.PartData, true)
	count = dlpacktest.CountDeletes(tensor.Pointer())
	b.Close()
	if v := must[[]float32](t)(cblob.DLPackSlice[float32](tensor)); !reflect.DeepEqual(v, []float32{5, 6}) {
		t.Fatalf("after the blob's Close: %v", v)
	}
	tensor.Close()
	wantDeletes(t, count, 1, "after Close")
	_, err := cblob.DLPackSlice[float32](tensor)
	if err != cblob.ErrClosed {
		t.Fatalf("a closed tensor's slice: %v", err)
	}
}

func TestDLPackFinalizerDeletesAForgottenTensor(t *testing.T) {
	ctx := newContext(t)
	b := filled(t, ctx, []float32{1, 2}, 2)
	count := func() dlpacktest.Counter {
		tensor := must[*cblob.DLPackTensor](t)(b.ToDLPack(cblob.PartData, cblob.MemoryHost, true))
		return dlpacktest.CountDeletes(tensor.Pointer())
	}()
	for i := 0; i < 200 && count.Deletes() == 0; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond) // the finalizer runs on a goroutine of its own
	}
	wantDeletes(t, count, 1, "after the wrapper became unreachable")
}

func TestDLPackDeleterRunsOnceWhenHandedOver(t *testing.T) {
	ctx := newContext(t)
	b := filled(t, ctx, []float32{1, 2, 3}, 3)

	// To a consumer, which calls the deleter itself.
	tensor := toDLPack(t, b, cblob.PartData, false)
	count := dlpacktest.CountDeletes(tensor.Pointer())
	raw := tensor.Release()
	if raw == nil || tensor.Pointer() != nil || tensor.Release() != nil {
		t.Fatal("Release")
	}
	tensor.Close()
	wantDeletes(t, count, 0, "after Release and Close")
	dlpacktest.CallDeleter(raw)
	wantDeletes(t, count, 1, "after the consumer's call")

	// To cblob, which deletes it when the imported blob lets go.
	tensor = toDLPack(t, b, cblob.PartData, false)
	count = dlpacktest.CountDeletes(tensor.Pointer())
	back := must[*cblob.Blob](t)(cblob.NewBlobFromDLPack(ctx, tensor))
	tensor.Close()
	wantDeletes(t, count, 0, "while the import is open")
	sharer := newBlob(t, ctx, cblob.DTypeFloat32, 3)
	if err := sharer.ShareData(back); err != nil {
		t.Fatal(err)
	}
	back.Close()
	wantDeletes(t, count, 0, "while a blob sharing the memory is open")
	if v := values32(t, sharer, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 2, 3}) {
		t.Fatalf("sharer %v", v)
	}
	sharer.Close()
	wantDeletes(t, count, 1, "after the last holder's Close")

	// A tensor without elements is deleted before the import returns.
	empty := newBlob(t, ctx, cblob.DTypeInt32, 0, 4)
	tensor = toDLPack(t, empty, cblob.PartData, false)
	if tensor.Data() != 0 || !reflect.DeepEqual(tensor.Shape(), []int64{0, 4}) {
		t.Fatalf("empty export: data %x, shape %v", tensor.Data(), tensor.Shape())
	}
	count = dlpacktest.CountDeletes(tensor.Pointer())
	back = must[*cblob.Blob](t)(cblob.NewBlobFromDLPack(ctx, tensor))
	defer back.Close()
	wantDeletes(t, count, 1, "an import without elements")
	if d := must[cblob.DType](t)(back.DType()); d != cblob.DTypeInt32 {
		t.Fatalf("dtype %v", d)
	}
}

func TestDLPackLegacy(t *testing.T) {
	ctx := newContext(t)
	b := filled(t, ctx, []float32{1, 2, 3, 4}, 2, 1, 2)
	tensor := must[*cblob.LegacyDLPackTensor](t)(b.ToDLPackLegacy(cblob.PartData, cblob.MemoryHost))
	defer tensor.Close()
	if s := tensor.Shape(); !reflect.DeepEqual(s, []int64{2, 1, 2}) || tensor.Device().Type != cblob.DLCPU {
		t.Fatalf("shape %v, device %+v", s, tensor.Device())
	}
	must[[]float32](t)(cblob.DLPackSlice[float32](tensor))[3] = 40
	if v := values32(t, b, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 2, 3, 40}) {
		t.Fatalf("written through the tensor: %v", v)
	}
	count := dlpacktest.CountLegacyDeletes(tensor.Pointer())
	back := must[*cblob.Blob](t)(cblob.NewBlobFromDLPackLegacy(ctx, tensor))
	if v := values32(t, back, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 2, 3, 40}) {
		t.Fatalf("imported %v", v)
	}
	wantDeletes(t, count, 0, "while the import is open")
	back.Close()
	wantDeletes(t, count, 1, "after the import's Close")

	diff := must[*cblob.LegacyDLPackTensor](t)(b.ToDLPackLegacy(cblob.PartDiff, cblob.MemoryHost))
	count = dlpacktest.CountLegacyDeletes(diff.Pointer())
	diff.Close()
	wantDeletes(t, count, 1, "after Close")
}

func TestDLPackRefusedImportLeavesTheTensorWithTheCaller(t *testing.T) {
	ctx := newContext(t)
	b := filled(t, ctx, []float32{1, 2, 3, 4}, 2, 2)
	tensor := toDLPack(t, b, cblob.PartData, false)
	count := dlpacktest.CountDeletes(tensor.Pointer())
	dlpacktest.SetDType(tensor.Pointer(), uint8(cblob.DLBfloat), 16, 1)
	_, err := cblob.NewBlobFromDLPack(ctx, tensor)
	e := wantStatus(t, err, cblob.StatusDType)
	if !strings.HasPrefix(e.Message, "cblob_blob_from_dlpack: ") {
		t.Fatalf("message %q", e.Message)
	}
	wantDeletes(t, count, 0, "after the refusal")
	if tensor.Pointer() == nil {
		t.Fatal("the refused tensor is no longer the wrapper's")
	}
	if _, ok := tensor.DType().DType(); ok {
		t.Fatalf("bfloat16 has a cblob dtype")
	}
	dlpacktest.SetDType(tensor.Pointer(), uint8(cblob.DLFloat), 32, 2)
	_, err = cblob.NewBlobFromDLPack(ctx, tensor)
	wantStatus(t, err, cblob.StatusDType)
	tensor.Close()
	wantDeletes(t, count, 1, "after the caller's Close")
	_, err = cblob.NewBlobFromDLPack(ctx, tensor)
	if err != cblob.ErrClosed {
		t.Fatalf("importing a closed tensor: %v", err)
	}

	legacy := must[*cblob.LegacyDLPackTensor](t)(b.ToDLPackLegacy(cblob.PartData, cblob.MemoryHost))
	count = dlpacktest.CountLegacyDeletes(legacy.Pointer())
	dlpacktest.SetLegacyDType(legacy.Pointer(), uint8(cblob.DLInt), 8, 1)
	_, err = cblob.NewBlobFromDLPackLegacy(ctx, legacy)
	wantStatus(t, err, cblob.StatusDType)
	wantDeletes(t, count, 0, "after the refusal")
	legacy.Close()
	wantDeletes(t, count, 1, "after the caller's Close")
}

func TestDLPackReadOnlyFlag(t *testing.T) {
	ctx := newContext(t)
	b := filled(t, ctx, []float32{7, 8}, 2)
	tensor := toDLPack(t, b, cblob.PartData, true)
	if !tensor.ReadOnly() || tensor.Flags()&cblob.DLPackFlagReadOnly == 0 {
		t.Fatalf("flags %d", tensor.Flags())
	}
	if v := must[[]float32](t)(cblob.DLPackSlice[float32](tensor)); !reflect.DeepEqual(v, []float32{7, 8}) {
		t.Fatalf("values %v", v)
	}
	_, err := cblob.DLPackSlice[int32](tensor)
	wantStatus(t, err, cblob.StatusDType)
	// cblob refuses to import a read-only tensor: every blob can be written.
	count := dlpacktest.CountDeletes(tensor.Pointer())
	_, err = cblob.NewBlobFromDLPack(ctx, tensor)
	if e := wantStatus(t, err, cblob.StatusInvalidArgument); !strings.Contains(e.Message, "read-only") {
		t.Fatalf("message %q", e.Message)
	}
	tensor.Close()
	wantDeletes(t, count, 1, "after Close")

	writable := toDLPack(t, b, cblob.PartData, false)
	if writable.ReadOnly() || writable.Flags() != 0 {
		t.Fatalf("flags %d", writable.Flags())
	}
	must[[]float32](t)(cblob.DLPackSlice[float32](writable))[1] = 80
	if v := values32(t, b, cblob.PartData); !reflect.DeepEqual(v, []float32{7, 80}) {
		t.Fatalf("written through the tensor: %v", v)
	}
}

func TestDLPackTensorMadeInC(t *testing.T) {
	ctx := newContext(t)
	raw, count := dlpacktest.NewFloat64(2, 3)
	tensor := must[*cblob.DLPackTensor](t)(cblob.AdoptDLPackTensor(raw))
	b := must[*cblob.Blob](t)(cblob.NewBlobFromDLPack(ctx, tensor))
	if v := must[[]float64](t)(cblob.ToSlice[float64](b, cblob.PartData)); !reflect.DeepEqual(v, []float64{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("values %v", v)
	}
	if err := b.Scale(cblob.PartData, 2); err != nil {
		t.Fatal(err)
	}
	if s := must[float64](t)(b.Asum(cblob.PartData)); s != 30 {
		t.Fatalf("asum %v", s)
	}
	wantDeletes(t, count, 0, "while the blob is open")
	b.Close()
	wantDeletes(t, count, 1, "after the blob's Close")

	// A major version cblob does not read: refused; only the deleter is touched, by Close.
	raw, count = dlpacktest.NewFloat64(4)
	dlpacktest.SetMajorVersion(raw, 2)
	tensor = must[*cblob.DLPackTensor](t)(cblob.AdoptDLPackTensor(raw))
	_, err := cblob.NewBlobFromDLPack(ctx, tensor)
	wantStatus(t, err, cblob.StatusInvalidArgument)
	wantDeletes(t, count, 0, "after the refusal")
	tensor.Close()
	wantDeletes(t, count, 1, "after Close")

	_, err = cblob.AdoptDLPackTensor(nil)
	wantStatus(t, err, cblob.StatusInvalidArgument)
}

func TestDLPackDataTypes(t *testing.T) {
	for _, d := range []cblob.DType{cblob.DTypeFloat32, cblob.DTypeFloat64, cblob.DTypeInt32, cblob.DTypeUint32} {
		if back, ok := cblob.DLDataTypeOf(d).DType(); !ok || back != d {
			t.Fatalf("%v: %v %v", d, back, ok)
		}
	}
	if dt := cblob.DLDataTypeOf(cblob.DTypeUint32); dt != (cblob.DLDataType{Code: cblob.DLUInt, Bits: 32, Lanes: 1}) {
		t.Fatalf("uint32 is %+v", dt)
	}
}

func TestDLPackImportOnAStream(t *testing.T) {
	ctx := newContext(t)
	b := filled(t, ctx, []float32{1, 2, 3, 4}, 2, 2)
	// A host tensor must be ready when handed over: the stream is not used, 0 or not.
	for _, stream := range []uintptr{0, 2} {
		back := must[*cblob.Blob](t)(cblob.NewBlobFromDLPackOnStream(ctx, toDLPack(t, b, cblob.PartData, false), stream))
		must[[]float32](t)(cblob.MutableData[float32](back))[1] = 20
		back.Close()
		if v := values32(t, b, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 20, 3, 4}) {
			t.Fatalf("stream %d: written through the import, read through the original: %v", stream, v)
		}
		legacy := must[*cblob.LegacyDLPackTensor](t)(b.ToDLPackLegacy(cblob.PartData, cblob.MemoryHost))
		back = must[*cblob.Blob](t)(cblob.NewBlobFromDLPackLegacyOnStream(ctx, legacy, stream))
		if v := values32(t, back, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 20, 3, 4}) {
			t.Fatalf("stream %d: legacy import %v", stream, v)
		}
		back.Close()
	}
	// The import's rules hold on a stream too: a refused tensor stays the caller's.
	tensor := toDLPack(t, b, cblob.PartData, false)
	count := dlpacktest.CountDeletes(tensor.Pointer())
	dlpacktest.SetDType(tensor.Pointer(), uint8(cblob.DLBfloat), 16, 1)
	_, err := cblob.NewBlobFromDLPackOnStream(ctx, tensor, 0)
	e := wantStatus(t, err, cblob.StatusDType)
	if !strings.HasPrefix(e.Message, "cblob_blob_from_dlpack_on_stream: ") {
		t.Fatalf("message %q", e.Message)
	}
	wantDeletes(t, count, 0, "after the refusal")
	tensor.Close()
	wantDeletes(t, count, 1, "after the caller's Close")
}
