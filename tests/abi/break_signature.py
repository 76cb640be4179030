#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes copies of the public header and of one source file in which one parameter of one
function has another type: the deliberately broken library the ABI check must reject
(tests/abi/CMakeLists.txt builds it from these copies and the real library's other objects).

usage: break_signature.py SOURCE_DIR OUT_DIR

The change is cblob_context_mode's out-parameter, cblob_mode * (int32_t) becoming int64_t *: it
compiles, links and runs like the real one, only its signature differs. Each replacement must
match exactly once, so that a later edit of either file makes this fail loudly rather than
produce a library identical to the real one.
"""
import sys
from pathlib import Path

FUNCTION = "cblob_context_mode"
OLD, NEW = "cblob_mode *out_mode", "int64_t *out_mode"
FILES = {"include/cblob/cblob.h": "include/cblob/cblob.h", "src/core/context.c": "context.c"}


def main():
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    for relative, target in FILES.items():
        text = (source / relative).read_text()
        if text.count(OLD) != 1 or f"{FUNCTION}(" not in text:
            sys.exit(f"break_signature.py: expected '{OLD}' exactly once in {relative} (in {FUNCTION}); "
                     f"found it {text.count(OLD)} times. Pick another parameter to change.")
        path = out / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace(OLD, NEW))
    return 0


if __name__ == "__main__":
    sys.exit(main())
