#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs what a fresh Debian 12 machine lacks to build and test cblob.
# Idempotent: packages already present are not reinstalled, so a second run is quick.
# Run as root (CI and the README's commands do).
set -euo pipefail

# What the main job (scripts/main.sh) needs: configure, build the library and the cblob program.
main_packages=(
  # build
  cmake ninja-build gcc pkg-config
  # code generator
  python3 python3-jinja2 python3-yaml
  # CPU math: BLIS, pthread variant (the OpenMP default would drag in libgomp's thread pool)
  libblis-dev libblis-pthread-dev
  # Caffe formats
  libprotobuf-c-dev protobuf-c-compiler
  # JSON (layer parameters, .npy folders' index) and zlib (npz: CRC-32, deflated members)
  libjansson-dev zlib1g-dev
)
# What the tests, benchmarks, packaging and bindings add (scripts/test.sh).
test_packages=(
  # the sanitizer preset (clang), the C++ consumer of cblob.h
  g++ clang libclang-rt-14-dev
  # an independent protobuf implementation to cross-check against
  protobuf-compiler python3-protobuf
  # tests and tools; JSON Schema validation of the layer JSON (`cblob inspect --json` schema 2)
  python3-numpy python3-jsonschema abigail-tools binutils file dpkg-dev
  # tests/tools/one_source.py: each input of the cblob program opened once
  strace
  # the peer benchmark (bench/bench_math) opens OpenBLAS at run time, as Caffe's CPU blob uses it
  libopenblas0-pthread
  # packaging: lintian checks the .deb files; nuget packs the C# binding's .nupkg; groff renders
  # the manual page cblob(1) in its test
  lintian nuget groff-base
  # bindings (Python: virtual environments, which scripts/python-env.sh fills from PyPI)
  golang-go mono-mcs mono-complete nunit-console python3-venv
  # libcblob_mpi (src/comm/mpi), its tests under mpirun and its benchmark: Open MPI
  openmpi-bin libopenmpi-dev
  # the Python binding's Comm.from_mpi(mpi4py communicator), tested in the NumPy 1 environment,
  # which sees Debian's packages
  python3-mpi4py
)

# usage: setup.sh          everything (scripts/test.sh)
#        setup.sh --main   only what building the library and the program needs (scripts/main.sh)
packages=("${main_packages[@]}")
[ "${1:-}" = --main ] || packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Rust comes from rustup (not Debian): the binding tests need it already on the machine.
if [ "${1:-}" != --main ]; then
  if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
  command -v cargo >/dev/null 2>&1 || echo "setup: warning: cargo not found; the Rust binding tests will be skipped" >&2
fi

# Real Caffe (Debian 11's build, into ~/.cache/cblob, nothing system-wide) for the formats_caffe.*
# cross-checks: about 80 MB downloaded, 35 s on this project's VM, once; later runs find it. A
# failure (no network, a mirror without bullseye) is not setup's: those tests then skip, saying why.
# CBLOB_NO_CAFFE=1 leaves it out.
if [ "${1:-}" != --main ] && [ "${CBLOB_NO_CAFFE:-0}" != 1 ]; then
  if ! timeout 600 "$(dirname "$0")/caffe-env.sh" >/dev/null; then
    echo "setup: warning: real Caffe could not be fetched; the formats_caffe tests will be skipped" >&2
  fi
fi

# The first python3 on PATH may be a pyenv shim without Jinja2; name one that has it.
"$(dirname "$0")/find-python.sh" >/dev/null
echo "setup: done ($("$(dirname "$0")/find-python.sh"))"
