// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Error type and ErrClosed (Status's
// Error method, which makes it a target for errors.Is, is generated: types_generated.go).

package cblob

/*
#include <stdlib.h>
#include <cblob/cblob.h>
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Error is a failed cblob call: the status the library returned and the message it recorded,
// which names the C function and says what was wrong, with its two parts as the library keeps
// them (never cut out of the text): Function, the public C function whose call failed
// ("cblob_model_open_file", however deep inside the library the failure was found), and Detail,
// the message without it (Message is "<Function>: <Detail>"). Errors made by this package rather
// than the library have messages that start with "cblob (Go):" and no Function.
type Error struct {
	Status   Status
	Message  string
	Function string
	Detail   string
}

func (e *Error) Error() string {
	return e.Message + " (" + e.Status.String() + ")"
}

// Unwrap returns the status, so that errors.Is(err, StatusShape) matches.
func (e *Error) Unwrap() error {
	return e.Status
}

// ErrClosed is returned by methods called after Close.
var ErrClosed = errors.New("cblob: use of a closed handle")

// newError takes the error the C wrapper copied (cbgo_message: the message, the function and
// the detail, one after the other), and frees the copy.
func newError(status C.cblob_status, copied *C.char) error {
	if copied == nil {
		text := "(the library's message could not be copied: out of memory)"
		return &Error{Status: Status(status), Message: text, Detail: text}
	}
	defer C.free(unsafe.Pointer(copied))
	var parts [3]string
	at := unsafe.Pointer(copied)
	for i := range parts {
		parts[i] = C.GoString((*C.char)(at))
		at = unsafe.Add(at, len(parts[i])+1)
	}
	return &Error{Status: Status(status), Message: parts[0], Function: parts[1], Detail: parts[2]}
}

// newMessageError takes a message another library of cblob's copied (libcblob_mpi's, which has
// no function apart), and frees the copy.
func newMessageError(status C.cblob_status, message *C.char) error {
	text := "(the library's message could not be copied: out of memory)"
	if message != nil {
		text = C.GoString(message)
		C.free(unsafe.Pointer(message))
	}
	return &Error{Status: Status(status), Message: text, Detail: text}
}

func bindingError(status Status, message string) error {
	return &Error{Status: status, Message: "cblob (Go): " + message, Detail: message}
}
