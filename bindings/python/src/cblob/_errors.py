# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): CblobError (the library's message and its
# parts, pickling), the reading of a failed call's message, and the system's cause of a failed
# call on a named file (os_cause), which ask the system and need judgement. The classes of the
# families of statuses and their tables are generated (_error_classes.py, from
# codegen/bindings/errors.yaml).
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


# The families' classes (InvalidArgumentError, ShapeError, ...) and the tables failure() reads
# (FAMILIES: status -> class, OS_ERRORS: errno -> class) are generated from
# codegen/bindings/errors.yaml; they derive from CblobError, so they come in after it.
from ._error_classes import *  # noqa: E402,F401,F403


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
