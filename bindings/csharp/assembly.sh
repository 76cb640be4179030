# SPDX-License-Identifier: BSD-2-Clause
# Sourced by test.sh and pack.sh: compiles CBlob.dll and its XML documentation with Mono's mcs,
# as C# 7.2 with warnings as errors (the sources keep to what Mono and .NET 8 both have).
# usage: build_assembly OUT_DIR    (writes OUT_DIR/CBlob.dll and OUT_DIR/CBlob.xml)
build_assembly() {
  local out=$1 sources
  sources=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/CBlob
  mkdir -p "$out"
  mcs -target:library -unsafe -langversion:7.2 -warnaserror+ -nologo \
      -doc:"$out/CBlob.xml" -out:"$out/CBlob.dll" "$sources"/*.cs
}
