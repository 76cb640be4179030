#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The whole test suite: set up, then build and run every CTest test twice, in the release
# preset and in the ASan+UBSan preset (which also runs the fuzz targets). ctest's output passes
# through scripts/ctest_summary.py, which leaves out the lines naming each skipped test and ends
# with one line per skip reason and the number of tests it covers; the exit status is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
python=$(scripts/find-python.sh)
for preset in release asan; do
  echo "== $preset =="
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  junit=$PWD/build/$preset/Testing/junit.xml
  rm -f "$junit"
  set +e
  ctest --preset "$preset" --output-junit "$junit" | "$python" scripts/ctest_summary.py "$junit" --label "$preset"
  statuses=("${PIPESTATUS[@]}")
  set -e
  [ "${statuses[0]}" = 0 ] || exit "${statuses[0]}"   # ctest's: a test failed
  [ "${statuses[1]}" = 0 ] || exit "${statuses[1]}"   # the summary's: no JUnit file
done
