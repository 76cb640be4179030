# SPDX-License-Identifier: BSD-2-Clause
"""Blob: Caffe's Blob (data and diff, synced lazily between host and GPU) with NeoML's
operations, as NumPy-friendly Python."""
import itertools
from ctypes import c_double, c_int32, c_int64, c_void_p

import numpy as np

from . import _dlpack
from ._context import context_or_default
from ._errors import InvalidArgumentError, check, failure, usage_error
from ._library import lib
from ._raw import MAX_AXES, DType, Head, Memory, Mode, Part, Status, cblob_release_fn
from ._util import NUMPY_DTYPES, dtype_code, immortal, path_bytes, read_bytes, read_text, shape_array

_count = lib.cblob_blob_count

# NumPy arrays whose memory blobs use (Blob.from_numpy without a copy), by the key the library
# hands back to the release callback when it lets go of the buffer.
_shared_arrays = {}
_keys = itertools.count(1)


def _release_shared_array(ptr, key, arrays=_shared_arrays):
    arrays.pop(key, None)


# Called by the library from whichever thread lets go of the buffer last; never freed, since a
# blob may let go while the interpreter clears this module.
_RELEASE = immortal(cblob_release_fn(_release_shared_array))


def _handles(blobs):
    """A C array of blob handles (cblob_blob *const *)."""
    blobs = list(blobs)
    return len(blobs), (c_void_p * max(len(blobs), 1))(*(b._h.value for b in blobs))


