#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs the Python binding's benchmark (bench_python.py) in the NumPy 2 environment of
# scripts/python-env.sh, against the cblob package that `pip install ./bindings/python` builds
# there, and this build's libbench_ffi.so. A benchmark, not a test.
# usage: run.sh BUILD_DIR [bench_python.py options]   (BUILD_DIR: build/release, with bench_ffi built)
set -euo pipefail
build=$(cd "$1" && pwd); shift
root=$(cd "$(dirname "$0")/../.." && pwd)
env_dir=$("$root/scripts/python-env.sh" "$build/bindings/python/env" | tail -n 1)
python=$env_dir/numpy2/bin/python
"$python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall --no-build-isolation \
    --config-settings=build-dir="$build/bindings/python/skbuild" "$root/bindings/python"
cd "$build"
exec "$python" "$root/bench/python/bench_python.py" --ffi "$build/bench/libbench_ffi.so" "$@"
