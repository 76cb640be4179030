# SPDX-License-Identifier: BSD-2-Clause
"""The bindings' common scenario: the real LeNet model and the bundled sample against their
expected answers and against Python's protobuf package; blob math, sharing, errors."""
import numpy as np
import pytest

import cblob
from conftest import SAMPLES, caffe_file, close, expected_layers


def test_library_identifies_itself():
    major, minor = cblob.abi_version()
    assert major == cblob.ABI_VERSION_MAJOR and minor >= cblob.ABI_VERSION_MINOR
    assert len(cblob.version().split(".")) == 3
    assert cblob.__version__ == cblob.version()  # the package is the library it bundles
    assert "BLIS" in cblob.blas_info()
    assert cblob.cpu_features()
    assert cblob.library_path().endswith("libcblob.so.1")


def check_model(model_path, answers_path, caffe_pb2):
    name, expected = expected_layers(answers_path)
    model = cblob.load(model_path)
    assert (model.name, model.format) == (name, cblob.NetFormat.V2)
    assert [(layer.name, layer.type) for layer in model.layers] == [(n, t) for n, t, _ in expected]
    decoded = caffe_pb2.NetParameter.FromString(model_path.read_bytes())
    assert decoded.name == model.name
    for layer, (lname, _, blobs), theirs in zip(model.layers, expected, decoded.layer):
        assert len(layer.blobs) == len(blobs) == len(theirs.blobs)
        for blob, (shape, first, total), proto in zip(layer.blobs, blobs, theirs.blobs):
            array = blob.data
            assert (array.dtype, array.shape) == (np.float32, shape)
            assert close(float(array.flat[0]), first) and close(float(array.sum(dtype=np.float64)), total)
            assert tuple(proto.shape.dim) == shape
            np.testing.assert_array_equal(array.ravel(), np.array(proto.data, dtype=np.float32))
            assert blob.head(cblob.Part.DIFF) == cblob.Head.UNINITIALIZED, "a .caffemodel has no diffs"
    weights = dict(model)
    assert list(weights) == [n for n, _, blobs in expected if blobs]
    return model


def test_lenet_from_the_shared_caffe_files(caffe_pb2):
    path = caffe_file("lenet_iter_10000.caffemodel")
    model = check_model(path, path.with_suffix(".layers.txt"), caffe_pb2)
    assert model["ip1"][0].shape == (500, 800)
    again = cblob.Model.from_bytes(path.read_bytes())
    assert again.layer("ip1").blobs[0].asum() == model.layer("ip1").blobs[0].asum()
    assert cblob.detect(path.read_bytes()) == cblob.ProtoKind.NET


def test_the_bundled_sample_model(caffe_pb2, tmp_path):
    path = SAMPLES / "tiny_lenet.caffemodel"
    model = check_model(path, SAMPLES / "tiny_lenet.layers.txt", caffe_pb2)
    assert model.to_bytes() == path.read_bytes(), "cblob wrote the sample: saving gives its bytes back"
    model.save(tmp_path / "copy.caffemodel")
    assert (tmp_path / "copy.caffemodel").read_bytes() == path.read_bytes()


def test_create_reshape_fill_update_asum():
    blob = cblob.Blob((2, 3, 4))
    assert (blob.count, blob.ndim, blob.shape, blob.dtype) == (24, 3, (2, 3, 4), np.float32)
    assert blob.head() == cblob.Head.UNINITIALIZED
    blob.reshape(3, 4)
    assert (blob.shape, blob.shape_string(), blob.capacity) == ((3, 4), "3 4 (12)", 24)
    assert (blob.shape_at(-1), blob.count_range(1, 2), blob.canonical_axis(-2), blob.offset(2, 1)) == (4, 4, 0, 9)
    blob.data[...] = np.arange(12).reshape(3, 4)
    blob.diff[...] = 0.5
    assert blob.head() == cblob.Head.AT_CPU
    blob.update()
    expected = np.arange(12, dtype=np.float32).reshape(3, 4) - 0.5
    np.testing.assert_array_equal(blob.data, expected)
    assert blob.asum() == np.abs(expected).sum() and blob.sumsq(cblob.Part.DIFF) == 3.0
    assert blob.read_element(2, 3) == 10.5
    blob.scale(4.0, cblob.Part.DIFF)
    assert (blob.diff == 2.0).all()


