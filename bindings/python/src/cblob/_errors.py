# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): the exception classes and the status
# families they stand for.
"""cblob's errors as exceptions: CblobError and one subclass per family of statuses.

Each class also derives from the built-in exception a Python caller would expect (ShapeError is
a ValueError, OutOfRangeError an IndexError, CblobIOError an OSError, ...), so code that catches
those keeps working. The message is the library's, read on the calling thread right after the
failed call (ctypes keeps a Python thread on its OS thread, where cblob keeps the message), with
its two parts as the library keeps them: `function` (the C function called) and `detail`.

A failed call on a named file whose cause is one the operating system reports (the file or a
folder on its path is missing, it is a folder, permission is denied) raises a subclass that is
also FileNotFoundError, IsADirectoryError, NotADirectoryError or PermissionError, with `errno`
and `filename` set as Python's own open() sets them: the library's status says the file could
not be used, and asking the system about the path the same way the library does (os_cause)
gives the errno.
"""
from __future__ import annotations

import errno as _errno
import os
import stat
import threading

from ._library import lib
from ._raw import Status


class CblobError(Exception):
    """A failed cblob call: `status` (a Status) says what kind, `message` is the library's text,
    which names the C function ("cblob_blob_reshape: shape[1] is -3; ..."), `function` that
    function ("cblob_blob_reshape"; None for an error this package found before any call) and
    `detail` the message without it."""

    status: Status | int
    message: str
    function: str | None
    detail: str

    def __init__(self, status: Status | int, message: str, function: str | None = None, detail: str | None = None):
        super().__init__(f"{message} ({_status_name(status)})")
        self.status = status
        self.message = message
        self.function = function
        self.detail = message if detail is None else detail

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self):
        # Exceptions cross process boundaries (multiprocessing) by pickling: keep every part.
        state = dict(self.__dict__)
        if isinstance(self, OSError):  # errno, strerror and filename are OSError's own fields
            state.update(errno=self.errno, strerror=self.strerror, filename=self.filename)
        return (_rebuild, (type(self), self.status, self.message, self.function, self.detail, state))


class InvalidArgumentError(CblobError, ValueError):
    """An argument cblob refuses (Status.INVALID_ARGUMENT)."""


class OutOfRangeError(CblobError, IndexError):
    """An axis, index, position or range outside the blob (Status.OUT_OF_RANGE)."""


class ShapeError(CblobError, ValueError):
    """A negative dimension, too many axes, or shapes that do not match (Status.SHAPE)."""


class SizeOverflowError(CblobError, OverflowError):
    """A count, byte size or value that does not fit (Status.OVERFLOW)."""


class DTypeError(CblobError, TypeError):
    """A dtype cblob has no blob for, or blobs of different dtypes (Status.DTYPE)."""


class NotImplementedForDTypeError(CblobError, NotImplementedError):
    """Math Caffe leaves undefined for int32 and uint32 blobs (Status.NOT_IMPLEMENTED)."""


class CblobMemoryError(CblobError, MemoryError):
    """Host memory could not be allocated (Status.OUT_OF_MEMORY)."""


class StateError(CblobError, RuntimeError):
    """The object is not in a state that allows the call (Status.STATE)."""


class ParseError(CblobError, ValueError):
    """Malformed or truncated Caffe protobuf; the message names the field and byte offset (Status.PARSE)."""


class CblobIOError(CblobError, OSError):
    """A file could not be opened, read or written (Status.IO). Where the system names the
    cause, the error is one of the subclasses below, with `errno` and `filename` set."""


class CblobFileNotFoundError(CblobIOError, FileNotFoundError):
    """The file, or a folder on its path, does not exist (ENOENT)."""


class CblobPermissionError(CblobIOError, PermissionError):
    """Permission denied on the file or on a folder on its path (EACCES, EPERM)."""


class CblobIsADirectoryError(CblobIOError, IsADirectoryError):
    """A folder where a file was expected (EISDIR)."""


class CblobNotADirectoryError(CblobIOError, NotADirectoryError):
    """A file where a folder was expected, on the path or as an output folder (ENOTDIR)."""


class GPUUnavailableError(CblobError, RuntimeError):
    """No usable GPU: no driver, a stub driver, no device, an old driver, no NVRTC or no cuBLAS."""


class DeviceError(CblobError, RuntimeError):
    """A CUDA error, device memory exhausted, or a kernel that failed to compile."""


class DeviceLostError(DeviceError):
    """The device faulted (a CUDA sticky error) and cannot be used again in this process
    (Status.DEVICE_LOST); CBLOB_CUDA_LAUNCH_BLOCKING=1 makes the faulting call report it."""


class CommError(CblobError, RuntimeError):
    """A collective failed in its engine (a rank died, MPI or NCCL reported an error), or the
    communicator is broken by an earlier failure (Status.COMM)."""


class CommTimeoutError(CommError, TimeoutError):
    """A collective did not finish within the communicator's timeout (Status.TIMEOUT)."""


class CancelledError(CblobError):
    """The progress callback (Context.set_progress) asked the call to stop: nothing changed."""


class InternalError(CblobError, RuntimeError):
    """A broken internal invariant, or a status this package does not know (please report it)."""


