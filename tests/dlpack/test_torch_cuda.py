#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""DLPack's stream rules with a real consumer and producer: PyTorch on a GPU (issue 25).

On a GPU the ordering hazards are races, so each check first keeps the GPU busy on PyTorch's
stream (torch.cuda._sleep) to give the wrong order every chance to happen:

- import: PyTorch writes a tensor after a long sleep on its stream and hands it to
  cblob.Blob.from_dlpack without waiting; cblob's sum must see the values (the binding passes the
  context's stream to __dlpack__, and PyTorch orders its work before it);
- export: PyTorch queues a copy of a cblob export after a long sleep, drops the tensor (its
  deleter runs from the host at once) and cblob's next blob of the same size takes the freed
  memory and overwrites it; PyTorch's copy must still see the old values (cblob frees memory
  whose address left it after a device-wide wait).

usage: test_torch_cuda.py LIBCBLOB
Prints one line per check and "N passed, N failed"; exits 77 (skipped) without PyTorch with CUDA,
or without a GPU.
"""
import gc
import os
import sys
from pathlib import Path

try:
    import torch
except ImportError:
    print("SKIPPED: PyTorch is not installed for this Python")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIPPED: PyTorch sees no CUDA GPU")
    sys.exit(77)

os.environ["CBLOB_LIBRARY"] = sys.argv[1]
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bindings" / "python" / "src"))
import cblob  # noqa: E402

COUNT = 1 << 22
SLEEP_CYCLES = 200_000_000  # about 0.1 s of a GPU's clock: longer than cblob's own work here
failures = 0


def check(name, ok, detail=""):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}")
    failures += 0 if ok else 1


def gpu_context():
    context = cblob.Context()
    context.set_mode(cblob.Mode.GPU)
    return context


def import_waits_for_the_producer():
    context = gpu_context()
    x = torch.zeros(COUNT, device="cuda")
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)
    x.fill_(1.5)  # queued behind the sleep on PyTorch's current stream
    blob = cblob.Blob.from_dlpack(x, context=context)  # no wait on the host
    total = blob.asum()
    check("import waits for the producer's stream", total == 1.5 * COUNT, f"asum {total}, expected {1.5 * COUNT}")
    del blob
    del x


def export_outlives_the_consumers_work():
    context = gpu_context()
    blob = cblob.Blob((COUNT,), context=context)
    blob.fill(2.0)
    seen = torch.from_dlpack(blob)  # PyTorch passes its stream; cblob's work is done first
    out = torch.empty_like(seen)
    torch.cuda._sleep(SLEEP_CYCLES)
    out.copy_(seen)  # queued behind the sleep
    del seen  # PyTorch calls the deleter now, without waiting for the copy
    del blob
    gc.collect()
    reuse = cblob.Blob((COUNT,), context=context)  # cblob's pool: the same block, if it was freed
    reuse.fill(-7.0)
    context.synchronize()
    torch.cuda.synchronize()
    wrong = int((out != 2.0).sum().item())
    check("export outlives the consumer's queued work", wrong == 0, f"{wrong} of {COUNT} elements overwritten")
    del reuse


try:
    cblob.gpu_probe()
except cblob.GPUUnavailableError as e:
    print(f"SKIPPED: cblob cannot use the GPU: {e}")
    sys.exit(77)
import_waits_for_the_producer()
export_outlives_the_consumers_work()
print(f"{2 - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
