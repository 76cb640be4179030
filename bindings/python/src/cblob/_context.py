# SPDX-License-Identifier: BSD-2-Clause
"""Contexts (mode, device, stream, log) and the process-wide GPU and kernel-cache queries."""
import threading
from ctypes import c_int32, c_void_p

from ._errors import check
from ._library import lib
from ._raw import CacheMode, Mode
from ._util import read_text


class Context:
    """What Caffe keeps in its per-thread singleton: the mode (CPU or GPU) and the GPU device.

    Blobs keep their context alive. Changing a context (set_mode, set_device, set_stream) must
    not overlap with work its blobs do on other threads: configure it first. Most calls take
    `context=None`, which means the process's default context (default_context()).
    """

    __slots__ = ("_h", "__weakref__")
    _destroy = lib.cblob_context_destroy

    def __init__(self):
        handle = c_void_p()
        check(lib.cblob_context_create(handle))
        self._h = handle

    def __del__(self):
        handle = getattr(self, "_h", None)
        if handle:
            self._destroy(handle)

    def __repr__(self):
        return f"<cblob.Context mode={self.mode.name}>"

    @property
    def mode(self):
        """Mode.CPU (the default) or Mode.GPU."""
        out = c_int32()
        check(lib.cblob_context_mode(self._h, out))
        return Mode(out.value)

    def set_mode(self, mode):
        """Sets the mode. Mode.GPU needs a working GPU: without one it raises GPUUnavailableError
        and the mode stays as it was."""
        check(lib.cblob_context_set_mode(self._h, int(mode)))

    @property
    def device(self):
        """The GPU device index the context uses (0 until set)."""
        out = c_int32()
        check(lib.cblob_context_device(self._h, out))
        return out.value

    def set_device(self, index):
        """Chooses the GPU device (before the context opens one)."""
        check(lib.cblob_context_set_device(self._h, index))

    @property
    def stream(self):
        """The CUDA stream (an address; 0 is the default stream)."""
        out = c_void_p()
        check(lib.cblob_context_stream(self._h, out))
        return out.value or 0

    def set_stream(self, stream):
        """Sets the CUDA stream (a CUstream's address, say torch.cuda.current_stream().cuda_stream)."""
        check(lib.cblob_context_set_stream(self._h, stream or None))

    def synchronize(self):
        """Waits for the work queued on the context's stream."""
        check(lib.cblob_context_synchronize(self._h))

    def log(self):
        """The context's log: warnings that are not errors of a call (a cache folder that cannot
        be written, for example)."""
        return read_text(lib.cblob_context_log, self._h)

    def clear_log(self):
        check(lib.cblob_context_clear_log(self._h))


_default = None
_default_lock = threading.Lock()


def default_context():
    """The context calls use when given none: one per process, in CPU mode until set."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Context()
    return _default


def context_or_default(context):
    return default_context() if context is None else context


def gpu_probe():
    """The number of CUDA devices; raises GPUUnavailableError saying why there is none usable."""
    out = c_int32()
    check(lib.cblob_gpu_probe(out))
    return out.value


def gpu_versions():
    """(driver, NVRTC, cuBLAS) versions as CUDA numbers them (12040 is 12.4)."""
    driver, nvrtc, cublas = c_int32(), c_int32(), c_int32()
    check(lib.cblob_gpu_versions(driver, nvrtc, cublas))
    return driver.value, nvrtc.value, cublas.value


def gpu_device_name(index=0):
    return read_text(lib.cblob_gpu_device_name, index)


def gpu_report():
    """What the library found: driver, devices, NVRTC, cuBLAS, or why each is missing."""
    return read_text(lib.cblob_gpu_report)


def kernel_cache_mode():
    out = c_int32()
    check(lib.cblob_kernel_cache_mode(out))
    return CacheMode(out.value)


def kernel_cache_dir():
    return read_text(lib.cblob_kernel_cache_dir)


def kernel_cache_warm_up(context=None, compute_capability=0):
    """Compiles every GPU kernel ahead of time, for the context's device (0) or for a compute
    capability (80 for 8.0, no GPU needed); returns how many were compiled."""
    out = c_int32()
    check(lib.cblob_kernel_cache_warm_up(context_or_default(context)._h, compute_capability, out))
    return out.value
