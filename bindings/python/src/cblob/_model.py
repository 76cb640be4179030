# SPDX-License-Identifier: BSD-2-Clause
"""Caffe models (.caffemodel): the net's name, format and layers, and the weights as NumPy arrays.

What is here by hand: the Model as a mapping of layers to arrays (Python's container protocol),
its Layer records whose blobs are read on first access (so that a lazy open reads none until
asked), the opens that pick eager or lazy, and the structure calls that read several values into
one Python object (rules with their stages, param specs, parameters as a dict, a blob's values as
a NumPy array). The methods that are one library call each (exports, imports, bottoms, tops,
phase, JSON, replace_blobs, ...) come from _safe.py (generated): Model derives from its table.
"""
import json
from collections import namedtuple
from collections.abc import Mapping
from ctypes import c_char_p, c_float, c_int32, c_int64, c_void_p

import numpy as np

from ._blob import Blob
from ._context import context_or_default
from ._errors import check
from ._library import lib
from ._raw import Part, Phase
from ._safe import _ModelMethods
from ._util import NUMPY_DTYPES, handle_array

Rule = namedtuple("Rule", "phase min_level max_level stages not_stages")
Rule.__doc__ = """One of a layer's include or exclude rules (Caffe's NetStateRule): the phase it asks
for (Phase.NONE when none), the level bounds (-2**31 and 2**31 - 1 when unset), the stages the
net must have and those it must not."""

ParamSpec = namedtuple("ParamSpec", "name lr_mult decay_mult")
ParamSpec.__doc__ = """One of a layer's param specs (ParamSpec; V1's param, blobs_lr and weight_decay):
the name layers share the blob by (None when it has none), and the multipliers on the learning
rate and the weight decay (1 when unset)."""


class Layer:
    """One layer of a model: its name, its type ("Convolution"; V1 files give the LayerType name,
    "CONVOLUTION") and its blobs (a tuple of Blob, weights first), which a layer of a model read
    from a file takes from it on first access. Changes made to the blobs are what the model saves."""

    __slots__ = ("name", "type", "_blobs", "_model", "_index")

    def __init__(self, name, type, blobs=(), *, model=None, index=None):
        self.name = name
        self.type = type
        self._blobs = None if model is not None else tuple(blobs)
        self._model = model
        self._index = index

    @property
    def blobs(self):
        if self._blobs is None:
            model, index = self._model, self._index
            self._blobs = tuple(model.layer_blob(index, i) for i in range(model._num_blobs(index)))
        return self._blobs

    @blobs.setter
    def blobs(self, blobs):
        self._blobs = tuple(blobs)

    def __repr__(self):
        shapes = ", ".join(b.shape_string() for b in self.blobs)
        return f"<cblob.Layer {self.name!r} {self.type} [{shapes}]>"


