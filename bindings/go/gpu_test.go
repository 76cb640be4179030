// SPDX-License-Identifier: BSD-2-Clause
package cblob_test

// The GPU calls through the Go layer. Without a usable GPU every call that needs one fails with a
// no-GPU status and the library's message, and the calls that do not need one work; with one
// (or with the test double of the driver, which the binding suites run these tests against as
// well, setting CBLOB_BINDINGS_EXPECT_GPU=1), the calls do their work.

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"example.com/cblob"
)

func wantNoGPU(t *testing.T, err error, status cblob.Status) {
	t.Helper()
	wantStatus(t, err, status)
	if !cblob.IsNoGPU(err) {
		t.Fatalf("IsNoGPU(%v) is false", err)
	}
}

func TestGPUWhatWorksWithoutAGPUToo(t *testing.T) {
	if _, err := cblob.GPULibraryVersions(); err != nil {
		t.Fatal(err)
	}
	if r := must[string](t)(cblob.GPUReport()); strings.Count(r, "\n") < 2 {
		t.Fatalf("report %q", r)
	}
	if m := must[cblob.CacheMode](t)(cblob.KernelCacheMode()); m < cblob.CacheModeOff || m > cblob.CacheModeDisk {
		t.Fatalf("cache mode %v", m)
	}
	must[string](t)(cblob.KernelCacheDir())
	ctx := newContext(t)
	if d, s := must[int](t)(ctx.Device()), must[uintptr](t)(ctx.Stream()); d != 0 || s != 0 {
		t.Fatalf("device %d, stream %x", d, s)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if l := must[string](t)(ctx.Log()); l != "" {
		t.Fatalf("log %q", l)
	}
	if err := ctx.ClearLog(); err != nil {
		t.Fatal(err)
	}
	_, err := cblob.GPUDeviceName(-1)
	wantStatus(t, err, cblob.StatusInvalidArgument)
}

func TestGPUCallsSayWhyThereIsNoGPUOrWork(t *testing.T) {
	devices, err := cblob.GPUProbe()
	if err != nil {
		if os.Getenv("CBLOB_BINDINGS_EXPECT_GPU") == "1" {
			t.Fatalf("the test double of the driver was expected: %v", err)
		}
		var e *cblob.Error
		if !errors.As(err, &e) || !cblob.IsNoGPU(err) || !strings.HasPrefix(e.Message, "cblob_gpu_probe: ") {
			t.Fatalf("probe: %v", err)
		}
		gpuCallsWithoutAGPU(t, e.Status)
		return
	}
	if devices < 1 {
		t.Fatalf("%d devices", devices)
	}
	gpuCallsWithAGPU(t)
}

func gpuCallsWithoutAGPU(t *testing.T, status cblob.Status) {
	ctx := newContext(t)
	wantNoGPU(t, ctx.SetMode(cblob.ModeGPU), status)
	wantNoGPU(t, ctx.SetDevice(0), status)
	wantNoGPU(t, ctx.SetStream(0), status)
	_, err := ctx.WarmUpKernels(0)
	wantNoGPU(t, err, status)
	_, err = cblob.GPUDeviceName(0)
	wantNoGPU(t, err, status)

	b := newBlob(t, ctx, cblob.DTypeFloat32, 4)
	if err := b.Fill(cblob.PartData, 1.5); err != nil {
		t.Fatal(err)
	}
	_, err = b.GPUPtr(cblob.PartData)
	wantNoGPU(t, err, status)
	_, err = b.MutableGPUPtr(cblob.PartDiff)
	wantNoGPU(t, err, status)
	wantNoGPU(t, b.AsyncPush(cblob.PartData), status)
	_, err = b.ToDLPack(cblob.PartData, cblob.MemoryDevice, true)
	wantNoGPU(t, err, status)
	_, err = b.ToDLPackLegacy(cblob.PartDiff, cblob.MemoryDevice)
	wantNoGPU(t, err, status)
	var released atomic.Int32
	wantNoGPU(t, b.SetGPUData(0x1000, 16, func() { released.Add(1) }), status)
	if released.Load() != 0 {
		t.Fatal("release ran after a failure")
	}
	if h, s := must[cblob.Head](t)(b.Head(cblob.PartData)), must[float64](t)(b.Asum(cblob.PartData)); h != cblob.HeadAtCPU || s != 6 {
		t.Fatalf("head %v, asum %v: a failed call changed the blob", h, s)
	}
}

func gpuCallsWithAGPU(t *testing.T) {
	if name := must[string](t)(cblob.GPUDeviceName(0)); name == "" {
		t.Fatal("empty device name")
	}
	ctx := newContext(t)
	if err := ctx.SetDevice(0); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, ctx.SetDevice(1), cblob.StatusState)

	b := filled(t, ctx, []float32{1, 2, 3, 4}, 4)
	if p := must[uintptr](t)(b.GPUPtr(cblob.PartData)); p == 0 {
		t.Fatal("NULL device pointer")
	}
	if h := must[cblob.Head](t)(b.Head(cblob.PartData)); h != cblob.HeadSynced {
		t.Fatalf("head %v", h)
	}
	must[uintptr](t)(b.MutableGPUPtr(cblob.PartData))
	if v := values32(t, b, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 2, 3, 4}) {
		t.Fatalf("synced back %v", v)
	}
	if err := cblob.CopyIn(b, cblob.PartDiff, []float32{1, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.AsyncPush(cblob.PartDiff); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, b.AsyncPush(cblob.PartDiff), cblob.StatusState)

	// A caller's device buffer: here another blob's device memory, which outlives the use.
	donor := filled(t, ctx, []float32{5, 6, 7, 8}, 4)
	device := must[uintptr](t)(donor.MutableGPUPtr(cblob.PartData))
	taker := newBlob(t, ctx, cblob.DTypeFloat32, 4)
	var released atomic.Int32
	if err := taker.SetGPUData(device, 16, func() { released.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if v := values32(t, taker, cblob.PartData); !reflect.DeepEqual(v, []float32{5, 6, 7, 8}) {
		t.Fatalf("taker %v", v)
	}
	if released.Load() != 0 {
		t.Fatal("released early")
	}
	taker.Close()
	if released.Load() != 1 {
		t.Fatalf("released %d times", released.Load())
	}
	bigger := newBlob(t, ctx, cblob.DTypeFloat32, 8)
	wantStatus(t, bigger.SetGPUData(device, 16, nil), cblob.StatusInvalidArgument)

	dlpackWithAGPU(t, ctx)

	if err := ctx.SetMode(cblob.ModeGPU); err != nil {
		t.Fatal(err)
	}
	onGPU := newBlob(t, ctx, cblob.DTypeFloat32, 1000)
	if err := onGPU.Fill(cblob.PartData, 0.5); err != nil {
		t.Fatal(err)
	}
	if h := must[cblob.Head](t)(onGPU.Head(cblob.PartData)); h != cblob.HeadAtGPU {
		t.Fatalf("head %v", h)
	}
	if s := must[float64](t)(onGPU.Asum(cblob.PartData)); s != 500 {
		t.Fatalf("asum %v", s)
	}
	// Host memory allocated in GPU mode is pinned: its DLPack export says DLCUDAHost.
	pinned := newBlob(t, ctx, cblob.DTypeFloat32, 3)
	copy(must[[]float32](t)(cblob.MutableData[float32](pinned)), []float32{1, 2, 3})
	tensor := must[*cblob.DLPackTensor](t)(pinned.ToDLPack(cblob.PartData, cblob.MemoryHost, true))
	defer tensor.Close()
	if d := tensor.Device(); d != (cblob.DLDevice{Type: cblob.DLCUDAHost, ID: 0}) {
		t.Fatalf("pinned export on %+v", d)
	}
	if v := must[[]float32](t)(cblob.DLPackSlice[float32](tensor)); !reflect.DeepEqual(v, []float32{1, 2, 3}) {
		t.Fatalf("pinned values %v", v)
	}

	if m := must[cblob.CacheMode](t)(cblob.KernelCacheMode()); m != cblob.CacheModeDisk {
		_, err := ctx.WarmUpKernels(80)
		wantStatus(t, err, cblob.StatusState)
	}
}

// dlpackWithAGPU checks DLPack exports of the device copy: DLCUDA on the context's device, the
// head moved as the device accessors move it, and a CUDA tensor taken back in as device data.
// Device memory is only read through cblob (the double's is not host-readable).
func dlpackWithAGPU(t *testing.T, ctx *cblob.Context) {
	b := filled(t, ctx, []float32{1, 2, 3, 4}, 4)
	tensor := must[*cblob.DLPackTensor](t)(b.ToDLPack(cblob.PartData, cblob.MemoryDevice, true))
	defer tensor.Close()
	if d := tensor.Device(); d != (cblob.DLDevice{Type: cblob.DLCUDA, ID: int32(must[int](t)(ctx.Device()))}) {
		t.Fatalf("device export on %+v", d)
	}
	if !tensor.ReadOnly() || !reflect.DeepEqual(tensor.Shape(), []int64{4}) {
		t.Fatalf("flags %d, shape %v", tensor.Flags(), tensor.Shape())
	}
	if h := must[cblob.Head](t)(b.Head(cblob.PartData)); h != cblob.HeadSynced {
		t.Fatalf("head %v after a read-only device export", h)
	}
	if p := must[uintptr](t)(b.GPUPtr(cblob.PartData)); p != tensor.Data() || p == 0 {
		t.Fatalf("tensor data %x, device pointer %x", tensor.Data(), p)
	}
	_, err := cblob.DLPackSlice[float32](tensor)
	wantStatus(t, err, cblob.StatusInvalidArgument)

	legacy := must[*cblob.LegacyDLPackTensor](t)(b.ToDLPackLegacy(cblob.PartData, cblob.MemoryDevice))
	if h := must[cblob.Head](t)(b.Head(cblob.PartData)); h != cblob.HeadAtGPU || legacy.Data() != tensor.Data() {
		t.Fatalf("head %v after a writable device export", h)
	}
	legacy.Close()

	// Into a blob of another context: the device copy is the data (head AT_GPU), shared.
	other := newContext(t)
	writable := must[*cblob.DLPackTensor](t)(b.ToDLPack(cblob.PartData, cblob.MemoryDevice, false))
	back := must[*cblob.Blob](t)(cblob.NewBlobFromDLPack(other, writable))
	defer back.Close()
	if h := must[cblob.Head](t)(back.Head(cblob.PartData)); h != cblob.HeadAtGPU {
		t.Fatalf("imported head %v", h)
	}
	if p := must[uintptr](t)(back.GPUPtr(cblob.PartData)); p != tensor.Data() {
		t.Fatalf("imported device pointer %x, tensor %x", p, tensor.Data())
	}
	if v := values32(t, back, cblob.PartData); !reflect.DeepEqual(v, []float32{1, 2, 3, 4}) {
		t.Fatalf("imported %v", v)
	}
	if err := back.Scale(cblob.PartData, 2); err != nil {
		t.Fatal(err)
	}
	if v := values32(t, b, cblob.PartData); !reflect.DeepEqual(v, []float32{2, 4, 6, 8}) {
		t.Fatalf("original after the import's Scale: %v", v)
	}
	// On a stream: the importing context's own adds no wait, the legacy default (0) and the
	// per-thread default (2) are waited for; each takes the device tensor in as device data.
	for _, stream := range []uintptr{must[uintptr](t)(other.Stream()), 0, 2} {
		device := must[*cblob.DLPackTensor](t)(b.ToDLPack(cblob.PartData, cblob.MemoryDevice, false))
		onStream := must[*cblob.Blob](t)(cblob.NewBlobFromDLPackOnStream(other, device, stream))
		if v := values32(t, onStream, cblob.PartData); !reflect.DeepEqual(v, []float32{2, 4, 6, 8}) {
			t.Fatalf("imported on stream %x: %v", stream, v)
		}
		onStream.Close()
	}
	if strings.Contains(os.Getenv("CBLOB_CUDA_DRIVER"), "fake_cuda") {
		// A handle the driver does not know: only the test double can be handed one safely.
		device := must[*cblob.DLPackTensor](t)(b.ToDLPack(cblob.PartData, cblob.MemoryDevice, false))
		_, err := cblob.NewBlobFromDLPackOnStream(other, device, 0x5eed0)
		wantStatus(t, err, cblob.StatusInvalidArgument)
		if device.Pointer() == nil {
			t.Fatal("the refused tensor is no longer the caller's")
		}
		device.Close()
	}
	// The tensor outlives its blob (it holds the device memory).
	b.Close()
	back.Close()
	if tensor.Data() == 0 {
		t.Fatal("the tensor lost its memory")
	}
}
