# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): arenas, communicators over MPI (mpi4py,
# libcblob_mpi loaded at run time) and NCCL, and requests that keep their blobs until they end
# (the communicator's one-call methods, rank, size, barrier, ..., come from _safe.py).
"""Arenas and communicators: data-parallel training as Caffe did it on many GPUs (all-reduce the
diffs of the learnable blobs after each backward pass), over MPI or NCCL.

    >>> from mpi4py import MPI
    >>> with cblob.Comm.from_mpi(MPI.COMM_WORLD) as comm:
    ...     grads = cblob.Arena(params, cblob.Part.DIFF)      # one buffer for every diff
    ...     comm.allreduce(grads, op="average")

libcblob itself never links MPI: Comm.from_mpi loads libcblob_mpi.so.1 (the libcblob-mpi1
package, or a build tree's copy named by $CBLOB_MPI_LIBRARY) on first use.
"""
from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from ctypes import c_int32, c_void_p
from typing import TYPE_CHECKING, Any

from ._blob import Blob
from ._util import handle_array as _handles
from ._context import context_or_default
from ._errors import CommError, InvalidArgumentError, StateError, check, failure, usage_error
from ._library import lib, library_path
from ._raw import NCCL_UNIQUE_ID_BYTES, Part, ReduceOp, Status
from ._safe import _CommMethods
from ._util import no_copies

if TYPE_CHECKING:
    from ._context import Context

MPI_LIBRARY_NAME = "libcblob_mpi.so.1"


class Arena(Blob):
    """One contiguous buffer holding the data (or diff) of many blobs, Caffe's learnable-params
    buffer: a 1-D blob whose `part` is every member's values, each in an aligned slice, padding
    included (zeros that stay zero). A collective on the arena moves every member at once.

    Creating it copies each member's current values into its slice and makes the member's part
    use the slice: members keep working as before, through views taken from then on (a view
    taken before keeps the member's old memory, as after a reshape past the capacity). A member leaves the arena when it gets memory of its own (a reshape past
    its count, share_data/share_diff, from_numpy's buffer); its slice keeps its last values. The
    arena and its members keep each other's memory alive: drop them in any order. Use the arena
    itself only in collectives and for reading. A blob already in an arena moves to the new one.

    The blobs must have one dtype (DTypeError otherwise) and one context, be listed once, not be
    windows or mapped, and not share the part with each other (InvalidArgumentError); an empty
    list is InvalidArgumentError. `alignment` (bytes, a power of two from the element size to 4096)
    places each slice: 64 fits cache lines, 256 fits cuMemAlloc.
    """

    __slots__ = ("part", "members")

    def __init__(self, blobs: Iterable[Blob], part: Part = Part.DATA, *, alignment: int = 64):
        members = tuple(blobs)
        if not all(isinstance(b, Blob) for b in members):
            raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT, "an arena is made of cblob.Blob objects")
        count, handles = _handles(members)
        handle = c_void_p()
        check(lib.cblob_arena_create(handles, count, int(part), alignment, handle))
        self._adopt(handle, members[0]._context)
        self.part = Part(part)
        self.members = members

    def __repr__(self) -> str:
        return f"<cblob.Arena {self.part.name.lower()} of {len(self.members)} blobs, {self.count} elements>"


class Request:
    """A collective in flight (Comm.allreduce_start and friends). Until it is waited for, its
    blobs must not be read, written, reshaped or used in another collective. wait() finishes it
    and raises the collective's error; waiting again raises the same error or returns. As a
    context manager it waits on exit; dropping it without a wait waits too, but loses the error."""

    __slots__ = ("_h", "_keep")
    _destroy = lib.cblob_comm_request_destroy

    def __init__(self, handle: c_void_p, keep: Any):
        self._h: c_void_p | None = handle
        self._keep = keep  # the communicator and the blobs' Python objects, until the request is freed

    def wait(self) -> None:
        check(lib.cblob_comm_request_wait(self._h))

    __copy__ = __deepcopy__ = __reduce_ex__ = no_copies

    def close(self) -> None:
        """Waits if nobody has (the error is lost: call wait() first to see it) and frees the request."""
        handle, self._h = getattr(self, "_h", None), None
        if handle:
            self._destroy(handle)
        self._keep = None

    __del__ = close

    def __enter__(self) -> Request:
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is None:
                self.wait()
        finally:
            self.close()


