# SPDX-License-Identifier: BSD-2-Clause
"""NumPy and DLPack lifetimes: views outlive their blob and model, memory is released exactly
once (counted through release callbacks and deleters put in front of the producers'), and
exchange is without a copy where the layout allows."""
import ctypes
import gc

import numpy as np
import pytest

import cblob
from cblob import _dlpack
from conftest import SAMPLES


class SharedArray:
    """An array given to Blob.from_numpy, with a counter of how often cblob let go of it: the
    array is alive exactly as long as cblob holds it, so its finalizer counts the release."""

    def __init__(self, values):
        self.array = np.array(values, dtype=np.float32)
        self.released = 0
        import weakref
        weakref.finalize(self.array, self._count)

    def _count(self):
        self.released += 1


def test_a_view_outlives_its_blob_and_memory_is_released_once():
    shared = SharedArray([1, 2, 3, 4])
    blob = cblob.Blob.from_numpy(shared.array)
    array = shared.array
    shared.array = None
    view = blob.data
    assert view.ctypes.data == array.ctypes.data, "no copy"
    del array, blob
    gc.collect()
    assert shared.released == 0 and view.tolist() == [1, 2, 3, 4]
    derived = view[1:]
    del view
    gc.collect()
    assert shared.released == 0 and derived.tolist() == [2, 3, 4], "a slice keeps the export alive"
    del derived
    gc.collect()
    assert shared.released == 1


def test_views_outlive_the_model():
    model = cblob.load(SAMPLES / "tiny_lenet.caffemodel")
    conv1 = model["conv1"][0]
    total = float(conv1.sum())
    del model
    gc.collect()
    assert float(conv1.sum()) == total


def test_a_reshape_past_the_capacity_leaves_views_on_the_old_memory():
    blob = cblob.Blob(3)
    blob.data[:] = 5
    old = blob.data
    blob.reshape(1000)
    blob.data[:] = 1
    assert old.tolist() == [5, 5, 5]


def test_a_writable_view_and_a_read_only_view():
    blob = cblob.Blob(2)
    assert blob.view(writable=False).flags.writeable is False
    blob.data[0] = 3
    assert blob.view(writable=False)[0] == 3


class Counting:
    """A producer wrapper: its capsule's tensor gets a deleter that counts, then calls the
    producer's (DLPack's rule: the consumer calls it once)."""

    def __init__(self, producer, **kwargs):
        self.producer, self.kwargs, self.calls = producer, kwargs, 0
        self._keep = []

    def __dlpack_device__(self):
        return self.producer.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        capsule = self.producer.__dlpack__(**{**kwargs, **self.kwargs})
        name, address = _dlpack.open_capsule(capsule)
        managed = _dlpack.tensor_of(name, address).contents
        deleter_type = type(managed.deleter)
        # A copy of the pointer: the field object itself would read the replacement below.
        original = deleter_type(ctypes.cast(managed.deleter, ctypes.c_void_p).value)

        def counted(tensor):
            self.calls += 1
            original(tensor)

        replacement = deleter_type(counted)
        self._keep.append(replacement)
        managed.deleter = replacement
        return capsule


def test_numpy_takes_a_blob_without_a_copy_and_deletes_the_export_once():
    blob = cblob.Blob((2, 3))
    blob.data[...] = 7
    producer = Counting(blob)
    array = np.from_dlpack(producer)
    assert array.shape == (2, 3) and (array == 7).all()
    blob.data[0, 0] = -1
    assert array[0, 0] == -1, "one memory"
    del blob
    gc.collect()
    assert producer.calls == 0 and array.sum() == 34
    del array
    gc.collect()
    assert producer.calls == 1


def test_an_unconsumed_capsule_deletes_its_tensor_once():
    blob = cblob.Blob(3)
    producer = Counting(blob)
    capsule = producer.__dlpack__(max_version=(1, 0))
    del capsule
    gc.collect()
    assert producer.calls == 1


def test_cblob_takes_a_numpy_array_without_a_copy_and_deletes_it_once():
    array = np.arange(6, dtype=np.float64).reshape(2, 3)
    producer = Counting(array)
    blob = cblob.Blob.from_dlpack(producer)
    assert blob.shape == (2, 3) and blob.dtype == np.float64
    blob.data[1, 2] = 100
    assert array[1, 2] == 100, "one memory"
    view = blob.data
    del blob
    gc.collect()
    assert producer.calls == 0
    del view
    gc.collect()
    assert producer.calls == 1


def test_a_strided_array_is_copied_and_copy_false_refuses():
    array = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    blob = cblob.Blob.from_dlpack(array)
    np.testing.assert_array_equal(blob.data, array)
    blob.data[0, 0] = 99
    assert array[0, 0] == 0, "a copy"
    with pytest.raises(cblob.ShapeError):
        cblob.Blob.from_dlpack(array, copy=False)
    with pytest.raises(cblob.InvalidArgumentError):
        cblob.Blob.from_numpy(array, copy=False)
    copied = cblob.Blob.from_numpy(np.arange(3, dtype=np.int32), copy=True)
    assert copied.data.tolist() == [0, 1, 2]


def test_from_numpy_shares_and_copies_as_documented():
    array = np.zeros((2, 2), np.uint32)
    blob = cblob.Blob.from_numpy(array)
    blob.fill(9)
    assert (array == 9).all()
    readonly = np.frombuffer(bytes(8), dtype=np.float32)
    copy = cblob.Blob.from_numpy(readonly)
    copy.fill(1)
    assert readonly.tolist() == [0, 0]
    swapped = np.array([1, 2], dtype=">f4")
    assert cblob.Blob.from_numpy(swapped).data.tolist() == [1, 2]
    with pytest.raises(cblob.DTypeError):
        cblob.Blob.from_numpy(np.zeros(2, np.float16))


def test_a_blob_through_the_versioned_protocol():
    blob = cblob.Blob(4, np.int32)
    blob.data[:] = [1, 2, 3, 4]
    capsule = blob.__dlpack__(max_version=(1, 3))
    name, address = _dlpack.open_capsule(capsule)
    managed = _dlpack.tensor_of(name, address).contents
    assert name == _dlpack.VERSIONED and managed.version.major == 1
    assert managed.dl_tensor.shape[0] == 4 and managed.dl_tensor.dtype.code == 0
    again = cblob.Blob.from_dlpack(blob)
    again.data[0] = -5
    assert blob.data[0] == -5
    assert blob.__dlpack_device__() == (_dlpack.KDL_CPU, 0)
    assert np.asarray(blob).tolist() == [-5, 2, 3, 4]
