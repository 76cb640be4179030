# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): the exception classes and the status
# families they stand for.
"""cblob's errors as exceptions: CblobError and one subclass per family of statuses.

Each class also derives from the built-in exception a Python caller would expect (ShapeError is
a ValueError, OutOfRangeError an IndexError, CblobIOError an OSError, ...), so code that catches
those keeps working. The message is the library's, read on the calling thread right after the
failed call (ctypes keeps a Python thread on its OS thread, where cblob keeps the message).
"""
from ._library import lib
from ._raw import Status


class CblobError(Exception):
    """A failed cblob call: `status` (a Status) says what kind, `message` is the library's text,
    which names the C function ("cblob_blob_reshape: shape[1] is -3; ...")."""

    def __init__(self, status, message):
        super().__init__(f"{message} ({_status_name(status)})")
        self.status = status
        self.message = message


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
    """A file could not be opened, read or written (Status.IO)."""


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


def _status_name(status):
    return lib.cblob_status_name(status).decode()


def failure(status, message=None):
    """The exception for a failed call's status, with the calling thread's message (libcblob's,
    or `message` from a library with its own, as libcblob_mpi)."""
    if message is None:
        message = lib.cblob_last_error_message()
    message = message.decode("utf-8", "replace")
    try:
        status = Status(status)
    except ValueError:
        pass  # a newer library's status: InternalError keeps the number
    return FAMILIES.get(status, InternalError)(status, message)


def check(status):
    """Raises the failure of a call that returned status (nothing for Status.OK)."""
    if status:
        raise failure(status)


def usage_error(cls, status, message):
    """An error this package finds before calling the library, in the library's form."""
    return cls(status, f"cblob: {message}")
