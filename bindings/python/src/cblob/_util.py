# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): the helpers every call uses (shapes,
# dtypes, two-call buffers, handle arrays).
"""Helpers the safe layer shares: the two-call convention for text and bytes, paths, shapes,
dtypes, the checks of integers and strings before any call, and objects that must outlive the
interpreter's teardown."""
from __future__ import annotations

import ctypes
import operator
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


# ---- integers: ctypes passes 2**64 + 3 as 3 (modulo the C type's range) without a word, so
# every integer is checked against its C type before a call, as Python's own built-ins do.

def _integer(value, name):
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"cblob: {name} must be an integer, not {type(value).__name__}")
    return operator.index(value)


def _checked(value, name, low, high, c_type):
    if type(value) is not int:
        value = _integer(value, name)
    if low <= value <= high:
        return value
    raise OverflowError(f"cblob: {name} is {value}, outside {c_type}'s range [{low}, {high}]")


def int32_arg(value, name="the value"):
    """value as an int32_t argument: OverflowError outside its range, TypeError for a non-integer."""
    return _checked(value, name, -0x80000000, 0x7FFFFFFF, "int32")


def int64_arg(value, name="the value"):
    """value as an int64_t argument (see int32_arg)."""
    return _checked(value, name, -0x8000000000000000, 0x7FFFFFFFFFFFFFFF, "int64")


def uint32_arg(value, name="the value"):
    """value as a uint32_t argument (see int32_arg)."""
    return _checked(value, name, 0, 0xFFFFFFFF, "uint32")


def uint64_arg(value, name="the value"):
    """value as a uint64_t or size_t argument (see int32_arg)."""
    return _checked(value, name, 0, 0xFFFFFFFFFFFFFFFF, "uint64")


def shape_array(shape):
    """A shape as (number of axes, int64 array); accepts an int or a sequence of ints (each in
    int64's range: OverflowError otherwise, before any call)."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        raise usage_error(ShapeError, Status.SHAPE, f"a shape is a sequence of integers, not {shape!r}")
    dims = [int64_arg(d, f"dimension {i}") for i, d in enumerate(dims)]
    return len(dims), (c_int64 * max(len(dims), 1))(*dims)


# ---- strings: the library reads a C string up to its first NUL, so "a.caffemodel\0.bak" would
# name a.caffemodel: refused, as Python's open() refuses it.

def path_bytes(path):
    """A file name as the library takes it (bytes; os.fsencode, so any name the OS allows);
    ValueError for a name holding a NUL byte."""
    name = os.fsencode(os.fspath(path))
    if b"\0" in name:
        raise ValueError(f"cblob: embedded null byte in the path {path!r}")
    return name


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


def no_copies(self, *args):
    """__copy__, __deepcopy__ and __reduce_ex__ of an object over a library handle that has no
    second holder to share: copying or pickling it raises instead of sharing the raw handle (which
    two objects would then destroy twice)."""
    raise TypeError(f"cblob: a {type(self).__name__} holds a library handle and cannot be copied or pickled")


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
    """A list of ints as (count, int32 array), each checked (int32_arg)."""
    values = [int32_arg(v, f"item {i}") for i, v in enumerate(values)]
    return len(values), (c_int32 * max(len(values), 1))(*values)


def handle_array(objects):
    """A C array of the handles of blobs (or other objects with a handle): (count, array)."""
    objects = list(objects)
    return len(objects), (c_void_p * max(len(objects), 1))(*(o._h.value for o in objects))


def text_bytes(text, name="the text"):
    """A string argument as the library takes it (UTF-8 bytes; None stays None); ValueError for
    one holding a NUL byte, TypeError for a non-string."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"cblob: {name} must be a str, not {type(text).__name__}")
    if "\0" in text:
        raise ValueError(f"cblob: embedded null byte in {name} {text!r}")
    return text.encode()


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
