# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): which libcblob to load, and the ABI check.
"""Loads libcblob and declares its functions (the generated raw layer, _raw.py).

Which file: $CBLOB_LIBRARY when set (a build tree's library, say); else the libcblob.so.1 bundled
in the package (a wheel, or `pip install ./bindings/python`); else libcblob.so.1 from the dynamic
loader's search path (an installed libcblob1 package). The library must implement this package's
ABI: the same major version and at least its minor.
"""
import ctypes
import os
from pathlib import Path

from . import _raw

LIBRARY_NAME = f"libcblob.so.{_raw.ABI_VERSION_MAJOR}"
PACKAGE_DIR = Path(__file__).resolve().parent


def library_path() -> str:
    """The file this package loads (see the module's doc)."""
    explicit = os.environ.get("CBLOB_LIBRARY")
    if explicit:
        return explicit
    bundled = PACKAGE_DIR / LIBRARY_NAME
    return str(bundled) if bundled.exists() else LIBRARY_NAME


def _load():
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"cblob: cannot load {path}: {e} (install the cblob wheel, or set "
                          "CBLOB_LIBRARY to a libcblob.so.1)") from e
    lib.cblob_abi_version.restype = ctypes.c_uint32
    lib.cblob_abi_version.argtypes = ()
    version = lib.cblob_abi_version()
    major, minor = version >> 16, version & 0xFFFF
    if major != _raw.ABI_VERSION_MAJOR or minor < _raw.ABI_VERSION_MINOR:
        raise ImportError(f"cblob: {path} implements ABI {major}.{minor}; this package needs "
                          f"{_raw.ABI_VERSION_MAJOR}.{_raw.ABI_VERSION_MINOR} or a later {_raw.ABI_VERSION_MAJOR}.x")
    _raw.declare(lib)
    return lib


lib = _load()
