#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The whole test suite: set up, then build and run every CTest test twice, in the release
# preset and in the ASan+UBSan preset (which also runs the fuzz targets).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
for preset in release asan; do
  echo "== $preset =="
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
