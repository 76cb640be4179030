#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The documentation holds together (issue 23: the README is a front door):

    check_links.py --source DIR [--example PROGRAM --data DIR]

- every relative link of README.md, docs/*.md and the bindings' READMEs names a file or folder
  that exists, and a link to a heading (#anchor) a heading that exists;
- README.md stays a front door: at most 200 lines;
- README.md's C example is examples/first_look.c, byte for byte, and (given --example) the built
  example runs on LeNet and prints a sum.
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchor_of(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    return {anchor_of(m.group(1)) for m in re.finditer(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)}


def check_links(source):
    pages = [source / "README.md"] + sorted((source / "docs").glob("*.md")) + \
            sorted(source.glob("bindings/**/README.md"))
    problems, links = [], 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # code is not links
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target) or not re.search(r"[./#]", target):
                continue  # http:, mailto: ... outside the tree; "layer[3](conv1)" is no link
            links += 1
            file, _, anchor = target.partition("#")
            where = (page.parent / file).resolve() if file else page
            if not where.exists():
                problems.append(f"{page.relative_to(source)}: {target}: no such file")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                problems.append(f"{page.relative_to(source)}: {target}: no such heading")
    return problems, links, len(pages)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--example")
    parser.add_argument("--data")
    args = parser.parse_args()
    source = Path(args.source)
    problems, links, pages = check_links(source)
    readme = (source / "README.md").read_text(encoding="utf-8")
    lines = readme.count("\n")
    if lines > 200:
        problems.append(f"README.md has {lines} lines; a front door has at most 200 (topics go to docs/)")
    block = re.search(r"```c\n(.*?)```\n", readme, re.S)
    example = (source / "examples" / "first_look.c").read_text(encoding="utf-8")
    if block is None or block.group(1) != example:
        problems.append("README.md's C example is not examples/first_look.c")
    if args.example:
        run = subprocess.run([args.example, str(Path(args.data) / "lenet_iter_10000.caffemodel")],
                             capture_output=True, text=True)
        if run.returncode != 0 or not re.match(r"sum of \|layer 1's weights\| = [0-9.]+\n$", run.stdout):
            problems.append(f"examples/first_look on LeNet: exit {run.returncode}, {run.stdout!r} {run.stderr!r}")
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        sys.exit(1)
    print(f"{links} links in {pages} pages resolve; README.md is {lines} lines; its example runs")


if __name__ == "__main__":
    main()
