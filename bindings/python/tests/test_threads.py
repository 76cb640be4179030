# SPDX-License-Identifier: BSD-2-Clause
"""Threads. ctypes releases the GIL around every foreign call (a CDLL's functions do; a PyDLL's
would not), so long calls let other Python threads run; distinct blobs work on distinct
threads at once; pure getters of one blob may run on several threads."""
import sys
import threading
import time

import numpy as np

import cblob


def test_a_long_call_releases_the_gil(tmp_path):
    """With a switch interval of a minute, the interpreter never takes the GIL from a running
    thread: the other thread can only run while this one gives the GIL up, which is inside the
    library calls. Its counter moving during the calls shows they release the GIL."""
    blob = cblob.Blob(4_000_000, np.float64)
    blob.fill(1.0)
    progress, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            progress[0] += 1
            time.sleep(0)  # gives the GIL up, so the calling thread gets it back when its call returns

    previous = sys.getswitchinterval()
    sys.setswitchinterval(60)
    worker = threading.Thread(target=count)
    try:
        worker.start()
        during = []
        for _ in range(5):
            before = progress[0]
            blob.to_proto()  # 32 MB of protobuf: tens of milliseconds in the library
            during.append(progress[0] - before)
    finally:
        stop.set()
        worker.join()
        sys.setswitchinterval(previous)
    assert sum(during) > 0, f"no progress on the other thread during the calls: {during}"


def test_distinct_blobs_on_distinct_threads():
    results, errors = {}, []

    def work(i):
        try:
            blob = cblob.Blob((100, 100))
            for _ in range(50):
                blob.fill(i)
                blob.scale(2.0)
                results[i] = blob.asum()
        except Exception as e:  # collected: an assertion in a thread would be lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {i: 2.0 * i * 10000 for i in range(8)}


def test_pure_getters_of_one_blob_on_several_threads():
    blob = cblob.Blob((3, 7))
    seen, errors = set(), []

    def read():
        try:
            for _ in range(2000):
                seen.add((blob.count, blob.shape, blob.ndim))
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and seen == {(21, (3, 7), 2)}
