// SPDX-License-Identifier: BSD-2-Clause
package cblob

/*
#include <stdint.h>
#include <stdlib.h>
#include <cblob/cblob.h>

// Exported by gpu_release.go.
extern void cbgoRunRelease(void *ptr, void *user_data);
*/
import "C"

import (
	"errors"
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// The GPU backend (CUDA). The library loads and works without a GPU; the calls that need one
// then fail with the status that says why (StatusNoDriver, StatusStubDriver, StatusNoDevice,
// StatusDriverTooOld, StatusNvrtcMissing, StatusCublasMissing), which IsNoGPU recognises.
//
// Device pointers and CUDA streams are uintptr values: they are addresses on the device or
// driver objects, never Go memory, and Go code cannot dereference them.

// IsNoGPU reports whether err is one of the statuses that say the GPU stack cannot be used on
// this machine (no driver, a stub driver, no device, an old driver, no NVRTC, no cuBLAS).
func IsNoGPU(err error) bool {
	for _, s := range []Status{StatusNoDriver, StatusStubDriver, StatusNoDevice, StatusDriverTooOld, StatusNvrtcMissing, StatusCublasMissing} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// GPUProbe loads the GPU stack if it is not loaded yet and returns the number of CUDA devices,
// or the error that says why the GPU cannot be used.
func GPUProbe() (int, error) {
	n, err := cGPUProbe()
	return int(n), err
}

// GPUVersions holds the versions of the GPU libraries found, encoded as CUDA does
// (major*1000 + minor*10: 13000 is 13.0), 0 for one that could not be loaded.
type GPUVersions struct {
	Driver, NVRTC, CUBLAS int
}

// GPULibraryVersions returns the versions found; it never fails for want of a GPU.
func GPULibraryVersions() (GPUVersions, error) {
	driver, nvrtc, cublas, err := cGPUVersions()
	return GPUVersions{Driver: int(driver), NVRTC: int(nvrtc), CUBLAS: int(cublas)}, err
}

// GPUDeviceName returns the name of a CUDA device, as the driver reports it.
func GPUDeviceName(deviceIndex int) (string, error) {
	return readText(func(buffer *C.char, size C.size_t) (C.size_t, error) {
		return cGPUDeviceName(C.int32_t(deviceIndex), buffer, size)
	})
}

// GPUReport returns a report of the GPU stack, one item per line (what `cblob info` prints);
// it never fails for want of a GPU.
func GPUReport() (string, error) {
	return readText(cGPUReport)
}

// KernelCacheMode returns where compiled kernels are kept (CBLOB_KERNEL_CACHE, or memory after
// the cache folder turned out not to be writable).
func KernelCacheMode() (CacheMode, error) {
	mode, err := cKernelCacheMode()
	return CacheMode(mode), err
}

// KernelCacheDir returns the kernel cache folder, whatever the mode ("" when none can be named).
func KernelCacheDir() (string, error) {
	return readText(cKernelCacheDir)
}

// ---- contexts ---------------------------------------------------------------------------------

func (c *Context) do(call func(p *C.cblob_context) error) error {
	p, err := c.handle()
	if err != nil {
		return err
	}
	err = call(p)
	runtime.KeepAlive(c)
	return err
}

// SetDevice chooses the CUDA device this context's blobs use (0 unless set) and opens it. A
// context keeps the device it opened: choosing another then is StatusState.
func (c *Context) SetDevice(deviceIndex int) error {
	return c.do(func(p *C.cblob_context) error { return cContextSetDevice(p, C.int32_t(deviceIndex)) })
}

// Device returns the index of the context's CUDA device (0 unless set).
func (c *Context) Device() (int, error) {
	var v C.int32_t
	err := c.do(func(p *C.cblob_context) (err error) { v, err = cContextDevice(p); return })
	return int(v), err
}

// SetStream queues the context's device work on a caller's CUDA stream (a CUstream or
// cudaStream_t; 0 is the default stream). cblob first waits for work queued on the previous
// stream. The stream must stay valid until another is set or the context and every blob made in
// it are closed.
func (c *Context) SetStream(stream uintptr) error {
	// A driver object's address, never Go memory: its bits go to C as they are.
	pointer := *(*unsafe.Pointer)(unsafe.Pointer(&stream))
	return c.do(func(p *C.cblob_context) error { return cContextSetStream(p, pointer) })
}

// Stream returns the stream the context queues device work on (0 for the default stream).
func (c *Context) Stream() (uintptr, error) {
	var v unsafe.Pointer
	err := c.do(func(p *C.cblob_context) (err error) { v, err = cContextStream(p); return })
	return uintptr(v), err
}

// Synchronize waits until the device work this context queued (asynchronous pushes included)
// is done; it returns at once for a context that never used a GPU.
func (c *Context) Synchronize() error {
	return c.do(cContextSynchronize)
}

// Log returns the context's log: warnings that were not errors of the call that met them (a
// kernel cache folder that cannot be written, say), one per line, oldest first.
func (c *Context) Log() (string, error) {
	var text string
	err := c.do(func(p *C.cblob_context) (err error) {
		text, err = readText(func(buffer *C.char, size C.size_t) (C.size_t, error) { return cContextLog(p, buffer, size) })
		return
	})
	return text, err
}

// ClearLog empties the context's log.
func (c *Context) ClearLog() error {
	return c.do(cContextClearLog)
}

// WarmUpKernels compiles every GPU kernel ahead of first use and returns how many kernel
// families were compiled now (the others were cached). With computeCapability 0 it compiles for
// this context's device (opening it); with one such as 80 or 90, for that architecture into
// the disk cache, with no GPU needed (only NVRTC).
func (c *Context) WarmUpKernels(computeCapability int) (int, error) {
	var v C.int32_t
	err := c.do(func(p *C.cblob_context) (err error) {
		v, err = cKernelCacheWarmUp(p, C.int32_t(computeCapability))
		return
	})
	return int(v), err
}

// ---- blobs ------------------------------------------------------------------------------------

// GPUPtr returns a read-only device pointer to data or diff (Caffe's gpu_data / gpu_diff),
// copying from the host when the current copy is there; 0 for a blob with no elements. It stays
// valid as long as a host slice would (see the package documentation).
func (b *Blob) GPUPtr(part Part) (uintptr, error) {
	var v unsafe.Pointer
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cBlobGPUPtr(p, C.cblob_part(part)); return })
	return uintptr(v), err
}

