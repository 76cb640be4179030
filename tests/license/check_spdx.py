#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Lists the project's source files that carry no SPDX-License-Identifier line in their first
lines, and fails when there is any. Every source, template, build file and script is cblob's
(BSD-2-Clause); what the generator writes carries the line too, because each top-level template
renders it. Third-party files keep their own notices.

usage: check_spdx.py SOURCE_DIR
       check_spdx.py --self-test    the check must fail on a tree holding one file without the line
"""
import subprocess
import sys
from pathlib import Path

LICENSE = "BSD-2-Clause"
HEAD_LINES = 5  # the identifier comes first, or right after a shebang or an XML declaration

# Files that cannot hold a comment, or that another tool writes whole, with the reason.
EXEMPT_SUFFIXES = {
    ".md": "documentation, not source",
    ".json": "JSON has no comments",
    ".bin": "binary fuzz corpus",
    ".caffemodel": "binary sample model",
    ".binaryproto": "binary sample blob",
    ".npy": "binary array",
    ".lock": "written whole by cargo",
    ".abi": "written whole by abidw (abi/update-baseline.sh)",
}
EXEMPT_NAMES = {
    "LICENSE": "the license text itself",
}
EXEMPT_PATHS = {
    "cmake/debian/copyright": "Debian's DEP-5 copyright file: it states the licenses in its own fields",
    "cmake/debian/changelog": "Debian's changelog format has no comment syntax",
}
EXEMPT_FOLDERS = {
    "third_party/": "third-party code keeps its own license notice",
}


def project_files(source):
    """The files git tracks plus new ones it does not ignore; every file when there is no git."""
    try:
        out = subprocess.run(["git", "-C", str(source), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        names = [n for n in out.decode().split("\0") if n]
        return [n for n in names if (source / n).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [p.relative_to(source).as_posix() for p in source.rglob("*")
                if p.is_file() and not {"build", ".git", "target"} & set(p.relative_to(source).parts)]


def exempt(name):
    if Path(name).name in EXEMPT_NAMES or name in EXEMPT_PATHS:
        return True
    if name.endswith(".txt") and not name.endswith("CMakeLists.txt"):
        return True  # data: expected outputs and lists that tests compare line by line
    for folder in EXEMPT_FOLDERS:
        if name.startswith(folder):
            return True
    return Path(name).suffix in EXEMPT_SUFFIXES


def has_identifier(path):
    with open(path, "rb") as f:
        head = f.read(4096)
    if b"\0" in head:
        return True  # binary: nothing to annotate
    lines = head.decode("utf-8", "replace").splitlines()[:HEAD_LINES]
    return any(f"SPDX-License-Identifier: {LICENSE}" in line for line in lines)


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory(prefix="cblob-spdx-") as tmp:
        tree = Path(tmp)
        (tree / "good.c").write_text(f"/* SPDX-License-Identifier: {LICENSE} */\nint x;\n")
        (tree / "bad.py").write_text("print('no license line')\n")
        (tree / "notes.md").write_text("documentation is exempt\n")
        result = subprocess.run([sys.executable, __file__, str(tree)], capture_output=True, text=True)
    if result.returncode == 1 and "bad.py" in result.stdout and "good.c" not in result.stdout \
            and "notes.md" not in result.stdout:
        print("the check lists bad.py, and only it, and fails")
        return 0
    print(f"the check did not single out bad.py (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    return 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    source = Path(sys.argv[1]).resolve()
    files = [n for n in project_files(source) if not exempt(n)]
    missing = sorted(n for n in files if not has_identifier(source / n))
    if missing:
        print(f"{len(missing)} of {len(files)} source files lack 'SPDX-License-Identifier: {LICENSE}' in their first "
              f"{HEAD_LINES} lines:")
        print("\n".join("  " + n for n in missing))
        return 1
    print(f"{len(files)} source files carry SPDX-License-Identifier: {LICENSE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
