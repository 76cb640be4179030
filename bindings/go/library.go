// SPDX-License-Identifier: BSD-2-Clause
// Hand-written (not generated from codegen/bindings/): ABIVersion, split into major and minor.

package cblob

// #include <cblob/cblob.h>
import "C"

// ABIVersion returns the ABI version the loaded library implements. Its major equals
// ABIVersionMajor and its minor is at least ABIVersionMinor when the library can serve this
// package.
func ABIVersion() (major, minor int) {
	v := uint32(cABIVersion())
	return int(v >> 16), int(v & 0xffff)
}