def test_legacy_shapes():
    blob = cblob.Blob.legacy(2, 3, 4, 5, cblob.DType.FLOAT64)
    assert (blob.num, blob.channels, blob.height, blob.width, blob.dtype) == (2, 3, 4, 5, np.float64)
    assert blob.offset_legacy(1, 2, 3, 4) == 119
    with pytest.raises(cblob.OutOfRangeError):
        blob.offset_legacy(2, 0, 0, 0)
    empty = cblob.Blob.empty("float64")
    assert (empty.count, empty.ndim, empty.data.size) == (0, 0, 0)
    empty.reshape_like(blob)
    assert empty.shape == blob.shape


def test_bad_shape_is_an_error_with_the_library_message_and_changes_nothing():
    with pytest.raises(cblob.ShapeError) as caught:
        cblob.Blob((2, -3))
    error = caught.value
    assert isinstance(error, ValueError) and error.status == cblob.Status.SHAPE
    assert error.message.startswith("cblob_blob_create: ") and "shape[1] is -3" in error.message
    assert str(error).endswith("(CBLOB_ERR_SHAPE)")
    blob = cblob.Blob(5)
    with pytest.raises(cblob.ShapeError):
        blob.reshape([1] * 33)
    with pytest.raises(cblob.SizeOverflowError):
        blob.reshape(2**63 - 1, 4)
    assert blob.shape == (5,)


def test_dtypes_are_checked():
    ints = cblob.Blob(3, np.int32)
    ints.data[:] = [1, -2, 3]
    assert ints.data.tolist() == [1, -2, 3]
    with pytest.raises(cblob.NotImplementedForDTypeError):
        ints.asum()
    uints = cblob.Blob(2, "uint32")
    uints.data[:] = [7, 2**32 - 1]
    assert uints.read_element(1) == 2**32 - 1
    with pytest.raises(cblob.DTypeError):
        cblob.Blob(3).share_data(cblob.Blob(3, np.float64))
    with pytest.raises(cblob.DTypeError) as caught:
        cblob.Blob(3, np.int64)
    assert isinstance(caught.value, TypeError) and "int64" in caught.value.message


def test_share_data_between_two_blobs():
    a, b = cblob.Blob((2, 3)), cblob.Blob(6)
    a.data[...] = np.arange(1, 7).reshape(2, 3)
    b.share_data(a)
    b.data[0] = -10
    assert a.data[0, 0] == -10 and b.diff[0] == 0
    b.reshape(100)  # past the capacity: fresh storage, sharing ends
    b.data[:] = 1
    assert a.data[0, 1] == 2
    with pytest.raises(cblob.ShapeError):
        cblob.Blob(7).share_data(a)


def test_copy_from_and_update_of_memory_never_written():
    src = cblob.Blob(4)
    src.data[:] = [1, -2, 3, -4]
    dst = cblob.Blob(2)
    with pytest.raises(cblob.ShapeError):
        dst.copy_from(src)
    dst.copy_from(src, reshape=True)
    assert dst.data.tolist() == [1, -2, 3, -4]
    with pytest.raises(cblob.StateError) as caught:
        cblob.Blob(3).update()
    assert caught.value.message.startswith("cblob_blob_update: ")


def test_gpu_mode_without_a_gpu_says_why_and_keeps_cpu_mode():
    context = cblob.Context()
    try:
        context.set_mode(cblob.Mode.GPU)
    except cblob.GPUUnavailableError as error:
        assert error.message and context.mode == cblob.Mode.CPU
    else:
        assert context.mode == cblob.Mode.GPU