FAMILIES = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.OUT_OF_RANGE: OutOfRangeError,
    Status.SHAPE: ShapeError,
    Status.OVERFLOW: SizeOverflowError,
    Status.DTYPE: DTypeError,
    Status.NOT_IMPLEMENTED: NotImplementedForDTypeError,
    Status.OUT_OF_MEMORY: CblobMemoryError,
    Status.STATE: StateError,
    Status.PARSE: ParseError,
    Status.IO: CblobIOError,
    Status.NO_DRIVER: GPUUnavailableError,
    Status.STUB_DRIVER: GPUUnavailableError,
    Status.NO_DEVICE: GPUUnavailableError,
    Status.DRIVER_TOO_OLD: GPUUnavailableError,
    Status.NVRTC_MISSING: GPUUnavailableError,
    Status.CUBLAS_MISSING: GPUUnavailableError,
    Status.NCCL_MISSING: GPUUnavailableError,
    Status.DEVICE_OUT_OF_MEMORY: DeviceError,
    Status.DEVICE: DeviceError,
    Status.COMPILE: DeviceError,
    Status.DEVICE_LOST: DeviceLostError,
    Status.COMM: CommError,
    Status.TIMEOUT: CommTimeoutError,
    Status.CANCELLED: CancelledError,
    Status.INTERNAL: InternalError,
}


OS_ERRORS = {
    _errno.ENOENT: CblobFileNotFoundError,
    _errno.EACCES: CblobPermissionError,
    _errno.EPERM: CblobPermissionError,
    _errno.EISDIR: CblobIsADirectoryError,
    _errno.ENOTDIR: CblobNotADirectoryError,
}


def _rebuild(cls, status, message, function, detail, state):
    error = cls(status, message, function, detail)
    for name, value in state.items():
        setattr(error, name, value)
    return error


def _status_name(status):
    return lib.cblob_status_name(status).decode()


def _text(raw):
    return raw.decode("utf-8", "replace")


def failure(status, message=None, io=None):
    """The exception for a failed call's status, with the calling thread's message and its parts
    (libcblob's, or `message` from a library with its own, as libcblob_mpi, which keeps no parts).
    io is (path, mode) for a call on a named file (os_cause)."""
    if message is None:
        text, function, detail = (_text(lib.cblob_last_error_message()), _text(lib.cblob_last_error_function()),
                                  _text(lib.cblob_last_error_detail()))
    else:
        text, function, detail = _text(message), None, None
    try:
        status = Status(status)
    except ValueError:
        pass  # a newer library's status: InternalError keeps the number
    cls = FAMILIES.get(status, InternalError)
    if status == Status.CANCELLED and message is None:
        raised = getattr(_pending, "exception", None)
        if raised is not None:  # a progress function raised it and so stopped the call
            _pending.exception = None
            return raised
    cause = os_cause(*io) if io is not None and status == Status.IO else None
    if cause is None:
        return cls(status, text, function or None, detail)
    error = OS_ERRORS[cause](status, text, function or None, detail)
    error.errno, error.strerror, error.filename = cause, os.strerror(cause), os.fspath(io[0])
    return error


_pending = threading.local()


def progress_exception(exception):
    """Keeps the exception a progress function raised on this thread (the library calls it on
    the calling thread), for failure() to raise once the stopped call has failed."""
    _pending.exception = exception


def check(status, io=None):
    """Raises the failure of a call that returned status (nothing for Status.OK); io is (path,
    mode) for a call on a named file."""
    if status:
        raise failure(status, io=io)


def os_cause(path, mode):
    """The errno of OS_ERRORS that explains a failed use of path, asked of the system as the
    library uses the path, or None (the cause is another: a file that changed while read, a
    full disk, a device or FIFO refused, ...). mode: "read" (a file), "any" (a file or a
    folder), "write" (a file to replace or make), "folder" (an output folder, made when missing)."""
    try:
        path = os.fsencode(os.fspath(path))
        if mode in ("read", "any"):
            info = os.stat(path)
            if stat.S_ISDIR(info.st_mode):
                if mode == "read":
                    return _errno.EISDIR
                os.close(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
                return None
            os.close(os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK))
            return None
        parent = os.path.dirname(os.path.abspath(path)) or b"/"
        target = os.path.realpath(path) if mode == "write" else path
        if mode == "write" and os.path.isdir(target):
            return _errno.EISDIR
        if mode == "folder" and os.path.lexists(target) and not os.path.isdir(target):
            return _errno.ENOTDIR
        if not stat.S_ISDIR(os.stat(parent).st_mode):
            return _errno.ENOTDIR
        folder = target if mode == "folder" and os.path.isdir(target) else os.path.dirname(os.path.abspath(target))
        if not os.access(folder, os.W_OK | os.X_OK):
            return _errno.EACCES
        if mode == "write" and os.path.exists(target) and not os.access(target, os.W_OK):
            return _errno.EACCES
        return None
    except OSError as e:
        return e.errno if e.errno in OS_ERRORS else None


def usage_error(cls, status, message):
    """An error this package finds before calling the library, in the library's form."""
    return cls(status, f"cblob: {message}")
