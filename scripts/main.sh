#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The main job: set up what building needs, build the library and the cblob program (release
# preset, no tests or benchmarks: scripts/test.sh builds those), inspect the sample model that
# ships with cblob, and show what the library found on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --main
# The release preset sets BUILD_TESTING and CBLOB_BUILD_BENCH back on at its next configure.
cmake --preset release -DBUILD_TESTING=OFF -DCBLOB_BUILD_BENCH=OFF >/dev/null
cmake --build --preset release --target cblob cblob_tool
./build/release/tools/cblob inspect samples/tiny_lenet.caffemodel
echo
./build/release/tools/cblob info
