# SPDX-License-Identifier: BSD-2-Clause
"""Files of any kind: cblob.open_file reads a .caffemodel, a .binaryproto, a BlobProtoVector, a
.npy, an .npz, a .safetensors file or a .npy folder once, telling the kind from its bytes.

What is here by hand: the File type's lifetime and the model it lends (cblob_file_model). The
library's model of a file is the file's own: it lives as long as the file, and the caller never
destroys it. So the handle is owned by a small holder that the File and every Model taken from
it reference: closing the File (or dropping it) drops its reference, and the handle is destroyed
when the last of them goes, never twice and never while a model uses it. The one-call methods
(open, kind, num_blobs, blob, save_npy_folder) come from _safe.py (generated).
"""
from __future__ import annotations

from ctypes import c_void_p
from typing import TYPE_CHECKING

from ._errors import check
from ._library import lib
from ._safe import _FileMethods
from ._util import no_copies

if TYPE_CHECKING:
    from ._context import Context
    from ._model import Model


class _Handle:
    """Owns a cblob_file handle; destroyed when the last holder (the File, the models it lent)
    lets go of this object."""

    __slots__ = ("value",)
    _destroy = lib.cblob_file_destroy

    def __init__(self, value: c_void_p):
        self.value = value

    def __del__(self):
        value, self.value = getattr(self, "value", None), None
        if value:
            self._destroy(value)


class File(_FileMethods):
    """A file opened whatever it holds (cblob.open_file): a model (File.model) for a net, an .npz,
    a safetensors file or a .npy folder; blobs (File.blob, File.blobs) for a BlobProto, a
    BlobProtoVector or a .npy file. A file the library cannot read is refused with a ParseError
    that says what it is (a prototxt, an HDF5 snapshot, a zip, a pickle, ...).

    Use it as a context manager or call close(); a model taken from it stays valid after that
    (it keeps the file's handle until it is dropped too), and so do its blobs. A closed file's
    methods raise ValueError, as Python's closed files do. It cannot be copied or pickled.
    """

    __slots__ = ("_holder", "_context", "_model", "__weakref__")

    def __init__(self, handle: c_void_p, context: Context):
        """Use cblob.open_file or File.open."""
        self._holder: _Handle | None = _Handle(handle)
        self._context = context
        self._model: Model | None = None

    @classmethod
    def _created(cls, create, context, io=None):
        handle = c_void_p()
        check(create(handle), io)
        return cls(handle, context)

    @property
    def _h(self) -> c_void_p:
        holder = self._holder
        if holder is None:
            raise ValueError("cblob: I/O operation on a closed file")
        return holder.value

    @_h.setter
    def _h(self, value: c_void_p) -> None:
        # Taking a handle (the generated tests' NULL one, say) makes a holder for it.
        self._holder = _Handle(value)

    @property
    def closed(self) -> bool:
        return self._holder is None

    def close(self) -> None:
        """Lets go of the file: its handle is freed now, or when the last model taken from it is
        dropped. Closing again does nothing."""
        self._holder = None
        self._model = None

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def model(self) -> Model:
        """The model of a net, an .npz, a safetensors file or a .npy folder (the same object each
        time): the file's own, which keeps the file's handle alive as long as it lives, so it
        stays valid after close(). A model read from an .npz, a safetensors file or a .npy folder
        has the keys' layers. A file of blobs raises StateError."""
        if self._model is None:
            from ._model import Model
            holder = self._holder
            raw = c_void_p()
            check(lib.cblob_file_model(self._h, raw))
            self._model = Model(raw, self._context, lender=holder)
        return self._model

    def blobs(self) -> list:
        """Every blob of a file of blobs (a BlobProto, a BlobProtoVector, a .npy file), as new
        holders that outlive the file."""
        return [self.blob(i) for i in range(self.num_blobs)]

    def __repr__(self) -> str:
        if self._holder is None:
            return "<cblob.File (closed)>"
        return f"<cblob.File {self.kind.name}>"

    __copy__ = __deepcopy__ = __reduce_ex__ = no_copies
