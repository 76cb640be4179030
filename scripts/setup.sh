#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs what a fresh Debian 12 machine lacks to build and test cblob.
# Idempotent: packages already present are not reinstalled, so a second run is quick.
# Run as root (CI and the README's commands do).
set -euo pipefail

packages=(
  # build
  cmake ninja-build gcc g++ clang libclang-rt-14-dev pkg-config
  # code generator
  python3 python3-jinja2 python3-yaml
  # CPU math: BLIS, pthread variant (the OpenMP default would drag in libgomp's thread pool)
  libblis-dev libblis-pthread-dev
  # Caffe formats, and an independent protobuf implementation to cross-check against
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler python3-protobuf
  # JSON (layer parameters, safetensors headers) and zip (npz) for model exports
  libjansson-dev libzip-dev
  # tests and tools
  python3-numpy abigail-tools binutils file dpkg-dev
  # JSON Schema validation of `cblob inspect --json` and the library's layer JSON; venvs for
  # PyPI-only checkers (safetensors)
  python3-jsonschema python3-venv
  # bindings
  golang-go mono-mcs mono-complete nunit-console
)

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

# Rust comes from rustup (not Debian): it must already be on the machine.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || echo "setup: warning: cargo not found; the Rust binding tests will be skipped" >&2

# The first python3 on PATH may be a pyenv shim without Jinja2; name one that has it.
"$(dirname "$0")/find-python.sh" >/dev/null
echo "setup: done ($("$(dirname "$0")/find-python.sh"))"
