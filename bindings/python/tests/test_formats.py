# SPDX-License-Identifier: BSD-2-Clause
"""Round trips through Caffe's formats: BlobProto bytes and files, legacy dims, blob vectors,
models built, saved and read again (V2 and V1), and what Python's protobuf reads of cblob's files."""
import numpy as np
import pytest

import cblob


def test_blob_proto_bytes_round_trip(caffe_pb2):
    blob = cblob.Blob((2, 3))
    blob.data[...] = [[1, -2, 3.5], [0, 1e-3, -7.25]]
    blob.diff[...] = 0.5
    data = blob.to_proto(write_diff=True)
    assert cblob.detect(data) == cblob.ProtoKind.BLOB and blob.shape_equals_proto(data)
    theirs = caffe_pb2.BlobProto.FromString(data)
    assert list(theirs.shape.dim) == [2, 3] and list(theirs.diff) == [0.5] * 6
    back = cblob.Blob.from_proto(data)
    np.testing.assert_array_equal(back.data, blob.data)
    np.testing.assert_array_equal(back.diff, blob.diff)
    doubles = cblob.Blob(6, np.float64)
    assert not doubles.shape_equals_proto(data)
    with pytest.raises(cblob.ShapeError):
        doubles.load_proto(data, reshape=False)
    doubles.load_proto(data)
    assert doubles.shape == (2, 3) and doubles.read_element(1, 2) == -7.25


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint32])
def test_save_blob_and_load_blob(tmp_path, dtype):
    array = (np.arange(24) * 3 + 1).astype(dtype).reshape(2, 3, 4)
    cblob.save_blob(tmp_path / "a.binaryproto", array, dtype=dtype)
    back = cblob.load_blob(tmp_path / "a.binaryproto")
    # Integer blobs write double_data, which reads back as float64.
    assert back.dtype == (np.float32 if dtype == np.float32 else np.float64)
    np.testing.assert_array_equal(back, array)


def test_legacy_dims_are_what_old_readers_look_for(tmp_path, caffe_pb2):
    mean = np.random.default_rng(1).random((3, 5, 4), dtype=np.float32)
    cblob.save_blob(tmp_path / "mean.binaryproto", mean, legacy_dims=True)
    theirs = caffe_pb2.BlobProto.FromString((tmp_path / "mean.binaryproto").read_bytes())
    assert (theirs.num, theirs.channels, theirs.height, theirs.width) == (1, 3, 5, 4)
    assert not theirs.HasField("shape")
    np.testing.assert_array_equal(np.array(theirs.data, np.float32).reshape(3, 5, 4), mean)
    back = cblob.load_blob(tmp_path / "mean.binaryproto")
    assert back.shape == (1, 3, 5, 4), "legacy dims read as 4 axes, as Caffe reads them"
    np.testing.assert_array_equal(back[0], mean)
    with pytest.raises(cblob.ShapeError):
        cblob.save_blob(tmp_path / "five.binaryproto", np.zeros((1, 1, 1, 1, 2), np.float32), legacy_dims=True)
    assert not (tmp_path / "five.binaryproto").exists()


def test_blob_vectors(tmp_path, caffe_pb2):
    arrays = [np.arange(3, dtype=np.float64), np.ones((2, 2), np.float32)]
    with pytest.warns(cblob.Float64Warning):
        cblob.save_blobs(tmp_path / "v.binaryproto", arrays)
    assert cblob.detect_file(tmp_path / "v.binaryproto") == cblob.ProtoKind.BLOB_VECTOR
    back = cblob.load_blobs(tmp_path / "v.binaryproto")
    assert [a.shape for a in back] == [(3,), (2, 2)]
    for a, b in zip(arrays, back):
        np.testing.assert_array_equal(a, b)
    with pytest.warns(cblob.Float64Warning):
        cblob.save_blobs(tmp_path / "legacy.binaryproto", arrays, legacy_dims=True)
    theirs = caffe_pb2.BlobProtoVector.FromString((tmp_path / "legacy.binaryproto").read_bytes())
    assert [(b.num, b.channels, b.height, b.width) for b in theirs.blobs] == [(1, 1, 1, 3), (1, 1, 2, 2)]
    assert cblob.load_blobs(tmp_path / "legacy.binaryproto")[1].shape == (1, 1, 2, 2)


def test_a_model_built_saved_and_read_again(tmp_path, caffe_pb2):
    model = cblob.Model.new("Tiny")
    weights = np.arange(6, dtype=np.float32).reshape(2, 3)
    model.add_layer("data", "Input")
    model.add_layer("fc", "InnerProduct", [weights, np.zeros(2, np.float32)])
    weights[0, 0] = 42  # shared without a copy: the value at save time is written
    model.save(tmp_path / "tiny.caffemodel")
    theirs = caffe_pb2.NetParameter.FromString((tmp_path / "tiny.caffemodel").read_bytes())
    assert theirs.name == "Tiny" and [(l.name, l.type) for l in theirs.layer] == [("data", "Input"),
                                                                                 ("fc", "InnerProduct")]
    assert theirs.layer[1].blobs[0].data[0] == 42
    back = cblob.load(tmp_path / "tiny.caffemodel")
    assert list(back) == ["fc"] and len(back.layers) == 2
    back["fc"][1][:] = 7  # a view: the model saves what it shows
    assert cblob.Model.from_bytes(back.to_bytes())["fc"][1].tolist() == [7, 7]


def test_a_v1_model(caffe_pb2):
    model = cblob.Model.new("Old", cblob.NetFormat.V1)
    model.add_layer("conv", "CONVOLUTION", [cblob.Blob((1, 1, 2, 2))])
    data = model.to_bytes()
    theirs = caffe_pb2.NetParameter.FromString(data)
    assert len(theirs.layers) == 1 and theirs.layers[0].name == "conv"
    back = cblob.Model.from_bytes(data)
    assert (back.format, back.layers[0].type, back["conv"][0].shape) == (cblob.NetFormat.V1, "CONVOLUTION", (1, 1, 2, 2))


def test_a_model_read_by_python_then_by_cblob(caffe_pb2):
    net = caffe_pb2.NetParameter(name="FromPython")
    layer = net.layer.add(name="ip", type="InnerProduct")
    blob = layer.blobs.add()
    blob.shape.dim.extend([2, 2])
    blob.double_data.extend([1.5, -2.5, 3.5, 4.0])
    model = cblob.Model.from_bytes(net.SerializeToString())
    array = model["ip"][0]
    assert array.dtype == np.float64 and array.tolist() == [[1.5, -2.5], [3.5, 4.0]]
