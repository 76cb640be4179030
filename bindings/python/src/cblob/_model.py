# SPDX-License-Identifier: BSD-2-Clause
"""Caffe models (.caffemodel): the net's name, format and layers, and the weights as NumPy arrays."""
from collections.abc import Mapping
from ctypes import c_char_p, c_int32, c_int64, c_void_p

from ._blob import Blob, _handles
from ._context import context_or_default
from ._errors import check
from ._library import lib
from ._raw import NetFormat
from ._util import path_bytes, read_bytes


class Layer:
    """One layer of a model: its name, its type ("Convolution"; V1 files give the LayerType name,
    "CONVOLUTION") and its blobs (a tuple of Blob, weights first). Changes made to the blobs are
    what the model saves."""

    __slots__ = ("name", "type", "blobs")

    def __init__(self, name, type, blobs=()):
        self.name = name
        self.type = type
        self.blobs = tuple(blobs)

    def __repr__(self):
        shapes = ", ".join(b.shape_string() for b in self.blobs)
        return f"<cblob.Layer {self.name!r} {self.type} [{shapes}]>"


class Model(Mapping):
    """A Caffe net's weights. As a mapping (in file order) it gives, for each layer that has
    blobs, the list of its blobs' data as NumPy arrays, without a copy: `dict(model)` is what
    pycaffe's net.params holds. Each array keeps the memory it views alive on its own, after the
    model is gone too; writing into it changes what save() writes.

    `model.layers` lists every layer, also those without blobs (Layer: name, type, blobs).
    A layer name given twice maps to the first such layer with blobs. Saving writes a
    weights-only NetParameter (names, types, blobs): what Caffe's CopyTrainedLayersFrom reads.
    """

    def __init__(self, handle, context):
        """Use cblob.load, Model.from_bytes or Model.new."""
        self._h = handle
        self._context = context
        self.layers = []
        self._by_name = {}  # the mapping: name -> first layer of that name with blobs
        for index in range(self._get(lib.cblob_model_num_layers, c_int64)):
            self._append(self._read_layer(index))

    _destroy = lib.cblob_model_destroy

    def __del__(self):
        handle = getattr(self, "_h", None)
        if handle:
            self._destroy(handle)

    def _append(self, layer):
        self.layers.append(layer)
        if layer.blobs:
            self._by_name.setdefault(layer.name, layer)

    @classmethod
    def _opened(cls, open_into, context):
        handle = c_void_p()
        check(open_into(handle))
        return cls(handle, context)

    @classmethod
    def open(cls, path, *, context=None):
        """Reads a .caffemodel file (current or V1 format); see cblob.load."""
        context = context_or_default(context)
        name = path_bytes(path)
        return cls._opened(lambda out: lib.cblob_model_open_file(context._h, name, out), context)

    @classmethod
    def from_bytes(cls, data, *, context=None):
        """Reads a serialized NetParameter."""
        context = context_or_default(context)
        data = bytes(data)
        return cls._opened(lambda out: lib.cblob_model_open(context._h, data, len(data), out), context)

    @classmethod
    def new(cls, name=None, format=NetFormat.V2, *, context=None):
        """An empty model to fill with add_layer and save. A V1 model's layer types must be
        LayerType names ("CONVOLUTION") or numbers."""
        context = context_or_default(context)
        text = None if name is None else name.encode()
        return cls._opened(lambda out: lib.cblob_model_create(context._h, int(format), text, out), context)

    def _get(self, function, out_type, *args):
        out = out_type()
        check(function(self._h, *args, out))
        return out.value

    def _read_layer(self, index):
        blobs = [Blob._created(lambda out: lib.cblob_model_layer_blob(self._h, index, i, out), self._context)
                 for i in range(self._get(lib.cblob_model_layer_num_blobs, c_int64, index))]
        name = self._get(lib.cblob_model_layer_name, c_char_p, index).decode("utf-8", "replace")
        kind = self._get(lib.cblob_model_layer_type, c_char_p, index).decode("utf-8", "replace")
        return Layer(name, kind, blobs)

    @property
    def name(self):
        """The net's name, or None when it has none."""
        name = self._get(lib.cblob_model_name, c_char_p)
        return None if name is None else name.decode("utf-8", "replace")

    @property
    def format(self):
        """NetFormat.V2 (LayerParameter) or NetFormat.V1 (V1LayerParameter)."""
        return NetFormat(self._get(lib.cblob_model_format, c_int32))

    def layer(self, name):
        """The first layer called name; KeyError when none is."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def add_layer(self, name, type, blobs=()):
        """Appends a layer. Blobs may be Blob objects (the model holds them: their values at save
        time are written) or arrays (Blob.from_numpy: shared without a copy where it can be)."""
        blobs = [b if isinstance(b, Blob) else Blob.from_numpy(b, context=self._context) for b in blobs]
        num, handles = _handles(blobs)
        check(lib.cblob_model_add_layer(self._h, name.encode(), type.encode(), handles, num))
        layer = Layer(name, type, blobs)
        self._append(layer)
        return layer

    def to_bytes(self, *, write_diff=False):
        """The model as a serialized NetParameter in its format."""
        return read_bytes(lib.cblob_model_to_proto, self._h, int(bool(write_diff)))

    def save(self, path, *, write_diff=False):
        """Writes a .caffemodel; the file appears complete or not at all."""
        check(lib.cblob_model_to_proto_file(self._h, int(bool(write_diff)), path_bytes(path)))

    # ---- the mapping: layer name -> list of arrays ------------------------------------------

    def __getitem__(self, name):
        return [blob.data for blob in self._by_name[name].blobs]

    def __iter__(self):
        return iter(self._by_name)

    def __len__(self):
        return len(self._by_name)

    def __repr__(self):
        return f"<cblob.Model {self.name!r} {self.format.name}, {len(self.layers)} layers>"
