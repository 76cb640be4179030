# SPDX-License-Identifier: BSD-2-Clause
"""The ctypes mirrors of DLPack's structs (cblob._dlpack) match the C compiler's layout of
<cblob/dlpack.h>, field by field (bindings/dlpack_layout.c's output, CBLOB_DLPACK_LAYOUT)."""
import ctypes
import os

import pytest

from cblob import _dlpack


def layout():
    path = os.environ.get("CBLOB_DLPACK_LAYOUT")
    if not path:
        pytest.skip("CBLOB_DLPACK_LAYOUT is not set (bindings/python/test.sh compiles bindings/dlpack_layout.c)")
    return dict(line.rsplit(" ", 1) for line in open(path).read().splitlines())


@pytest.mark.parametrize("struct", [_dlpack.DLPackVersion, _dlpack.DLDevice, _dlpack.DLDataType, _dlpack.DLTensor,
                                    _dlpack.DLManagedTensor, _dlpack.DLManagedTensorVersioned],
                         ids=lambda s: s.__name__)
def test_struct_layout(struct):
    c = layout()
    assert ctypes.sizeof(struct) == int(c[f"{struct.__name__}.size"])
    for name, _ in struct._fields_:
        field = getattr(struct, name)
        assert (field.offset, field.size) == (int(c[f"{struct.__name__}.{name}"]),
                                              int(c[f"{struct.__name__}.{name}.size"])), name


def test_constants():
    c = layout()
    assert (int(c["kDLCPU"]), int(c["kDLCUDA"]), int(c["kDLCUDAHost"])) == (
        _dlpack.KDL_CPU, _dlpack.KDL_CUDA, _dlpack.KDL_CUDA_HOST)
    assert int(c["DLPACK_FLAG_BITMASK_READ_ONLY"]) == _dlpack.READ_ONLY
    assert int(c["DLPACK_MAJOR_VERSION"]) == _dlpack.MAJOR_VERSION
