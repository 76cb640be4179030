# SPDX-License-Identifier: BSD-2-Clause
"""ABI 1.1's model calls from Python: a net's structure, lossless saving, safetensors and npz
exports and imports, net surgery (replace_blobs) and the lazy open."""
import io
import struct

import numpy as np
import pytest

import cblob
from conftest import SAMPLES

SAMPLE = SAMPLES / "tiny_lenet.caffemodel"


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def int_field(number, v):
    return varint(number << 3) + varint(v)


def structured_net():
    """A V2 net: conv1 with a bottom, a top, phase TEST, a param spec, an include rule,
    convolution parameters, a fork's field and a 2-value blob (the Rust suite's net)."""
    spec = field(1, b"w") + bytes([0x1D, 0, 0, 0, 0x40])
    rule = int_field(1, 0) + field(4, b"s")
    blob = field(7, field(1, varint(2))) + field(5, struct.pack("<2f", 1.5, -2.0))
    layer = (field(1, b"conv1") + field(2, b"Convolution") + field(3, b"data") + field(4, b"conv1")
             + int_field(10, 1) + field(6, spec) + field(8, rule) + field(106, int_field(1, 8))
             + field(5000, b"fork") + field(7, blob))
    return field(1, b"net") + field(100, layer)


def test_structure_and_lossless_save():
    data = structured_net()
    model = cblob.Model.from_bytes(data)
    assert model.bottoms(0) == ["data"]
    assert model.tops(0) == ["conv1"]
    assert model.phase(0) == cblob.Phase.TEST
    [rule] = model.rules(0, cblob.RuleKind.INCLUDE)
    assert (rule.phase, rule.min_level, rule.stages, rule.not_stages) == (cblob.Phase.TRAIN, -2**31, ["s"], [])
    assert model.rules(0, cblob.RuleKind.EXCLUDE) == []
    [spec] = model.param_specs(0)
    assert (spec.name, spec.lr_mult, spec.decay_mult) == ("w", 2.0, 1.0)
    assert model.layer_params(0) == {"convolution_param": {"num_output": 8},
                                     "unknown_fields": [{"field": 5000, "wire_type": 2, "bytes": 4}]}
    assert '"bottoms":["data"]' in model.layer_json(0)
    assert model.blob_shape(0, 0) == (2,)
    assert model.blob_dtype(0, 0) == cblob.DType.FLOAT32
    assert model.blob_has_diff(0, 0) is False
    assert model.read_blob(0, 0).tolist() == [1.5, -2.0]
    assert model.to_bytes(write_diff=True) == data


def test_a_structure_call_out_of_range_raises_and_names_the_call():
    model = cblob.Model.from_bytes(structured_net())
    with pytest.raises(cblob.OutOfRangeError, match="cblob_model_layer_num_bottoms"):
        model.bottoms(1)
    with pytest.raises(cblob.OutOfRangeError, match="cblob_model_layer_phase"):
        model.phase(7)


def test_exports_read_back_and_surgery(tmp_path):
    model = cblob.Model.from_bytes(structured_net())
    safetensors = model.to_safetensors()
    npz = model.to_npz(cblob.ExportFlags.DIFF)
    assert np.load(io.BytesIO(npz))["conv1/0"].tolist() == [1.5, -2.0]
    for read in (cblob.Model.open_safetensors(safetensors), cblob.Model.open_npz(npz)):
        assert read.read_blob(0, 0).tolist() == [1.5, -2.0]
        model.replace_blobs(read)
    assert b'"conv1.weight"' in model.to_safetensors(cblob.ExportFlags.TORCH_NAMES)
    assert model.torch_unmapped() == []

    model.save_safetensors(tmp_path / "w.safetensors")
    model.save_npz(tmp_path / "w.npz")
    assert dict(cblob.load_safetensors(tmp_path / "w.safetensors"))["conv1"][0].tolist() == [1.5, -2.0]
    assert dict(cblob.load_npz(tmp_path / "w.npz"))["conv1"][0].tolist() == [1.5, -2.0]

    # Weights of the wrong shape: one error naming the blob, and nothing changes.
    wrong = field(1, b"w") + field(100, field(1, b"conv1") + field(7, field(7, field(1, varint(3))) + field(5, bytes(12))))
    with pytest.raises(cblob.ShapeError, match="conv1 blob 0"):
        model.replace_blobs(cblob.Model.from_bytes(wrong))
    assert model.read_blob(0, 0).tolist() == [1.5, -2.0]


def test_lazy_open_reads_values_on_first_use():
    eager = cblob.load(SAMPLE)
    lazy = cblob.load(SAMPLE, lazy=True)
    assert list(lazy) == list(eager)
    name = list(eager)[0]
    assert lazy.read_blob(lazy.layers.index(lazy.layer(name)), 0).tolist() == eager[name][0].tolist()
    for key in eager:
        for a, b in zip(lazy[key], eager[key]):
            np.testing.assert_array_equal(a, b)