def _reduce_op(op):
    if isinstance(op, str):
        try:
            return ReduceOp[op.upper()]
        except KeyError:
            raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                              f"op is 'sum' or 'average' (or a ReduceOp), not {op!r}") from None
    return ReduceOp(op)


def _blob_list(blobs, part):
    """(count, handles, part, blobs) for one blob, an arena or an iterable of them. part None: the
    arena's own when every blob is an arena of one part, else Part.DATA."""
    blobs = (blobs,) if isinstance(blobs, Blob) else tuple(blobs)
    if not all(isinstance(b, Blob) for b in blobs):
        raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                          "collectives take a cblob.Blob, an Arena or an iterable of them")
    if part is None:
        parts = {b.part for b in blobs if isinstance(b, Arena)}
        part = parts.pop() if len(parts) == 1 and all(isinstance(b, Arena) for b in blobs) else Part.DATA
    count, handles = _handles(blobs)
    return count, handles, int(part), blobs


class Comm(_CommMethods):
    """A communicator: a group of ranks (processes, or GPUs) running collectives together. Every
    rank makes the same collectives in the same order, with lists of the same dtypes and counts.

    Collectives take one blob, an Arena or an iterable of blobs; lists are fused into buckets
    (set_bucket_bytes) with bit-identical results. Engine failures raise CommError (the
    communicator is then broken: every later collective raises CommError at once; close it), a
    wait past the timeout CommTimeoutError; argument errors are found before anything starts and
    leave the communicator usable. One thread at a time per communicator. Closing (or dropping)
    it frees it; requests still alive keep it until they are freed.
    """

    __slots__ = ("_raw", "_context", "__weakref__")
    _raw: c_void_p | None  # None once closed
    _destroy = lib.cblob_comm_destroy

    def __init__(self) -> None:
        raise TypeError("make a Comm with Comm.from_mpi(...) or Comm.from_nccl(...)")

    @classmethod
    def _created(cls, create, context):
        handle = c_void_p()
        create(handle)
        comm = cls.__new__(cls)
        comm._h = handle
        comm._context = context
        return comm

    @classmethod
    def from_mpi(cls, comm: Any = None, *, context: Context | None = None) -> Comm:
        """A communicator over an mpi4py communicator (the same ranks in the same order; cblob
        uses a duplicate of it), or over MPI_COMM_WORLD when comm is None: MPI is then initialised
        if nobody has, and finalized at exit only in that case. Collective over comm. MPI's
        engine works on host memory (float32, float64, int32, uint32). Raises StateError when
        libcblob_mpi.so.1 cannot be loaded or MPI is finalized, CommError when MPI fails."""
        mpi = mpi_library()
        context = context_or_default(context)
        if comm is None:
            return cls._created(lambda out: _check_mpi(mpi, mpi.cblob_comm_create_mpi_world(context._h, out)), context)
        handle = _mpi_handle(comm, mpi.cblob_comm_create_mpi)
        return cls._created(lambda out: _check_mpi(mpi, mpi.cblob_comm_create_mpi(context._h, handle, out)), context)

    @classmethod
    def from_nccl_mpi(cls, comm: Any, *, context: Context | None = None) -> Comm:
        """An NCCL communicator over the ranks of an mpi4py communicator, in its order: rank 0
        makes the unique id and MPI carries it to the others (libcblob_mpi's
        cblob_comm_create_nccl_mpi). Collective over comm; each rank's context is in GPU mode on
        its own device. Errors as from_nccl, on every rank when rank 0 cannot make the id."""
        mpi = mpi_library()
        context = context_or_default(context)
        handle = _mpi_handle(comm, mpi.cblob_comm_create_nccl_mpi)
        return cls._created(lambda out: _check_mpi(mpi, mpi.cblob_comm_create_nccl_mpi(context._h, handle, out)),
                            context)

    @staticmethod
    def nccl_unique_id() -> bytes:
        """The unique id (bytes) of a new NCCL communicator: one rank makes it and sends it to the
        others by its own means; each then calls Comm.from_nccl. Raises GPUUnavailableError without
        a GPU or without NCCL (libnccl.so.2), CommError when NCCL fails."""
        out = (ctypes.c_char * NCCL_UNIQUE_ID_BYTES)()
        check(lib.cblob_comm_nccl_unique_id(out, NCCL_UNIQUE_ID_BYTES))
        return out.raw

    @classmethod
    def from_nccl(cls, unique_id: bytes, nranks: int, rank: int, *, context: Context | None = None) -> Comm:
        """Joins the NCCL communicator of nranks ranks named by unique_id as `rank`, on the
        context's GPU (one rank per GPU), blocking until every rank has joined. Collectives then
        run on device memory, queued on the context's stream. Errors as nccl_unique_id."""
        unique_id = bytes(unique_id)
        if len(unique_id) != NCCL_UNIQUE_ID_BYTES:
            raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                              f"an NCCL unique id has {NCCL_UNIQUE_ID_BYTES} bytes, not {len(unique_id)}")
        context = context_or_default(context)
        return cls._created(lambda out: check(lib.cblob_comm_create_nccl(context._h, unique_id, nranks, rank, out)),
                            context)

    def close(self) -> None:
        """Frees the communicator (requests still alive keep it until they are freed)."""
        handle, self._raw = getattr(self, "_raw", None), None
        if handle:
            self._destroy(handle)

    __del__ = close

    def __enter__(self) -> Comm:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def _h(self) -> c_void_p:
        # Every call on a closed communicator is a StateError (the generated methods read this).
        if self._raw is None:
            raise usage_error(StateError, Status.STATE, "the communicator is closed")
        return self._raw

    @_h.setter
    def _h(self, value: c_void_p | None) -> None:
        self._raw = value

    def __repr__(self) -> str:
        return f"<cblob.Comm rank {self.rank} of {self.size}>" if self._raw else "<cblob.Comm closed>"

    def set_timeout(self, seconds: float | None) -> None:
        """How long a wait may take before it raises CommTimeoutError (and breaks the
        communicator); None (the default) waits as long as it takes. Set the same on every rank."""
        milliseconds = -1 if seconds is None else int(round(seconds * 1000))
        if seconds is not None and milliseconds < 0:
            raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT, f"a timeout is >= 0 seconds, not {seconds}")
        check(lib.cblob_comm_set_timeout(self._h, milliseconds))

    __copy__ = __deepcopy__ = __reduce_ex__ = no_copies

    def allreduce_start(self, blobs: Blob | Iterable[Blob], part: Part | None = None,
                        op: ReduceOp | str = ReduceOp.SUM) -> Request:
        """Starts an all-reduce ("sum" or "average", float dtypes only for the average) of the
        part (default: an arena's own, else Part.DATA) and returns its Request."""
        count, handles, part, blobs = _blob_list(blobs, part)
        return self._start(lambda out: lib.cblob_comm_allreduce_start(self._h, handles, count, part,
                                                                      _reduce_op(op), out), blobs)

    def broadcast_start(self, blobs: Blob | Iterable[Blob], part: Part | None = None, root: int = 0) -> Request:
        """Starts copying the root's part to every rank and returns its Request."""
        count, handles, part, blobs = _blob_list(blobs, part)
        return self._start(lambda out: lib.cblob_comm_broadcast_start(self._h, handles, count, part, root, out),
                           blobs)

    def barrier_start(self) -> Request:
        """Starts a barrier and returns its Request."""
        return self._start(lambda out: lib.cblob_comm_barrier_start(self._h, out), ())

    def _start(self, start, blobs):
        handle = c_void_p()
        check(start(handle))
        return Request(handle, (self, blobs))

    def allreduce(self, blobs: Blob | Iterable[Blob], part: Part | None = None,
                  op: ReduceOp | str = ReduceOp.SUM) -> None:
        """All-reduces the part of the blobs in place (see allreduce_start); returns when done."""
        count, handles, part, _ = _blob_list(blobs, part)
        check(lib.cblob_comm_allreduce(self._h, handles, count, part, _reduce_op(op)))

    def broadcast(self, blobs: Blob | Iterable[Blob], part: Part | None = None, root: int = 0) -> None:
        """Copies the root's part of the blobs to every rank; returns when done."""
        count, handles, part, _ = _blob_list(blobs, part)
        check(lib.cblob_comm_broadcast(self._h, handles, count, part, root))


