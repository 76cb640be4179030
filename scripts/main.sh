#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The main job: set up, build the release preset, inspect the sample model that ships with cblob,
# and show what the library found on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/tools/cblob inspect samples/tiny_lenet.caffemodel
echo
./build/release/tools/cblob info
