#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Makes the CBlob NuGet package, OUT_DIR/CBlob.VERSION.nupkg, with Debian's nuget from
# nuget/CBlob.nuspec:
#   lib/netstandard2.0/CBlob.dll, CBlob.xml    the assembly, compiled here with Mono's mcs
#   runtimes/linux-x64/native/libcblob.so.1    LIBRARY_FILE, stripped
#   build/CBlob.targets                        copies the native library beside the program on
#                                              Mono and .NET Framework (see the file)
#   LICENSE.txt                                cblob's license
#
# usage: pack.sh VERSION LIBRARY_FILE OUT_DIR
set -euo pipefail
[ $# = 3 ] || { echo "usage: pack.sh VERSION LIBRARY_FILE OUT_DIR" >&2; exit 2; }
version=$1 library=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
for tool in mcs nuget strip readelf; do
  command -v "$tool" >/dev/null 2>&1 || { echo "pack.sh: $tool not found (scripts/setup.sh installs it)" >&2; exit 2; }
done
readelf -d "$library" | grep -q 'Library soname: \[libcblob.so.1\]' ||
  { echo "pack.sh: $library is not libcblob.so.1 (SONAME)" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

source "$here/assembly.sh"
build_assembly "$stage/lib/netstandard2.0"
mkdir -p "$stage/runtimes/linux-x64/native" "$stage/build" "$out"
strip --strip-unneeded -o "$stage/runtimes/linux-x64/native/libcblob.so.1" "$library"
cp "$here/nuget/CBlob.targets" "$stage/build/"
cp "$here/../../LICENSE" "$stage/LICENSE.txt"
nuget pack "$here/nuget/CBlob.nuspec" -Version "$version" -BasePath "$stage" -OutputDirectory "$out" \
  -NoPackageAnalysis -NonInteractive
