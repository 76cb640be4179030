// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the package's documentation.

// Package cblob is the Go binding of cblob: Caffe-style blobs (N-d arrays holding data and diff,
// synced lazily between host and GPU) behind cblob's versioned C ABI.
//
// The package covers the whole C API: blobs (Blob), Caffe's files (Model for .caffemodel,
// ToProto and NewBlobFromProto for BlobProto, BlobVectorToProto and BlobVectorFromProto,
// DetectProto), the GPU (GPUProbe, Context.SetDevice, Blob.GPUPtr, ...), and NeoML's blob
// operations (NewTensor and the other creators, Dim, CopyIn, Clone, Transposed, Merge, Split,
// Fill, Add, Window, Map), DLPack (Blob.ToDLPack, NewBlobFromDLPack), and arenas and
// collectives (NewArena, Comm from NewMPIWorldComm or NewNCCLComm, Request, FinalizeMPI).
//
// # Handles
//
// A Context, Blob or Model owns one hold on a library handle. Close drops it; calling Close
// again does nothing, and a method called after Close returns ErrClosed. A finalizer drops the
// hold of a handle that becomes unreachable without Close, but finalizers run late or not at
// all: call Close (defer it) to free native memory when you are done. Blobs taken from a model
// (Model.LayerBlob), windows (Blob.Window) and a window's parent or owner are holders of their
// own, each closed on its own; memory lives while any holder does.
//
// A Mapping (Map) is a scoped view of a range: Close ends it, and closing the Blob it was made
// through ends the blob's open mappings first. A mapping never closed keeps its blob (an open
// mapping holds it, in the library and in Go): finalizers never end mappings, because ending one
// changes the blob, which another goroutine may be using.
//
// A DLPackTensor (ToDLPack) owns a DLPack tensor: Close runs its deleter once, unless Release
// handed the pointer to a consumer or NewBlobFromDLPack gave the tensor to cblob (a refused import
// leaves it with the DLPackTensor). A tensor viewing a blob's memory counts as a blob sharing it.
//
// # Errors
//
// Every method that can fail returns an error. Errors from the library are *Error values with
// the Status and the library's message, which the binding copies inside the same C call as the
// failure (a goroutine can move to another OS thread between two cgo calls, and the library
// keeps one message per thread). *Error unwraps to its Status, so
//
//	errors.Is(err, cblob.StatusShape)
//
// tests for a status, and errors.As(err, &e) with e of type *cblob.Error gives the message.
//
// # Host memory
//
// View, MutableView, Data, Diff, MutableData and MutableDiff return slices over the blob's host
// memory, with no copy. Such a slice lives in C memory, which the garbage collector neither
// moves nor tracks: it stays valid only while the blob is open and is not reshaped past its
// capacity, given another buffer (SetCPUData), or made to share another blob's memory. The
// slice does not keep the blob reachable; keep the blob alive (a deferred Close does) while the
// slice is in use. Go memory is never handed to the library beyond a call: SetCPUData copies.
//
// # Goroutines
//
// Distinct blobs may be used from different goroutines at once. One blob needs one goroutine at
// a time (or a lock), except for its pure getters (Count, Shape, DType, ...), which several
// goroutines may call at once; Close must not race with any other call on the same blob. Blobs
// sharing memory (Share), a window and its parent, and every *Blob holding one library blob
// (two LayerBlob calls for the same blob, say) count as one blob for this rule. Models follow
// the same rule; contexts too (Mode, Device and Stream are their pure getters). The kernel cache
// and the GPU libraries' loading are process-wide and safe from any goroutine.
//
// # GPU
//
// The library loads and works on machines without a GPU. The calls that need one fail there with
// the status that says why (StatusNoDriver, StatusStubDriver, StatusNoDevice, ...), which
// IsNoGPU recognises. Device pointers and CUDA streams are uintptr values: addresses on the
// device or driver objects, never Go memory.
//
// # Building
//
// The package asks pkg-config for cblob (#cgo pkg-config: cblob): with libcblob-dev installed,
// or cblob installed under /usr or /usr/local, go build needs no environment variables. For
// another install prefix, name its pkg-config folder: PKG_CONFIG_PATH=<prefix>/lib/pkgconfig.
// For a cblob build tree, name the folder of the cblob-uninstalled.pc it writes (pkg-config
// prefers it): PKG_CONFIG_PATH=<build>/pkgconfig-uninstalled; a program built that way finds the
// library at run time through LD_LIBRARY_PATH=<build>/src or CGO_LDFLAGS="-Wl,-rpath,<build>/src".
//
// The module path is example.com/cblob, a placeholder: cblob has no public host. A program
// requires it and points it at a copy of this folder with a replace directive in its go.mod
// (replace example.com/cblob => /path/to/cblob/bindings/go); README.md here says how a fork
// that publishes the module renames it.

package cblob
