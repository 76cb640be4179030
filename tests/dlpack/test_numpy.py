#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""NumPy and cblob exchange memory through DLPack, without copies.

A small shim gives numpy.from_dlpack what it takes (an object with __dlpack__ and
__dlpack_device__ whose capsule, named "dltensor", holds a legacy DLManagedTensor): here the
tensor comes from cblob_blob_to_dlpack_legacy, through ctypes. The other way, a capsule from
ndarray.__dlpack__() goes to cblob_blob_from_dlpack_legacy, which takes the tensor over (the
capsule is then renamed "used_dltensor", as DLPack's Python rules say).

usage: test_numpy.py LIBCBLOB
Prints one line per test and "N passed, N failed"; exits 77 (skipped) without NumPy's from_dlpack.
"""
import ctypes
import gc
import sys
import threading
import weakref
from ctypes import POINTER, byref, c_char_p, c_double, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p

try:
    import numpy as np
except ImportError:
    print("SKIPPED: NumPy is not installed for this Python (install python3-numpy)")
    sys.exit(77)
if not hasattr(np, "from_dlpack"):
    print(f"SKIPPED: NumPy {np.__version__} has no from_dlpack (NumPy 1.22 or later has)")
    sys.exit(77)

lib = ctypes.CDLL(sys.argv[1])

# cblob's values (include/cblob/cblob.h).
OK, ERR_SHAPE, ERR_DTYPE = 0, 3, 5
FLOAT32, FLOAT64, INT32, UINT32 = 1, 2, 3, 4
DATA, DIFF = 0, 1
HOST = 0
DTYPES = {FLOAT32: np.float32, FLOAT64: np.float64, INT32: np.int32, UINT32: np.uint32}


# DLPack's legacy structs, laid out as dlpack.h lays them out (conformance.md 3.7, 3.12).
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]
assert ctypes.sizeof(DLManagedTensor) == 64

RELEASE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)

lib.cblob_last_error_message.restype = c_char_p
lib.cblob_context_create.argtypes = [POINTER(c_void_p)]
lib.cblob_context_destroy.argtypes = [c_void_p]
lib.cblob_blob_create.argtypes = [c_void_p, c_int32, c_int32, POINTER(c_int64), POINTER(c_void_p)]
lib.cblob_blob_destroy.argtypes = [c_void_p]
lib.cblob_blob_cpu_ptr.argtypes = [c_void_p, c_int32, POINTER(c_void_p)]
lib.cblob_blob_mutable_cpu_ptr.argtypes = [c_void_p, c_int32, POINTER(c_void_p)]
lib.cblob_blob_read_element.argtypes = [c_void_p, c_int32, c_int32, POINTER(c_int64), POINTER(c_double)]
lib.cblob_blob_fill.argtypes = [c_void_p, c_int32, c_double]
lib.cblob_blob_scale.argtypes = [c_void_p, c_int32, c_double]
lib.cblob_blob_set_cpu_data.argtypes = [c_void_p, c_void_p, ctypes.c_size_t, RELEASE_FN, c_void_p]
lib.cblob_blob_to_dlpack_legacy.argtypes = [c_void_p, c_int32, c_int32, POINTER(POINTER(DLManagedTensor))]
lib.cblob_blob_from_dlpack_legacy.argtypes = [c_void_p, c_void_p, POINTER(c_void_p)]

# The capsule protocol, through the interpreter's own C API. Capsule names must outlive the
# capsules: these bytes objects live as long as the module.
DLTENSOR, USED_DLTENSOR = b"dltensor", b"used_dltensor"
api = ctypes.pythonapi
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
api.PyCapsule_GetPointer.restype = c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
api.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]
api.PyCapsule_IsValid.argtypes = [c_void_p, c_char_p]
# The same function for a capsule given by address: its destructor gets no live object.
capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", api))


class CblobError(Exception):
    pass


def check(status):
    if status != OK:
        raise CblobError(f"status {status}: {lib.cblob_last_error_message().decode()}")


@ctypes.PYFUNCTYPE(None, c_void_p)
def delete_unconsumed(capsule):
    """The capsule's destructor: a tensor nobody took (still named "dltensor") is deleted here."""
    if api.PyCapsule_IsValid(capsule, DLTENSOR):
        tensor = ctypes.cast(capsule_pointer(capsule, DLTENSOR), POINTER(DLManagedTensor))
        tensor.contents.deleter(tensor)


class Exported:
    """The shim numpy.from_dlpack takes: each __dlpack__ exports the blob's part anew."""

    def __init__(self, blob, part=DATA):
        self.blob, self.part = blob, part

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __dlpack__(self, stream=None):
        tensor = POINTER(DLManagedTensor)()
        check(lib.cblob_blob_to_dlpack_legacy(self.blob, self.part, HOST, byref(tensor)))
        return api.PyCapsule_New(ctypes.cast(tensor, c_void_p), DLTENSOR,
                                 ctypes.cast(delete_unconsumed, c_void_p))


def import_capsule(context, capsule):
    """cblob_blob_from_dlpack_legacy on a capsule; on success the capsule is marked consumed."""
    blob = c_void_p()
    status = lib.cblob_blob_from_dlpack_legacy(context, api.PyCapsule_GetPointer(capsule, DLTENSOR), byref(blob))
    if status == OK:
        api.PyCapsule_SetName(capsule, USED_DLTENSOR)
        return blob, OK
    return None, status


def make_blob(context, dtype, shape):
    blob = c_void_p()
    dims = (c_int64 * len(shape))(*shape)
    check(lib.cblob_blob_create(context, dtype, len(shape), dims, byref(blob)))
    return blob


def host_pointer(blob, part=DATA):
    ptr = c_void_p()
    check(lib.cblob_blob_cpu_ptr(blob, part, byref(ptr)))
    return ptr.value


def element(blob, index, part=DATA):
    value = c_double()
    indices = (c_int64 * len(index))(*index)
    check(lib.cblob_blob_read_element(blob, part, len(index), indices, byref(value)))
    return value.value


# ---- tests ------------------------------------------------------------------------------------

def numpy_sees_exported_blobs_without_a_copy(context):
    for dtype, np_dtype in DTYPES.items():
        blob = make_blob(context, dtype, (2, 3, 4))
        try:
            ptr = c_void_p()
            check(lib.cblob_blob_mutable_cpu_ptr(blob, DIFF, byref(ptr)))
            np.ctypeslib.as_array(ctypes.cast(ptr, POINTER(np.ctypeslib.as_ctypes_type(np_dtype))), (24,))[:] = \
                np.arange(24, dtype=np_dtype)
            array = np.from_dlpack(Exported(blob, DIFF))
            assert array.dtype == np_dtype, array.dtype
            assert array.shape == (2, 3, 4), array.shape
            assert array.ctypes.data == host_pointer(blob, DIFF), "NumPy's array is not the blob's memory"
            assert np.array_equal(array.ravel(), np.arange(24, dtype=np_dtype))
            # Written through cblob, seen through NumPy.
            check(lib.cblob_blob_fill(blob, DIFF, 7))
            assert (array == 7).all(), array
        finally:
            lib.cblob_blob_destroy(blob)


def deleter_runs_once_when_numpy_lets_go(context):
    released = []
    buffer = (ctypes.c_float * 6)(*range(6))
    on_release = RELEASE_FN(lambda ptr, user_data: released.append(ptr))
    blob = make_blob(context, FLOAT32, (6,))
    check(lib.cblob_blob_set_cpu_data(blob, buffer, ctypes.sizeof(buffer), on_release, None))
    array = np.from_dlpack(Exported(blob))
    view = array[2:]  # a view keeps the tensor too
    lib.cblob_blob_destroy(blob)
    assert released == [], "cblob let go of memory that NumPy still views"
    buffer[4] = 40
    assert view[2] == 40 and array.ctypes.data == ctypes.addressof(buffer)
    del array
    gc.collect()
    assert released == [], "released while a view of the array is alive"
    del view
    gc.collect()
    assert released == [ctypes.addressof(buffer)], released


def unconsumed_capsule_deletes_its_tensor(context):
    released = []
    buffer = (ctypes.c_int32 * 3)()
    on_release = RELEASE_FN(lambda ptr, user_data: released.append(ptr))
    blob = make_blob(context, INT32, (3,))
    check(lib.cblob_blob_set_cpu_data(blob, buffer, ctypes.sizeof(buffer), on_release, None))
    capsule = Exported(blob).__dlpack__()
    lib.cblob_blob_destroy(blob)
    assert released == []
    del capsule
    gc.collect()
    assert released == [ctypes.addressof(buffer)], released


def numpy_array_imports_as_a_blob_sharing_its_memory(context):
    array = np.arange(12, dtype=np.float64).reshape(3, 4)
    alive = weakref.ref(array)
    capsule = array.__dlpack__()
    blob, status = import_capsule(context, capsule)
    check(status)
    try:
        assert host_pointer(blob) == array.ctypes.data, "the blob is not the array's memory"
        assert element(blob, (2, 3)) == 11
        array[1, 2] = -5.5
        assert element(blob, (1, 2)) == -5.5
        check(lib.cblob_blob_scale(blob, DATA, 2.0))
        assert array[2, 3] == 22
        # The blob holds the array through NumPy's deleter.
        del array, capsule
        gc.collect()
        assert alive() is not None, "NumPy freed memory the blob still uses"
        assert element(blob, (0, 1)) == 2
    finally:
        lib.cblob_blob_destroy(blob)
    gc.collect()
    assert alive() is None, "the blob did not call NumPy's deleter"


def deleter_runs_from_another_thread(context):
    array = np.ones(1000, dtype=np.int32)
    alive = weakref.ref(array)
    blob, status = import_capsule(context, array.__dlpack__())
    check(status)
    del array
    gc.collect()
    assert alive() is not None
    # ctypes lets go of the GIL around the call; NumPy's deleter takes it back.
    thread = threading.Thread(target=lib.cblob_blob_destroy, args=(blob,))
    thread.start()
    thread.join()
    gc.collect()
    assert alive() is None, "NumPy's deleter did not run on the other thread"


def import_refuses_what_blobs_cannot_be(context):
    cases = [(lambda base: base.reshape(3, 4)[:, ::2], np.float32, ERR_SHAPE),  # strided
             (lambda base: base.reshape(3, 4).T, np.float32, ERR_SHAPE),        # column-major
             (lambda base: base, np.float16, ERR_DTYPE),
             (lambda base: base, np.int64, ERR_DTYPE),
             (lambda base: base, np.complex64, ERR_DTYPE)]
    for view, dtype, expected in cases:
        base = np.arange(12).astype(dtype)
        alive = weakref.ref(base)
        array = view(base)
        del base
        capsule = array.__dlpack__()
        blob, status = import_capsule(context, capsule)
        assert blob is None and status == expected, (array.dtype, array.strides, status)
        assert lib.cblob_last_error_message(), "no message"
        # Refused: the capsule stays unconsumed and its own destructor deletes the tensor.
        del array, capsule
        gc.collect()
        assert alive() is None, "a refused tensor was not deleted by its capsule"


def main():
    tests = [numpy_sees_exported_blobs_without_a_copy, deleter_runs_once_when_numpy_lets_go,
             unconsumed_capsule_deletes_its_tensor, numpy_array_imports_as_a_blob_sharing_its_memory,
             deleter_runs_from_another_thread, import_refuses_what_blobs_cannot_be]
    context = c_void_p()
    check(lib.cblob_context_create(byref(context)))
    print(f"NumPy {np.__version__}")
    passed = failed = 0
    for test in tests:
        try:
            test(context)
            print(f"PASS {test.__name__}")
            passed += 1
        except Exception as e:  # report every test, then fail
            print(f"FAIL {test.__name__}: {type(e).__name__}: {e}")
            failed += 1
    lib.cblob_context_destroy(context)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
