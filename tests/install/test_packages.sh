#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the packages of this build with CPack (.tar.gz and the Debian packages libcblob1,
# libcblob-dev and cblob-tools), unpacks them with dpkg-deb and checks their contents, control
# fields and dependencies; then builds and runs the consumer against the unpacked Debian packages
# through their pkg-config file.
#
# usage: test_packages.sh BUILD_DIR VERSION C_COMPILER [EXTRA_FLAGS]
set -euo pipefail
build=$(cd "$1" && pwd) version=$2 cc=$3 extra=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
major=${version%%.*}
runtime=libcblob$major

(cd "$work" && cpack --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
arch=$(dpkg --print-architecture)
for deb in "${runtime}_${version}_$arch.deb" "libcblob-dev_${version}_$arch.deb" "cblob-tools_${version}_$arch.deb"; do
  [ -f "$work/out/$deb" ] || fail "cpack made no $deb ($(ls "$work/out"))"
done
tarball=$(ls "$work"/out/cblob-"$version"-*.tar.gz 2>/dev/null | head -1)
[ -n "$tarball" ] || fail "cpack made no .tar.gz"

field() { dpkg-deb -f "$work/out/${1}_${version}_$arch.deb" "$2"; }
# The regular files and links of a package, as paths without the leading "./", sorted.
contents() { dpkg-deb -c "$work/out/${1}_${version}_$arch.deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./||' | sort; }
expect_contents() {
  local package=$1; shift
  local got expected
  got=$(contents "$package" | sed -E 's|usr/lib/[a-z0-9_-]+-linux-gnu[a-z]*/|usr/lib/|')
  expected=$(printf '%s\n' "$@" | sort)
  [ "$got" = "$expected" ] || { printf 'got:\n%s\nexpected:\n%s\n' "$got" "$expected"; fail "$package: contents"; }
  echo "$package: $(echo "$got" | wc -l) files as expected"
}
expect_depends() { # package, then each dependency (an extended regular expression)
  local package=$1; shift
  local depends
  depends=$(field "$package" Depends)
  for dep in "$@"; do
    echo "$depends" | tr ',' '\n' | sed 's/^ *//' | grep -Eqx "$dep" || fail "$package: Depends '$depends' lacks $dep"
  done
  echo "$package: Depends: $depends"
}

# Each package also carries Debian's copyright file and changelog in its documentation folder.
docs() { echo "usr/share/doc/$1/copyright usr/share/doc/$1/changelog.gz"; }
# shellcheck disable=SC2046 # docs prints two paths
expect_contents "$runtime" usr/lib/libcblob.so.$major usr/lib/libcblob.so.$version $(docs "$runtime")
# shellcheck disable=SC2046
expect_contents libcblob-dev usr/include/cblob/cblob.h usr/include/cblob/dlpack.h usr/lib/libcblob.so \
  usr/lib/pkgconfig/cblob.pc usr/lib/cmake/cblob/cblobConfig.cmake usr/lib/cmake/cblob/cblobConfigVersion.cmake \
  usr/lib/cmake/cblob/cblobTargets.cmake "$(contents libcblob-dev | grep -o 'usr/lib/.*cblobTargets-[a-z]*\.cmake' |
                                            sed -E 's|usr/lib/[a-z0-9_-]+-linux-gnu[a-z]*/|usr/lib/|')" \
  usr/share/doc/cblob/dlpack/LICENSE usr/share/doc/cblob/dlpack/README.md $(docs libcblob-dev)
# shellcheck disable=SC2046
expect_contents cblob-tools usr/bin/cblob usr/share/man/man1/cblob.1.gz $(docs cblob-tools)

# Dependencies: the library's from dpkg-shlibdeps; cblob's own packages at exactly this version.
expect_depends "$runtime" 'libc6( \(>= [0-9.]+\))?' 'libblis4[a-z-]*( \(>= [0-9.]+\))?' 'libprotobuf-c1( \(>= [0-9.]+\))?'
expect_depends libcblob-dev "$runtime \(= $version\)"
expect_depends cblob-tools "$runtime \(= $version\)" 'libc6( \(>= [0-9.]+\))?'
[ "$(field "$runtime" Section)" = libs ] || fail "$runtime: Section $(field "$runtime" Section)"
[ "$(field libcblob-dev Section)" = libdevel ] || fail "libcblob-dev: Section $(field libcblob-dev Section)"

# The runtime package tells the packages linking it what to depend on, and has dpkg run ldconfig
# through the trigger (no maintainer scripts).
dpkg-deb -e "$work/out/${runtime}_${version}_$arch.deb" "$work/control"
grep -qx "libcblob $major $runtime (>= $version)" "$work/control/shlibs" ||
  fail "$runtime: shlibs is '$(cat "$work/control/shlibs")'"
grep -qx 'activate-noawait ldconfig' "$work/control/triggers" || fail "$runtime: no ldconfig trigger"
[ ! -e "$work/control/postinst" ] || fail "$runtime: has a postinst script"
echo "$runtime: shlibs: $(cat "$work/control/shlibs")"

# libcblob_mpi's packages, where the build found MPI (src/comm/mpi): as libcblob's, and depending on
# it and on Open MPI's library.
mpi_runtime=libcblob-mpi$major
if [ -f "$work/out/${mpi_runtime}_${version}_$arch.deb" ]; then
  # shellcheck disable=SC2046
  expect_contents "$mpi_runtime" usr/lib/libcblob_mpi.so.$major usr/lib/libcblob_mpi.so.$version $(docs "$mpi_runtime")
  # shellcheck disable=SC2046
  expect_contents libcblob-mpi-dev usr/include/cblob/mpi.h usr/lib/libcblob_mpi.so usr/lib/pkgconfig/cblob-mpi.pc \
    $(docs libcblob-mpi-dev)
  expect_depends "$mpi_runtime" 'libc6( \(>= [0-9.]+\))?' 'libopenmpi[0-9]+( \(>= [0-9.]+\))?' "$runtime \(>= $version\)"
  expect_depends libcblob-mpi-dev "$mpi_runtime \(= $version\)" "libcblob-dev \(= $version\)" libopenmpi-dev
  dpkg-deb -e "$work/out/${mpi_runtime}_${version}_$arch.deb" "$work/mpi_control"
  grep -qx "libcblob_mpi $major $mpi_runtime (>= $version)" "$work/mpi_control/shlibs" ||
    fail "$mpi_runtime: shlibs is '$(cat "$work/mpi_control/shlibs")'"
  grep -qx 'activate-noawait ldconfig' "$work/mpi_control/triggers" || fail "$mpi_runtime: no ldconfig trigger"
  [ ! -e "$work/mpi_control/postinst" ] || fail "$mpi_runtime: has a postinst script"
else
  echo "packages: no $mpi_runtime (this build has no libcblob_mpi)"
fi

# The program of the Debian package keeps no run path (Debian's policy; the library is in /usr/lib).
program=$work/tools_root/usr/bin/cblob
dpkg-deb -x "$work/out/cblob-tools_${version}_$arch.deb" "$work/tools_root"
if grep -Eq "RPATH|RUNPATH" <<<"$(readelf -d "$program")"; then
  fail "cblob-tools: /usr/bin/cblob keeps a run path: $(readelf -d "$program" | grep -E 'RPATH|RUNPATH')"
fi

# The .tar.gz holds all three packages' files.
tar tzf "$tarball" >"$work/tarball.txt"
grep -Eq '/lib(/[^/]+)?/libcblob\.so\.'"$version"'$' "$work/tarball.txt" || fail "the .tar.gz lacks the library"
for f in include/cblob/cblob.h include/cblob/dlpack.h bin/cblob pkgconfig/cblob.pc cmake/cblob/cblobConfig.cmake; do
  grep -q "$f\$" "$work/tarball.txt" || fail "the .tar.gz lacks $f"
done
echo "$(basename "$tarball"): complete"
# Unpacked anywhere, its program starts with a clean environment: its run path finds the library.
mkdir "$work/unpacked"
tar xzf "$tarball" -C "$work/unpacked"
env -i PATH=/usr/bin:/bin "$(find "$work/unpacked" -path '*/bin/cblob')" --version >/dev/null ||
  fail "the program of the unpacked .tar.gz does not start"

# The unpacked Debian packages work: the consumer builds with their pkg-config file and runs.
root=$work/root
for deb in "$work"/out/*.deb; do dpkg-deb -x "$deb" "$root"; done
pc=$(find "$root" -name cblob.pc)
libdir=$(dirname "$(dirname "$pc")")
# shellcheck disable=SC2046,SC2086 # the flags are words
"$cc" $extra "$here/consumer/consumer.c" $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs cblob) \
  -o "$work/consumer"
LD_LIBRARY_PATH=$libdir "$work/consumer"
echo "packages: OK"
