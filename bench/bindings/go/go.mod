// SPDX-License-Identifier: BSD-2-Clause
module cblob-bench-ffi

go 1.19

require cblob v0.0.0

replace cblob => ../../../bindings/go
