#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs this build into a temporary prefix (cmake --install) and checks what a user gets:
# the files and links, the cblob program started from the prefix with a clean environment (its run
# path), a program built against it with pkg-config (as C and as C++) and another with
# find_package(cblob CONFIG), and the installed cblob program.
#
# usage: test_install.sh BUILD_DIR VERSION C_COMPILER CXX_COMPILER [EXTRA_FLAGS]
# EXTRA_FLAGS go to every compile and link (a sanitizer build's consumers need its runtime).
set -euo pipefail
build=$(cd "$1" && pwd) version=$2 cc=$3 cxx=$4 extra=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name "libcblob.so.$version" | head -1)")
[ -n "$libdir" ] || fail "no libcblob.so.$version installed"
echo "installed into $prefix (libraries in ${libdir#$prefix/})"

# The library and its links: libcblob.so -> libcblob.so.1 -> libcblob.so.1.x.y.
major=${version%%.*}
[ "$(readlink "$libdir/libcblob.so")" = "libcblob.so.$major" ] || fail "libcblob.so does not link to libcblob.so.$major"
[ "$(readlink "$libdir/libcblob.so.$major")" = "libcblob.so.$version" ] || fail "libcblob.so.$major does not link to libcblob.so.$version"
grep -q "Library soname: \[libcblob.so.$major\]" <<<"$(readelf -d "$libdir/libcblob.so.$version")" || fail "SONAME is not libcblob.so.$major"
if grep -Eq "RPATH|RUNPATH" <<<"$(readelf -d "$libdir/libcblob.so.$version")"; then
  fail "the installed library keeps a run path"
fi
# The program's one run path is its own prefix's library folder, relative to where it lies.
runpath=$(readelf -d "$prefix/bin/cblob" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
[ "$runpath" = "\$ORIGIN/../${libdir#$prefix/}" ] || fail "bin/cblob's run path is '$runpath', not \$ORIGIN/../${libdir#$prefix/}"
if grep -q "$build" <<<"$(readelf -d "$prefix/bin/cblob")"; then
  fail "bin/cblob keeps a path into the build tree"
fi
for f in include/cblob/cblob.h include/cblob/dlpack.h bin/cblob; do
  [ -f "$prefix/$f" ] || fail "$f is not installed"
done
[ -f "$libdir/pkgconfig/cblob.pc" ] || fail "cblob.pc is not installed"
[ -f "$libdir/cmake/cblob/cblobConfig.cmake" ] || fail "cblobConfig.cmake is not installed"
[ -f "$libdir/cmake/cblob/cblobConfigVersion.cmake" ] || fail "cblobConfigVersion.cmake is not installed"

# The installed program starts from its prefix with a clean environment (no LD_LIBRARY_PATH, no
# ldconfig), loads the installed library and converts the sample; its manual page names the
# configured prefix's header.
clean=(env -i PATH=/usr/bin:/bin)
loaded=$("${clean[@]}" ldd "$prefix/bin/cblob" | sed -n "s/^[[:space:]]*libcblob\.so\.$major => \([^ ]*\) .*/\1/p")
[ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$libdir/libcblob.so.$major")" ] ||
  fail "bin/cblob does not load $libdir/libcblob.so.$major (ldd: '$loaded')"
"${clean[@]}" "$prefix/bin/cblob" convert "$here/../../samples/tiny_lenet.caffemodel" -o "$work/sample.npz" ||
  fail "the installed bin/cblob does not run with a clean environment"
[ -s "$work/sample.npz" ] || fail "the installed bin/cblob wrote no sample.npz"
configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
zcat "$prefix/share/man/man1/cblob.1.gz" | grep -qF "$configured/include/cblob/cblob.h" ||
  fail "cblob(1) does not name $configured/include/cblob/cblob.h"

export LD_LIBRARY_PATH=$libdir

# pkg-config, from C and from C++.
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion cblob)" = "$version" ] || fail "pkg-config says version $(pkg-config --modversion cblob)"
flags=$(pkg-config --cflags --libs cblob)
echo "pkg-config --cflags --libs cblob: $flags"
# shellcheck disable=SC2086 # the flags are words
"$cc" -std=c99 -Wall -Wextra -Werror $extra "$here/consumer/consumer.c" $flags -o "$work/consumer_c"
"$work/consumer_c"
# shellcheck disable=SC2086
"$cxx" -x c++ -Wall -Wextra -Werror $extra "$here/consumer/consumer.c" $flags -o "$work/consumer_cxx"
"$work/consumer_cxx"
grep -q "$libdir/libcblob.so.$major" <<<"$(ldd "$work/consumer_c")" || fail "the consumer did not load the installed library"

# find_package(cblob CONFIG), in a project of its own.
cmake -S "$here/consumer" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer"
grep -q "$prefix" "$work/cmake/CMakeCache.txt" || fail "find_package did not find the installed cblob"

# Another major version is refused (SameMajorVersion).
if cmake -S "$here/consumer" -B "$work/cmake2" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCBLOB_WANTED=2.0 \
     >"$work/cmake2.log" 2>&1; then
  fail "find_package(cblob 2.0) accepted cblob $version"
fi
grep -q "cblob" "$work/cmake2.log" || fail "find_package(cblob 2.0) failed without naming cblob"

# The installed program runs against the installed library.
"$prefix/bin/cblob" info >"$work/info.txt"
head -3 "$work/info.txt"
echo "install: OK"
