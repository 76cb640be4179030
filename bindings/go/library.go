// SPDX-License-Identifier: BSD-2-Clause
package cblob

// #include <cblob/cblob.h>
import "C"

// Version returns the loaded library's version, "major.minor.patch".
func Version() string {
	return cVersion()
}

// ABIVersion returns the ABI version the loaded library implements. Its major equals
// ABIVersionMajor and its minor is at least ABIVersionMinor when the library can serve this
// package.
func ABIVersion() (major, minor int) {
	v := uint32(cABIVersion())
	return int(v >> 16), int(v & 0xffff)
}

// BLASInfo returns the CPU BLAS in use and its threading.
func BLASInfo() string {
	return cBlasInfo()
}

// CPUFeatures returns the vector extensions the CPU kernels selected at load time.
func CPUFeatures() string {
	return cCPUFeatures()
}
