#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Filters ctest's output for people and ends it with a summary of the skipped tests by reason.

usage: ctest --output-junit JUNIT ... | ctest_summary.py JUNIT [--label NAME]
       ctest_summary.py --self-test

ctest's lines pass through as they come (its progress, every failure's output, its "tests
passed" line and the list of failed tests), except the two that name each skipped test: its
"***Skipped" progress line and its line in "The following tests did not run". A machine without
a GPU skips a hundred tests; naming each buries the failures. Instead, from the JUnit file ctest
writes (each test's status and output), the summary ends with a count line and one line per skip
reason (the test's last "SKIPPED: reason" line) with the number of tests it covers, most first.
Exits 0 unless the JUnit file cannot be read: the caller takes ctest's own exit status.
"""
import collections
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

SKIPPED_PROGRESS = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: .*\*\*\*Skipped\b")
DID_NOT_RUN = "The following tests did not run:"
DID_NOT_RUN_ENTRY = re.compile(r"^\s+\d+ - .* \(Skipped\)$")
REASON = re.compile(r"^SKIPPED: (.*\S)", re.MULTILINE)


def pass_through(lines, out):
    """Copies ctest's lines to out, less those naming a skipped test."""
    in_did_not_run = False
    for line in lines:
        if SKIPPED_PROGRESS.match(line):
            continue
        if line.rstrip("\n") == DID_NOT_RUN:
            in_did_not_run = True
            continue
        if in_did_not_run and DID_NOT_RUN_ENTRY.match(line.rstrip("\n")):
            continue
        in_did_not_run = False
        out.write(line)
        out.flush()


def results(junit):
    """(passed, failed, {reason: skipped count}) from ctest's JUnit file."""
    passed = failed = 0
    reasons = collections.Counter()
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("skipped") is not None or case.get("status") == "notrun":
            found = REASON.findall(case.findtext("system-out") or "")
            reasons[found[-1] if found else "(the test printed no reason)"] += 1
        elif case.find("failure") is not None or case.get("status") == "fail":
            failed += 1
        else:
            passed += 1
    return passed, failed, reasons


def summary(junit, label):
    passed, failed, reasons = results(junit)
    lines = [f"{label}: {passed} passed, {failed} failed, {sum(reasons.values())} skipped"]
    for reason, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"{count} test{'s' if count != 1 else ''} skipped: {reason}")
    return "\n".join(lines) + "\n"


SAMPLE_OUTPUT = """\
1/4 Test #1: a.passes .......   Passed    0.01 sec
2/4 Test #2: a.no_gpu .......***Skipped   0.01 sec
3/4 Test #3: a.also_no_gpu ..***Skipped   0.01 sec
4/4 Test #4: a.fails ........***Failed    0.01 sec
the failure's output

75% tests passed, 1 tests failed out of 4

The following tests did not run:
\t  2 - a.no_gpu (Skipped)
\t  3 - a.also_no_gpu (Skipped)

The following tests FAILED:
\t  4 - a.fails (Failed)
"""
SAMPLE_JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="x" tests="4" failures="1" skipped="2">
 <testcase name="a.passes" status="run"><system-out/></testcase>
 <testcase name="a.no_gpu" status="notrun"><skipped message="Skipped"/><system-out>SKIPPED: no GPU</system-out></testcase>
 <testcase name="a.also_no_gpu" status="notrun"><skipped message="Skipped"/><system-out>x
SKIPPED: no GPU
</system-out></testcase>
 <testcase name="a.fails" status="fail"><failure message="Failed"/><system-out>the failure's output</system-out></testcase>
</testsuite>
"""
SAMPLE_EXPECTED = """\
1/4 Test #1: a.passes .......   Passed    0.01 sec
4/4 Test #4: a.fails ........***Failed    0.01 sec
the failure's output

75% tests passed, 1 tests failed out of 4


The following tests FAILED:
\t  4 - a.fails (Failed)
sample: 1 passed, 1 failed, 2 skipped
2 tests skipped: no GPU
"""


def self_test():
    """The filter drops the skipped tests' lines and keeps the rest; the summary counts reasons."""
    with tempfile.TemporaryDirectory(prefix="cblob-ctest-summary-") as tmp:
        junit = Path(tmp) / "junit.xml"
        junit.write_text(SAMPLE_JUNIT)
        result = subprocess.run([sys.executable, __file__, str(junit), "--label", "sample"],
                                input=SAMPLE_OUTPUT, capture_output=True, text=True)
    if result.returncode == 0 and result.stdout == SAMPLE_EXPECTED:
        print("skipped tests' lines dropped, failures kept, 2 tests counted under one reason")
        return 0
    print(f"exit {result.returncode}; got:\n{result.stdout}{result.stderr}\nexpected:\n{SAMPLE_EXPECTED}")
    return 1


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--label"):
        print(__doc__, file=sys.stderr)
        return 2
    pass_through(iter(sys.stdin.readline, ""), sys.stdout)
    try:
        text = summary(argv[0], argv[2] if len(argv) == 3 else "ctest")
    except (OSError, ET.ParseError) as error:
        print(f"ctest_summary: cannot read {argv[0]}: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