class Blob:
    """An N-d array (at most 32 axes, C-contiguous) holding `data` and `diff`, each synced lazily
    between host and GPU: Caffe's Blob, with NeoML's CDnnBlob operations.

    `blob.data` and `blob.diff` are writable NumPy views without a copy; each keeps the memory
    it views alive on its own (a view outlives the blob, and a reshape past the capacity gives
    the blob new memory while the view keeps the old). Dtypes: float32, float64, int32, uint32.

    Threads: distinct blobs may be used from different threads at once; one blob needs a lock,
    except for its pure getters (shape, count, dtype, ...). Blobs sharing memory (share_data, a
    window and its parent, exported views and DLPack tensors) count as one blob for this rule.
    """

    __slots__ = ("_h", "_count_out", "_context", "__weakref__")
    _destroy = lib.cblob_blob_destroy

    def __init__(self, shape, dtype=DType.FLOAT32, *, context=None):
        """A zero-filled blob of the given shape (an int or a sequence; () is a scalar, count 1)
        and dtype (a DType or a NumPy dtype). Memory is allocated at first access."""
        num_axes, dims = shape_array(shape)
        context = context_or_default(context)
        handle = c_void_p()
        check(lib.cblob_blob_create(context._h, dtype_code(dtype), num_axes, dims, handle))
        self._adopt(handle, context)

    @classmethod
    def _created(cls, create, context):
        """A blob from a call that writes a new handle; create(out) returns the status."""
        handle = c_void_p()
        check(create(handle))
        return cls._wrap(handle, context)

    @classmethod
    def _wrap(cls, handle, context):
        """A blob object that owns one hold on a library blob (a c_void_p)."""
        blob = cls.__new__(cls)
        blob._adopt(handle, context)
        return blob

    def _adopt(self, handle, context):
        self._h = handle
        self._count_out = c_int64()  # count's out-value: see count
        self._context = context

    def _derived(self, create):
        return Blob._created(create, self._context)

    def __del__(self):
        handle = getattr(self, "_h", None)
        if handle:
            self._destroy(handle)

    # ---- creation ----------------------------------------------------------------------------

    @classmethod
    def empty(cls, dtype=DType.FLOAT32, *, context=None):
        """A blob with no axes, count 0 and no storage (Caffe's default Blob), to reshape later."""
        context = context_or_default(context)
        return cls._created(lambda out: lib.cblob_blob_create_empty(context._h, dtype_code(dtype), out), context)

    @classmethod
    def legacy(cls, num, channels, height, width, dtype=DType.FLOAT32, *, context=None):
        """A 4-axis blob (num, channels, height, width): Caffe's Blob(n, c, h, w)."""
        return cls((num, channels, height, width), dtype, context=context)

    @classmethod
    def from_numpy(cls, array, *, context=None, copy=None):
        """A blob over a NumPy array's memory, without a copy, when the array is C-contiguous,
        aligned, writable, in native byte order and of a cblob dtype: the blob then keeps the
        array alive and the two see each other's writes. Otherwise (or with copy=True) the blob
        gets a copy; copy=False raises instead of copying. Other dtypes raise DTypeError."""
        array = np.asarray(array)
        code = dtype_code(array.dtype)
        shareable = (array.flags.c_contiguous and array.flags.aligned and array.flags.writeable
                     and array.dtype.isnative and array.size > 0)
        if copy is False and not shareable:
            raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                              "the array cannot be shared without a copy (it must be C-contiguous, aligned, "
                              "writable, native-endian and not empty) and copy=False")
        blob = cls(array.shape, code, context=context)
        if copy or not shareable:
            blob.copy_in(array)
            return blob
        key = next(_keys)
        _shared_arrays[key] = array
        status = lib.cblob_blob_set_cpu_data(blob._h, array.ctypes.data, array.nbytes, _RELEASE, key)
        if status:
            del _shared_arrays[key]
            raise failure(status)
        return blob

    @classmethod
    def from_dlpack(cls, tensor, *, context=None, copy=None):
        """A blob over the memory of anything with __dlpack__ (a NumPy array, a PyTorch, JAX or
        CuPy tensor), without a copy where cblob can use the layout: float32, float64, int32 or
        uint32, C-contiguous, aligned, writable, on the CPU (or on the context's GPU). The blob
        owns the tensor then and deletes it once nothing uses its memory. A host tensor cblob
        cannot use as it is (strided, read-only, unaligned) is copied through NumPy unless
        copy=False; copy=True always copies."""
        context = context_or_default(context)
        if copy:
            return cls.from_numpy(np.from_dlpack(tensor), context=context, copy=True)
        # DLPack's stream rule: a CUDA producer orders its work before the stream passed here,
        # the context's own (1, the legacy default stream, when the context queues there).
        stream = {}
        device_type, device_id = getattr(tensor, "__dlpack_device__", lambda: (_dlpack.KDL_CPU, 0))()
        if device_type == _dlpack.KDL_CUDA:
            context.set_device(device_id)  # opens the device, and the context's stream with it
            stream = {"stream": context.stream or 1}
        try:
            capsule = tensor.__dlpack__(max_version=(_dlpack.MAJOR_VERSION, 0), **stream)
        except TypeError:  # a producer that predates DLPack 1.0's keyword arguments
            capsule = tensor.__dlpack__(**stream)
        name, address = _dlpack.open_capsule(capsule)
        importer = lib.cblob_blob_from_dlpack_on_stream if name == _dlpack.VERSIONED else \
            lib.cblob_blob_from_dlpack_legacy_on_stream
        handle = c_void_p()
        status = importer(context._h, address, context.stream or None, handle)
        if status == Status.OK:
            _dlpack.mark_consumed(capsule, name)
            return cls._wrap(handle, context)
        error = failure(status)  # the capsule keeps the tensor: its destructor deletes it
        device = _dlpack.tensor_of(name, address).contents.dl_tensor.device.device_type
        if copy is False or device not in (_dlpack.KDL_CPU, _dlpack.KDL_CUDA_HOST) or \
                status not in (Status.SHAPE, Status.INVALID_ARGUMENT):
            raise error
        return cls.from_numpy(np.from_dlpack(tensor), context=context, copy=True)

    @classmethod
    def from_proto(cls, data, *, context=None):
        """A blob from serialized BlobProto bytes: float64 when they hold double_data, else
        float32, with the diff when they have one."""
        context = context_or_default(context)
        data = bytes(data)
        return cls._created(lambda out: lib.cblob_blob_create_from_proto(context._h, data, len(data), out), context)

    @classmethod
    def load(cls, path, *, context=None):
        """A blob from a BlobProto file (a .binaryproto, such as a mean image)."""
        context = context_or_default(context)
        name = path_bytes(path)
        return cls._created(lambda out: lib.cblob_blob_create_from_proto_file(context._h, name, out), context)

    @classmethod
    def _neoml(cls, create, dtype, context, *dims):
        context = context_or_default(context)
        return cls._created(lambda out: create(context._h, dtype_code(dtype), *dims, out), context)

    @classmethod
    def tensor(cls, dims, dtype=DType.FLOAT32, *, context=None):
        """A 7-axis NeoML blob from up to 7 dims, left-aligned (NeoML's CreateTensor)."""
        num, array = shape_array(dims)
        return cls._neoml(lib.cblob_blob_create_tensor, dtype, context, num, array)

    @classmethod
    def vector(cls, size, dtype=DType.FLOAT32, *, context=None):
        return cls._neoml(lib.cblob_blob_create_vector, dtype, context, size)

    @classmethod
    def matrix(cls, height, width, dtype=DType.FLOAT32, *, context=None):
        return cls._neoml(lib.cblob_blob_create_matrix, dtype, context, height, width)

    @classmethod
    def data_blob(cls, batch_length, batch_width, channels, dtype=DType.FLOAT32, *, context=None):
        """NeoML's CreateDataBlob."""
        return cls._neoml(lib.cblob_blob_create_data, dtype, context, batch_length, batch_width, channels)

    @classmethod
    def list_blob(cls, batch_length, batch_width, list_size, channels, dtype=DType.FLOAT32, *, context=None):
        """NeoML's CreateListBlob."""
        return cls._neoml(lib.cblob_blob_create_list, dtype, context, batch_length, batch_width, list_size, channels)

    @classmethod
    def image2d(cls, batch_length, batch_width, height, width, channels, dtype=DType.FLOAT32, *, context=None):
        return cls._neoml(lib.cblob_blob_create_image2d, dtype, context, batch_length, batch_width, height, width,
                          channels)

    @classmethod
    def image3d(cls, batch_length, batch_width, height, width, depth, channels, dtype=DType.FLOAT32, *,
                context=None):
        return cls._neoml(lib.cblob_blob_create_image3d, dtype, context, batch_length, batch_width, height, width,
                          depth, channels)

    def like(self, dtype=None):
        """A new 7-axis blob of this blob's shape (NeoML's GetClone without the values)."""
        code = self.dtype_code if dtype is None else dtype_code(dtype)
        return self._derived(lambda out: lib.cblob_blob_create_like(self._h, code, out))

    # ---- shape (pure getters) ----------------------------------------------------------------

    @property
    def count(self):
        """The element count (the product of the dimensions; 0 for an empty blob)."""
        # The out-value lives in the blob: count is a pure getter, which may run on several
        # threads at once only while nothing changes the blob, so they all write the same value.
        status = _count(self._h, self._count_out)
        if status:
            raise failure(status)
        return self._count_out.value

    size = count

    def _get(self, function, out_type, *args):
        out = out_type()
        check(function(self._h, *args, out))
        return out.value

    @property
    def shape(self):
        """The dimensions, as a tuple."""
        dims, num_axes = (c_int64 * MAX_AXES)(), c_int32()
        check(lib.cblob_blob_shape(self._h, MAX_AXES, dims, num_axes))
        return tuple(dims[:num_axes.value])

    @property
    def ndim(self):
        return self._get(lib.cblob_blob_num_axes, c_int32)

    @property
    def dtype_code(self):
        """The blob's DType."""
        return DType(self._get(lib.cblob_blob_dtype, c_int32))

    @property
    def dtype(self):
        """The blob's element type as a NumPy dtype."""
        return NUMPY_DTYPES[self.dtype_code]

    @property
    def capacity(self):
        """The elements the storage holds (at least count); for a window, the elements it views."""
        return self._get(lib.cblob_blob_capacity, c_int64)

    @property
    def context(self):
        return self._context

    def shape_at(self, axis):
        """One axis's dimension; a negative axis counts from the end."""
        return self._get(lib.cblob_blob_shape_at, c_int64, axis)

    def count_range(self, start_axis, end_axis):
        """The product of the dimensions of axes [start_axis, end_axis)."""
        return self._get(lib.cblob_blob_count_range, c_int64, start_axis, end_axis)

    def canonical_axis(self, axis):
        return self._get(lib.cblob_blob_canonical_axis, c_int32, axis)

    def legacy_shape(self, index):
        """Caffe's LegacyShape(index), index in [-4, 4): 1 for an axis the blob lacks."""
        return self._get(lib.cblob_blob_legacy_shape, c_int64, index)

    num = property(lambda self: self._get(lib.cblob_blob_num, c_int64), doc="LegacyShape(0).")
    channels = property(lambda self: self._get(lib.cblob_blob_channels, c_int64), doc="LegacyShape(1).")
    height = property(lambda self: self._get(lib.cblob_blob_height, c_int64), doc="LegacyShape(2).")
    width = property(lambda self: self._get(lib.cblob_blob_width, c_int64), doc="LegacyShape(3).")

    def offset(self, *indices):
        """The row-major element offset of the leading indices (each checked strictly)."""
        num, array = shape_array(indices)
        return self._get(lib.cblob_blob_offset, c_int64, num, array)

    def offset_legacy(self, n, c=0, h=0, w=0):
        return self._get(lib.cblob_blob_offset_legacy, c_int64, n, c, h, w)

    def head(self, part=Part.DATA):
        """Where the current copy of data or diff lives (Head)."""
        return Head(self._get(lib.cblob_blob_head, c_int32, part))

    def shape_string(self):
        """Caffe's shape string: "2 3 4 5 (120)"."""
        return read_text(lib.cblob_blob_shape_string, self._h)

    def __repr__(self):
        return f"<cblob.Blob {self.dtype} {self.shape_string()}>"

    # ---- views and values --------------------------------------------------------------------

    def view(self, part=Part.DATA, *, writable=True):
        """A NumPy array over data or diff, without a copy (see the class doc for its lifetime).
        A writable view marks the host copy current, as Caffe's mutable_cpu_data does; a
        read-only one syncs the host copy as cpu_data does."""
        shape, dtype = self.shape, self.dtype
        if self.count == 0:  # nothing to view (a blob with no axes and no storage views as empty)
            return np.zeros(shape or (0,), dtype)
        tensor = c_void_p()
        check(lib.cblob_blob_to_dlpack(self._h, part, Memory.HOST, 0 if writable else 1, tensor))
        return _dlpack.array_over(_dlpack.tensor_of(_dlpack.VERSIONED, tensor.value), dtype, shape)

    @property
    def data(self):
        """A writable NumPy view of the values (Caffe's mutable_cpu_data)."""
        return self.view(Part.DATA)

    @property
    def diff(self):
        """A writable NumPy view of the gradient (Caffe's mutable_cpu_diff)."""
        return self.view(Part.DIFF)

    def numpy(self, part=Part.DATA):
        """A copy of data or diff as a new NumPy array."""
        return self.copy_out(part)

    def __array__(self, dtype=None, copy=None):
        view = self.view(Part.DATA, writable=False)
        return view.astype(dtype) if dtype is not None else (view.copy() if copy else view)

    def read_element(self, *indices, part=Part.DATA):
        """One element as a float (exact for every dtype): Caffe's data_at / diff_at."""
        num, array = shape_array(indices)
        out = c_double()
        check(lib.cblob_blob_read_element(self._h, part, num, array, out))
        return out.value

    def copy_in(self, values, part=Part.DATA):
        """Copies values (anything NumPy reads, with exactly count elements, any shape) into data
        or diff, converted to the blob's dtype."""
        array = np.ascontiguousarray(values, dtype=self.dtype)
        check(lib.cblob_blob_copy_in(self._h, part, self.dtype_code, array.ctypes.data, array.size))

    def copy_out(self, part=Part.DATA):
        """A new NumPy array (the blob's shape and dtype) holding a copy of data or diff."""
        out = np.empty(self.shape, self.dtype)
        check(lib.cblob_blob_copy_out(self._h, part, self.dtype_code, out.ctypes.data, out.size))
        return out

    # ---- reshaping and sharing ---------------------------------------------------------------

    def reshape(self, *shape):
        """Gives the blob a new shape (ints or one sequence). Storage is replaced only when the
        count grows past the capacity; views made before keep the old memory then."""
        num, array = shape_array(shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, np.integer))
                                 else shape)
        check(lib.cblob_blob_reshape(self._h, num, array))

    def reshape_like(self, other):
        check(lib.cblob_blob_reshape_like(self._h, other._h))

    def reinterpret(self, *shape):
        """Changes the dims keeping the count (NeoML's ReinterpretDimensions)."""
        num, array = shape_array(shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, np.integer))
                                 else shape)
        check(lib.cblob_blob_reinterpret(self._h, num, array))

    def share_data(self, other):
        """Makes this blob use other's data memory (Caffe's ShareData): one memory, one head."""
        check(lib.cblob_blob_share(self._h, other._h, Part.DATA))

    def share_diff(self, other):
        check(lib.cblob_blob_share(self._h, other._h, Part.DIFF))

    def copy_from(self, source, part=Part.DATA, *, reshape=False):
        """Copies source's data or diff in (Caffe's CopyFrom); reshape=True takes its shape."""
        check(lib.cblob_blob_copy_from(self._h, source._h, part, int(bool(reshape))))

    # ---- math --------------------------------------------------------------------------------

    def update(self):
        """data -= diff (Caffe's Update), where the data lives."""
        check(lib.cblob_blob_update(self._h))

    def asum(self, part=Part.DATA):
        """The sum of absolute values (float32/float64 blobs)."""
        return self._get(lib.cblob_blob_asum, c_double, part)

    def sumsq(self, part=Part.DATA):
        """The sum of squares (float32/float64 blobs)."""
        return self._get(lib.cblob_blob_sumsq, c_double, part)

    def scale(self, factor, part=Part.DATA):
        """Multiplies data or diff by factor, where it lives."""
        check(lib.cblob_blob_scale(self._h, part, factor))

    # ---- NeoML -------------------------------------------------------------------------------

    def dim(self, dim):
        """The size of a named axis (Dim) of a 7-axis blob."""
        return self._get(lib.cblob_blob_dim, c_int64, dim)

    object_count = property(lambda self: self._get(lib.cblob_blob_object_count, c_int64),
                            doc="BatchLength * BatchWidth * ListSize (7-axis blobs).")
    object_size = property(lambda self: self._get(lib.cblob_blob_object_size, c_int64),
                           doc="Height * Width * Depth * Channels (7-axis blobs).")
    geometrical_size = property(lambda self: self._get(lib.cblob_blob_geometrical_size, c_int64),
                                doc="Height * Width * Depth (7-axis blobs).")

    def equal_shape(self, other):
        out = c_int32()
        check(lib.cblob_blob_equal_shape(self._h, other._h, out))
        return bool(out.value)

    def equal_dims(self, other, axes):
        axes = list(axes)
        out = c_int32()
        check(lib.cblob_blob_equal_dims(self._h, other._h, len(axes), (c_int32 * max(len(axes), 1))(*axes), out))
        return bool(out.value)

    def fill(self, value, part=Part.DATA):
        check(lib.cblob_blob_fill(self._h, part, value))

    def fill_object(self, index, value, part=Part.DATA):
        check(lib.cblob_blob_fill_object(self._h, part, index, value))

    def clear(self, part=Part.DATA):
        check(lib.cblob_blob_clear(self._h, part))

    def clear_object(self, index, part=Part.DATA):
        check(lib.cblob_blob_clear_object(self._h, part, index))

    def add(self, source, part=Part.DATA):
        """Adds source's data or diff element by element (equal dtypes and shapes)."""
        check(lib.cblob_blob_add(self._h, source._h, part))

    def convert_from(self, source, part=Part.DATA):
        """Copies source's values (same shape, any dtype) into data or diff, converting."""
        check(lib.cblob_blob_convert_from(self._h, source._h, part))

    def deep_copy(self):
        """A new blob with copies of shape, data and diff."""
        return self._derived(lambda out: lib.cblob_blob_deep_copy(self._h, out))

    def clone(self, dtype=None):
        """A new blob of this shape holding the values converted to dtype (default: the same)."""
        code = self.dtype_code if dtype is None else dtype_code(dtype)
        return self._derived(lambda out: lib.cblob_blob_clone(self._h, code, out))

    def transposed(self, axis1, axis2):
        return self._derived(lambda out: lib.cblob_blob_transposed(self._h, axis1, axis2, out))

    def transpose_from(self, source, axis1, axis2, part=Part.DATA):
        check(lib.cblob_blob_transpose_from(self._h, source._h, part, axis1, axis2))

    def merge(self, inputs, axis, part=Part.DATA):
        """Writes the concatenation of inputs along axis into this blob (NeoML's MergeByDim)."""
        num, handles = _handles(inputs)
        check(lib.cblob_blob_merge(self._h, part, axis, num, handles))

    def split(self, outputs, axis, part=Part.DATA):
        """Cuts this blob along axis into outputs, in order (NeoML's SplitByDim)."""
        num, handles = _handles(outputs)
        check(lib.cblob_blob_split(self._h, part, axis, num, handles))

    def merge_objects(self, inputs, part=Part.DATA):
        num, handles = _handles(inputs)
        check(lib.cblob_blob_merge_objects(self._h, part, num, handles))

    def split_objects(self, outputs, part=Part.DATA):
        num, handles = _handles(outputs)
        check(lib.cblob_blob_split_objects(self._h, part, num, handles))

    def window(self, size):
        """A Window of `size` rows of this blob's first axis, from row 0."""
        return Window._created(lambda out: lib.cblob_window_create(self._h, size, out), self._context)

    @property
    def is_window(self):
        return bool(self._get(lib.cblob_blob_is_window, c_int32))

    # ---- Caffe formats -----------------------------------------------------------------------

    def to_proto(self, *, write_diff=False):
        """The blob as serialized BlobProto bytes (with the diff when write_diff)."""
        return read_bytes(lib.cblob_blob_to_proto, self._h, int(bool(write_diff)))

    def save(self, path, *, write_diff=False):
        """Writes the blob as a BlobProto file (.binaryproto); the file appears complete or not at all."""
        check(lib.cblob_blob_to_proto_file(self._h, int(bool(write_diff)), path_bytes(path)))

    def load_proto(self, data, *, reshape=True):
        """Loads BlobProto bytes into this blob (Caffe's FromProto), converting to its dtype."""
        data = bytes(data)
        check(lib.cblob_blob_from_proto(self._h, data, len(data), int(bool(reshape))))

    def load_file(self, path, *, reshape=True):
        check(lib.cblob_blob_from_proto_file(self._h, path_bytes(path), int(bool(reshape))))

    def shape_equals_proto(self, data):
        """Caffe's ShapeEquals against BlobProto bytes."""
        data = bytes(data)
        out = c_int32()
        check(lib.cblob_blob_shape_equals_proto(self._h, data, len(data), out))
        return bool(out.value)

    # ---- GPU and DLPack ----------------------------------------------------------------------

    def gpu_ptr(self, part=Part.DATA):
        """A read-only device address of data or diff (syncs to the GPU); needs a GPU."""
        return self._get(lib.cblob_blob_gpu_ptr, c_void_p, part) or 0

    def mutable_gpu_ptr(self, part=Part.DATA):
        """A writable device address (the device copy becomes current); needs a GPU."""
        return self._get(lib.cblob_blob_mutable_gpu_ptr, c_void_p, part) or 0

    def async_push(self, part=Part.DATA):
        """Starts copying data or diff to the GPU on the context's stream."""
        check(lib.cblob_blob_async_push(self._h, part))

    def __dlpack_device__(self):
        """(kDLCUDA, device) when the blob's context is in GPU mode, else (kDLCPU, 0)."""
        if self._context.mode == Mode.GPU:
            return _dlpack.KDL_CUDA, self._context.device
        return _dlpack.KDL_CPU, 0

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Exports the data as a DLPack capsule without a copy (the consumer shares the memory).
        A DLPack 1.x consumer (max_version (1, x)) gets a versioned tensor, others a legacy one.
        dl_device (kDLCPU, 0) asks for the host copy, (kDLCUDA, n) for the device copy."""
        if copy:
            raise BufferError("cblob exports without a copy; copy=True is not supported")
        device_type = (dl_device or self.__dlpack_device__())[0]
        memory = Memory.DEVICE if device_type == _dlpack.KDL_CUDA else Memory.HOST
        if device_type not in (_dlpack.KDL_CPU, _dlpack.KDL_CUDA, _dlpack.KDL_CUDA_HOST):
            raise BufferError(f"cblob cannot export to device type {device_type}")
        if memory == Memory.DEVICE and stream not in (None, -1):
            self._context.synchronize()  # the consumer's stream then sees finished work
        tensor = c_void_p()
        if max_version is not None and max_version[0] >= _dlpack.MAJOR_VERSION:
            check(lib.cblob_blob_to_dlpack(self._h, Part.DATA, memory, 0, tensor))
            return _dlpack.capsule(tensor.value, _dlpack.VERSIONED)
        check(lib.cblob_blob_to_dlpack_legacy(self._h, Part.DATA, memory, tensor))
        return _dlpack.capsule(tensor.value, _dlpack.LEGACY)


class Window(Blob):
    """A view of `size` rows of a parent blob's first axis (NeoML's window blob). It holds its
    parent's memory; moving it re-attaches it to the parent's current storage."""

    __slots__ = ()

    @property
    def position(self):
        return self._get(lib.cblob_window_position, c_int64)

    @position.setter
    def position(self, position):
        check(lib.cblob_window_set_position(self._h, position))

    @property
    def window_size(self):
        """The rows the window views."""
        return self._get(lib.cblob_window_size, c_int64)

    @window_size.setter
    def window_size(self, size):
        check(lib.cblob_window_set_size(self._h, size))

    def shift(self, delta):
        check(lib.cblob_window_shift(self._h, delta))

    @property
    def parent(self):
        """The blob the window views (a new Blob object over the same library blob)."""
        return self._derived(lambda out: lib.cblob_window_parent(self._h, out))

    @property
    def owner(self):
        """The blob at the root of a chain of windows."""
        return self._derived(lambda out: lib.cblob_window_owner(self._h, out))
