#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CTest driver of the Go binding: go vet and go test (tests and examples; the GPU tests once more
# against the test doubles of the CUDA libraries) with Debian's Go, offline, against this build's
# header and libcblob. The build cache lives in CBLOB_OUT_DIR.
source "$(dirname "$0")/../common.sh"
go=$(find_program go /usr/lib/go/bin) || skip "go not found (install golang-go)"
export GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on CGO_ENABLED=1
export GOCACHE="$CBLOB_OUT_DIR/cache" GOPATH="$CBLOB_OUT_DIR/gopath"
# The package finds cblob through pkg-config (#cgo pkg-config: cblob): here the build tree's
# cblob-uninstalled.pc, which pkg-config prefers (this build's header, the staged DLPack header,
# and its library). The run path lets the test binaries load that library.
: "${CBLOB_PKG_CONFIG_DIR:?}"
export PKG_CONFIG_PATH="$CBLOB_PKG_CONFIG_DIR" CGO_LDFLAGS="-Wl,-rpath,$CBLOB_LIBRARY_DIR"
unset CGO_CFLAGS
cd "$BINDINGS_DIR/go"
"$go" version
unformatted=$("$("$go" env GOROOT)/bin/gofmt" -l .)
[ -z "$unformatted" ] || { echo "not gofmt-formatted: $unformatted"; exit 1; }
"$go" vet ./...
# -count=1: results depend on libcblob, which go's test cache does not track.
"$go" test -count=1 -v ./...
# The collectives on two ranks (internal/mpitworanks).
if mpi_ranks_or_skip; then
  "$go" build -o "$CBLOB_OUT_DIR/mpitworanks" ./internal/mpitworanks
  # shellcheck disable=SC2086 # CBLOB_MPIEXEC holds the launcher and its flags
  timeout 120 $CBLOB_MPIEXEC -np 2 "$CBLOB_OUT_DIR/mpitworanks"
fi
run_with_fake_gpu "$go" test -count=1 -v -run GPU ./...
