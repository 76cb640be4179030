#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The bindings' call-overhead benchmark: in one run, times one cheap cblob call (count) from
# Rust, Go and C# against an empty C call (libbench_ffi) from the same language, and prints the
# ratios with their targets. A benchmark, not a test: it never fails on a slow ratio.
#
# usage: run.sh LIBCBLOB INCLUDE_DIR BENCH_FFI_DIR OUT_DIR [--quick]
# (cmake --build --preset release --target bench_bindings runs it with this build's paths)
set -euo pipefail
library=$1 include=$2 ffi_dir=$3 out=$4 quick=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
lib_dir=$(dirname "$library")
mkdir -p "$out"
export LD_LIBRARY_PATH="$lib_dir:$ffi_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
results=()

run_rust() {
  local cargo
  cargo=$(command -v cargo || echo "${CARGO_HOME:-$HOME/.cargo}/bin/cargo")
  [ -x "$cargo" ] || { echo "rust: skipped (cargo not found)"; return; }
  (cd "$here/rust" && CBLOB_LIB_DIR="$lib_dir" BENCH_FFI_DIR="$ffi_dir" CARGO_TARGET_DIR="$out/rust" \
     "$cargo" build --release --offline --locked --quiet)
  results+=("$("$out/rust/release/cblob-bench-ffi" $quick | grep '^RESULT')")
}

run_go() {
  command -v go >/dev/null || { echo "go: skipped (go not found)"; return; }
  (cd "$here/go" && GOFLAGS=-mod=mod GOPROXY=off GOCACHE="$out/go-cache" GOPATH="$out/gopath" \
     PKG_CONFIG_PATH="$(dirname "$lib_dir")/pkgconfig-uninstalled" CGO_CFLAGS="-I$include" CGO_LDFLAGS="-L$lib_dir -L$ffi_dir -Wl,-rpath,$lib_dir -Wl,-rpath,$ffi_dir" \
     go build -o "$out/bench-go" .)
  results+=("$("$out/bench-go" $quick | grep '^RESULT')")
}

run_csharp() {
  command -v mcs >/dev/null && command -v mono >/dev/null || { echo "csharp: skipped (mcs or mono not found)"; return; }
  mcs -nologo -target:library -unsafe -optimize+ -langversion:7.2 -out:"$out/CBlob.dll" "$here/../../bindings/csharp/CBlob/"*.cs
  mcs -nologo -optimize+ -r:"$out/CBlob.dll" -out:"$out/bench-csharp.exe" "$here/csharp/Bench.cs"
  results+=("$(mono "$out/bench-csharp.exe" $quick | grep '^RESULT')")
}

run_rust
run_go
run_csharp

echo
echo "one cheap call (blob count) through each binding against an empty C call from the same"
echo "language; raw: the same call through the language's bare FFI declaration. Best of several"
echo "batches, rounds alternating."
printf '%-8s %11s %11s %12s %8s %8s\n' language "empty (ns)" "raw (ns)" "binding (ns)" ratio target
for line in "${results[@]}"; do
  read -r _ language empty raw count <<<"$line"
  case $language in rust) target=1.5 ;; *) target=1.2 ;; esac
  ratio=$(awk -v a="$count" -v b="$empty" 'BEGIN { printf "%.2f", a / b }')
  verdict=$(awk -v r="$ratio" -v t="$target" 'BEGIN { print (r < t) ? "met" : "MISSED" }')
  printf '%-8s %11s %11s %12s %8s %8s  %s\n' "$language" "$empty" "$raw" "$count" "${ratio}x" "<${target}x" "$verdict"
done
