#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# One command that proves cblob on a real GPU (issue 25): on a machine with an NVIDIA GPU, its
# driver and the CUDA toolkit (Debian or Ubuntu, no internet needed), it
#   1. builds what it needs in build/gpu-check, or uses that folder as it is when it was prepared
#      elsewhere and carried here (--prepare, below);
#   2. runs every GPU suite on the device: the suites tests/CMakeLists.txt registers without the
#      driver double, listed in <build>/gpu_suites.txt, each test in its own process;
#   3. runs tests/dlpack/test_torch_cuda.py (DLPack's stream rules with PyTorch) where PyTorch
#      sees the GPU;
#   4. runs bench_gpu (each kernel family against a device-to-device copy, the generated sums
#      against cuBLAS's, the narrow-row crossover, issue 25's hazards as regression checks, host
#      cost per call) and bench_jit (NVRTC cold compiles, disk and memory cache hits);
#   5. prints one compact summary (the end of the output), in at most 8 minutes. The whole log goes
#      to $OUT/gpu-check.log when OUT is set, else to <build>/gpu-check.log.
# It exits 0 when every test passed (or skipped with its reason) and no hazard reproduced, and 1
# at once, saying so, on a machine where cblob cannot use a GPU (every test would only skip).
#
# usage: scripts/gpu-check.sh [--build-dir DIR]          the check, on a machine with a GPU
#        scripts/gpu-check.sh --prepare [--build-dir DIR] build DIR here (libraries the device
#                                may lack bundled in DIR/bundled-lib), to carry to a device
#                                machine whose image cannot build cblob (no BLIS, protobuf-c...)
#        scripts/gpu-check.sh --compile-only [--build-dir DIR]
#                                every step but the device's: builds (a no-op when built), checks
#                                that each suite starts and answers on the toolkit's stub driver,
#                                runs bench_gpu as a smoke run on the driver double where the tests
#                                were built. The CTest test gpu_check.compile_only runs this mode.
set -u
cd "$(dirname "$0")/.."
root=$PWD
mode=check
build=build/gpu-check
while [ $# -gt 0 ]; do
  case "$1" in
    --compile-only) mode=compile-only ;;
    --prepare) mode=prepare ;;
    --build-dir)
      [ $# -ge 2 ] || { echo "gpu-check: --build-dir needs a folder (see --help)" >&2; exit 2; }
      build=$2; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$build" in /*) ;; *) build=$root/$build ;; esac
started=$(date +%s)
deadline=$((started + 7 * 60 + 30)) # 8 minutes at most, with room for the summary
log=${OUT:-$build}/gpu-check.log
mkdir -p "$(dirname "$log")" "$build"
: > "$log"
work=$(mktemp -d "${TMPDIR:-/tmp}/cblob-gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
summary=()
failed=0

say() { echo "$*" | tee -a "$log"; }
note() { summary+=("$*"); }
elapsed() { echo $(( $(date +%s) - started )); }
left() { echo $(( deadline - $(date +%s) )); }
# Runs a command with its output into the log only; returns its status.
logged() { echo "\$ $*" >> "$log"; "$@" >> "$log" 2>&1; }

# ---- build -------------------------------------------------------------------------------------
# The targets the check runs: the library, the program (for its report), every GPU suite's test
# executable and the two benchmarks.
targets() {
  local suites=()
  if [ -f "$build/gpu_suites.txt" ]; then
    while IFS=$'\t' read -r suite _ _; do
      case "$suite" in ''|'#'*) continue ;; esac
      suites+=("test_$suite")
    done < "$build/gpu_suites.txt"
  fi
  echo cblob cblob_tool bench_gpu bench_jit "${suites[@]}"
}

# A build's stamp: the sources it was built from, to compare with the sources beside it later.
source_files() {
  find src cuda include generated templates tests/gpu tests/dlpack tests/fake_cuda bench/bench_gpu.c bench/bench_jit.c \
       -type f \( -name '*.c' -o -name '*.h' -o -name '*.j2' -o -name '*.cu' \) 2>/dev/null | LC_ALL=C sort
}

# The release preset's flags (CMakePresets.json): what CI tests is what the device measures.
configure_and_build() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    logged cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG" -DBUILD_TESTING=ON -DCBLOB_BUILD_BENCH=ON || return 1
  fi
  # shellcheck disable=SC2046 # targets are words
  logged cmake --build "$build" --target $(targets)
}

