# SPDX-License-Identifier: BSD-2-Clause
"""Caffe models (.caffemodel): the net's name, format and layers, and the weights as NumPy arrays.

What is here by hand: the Model as a mapping of layers to arrays (Python's container protocol)
and as pycaffe's `net.params`, its Layer records whose blobs are read on first access (so that a
lazy open reads none until asked), the structure calls that read several values into one Python
object (parameters as a dict, a blob's values as a NumPy array), PyTorch's state_dict and
load_state_dict, and the lifetime of a model a file lends. The methods that are one library call
each (exports, imports, bottoms, tops, phase, JSON, replace_blobs, ...) and the lists of records
(rules with their stages, param specs) come from _safe.py (generated): Model derives from its
table.
"""
from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterable, Iterator, Mapping
from ctypes import c_char_p, c_int64, c_void_p
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ._blob import Blob
from ._errors import DTypeError, InvalidArgumentError, ShapeError, check, usage_error
from ._library import lib
from ._raw import ExportFlags, Part, Status
from ._safe import _LayerMethods, _ModelMethods
from ._structs import IncompatibleKeys
from ._util import NUMPY_DTYPES, handle_array, int32_arg, int64_arg, no_copies, text_bytes

if TYPE_CHECKING:
    from ._context import Context
    from .caffe import AttachReport


class Layer(_LayerMethods):
    """One layer of a model: its name, its type ("Convolution"; V1 files give the LayerType name,
    "CONVOLUTION"), its blobs (a list of Blob, weights first, which a layer of a model read from a
    file takes on first access) and its structure: bottoms, tops, phase, params (its parameters
    as a dict), rules and param_specs (the model's methods for this layer: _LayerMethods).
    Changes made to the blobs are what the model saves."""

    __slots__ = ("name", "type", "_blobs", "_model", "_index")

    def __init__(self, name: str, type: str, blobs: Iterable[Blob] = (), *, model: Model | None = None,
                 index: int | None = None, read: bool = True):
        self.name = name
        self.type = type
        self._blobs: LayerBlobs | None = None if read and model is not None else LayerBlobs(self, blobs)
        self._model = model
        self._index = index

    @property
    def blobs(self) -> LayerBlobs:
        """The layer's blobs, as pycaffe's layer.blobs: a list whose items can be assigned (the
        values are stored into the blob; a shape that differs raises) but not added or removed."""
        if self._blobs is None:
            model, index = self._structure()
            self._blobs = LayerBlobs(self, [model.layer_blob(index, i) for i in range(model._num_blobs(index))])
        return self._blobs

    def _structure(self) -> tuple[Model, int]:
        if self._model is None or self._index is None:
            raise usage_error(InvalidArgumentError, Status.INVALID_ARGUMENT,
                              f"layer {self.name!r} belongs to no model, so it has no structure")
        return self._model, self._index

    @property
    def params(self) -> dict[str, Any]:
        """The layer's parameters as a dict (convolution_param and the like, by Caffe's field names)."""
        model, index = self._structure()
        return model.layer_params(index)

    def __repr__(self) -> str:
        shapes = ", ".join(b.shape_string() for b in self.blobs)
        return f"<cblob.Layer {self.name!r} {self.type} [{shapes}]>"

    __copy__ = __deepcopy__ = __reduce_ex__ = no_copies


def _store(blob: Blob, value: Any, what: str) -> None:
    """Stores value (a Blob or anything NumPy reads) into blob's data: of the blob's shape, or
    ShapeError before anything changes."""
    array = value.numpy() if isinstance(value, Blob) else np.asarray(value)
    if array.shape != blob.shape:
        raise usage_error(ShapeError, Status.SHAPE, f"{what} has shape {blob.shape}; the value has {array.shape} "
                          "(a blob keeps its shape: reshape it first to change it)")
    blob.copy_in(array)


