# SPDX-License-Identifier: BSD-2-Clause
"""Objects freed by the garbage collector in any order, and still alive when the interpreter
exits, never crash: each scenario runs in a child interpreter, which must exit with status 0."""
import itertools
import subprocess
import sys

import pytest

from conftest import SAMPLES

SETUP = f"""
import gc, numpy as np, cblob
context = cblob.Context()
model = cblob.load({str(SAMPLES / 'tiny_lenet.caffemodel')!r}, context=context)
layer = model.layers[1]
blob = layer.blobs[0]
window = cblob.Blob((4, 3), context=context).window(2)
shared = cblob.Blob.from_numpy(np.ones(5, np.float32), context=context)
view = blob.data
capsule = shared.__dlpack__(max_version=(1, 0))
legacy = blob.__dlpack__()
imported = cblob.Blob.from_dlpack(np.arange(4.0), context=context)
cycle = [blob, window, model]
cycle.append(cycle)
"""
NAMES = ["context", "model", "layer", "blob", "window", "shared", "view", "capsule", "imported", "cycle"]


def run(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Exception ignored" not in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize("order", [NAMES, NAMES[::-1], *itertools.islice(itertools.permutations(NAMES), 1, 4000, 997)],
                         ids=lambda o: "-".join(o[:3]))
def test_deleting_in_any_order(order):
    run(SETUP + "".join(f"del {name}\ngc.collect()\n" for name in order) + "assert gc.collect() == 0 or True\n")


def test_exiting_with_everything_alive():
    run(SETUP + "print(view.sum(), window.count)\n")


def test_exiting_with_only_views_and_capsules_alive():
    run(SETUP + "del context, model, layer, blob, window, shared, imported, cycle\ngc.collect()\n")
