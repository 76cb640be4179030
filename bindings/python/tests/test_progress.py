# SPDX-License-Identifier: BSD-2-Clause
"""Context.set_progress (cblob_context_set_progress): a save reports its progress, a function that
asks to stop cancels it (CancelledError, the file left as it was), an exception in the function
stops the call and comes out of it, and a Context's function lives as long as its blobs. Then
Blob.from_dlpack, which always imports through cblob_blob_from_dlpack_on_stream."""
import gc

import numpy as np
import pytest

import cblob


def big_blob(context, fill=None):
    """A blob of a few MiB, so that a save reports progress more than twice."""
    values = np.arange(3 * 1024 * 1024, dtype=np.float32) if fill is None else \
        np.full(3 * 1024 * 1024, fill, dtype=np.float32)
    return cblob.Blob.from_numpy(values.reshape(3, 1024, 1024), context=context, copy=True)


def test_progress_is_reported_and_a_stop_cancels_the_save(tmp_path):
    context = cblob.Context()
    path = tmp_path / "b.npy"
    calls = []
    context.set_progress(lambda done, total: calls.append((done, total)))  # None: go on
    big_blob(context).save_npy(path)
    size = path.stat().st_size
    assert len(calls) > 2, calls
    assert calls[0] == (0, size) and calls[-1] == (size, size)
    saved = path.read_bytes()

    other = big_blob(context, 7.0)
    context.set_progress(lambda done, total: done == 0)
    with pytest.raises(cblob.CancelledError) as raised:
        other.save_npy(path)
    assert raised.value.status == cblob.Status.CANCELLED
    assert path.read_bytes() == saved, "the stopped save left the file as it was"
    absent = tmp_path / "absent.npy"
    with pytest.raises(cblob.CancelledError):
        other.save_npy(absent)
    assert not absent.exists()

    def fails(done, total):
        raise ValueError("the function's own")
    context.set_progress(fails)
    with pytest.raises(ValueError, match="the function's own"):
        other.save_npy(absent)
    assert not absent.exists()
    with pytest.raises(cblob.CancelledError):  # and the next stop is a plain CancelledError again
        context.set_progress(lambda done, total: False)
        other.save_npy(absent)

    context.set_progress(None)
    other.save_npy(absent)
    assert np.array_equal(np.load(absent), np.full((3, 1024, 1024), 7.0, np.float32))
    with pytest.raises(TypeError):
        context.set_progress(42)


def test_a_contexts_function_lives_as_long_as_its_blobs(tmp_path):
    calls = []
    context = cblob.Context()
    context.set_progress(lambda done, total: calls.append(done) or False)
    blob = cblob.Blob.from_numpy(np.zeros(4, np.float32), context=context, copy=True)
    del context
    gc.collect()
    with pytest.raises(cblob.CancelledError):  # a blob keeps its Context, and so the function
        blob.save_npy(tmp_path / "b.npy")
    assert calls == [0]
    assert not (tmp_path / "b.npy").exists()


class Producer:
    """A host array's DLPack producer that records what the consumer asked of __dlpack__."""

    def __init__(self, array):
        self.array, self.asked = array, []

    def __dlpack__(self, **kwargs):
        self.asked.append(kwargs)
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_from_dlpack_imports_on_a_stream_and_shares_host_memory():
    context = cblob.Context()
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    producer = Producer(array)
    blob = cblob.Blob.from_dlpack(producer, context=context, copy=False)
    # A host tensor is ready when handed over: no stream is asked of the producer.
    assert all("stream" not in kwargs for kwargs in producer.asked), producer.asked
    blob.data[0, 1] = 10.0
    assert array[0, 1] == 10.0, "the blob is the array's memory"
    back = cblob.Blob.from_dlpack(blob, context=context, copy=False)  # cblob's own export
    back.data[1, 2] = 50.0
    assert blob.data[1, 2] == 50.0 and array[1, 2] == 50.0
    # The import's refusals hold: cblob has no float16 blob.
    with pytest.raises(cblob.DTypeError) as raised:
        cblob.Blob.from_dlpack(np.zeros(4, np.float16), context=context, copy=False)
    # NumPy 2 exports a versioned tensor, NumPy 1 a legacy one: either way the stream form.
    assert raised.value.function in ("cblob_blob_from_dlpack_on_stream", "cblob_blob_from_dlpack_legacy_on_stream")
