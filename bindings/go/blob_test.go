// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// The bindings' common scenario (the parts the current API covers), plus what is particular to
// the Go layer: slices over C memory, Close and finalizers, errors across goroutines.

import (
	"errors"
	"math"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/cblob"
)

func newContext(t *testing.T) *cblob.Context {
	t.Helper()
	ctx, err := cblob.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

func newBlob(t *testing.T, ctx *cblob.Context, dtype cblob.DType, shape ...int64) *cblob.Blob {
	t.Helper()
	b, err := cblob.NewBlob(ctx, dtype, shape...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// must fails the test on an error and returns the value.
func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// wantStatus checks that err is a cblob *Error with the given status and returns it.
func wantStatus(t *testing.T, err error, status cblob.Status) *cblob.Error {
	t.Helper()
	var e *cblob.Error
	if !errors.As(err, &e) || e.Status != status || !errors.Is(err, status) {
		t.Fatalf("got error %v, want status %v", err, status)
	}
	if e.Message == "" {
		t.Fatalf("%v: empty message", status)
	}
	return e
}

func TestLibraryIdentifiesItself(t *testing.T) {
	major, minor := cblob.ABIVersion()
	if major != cblob.ABIVersionMajor || minor < cblob.ABIVersionMinor {
		t.Fatalf("ABI %d.%d, built for %d.%d", major, minor, cblob.ABIVersionMajor, cblob.ABIVersionMinor)
	}
	if len(strings.Split(cblob.Version(), ".")) != 3 {
		t.Fatalf("version %q", cblob.Version())
	}
	if !strings.Contains(cblob.BLASInfo(), "BLIS") || cblob.CPUFeatures() == "" {
		t.Fatalf("BLAS %q, CPU %q", cblob.BLASInfo(), cblob.CPUFeatures())
	}
}

func TestCreateReshapeFillUpdateAsum(t *testing.T) {
	ctx := newContext(t)
	b := newBlob(t, ctx, cblob.DTypeFloat32, 2, 3, 4)
	if n := must[int64](t)(b.Count()); n != 24 {
		t.Fatalf("count %d", n)
	}
	if h := must[cblob.Head](t)(b.Head(cblob.PartData)); h != cblob.HeadUninitialized {
		t.Fatalf("head %v", h)
	}
	if err := b.Reshape(3, 4); err != nil {
		t.Fatal(err)
	}
	if s := must[[]int64](t)(b.Shape()); !reflect.DeepEqual(s, []int64{3, 4}) {
		t.Fatalf("shape %v", s)
	}
	if s := must[string](t)(b.ShapeString()); s != "3 4 (12)" {
		t.Fatalf("shape string %q", s)
	}
	if c := must[int64](t)(b.Capacity()); c != 24 {
		t.Fatalf("capacity %d: shrinking keeps the storage", c)
	}
	if d := must[int64](t)(b.ShapeAt(-1)); d != 4 {
		t.Fatalf("ShapeAt(-1) %d", d)
	}
	if c := must[int64](t)(b.CountRange(1, 2)); c != 4 {
		t.Fatalf("CountRange %d", c)
	}
	if a := must[int](t)(b.CanonicalAxis(-2)); a != 0 {
		t.Fatalf("CanonicalAxis %d", a)
	}
	if o := must[int64](t)(b.Offset(2, 1)); o != 9 {
		t.Fatalf("offset %d", o)
	}

	data := must[[]float32](t)(cblob.MutableData[float32](b))
	diff := must[[]float32](t)(cblob.MutableDiff[float32](b))
	if len(data) != 12 || len(diff) != 12 {
		t.Fatalf("view lengths %d %d", len(data), len(diff))
	}
	for i := range data {
		data[i], diff[i] = float32(i), 0.5
	}
	if err := b.Update(); err != nil {
		t.Fatal(err)
	}
	want, asum := make([]float32, 12), 0.0
	for i := range want {
		want[i] = float32(i) - 0.5
		asum += math.Abs(float64(want[i]))
	}
	if got := must[[]float32](t)(cblob.Data[float32](b)); !reflect.DeepEqual(got, want) {
		t.Fatalf("data %v, want %v", got, want)
	}
	if s := must[float64](t)(b.Asum(cblob.PartData)); s != asum {
		t.Fatalf("asum %v, want %v", s, asum)
	}
	if s := must[float64](t)(b.Sumsq(cblob.PartDiff)); s != 3 {
		t.Fatalf("sumsq %v", s)
	}
	if v := must[float64](t)(b.ReadElement(cblob.PartData, 2, 3)); v != 10.5 {
		t.Fatalf("element %v", v)
	}
	if err := b.Scale(cblob.PartDiff, 4); err != nil {
		t.Fatal(err)
	}
	if d := must[[]float32](t)(cblob.Diff[float32](b)); d[11] != 2 {
		t.Fatalf("scaled diff %v", d)
	}
}

func TestLegacyShapesAndEmptyBlobs(t *testing.T) {
	ctx := newContext(t)
	b, err := cblob.NewLegacyBlob(ctx, cblob.DTypeFloat64, 2, 3, 4, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dims := []int64{must[int64](t)(b.Num()), must[int64](t)(b.Channels()), must[int64](t)(b.Height()), must[int64](t)(b.Width())}
	if !reflect.DeepEqual(dims, []int64{2, 3, 4, 5}) {
		t.Fatalf("legacy dims %v", dims)
	}
	if o := must[int64](t)(b.OffsetLegacy(1, 2, 3, 4)); o != 119 {
		t.Fatalf("offset %d", o)
	}
	_, err = b.OffsetLegacy(2, 0, 0, 0)
	wantStatus(t, err, cblob.StatusOutOfRange)
	if err := b.ReshapeLegacy(1, 1, 2, 2); err != nil {
		t.Fatal(err)
	}
	if d := must[int64](t)(b.LegacyShape(-1)); d != 2 {
		t.Fatalf("LegacyShape(-1) %d", d)
	}

	empty, err := cblob.NewEmptyBlob(ctx, cblob.DTypeFloat64)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if v := must[[]float64](t)(cblob.Data[float64](empty)); v == nil || len(v) != 0 {
		t.Fatalf("empty view %v", v)
	}
	if err := empty.ReshapeLike(b); err != nil {
		t.Fatal(err)
	}
	if n := must[int64](t)(empty.Count()); n != 4 {
		t.Fatalf("count after ReshapeLike %d", n)
	}
}

func TestBadShapeIsAnErrorWithTheLibraryMessageAndChangesNothing(t *testing.T) {
	ctx := newContext(t)
	_, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, 2, -3)
	e := wantStatus(t, err, cblob.StatusShape)
	if !strings.HasPrefix(e.Message, "cblob_blob_create: ") || !strings.Contains(e.Message, "shape[1] is -3") {
		t.Fatalf("message %q", e.Message)
	}
	if !strings.HasSuffix(err.Error(), "(CBLOB_ERR_SHAPE)") {
		t.Fatalf("Error() %q", err.Error())
	}
	b := newBlob(t, ctx, cblob.DTypeFloat32, 5)
	wantStatus(t, b.Reshape(make([]int64, 33)...), cblob.StatusShape)
	wantStatus(t, b.Reshape(math.MaxInt64, 4), cblob.StatusOverflow)
	if s := must[[]int64](t)(b.Shape()); !reflect.DeepEqual(s, []int64{5}) {
		t.Fatalf("shape changed to %v", s)
	}
	_, err = b.ShapeAt(3)
	wantStatus(t, err, cblob.StatusOutOfRange)
	wantStatus(t, b.Update(), cblob.StatusState)
}

func TestDTypesAreChecked(t *testing.T) {
	ctx := newContext(t)
	ints := newBlob(t, ctx, cblob.DTypeInt32, 3)
	if d := must[cblob.DType](t)(ints.DType()); d != cblob.DTypeInt32 {
		t.Fatalf("dtype %v", d)
	}
	_, err := cblob.Data[float32](ints)
	if e := wantStatus(t, err, cblob.StatusDType); !strings.Contains(e.Message, "CBLOB_DTYPE_INT32") {
		t.Fatalf("message %q", e.Message)
	}
	v := must[[]int32](t)(cblob.MutableData[int32](ints))
	copy(v, []int32{1, -2, 3})
	if got := must[[]int32](t)(cblob.Data[int32](ints)); !reflect.DeepEqual(got, []int32{1, -2, 3}) {
		t.Fatalf("ints %v", got)
	}
	_, err = ints.Asum(cblob.PartData)
	wantStatus(t, err, cblob.StatusNotImplemented)

	uints := newBlob(t, ctx, cblob.DTypeUint32, 2)
	must[[]uint32](t)(cblob.MutableData[uint32](uints))[1] = math.MaxUint32
	if x := must[float64](t)(uints.ReadElement(cblob.PartData, 1)); x != math.MaxUint32 {
		t.Fatalf("uint element %v", x)
	}
	floats := newBlob(t, ctx, cblob.DTypeFloat32, 3)
	doubles := newBlob(t, ctx, cblob.DTypeFloat64, 3)
	wantStatus(t, doubles.ShareData(floats), cblob.StatusDType)
}

func TestShareDataBetweenTwoBlobs(t *testing.T) {
	ctx := newContext(t)
	a := newBlob(t, ctx, cblob.DTypeFloat32, 2, 3)
	b := newBlob(t, ctx, cblob.DTypeFloat32, 6)
	copy(must[[]float32](t)(cblob.MutableData[float32](a)), []float32{1, 2, 3, 4, 5, 6})
	if err := b.ShareData(a); err != nil {
		t.Fatal(err)
	}
	must[[]float32](t)(cblob.MutableData[float32](b))[0] = -10
	if x := must[[]float32](t)(cblob.Data[float32](a))[0]; x != -10 {
		t.Fatalf("a sees %v: not one memory", x)
	}
	if x := must[[]float32](t)(cblob.Diff[float32](b))[0]; x != 0 {
		t.Fatalf("diffs are not separate: %v", x)
	}
	wrong := newBlob(t, ctx, cblob.DTypeFloat32, 7)
	wantStatus(t, wrong.ShareData(a), cblob.StatusShape)
	a.Close()
	if x := must[[]float32](t)(cblob.Data[float32](b))[5]; x != 6 {
		t.Fatalf("the memory did not outlive its first blob: %v", x)
	}
}

func TestCopyFromAndSetCPUData(t *testing.T) {
	ctx := newContext(t)
	src := newBlob(t, ctx, cblob.DTypeFloat32, 4)
	dst := newBlob(t, ctx, cblob.DTypeFloat32, 2)
	copy(must[[]float32](t)(cblob.MutableData[float32](src)), []float32{1, -2, 3, -4})
	wantStatus(t, dst.CopyFrom(src, cblob.PartData, false), cblob.StatusShape)
	if err := dst.CopyFrom(src, cblob.PartData, true); err != nil {
		t.Fatal(err)
	}
	if got := must[[]float32](t)(cblob.Data[float32](dst)); !reflect.DeepEqual(got, []float32{1, -2, 3, -4}) {
		t.Fatalf("copied %v", got)
	}

	values := []float32{0.5, 1.5, 2.5, 3.5}
	if err := cblob.SetCPUData(dst, values); err != nil {
		t.Fatal(err)
	}
	values[0] = 100 // a copy: the blob does not see it
	if s := must[float64](t)(dst.Asum(cblob.PartData)); s != 8 {
		t.Fatalf("asum %v", s)
	}
	e := wantStatus(t, cblob.SetCPUData(dst, make([]float32, 3)), cblob.StatusInvalidArgument)
	if !strings.Contains(e.Message, "size_bytes is 12") {
		t.Fatalf("message %q", e.Message)
	}
	wantStatus(t, cblob.SetCPUData(dst, make([]float64, 4)), cblob.StatusDType)
	if x := must[[]float32](t)(cblob.Data[float32](dst))[0]; x != 0.5 {
		t.Fatalf("a failed call changed the data: %v", x)
	}
}

func TestCloseTwiceIsSafeAndUseAfterCloseIsAnError(t *testing.T) {
	ctx := newContext(t)
	b, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, 3)
	if err != nil {
		t.Fatal(err)
	}
	if b.Close() != nil || b.Close() != nil {
		t.Fatal("Close failed")
	}
	if _, err := b.Count(); !errors.Is(err, cblob.ErrClosed) {
		t.Fatalf("Count after Close: %v", err)
	}
	if _, err := cblob.Data[float32](b); !errors.Is(err, cblob.ErrClosed) {
		t.Fatalf("Data after Close: %v", err)
	}
	other := newBlob(t, ctx, cblob.DTypeFloat32, 3)
	if err := other.ShareData(b); !errors.Is(err, cblob.ErrClosed) {
		t.Fatalf("ShareData with a closed blob: %v", err)
	}
	var nilBlob *cblob.Blob
	if _, err := nilBlob.Count(); !errors.Is(err, cblob.ErrClosed) || nilBlob.Close() != nil {
		t.Fatalf("nil blob: %v", err)
	}

	c2, _ := cblob.NewContext()
	c2.Close()
	c2.Close()
	if _, err := cblob.NewBlob(c2, cblob.DTypeFloat32, 1); !errors.Is(err, cblob.ErrClosed) {
		t.Fatalf("NewBlob in a closed context: %v", err)
	}
}

func TestBlobsOutliveTheirContextObject(t *testing.T) {
	ctx, err := cblob.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	b := newBlob(t, ctx, cblob.DTypeFloat32, 3)
	ctx.Close()
	for i := range must[[]float32](t)(cblob.MutableData[float32](b)) {
		must[[]float32](t)(cblob.MutableData[float32](b))[i] = 2
	}
	if s := must[float64](t)(b.Asum(cblob.PartData)); s != 6 {
		t.Fatalf("asum %v", s)
	}
}

func TestFinalizerClosesForgottenBlobs(t *testing.T) {
	ctx := newContext(t)
	const count = 16 << 20 // 64 MiB of float32: malloc maps it apart and unmaps it on free
	func() {
		b, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, count)
		if err != nil {
			t.Fatal(err)
		}
		data := must[[]float32](t)(cblob.MutableData[float32](b))
		for i := range data {
			data[i] = 1 // touch every page, so the memory is resident
		}
	}()
	held := residentBytes(t)
	for i := 0; i < 50; i++ {
		runtime.GC()
		if residentBytes(t) < held-count*4/2 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the forgotten blob's memory is still resident (%d bytes)", residentBytes(t))
}

func residentBytes(t *testing.T) int64 {
	text, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("cannot read resident memory: %v", err)
	}
	pages, err := strconv.ParseInt(strings.Fields(string(text))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

func TestGPUModeWithoutAGPUSaysWhyAndKeepsCPUMode(t *testing.T) {
	ctx := newContext(t)
	err := ctx.SetMode(cblob.ModeGPU)
	mode := must[cblob.Mode](t)(ctx.Mode())
	if err == nil {
		if mode != cblob.ModeGPU {
			t.Fatalf("mode %v after SetMode(GPU) succeeded", mode)
		}
		return
	}
	var e *cblob.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v", err)
	}
	switch e.Status {
	case cblob.StatusNoDriver, cblob.StatusStubDriver, cblob.StatusNoDevice, cblob.StatusDriverTooOld:
	default:
		t.Fatalf("status %v (%v): not a no-GPU status", e.Status, err)
	}
	if mode != cblob.ModeCPU {
		t.Fatalf("mode %v after a failed SetMode", mode)
	}
}

func TestErrorsStayWithTheirCallAcrossGoroutines(t *testing.T) {
	var wg sync.WaitGroup
	failures := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		ctx := newContext(t) // one context per goroutine: creating blobs is not a pure getter
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				dim := -int64(g*1000 + i + 1)
				_, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, dim)
				var e *cblob.Error
				if !errors.As(err, &e) || !strings.Contains(e.Message, "shape[0] is "+strconv.FormatInt(dim, 10)+";") {
					failures <- err.Error()
					return
				}
				runtime.Gosched()
			}
		}(g)
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Errorf("message of another call: %s", f)
	}
}
