# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): the helpers every call uses (shapes,
# dtypes, two-call buffers, handle arrays).
"""Helpers the safe layer shares: the two-call convention for text and bytes, paths, shapes,
dtypes, and objects that must outlive the interpreter's teardown."""
import ctypes
import os
from ctypes import c_int32, c_int64, c_size_t, c_void_p

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


def one_or_many(values):
    """The dims of `f(2, 3)` or `f((2, 3))`: a lone non-integer argument is the sequence itself."""
    if len(values) == 1 and not isinstance(values[0], (int, np.integer)):
        return values[0]
    return values


def int32_array(values):
    """A list of ints as (count, int32 array)."""
    values = [int(v) for v in values]
    return len(values), (c_int32 * max(len(values), 1))(*values)


def handle_array(objects):
    """A C array of the handles of blobs (or other objects with a handle): (count, array)."""
    objects = list(objects)
    return len(objects), (c_void_p * max(len(objects), 1))(*(o._h.value for o in objects))


def text_bytes(text):
    """A string argument as the library takes it (UTF-8 bytes; None stays None)."""
    return None if text is None else text.encode()


def read_int64s(function, *args):
    """An int64 array the library writes with the two-call convention (count, then values)."""
    count = c_int64()
    check(function(*args, None, 0, count))
    values = (c_int64 * max(count.value, 1))()
    if count.value:
        check(function(*args, values, count.value, count))
    return list(values[:count.value])


def read_created(cls, context, function, *args):
    """New objects of the two-call convention (the number, then the handles), each owned by an
    object of cls, made in context."""
    count = c_int64()
    check(function(*args, 0, None, count))
    handles = (c_void_p * max(count.value, 1))()
    check(function(*args, count.value, handles, count))
    return [cls._wrap(c_void_p(h), context) for h in handles[:count.value]]
