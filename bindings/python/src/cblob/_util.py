# SPDX-License-Identifier: BSD-2-Clause
"""Helpers the safe layer shares: the two-call convention for text and bytes, paths, shapes,
dtypes, and objects that must outlive the interpreter's teardown."""
import ctypes
import os
from ctypes import c_int64, c_size_t

import numpy as np

from ._errors import DTypeError, ShapeError, check, usage_error
from ._raw import ELEMENTS, DType, Status

# NumPy dtype <-> cblob dtype.
NUMPY_DTYPES = {code: np.dtype(name) for code, name in ELEMENTS.items()}
DTYPE_CODES = {dtype: code for code, dtype in NUMPY_DTYPES.items()}


def dtype_code(dtype):
    """The DType of a DType, a NumPy dtype or anything np.dtype takes ("float32", np.int32)."""
    if isinstance(dtype, DType):
        return dtype
    try:
        code = DTYPE_CODES.get(np.dtype(dtype).newbyteorder("="))
    except TypeError:
        code = None
    if code is None:
        names = ", ".join(str(d) for d in DTYPE_CODES)
        raise usage_error(DTypeError, Status.DTYPE, f"no blob holds {dtype!r}: cblob's dtypes are {names}")
    return code


def shape_array(shape):
    """A shape as (number of axes, int64 array); accepts an int or a sequence of ints."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not all(isinstance(d, (int, np.integer)) for d in dims):
        raise usage_error(ShapeError, Status.SHAPE, f"a shape is a sequence of integers, not {shape!r}")
    return len(dims), (c_int64 * max(len(dims), 1))(*dims)


def path_bytes(path):
    """A file name as the library takes it (bytes; os.fsencode, so any name the OS allows)."""
    return os.fsencode(os.fspath(path))


def read_text(function, *args):
    """A string the library writes with the two-call convention (size, then text)."""
    length = c_size_t()
    while True:
        check(function(*args, None, 0, length))
        room = length.value + 1
        buffer = ctypes.create_string_buffer(room)
        check(function(*args, buffer, room, length))
        if length.value < room:  # the text may have grown between the calls (a log)
            return buffer.value.decode("utf-8", "replace")


def read_bytes(function, *args):
    """Bytes the library writes with the two-call convention (size, then bytes)."""
    size = c_size_t()
    check(function(*args, None, 0, size))
    buffer = ctypes.create_string_buffer(max(size.value, 1))
    check(function(*args, buffer, size.value, size))
    return buffer.raw[:size.value]


def immortal(obj):
    """Keeps obj alive until the process ends. C holds pointers to some objects (ctypes callbacks
    a buffer's release or a capsule's destructor runs) that may be called while the interpreter
    tears its modules down; they must never be freed first."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    return obj
