# SPDX-License-Identifier: BSD-2-Clause
"""Contexts and the process's default context. The type's lifetime (creation, destruction) and
the default are here; its methods (mode, device, stream, log, threads) and the GPU and
kernel-cache queries are one library call each and come from _safe.py (generated)."""
from __future__ import annotations

import threading
from ctypes import c_int32, c_void_p

from ._errors import check
from ._library import lib
from ._safe import _ContextMethods
from ._util import int32_arg, no_copies


class Context(_ContextMethods):
    """What Caffe keeps in its per-thread singleton: the mode (CPU or GPU) and the GPU device.

    Blobs keep their context alive. Changing a context (set_mode, set_device, set_stream) must
    not overlap with work its blobs do on other threads: configure it first. Most calls take
    `context=None`, which means the process's default context (default_context()).
    """

    __slots__ = ("_h", "__weakref__")
    _destroy = lib.cblob_context_destroy

    def __init__(self) -> None:
        handle = c_void_p()
        check(lib.cblob_context_create(handle))
        self._h = handle

    def __del__(self):
        handle = getattr(self, "_h", None)
        if handle:
            self._destroy(handle)

    def __repr__(self) -> str:
        return f"<cblob.Context mode={self.mode.name}>"

    __copy__ = __deepcopy__ = __reduce_ex__ = no_copies


_default: Context | None = None
_default_lock = threading.Lock()


def default_context() -> Context:
    """The context calls use when given none: one per process, in CPU mode until set."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Context()
    return _default


def context_or_default(context: Context | None) -> Context:
    return default_context() if context is None else context


def kernel_cache_warm_up(context: Context | None = None, compute_capability: int = 0) -> int:
    """Compiles every GPU kernel ahead of time, for the context's device (0) or for a compute
    capability (80 for 8.0, no GPU needed); returns how many were compiled. By hand: the other
    languages make it a method of the context, Python a function whose context defaults."""
    out = c_int32()
    check(lib.cblob_kernel_cache_warm_up(context_or_default(context)._h, int32_arg(compute_capability, "compute_capability"), out))
    return out.value
