# SPDX-License-Identifier: BSD-2-Clause
"""Contexts and the process's default context. The type's lifetime (creation, destruction) and
the default are here; its methods (mode, device, stream, log, threads) and the GPU and
kernel-cache queries are one library call each and come from _safe.py (generated)."""
from __future__ import annotations

import threading
from ctypes import c_int32, c_void_p
from typing import Callable, Optional

from ._errors import check, progress_exception
from ._library import lib
from ._raw import cblob_progress_fn
from ._safe import _ContextMethods
from ._util import int32_arg, no_copies


class Context(_ContextMethods):
    """What Caffe keeps in its per-thread singleton: the mode (CPU or GPU) and the GPU device.

    Blobs keep their context alive. Changing a context (set_mode, set_device, set_stream) must
    not overlap with work its blobs do on other threads: configure it first. Most calls take
    `context=None`, which means the process's default context (default_context()).
    """

    __slots__ = ("_h", "_progress", "__weakref__")
    _destroy = lib.cblob_context_destroy

    def __init__(self) -> None:
        handle = c_void_p()
        check(lib.cblob_context_create(handle))
        self._h = handle
        self._progress: _ProgressEntry | None = None

    def __del__(self):
        handle = getattr(self, "_h", None)
        if handle:
            self._destroy(handle)

    def __repr__(self) -> str:
        return f"<cblob.Context mode={self.mode.name}>"

    def set_progress(self, progress: Optional[Callable[[int, Optional[int]], object]]) -> None:
        """Sets the function told how far the context's calls that read or write files are, and
        asked whether they may go on (None: none, the default). Those are the saves and loads of
        blobs, models and files to and from paths (Blob.save_npy, cblob.load, cblob.File, ...),
        through the context of the handle they read into or write from.

        progress(done, total): done is the bytes read or written so far, total the bytes the call
        will read or write in all (None while it cannot know, as for a pipe read to its end). It
        is called first with done 0, then each time at least a MiB more is done, and last with
        done == total: for a write just before the output takes its place. Returning False (a
        false value other than None) stops the call, which raises cblob.CancelledError having
        changed nothing (a file being written is not put in place, an existing file keeps its
        bytes); True or None (no return) lets it go on.

        It runs on the thread that made the call, inside the call: it must not use the blobs,
        models or files the call uses. An exception it raises (KeyboardInterrupt included) never
        crosses the library: it stops the call, and the call raises that exception (instead of
        CancelledError) once the library has undone what it began. A call in progress keeps the function it started with; once it is
        replaced, or the Context is collected, calls go on without it (blobs made in the context
        keep using it while the Context lives, as they keep the context)."""
        if progress is not None and not callable(progress):
            raise TypeError(f"progress must be callable or None, not {type(progress).__name__}")
        entry = _ProgressEntry(progress) if progress is not None else None
        try:
            check(lib.cblob_context_set_progress(self._h, _TRAMPOLINE if entry else cblob_progress_fn(),
                                                 entry.key if entry else None))
        except BaseException:
            if entry is not None:
                entry.forget()
            raise
        previous, self._progress = self._progress, entry
        if previous is not None:
            previous.forget()

    __copy__ = __deepcopy__ = __reduce_ex__ = no_copies


class _ProgressEntry:
    """A context's progress function, by key. The library is handed the key, not a pointer to
    the function: a context handle outlives its Context (blobs keep it alive inside the
    library) and a call in progress keeps the callback it started with, so a key whose function
    is gone must still be safe to pass back: the call goes on. The entry forgets its key when
    the function is replaced or the Context is collected."""

    __slots__ = ("key",)
    _functions: dict[int, Callable] = {}
    _next = [0]
    _lock = threading.Lock()

    def __init__(self, function):
        with self._lock:
            self._next[0] += 1
            self.key = self._next[0]
            self._functions[self.key] = function

    def forget(self):
        self._functions.pop(self.key, None)

    __del__ = forget


def _run_progress(user_data, done, total):
    """cblob_progress_fn of every context with a progress function: 0 goes on, 1 stops. An
    exception must not cross the library (ctypes would print it and go on): it stops the call,
    and failure() raises it once the call has failed."""
    function = _ProgressEntry._functions.get(user_data or 0)
    if function is None:
        return 0  # replaced, or its Context collected: the call goes on
    try:
        result = function(done, None if total < 0 else total)
    except BaseException as e:  # KeyboardInterrupt too: a stopped save changes nothing
        progress_exception(e)
        return 1
    return 1 if result is not None and not result else 0


_TRAMPOLINE = cblob_progress_fn(_run_progress)  # lives as long as the module


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
