// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the helpers every call uses: two-call
// buffers, strings and paths in C memory, lists of handles.

package cblob

/*
#include <stdlib.h>
#include <cblob/cblob.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// readSized runs a call of the two-call convention (a nil buffer of size 0 asks for the
// length) and returns what it wrote; nul says whether the text ends with a NUL the length leaves
// out. It asks again while the result grows between the two calls (a log another goroutine's
// blobs write to, say).
func readSized(nul bool, call func(buffer unsafe.Pointer, size C.size_t) (C.size_t, error)) ([]byte, error) {
	length, err := call(nil, 0)
	for err == nil {
		size := int(length)
		if nul {
			size++
		}
		if size == 0 {
			return []byte{}, nil
		}
		buffer := make([]byte, size)
		length, err = call(unsafe.Pointer(&buffer[0]), C.size_t(size))
		if errors.Is(err, StatusOutOfRange) {
			length, err = call(nil, 0)
			continue
		}
		if err == nil {
			return buffer[:length], nil
		}
	}
	return nil, err
}

// readText returns a string the library writes with the two-call convention.
func readText(call func(buffer *C.char, size C.size_t) (C.size_t, error)) (string, error) {
	bytes, err := readSized(true, func(buffer unsafe.Pointer, size C.size_t) (C.size_t, error) {
		return call((*C.char)(buffer), size)
	})
	return string(bytes), err
}

// readBytes returns serialized bytes the library writes with the two-call convention.
func readBytes(call func(buffer *C.uint8_t, size C.size_t) (C.size_t, error)) ([]byte, error) {
	return readSized(false, func(buffer unsafe.Pointer, size C.size_t) (C.size_t, error) {
		return call((*C.uint8_t)(buffer), size)
	})
}

// cString copies a string argument into C memory for one call; the caller frees it with
// C.free. A string with a NUL inside is refused: the library would read only up to it.
func cString(text, what string) (*C.char, error) {
	if strings.IndexByte(text, 0) >= 0 {
		return nil, bindingError(StatusInvalidArgument, fmt.Sprintf("%s %q contains a NUL byte", what, text))
	}
	return C.CString(text), nil
}

// freeString frees what cString made.
func freeString(text *C.char) {
	C.free(unsafe.Pointer(text))
}

// noBytes is where bytesPtr points for an empty slice: the library takes a size of 0 but
// not a NULL pointer.
var noBytes [1]byte

// bytesPtr points C at a byte slice for the duration of one call.
func bytesPtr(data []byte) *C.uint8_t {
	if len(data) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(&noBytes[0]))
	}
	return (*C.uint8_t)(unsafe.Pointer(&data[0]))
}

// handles returns the blobs' handles for one call that takes an array of them (nil for none),
// or ErrClosed; the caller keeps the blobs alive (runtime.KeepAlive) until the call returns.
func handles(blobs []*Blob) ([]*C.cblob_blob, **C.cblob_blob, error) {
	list := make([]*C.cblob_blob, len(blobs))
	for i, b := range blobs {
		p, err := b.handle()
		if err != nil {
			return nil, nil, err
		}
		list[i] = p
	}
	if len(list) == 0 {
		return list, nil, nil
	}
	return list, &list[0], nil
}

// boolInt is a boolean as the C ABI takes it.
func boolInt(value bool) C.int32_t {
	if value {
		return 1
	}
	return 0
}

// withOptionalString is withString for a string the library may take as NULL: "" passes NULL.
func withOptionalString(text, what string, call func(ctext *C.char) error) error {
	if text == "" {
		return call(nil)
	}
	return withString(text, what, call)
}

// int32s copies ints into C's int32 for one call (nil for none); the caller keeps the copy alive
// until the call returns.
func int32s(values []int) ([]C.int32_t, *C.int32_t) {
	list := make([]C.int32_t, len(values))
	for i, v := range values {
		list[i] = C.int32_t(v)
	}
	if len(list) == 0 {
		return list, nil
	}
	return list, &list[0]
}

// ints converts a list of int64 indices the library returned to ints.
func ints(values []int64) []int {
	out := make([]int, len(values))
	for i, v := range values {
		out[i] = int(v)
	}
	return out
}

// readInt64s returns an int64 array the library writes with the two-call convention (a nil
// array of room 0 asks for the count).
func readInt64s(call func(values *C.int64_t, room C.int64_t) (C.int64_t, error)) ([]int64, error) {
	count, err := call(nil, 0)
	if err != nil || count == 0 {
		return []int64{}, err
	}
	values := make([]C.int64_t, count)
	count, err = call(&values[0], count)
	if err != nil {
		return nil, err
	}
	out := make([]int64, count)
	for i := range out {
		out[i] = int64(values[i])
	}
	return out, nil
}
