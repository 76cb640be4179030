#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""CTest bindings.coverage_catches: the test of the coverage test. In a scratch copy of the
description, the templates and the bindings' sources, it adds one public function to the API
description (a new area file, as a 1.2 function would come) and regenerates:

  1. without a binding block: check_coverage.py must fail, naming the function for each of the
     four languages (a function no safe layer reaches is a failing test, not a user's discovery);
  2. with a binding block (codegen/bindings/99_scratch.yaml): check_coverage.py must pass, the
     function reached in all four safe layers through the methods the generator wrote.

usage: check_coverage_catches.py SOURCE_DIR
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

SCRATCH_API = """\
section: Scratch
doc: A function the coverage test's own test adds to a copy of the description.
functions:
  - name: cblob_blob_scratch_answer
    since: "1.2"
    getter: true
    doc: Reads the blob's scratch answer (a function of the coverage test's test, never built).
    params:
      - {name: blob, type: "const cblob_blob *", dir: in}
      - {name: out_answer, type: "int64_t *", dir: out}
    statuses: [CBLOB_OK, CBLOB_ERR_INVALID_ARGUMENT]
"""

SCRATCH_BINDING = """\
cblob_blob_scratch_answer:
  class: Blob
  property: true
"""

LANGUAGES = ("rust", "go", "csharp", "python")
IGNORED = shutil.ignore_patterns("target", "__pycache__", "*.pyc", ".pytest_cache", "bin", "obj")


def run(*args):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True)


def main():
    source = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory(prefix="cblob-coverage-") as tmp:
        tree = Path(tmp)
        for folder in ("codegen", "templates", "bindings"):
            shutil.copytree(source / folder, tree / folder, ignore=IGNORED)
        # The generator also reads files outside those folders: the program's manual
        # (generate.py's MANUAL) and the files it splices a section into (outputs.yaml).
        outputs = yaml.safe_load((source / "codegen/outputs.yaml").read_text(encoding="utf-8"))
        for name in ["docs/cblob.1.md"] + [o["output"] for o in outputs if "splice" in o]:
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, tree / name)
        (tree / "codegen/api/99_scratch.yaml").write_text(SCRATCH_API, encoding="utf-8")
        failures = []

        generated = run(tree / "codegen/generate.py", "--out", tree)
        if generated.returncode != 0:
            print(generated.stdout + generated.stderr)
            return 1
        if "cblob_blob_scratch_answer" not in generated.stderr:
            failures.append("generate.py did not say that the new function has no binding block")
        checked = run(tree / "bindings/check_coverage.py", tree)
        print("== a new function without a binding block:\n" + checked.stdout.strip())
        if checked.returncode == 0:
            failures.append("check_coverage.py passed although no safe layer reaches the new function")
        for language in LANGUAGES:
            if f"cblob_blob_scratch_answer: not reachable from the {language} safe layer" not in checked.stdout:
                failures.append(f"check_coverage.py did not name the new function for {language}")
        unrelated = [line for line in checked.stdout.splitlines()
                     if "not reachable" in line and "scratch_answer" not in line]
        if unrelated:
            failures.append("the copy fails for other functions too: " + "; ".join(unrelated))

        (tree / "codegen/bindings/99_scratch.yaml").write_text(SCRATCH_BINDING, encoding="utf-8")
        generated = run(tree / "codegen/generate.py", "--out", tree)
        if generated.returncode != 0:
            print(generated.stdout + generated.stderr)
            return 1
        checked = run(tree / "bindings/check_coverage.py", tree)
        print("== the same function with a binding block:\n" + checked.stdout.strip())
        if checked.returncode != 0:
            failures.append("check_coverage.py failed although the function has a binding block")
        for path, marker in (("bindings/rust/cblob/src/generated.rs", "pub fn scratch_answer(&self)"),
                             ("bindings/go/safe_generated.go", "func (b *Blob) ScratchAnswer()"),
                             ("bindings/csharp/CBlob/Safe.g.cs", "public long ScratchAnswer"),
                             ("bindings/python/src/cblob/_safe.py", "def scratch_answer(self)")):
            if marker not in (tree / path).read_text(encoding="utf-8"):
                failures.append(f"{path} lacks {marker!r}")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("bindings.coverage_catches: a function without a binding block fails the coverage test "
          "in all four languages; with one it is generated in all four and passes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
