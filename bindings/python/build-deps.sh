#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The toolchain and libraries the binary wheel is built with, so that it runs on glibc 2.17
# (manylinux2014 = manylinux_2_17: RHEL/CentOS 7 and 8, Amazon Linux 2, Ubuntu 18.04 and 20.04,
# Debian 10 and 11) although this machine has glibc 2.36. build-wheel.sh calls it; DEPS_DIR keeps
# what it made, so only the first run builds.
#   DEPS_DIR/bin/cc        zig cc (PyPI's ziglang, pinned in requirements-test.txt), linking
#                          against glibc 2.17's symbols only: libcblob and the program
#   DEPS_DIR/prefix        BLIS built by that compiler from Debian's source package (Debian 12's
#                          libblis needs glibc 2.29), its x86_64 family made of only the
#                          sub-configurations that matter to the level-1 kernels cblob calls
#                          (bli_?axpyv, ?dotv, ?scalv, ?asumv): zen3, zen2, zen and haswell, which
#                          use the AVX2 kernels of kernels/zen/1, and generic for every other
#                          x86-64; no BLAS or CBLAS layer (cblob calls BLIS's own API)
#   DEPS_DIR/prefix/include  beside blis.h, Debian's headers of protobuf-c, Jansson and zlib, so
#                          that no other header of /usr/include (glibc 2.36's) comes before zig's
#                          glibc headers; the wheel bundles Debian's own protobuf-c and
#                          Jansson binaries, which need nothing newer than glibc 2.14
#   DEPS_DIR/licenses      for add_licenses.py: libblis.copyright (BLIS's LICENSE) and zig.copyright
#                          (zig's, whose runtime zig cc links into every ELF file it makes)
# usage: build-deps.sh DEPS_DIR ZIG      prints DEPS_DIR's absolute path last
set -euo pipefail
glibc=2.17
blis_source=blis=1.1-2         # Debian 13's source package (the mirror serves no tarball of Debian 12's)
blis_tarball=blis_1.1.orig.tar.gz
blis_sha256=847c035809b8994c077ade737a4813601db96c4cf0d903d08ba6a9b8ee0fe03e
blis_configurations="zen3 zen2 zen haswell generic"
deps=$(mkdir -p "$1" && cd "$1" && pwd)
zig=$2

# Rebuilt only when what this script does (its lines but comments) or the compiler changes.
stamp=$( (grep -v '^ *#' "$0"; "$zig" version) | sha256sum | cut -c1-16)
if [ -f "$deps/.stamp" ] && [ "$(cat "$deps/.stamp")" = "$stamp" ]; then
  echo "$deps"
  exit 0
fi
rm -rf "${deps:?}/bin" "$deps/prefix" "$deps/licenses" "$deps/build" "$deps/.stamp"
mkdir -p "$deps/bin" "$deps/prefix/include" "$deps/licenses" "$deps/build" "$deps/src"

# The compiler. zig keeps its caches (glibc's stub libraries, compiler-rt) in DEPS_DIR, not
# in $HOME. The version queries (which CMake and BLIS's configure run) go without -target: clang
# rejects the glibc suffix of the triple there.
cat > "$deps/bin/cc" <<EOF
#!/bin/sh
# zig cc for x86_64 Linux with glibc $glibc (made by bindings/python/build-deps.sh)
export ZIG_GLOBAL_CACHE_DIR="$deps/zig-cache" ZIG_LOCAL_CACHE_DIR="$deps/zig-cache"
case "\$*" in --version|-v|-dumpversion|-V) exec "$zig" cc "\$@";; esac
exec "$zig" cc -target x86_64-linux-gnu.$glibc "\$@"
EOF
chmod +x "$deps/bin/cc"

# BLIS's source: apt-get source from this machine's Debian mirror, with a private source list
# and private package lists (the machine's apt configuration is left as it is).
if ! echo "$blis_sha256  $deps/src/$blis_tarball" | sha256sum --check --status 2>/dev/null; then
  # shellcheck disable=SC1091 # the machine's
  . /etc/os-release
  # shellcheck disable=SC2016 # $(REPO_URI) is apt's format, not the shell's
  mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Created-By: Packages' "Release: $VERSION_CODENAME" \
           'Component: main' | sed -n 1p)
  [ -n "$mirror" ] || { echo "build-deps: no Debian mirror for $VERSION_CODENAME in apt's sources" >&2; exit 1; }
  apt_dir=$deps/apt
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  echo "deb-src $mirror trixie main" > "$apt_dir/sources.list"
  apt_options=(-q -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
               -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
  [ "$(id -u)" = 0 ] && apt_options+=(-o APT::Sandbox::User=root)   # writes into DEPS_DIR
  apt-get "${apt_options[@]}" update >&2
  # --tar-only: the upstream tarball, checked against the signed index's hash (and ours below)
  (cd "$deps/src" && apt-get "${apt_options[@]}" source --download-only --tar-only "$blis_source" >&2)
  rm -rf "$apt_dir"
  echo "$blis_sha256  $deps/src/$blis_tarball" | sha256sum --check --status ||
    { echo "build-deps: $blis_tarball is not the pinned one (sha256 $blis_sha256)" >&2; exit 1; }
fi

# BLIS: its x86_64 family narrowed to our sub-configurations in config_registry (a family BLIS
# does not know would never query the CPU: frame/base/bli_arch.c names the families that do),
# and the pthreads threading of Debian's libblis-pthread, built niced on at most two cores.
tar -xzf "$deps/src/$blis_tarball" -C "$deps/build"
blis=$(ls -d "$deps"/build/blis-*)
sed -i "s/^x86_64:.*/x86_64: $blis_configurations/" "$blis/config_registry"
grep -q "^x86_64: $blis_configurations\$" "$blis/config_registry"
(cd "$blis" &&
 ./configure --prefix="$deps/prefix" --enable-threading=pthreads --disable-blas --disable-cblas \
     --disable-static --enable-shared CC="$deps/bin/cc" PYTHON=/usr/bin/python3 x86_64 >&2 &&
 nice make -j2 >&2 && make install >&2)
{
  echo "cblob.libs/libblis-*.so.4 is BLIS ${blis##*/blis-}, built from Debian's source package"
  echo "$blis_source by bindings/python/build-deps.sh; BLIS's LICENSE follows."
  echo
  cat "$blis/LICENSE"
} > "$deps/licenses/libblis.copyright"
rm -rf "$deps/build"
{
  echo "Every ELF file of the wheel holds parts of zig's runtime (compiler-rt, the C start files),"
  echo "linked in by zig cc (PyPI's ziglang $("$zig" version)); zig's LICENSE follows."
  echo
  cat "$(dirname "$zig")/LICENSE"
} > "$deps/licenses/zig.copyright"

# Debian's headers of the libraries the wheel takes from Debian (protobuf-c, Jansson) or from
# the system it runs on (zlib, which manylinux lets a wheel use).
mkdir -p "$deps/prefix/include/protobuf-c"
cp /usr/include/protobuf-c/protobuf-c.h "$deps/prefix/include/protobuf-c/"
cp /usr/include/jansson.h /usr/include/jansson_config.h /usr/include/zlib.h /usr/include/zconf.h \
   "$deps/prefix/include/"
echo "$stamp" > "$deps/.stamp"
echo "$deps"
