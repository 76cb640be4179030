#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A Go program built against an installed cblob the way a Go user builds one: this build installed
# into a temporary prefix, a module of its own requiring example.com/cblob (replaced by the
# binding's folder, as there is no public host), and nothing but PKG_CONFIG_PATH naming the
# prefix: no CGO_CFLAGS or CGO_LDFLAGS, since the package asks pkg-config (#cgo pkg-config: cblob).
# The same build without PKG_CONFIG_PATH must fail, so that it is pkg-config that found cblob.
#
# usage: test_go_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) source_dir=$(cd "$2" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
go=$(command -v go || { [ -x /usr/lib/go/bin/go ] && echo /usr/lib/go/bin/go; }) ||
  { echo "SKIPPED: go not found (install golang-go)"; exit 77; }
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name cblob.pc)")/..
libdir=$(cd "$libdir" && pwd)

mkdir "$work/consumer"
cat >"$work/consumer/go.mod" <<EOF
module example.com/consumer

go 1.19

require example.com/cblob v1.3.6

replace example.com/cblob => $source_dir/bindings/go
EOF
cat >"$work/consumer/main.go" <<'EOF'
// A program using the installed cblob through its Go package.
package main

import (
	"fmt"

	"example.com/cblob"
)

func main() {
	ctx, err := cblob.NewContext()
	if err != nil {
		panic(err)
	}
	defer ctx.Close()
	blob, err := cblob.NewBlob(ctx, cblob.DTypeFloat32, 2, 3)
	if err != nil {
		panic(err)
	}
	defer blob.Close()
	data, _ := cblob.MutableData[float32](blob)
	for i := range data {
		data[i] = float32(i) - 2
	}
	sum, _ := blob.Asum(cblob.PartData)
	shape, _ := blob.ShapeString()
	fmt.Println(shape, sum)
}
EOF

# Go's own caches in the work folder (one per build: a cached cgo package would hide what
# pkg-config says); offline; and no cblob location other than PKG_CONFIG_PATH.
build_consumer() { # CACHE_NAME, then VAR=value words
  local cache=$1; shift
  (cd "$work/consumer" &&
   env -u CGO_CFLAGS -u CGO_CPPFLAGS -u CGO_LDFLAGS -u CPATH -u C_INCLUDE_PATH -u LIBRARY_PATH -u LD_LIBRARY_PATH \
     GOCACHE="$work/$cache" GOPATH="$work/gopath" GOPROXY=off GOFLAGS=-mod=mod CGO_ENABLED=1 \
     "$@" "$go" build -o "$work/consumer/consumer" .)
}
build_consumer cache PKG_CONFIG_PATH="$libdir/pkgconfig" || fail "go build with PKG_CONFIG_PATH=$libdir/pkgconfig failed"
[ "$(LD_LIBRARY_PATH=$libdir "$work/consumer/consumer")" = "2 3 (6) 9" ] || fail "the consumer printed something else"
grep -q "$libdir/libcblob.so" <<<"$(LD_LIBRARY_PATH=$libdir ldd "$work/consumer/consumer")" ||
  fail "the consumer did not load the installed library"
echo "go build with PKG_CONFIG_PATH only: the consumer runs against $libdir"

if env -u PKG_CONFIG_PATH pkg-config --exists cblob 2>/dev/null; then
  echo "(a cblob is installed on this machine: not checking that the build fails without PKG_CONFIG_PATH)"
else
  rm -f "$work/consumer/consumer"
  if build_consumer cache-without PKG_CONFIG_PATH= >"$work/without.log" 2>&1; then
    fail "go build found cblob without PKG_CONFIG_PATH"
  fi
  grep -q "cblob" "$work/without.log" || { cat "$work/without.log"; fail "the failed build does not name cblob"; }
  echo "without PKG_CONFIG_PATH the build fails: $(grep -m1 cblob "$work/without.log")"
fi
echo "go consumer: OK"
