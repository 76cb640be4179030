# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): `python -m cblob` runs the cblob program.
"""`python -m cblob ARGS` runs the cblob program (inspect, convert, info, help) with ARGS: the one
bundled in the package (beside the library it was built with), else `cblob` on PATH."""
import os
import shutil
import sys
from pathlib import Path


def program() -> str:
    bundled = Path(__file__).resolve().parent / "bin" / "cblob"
    if bundled.exists():
        return str(bundled)
    found = shutil.which("cblob")
    if found is None:
        sys.exit("cblob: the cblob program is neither bundled with this package nor on PATH")
    return found


def main() -> None:
    path = program()
    os.execv(path, [path, *sys.argv[1:]])


if __name__ == "__main__":
    main()
