# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): the one-line entry points over NumPy arrays
# (and Caffe's legacy dims).
"""The one-line entry points: Caffe, safetensors and npz files to and from NumPy arrays."""
import os
import secrets
from ctypes import c_int64, c_void_p

import numpy as np

from ._blob import Blob
from ._context import context_or_default
from ._errors import ShapeError, check, usage_error
from ._library import lib
from ._model import Model
from ._raw import Status
from ._util import handle_array, path_bytes


def load(path, *, lazy=False, context=None):
    """Opens a .caffemodel (current or V1 format) as a Model: a mapping from each layer with
    weights to the list of its arrays (`dict(cblob.load(path))`), plus `model.layers`. With
    lazy=True only the structure is read at once, and each layer's values when first used."""
    return Model.open(path, lazy=lazy, context=context)


def load_safetensors(path, *, context=None):
    """Opens a .safetensors file (keys <layer>.<index>, or PyTorch's names) as a Model: one layer
    per layer name with its blobs, for reading or for Model.replace_blobs."""
    return Model.open_safetensors_file(path, context=context)


def load_npz(path, *, context=None):
    """Opens a NumPy .npz file (keys <layer>/<index>) as a Model, as load_safetensors does."""
    return Model.open_npz_file(path, context=context)


def load_blob(path, *, context=None):
    """A BlobProto file (.binaryproto, such as mean.binaryproto) as a NumPy array, shaped as
    stored: a legacy mean file is 1 x 3 x H x W. float32, or float64 for double_data."""
    return Blob.load(path, context=context).data


def save_blob(path, array, *, legacy_dims=False):
    """Writes an array as a BlobProto file. With legacy_dims the shape is written as Caffe's old
    num/channels/height/width fields (at most 4 axes, padded with 1 in front, as Caffe does),
    which older readers that only look at those fields need; otherwise as `shape`."""
    blob = Blob.from_numpy(np.asarray(array))
    if not legacy_dims:
        blob.save(path)
        return
    _write_file(path, _with_legacy_dims(blob.to_proto(), blob.shape))


def load_blobs(path, *, context=None):
    """A BlobProtoVector file as a list of NumPy arrays."""
    context = context_or_default(context)
    name = path_bytes(path)
    count = c_int64()
    check(lib.cblob_blob_vector_from_proto_file(context._h, name, 0, None, count))
    handles = (c_void_p * max(count.value, 1))()
    check(lib.cblob_blob_vector_from_proto_file(context._h, name, count.value, handles, count))
    blobs = [Blob._wrap(c_void_p(h), context) for h in handles[:count.value]]
    return [blob.data for blob in blobs]


def save_blobs(path, arrays, *, legacy_dims=False):
    """Writes arrays as a BlobProtoVector file (legacy_dims as in save_blob)."""
    blobs = [Blob.from_numpy(np.asarray(a)) for a in arrays]
    if not legacy_dims:
        num, handles = handle_array(blobs)
        check(lib.cblob_blob_vector_to_proto_file(handles, num, 0, path_bytes(path)))
        return
    _write_file(path, b"".join(_field(1, _with_legacy_dims(b.to_proto(), b.shape)) for b in blobs))




# ---- legacy dims: cblob writes `shape` (field 7); old readers want fields 1-4 --------------

def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number, payload):
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _fields(message):
    """(number, raw bytes) of each top-level field of a well-formed message cblob wrote."""
    position = 0
    while position < len(message):
        start = position
        key, position = _read_varint(message, position)
        wire = key & 7
        if wire == 0:
            _, position = _read_varint(message, position)
        elif wire == 2:
            length, position = _read_varint(message, position)
            position += length
        else:
            position += {1: 8, 5: 4}[wire]
        yield key >> 3, message[start:position]


def _read_varint(data, position):
    value, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position


def _with_legacy_dims(message, shape):
    """A BlobProto with num/channels/height/width (fields 1-4) in place of `shape` (field 7)."""
    if len(shape) > 4:
        raise usage_error(ShapeError, Status.SHAPE, f"legacy dims hold at most 4 axes, not {len(shape)}")
    dims = (1,) * (4 - len(shape)) + tuple(shape)
    legacy = b"".join(_varint(number << 3) + _varint(dim) for number, dim in enumerate(dims, 1))
    return legacy + b"".join(raw for number, raw in _fields(message) if number != 7)


def _write_file(path, data):
    """Writes a file the way the library does: a temporary file renamed over the path."""
    path = os.fspath(path)
    temporary = os.path.join(os.path.dirname(path), f".cblob-{secrets.token_hex(8)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)  # the umask applies
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
