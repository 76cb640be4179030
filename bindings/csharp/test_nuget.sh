#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CTest driver of the C# binding's NuGet package: pack.sh makes CBlob.VERSION.nupkg from this
# build's library into a local folder feed; a fresh copy of consumer/ restores it from that feed
# with nuget (offline: the feed is the only source), builds with Mono's xbuild, and runs with no
# LD_LIBRARY_PATH: the program must load the libcblob.so.1 the package's build targets copied
# beside it, and fail to start once that copy is gone. Outputs go to CBLOB_OUT_DIR.
source "$(dirname "$0")/../common.sh"
for tool in mcs mono xbuild nuget strip; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not found (install mono-complete, nuget, binutils)"
done
: "${CBLOB_VERSION:?}"
here=$BINDINGS_DIR/csharp
out=$CBLOB_OUT_DIR
rm -rf "$out/feed" "$out/consumer" "$out/home"
# nuget and xbuild keep settings and caches under HOME: this test's, not the user's.
export HOME=$out/home
mkdir -p "$HOME"

"$here/pack.sh" "$CBLOB_VERSION" "$CBLOB_LIBRARY_FILE" "$out/feed"
nupkg=$out/feed/CBlob.$CBLOB_VERSION.nupkg
contents=$(unzip -Z1 "$nupkg")
for f in lib/netstandard2.0/CBlob.dll runtimes/linux-x64/native/libcblob.so.1 build/CBlob.targets LICENSE.txt; do
  grep -qx "$f" <<<"$contents" || { echo "FAIL: $(basename "$nupkg") lacks $f"; exit 1; }
done
echo "$(basename "$nupkg"): $(tr '\n' ' ' <<<"$contents")"

consumer=$out/consumer
mkdir -p "$consumer"
for f in Program.cs Consumer.csproj packages.config; do
  sed "s/@VERSION@/$CBLOB_VERSION/g" "$here/consumer/$f" >"$consumer/$f"
done
cd "$consumer"
nuget restore packages.config -PackagesDirectory packages -Source "$out/feed" -NonInteractive
xbuild /nologo /verbosity:minimal /property:TreatWarningsAsErrors=true Consumer.csproj
[ -f bin/libcblob.so.1 ] || { echo "FAIL: the package's build targets did not copy libcblob.so.1 into bin/"; exit 1; }

run() { env -u LD_LIBRARY_PATH -u MONO_PATH -u MONO_CONFIG mono bin/Consumer.exe; }
output=$(run)
echo "$output"
[ "$(sed -n 1p <<<"$output")" = "2 3 (6) 9" ] || { echo "FAIL: the consumer computed something else"; exit 1; }
[ "$(sed -n 2p <<<"$output")" = "$consumer/bin/libcblob.so.1" ] ||
  { echo "FAIL: the consumer did not load the library from its own folder"; exit 1; }

# Without the copy beside it, nothing else provides libcblob.so.1 (unless cblob is installed).
if [ -n "$(ldconfig -p | grep 'libcblob\.so\.1 ' || true)" ]; then
  echo "(a libcblob.so.1 is installed on this machine: not checking that the program needs its copy)"
else
  rm bin/libcblob.so.1
  if run >"$out/without.log" 2>&1; then
    echo "FAIL: the consumer ran without the packaged libcblob.so.1"; exit 1
  fi
  grep -q "DllNotFoundException: libcblob.so.1" "$out/without.log" ||
    { cat "$out/without.log"; echo "FAIL: the consumer failed for another reason"; exit 1; }
  echo "without the packaged copy beside it: DllNotFoundException, as expected"
fi
echo "nuget consumer: OK"
