#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# A fuzzing campaign over every libFuzzer target of the asan preset (tests/fuzz), longer than the
# few seconds CTest gives each: each target runs until it has made RUNS executions or spent SECONDS,
# whichever comes first, under ASan+UBSan, starting from the committed seeds and from what earlier
# campaigns found (build/asan/tests/fuzz/found_<target>, kept between runs). It prints one line
# per target (executions, seconds, executions per second, result) for docs/benchmarks.md's
# "Fuzzing" section, and leaves any crash's input in build/asan/tests/fuzz/crash-<target>-*.
#
#   scripts/fuzz-campaign.sh [RUNS] [SECONDS] [TARGET...]
#
# RUNS: 10000000 by default (issue 27's figure); SECONDS: 3600 per target by default. Build first:
#   cmake --preset asan && cmake --build --preset asan
# New inputs worth keeping can be merged into the committed seeds so that CI replays them:
#   build/asan/tests/fuzz/fuzz_model -merge=1 tests/fuzz/corpus/model build/asan/tests/fuzz/found_model
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10000000}
seconds=${2:-3600}
shift $(($# > 2 ? 2 : $#))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(blob blob_vector model npy npz safetensors edit_save)
fuzz="$here/build/asan/tests/fuzz"
status=0
printf '%-12s %12s %9s %9s  %s\n' target executions seconds 'exec/s' result
for target in "${targets[@]}"; do
  binary="$fuzz/fuzz_$target"
  if [ ! -x "$binary" ]; then
    echo "fuzz-campaign: $binary is missing: build the asan preset with clang first" >&2
    exit 2
  fi
  seeds="$here/tests/fuzz/corpus/$target"
  [ "$target" = edit_save ] && seeds="$here/tests/fuzz/corpus/model"
  found="$fuzz/found_$target"
  mkdir -p "$found"
  log=$(mktemp)
  start=$(date +%s)
  "$binary" -runs="$runs" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$fuzz/crash-$target-" "$found" "$seeds" >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - start))
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  result="0 crashes"
  if [ $rc -ne 0 ]; then
    result="FAILED (exit $rc): $(grep -m1 -E 'ERROR|runtime error|SUMMARY' "$log")"
    status=1
    cp "$log" "$fuzz/crash-$target.log"
  fi
  printf '%-12s %12s %9s %9s  %s\n' "$target" "${executions:-?}" "$elapsed" \
    "$(( ${executions:-0} / (elapsed > 0 ? elapsed : 1) ))" "$result"
  rm -f "$log"
done
exit $status
