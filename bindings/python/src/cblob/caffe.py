# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): pycaffe's names over cblob's Model.
"""pycaffe's names for the work pycaffe does on weights, so that such code ports by changing one
import (`import caffe` becomes `from cblob import caffe`):

    net = caffe.Net("deploy.prototxt", "weights.caffemodel", caffe.TEST)
    w = net.params["conv1"][0].data          # a writable NumPy view
    net.params["conv1"][0].data[...] = w * 2   # changes what save writes
    net.save("edited.caffemodel")

A Net is a cblob.Model (read from the weights file, whose layers carry the structure: names,
types, bottoms, tops, phases, parameters), with pycaffe's params, layers, layer_dict,
_layer_names, save and copy_from. What needs Caffe's engine (forward, backward, net.blobs'
activations, solvers) is not here: cblob reads and writes weights, it runs no layers.
"""
from __future__ import annotations

import os

from ._formats import load
from ._model import Model
from ._raw import Phase

TRAIN = 0  # pycaffe's caffe.TRAIN
TEST = 1   # pycaffe's caffe.TEST


def Net(network_file: str | os.PathLike[str], *args, weights: str | os.PathLike[str] | None = None,
        phase: int | None = None, **kwargs) -> Model:
    """pycaffe's caffe.Net(network_file, phase, weights=...) or caffe.Net(network_file, weights,
    phase): the model of the weights file (a .caffemodel, or an .npz, safetensors file or .npy
    folder cblob.load reads). The network file must exist, as pycaffe requires; cblob takes the
    net's structure from the weights file, which keeps every layer's fields. With no weights, the
    first argument is the weights file itself."""
    for arg in args:
        if isinstance(arg, int) and not isinstance(arg, bool):
            phase = arg
        elif weights is None:
            weights = arg
        else:
            raise TypeError(f"cblob.caffe.Net: unexpected argument {arg!r}")
    if kwargs:
        raise TypeError(f"cblob.caffe.Net: unexpected keyword arguments {sorted(kwargs)}")
    if phase not in (None, TRAIN, TEST):
        raise ValueError(f"cblob.caffe.Net: phase is caffe.TRAIN or caffe.TEST, not {phase!r}")
    if weights is None:
        return load(network_file)
    if not os.path.exists(network_file):
        raise FileNotFoundError(2, "No such file or directory", os.fspath(network_file))
    return load(weights)


__all__ = ["Net", "TEST", "TRAIN", "Phase"]
