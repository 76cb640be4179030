#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The ABI baselines (abi/cblob-<version>.abi, one per minor release) and the comparison against
them, with one set of options.

    abi.py dump LIBRARY BUILD_DIR OUT         write LIBRARY's ABI to OUT (abi/update-baseline.sh)
    abi.py compare BASELINE LIBRARY BUILD_DIR  abidiff --no-added-syms; exit 0 only when abidiff's is 0
    abi.py expect-break BASELINE LIBRARY BUILD_DIR FUNCTION
                                               the comparison must fail and name FUNCTION

Only exported functions and the public headers' types count (include/ and BUILD_DIR/include, which holds DLPack's
header): the opaque handles' structs are the library's own business, DLPack's structs are frozen
by DLPack. abidw needs the library's debug info (-g, kept in every preset). The baseline is made
independent of where the checkout and the build live: compilation unit paths are written relative
to the checkout, and no corpus or compilation-directory path is recorded.
"""
import re
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent


def header_options(flag, build_dir):
    return [flag, str(SOURCE / "include"), flag, str(Path(build_dir).resolve() / "include")]


def dump(library, build_dir, out):
    build = Path(build_dir).resolve()
    text = subprocess.run(
        ["abidw", "--exported-interfaces-only", "--no-corpus-path", "--no-comp-dir-path", "--no-show-locs", "--no-elf-needed",
         "--drop-private-types", "--type-id-style", "hash", *header_options("--hd", build), library],
        check=True, capture_output=True, text=True).stdout
    # The build folder may sit inside the checkout: replace it first.
    text = re.sub(r"path='" + re.escape(str(build)) + "/", "path='build/", text)
    text = re.sub(r"path='" + re.escape(str(SOURCE)) + "/", "path='", text)
    if str(SOURCE) in text or str(build) in text:
        sys.exit(f"abi.py: {library}'s ABI still names a local path; not written")
    Path(out).write_text(text)
    print(f"abi.py: wrote {out} ({text.count('<elf-symbol ')} exported functions)")
    return 0


def run_abidiff(baseline, library, build_dir):
    return subprocess.run(
        ["abidiff", "--no-added-syms", "--exported-interfaces-only", "--drop-private-types", *header_options("--hd2", build_dir), baseline, library],
        capture_output=True, text=True)


def compare(baseline, library, build_dir):
    result = run_abidiff(baseline, library, build_dir)
    print(result.stdout + result.stderr, end="")
    if result.returncode != 0:
        print(f"abi.py: {library} breaks the ABI in {baseline} (abidiff exit status {result.returncode}). A shipped "
              "signature never changes: add a new function in a new version node instead. Only when an issue "
              "says to add to the ABI does abi/update-baseline.sh regenerate the baseline.")
        return 1
    print(f"abi.py: {library} keeps the ABI in {baseline}")
    return 0


def expect_break(baseline, library, build_dir, function):
    result = run_abidiff(baseline, library, build_dir)
    output = result.stdout + result.stderr
    print(output, end="")
    if result.returncode == 0:
        print(f"abi.py: abidiff passed {library}, whose {function} has another signature")
        return 1
    if function not in output:
        print(f"abi.py: abidiff failed (exit status {result.returncode}) without naming {function}")
        return 1
    print(f"abi.py: abidiff rejects the changed {function} (exit status {result.returncode}), as it must")
    return 0


def main(argv):
    commands = {"dump": (dump, 3), "compare": (compare, 3), "expect-break": (expect_break, 4)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) - 2 != commands[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    function, _ = commands[argv[1]]
    return function(*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
