# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): the package's front page and exports.
"""cblob: Caffe's .caffemodel and .binaryproto files (and .npy, .npz, safetensors) as NumPy arrays, and Caffe-style blobs
(data and diff, synced lazily between host and GPU, with NeoML's operations), without Caffe.

    >>> import cblob
    >>> weights = dict(cblob.load("lenet.caffemodel"))    # {"conv1": [array, array], ...}
    >>> mean = cblob.load_blob("mean.binaryproto")         # an array, 1 x 3 x H x W

Arrays are views of cblob's memory, without a copy, and keep it alive on their own. Blobs
(cblob.Blob) give Caffe's and NeoML's operations and speak DLPack (numpy.from_dlpack(blob),
torch.from_dlpack(blob), cblob.Blob.from_dlpack(tensor)). Errors raise CblobError subclasses
carrying the library's message. Every call releases the GIL while the library works.

The library is the libcblob.so.1 bundled with the package, or $CBLOB_LIBRARY when set.
`python -m cblob` runs the cblob program (inspect, convert, info).
"""
from __future__ import annotations

import importlib.metadata as _metadata

from . import _safe
from ._blob import Blob, Window
from ._comm import Arena, Comm, Request, finalize_mpi, mpi_library_path
from ._context import Context, default_context, kernel_cache_warm_up
from ._errors import (CancelledError, CblobError, CblobFileNotFoundError, CblobIOError, CblobIsADirectoryError, CblobMemoryError,
                      CblobNotADirectoryError, CblobPermissionError, CommError, CommTimeoutError, DeviceError,
                      DeviceLostError, DTypeError, GPUUnavailableError, InternalError, InvalidArgumentError,
                      NotImplementedForDTypeError, OutOfRangeError, ParseError, ShapeError, SizeOverflowError,
                      StateError)
from ._file import File
from ._formats import (Float64Warning, load, load_blob, load_blobs, load_npz, load_safetensors, open_file, save_blob,
                       save_blobs)
from ._library import lib as _lib
from ._library import library_path
from ._model import Layer, LayerArrays, LayerBlobs, Model, Params
from ._raw import (ABI_VERSION_MAJOR, ABI_VERSION_MINOR, MAX_AXES, NEOML_AXES, CacheMode, Dim, DType, ExportFlags,
                   FileKind, Head, JsonFlags, Memory, Mode, NetFormat, OpenFlags, Part, Phase, ProtoFlags, ProtoKind,
                   ReduceOp, ReplaceFlags, RuleKind, Status)
from ._safe import *  # noqa: F401,F403 (the generated free functions: gpu_probe, detect, ...; _safe.__all__)
from ._safe import version
from ._structs import IncompatibleKeys, ParamSpec, Rule


def _package_version():
    # The installed distribution's version; run from a source tree (no metadata), the library's,
    # which is the same number (pyproject.toml reads it from CMakeLists.txt).
    try:
        return _metadata.version("cblob")
    except _metadata.PackageNotFoundError:
        return version()


__version__ = _package_version()


def abi_version() -> tuple[int, int]:
    """The loaded library's ABI version as (major, minor)."""
    value = _lib.cblob_abi_version()
    return value >> 16, value & 0xFFFF


__all__ = [
    "ABI_VERSION_MAJOR", "ABI_VERSION_MINOR", "MAX_AXES", "NEOML_AXES",
    "Arena", "Blob", "CacheMode", "Comm", "CancelledError", "CblobError", "CblobFileNotFoundError", "CblobIOError",
    "CblobIsADirectoryError", "CblobMemoryError", "CblobNotADirectoryError", "CblobPermissionError", "CommError",
    "CommTimeoutError", "Context", "DType", "DTypeError", "DeviceError", "DeviceLostError", "Dim", "ExportFlags", "File",
    "FileKind", "Float64Warning", "GPUUnavailableError", "Head", "IncompatibleKeys", "InternalError",
    "InvalidArgumentError", "JsonFlags", "Layer", "LayerArrays", "LayerBlobs", "Memory", "Mode", "Model", "NetFormat",
    "NotImplementedForDTypeError", "OpenFlags", "OutOfRangeError", "ParamSpec", "Params", "ParseError", "Part", "Phase",
    "ProtoFlags", "ProtoKind", "ReduceOp", "ReplaceFlags", "Request", "Rule", "RuleKind", "ShapeError",
    "SizeOverflowError", "StateError", "Status", "Window",
    "abi_version", "default_context", "finalize_mpi", "kernel_cache_warm_up",
    "library_path", "load", "load_blob", "load_blobs", "load_npz", "load_safetensors", "mpi_library_path", "open_file",
    "save_blob", "save_blobs",
]
__all__ += _safe.__all__
