# SPDX-License-Identifier: BSD-2-Clause
"""The NumPy side of bench/bench_math: a child process that times Caffe's blob math done the way a
NumPy user writes it, on arrays of its own, when bench_math asks. One command per line on stdin,
one answer per line on stdout:

  info                      NumPy's version and the BLAS it uses
  setup DTYPE N             makes data and diff of N values of DTYPE (float32 or float64)
  time OP CALLS             runs OP CALLS times, answers the seconds they took (perf_counter)

OP: update (data -= diff, in place), asum (abs into a preallocated scratch array, then sum),
sumsq (numpy.dot of data with itself: BLAS, threaded by the BLAS), scale (data *= factor, in
place, alternating 0.5 and 2 so values stay bounded). The thread count is the environment's
(bench_math sets OPENBLAS_NUM_THREADS and OMP_NUM_THREADS to 1 for the one-thread child).
"""
import sys
import time

import numpy as np


def blas_name():
    try:
        config = np.show_config(mode="dicts")  # NumPy 2
        return config["Build Dependencies"]["blas"]["name"]
    except TypeError:
        return "the system's libblas.so.3"


def make_ops(dtype, n):
    data = ((np.arange(n, dtype=np.int64) * 7919 % 2000) / 1000.0 - 1.0).astype(dtype)
    diff = (data * 1e-9).astype(dtype)
    scratch = np.empty_like(data)
    factor = [2.0]

    def scale():
        factor[0] = 0.5 if factor[0] == 2.0 else 2.0
        np.multiply(data, dtype(factor[0]), out=data)

    return {
        "update": lambda: np.subtract(data, diff, out=data),
        "asum": lambda: np.abs(data, out=scratch).sum(),
        "sumsq": lambda: np.dot(data, data),
        "scale": scale,
    }


def main():
    ops = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "info":
            answer = f"NumPy {np.__version__} ({blas_name()})"
        elif words[0] == "setup":
            ops = {}  # the previous arrays go before the new ones are made
            ops = make_ops(np.float32 if words[1] == "float32" else np.float64, int(words[2]))
            answer = "ok"
        elif words[0] == "time":
            op, calls = ops[words[1]], int(words[2])
            start = time.perf_counter()
            for _ in range(calls):
                op()
            answer = repr(time.perf_counter() - start)
        else:
            answer = f"error: unknown command {words[0]}"
        print(answer, flush=True)


if __name__ == "__main__":
    main()