class Model(_ModelMethods, Mapping):
    """A Caffe net's weights. As a mapping (in file order) it gives, for each layer that has
    blobs, the list of its blobs' data as NumPy arrays, without a copy: `dict(model)` is what
    pycaffe's net.params holds. Each array keeps the memory it views alive on its own, after the
    model is gone too; writing into it changes what save() writes.

    `model.layers` lists every layer, also those without blobs (Layer: name, type, blobs).
    A layer name given twice maps to the first such layer with blobs. A model keeps every field
    of the file it came from and saves byte for byte what it read, changed values aside (a model
    built with Model.new writes a weights-only NetParameter). Layers' structure: bottoms(i),
    tops(i), phase(i), rules(i, kind), param_specs(i), params(i); exports: to_safetensors,
    to_npz and their save_ twins; the way back: Model.open_safetensors(_file), open_npz(_file)
    and replace_blobs.
    """

    def __init__(self, handle, context):
        """Use cblob.load, Model.open, Model.from_bytes or Model.new."""
        self._h = handle
        self._context = context
        self.layers = []
        self._by_name = {}  # the mapping: name -> first layer of that name with blobs
        count = c_int64()
        check(lib.cblob_model_num_layers(self._h, count))
        for index in range(count.value):
            name = _text(self, lib.cblob_model_layer_name, index)
            kind = _text(self, lib.cblob_model_layer_type, index)
            layer = Layer(name, kind, model=self, index=index)
            self.layers.append(layer)
            if self._num_blobs(index):
                self._by_name.setdefault(name, layer)

    _destroy = lib.cblob_model_destroy

    def __del__(self):
        handle = getattr(self, "_h", None)
        if handle:
            self._destroy(handle)

    @classmethod
    def _created(cls, create, context):
        handle = c_void_p()
        check(create(handle))
        return cls(handle, context)

    @classmethod
    def open(cls, path, *, lazy=False, context=None):
        """Reads a .caffemodel file (current or V1 format); see cblob.load. With lazy=True only
        the structure is read at once, and each blob's values on first access (open_file_lazy)."""
        return cls.open_file_lazy(path, context=context) if lazy else cls.open_file(path, context=context)

    def _num_blobs(self, index):
        count = c_int64()
        check(lib.cblob_model_layer_num_blobs(self._h, index, count))
        return count.value

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
        num, handles = handle_array(blobs)
        check(lib.cblob_model_add_layer(self._h, name.encode(), type.encode(), handles, num))
        layer = Layer(name, type, blobs)
        self.layers.append(layer)
        if blobs:
            self._by_name.setdefault(name, layer)
        return layer

    # ---- a layer's structure, read into Python objects ---------------------------------------

    def rules(self, layer, kind):
        """A layer's include (RuleKind.INCLUDE) or exclude rules, as Rule records."""
        count = c_int64()
        check(lib.cblob_model_layer_num_rules(self._h, layer, kind, count))
        rules = []
        for i in range(count.value):
            phase, low, high, stages, not_stages = c_int32(), c_int32(), c_int32(), c_int64(), c_int64()
            check(lib.cblob_model_layer_rule(self._h, layer, kind, i, phase, low, high, stages, not_stages))
            names = [[_text(self, lib.cblob_model_layer_rule_stage, layer, kind, i, not_stage, j)
                      for j in range(n.value)] for not_stage, n in ((0, stages), (1, not_stages))]
            rules.append(Rule(Phase(phase.value), low.value, high.value, *names))
        return rules

    def param_specs(self, layer):
        """A layer's param specs, as ParamSpec records."""
        count = c_int64()
        check(lib.cblob_model_layer_num_param_specs(self._h, layer, count))
        specs = []
        for i in range(count.value):
            name, lr, decay = c_char_p(), c_float(), c_float()
            check(lib.cblob_model_layer_param_spec(self._h, layer, i, name, lr, decay))
            specs.append(ParamSpec(None if name.value is None else name.value.decode("utf-8", "replace"),
                                   lr.value, decay.value))
        return specs

    def params(self, layer, flags=0):
        """A layer's parameters as a dict (params_json parsed: convolution_param and the like by
        Caffe's field names, fields no schema knows under "unknown_fields")."""
        return json.loads(self.params_json(layer, flags))

    def read_blob(self, layer, index, part=Part.DATA):
        """A copy of a blob's data or diff as a NumPy array of its shape and dtype, without making
        its handle (a lazy model reads just those values from the file)."""
        array = np.empty(self.blob_shape(layer, index), NUMPY_DTYPES[self.blob_dtype(layer, index)])
        check(lib.cblob_model_layer_blob_read(self._h, layer, index, part, 0, array.size, array.ctypes.data,
                                              array.nbytes))
        return array

    # ---- the mapping: layer name -> list of arrays ------------------------------------------

    def __getitem__(self, name):
        return [blob.data for blob in self._by_name[name].blobs]

    def __iter__(self):
        return iter(self._by_name)

    def __len__(self):
        return len(self._by_name)

    def __repr__(self):
        return f"<cblob.Model {self.name!r} {self.format.name}, {len(self.layers)} layers>"


def _text(model, function, *args):
    """A string a model owns ("" for none), copied."""
    out = c_char_p()
    check(function(model._h, *args, out))
    return (out.value or b"").decode("utf-8", "replace")
