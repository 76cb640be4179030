#!/usr/bin/env bash
# The main job: set up, build the release preset, and run the cblob program.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/tools/cblob info
