#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the Debian packages as a packager does (a tree of its own configured with
# -DCMAKE_INSTALL_PREFIX=/usr, library and program only, then cpack) and runs lintian on them:
# no error, and no warning that docs/packaging.md ("Lintian warnings accepted") does not justify.
# Also checks what lintian does not: the multiarch folder, the ldconfig trigger in place of
# maintainer scripts, debug info kept in the build tree while the packaged files are stripped,
# DEP-5 copyright text equal to LICENSE, the changelog's version, and the maintainer option.
#
# usage: test_lintian.sh SOURCE_DIR VERSION C_COMPILER
set -euo pipefail
source_dir=$(cd "$1" && pwd) version=$2 cc=$3
fail() { echo "FAIL: $*"; exit 1; }
command -v lintian >/dev/null 2>&1 || { echo "SKIPPED: lintian not found (scripts/setup.sh installs it)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
major=${version%%.*}
runtime=libcblob$major
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF -DCBLOB_BUILD_BENCH=OFF >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "configure failed"; }
cmake --build "$work/build" --parallel 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build failed"; }
package() { # the Debian packages of the tree into $work/out
  rm -rf "$work/out"
  (cd "$work" && cpack -G DEB --config "$work/build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1) ||
    { cat "$work/cpack.log"; fail "cpack failed"; }
}
package
debs=("$work/out/${runtime}_${version}_$arch.deb" "$work/out/libcblob-dev_${version}_$arch.deb"
      "$work/out/cblob-tools_${version}_$arch.deb")
ls "${debs[@]}" >/dev/null
# libcblob_mpi's packages too, where the tree found MPI.
mpi_debs=("$work/out/libcblob-mpi${major}_${version}_$arch.deb" "$work/out/libcblob-mpi-dev_${version}_$arch.deb")
[ -f "${mpi_debs[0]}" ] || mpi_debs=()

# lintian: errors fail; a warning fails unless the packaging note lists its tag.
note=$source_dir/docs/packaging.md
accepted=$(sed -n '/^## Lintian warnings accepted/,/^## /p' "$note" | sed -n 's/^- `\([a-z0-9.+-]*\)`.*/\1/p')
lintian --fail-on none "${debs[@]}" "${mpi_debs[@]}" 2>&1 | { grep -v 'running with root privileges' || true; } | tee "$work/lintian.txt"
errors=$(grep -c '^E: ' "$work/lintian.txt" || true)
unjustified=$(grep '^W: ' "$work/lintian.txt" | awk '{print $3}' | sort -u | grep -vxF -f <(echo "$accepted"; echo) || true)
[ "$errors" = 0 ] || fail "lintian reports $errors errors"
[ -z "$unjustified" ] || fail "lintian warnings that $note does not justify: $unjustified"
echo "lintian: $(( ${#debs[@]} + ${#mpi_debs[@]} )) packages, no errors, $(grep -c '^W: ' "$work/lintian.txt" || true) warnings, each justified in docs/packaging.md"

# The library in Debian's multiarch folder; ldconfig through the trigger, no maintainer scripts.
dpkg-deb -c "${debs[0]}" >"$work/contents.txt"
grep -q " ./usr/lib/$multiarch/libcblob.so.$version\$" "$work/contents.txt" ||
  fail "$runtime does not hold usr/lib/$multiarch/libcblob.so.$version"
dpkg-deb -e "${debs[0]}" "$work/control"
grep -qx 'activate-noawait ldconfig' "$work/control/triggers" || fail "$runtime: no 'activate-noawait ldconfig' trigger"
for script in preinst postinst prerm postrm; do
  [ ! -e "$work/control/$script" ] || fail "$runtime has a $script script"
done

# Stripped in the package, debug info kept in the build tree (abidw reads it).
dpkg-deb -x "${debs[0]}" "$work/root"
readelf -S "$work/root/usr/lib/$multiarch/libcblob.so.$version" | grep -q '\.debug_info' && fail "the packaged library has debug info"
readelf -S "$(find "$work/build/src" -name "libcblob.so.$version")" | grep -q '\.debug_info' ||
  fail "the build tree's library lost its debug info"

# debian/copyright's BSD-2-Clause text is LICENSE's, from its first condition on.
# (The stand-alone paragraph: the one that starts with the License field.)
in_copyright=$(awk 'BEGIN { RS = "" } /^License: BSD-2-Clause\n/' "$source_dir/cmake/debian/copyright" | sed '1d' |
               sed -e 's/^ //' -e 's/^\.$//')
in_license=$(sed -n '/^Redistribution/,$p' "$source_dir/LICENSE")
[ "$in_copyright" = "$in_license" ] || { diff <(echo "$in_license") <(echo "$in_copyright") || true; fail "cmake/debian/copyright's BSD-2-Clause text differs from LICENSE"; }
# The changelog's newest entry is this version (add an entry when the version changes).
newest=$(head -1 "$source_dir/cmake/debian/changelog" | sed -n 's/^cblob (\([^)]*\)).*/\1/p')
[ "$newest" = "$version" ] || fail "cmake/debian/changelog's newest entry is $newest, the project is $version: add an entry"

# The maintainer is a configure option.
maintainer="Jane Packager <jane@example.org>"
cmake -DCBLOB_PACKAGE_MAINTAINER="$maintainer" "$work/build" >/dev/null
package
for deb in "${debs[@]}"; do
  [ "$(dpkg-deb -f "$deb" Maintainer)" = "$maintainer" ] || fail "$(basename "$deb"): Maintainer is $(dpkg-deb -f "$deb" Maintainer)"
done
echo "lintian: OK"
