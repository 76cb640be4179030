// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): the Error type and ErrClosed.

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
// which names the C function and says what was wrong. Errors made by this package rather than
// the library have messages that start with "cblob (Go):".
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	return e.Message + " (" + e.Status.String() + ")"
}

// Unwrap returns the status, so that errors.Is(err, StatusShape) matches.
func (e *Error) Unwrap() error {
	return e.Status
}

// Error returns the status's C enumerator name; it makes Status a target for errors.Is.
func (s Status) Error() string {
	return s.String()
}

// ErrClosed is returned by methods called after Close.
var ErrClosed = errors.New("cblob: use of a closed handle")

// newError takes the message the C wrapper copied, and frees the copy.
func newError(status C.cblob_status, message *C.char) error {
	text := "(the library's message could not be copied: out of memory)"
	if message != nil {
		text = C.GoString(message)
		C.free(unsafe.Pointer(message))
	}
	return &Error{Status: Status(status), Message: text}
}

func bindingError(status Status, message string) error {
	return &Error{Status: status, Message: "cblob (Go): " + message}
}
