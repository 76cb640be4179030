#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# CTest driver of the C# binding: builds CBlob.dll and the NUnit 2.6 tests with Mono's mcs (as
# C# 7.2, warnings as errors) and runs them with nunit-console (the GPU tests once more against
# the test doubles of the CUDA libraries), bound to this build's libcblob through a dllmap in
# CBlob.dll.config; then the collectives on two ranks under mpirun. The DLPack mirror is checked against dlpack_layout.c's output. Outputs go to
# CBLOB_OUT_DIR.
source "$(dirname "$0")/../common.sh"
for tool in mcs mono nunit-console pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not found (install mono-mcs, mono-complete, nunit-console, pkg-config)"
done
pkg-config --exists nunit || skip "pkg-config knows no nunit (install nunit-console)"
dlpack_layout
cd "$BINDINGS_DIR/csharp"
out=$CBLOB_OUT_DIR
source ./assembly.sh
build_assembly "$out"
mcs -target:library -unsafe -langversion:7.2 -warnaserror+ -nologo -pkg:nunit \
    -r:"$out/CBlob.dll" -out:"$out/CBlob.Tests.dll" Tests/*.cs
cat > "$out/CBlob.dll.config" <<CONFIG
<configuration>
  <dllmap dll="libcblob.so.1" target="$CBLOB_LIBRARY_FILE" os="linux"/>
</configuration>
CONFIG
cd "$out"
export CBLOB_TEST_LIBRARY="$CBLOB_LIBRARY_FILE"
nunit-console -nologo -noshadow -xml="$out/TestResult.xml" "$out/CBlob.Tests.dll"
# The collectives on two ranks (MpiTwoRanks/), with CBlob.dll and its config beside it.
if mpi_ranks_or_skip; then
  mcs -target:exe -unsafe -langversion:7.2 -warnaserror+ -nologo -r:"$out/CBlob.dll" \
      -out:"$out/MpiTwoRanks.exe" "$BINDINGS_DIR/csharp/MpiTwoRanks/"*.cs
  # shellcheck disable=SC2086 # CBLOB_MPIEXEC holds the launcher and its flags
  timeout 120 $CBLOB_MPIEXEC -np 2 mono "$out/MpiTwoRanks.exe"
fi
run_with_fake_gpu nunit-console -nologo -noshadow -run=CBlob.Tests.GpuTests -xml="$out/TestResult.gpu.xml" "$out/CBlob.Tests.dll"