class LayerBlobs(list):
    """A layer's blobs, as pycaffe's `net.params[name]` and `layer.blobs`: a list of Blob.
    Assigning an item stores the value into that blob (net.params['conv1'][0] = w is
    net.params['conv1'][0].data[...] = w); the list cannot grow or shrink, so an edit is never lost
    in a temporary list."""

    __slots__ = ("_layer",)

    def __init__(self, layer: Layer, blobs: Iterable[Blob]):
        super().__init__(blobs)
        self._layer = layer

    def __setitem__(self, index, value):  # type: ignore[override]
        if isinstance(index, slice):
            raise TypeError("cblob: assign a layer's blobs one at a time (blobs[i] = value)")
        _store(self[index], value, f"layer {self._layer.name!r} blob {index}")

    def _fixed(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(f"cblob: layer {self._layer.name!r} has {len(self)} blobs; a layer's blob list cannot grow "
                        "or shrink (build a new model with Model.new and add_layer)")

    append = extend = insert = pop = remove = clear = __delitem__ = __iadd__ = __imul__ = _fixed  # type: ignore

    def __reduce_ex__(self, protocol):
        # copy.copy: a plain list of the same blobs; copy.deepcopy: of deep copies of them.
        return (list, (list(self),))


class LayerArrays(_LayerMethods, list):
    """What a model maps a layer's name to: the list of its blobs' data as NumPy arrays (views
    without a copy, writable), with the layer's structure beside them (name, type, bottoms, tops,
    phase, params, rules, param_specs, blobs). Assigning an item stores into the blob (m['conv2'][0] = new writes the
    values into conv2's weights, of the same shape); the list cannot grow or shrink."""

    __slots__ = ("layer",)

    def __init__(self, layer: Layer):
        super().__init__(blob.data for blob in layer.blobs)
        self.layer = layer

    def __setitem__(self, index, value):  # type: ignore[override]
        if isinstance(index, slice):
            raise TypeError("cblob: assign a layer's arrays one at a time (model[name][i] = value)")
        _store(self.layer.blobs[index], value, f"layer {self.layer.name!r} blob {index}")

    _fixed = LayerBlobs._fixed
    append = extend = insert = pop = remove = clear = __delitem__ = __iadd__ = __imul__ = _fixed  # type: ignore

    @property
    def _layer(self) -> Layer:
        return self.layer

    def _structure(self) -> tuple[Model, int]:
        return self.layer._structure()

    @property
    def name(self) -> str:
        return self.layer.name

    @property
    def type(self) -> str:
        return self.layer.type

    @property
    def blobs(self) -> LayerBlobs:
        return self.layer.blobs

    @property
    def params(self) -> dict[str, Any]:
        return self.layer.params

    def __reduce_ex__(self, protocol):
        # copy.copy: a plain list of the same arrays; copy.deepcopy and pickle: of copies.
        return (list, (list(self),))


class Params(Mapping):
    """pycaffe's `net.params`: each layer that has blobs (in file order; a name given twice maps to
    the first such layer) to the list of its Blob objects, whose .data and .diff are writable
    NumPy views: `model.params['conv1'][0].data[...] = w` changes what the model saves."""

    __slots__ = ("_model",)

    def __init__(self, model: Model):
        self._model = model

    def __getitem__(self, name: str) -> LayerBlobs:
        return self._model._by_name[name].blobs

    def __iter__(self) -> Iterator[str]:
        return iter(self._model._by_name)

    def __len__(self) -> int:
        return len(self._model._by_name)

    def __repr__(self) -> str:
        return f"<cblob params of {len(self)} layers: {list(self)}>"


class Model(_ModelMethods, Mapping):
    """A Caffe net's weights. As a mapping (in file order) it gives, for each layer that has
    blobs, the list of its blobs' data as NumPy arrays, without a copy (a LayerArrays, which also
    carries the layer's bottoms, tops, phase and params): `dict(model)` is what pycaffe's
    net.params holds as arrays. Each array keeps the memory it views alive on its own, after the
    model is gone too; writing into it, or assigning an item (model['conv1'][0] = w), changes what
    save() writes.

    pycaffe's names: model.params (the Blob objects, .data and .diff), model.layers (every layer,
    also those without blobs: Layer has name, type, blobs, bottoms, tops, phase, params),
    model.layer_dict, model._layer_names, model.save(path), model.copy_from(path). A layer name
    given twice maps to the first such layer with blobs. A model keeps every field of the file it
    came from and saves byte for byte what it read, changed values aside (a model built with
    Model.new writes a weights-only NetParameter). Exports: to_safetensors, to_npz and their
    save_ twins, save_npy_folder, state_dict; the way back: cblob.load of any of them,
    replace_blobs, load_state_dict.

    Copies: copy.copy raises (a model's layers hold its blobs, and the library has no second
    holder of a model); copy.deepcopy is an independent model with every value copied (through
    the library's writer and reader, byte for byte). Pickling raises: save the model, or pickle
    dict(model.state_dict()).
    """

    layers: list[Layer]
    # What caffe.Net left out when it attached weights to this net's definition (None otherwise).
    attach_report: AttachReport | None = None

    def __init__(self, handle: c_void_p, context: Context, lender: object = None):
        """Use cblob.load, Model.open, Model.from_bytes or Model.new."""
        self._h = handle
        self._context = context
        self._lender = lender  # a file's model: the holder of the file's handle (never destroyed here)
        self.layers = []
        self._by_name: dict[str, Layer] = {}  # the mapping: name -> first layer of that name with blobs
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
        if handle and getattr(self, "_lender", None) is None:
            self._destroy(handle)

    @classmethod
    def _created(cls, create, context, io=None):
        handle = c_void_p()
        check(create(handle), io)
        return cls(handle, context)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, lazy: bool = False, context: Context | None = None) -> Model:
        """Reads a .caffemodel file (current or V1 format); see cblob.load, which opens any kind.
        With lazy=True only the structure is read at once, and each blob's values on first
        access (open_file_lazy)."""
        return cls.open_file_lazy(path, context=context) if lazy else cls.open_file(path, context=context)

    def _num_blobs(self, index: int) -> int:
        count = c_int64()
        check(lib.cblob_model_layer_num_blobs(self._h, int64_arg(index, "index"), count))
        return count.value

    def layer(self, name: str) -> Layer:
        """The first layer called name; KeyError when none is."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def add_layer(self, name: str, type: str, blobs: Iterable[Blob | Any] = ()) -> Layer:
        """Appends a layer. Blobs may be Blob objects (the model holds them: their values at save
        time are written) or arrays (Blob.from_numpy: shared without a copy where it can be)."""
        blobs = [b if isinstance(b, Blob) else Blob.from_numpy(b, context=self._context) for b in blobs]
        num, handles = handle_array(blobs)
        check(lib.cblob_model_add_layer(self._h, text_bytes(name, "name"), text_bytes(type, "type"), handles, num))
        layer = Layer(name, type, blobs, model=self, index=len(self.layers), read=False)
        self.layers.append(layer)
        if blobs:
            self._by_name.setdefault(name, layer)
        return layer

    # ---- a layer's structure, read into Python objects ---------------------------------------

    def layer_params(self, layer: int, flags: int = 0) -> dict[str, Any]:
        """A layer's parameters as a dict (params_json parsed: convolution_param and the like by
        Caffe's field names, fields no schema knows under "unknown_fields")."""
        return json.loads(self.params_json(layer, flags))

    def read_blob(self, layer: int, index: int, part: Part = Part.DATA) -> np.ndarray:
        """A copy of a blob's data or diff as a NumPy array of its shape and dtype, without making
        its handle (a lazy model reads just those values from the file)."""
        layer, index, part = int64_arg(layer, "layer"), int64_arg(index, "index"), int32_arg(part, "part")
        array = np.empty(self.blob_shape(layer, index), NUMPY_DTYPES[self.blob_dtype(layer, index)])
        check(lib.cblob_model_layer_blob_read(self._h, layer, index, part, 0, array.size, array.ctypes.data,
                                              array.nbytes))
        return array

    # ---- pycaffe's names ----------------------------------------------------------------------

    @property
    def params(self) -> Params:
        """pycaffe's net.params: layer name -> list of Blob (see Params)."""
        return Params(self)

    @property
    def layer_dict(self) -> dict[str, Layer]:
        """pycaffe's net.layer_dict: each layer by name (the first of a name given twice)."""
        out: dict[str, Layer] = {}
        for layer in self.layers:
            out.setdefault(layer.name, layer)
        return out

    @property
    def _layer_names(self) -> list[str]:
        """pycaffe's net._layer_names: every layer's name, in order."""
        return [layer.name for layer in self.layers]

    def copy_from(self, path: str | os.PathLike[str], *, context: Context | None = None) -> int:
        """pycaffe's net.copy_from (Caffe's CopyTrainedLayersFrom): takes the values of every blob
        the file at path (a .caffemodel, an .npz, a safetensors file or a .npy folder: cblob.load)
        has for this model, by layer name; returns how many of the model's blobs it has none for
        (they keep their values). Shapes must agree (ShapeError names each mismatch; nothing
        changes then)."""
        from ._formats import load
        return self.replace_blobs_with(load(path, context=context or self._context))

    # ---- PyTorch's state_dict ----------------------------------------------------------------

    def state_dict(self, names: str = "caffe", *, diff: bool = False) -> dict[str, np.ndarray]:
        """The model's tensors by name, as PyTorch's state_dict: names="caffe" gives
        "<layer>.<index>" keys, names="torch" PyTorch's ("conv1.weight", "bn1.running_mean"; the
        layers PyTorch has no names for keep Caffe's: torch_unmapped), as to_safetensors names
        and shapes them (BatchNorm's statistics divided by Caffe's scale factor, a V1 model's 4-D
        legacy shapes as PyTorch's). The arrays are copies (read-only): change the model with
        load_state_dict. diff=True adds the diffs, named as to_safetensors names them."""
        flags = _names_flag(names) | (ExportFlags.DIFF if diff else 0)
        return _read_safetensors(self.to_safetensors(flags))

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Stores the arrays of a dict keyed as state_dict names them (names="caffe" or "torch",
        told from the keys: PyTorch's when any key's last part is not a blob index) into the model's blobs, as PyTorch's load_state_dict: returns the
        missing and unexpected keys; with strict=True either of them raises KeyError listing them
        (PyTorch raises RuntimeError; KeyError is also a LookupError) and nothing changes. A shape
        that differs raises ShapeError naming each one, and nothing changes."""
        keys = list(state_dict)
        torch = any(not _is_caffe_key(k) for k in keys)
        ordered = list(self.state_dict("torch" if torch else "caffe"))
        expected = set(ordered)
        missing = [k for k in ordered if k not in state_dict]
        unexpected = [k for k in keys if k not in expected]
        if strict and (missing or unexpected):
            lines = []
            if missing:
                lines.append("missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing))
            if unexpected:
                lines.append("unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected))
            raise KeyError("cblob: error(s) in loading state_dict: " + "; ".join(lines) + " (nothing changed)")
        arrays = {k: np.asarray(state_dict[k]) for k in keys if k in expected}
        if arrays:
            weights = type(self).open_safetensors(_safetensors_bytes(arrays), context=self._context)
            self.replace_blobs_with(weights)
        return IncompatibleKeys(missing, unexpected)

    # ---- the mapping: layer name -> list of arrays ------------------------------------------

    def __getitem__(self, name: str) -> LayerArrays:
        return LayerArrays(self._by_name[name])

    def __setitem__(self, name: str, arrays: Iterable[Any]) -> None:
        """model[name] = [w, b]: stores each array into the layer's blob of the same index (the
        counts and shapes must agree; ShapeError before anything changes)."""
        layer = self._by_name[name]
        arrays = list(arrays)
        blobs = layer.blobs
        if len(arrays) != len(blobs):
            raise usage_error(ShapeError, Status.SHAPE, f"layer {name!r} has {len(blobs)} blobs, not {len(arrays)}")
        values = [np.asarray(a.numpy() if isinstance(a, Blob) else a) for a in arrays]
        for i, (blob, value) in enumerate(zip(blobs, values)):
            if value.shape != blob.shape:
                raise usage_error(ShapeError, Status.SHAPE, f"layer {name!r} blob {i} has shape {blob.shape}; "
                                  f"the value has {value.shape}")
        for blob, value in zip(blobs, values):
            blob.copy_in(value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return f"<cblob.Model {self.name!r} {self.format.name}, {len(self.layers)} layers>"

    # ---- copies ------------------------------------------------------------------------------

    def __copy__(self):
        raise TypeError("cblob: a Model cannot be copied shallowly (the library has no second holder of a model): "
                        "copy.deepcopy(model) copies every value")

    def __deepcopy__(self, memo) -> Model:
        return type(self).from_bytes(self.to_bytes(write_diff=True), context=self._context)

    def __reduce_ex__(self, protocol):
        raise TypeError("cblob: a Model cannot be pickled (it holds a library handle): save it (model.save) "
                        "or pickle model.state_dict()")


def _text(model, function, *args):
    """A string a model owns ("" for none), copied."""
    out = c_char_p()
    check(function(model._h, *args, out))
    return (out.value or b"").decode("utf-8", "replace")


def _names_flag(names: str) -> int:
    if names == "caffe":
        return 0
    if names == "torch":
        return ExportFlags.TORCH_NAMES
    raise ValueError(f"cblob: names is 'caffe' or 'torch', not {names!r}")


def _is_caffe_key(key: str) -> bool:
    return key.rpartition(".")[2].isdigit()


# ---- safetensors in memory: the library's export read into arrays, and arrays handed to its
# reader (which alone knows PyTorch's names). No file is written here: every save is the library's.

_SAFETENSORS_DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "U32": np.uint32}


def _read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The tensors of safetensors bytes the library wrote, as read-only arrays over them."""
    (size,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8:8 + size])
    base = 8 + size
    buffer = np.frombuffer(data, np.uint8)
    out = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        out[key] = buffer[base + start:base + end].view(_SAFETENSORS_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return out


def _safetensors_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Arrays as safetensors bytes, for Model.open_safetensors (little-endian, C order)."""
    codes = {np.dtype(v).str: k for k, v in _SAFETENSORS_DTYPES.items()}
    header, chunks, offset = {}, [], 0
    for key, array in arrays.items():
        if array.dtype.newbyteorder("<").str not in codes:
            raise usage_error(DTypeError, Status.DTYPE, f"{key}: cblob holds no {array.dtype} tensor")
        raw = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
        header[key] = {"dtype": codes[array.dtype.newbyteorder("<").str], "shape": list(array.shape),
                       "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)

