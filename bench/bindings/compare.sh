#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The bindings' call-overhead benchmark (run.sh's programs) for two versions of the bindings side
# by side in one run: the working tree's and a git revision's (the baseline). Both are built
# against the same libcblob; then each language's two programs run in turns, REPEAT times each,
# alternating (so a noisy neighbour slows both alike), and the medians of their ratios binding /
# empty (min-max beside) are printed. A benchmark, not a test: it never fails.
#
# usage: compare.sh BASELINE_REV LIBCBLOB INCLUDE_DIR BENCH_FFI_DIR OUT_DIR [REPEAT]
#   e.g. compare.sh main build/release/src/libcblob.so.1 include build/release/bench build/bench-compare 7
set -euo pipefail
rev=$1 library=$(realpath "$2") include=$(realpath "$3") ffi_dir=$(realpath "$4") out=$5 repeat=${6:-7}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lib_dir=$(dirname "$library")
mkdir -p "$out"
out=$(realpath "$out")
export LD_LIBRARY_PATH="$lib_dir:$ffi_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cargo=$(command -v cargo || echo "${CARGO_HOME:-$HOME/.cargo}/bin/cargo")

# Two trees holding the bindings and the benchmark's programs: the baseline's and this one's.
rm -rf "$out/baseline" "$out/current"
mkdir -p "$out/baseline" "$out/current"
git -C "$root" archive "$rev" bindings bench/bindings | tar -x -C "$out/baseline"
(cd "$root" && tar -c --exclude=target bindings bench/bindings) | tar -x -C "$out/current"

build() {
  local tree=$1 dir=$out/$1/bench/bindings
  (cd "$dir/rust" && CBLOB_LIB_DIR="$lib_dir" BENCH_FFI_DIR="$ffi_dir" CARGO_TARGET_DIR="$out/$tree-rust" \
     "$cargo" build --release --offline --locked --quiet)
  (cd "$dir/go" && GOFLAGS=-mod=mod GOPROXY=off GOCACHE="$out/go-cache" GOPATH="$out/gopath" \
     PKG_CONFIG_PATH="$(dirname "$lib_dir")/pkgconfig-uninstalled" CGO_CFLAGS="-I$include" CGO_LDFLAGS="-L$lib_dir -L$ffi_dir -Wl,-rpath,$lib_dir -Wl,-rpath,$ffi_dir" \
     go build -o "$out/$tree-go" .)
  mkdir -p "$out/$tree-cs"
  mcs -nologo -target:library -unsafe -optimize+ -langversion:7.2 -out:"$out/$tree-cs/CBlob.dll" \
      "$out/$tree/bindings/csharp/CBlob/"*.cs
  mcs -nologo -optimize+ -r:"$out/$tree-cs/CBlob.dll" -out:"$out/$tree-cs/bench.exe" "$dir/csharp/Bench.cs"
}
build baseline
build current

run() {  # tree language -> "empty binding"
  case $2 in
    rust) "$out/$1-rust/release/cblob-bench-ffi" ;;
    go) "$out/$1-go" ;;
    csharp) mono "$out/$1-cs/bench.exe" ;;
  esac | awk '/^RESULT/ { print $3, $NF }'
}

declare -A ratios
for ((i = 0; i < repeat; i++)); do
  for language in rust go csharp; do
    for tree in baseline current; do
      read -r empty binding < <(run "$tree" "$language")
      ratios[$tree.$language]+="$(awk -v b="$binding" -v e="$empty" 'BEGIN { printf "%.4f ", b / e }')"
    done
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f (%.3f-%.3f)", m, v[1], v[NR] }'; }
echo
echo "blob count through each binding / an empty C call from the same language: medians of $repeat"
echo "interleaved runs (each run: run.sh's best of 10 batches over 5 alternating rounds), min-max"
printf '%-8s %-28s %-28s\n' language "baseline ($rev)" "current (working tree)"
for language in rust go csharp; do
  printf '%-8s %-28s %-28s\n' "$language" "$(median <<<"${ratios[baseline.$language]}")" "$(median <<<"${ratios[current.$language]}")"
done