# ---- libcblob_mpi, loaded on first use -------------------------------------------------------

_mpi = None


def mpi_library_path() -> str:
    """The libcblob_mpi file Comm.from_mpi loads: $CBLOB_MPI_LIBRARY when set, else the copy next
    to the libcblob this package loaded, else libcblob_mpi.so.1 from the loader's search path."""
    explicit = os.environ.get("CBLOB_MPI_LIBRARY")
    if explicit:
        return explicit
    beside = os.path.join(os.path.dirname(library_path()), MPI_LIBRARY_NAME)
    return beside if os.path.exists(beside) else MPI_LIBRARY_NAME


def mpi_library():
    """libcblob_mpi, loaded once (RTLD_GLOBAL: Open MPI's plugins look up libmpi's symbols)."""
    global _mpi
    if _mpi is None:
        path = mpi_library_path()
        try:
            mpi = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise usage_error(StateError, Status.STATE, f"cannot load {path} ({e}): install libcblob-mpi1, "
                              "or set CBLOB_MPI_LIBRARY to a libcblob_mpi.so.1") from None
        mpi.cblob_mpi_last_error_message.restype = ctypes.c_char_p
        mpi.cblob_mpi_last_error_message.argtypes = ()
        mpi.cblob_comm_create_mpi_world.restype = c_int32
        mpi.cblob_comm_create_mpi_world.argtypes = (c_void_p, ctypes.POINTER(c_void_p))
        mpi.cblob_comm_create_mpi.restype = c_int32
        mpi.cblob_comm_create_nccl_mpi.restype = c_int32
        _mpi = mpi
    return _mpi


