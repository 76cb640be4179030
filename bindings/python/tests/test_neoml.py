# SPDX-License-Identifier: BSD-2-Clause
"""NeoML's operations through the Python layer: named layouts, windows, copies, transposes,
merges and splits, fills, adds, clones."""
import numpy as np
import pytest

import cblob


def test_named_layout():
    blob = cblob.Blob.image2d(1, 2, 3, 4, 5)
    assert blob.shape == (1, 2, 1, 3, 4, 1, 5)
    assert (blob.dim(cblob.Dim.CHANNELS), blob.object_count, blob.object_size, blob.geometrical_size) == (5, 2, 60, 12)
    assert cblob.Blob.tensor([2, 3]).shape == (2, 3, 1, 1, 1, 1, 1)
    assert cblob.Blob.vector(4).shape[0] == 4 and cblob.Blob.matrix(2, 3).count == 6
    like = blob.like(np.int32)
    assert like.shape == blob.shape and like.dtype == np.int32 and blob.equal_shape(like)
    blob.fill_object(1, 3.0)
    assert blob.asum() == 180 and blob.data[0, 1].min() == 3
    blob.clear_object(1)
    assert blob.asum() == 0


def test_windows():
    parent = cblob.Blob((5, 2))
    parent.data[...] = np.arange(10).reshape(5, 2)
    window = parent.window(2)
    assert window.is_window and window.shape == (2, 2) and window.data.tolist() == [[0, 1], [2, 3]]
    window.position = 3
    assert window.data.tolist() == [[6, 7], [8, 9]]
    with pytest.raises(cblob.OutOfRangeError):
        window.shift(1)
    window.data[0, 0] = -1
    assert parent.data[3, 0] == -1 and window.parent.shape == (5, 2) and window.owner.count == 10


def test_copies_transposes_merges_splits():
    a = cblob.Blob((2, 3), np.int32)
    a.copy_in(np.arange(6))
    np.testing.assert_array_equal(a.copy_out(), np.arange(6).reshape(2, 3))
    t = a.transposed(0, 1)
    np.testing.assert_array_equal(t.data, np.arange(6).reshape(2, 3).T)
    merged = cblob.Blob((4, 3), np.int32)
    merged.merge([a, a], axis=0)
    np.testing.assert_array_equal(merged.data, np.vstack([a.data, a.data]))
    left, right = cblob.Blob((4, 1), np.int32), cblob.Blob((4, 2), np.int32)
    merged.split([left, right], axis=1)
    np.testing.assert_array_equal(right.data, merged.data[:, 1:])
    floats = a.clone(np.float64)
    assert floats.dtype == np.float64 and floats.data.tolist() == [[0, 1, 2], [3, 4, 5]]
    copy = a.deep_copy()
    copy.add(a)
    assert copy.data.tolist() == [[0, 2, 4], [6, 8, 10]]
    back = cblob.Blob((2, 3), np.float32)
    back.convert_from(a)
    assert back.asum() == 15
    with pytest.raises(cblob.ShapeError):
        merged.merge([a], axis=0)
