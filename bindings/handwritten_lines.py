#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Counts the hand-written lines of the four safe layers: the sources of the Rust crate
(bindings/rust/cblob/src), the Go package (bindings/go, without _test.go files and internal/), the
C# assembly (bindings/csharp/CBlob) and the Python package (bindings/python/src/cblob), less the
files the generator writes (codegen/outputs.yaml). Every line counts (code, comments, blank), as
`wc -l` counts them.

    handwritten_lines.py [--rev REV]    at the working tree, or at a git revision (main, HEAD~3)
"""
import argparse
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {
    "rust": ("bindings/rust/cblob/src/", (".rs",)),
    "go": ("bindings/go/", (".go",)),
    "csharp": ("bindings/csharp/CBlob/", (".cs",)),
    "python": ("bindings/python/src/cblob/", (".py",)),
}


def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout


def files_and_text(rev):
    """{path: text} of every tracked file under the bindings (at rev, or in the working tree)."""
    if rev:
        paths = git("ls-tree", "-r", "--name-only", rev, "bindings/").split()
        return {p: git("show", f"{rev}:{p}") for p in paths if p.endswith((".rs", ".go", ".cs", ".py", ".yaml"))} | \
               {"codegen/outputs.yaml": git("show", f"{rev}:codegen/outputs.yaml")}
    paths = git("ls-files", "--cached", "--others", "--exclude-standard", "bindings/", "codegen/outputs.yaml").split()
    return {p: (ROOT / p).read_text(encoding="utf-8") for p in paths if (ROOT / p).is_file()}


def count(rev=None):
    texts = files_and_text(rev)
    generated = {entry["output"] for entry in yaml.safe_load(texts["codegen/outputs.yaml"])}
    totals = {}
    for language, (folder, suffixes) in LAYERS.items():
        lines = 0
        for path, text in texts.items():
            name = path.rsplit("/", 1)[-1]
            if not path.startswith(folder) or not path.endswith(suffixes) or path in generated:
                continue
            if language == "go" and (name.endswith("_test.go") or "/internal/" in path):
                continue
            lines += text.count("\n")
        totals[language] = lines
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", help="a git revision instead of the working tree")
    args = parser.parse_args()
    totals = count(args.rev)
    for language, lines in totals.items():
        print(f"{language:8} {lines:6}")
    print(f"{'total':8} {sum(totals.values()):6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