# The libraries the build links that a plain Debian or Ubuntu image may lack, copied beside it.
bundle_libraries() {
  mkdir -p "$build/bundled-lib"
  ldd "$build/src/libcblob.so.1" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
      *) cp -L "$lib" "$build/bundled-lib/" ;;
    esac
  done
}

cmake_home() { sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null; }

build_step() {
  local t0=$SECONDS
  local stale=
  [ "$mode" != prepare ] && [ -f "$build/gpu-check-sources.sha256" ] &&
    stale=$(sha256sum --quiet -c "$build/gpu-check-sources.sha256" 2>/dev/null | grep -c ': FAILED' || true)
  # Prepared elsewhere and carried here: used as it is when it was built from these sources (the
  # device's image may lack ninja or a compiler, even where the checkout has the same path), or
  # when its CMake files name another folder, which cannot be rebuilt here.
  if [ -n "$stale" ] && { [ "$stale" = 0 ] || [ "$(cmake_home)" != "$root" ]; }; then
    note "build: carried $build (prepared $(sed -n 's/^# prepared //p' "$build/gpu-check-sources.sha256"))$(
      [ "$stale" = 0 ] && echo ", sources unchanged" || echo "; $stale source files changed since: REBUILD IT")"
    [ "$stale" = 0 ] || failed=1
    return 0
  fi
  if ! configure_and_build; then
    note "build: FAILED in $build (the log's end says why; a device image without cblob's build dependencies needs a"
    note "       build prepared elsewhere: scripts/gpu-check.sh --prepare, then carry build/gpu-check)"
    tail -n 15 "$log"
    return 1
  fi
  if [ "$mode" = prepare ]; then
    bundle_libraries
    { echo "# prepared $(date -u +%Y-%m-%dT%H:%MZ) from $(git rev-parse --short HEAD 2>/dev/null || echo 'a tree without git')"
      source_files | xargs sha256sum; } > "$build/gpu-check-sources.sha256"
  fi
  note "build: $build, $((SECONDS - t0)) s"
}

# ---- the environment of a run ------------------------------------------------------------------
# CUDA's libraries where the loader's default search (the SONAME, $CUDA_HOME/lib64,
# /usr/local/cuda/lib64) does not find them: the toolkit's other folders, or pip's nvidia-* wheels
# (PyTorch's image has NCCL only there).
find_cuda_library() {
  local name=$1 dir
  for dir in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
    [ -e "$dir/$name" ] && { echo "$dir/$name"; return; }
  done
  ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}' | grep . && return
  python3 - "$name" <<'EOF' 2>/dev/null
import glob, site, sys
for base in site.getsitepackages() + [site.getusersitepackages()]:
    found = sorted(glob.glob(f"{base}/nvidia/*/lib/{sys.argv[1]}"))
    if found:
        print(found[0])
        break
EOF
}

