#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The fresh-environment check (bindings/python/test.sh): in a new virtual environment holding
only the binary wheel (and NumPy), run from a folder outside the source tree with no
CBLOB_LIBRARY, LD_LIBRARY_PATH or PYTHONPATH, the one-line load works, and libcblob, BLIS and
protobuf-c are the wheel's copies, not the machine's. `python -m cblob info` runs the bundled
program.

usage: check_fresh_venv.py VENV MODEL
"""
import subprocess
import sys
from pathlib import Path

venv, model = Path(sys.argv[1]).resolve(), sys.argv[2]
line = f"import cblob; print({{k: [a.shape for a in v] for k, v in cblob.load({model!r}).items()}})"
print(f"$ python -c {line!r}", flush=True)
subprocess.run([sys.executable, "-c", line], check=True)

import cblob  # noqa: E402

cblob.load(model)
mapped = {Path(f.split()[-1]) for f in open("/proc/self/maps") if ".so" in f.split()[-1]}
for name in ("libcblob.so.1", "libblis-", "libprotobuf-c-"):
    paths = [p for p in mapped if p.name.startswith(name)]
    if not paths or any(venv not in p.resolve().parents for p in paths):
        sys.exit(f"check_fresh_venv: {name} comes from {paths or 'nowhere'}, not from {venv}")
    print(f"{name}: {paths[0]}")
info = subprocess.run([sys.executable, "-m", "cblob", "info"], capture_output=True, text=True, check=True).stdout
if "BLIS" not in info:
    sys.exit(f"check_fresh_venv: `python -m cblob info` said: {info}")
print(f"check_fresh_venv: cblob {cblob.version()} from {cblob.library_path()}; python -m cblob info works")
