#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`cblob inspect` over one layer holding MIB of one kind of field (issue 32): not a test, a
benchmark that prints what it measured, for one or more builds of the program side by side.

usage: bench/inspect_layers.py [--mib N] [--repeat R] CBLOB [CBLOB...]

Writes five nets into a temporary folder (removed at the end), each one layer of about N MiB
(1 by default) of: bottoms ("b0", "b1", ...), include rules (phase and a stage), param specs (a
name and lr_mult), one convolution_param whose repeated kernel_size is given element by element,
and 2-byte unknown fields. Runs `inspect --quiet` (the table), `--json`, `--shapes --json` and
`--params` of each with each program given, R times (3 by default) interleaved (every program's
run of one case before the next round), and prints for each the median peak resident memory
(the child's own, from GNU time's wait4) and the median CPU time (user + system) with their min-max. A
program whose library is not beside it is run with LD_LIBRARY_PATH set to its folder.
"""
import argparse
import os
import shutil
import statistics
import struct
import subprocess
import tempfile


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(number, wire_type):
    return varint(number << 3 | wire_type)


def field(number, payload):
    payload = payload.encode() if isinstance(payload, str) else payload
    return tag(number, 2) + varint(len(payload)) + payload


def layer_of(kind, size):
    """LayerParameter bytes: a name, a type, about `size` bytes of one kind of field, a top."""
    parts, used, i = [field(1, "conv"), field(2, "Convolution")], 0, 0
    if kind == "repeated":
        element = tag(4, 0) + varint(3)  # ConvolutionParameter.kernel_size
        parts.append(field(106, element * (size // len(element))))
        used = size
    rule = field(8, tag(1, 0) + varint(0) + field(4, "s"))
    spec = field(6, field(1, "w") + tag(3, 5) + struct.pack("<f", 1.0))
    unknown = tag(15, 0) + varint(1)
    while used < size:
        item = {"bottoms": lambda: field(3, f"b{i}"), "rules": lambda: rule, "specs": lambda: spec,
                "unknown": lambda: unknown}[kind]()
        parts.append(item)
        used += len(item)
        i += 1
    parts.append(field(4, "top"))
    return b"".join(parts)


def run(program, args, folder):
    """(peak KiB, CPU seconds) of one run: GNU time's figures, from its wait4 of the child (a
    child forked from this Python would count the interpreter's pages in its peak)."""
    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(program))
    if os.path.exists(os.path.join(here, "libcblob.so.1")):
        env["LD_LIBRARY_PATH"] = here
    figures = os.path.join(folder, "time")
    with open(os.devnull, "wb") as null:
        result = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", figures, program] + args, stdout=null,
                                stderr=subprocess.PIPE, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{program} {' '.join(args)}: exit {result.returncode}: {result.stderr.decode(errors='replace')}")
    with open(figures, encoding="ascii") as f:
        peak, user, system = f.read().split()
    return int(peak), float(user) + float(system)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("programs", nargs="+")
    options = parser.parse_args()
    folder = tempfile.mkdtemp()
    try:
        size = int(options.mib * (1 << 20))
        modes = {"table": ["--quiet"], "--json": ["--quiet", "--json"], "--shapes --json": ["--quiet", "--shapes", "--json"],
                 "--params": ["--quiet", "--params"]}
        print(f"one layer of {options.mib:g} MiB; median of {options.repeat} interleaved runs (min-max)")
        print(f"{'layer of':<10} {'mode':<16} {'program':<40} {'peak MB':>16} {'CPU s':>22}")
        for kind in ("bottoms", "rules", "specs", "repeated", "unknown"):
            path = os.path.join(folder, f"{kind}.caffemodel")
            with open(path, "wb") as f:
                f.write(field(100, layer_of(kind, size)))
            for mode, args in modes.items():
                runs = {p: [] for p in options.programs}
                for _ in range(options.repeat):
                    for program in options.programs:
                        runs[program].append(run(program, ["inspect"] + args + [path], folder))
                for program, results in runs.items():
                    peaks = [r[0] / 1024 for r in results]
                    cpu = [r[1] for r in results]
                    print(f"{kind:<10} {mode:<16} {program[-40:]:<40} "
                          f"{statistics.median(peaks):6.1f} ({min(peaks):.1f}-{max(peaks):.1f}) "
                          f"{statistics.median(cpu):8.3f} ({min(cpu):.3f}-{max(cpu):.3f})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
