#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks that libcblob_mpi exports exactly its API: every dynamic symbol it defines is a cblob_
function in a CBLOB_MPI_x.y version node, the same functions as its version script
(abi/cblob_mpi.map), its header (include/cblob/mpi.h) and its ABI baselines
(abi/cblob_mpi-<version>.abi) name; and its SONAME is libcblob_mpi.so.<major>. tests/abi's
check_symbols.py does the same for libcblob.

usage: check_mpi_symbols.py LIBRARY SOURCE_DIR MAJOR
"""
import re
import subprocess
import sys
from pathlib import Path


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    symbols, problems = {}, []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == "A" and re.fullmatch(r"CBLOB_MPI_\d+\.\d+", name):
            continue  # the version node itself
        m = re.fullmatch(r"(cblob_\w+)@@?CBLOB_MPI_(\d+\.\d+)", name)
        if not m:
            problems.append(f"{name}: exported, but not a cblob_ function in a CBLOB_MPI_x.y node")
            continue
        symbols[m.group(1)] = m.group(2)
    return symbols, problems


def version_script(path):
    nodes, current = {}, None
    for line in path.read_text().splitlines():
        line = re.sub(r"/\*.*?\*/", "", line).strip()
        m = re.match(r"CBLOB_MPI_(\d+\.\d+)\s*\{", line)
        if m:
            current = m.group(1)
        m = re.fullmatch(r"(cblob_\w+);", line)
        if m and current:
            nodes[m.group(1)] = current
    return nodes


def main(library, source_dir, major):
    source = Path(source_dir)
    symbols, problems = exported(library)
    mapped = version_script(source / "abi" / "cblob_mpi.map")
    declared = set(re.findall(r"CBLOB_MPI_API\s+[\w\s\*]+?\b(cblob_\w+)\s*\(", (source / "include/cblob/mpi.h").read_text()))
    if symbols != mapped:
        problems.append(f"exported {sorted(symbols.items())} but abi/cblob_mpi.map says {sorted(mapped.items())}")
    if set(symbols) != declared:
        problems.append(f"exported {sorted(symbols)} but include/cblob/mpi.h declares {sorted(declared)}")
    baselines = sorted((source / "abi").glob("cblob_mpi-*.abi"))
    if not baselines:
        problems.append("no ABI baseline abi/cblob_mpi-<version>.abi")
    frozen = {}
    for path in baselines:
        for m in re.finditer(r"<elf-symbol name='(cblob_\w+)' version='CBLOB_MPI_(\d+\.\d+)'", path.read_text()):
            frozen[m.group(1)] = m.group(2)
    if frozen != symbols:
        problems.append(f"the baselines record {sorted(frozen.items())}, the library exports {sorted(symbols.items())}")
    dynamic = subprocess.run(["readelf", "-d", library], check=True, capture_output=True, text=True).stdout
    soname = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", dynamic)
    if not soname or soname.group(1) != f"libcblob_mpi.so.{major}":
        problems.append(f"SONAME {soname.group(1) if soname else None}, expected libcblob_mpi.so.{major}")
    for problem in problems:
        print(f"check_mpi_symbols: {problem}")
    if not problems:
        print(f"check_mpi_symbols: {len(symbols)} functions, exported, mapped, declared and in the baselines alike")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
