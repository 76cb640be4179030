#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Writes abi/cblob-MAJOR.MINOR.abi, the ABI baseline of the release the header names
# (CBLOB_ABI_VERSION_MAJOR/MINOR), which an abi.baseline_MAJOR.MINOR test compares the library with
# (abidiff --no-added-syms, through abi/abi.py). One command: it configures and builds the
# release preset's library, checks it against every committed baseline, and writes this release's.
# Earlier releases' baselines are never rewritten: what they froze stays frozen.
#
# When to run it: only when an issue says to add to the ABI, after the new functions are in the
# API description (codegen/api), in abi/cblob.map under the new version node and implemented. The
# new baseline then freezes them too. It refuses a library that breaks the current baseline (a
# changed or removed function): a shipped signature never changes. Only a new major version,
# with a new SONAME (libcblob.so.2), starts a new baseline: --new-major allows that.
#
# usage: abi/update-baseline.sh [--new-major]
set -euo pipefail
cd "$(dirname "$0")/.."
new_major=0
case "${1:-}" in
  "") ;;
  --new-major) new_major=1 ;;
  *) echo "usage: abi/update-baseline.sh [--new-major]" >&2; exit 2 ;;
esac

python=$(scripts/find-python.sh)
cmake --preset release >/dev/null
cmake --build --preset release --target cblob
library=build/release/src/libcblob.so
header=include/cblob/cblob.h
version="$(sed -n 's/^#define CBLOB_ABI_VERSION_MAJOR \([0-9]*\)$/\1/p' "$header").$(sed -n 's/^#define CBLOB_ABI_VERSION_MINOR \([0-9]*\)$/\1/p' "$header")"
out=abi/cblob-$version.abi

for baseline in abi/cblob-*.abi; do
  [ -f "$baseline" ] && [ "$baseline" != "$out" ] || continue
  if ! "$python" abi/abi.py compare "$baseline" "$library" build/release; then
    if [ "$new_major" = 0 ]; then
      echo "update-baseline: not written: the library breaks $baseline (see above)." >&2
      exit 1
    fi
    echo "update-baseline: --new-major: starting a new baseline for a new SONAME"
  fi
done
"$python" abi/abi.py dump "$library" build/release "$out"
echo "update-baseline: review and commit $out; then run: ctest --preset release -R '^abi\\.'"
