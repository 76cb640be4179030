#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks docs/neoml.md's table "Differences from NeoML": every row links to documentation in
docs/api.md (the header's text, generated), every link leads to a heading that exists, and every
NeoML call a row names in its first column (`SetParentPos`, `CopyFrom(T*)`) is named by the
documentation one of its links leads to, so the header states each difference docs/neoml.md lists.

usage: check_neoml_table.py SOURCE_DIR
       check_neoml_table.py --self-test    the check must fail on a table with a dead link and a
                                           row whose documentation names another call
"""
import re
import sys
from pathlib import Path

SECTION = "## Differences from NeoML"
LINK = re.compile(r"\]\((?:docs/)?api\.md#([A-Za-z0-9_-]+)\)")
# A NeoML call or type in a code span: CamelCase (SetParentPos, CopyFrom(T*), TBlobDim).
NEOML_NAME = re.compile(r"`([A-Z][A-Za-z0-9_]*)[^`]*`")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^a-z0-9_ -]", "", heading.strip().lower()).replace(" ", "-")


def documented(api_text):
    """Anchor -> the text under that heading, up to the next heading."""
    texts, current = {}, None
    for line in api_text.splitlines():
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            current = slug(heading.group(1))
            texts[current] = ""
        elif current is not None:
            texts[current] += line + "\n"
    return texts


def table_rows(readme_text):
    if SECTION not in readme_text:
        return None
    section = readme_text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return rows[2:]  # after the header and its rule


def check(readme_text, api_text):
    """The problems found, one line each."""
    rows = table_rows(readme_text)
    if not rows:
        return [f"docs/neoml.md has no table under \"{SECTION}\""]
    docs = documented(api_text)
    problems = []
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        what = cells[0][:60]
        anchors = LINK.findall(row)
        if not anchors:
            problems.append(f"row \"{what}\": no link to docs/api.md")
            continue
        problems += [f"row \"{what}\": docs/api.md has no heading #{a}" for a in anchors if a not in docs]
        live = [a for a in anchors if a in docs]
        text = "".join(docs[a] for a in live)
        for name in NEOML_NAME.findall(cells[0]) if live else []:
            if not name.startswith("CBLOB") and not re.search(rf"\b{re.escape(name)}\b", text):
                problems.append(f"row \"{what}\": the documentation it links to does not name {name}")
    return problems


def self_test():
    api = "# API\n## Windows\nText.\n### cblob_window_set_position\nAs NeoML's SetParentPos.\n"
    readme = (f"{SECTION}\n\n| NeoML | cblob | Why | Stated in |\n|---|---|---|---|\n"
              "| `SetParentPos` takes a negative position. | Refused. | Safety. | [x](docs/api.md#cblob_window_set_position) |\n"
              "| `GetBuffer` ... | ... | ... | [x](docs/api.md#cblob_window_set_position) |\n"
              "| `Add` ... | ... | ... | [x](docs/api.md#cblob_blob_add) |\n")
    problems = check(readme, api)
    expected = 2  # GetBuffer is not named there; #cblob_blob_add does not exist
    if len(problems) != expected:
        print(f"self-test: expected {expected} problems, found {len(problems)}: {problems}")
        return 1
    print("self-test: the check finds a dead link and a row its documentation does not state")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    source = Path(sys.argv[1])
    problems = check((source / "docs" / "neoml.md").read_text(encoding="utf-8"),
                     (source / "docs" / "api.md").read_text(encoding="utf-8"))
    for problem in problems:
        print(problem)
    if problems:
        return 1
    rows = table_rows((source / "docs" / "neoml.md").read_text(encoding="utf-8"))
    print(f"{len(rows)} rows, each stated where it links")
    return 0


if __name__ == "__main__":
    sys.exit(main())
