# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): the one-line entry points over NumPy arrays.
"""The one-line entry points: any file cblob reads to a Model or to NumPy arrays, and NumPy
arrays to Caffe's BlobProto files. Every input is opened once, by the library (cblob_file_open),
which tells its kind from its bytes and names the kind of a file it cannot read; every save is
written by the library's one writer (atomic replacement, links followed, devices written in
place, the mode kept)."""
from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ._blob import Blob
from ._errors import InvalidArgumentError, usage_error
from ._file import File
from ._raw import FileKind, OpenFlags, ProtoFlags, Status
from ._safe import save_blob_vector_with
from ._util import NUMPY_DTYPES, dtype_code

if TYPE_CHECKING:
    from ._context import Context
    from ._model import Model

_MODEL_KINDS = (FileKind.NET, FileKind.NPZ, FileKind.SAFETENSORS, FileKind.NPY_FOLDER)
_BLOB_KINDS = (FileKind.BLOB, FileKind.BLOB_VECTOR, FileKind.NPY)
_KIND_NAMES = {
    FileKind.NET: "a Caffe net (NetParameter)", FileKind.BLOB: "one blob (a BlobProto, such as a mean file)",
    FileKind.BLOB_VECTOR: "blobs (a BlobProtoVector)", FileKind.NPY: "one NumPy array (.npy)",
    FileKind.NPZ: "a NumPy .npz archive", FileKind.SAFETENSORS: "a safetensors file",
    FileKind.NPY_FOLDER: "a folder of .npy files",
}


class Float64Warning(UserWarning):
    """save_blob or save_blobs writes float64 values (Caffe's double_data), which pycaffe's
    blobproto_to_array and most Caffe tools cannot read: pass dtype=np.float32 to write what they
    read, or dtype=np.float64 to keep the doubles without this warning."""


def open_file(path: str | os.PathLike[str], *, lazy: bool = False, dtype: Any = None,
              context: Context | None = None) -> File:
    """Opens whatever the file or folder at path holds, reading it once (a File: .model() for a
    net, an .npz, a safetensors file or a .npy folder; .blob(i) for a BlobProto, a BlobProtoVector
    or a .npy file). lazy=True reads a .caffemodel's structure at once and each blob's values on
    first access. dtype converts .npy values (files, .npz members, .npy folders) to a cblob dtype,
    refusing values that do not fit; None keeps each array's own."""
    return File.open(path, context=context, flags=OpenFlags.LAZY if lazy else 0, dtype=dtype)


def _refuse(path, file: File, wanted: str, instead: str) -> InvalidArgumentError:
    return usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                       f"{os.fspath(path)!s} holds {_KIND_NAMES[file.kind]}, not {wanted}: read it with {instead}")


def load(path: str | os.PathLike[str], *, lazy: bool = False, dtype: Any = None,
         context: Context | None = None) -> Model:
    """Opens a model: a .caffemodel (current or V1 format), an .npz, a safetensors file or a .npy
    folder, told from the bytes, read once. The Model is a mapping from each layer with weights to
    the list of its arrays (`dict(cblob.load(path))`), plus `model.layers` and pycaffe's
    `model.params`. With lazy=True a .caffemodel's structure is read at once, and each layer's
    values when first used. A file of another kind raises: a prototxt, an HDF5 snapshot, an
    archive or a pickle a ParseError that names what it is, a file of blobs an
    InvalidArgumentError that says to use load_blob or load_blobs."""
    file = open_file(path, lazy=lazy, dtype=dtype, context=context)
    if file.kind not in _MODEL_KINDS:
        raise _refuse(path, file, "a model", "cblob.load_blob or cblob.load_blobs")
    return file.model()


def load_safetensors(path: str | os.PathLike[str], *, context: Context | None = None) -> Model:
    """Opens a .safetensors file (keys <layer>.<index>, or PyTorch's names) as a Model: one layer
    per layer name with its blobs, for reading or for Model.replace_blobs (cblob.load reads it too)."""
    return _load_kind(path, FileKind.SAFETENSORS, context)


def load_npz(path: str | os.PathLike[str], *, dtype: Any = None, context: Context | None = None) -> Model:
    """Opens a NumPy .npz file (keys <layer>/<index>) as a Model, as load_safetensors does; dtype
    converts the arrays as open_file does."""
    return _load_kind(path, FileKind.NPZ, context, dtype)


def _load_kind(path, kind: FileKind, context, dtype=None) -> Model:
    file = open_file(path, dtype=dtype, context=context)
    if file.kind != kind:
        raise _refuse(path, file, _KIND_NAMES[kind], "cblob.load" if file.kind in _MODEL_KINDS else "cblob.load_blob")
    return file.model()


def load_blob(path: str | os.PathLike[str], *, dtype: Any = None, context: Context | None = None) -> np.ndarray:
    """A BlobProto file (.binaryproto, such as mean.binaryproto) or a .npy file as a NumPy array,
    shaped as stored: a legacy mean file is 1 x 3 x H x W. float32, or float64 for double_data;
    dtype converts a .npy file's values."""
    file = open_file(path, dtype=dtype, context=context)
    if file.kind not in (FileKind.BLOB, FileKind.NPY):
        instead = "cblob.load_blobs" if file.kind == FileKind.BLOB_VECTOR else "cblob.load"
        raise _refuse(path, file, "one blob", instead)
    return file.blob(0).data


def load_blobs(path: str | os.PathLike[str], *, dtype: Any = None, context: Context | None = None) -> list[np.ndarray]:
    """A BlobProtoVector file as a list of NumPy arrays (a BlobProto or a .npy file gives one)."""
    file = open_file(path, dtype=dtype, context=context)
    if file.kind not in _BLOB_KINDS:
        raise _refuse(path, file, "blobs", "cblob.load")
    return [blob.data for blob in file.blobs()]


def _blob_of(array: Any, dtype: Any) -> Blob:
    array = np.asarray(array)
    if dtype is None and array.dtype == np.float64:
        warnings.warn("cblob: writing float64 values (double_data), which pycaffe's blobproto_to_array cannot read; "
                      "pass dtype=np.float32 to write what Caffe's tools read, or dtype=np.float64 to keep the "
                      "doubles", Float64Warning, stacklevel=3)
    if dtype is not None:
        array = array.astype(NUMPY_DTYPES[dtype_code(dtype)], copy=False)
    return Blob.from_numpy(array)


def _flags(legacy_dims: bool) -> int:
    return ProtoFlags.LEGACY_DIMS if legacy_dims else 0


def save_blob(path: str | os.PathLike[str], array: Any, *, legacy_dims: bool = False, dtype: Any = None) -> None:
    """Writes an array as a BlobProto file. With legacy_dims the shape is written as Caffe's old
    num/channels/height/width fields (at most 4 axes, padded with 1 in front, as Caffe does),
    which older readers that only look at those fields need; otherwise as `shape`. dtype converts
    the values first (np.float32 for what pycaffe reads); a float64 array without dtype is written
    as double_data with a Float64Warning."""
    _blob_of(array, dtype).save_with(path, _flags(legacy_dims))


def save_blobs(path: str | os.PathLike[str], arrays: Iterable[Any], *, legacy_dims: bool = False,
               dtype: Any = None) -> None:
    """Writes arrays as a BlobProtoVector file (legacy_dims and dtype as in save_blob)."""
    save_blob_vector_with(path, [_blob_of(a, dtype) for a in arrays], _flags(legacy_dims))
