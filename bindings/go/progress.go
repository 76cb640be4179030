// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): Context.SetProgress, whose function
// needs a callback the library calls (progress_callback.go) and a table that keeps it.

package cblob

/*
#include <stdint.h>
#include <cblob/cblob.h>

// Exported by progress_callback.go.
extern int32_t cbgoProgress(void *user_data, int64_t done, int64_t total);

// The key of a progress function, as the user_data the library passes back (never dereferenced).
static inline void *cbgo_progress_key(uintptr_t key) { return (void *)key; }
*/
import "C"

import (
	"runtime"
	"sync"
)

// A context's progress function, by key. The library is handed the key, not a Go pointer: a
// context handle outlives its Context (blobs keep it alive inside the library), and a call in
// progress keeps the callback it started with, so a key whose function is gone must still be
// safe to pass back: runProgress lets the call go on.
var (
	progressMu    sync.Mutex
	progressFuncs = map[uintptr]*progressFunc{}
	progressNext  uintptr
)

type progressFunc struct {
	mu sync.Mutex // two calls through one context call fn one at a time
	fn func(done, total int64) bool
}

// progressEntry is a Context's hold on its function's key; the key is forgotten when the
// function is replaced or the Context is garbage collected.
type progressEntry struct {
	key uintptr
}

func forgetProgress(e *progressEntry) {
	progressMu.Lock()
	delete(progressFuncs, e.key)
	progressMu.Unlock()
}

// runProgress calls the function of a key; a missing key (replaced, or its Context collected)
// lets the call go on. A panic must not unwind through the library: it stops the call.
func runProgress(key uintptr, done, total int64) (goOn bool) {
	progressMu.Lock()
	f := progressFuncs[key]
	progressMu.Unlock()
	if f == nil {
		return true
	}
	defer func() {
		if r := recover(); r != nil {
			goOn = false
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fn(done, total)
}

// SetProgress sets the function told how far the context's calls that read or write files are,
// and asked whether they may go on (nil: none, the default). Those are the saves and loads of
// blobs, blob vectors, models and files to and from paths (Blob.SaveNpy, OpenNet, OpenFile,
// ...), through the context of the handle they read into or write from.
//
// fn(done, total): done is the bytes read or written so far, total the bytes the call will read
// or write in all (-1 while it cannot know, as for a pipe read to its end). It is called first
// with done 0, then each time at least a MiB more is done, and last with done == total: for a
// write just before the output takes its place. Returning true lets the call go on; false stops
// it, and the call fails with StatusCancelled, changing nothing (a file being written is not put
// in place, an existing file keeps its bytes).
//
// fn runs on the goroutine that made the call, inside the call: it must not use the blobs,
// models or files the call uses. Calls through one context from several goroutines run it one
// at a time. A panic in fn is recovered (it must not unwind through the library) and stops the
// call, which fails with StatusCancelled. A call in progress keeps the function it started with;
// once the function is replaced, or the Context is garbage collected, calls go on without it
// (blobs made in the context keep using the function after Close, as they keep the context).
func (c *Context) SetProgress(fn func(done, total int64) bool) error {
	p, err := c.handle()
	if err != nil {
		return err
	}
	var entry *progressEntry
	callback := C.cblob_progress_fn(nil)
	userData := C.cbgo_progress_key(0)
	if fn != nil {
		progressMu.Lock()
		progressNext++
		entry = &progressEntry{key: progressNext}
		progressFuncs[entry.key] = &progressFunc{fn: fn}
		progressMu.Unlock()
		callback = C.cblob_progress_fn(C.cbgoProgress)
		userData = C.cbgo_progress_key(C.uintptr_t(entry.key))
	}
	err = cContextSetProgress(p, callback, userData)
	runtime.KeepAlive(c)
	if err != nil {
		if entry != nil {
			forgetProgress(entry)
		}
		return err
	}
	if c.progress != nil {
		forgetProgress(c.progress)
		runtime.SetFinalizer(c.progress, nil)
	}
	c.progress = entry
	if entry != nil {
		runtime.SetFinalizer(entry, forgetProgress)
	}
	return nil
}