set_up_environment() {
  export LD_LIBRARY_PATH="$build/src${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Of the libraries bundled by --prepare, only those this machine lacks: its own stay in use for
  # every other program (Python's ssl, PyTorch).
  if [ -d "$build/bundled-lib" ]; then
    mkdir -p "$work/lib"
    local lib
    for lib in "$build"/bundled-lib/*; do
      ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$(basename "$lib") " || ln -s "$lib" "$work/lib/"
    done
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$work/lib"
  fi
  export CBLOB_KERNEL_CACHE_DIR="$work/kernels" # never the user's cache
  if [ "$mode" = compile-only ]; then
    export CBLOB_CUDA_DRIVER=${CBLOB_CUDA_DRIVER:-${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so}
    return
  fi
  local variable name path
  for pair in CBLOB_NVRTC_LIBRARY:libnvrtc.so.13 CBLOB_CUBLAS_LIBRARY:libcublas.so.13 CBLOB_NCCL_LIBRARY:libnccl.so.2; do
    variable=${pair%%:*} name=${pair#*:}
    [ -n "${!variable:-}" ] && continue
    path=$(find_cuda_library "$name")
    [ -n "$path" ] && export "$variable=$path"
  done
}

describe_machine() {
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  say "== gpu-check ($mode), $(date -u +%Y-%m-%dT%H:%MZ), $(uname -m), ${gpu:-nvidia-smi: no GPU}"
  note "machine: ${gpu:-no GPU seen by nvidia-smi}$([ "$mode" = compile-only ] && echo "; driver: ${CBLOB_CUDA_DRIVER}")"
  "$build/tools/cblob" info >> "$log" 2>&1
  local line
  while read -r line; do note "  $line"; done < <("$build/tools/cblob" info 2>&1 | grep -E '^(gpu|nvrtc|cublas)' | cut -c1-160)
}

# ---- the GPU suites ----------------------------------------------------------------------------
# One test in its own process with its suite's environment; prints "status<TAB>suite.test".
run_test() {
  local suite=$1 exe=$2 environment=$3 name=$4 out status
  out="$work/tests/$suite.$name.log"
  (
    IFS=';'
    # shellcheck disable=SC2086 # the suite's VAR=value pairs, split at ';'
    exec env $environment timeout 180 "$exe" "$name"
  ) > "$out" 2>&1
  status=$?
  case "$status" in 0) echo "pass	$suite.$name" ;; 77) echo "skip	$suite.$name" ;; *) echo "FAIL	$suite.$name ($status)" ;; esac
}
# The same for a line of the list: suite, executable, environment, test, separated by tabs.
run_line() {
  local suite exe environment name
  IFS=$'\t' read -r suite exe environment name <<< "$1"
  [ "$environment" = - ] && environment=
  run_test "$suite" "$exe" "$environment" "$name"
}
export -f run_test run_line
export work

suites_step() {
  mkdir -p "$work/tests"
  local list="$work/tests.txt" suite exe environment names=0 started_suites=0
  : > "$list"
  while IFS=$'\t' read -r suite exe environment; do
    case "$suite" in ''|'#'*) continue ;; esac
    if [ ! -x "$build/$exe" ] || ! "$build/$exe" --list > "$work/$suite.list" 2>> "$log"; then
      note "suite $suite: its executable does not start ($build/$exe)"
      failed=1
      continue
    fi
    started_suites=$((started_suites + 1))
    while read -r name; do
      # '-' for no environment: read(1) would merge two tabs.
      [ -n "$name" ] && printf '%s\t%s\t%s\t%s\n' "$suite" "$build/$exe" "${environment:--}" "$name" >> "$list"
      names=$((names + 1))
    done < "$work/$suite.list"
  done < "$build/gpu_suites.txt"
  if [ "$mode" = compile-only ]; then
    # Each suite's first test, on the stub: it must start and skip with its reason (or pass, for
    # suites that need no device).
    awk -F'\t' '!seen[$1]++' "$list" > "$work/first.txt" && mv "$work/first.txt" "$list"
  fi
  local results="$work/results.txt"
  local limit
  limit=$(left)
  [ "$limit" -gt 0 ] || limit=1
  timeout "$limit" xargs -d '\n' -P "${GPU_CHECK_JOBS:-6}" -n 1 bash -c 'run_line "$1"' _ < "$list" > "$results"
  local passed skipped failures ran
  passed=$(grep -c '^pass' "$results"); skipped=$(grep -c '^skip' "$results"); failures=$(grep -c '^FAIL' "$results")
  ran=$(wc -l < "$results")
  cat "$results" >> "$log"
  for f in "$work"/tests/*.log; do { echo "---- $(basename "$f" .log)"; cat "$f"; } >> "$log"; done 2>/dev/null
  if [ "$mode" = compile-only ]; then
    note "suites: $started_suites start and list $names tests; one test of each run on the stub: $passed passed, $skipped skipped, $failures failed"
  else
    note "suites: $started_suites suites, $names tests: $passed passed, $skipped skipped, $failures failed$(
      [ "$ran" -lt "$names" ] && echo ", $((names - ran)) not run (out of time)")"
  fi
  [ "$failures" = 0 ] && [ "$ran" = "$(wc -l < "$list")" ] || failed=1
  local test rest count reason
  while read -r _ test rest; do
    note "  FAILED $test $rest: $(grep -v '^$' "$work/tests/${test}.log" | tail -n 2 | paste -sd' ' | cut -c1-220)"
  done < <(grep '^FAIL' "$results" | head -n 20)
  # Why tests skipped, most frequent first (on a GPU, only what the machine lacks: two GPUs, NCCL...).
  while read -r count reason; do
    note "  skipped $count: $reason"
  done < <(cat "$work"/tests/*.log 2>/dev/null | sed -n 's/^SKIPPED: //p' | cut -c1-110 | sort | uniq -c | sort -rn | head -n 5)
}

# ---- PyTorch, the benchmarks -------------------------------------------------------------------
torch_step() {
  local output status
  output=$(timeout 120 python3 tests/dlpack/test_torch_cuda.py "$build/src/libcblob.so.1" 2>&1)
  status=$?
  echo "$output" >> "$log"
  case "$status" in
    0) note "pytorch: $(echo "$output" | tail -n 1)" ;;
    77) note "pytorch: skipped: $(echo "$output" | sed -n 's/^SKIPPED: //p' | head -n 1)" ;;
    *) note "pytorch: FAILED ($status): $(echo "$output" | grep -E '^FAIL|Error' | head -n 3 | paste -sd' ')"; failed=1 ;;
  esac
}

bench_step() {
  local name=$1 limit=$2 output status
  shift 2
  output=$(env "$@" timeout "$limit" "$build/bench/$name" 2>&1)
  status=$?
  { echo "---- $name"; echo "$output"; } >> "$log"
  echo "$output" # the measurements themselves belong in the output
  case "$status" in
    0) ;;
    1) [ "$name" = bench_gpu ] && note "$name: a hazard REPRODUCED, or a step failed (above)"; failed=1 ;;
    124) note "$name: stopped after $limit s"; failed=1 ;;
    *) note "$name: exited with $status"; failed=1 ;;
  esac
  local line
  while read -r line; do note "$line"; done < <(echo "$output" | sed -n "s/^summary: /$name: /p")
  echo "$output" | grep -q '^summary: ' || [ "$name" != bench_gpu ] || note "$name: $(echo "$output" | head -n 1 | cut -c1-160)"
}

# ---- the run -----------------------------------------------------------------------------------
if [ "$mode" = prepare ]; then
  rm -rf "$build/bundled-lib"
  build_step || exit 1
  size=$(du -sm "$build" | cut -f1)
  echo "gpu-check: prepared $build ($size MiB). On the device machine, carry it and run scripts/gpu-check.sh"
  for line in "${summary[@]}"; do echo "  $line"; done
  exit 0
fi

build_step || { for line in "${summary[@]}"; do echo "$line"; done; exit 1; }
[ -f "$build/gpu_suites.txt" ] || { echo "gpu-check: $build/gpu_suites.txt is missing: not a cblob build with tests"; exit 1; }
set_up_environment
describe_machine
if [ "$mode" = check ] && ! "$build/tools/cblob" info 2>/dev/null | grep -q '^gpu: usable'; then
  # Every GPU test would skip and the check would prove nothing: say so instead of passing.
  echo
  echo "== gpu-check summary (check, $(elapsed) s; full log: $log)"
  for line in "${summary[@]}"; do echo "$line"; done
  echo "gpu-check: cblob cannot use a GPU on this machine (above); the check needs one. Here, run"
  echo "           scripts/gpu-check.sh --compile-only (or --prepare, to carry the build to one)"
  echo "RESULT: FAIL"
  exit 1
fi
suites_step
if [ "$mode" = compile-only ]; then
  fake=$build/tests/fake_cuda
  if [ -e "$fake/libcuda.so.1" ]; then
    output=$(env CBLOB_BENCH_GPU_SMOKE=1 CBLOB_CUDA_DRIVER="$fake/libcuda.so.1" CBLOB_CUBLAS_LIBRARY="$fake/libcublas.so.13" \
                 CBLOB_NCCL_LIBRARY="$fake/libnccl.so.2" CBLOB_KERNEL_CACHE=memory timeout 120 "$build/bench/bench_gpu" 2>&1)
    status=$?
    { echo "---- bench_gpu, smoke run on the driver double"; echo "$output"; } >> "$log"
    note "bench_gpu smoke run on the driver double: $([ $status = 0 ] && echo "every section ran" || echo "FAILED ($status)")"
    [ $status = 0 ] || failed=1
  fi
  output=$(timeout 60 "$build/bench/bench_gpu" 2>&1)
  status=$?
  echo "$output" >> "$log"
  note "bench_gpu on the stub: $(echo "$output" | head -n 1 | cut -c1-160)"
  [ $status = 0 ] || failed=1
  note "not run (compile-only): the suites on a device, PyTorch, the measurements"
else
  torch_step
  [ "$(left)" -gt 60 ] && bench_step bench_gpu $(( $(left) - 45 ))
  [ "$(left)" -gt 20 ] && bench_step bench_jit $(( $(left) - 5 ))
fi

echo
echo "== gpu-check summary ($mode, $(elapsed) s; full log: $log)"
for line in "${summary[@]}"; do echo "$line"; done
if [ "$failed" = 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
exit "$failed"
