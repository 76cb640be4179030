// Package cblob is the Go binding of cblob: Caffe-style blobs (N-d arrays holding data and diff,
// synced lazily between host and GPU) behind cblob's versioned C ABI.
//
// # Handles
//
// A Context or Blob owns one hold on a library handle. Close drops it; calling Close again does
// nothing, and a method called after Close returns ErrClosed. A finalizer calls Close for a
// handle that becomes unreachable without it, but finalizers run late or not at all: call Close
// (defer it) to free native memory when you are done.
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
// sharing memory (Share) count as one blob for this rule.
//
// # Building
//
// cgo compiles against cblob/cblob.h and links -lcblob. For a cblob that is not installed, point
// cgo at it: CGO_CFLAGS=-I<cblob>/include CGO_LDFLAGS="-L<build>/src -Wl,-rpath,<build>/src".
package cblob
