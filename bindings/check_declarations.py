#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks that every function the built library exports is declared in each binding's raw layer,
with the parameter count the public header gives it, and that no raw layer declares a function
the library does not export.

The raw layers are generated, so this holds by construction; the check proves it by reading the
files themselves (not the generator's model): the Rust extern block (cblob-sys), the C# DllImport
declarations, the C calls of the Go raw layer, and the ctypes table of the Python raw layer
(FUNCTIONS: name, restype, argtypes).

usage: check_declarations.py LIBRARY SOURCE_DIR
"""
import re
import subprocess
import sys
from pathlib import Path

RUST = "bindings/rust/cblob-sys/src/lib.rs"
CSHARP = "bindings/csharp/CBlob/Native.g.cs"
GO = "bindings/go/raw_generated.go"
PYTHON = "bindings/python/src/cblob/_raw.py"
HEADER = "include/cblob/cblob.h"


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWi":
            names.add(parts[2].split("@")[0])
    return {n for n in names if n.startswith("cblob_")}


def count_params(text):
    """Top-level commas of a parameter or argument list; 'void' and '' are none."""
    text = text.strip()
    if text in ("", "void"):
        return 0
    depth, commas = 0, 0
    for ch in text:
        if ch in "([<":
            depth += 1
        elif ch in ")]>":
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
    return commas + 1


def strip_comments(text, line_comment):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(re.escape(line_comment) + r".*", "", text)


def header_functions(path):
    text = strip_comments(path.read_text(), "//")
    return {m.group(1): count_params(m.group(2))
            for m in re.finditer(r"CBLOB_API\s[^;(]*?\b(cblob_\w+)\s*\(([^;]*?)\)\s*;", text)}


def rust_functions(path):
    text = strip_comments(path.read_text(), "//")
    found = {}
    for block in re.finditer(r'extern\s+"C"\s*\{(.*?)\n\}', text, flags=re.S):
        for m in re.finditer(r"\bpub\s+fn\s+(cblob_\w+)\s*\(([^)]*)\)", block.group(1)):
            found[m.group(1)] = count_params(m.group(2))
    return found


def csharp_functions(path):
    text = strip_comments(path.read_text(), "//")
    pattern = (r"\[DllImport\([^\]]*\)\]\s*(?:(?:internal|public|private|static|extern|unsafe)\s+)+"
               r"[\w.\[\]<>?]+\s+(cblob_\w+)\s*\(([^)]*)\)\s*;")
    return {m.group(1): count_params(m.group(2)) for m in re.finditer(pattern, text)}


def go_functions(path):
    """Calls of C functions: in the cgo preamble (wrappers) and in Go code (C.cblob_...). The
    preamble is one block comment, so only line comments are dropped."""
    text = re.sub(r"//.*", "", path.read_text())
    found = {}
    for m in re.finditer(r"(?<![\w.])(?:C\.)?(cblob_\w+)\s*\(", text):
        found[m.group(1)] = count_params(balanced(text, m.end()))
    return found


def balanced(text, start):
    """The text inside the parentheses that open just before start (nesting included)."""
    depth, i = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1]


def python_functions(path):
    """Rows ("cblob_x", restype, (argtypes...)) of FUNCTIONS; comments dropped first."""
    text = re.sub(r"#.*", "", path.read_text())
    found = {}
    for m in re.finditer(r'\(\s*"(cblob_\w+)"\s*,\s*[\w.()]+?\s*,\s*\(', text):
        # A one-element tuple ends with a comma: (c_int32,).
        found[m.group(1)] = count_params(balanced(text, m.end()).strip().rstrip(","))
    return found


def main():
    library, source = sys.argv[1], Path(sys.argv[2])
    symbols = exported(library)
    header = header_functions(source / HEADER)
    layers = {"Rust (" + RUST + ")": rust_functions(source / RUST),
              "C# (" + CSHARP + ")": csharp_functions(source / CSHARP),
              "Go (" + GO + ")": go_functions(source / GO),
              "Python (" + PYTHON + ")": python_functions(source / PYTHON)}
    problems = []
    if not symbols:
        problems.append(f"{library} exports no cblob_ function")
    for name in sorted(symbols - set(header)):
        problems.append(f"{name}: exported but not in {HEADER}")
    for layer, declared in layers.items():
        for name in sorted(symbols - set(declared)):
            problems.append(f"{name}: exported but not declared in {layer}")
        for name in sorted(set(declared) - symbols):
            problems.append(f"{name}: declared in {layer} but not exported by the library")
        for name in sorted(symbols & set(declared) & set(header)):
            if declared[name] != header[name]:
                problems.append(f"{name}: {declared[name]} parameters in {layer}, {header[name]} in the header")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"{len(symbols)} exported functions, each declared in "
          f"{', '.join(layers)} with the header's parameter count")
    return 0


if __name__ == "__main__":
    sys.exit(main())
