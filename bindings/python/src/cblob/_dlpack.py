# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): DLPack's ownership: NumPy arrays over
# exported tensors that run the deleter once, and capsules (the structs' mirrors are generated).
"""DLPack for the safe layer: NumPy arrays over exported tensors, and capsules. The mirrors of
DLPack's structs come from _structs.py (generated; checked field by field against the C
compiler's layout by the test suite).

A NumPy view of a blob is an array over a DLPack tensor cblob exported: the tensor holds the
blob's memory (reference counted in the library), so the view stays valid after the blob, its
model and every other Python object are gone, and after the blob is reshaped past its capacity
(it keeps the old memory). The array's base owns the tensor and runs its deleter once, when the
last array over it is freed.
"""
import ctypes
from ctypes import POINTER, PYFUNCTYPE, c_char_p, c_void_p

import numpy as np

from ._util import immortal

# dlpack.h's structs and values are generated (_structs.py, from codegen/bindings/dlpack.yaml).
from ._structs import (KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED, READ_ONLY, DLDataType,  # noqa: F401
                       DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor)

MAJOR_VERSION = 1
VERSIONED, LEGACY = b"dltensor_versioned", b"dltensor"
USED = {VERSIONED: b"used_dltensor_versioned", LEGACY: b"used_dltensor"}
STRUCTS = {VERSIONED: DLManagedTensorVersioned, LEGACY: DLManagedTensor}


def delete(tensor):
    """Runs a managed tensor's deleter (a NULL deleter means nothing to do)."""
    deleter = tensor.contents.deleter
    if deleter:
        deleter(tensor)


class ExportedMemory:
    """Owns one exported tensor (a POINTER(DLManagedTensorVersioned)) and describes its memory to
    NumPy (__array_interface__); arrays made from it keep it as their base."""

    __slots__ = ("__array_interface__", "_tensor", "__weakref__")

    def __init__(self, tensor, dtype, shape):
        self._tensor = tensor
        managed = tensor.contents
        self.__array_interface__ = {
            "version": 3, "shape": shape, "typestr": dtype.str,
            "data": (managed.dl_tensor.data, bool(managed.flags & READ_ONLY)),
        }

    def __del__(self):
        tensor = getattr(self, "_tensor", None)
        if tensor is not None:
            self._tensor = None
            delete(tensor)


def array_over(tensor, dtype, shape):
    """A NumPy array over an exported host tensor, which it owns from now on."""
    return np.asarray(ExportedMemory(tensor, dtype, shape))


# ---- capsules (DLPack's Python protocol) ---------------------------------------------------

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_GetName.restype = c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, c_char_p]


def _destroy_unconsumed(capsule, is_valid=PYFUNCTYPE(ctypes.c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _api)),
                        pointer=PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _api)),
                        structs=tuple(STRUCTS.items()), cast=ctypes.cast, POINTER=POINTER, delete=delete):
    """A capsule's destructor: a tensor no consumer took (the capsule still has its first name)
    is deleted here. Everything it uses is bound as a default, since it may run while the
    interpreter clears this module."""
    for name, struct in structs:
        if is_valid(capsule, name):
            delete(cast(pointer(capsule, name), POINTER(struct)))


# The destructor's C pointer lives in capsules that may outlive this module: never freed.
_DESTRUCTOR = immortal(PYFUNCTYPE(None, c_void_p)(_destroy_unconsumed))
_DESTRUCTOR_ADDRESS = ctypes.cast(_DESTRUCTOR, c_void_p).value
# The capsule names, which capsules point to: kept alive with the destructor.
_NAMES = immortal(tuple(ctypes.create_string_buffer(n) for n in (VERSIONED, LEGACY, *USED.values())))
_NAME_BY_VALUE = {n.value: n for n in _NAMES}


def capsule(tensor, name):
    """A capsule that owns an exported tensor until a consumer takes it."""
    return _api.PyCapsule_New(ctypes.cast(tensor, c_void_p), _NAME_BY_VALUE[name], _DESTRUCTOR_ADDRESS)


def open_capsule(capsule):
    """(name, tensor pointer) of a producer's capsule; TypeError if it is not an unused DLPack one."""
    name = _api.PyCapsule_GetName(capsule) if type(capsule).__name__ == "PyCapsule" else None
    if name not in STRUCTS:
        raise TypeError(f"not an unconsumed DLPack capsule: {capsule!r}")
    return name, _api.PyCapsule_GetPointer(capsule, name)


def mark_consumed(capsule, name):
    """Renames a capsule whose tensor a consumer took, so its destructor leaves the tensor alone."""
    _api.PyCapsule_SetName(capsule, _NAME_BY_VALUE[USED[name]])


def tensor_of(name, address):
    return ctypes.cast(address, POINTER(STRUCTS[name]))
