#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks that the library exports exactly the API: every dynamic symbol is a cblob_ function in a
version node, and the exported symbols, the linker version script (abi/cblob.map), the API
description (codegen/api, via generated/api_functions.txt) and the ABI baselines (abi/cblob-<version>.abi,
one per minor release) name the same functions, each in the node of the ABI version that added it. The newest node is
the header's CBLOB_ABI_VERSION_MAJOR.MINOR, and the SONAME carries the major.

usage: check_symbols.py LIBRARY SOURCE_DIR
"""
import re
import subprocess
import sys
from pathlib import Path


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    symbols, problems = {}, []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        _, kind, name = parts
        if kind == "A" and re.fullmatch(r"CBLOB_\d+\.\d+", name):
            continue  # the version node itself
        m = re.fullmatch(r"(\w+)@@?(CBLOB_(\d+\.\d+))", name)
        if not m:
            problems.append(f"{name}: exported without a CBLOB_x.y version node")
            continue
        if not m.group(1).startswith("cblob_"):
            problems.append(f"{m.group(1)}: exported symbol without the cblob_ prefix")
        symbols[m.group(1)] = m.group(3)
    return symbols, problems


def version_script(path):
    nodes, current = {}, None
    for line in path.read_text().splitlines():
        line = re.sub(r"/\*.*?\*/", "", line).strip()
        m = re.match(r"(CBLOB_(\d+\.\d+))\s*\{", line)
        if m:
            current = m.group(2)
            continue
        m = re.fullmatch(r"(cblob_\w+);", line)
        if m and current:
            nodes[m.group(1)] = current
    return nodes


def described(path):
    funcs = {}
    for line in path.read_text().splitlines():
        if line.strip():
            name, since = line.split()
            funcs[name] = since
    return funcs


def baselines(folder):
    """The functions abidw recorded in any baseline, with their version nodes. Each baseline holds
    every function of its release, the earlier nodes' included."""
    frozen = {}
    for path in sorted(folder.glob("cblob-*.abi")):
        for m in re.finditer(r"<elf-symbol name='(cblob_\w+)' version='CBLOB_(\d+\.\d+)'", path.read_text()):
            frozen[m.group(1)] = m.group(2)
    return frozen


def header_version(path):
    text = path.read_text()
    major = re.search(r"#define CBLOB_ABI_VERSION_MAJOR (\d+)", text).group(1)
    minor = re.search(r"#define CBLOB_ABI_VERSION_MINOR (\d+)", text).group(1)
    return f"{major}.{minor}"


def soname(library):
    out = subprocess.run(["readelf", "-d", library], check=True, capture_output=True, text=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", out)
    return m.group(1) if m else None


def check_versions(library, source, script):
    version = header_version(source / "include" / "cblob" / "cblob.h")
    newest = max(set(script.values()), key=lambda v: tuple(int(x) for x in v.split(".")))
    problems = []
    if newest != version:
        problems.append(f"the newest version node is CBLOB_{newest} but cblob.h says ABI {version} "
                        "(CBLOB_ABI_VERSION_MAJOR/MINOR in codegen/api/00_core.yaml)")
    expected = f"libcblob.so.{version.split('.')[0]}"
    if soname(library) != expected:
        problems.append(f"SONAME {soname(library)}, expected {expected} for ABI {version}")
    return problems


def main():
    library, source = sys.argv[1], Path(sys.argv[2])
    symbols, problems = exported(library)
    script = version_script(source / "abi" / "cblob.map")
    api = described(source / "generated" / "api_functions.txt")
    frozen = baselines(source / "abi")
    for name in sorted(set(symbols) | set(script) | set(api) | set(frozen)):
        where = {"exported": symbols.get(name), "version script": script.get(name), "API description": api.get(name),
                 "ABI baseline": frozen.get(name)}
        missing = [k for k, v in where.items() if v is None]
        if missing:
            present = ", ".join(f"{k} ({v})" for k, v in where.items() if v)
            hint = ""
            if missing == ["ABI baseline"]:
                hint = "; once an issue says to add it to the ABI, run abi/update-baseline.sh"
            problems.append(f"{name}: in {present} but not in {', '.join(missing)}{hint}")
        elif len(set(where.values())) != 1:
            problems.append(f"{name}: version nodes disagree: {where}")
    problems += check_versions(library, source, script)
    if problems:
        print("\n".join(problems))
        return 1
    print(f"{len(symbols)} functions exported, each in its version node, in the API description and in the ABI "
          "baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
