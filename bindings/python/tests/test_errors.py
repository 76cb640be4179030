# SPDX-License-Identifier: BSD-2-Clause
"""Errors are exceptions: CblobError and one subclass per family of statuses, carrying the
library's message; bad files, bad arguments, and calls that fail change nothing."""
import numpy as np
import pytest

import cblob
from cblob import _errors
from conftest import SAMPLES


def test_every_status_has_a_family():
    for status in cblob.Status:
        if status != cblob.Status.OK:
            assert status in _errors.FAMILIES, f"{status!r} would surface as a bare InternalError"
            assert issubclass(_errors.FAMILIES[status], cblob.CblobError)


def test_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(cblob.CblobIOError) as caught:
        cblob.load(tmp_path / "missing.caffemodel")
    assert isinstance(caught.value, OSError) and caught.value.status == cblob.Status.IO
    assert "missing.caffemodel" in caught.value.message
    with pytest.raises(cblob.CblobIOError):
        cblob.load_blob(tmp_path / "missing.binaryproto")


def test_garbage_and_truncated_files_are_parse_errors(tmp_path):
    (tmp_path / "garbage.caffemodel").write_bytes(b"\xff" * 64)
    with pytest.raises(cblob.ParseError) as caught:
        cblob.load(tmp_path / "garbage.caffemodel")
    assert caught.value.message.startswith("cblob_file_open: ") and caught.value.function == "cblob_file_open"
    whole = (SAMPLES / "tiny_lenet.caffemodel").read_bytes()
    (tmp_path / "truncated.caffemodel").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(cblob.ParseError) as caught:
        cblob.load(tmp_path / "truncated.caffemodel")
    assert "byte" in caught.value.message, "the message says where"
    with pytest.raises(cblob.ParseError):
        cblob.Model.from_bytes(whole[:100])
    with pytest.raises(cblob.ParseError):
        cblob.Blob.from_proto(b"\x2a\x05\x00")


def test_errors_carry_their_family_and_builtin_base():
    blob = cblob.Blob((2, 3))
    with pytest.raises(IndexError):
        blob.shape_at(5)
    with pytest.raises(cblob.InvalidArgumentError):
        cblob.Context().set_mode(7)  # not a mode: the library refuses it
    with pytest.raises(cblob.SizeOverflowError):
        cblob.Blob(3, np.int32).fill(2.0**40)


def test_a_failed_call_changes_nothing():
    blob = cblob.Blob((2, 3))
    blob.data[...] = 1
    with pytest.raises(cblob.ShapeError):
        blob.reshape(2, -1)
    assert blob.shape == (2, 3) and blob.asum() == 6
    with pytest.raises(cblob.ShapeError):
        blob.copy_in(np.zeros(5))
    assert blob.asum() == 6


def test_messages_are_per_thread():
    import threading
    seen = {}

    def fail_elsewhere():
        try:
            cblob.Blob((-7,))
        except cblob.ShapeError as e:
            seen["thread"] = e.message

    with pytest.raises(cblob.ShapeError) as caught:
        cblob.Blob((3, -2))
    worker = threading.Thread(target=fail_elsewhere)
    worker.start()
    worker.join()
    assert "shape[0] is -7" in seen["thread"] and "shape[1] is -2" in caught.value.message
