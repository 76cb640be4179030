# SPDX-License-Identifier: BSD-2-Clause
"""Blob: Caffe's Blob (data and diff, synced lazily between host and GPU) with NeoML's
operations, as NumPy-friendly Python.

What is here by hand is what needs judgement: the constructor (NumPy dtypes, an int as a shape),
NumPy views over DLPack exports, Blob.from_numpy and from_dlpack (a caller's memory and its
release), the count the benchmarks tune, and the DLPack protocol. The methods that are one
library call each come from _safe.py (generated): Blob and Window derive from its method tables.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from ctypes import c_int64, c_void_p
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _dlpack
from ._context import context_or_default
from ._errors import InvalidArgumentError, check, failure, usage_error
from ._library import lib
from ._raw import DType, Memory, Mode, Part, Status, cblob_release_fn
from ._safe import _BlobMethods, _WindowMethods
from ._util import NUMPY_DTYPES, dtype_code, immortal, shape_array

if TYPE_CHECKING:
    from ._context import Context

# What a dtype argument may be: a DType, a NumPy dtype or anything np.dtype reads ("float32").
DTypeLike = Union[DType, "np.dtype[Any]", type, str]

_count = lib.cblob_blob_count

# NumPy arrays whose memory blobs use (Blob.from_numpy without a copy), by the key the library
# hands back to the release callback when it lets go of the buffer.
_shared_arrays: dict[int, np.ndarray] = {}
_keys = itertools.count(1)


def _release_shared_array(ptr, key, arrays=_shared_arrays):
    arrays.pop(key, None)


# Called by the library from whichever thread lets go of the buffer last; never freed, since a
# blob may let go while the interpreter clears this module.
_RELEASE = immortal(cblob_release_fn(_release_shared_array))


class Blob(_BlobMethods):
    """An N-d array (at most 32 axes, C-contiguous) holding `data` and `diff`, each synced lazily
    between host and GPU: Caffe's Blob, with NeoML's CDnnBlob operations.

    `blob.data` and `blob.diff` are writable NumPy views without a copy; each keeps the memory
    it views alive on its own (a view outlives the blob, and a reshape past the capacity gives
    the blob new memory while the view keeps the old). Dtypes: float32, float64, int32, uint32.

    Threads: distinct blobs may be used from different threads at once; one blob needs a lock,
    except for its pure getters (shape, count, dtype, ...). Blobs sharing memory (share_data, a
    window and its parent, exported views and DLPack tensors) count as one blob for this rule.

    Copies: copy.copy(blob) is a second holder of the same library blob (cblob_blob_retain: one
    blob, its shape, data and diff, seen through two objects, each dropping its own hold);
    copy.deepcopy(blob) is an independent blob with the same dtype, shape, data and diff
    (deep_copy; a window's is an ordinary blob). Pickling raises: pickle blob.numpy() instead.
    """

    __slots__ = ("_h", "_count_out", "_context", "__weakref__")
    _destroy = lib.cblob_blob_destroy

    def __init__(self, shape: int | Sequence[int], dtype: DTypeLike = DType.FLOAT32, *, context: Context | None = None):
        """A zero-filled blob of the given shape (an int or a sequence; () is a scalar, count 1)
        and dtype (a DType or a NumPy dtype). Memory is allocated at first access."""
        num_axes, dims = shape_array(shape)
        context = context_or_default(context)
        handle = c_void_p()
        check(lib.cblob_blob_create(context._h, dtype_code(dtype), num_axes, dims, handle))
        self._adopt(handle, context)

    @classmethod
    def _created(cls, create, context, io=None):
        """A blob from a call that writes a new handle; create(out) returns the status; io is
        (path, mode) for a call on a named file."""
        handle = c_void_p()
        check(create(handle), io)
        return cls._wrap(handle, context)

    @classmethod
    def _wrap(cls, handle, context):
        """A blob object that owns one hold on a library blob (a c_void_p)."""
        blob = cls.__new__(cls)
        blob._adopt(handle, context)
        return blob

    def _adopt(self, handle, context):
        self._h = handle
        self._count_out = c_int64()  # count's out-value: see count
        self._context = context

    def _derived(self, create):
        return Blob._created(create, self._context)

    def __del__(self):
        handle = getattr(self, "_h", None)
        if handle:
            self._destroy(handle)

    # ---- copies ------------------------------------------------------------------------------

    def __copy__(self) -> Blob:
        """A second holder of the same blob (see the class doc); a subclass's fields are shared."""
        check(lib.cblob_blob_retain(self._h))
        other = type(self).__new__(type(self))
        other._adopt(c_void_p(self._h.value), self._context)
        for cls in type(self).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if name not in ("_h", "_count_out", "_context", "__weakref__") and hasattr(self, name):
                    setattr(other, name, getattr(self, name))
        return other

    def __deepcopy__(self, memo: Any) -> Blob:
        return self.deep_copy()

    def __reduce_ex__(self, protocol):
        raise TypeError(f"cblob: a {type(self).__name__} cannot be pickled (it holds a library handle); "
                        "pickle blob.numpy() (and blob.numpy(cblob.Part.DIFF)) instead")

    # ---- creation ----------------------------------------------------------------------------

    @classmethod
    def from_numpy(cls, array: Any, *, context: Context | None = None, copy: bool | None = None) -> Blob:
        """A blob over a NumPy array's memory, without a copy, when the array is C-contiguous,
        aligned, writable, in native byte order and of a cblob dtype: the blob then keeps the
        array alive and the two see each other's writes. Otherwise (or with copy=True) the blob
        gets a copy; copy=False raises instead of copying. Other dtypes raise DTypeError."""
        array = np.asarray(array)
        code = dtype_code(array.dtype)
        shareable = (array.flags.c_contiguous and array.flags.aligned and array.flags.writeable
                     and array.dtype.isnative and array.size > 0)
        if copy is False and not shareable:
            raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                              "the array cannot be shared without a copy (it must be C-contiguous, aligned, "
                              "writable, native-endian and not empty) and copy=False")
        blob = cls(array.shape, code, context=context)
        if copy or not shareable:
            blob.copy_in(array)
            return blob
        key = next(_keys)
        _shared_arrays[key] = array
        status = lib.cblob_blob_set_cpu_data(blob._h, array.ctypes.data, array.nbytes, _RELEASE, key)
        if status:
            del _shared_arrays[key]
            raise failure(status)
        return blob

    @classmethod
    def from_dlpack(cls, tensor: Any, *, context: Context | None = None, copy: bool | None = None) -> Blob:
        """A blob over the memory of anything with __dlpack__ (a NumPy array, a PyTorch, JAX or
        CuPy tensor), without a copy where cblob can use the layout: float32, float64, int32 or
        uint32, C-contiguous, aligned, writable, on the CPU (or on the context's GPU). The blob
        owns the tensor then and deletes it once nothing uses its memory. A host tensor cblob
        cannot use as it is (strided, read-only, unaligned) is copied through NumPy unless
        copy=False; copy=True always copies."""
        context = context_or_default(context)
        if copy:
            return cls.from_numpy(np.from_dlpack(tensor), context=context, copy=True)
        # DLPack's stream rule: a CUDA producer orders its work before the stream passed here,
        # the context's own (1, the legacy default stream, when the context queues there).
        stream = {}
        device_type, device_id = getattr(tensor, "__dlpack_device__", lambda: (_dlpack.KDL_CPU, 0))()
        if device_type == _dlpack.KDL_CUDA:
            context.set_device(device_id)  # opens the device, and the context's stream with it
            stream = {"stream": context.stream or 1}
        try:
            capsule = tensor.__dlpack__(max_version=(_dlpack.MAJOR_VERSION, 0), **stream)
        except TypeError:  # a producer that predates DLPack 1.0's keyword arguments
            capsule = tensor.__dlpack__(**stream)
        name, address = _dlpack.open_capsule(capsule)
        importer = lib.cblob_blob_from_dlpack_on_stream if name == _dlpack.VERSIONED else \
            lib.cblob_blob_from_dlpack_legacy_on_stream
        handle = c_void_p()
        status = importer(context._h, address, context.stream or None, handle)
        if status == Status.OK:
            _dlpack.mark_consumed(capsule, name)
            return cls._wrap(handle, context)
        error = failure(status)  # the capsule keeps the tensor: its destructor deletes it
        device = _dlpack.tensor_of(name, address).contents.dl_tensor.device.device_type
        if copy is False or device not in (_dlpack.KDL_CPU, _dlpack.KDL_CUDA_HOST) or \
                status not in (Status.SHAPE, Status.INVALID_ARGUMENT):
            raise error
        return cls.from_numpy(np.from_dlpack(tensor), context=context, copy=True)

    def like(self, dtype: DTypeLike | None = None) -> Blob:
        """A new 7-axis blob of this blob's shape (NeoML's GetClone without the values)."""
        code = self.dtype_code if dtype is None else dtype_code(dtype)
        return self._derived(lambda out: lib.cblob_blob_create_like(self._h, code, out))

    # ---- shape (pure getters) ----------------------------------------------------------------

    @property
    def count(self) -> int:
        """The element count (the product of the dimensions; 0 for an empty blob)."""
        # The out-value lives in the blob: count is a pure getter, which may run on several
        # threads at once only while nothing changes the blob, so they all write the same value.
        status = _count(self._h, self._count_out)
        if status:
            raise failure(status)
        return self._count_out.value

    size = count

    @property
    def dtype(self) -> np.dtype:
        """The blob's element type as a NumPy dtype."""
        return NUMPY_DTYPES[self.dtype_code]

    @property
    def context(self) -> Context:
        return self._context

    def __repr__(self) -> str:
        return f"<cblob.Blob {self.dtype} {self.shape_string()}>"

    # ---- views and values --------------------------------------------------------------------

    def view(self, part: Part = Part.DATA, *, writable: bool = True) -> np.ndarray:
        """A NumPy array over data or diff, without a copy (see the class doc for its lifetime).
        A writable view marks the host copy current, as Caffe's mutable_cpu_data does; a
        read-only one syncs the host copy as cpu_data does."""
        shape, dtype = self.shape, self.dtype
        if self.count == 0:  # nothing to view (a blob with no axes and no storage views as empty)
            return np.zeros(shape or (0,), dtype)
        tensor = c_void_p()
        check(lib.cblob_blob_to_dlpack(self._h, part, Memory.HOST, 0 if writable else 1, tensor))
        return _dlpack.array_over(_dlpack.tensor_of(_dlpack.VERSIONED, tensor.value), dtype, shape)

    @property
    def data(self) -> np.ndarray:
        """A writable NumPy view of the values (Caffe's mutable_cpu_data)."""
        return self.view(Part.DATA)

    @property
    def diff(self) -> np.ndarray:
        """A writable NumPy view of the gradient (Caffe's mutable_cpu_diff)."""
        return self.view(Part.DIFF)

    def numpy(self, part: Part = Part.DATA) -> np.ndarray:
        """A copy of data or diff as a new NumPy array."""
        return self.copy_out(part)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        view = self.view(Part.DATA, writable=False)
        return view.astype(dtype) if dtype is not None else (view.copy() if copy else view)

    def copy_in(self, values: Any, part: Part = Part.DATA) -> None:
        """Copies values (anything NumPy reads, with exactly count elements, any shape) into data
        or diff, converted to the blob's dtype."""
        array = np.ascontiguousarray(values, dtype=self.dtype)
        check(lib.cblob_blob_copy_in(self._h, part, self.dtype_code, array.ctypes.data, array.size))

    def copy_out(self, part: Part = Part.DATA) -> np.ndarray:
        """A new NumPy array (the blob's shape and dtype) holding a copy of data or diff."""
        out = np.empty(self.shape, self.dtype)
        check(lib.cblob_blob_copy_out(self._h, part, self.dtype_code, out.ctypes.data, out.size))
        return out

    # ---- reshaping and sharing ---------------------------------------------------------------

    def share_data(self, other: Blob) -> None:
        """Makes this blob use other's data memory (Caffe's ShareData): one memory, one head."""
        self.share(other, Part.DATA)

    def share_diff(self, other: Blob) -> None:
        """Makes this blob use other's diff memory (Caffe's ShareDiff)."""
        self.share(other, Part.DIFF)

    def clone(self, dtype: DTypeLike | None = None) -> Blob:
        """A new blob of this shape holding the values converted to dtype (default: the same)."""
        code = self.dtype_code if dtype is None else dtype_code(dtype)
        return self._derived(lambda out: lib.cblob_blob_clone(self._h, code, out))

    # ---- DLPack ------------------------------------------------------------------------------

    def __dlpack_device__(self) -> tuple[int, int]:
        """(kDLCUDA, device) when the blob's context is in GPU mode, else (kDLCPU, 0)."""
        if self._context.mode == Mode.GPU:
            return _dlpack.KDL_CUDA, self._context.device
        return _dlpack.KDL_CPU, 0

    def __dlpack__(self, *, stream: int | Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """Exports the data as a DLPack capsule without a copy (the consumer shares the memory).
        A DLPack 1.x consumer (max_version (1, x)) gets a versioned tensor, others a legacy one.
        dl_device (kDLCPU, 0) asks for the host copy, (kDLCUDA, n) for the device copy."""
        if copy:
            raise BufferError("cblob exports without a copy; copy=True is not supported")
        device_type = (dl_device or self.__dlpack_device__())[0]
        memory = Memory.DEVICE if device_type == _dlpack.KDL_CUDA else Memory.HOST
        if device_type not in (_dlpack.KDL_CPU, _dlpack.KDL_CUDA, _dlpack.KDL_CUDA_HOST):
            raise BufferError(f"cblob cannot export to device type {device_type}")
        if memory == Memory.DEVICE and stream not in (None, -1):
            self._context.synchronize()  # the consumer's stream then sees finished work
        tensor = c_void_p()
        if max_version is not None and max_version[0] >= _dlpack.MAJOR_VERSION:
            check(lib.cblob_blob_to_dlpack(self._h, Part.DATA, memory, 0, tensor))
            return _dlpack.capsule(tensor.value, _dlpack.VERSIONED)
        check(lib.cblob_blob_to_dlpack_legacy(self._h, Part.DATA, memory, tensor))
        return _dlpack.capsule(tensor.value, _dlpack.LEGACY)


class Window(_WindowMethods, Blob):
    """A view of `size` rows of a parent blob's first axis (NeoML's window blob), from
    Blob.window. It holds its parent's memory; moving it (position, shift, window_size)
    re-attaches it to the parent's current storage."""

    __slots__ = ()
