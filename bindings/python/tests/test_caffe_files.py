# SPDX-License-Identifier: BSD-2-Clause
"""Every real Caffe file of ../shared/data/caffe through cblob.load / cblob.load_blob, against the
independent decoding beside it (*.layers.txt, *.blob.txt)."""
import numpy as np
import pytest

import cblob
from conftest import CAFFE_DATA_DIR, close, expected_blob, expected_layers


def real_files(suffix):
    if not CAFFE_DATA_DIR.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{CAFFE_DATA_DIR} is absent"))]
    files = sorted(CAFFE_DATA_DIR.glob(f"*{suffix}"))
    return files or [pytest.param(None, marks=pytest.mark.skip(reason=f"no *{suffix} in {CAFFE_DATA_DIR}"))]


@pytest.mark.parametrize("path", real_files(".caffemodel"), ids=lambda p: getattr(p, "name", "none"))
def test_model_against_its_answers(path):
    name, layers = expected_layers(path.with_suffix(".layers.txt"))
    model = cblob.load(path)
    assert model.name == name
    assert [(layer.name, layer.type) for layer in model.layers] == [(n, t) for n, t, _ in layers]
    weights = dict(model)
    for lname, _, blobs in layers:
        if not blobs:
            assert lname not in weights
            continue
        assert len(weights[lname]) == len(blobs)
        for array, (shape, first, total) in zip(weights[lname], blobs):
            assert array.shape == shape
            assert close(float(array.flat[0]), first), f"{lname} first {array.flat[0]} != {first}"
            assert close(float(array.sum(dtype=np.float64)), total), f"{lname} sum"


@pytest.mark.parametrize("path", real_files(".binaryproto"), ids=lambda p: getattr(p, "name", "none"))
def test_blob_against_its_answers(path):
    want = expected_blob(path.with_suffix(".blob.txt"))
    array = cblob.load_blob(path)
    assert (array.shape, array.size, array.dtype) == (want["shape"], want["count"], np.float32)
    assert close(float(array.flat[0]), want["first"])
    assert close(float(array.sum(dtype=np.float64)), want["sum"])
    assert close(float(array.min()), want["min"]) and close(float(array.max()), want["max"])
    assert cblob.detect_file(path) == cblob.ProtoKind.BLOB
