# SPDX-License-Identifier: BSD-2-Clause
"""GPU calls. Without a usable GPU every GPU call raises GPUUnavailableError with the status
cblob_gpu_probe gives and changes nothing; with one (or with the test doubles of the CUDA
libraries, CBLOB_BINDINGS_EXPECT_GPU=1, which test.sh sets for a second run) they work."""
import os

import numpy as np
import pytest

import cblob
from cblob import _dlpack

EXPECT_GPU = os.environ.get("CBLOB_BINDINGS_EXPECT_GPU") == "1"


def gpu_status():
    try:
        return cblob.gpu_probe(), None
    except cblob.GPUUnavailableError as error:
        return 0, error


def test_without_a_gpu_every_gpu_call_says_why():
    count, error = gpu_status()
    if count:
        pytest.skip("a GPU is usable here: test_with_a_gpu runs instead")
    assert not EXPECT_GPU, f"the test doubles did not load: {error}"
    context = cblob.Context()
    blob = cblob.Blob(4, context=context)
    blob.data[:] = 2
    for call in (lambda: context.set_mode(cblob.Mode.GPU), lambda: blob.gpu_ptr(), lambda: blob.mutable_gpu_ptr(),
                 lambda: blob.async_push(), lambda: blob.__dlpack__(dl_device=(_dlpack.KDL_CUDA, 0))):
        with pytest.raises(cblob.GPUUnavailableError) as caught:
            call()
        assert caught.value.status == error.status and caught.value.message
    assert context.mode == cblob.Mode.CPU and blob.head() == cblob.Head.AT_CPU and blob.asum() == 8
    assert cblob.gpu_report()


def test_with_a_gpu():
    count, error = gpu_status()
    if not count:
        pytest.skip(f"no usable GPU: {error}")
    context = cblob.Context()
    context.set_mode(cblob.Mode.GPU)
    blob = cblob.Blob((2, 3), context=context)
    blob.data[...] = 1.5
    assert blob.gpu_ptr() != 0 and blob.head() == cblob.Head.SYNCED
    blob.mutable_gpu_ptr()
    assert blob.head() == cblob.Head.AT_GPU
    blob.scale(2.0)  # on the device
    assert blob.asum() == 18.0
    assert blob.view(writable=False).tolist() == [[3.0] * 3] * 2, "synced back to the host"
    assert blob.__dlpack_device__() == (_dlpack.KDL_CUDA, context.device)
    capsule = blob.__dlpack__(max_version=(1, 0))
    name, address = _dlpack.open_capsule(capsule)
    assert _dlpack.tensor_of(name, address).contents.dl_tensor.device.device_type == _dlpack.KDL_CUDA
    copy = cblob.Blob.from_dlpack(blob, context=context)
    assert copy.head() == cblob.Head.AT_GPU and copy.asum() == 18.0
    assert np.asarray(copy).sum() == 18.0