def finalize_mpi() -> None:
    """Finalizes MPI now, once every communicator over it is closed. libcblob_mpi finalizes the
    MPI that Comm.from_mpi() initialised when the process exits (and mpi4py the MPI it did); call
    this before closing a communicator after a failed collective whose missing rank may still
    join it (MPI may write into the blobs' memory until it is finalized: cblob/mpi.h). Nothing
    happens when MPI was never initialised, is finalized already, or libcblob_mpi was never
    loaded. MPI cannot be initialised again afterwards."""
    if _mpi is None:
        return
    started, done = ctypes.c_int(), ctypes.c_int()
    _mpi.MPI_Initialized(ctypes.byref(started))
    _mpi.MPI_Finalized(ctypes.byref(done))
    if started.value and not done.value:
        code = _mpi.MPI_Finalize()
        if code:
            raise CommError(Status.COMM, f"cblob: MPI_Finalize failed (MPI error {code})")


def _check_mpi(mpi, status):
    if status:
        raise failure(status, mpi.cblob_mpi_last_error_message())


def _mpi_handle(comm, function):
    """An mpi4py communicator's MPI_Comm as ctypes passes it (a pointer in Open MPI, an int in
    MPICH), with the argument types of `function` (context, MPI_Comm, out) set to match."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                          "Comm.from_mpi(comm) takes an mpi4py communicator, but mpi4py cannot be imported "
                          "(Comm.from_mpi() uses MPI_COMM_WORLD without it)") from None
    if not isinstance(comm, MPI.Comm):
        raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                          f"Comm.from_mpi takes an mpi4py communicator (MPI.Comm), not {type(comm).__name__}")
    handle_type = c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(c_void_p) else ctypes.c_int
    function.argtypes = (c_void_p, handle_type, ctypes.POINTER(c_void_p))
    return handle_type(MPI._handleof(comm))
