# SPDX-License-Identifier: BSD-2-Clause
"""The packages people use instead of cblob for safetensors and npz, as bench_format_peers's
children: one kind of work done once (cold) and then WARM more times in this process, timed
around the package's call only (the interpreter's start and the imports are not timed), printed
as "COLD WARM" in seconds (warm: the median).

    python format_peers.py MODE PATH WARM [OUT]

MODE:
  st-read    safetensors.numpy.load_file(PATH): every tensor as a NumPy array
  st-one     safe_open(PATH, "np").get_tensor(NAME) of one tensor (NAME: OUT)
  st-write   safetensors.numpy.save_file of PATH's tensors (read first, not timed) to OUT
  npz-read   numpy.load(PATH) and every member read into an array
  npz-write  numpy.savez of PATH's arrays (an npz, read first, not timed) to OUT
  st-write-durable, npz-write-durable
             the same writes with the promise cblob's writers keep (a machine that stops later
             finds the old file or the whole new one), as a user of the package gets it: written
             to a temporary name beside OUT, os.fsync'ed, then os.replace'd over OUT; timed from
             the call to the rename
"""
import os
import statistics
import sys
import time

import numpy


def st_read(path, _):
    from safetensors.numpy import load_file
    tensors = load_file(path)
    return sum(t.nbytes for t in tensors.values())


def st_one(path, name):
    from safetensors import safe_open
    with safe_open(path, framework="np") as f:
        return f.get_tensor(name).nbytes


def npz_read(path, _):
    with numpy.load(path) as z:
        return sum(z[k].nbytes for k in z.files)


def durably(write, out):
    """write(name) to a temporary beside out, fsync it, rename it over out: cblob's promise."""
    temporary = os.path.join(os.path.dirname(out) or ".", f".format_peers-tmp-{os.getpid()}-" + os.path.basename(out))
    write(temporary)
    fd = os.open(temporary, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, out)


def timed(work, path, extra):
    start = time.perf_counter()
    work(path, extra)
    return time.perf_counter() - start


def main():
    mode, path, warm = sys.argv[1], sys.argv[2], int(sys.argv[3])
    extra = sys.argv[4] if len(sys.argv) > 4 else None
    if mode in ("st-read", "st-one", "npz-read"):
        work = {"st-read": st_read, "st-one": st_one, "npz-read": npz_read}[mode]
        times = [timed(work, path, extra) for _ in range(warm + 1)]
    elif mode in ("st-write", "st-write-durable", "npz-write", "npz-write-durable"):
        if extra is None:
            sys.exit(f"format_peers.py: {mode} needs OUT, the file to write")
        if os.path.exists(extra) and os.path.samefile(path, extra):
            sys.exit(f"format_peers.py: OUT is PATH ({extra}): each write deletes OUT first")
        if mode.startswith("st-"):
            from safetensors.numpy import load_file, save_file
            tensors = load_file(path)
            def write(name):
                save_file(tensors, name)
        else:
            with numpy.load(path) as z:
                arrays = {k: z[k] for k in z.files}
            def write(name):  # every name here ends in .npz, which numpy.savez would append
                numpy.savez(name, **arrays)
        times = []
        for _ in range(warm + 1):
            if os.path.exists(extra):
                os.unlink(extra)
            start = time.perf_counter()
            if mode.endswith("-durable"):
                durably(write, extra)
            else:
                write(extra)
            times.append(time.perf_counter() - start)
        os.unlink(extra)
    else:
        sys.exit(f"format_peers.py: unknown mode {mode}")
    print(f"{times[0]:.9f} {statistics.median(times[1:]) if warm > 0 else times[0]:.9f}")


if __name__ == "__main__":
    main()