// MutableGPUPtr returns a writable device pointer to data or diff (Caffe's mutable_gpu_data):
// it syncs like GPUPtr, then marks the device copy current, so host slices taken before are
// stale and the next View copies back.
func (b *Blob) MutableGPUPtr(part Part) (uintptr, error) {
	var v unsafe.Pointer
	err := b.do(func(p *C.cblob_blob) (err error) { v, err = cBlobMutableGPUPtr(p, C.cblob_part(part)); return })
	return uintptr(v), err
}

// SetGPUData makes a caller's device buffer the blob's device data (Caffe's set_gpu_data): the
// current copy is then on the device, and cblob never frees the buffer. ptr must be memory of
// the context's device covering sizeBytes (the library checks with the driver), allocated until
// release runs. release, if not nil, runs once when cblob lets go of the buffer (the blob is
// closed or given another buffer), on whatever thread drops the last holder; it must not panic
// and must not call into this package's functions on the same blob. On failure it never runs.
// The size rule and sharing are those of SetCPUData.
func (b *Blob) SetGPUData(ptr uintptr, sizeBytes uintptr, release func()) error {
	var callback C.cblob_release_fn
	var slot unsafe.Pointer
	if release != nil {
		slot = C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
		if slot == nil {
			return bindingError(StatusOutOfMemory, "no memory for the release callback's handle")
		}
		*(*C.uintptr_t)(slot) = C.uintptr_t(cgo.NewHandle(release))
		callback = C.cblob_release_fn(C.cbgoRunRelease)
	}
	// A device address, never Go memory: its bits go to C as they are.
	pointer := *(*unsafe.Pointer)(unsafe.Pointer(&ptr))
	err := b.do(func(p *C.cblob_blob) error {
		return cBlobSetGPUData(p, pointer, C.size_t(sizeBytes), callback, slot)
	})
	if err != nil && slot != nil {
		// On failure the library never calls release.
		cgo.Handle(*(*C.uintptr_t)(slot)).Delete()
		C.free(slot)
	}
	return err
}

// AsyncPush starts copying data or diff to the device on the context's stream and marks it
// synced at once (Caffe's async_gpu_push); the host copy must be the current one (StatusState
// otherwise). Until the context's Synchronize returns, the host copy must not change and the
// device copy may only be used by work on the same stream.
func (b *Blob) AsyncPush(part Part) error {
	return b.do(func(p *C.cblob_blob) error { return cBlobAsyncPush(p, C.cblob_part(part)) })
}
