# SPDX-License-Identifier: BSD-2-Clause
# Hand-written (not generated from codegen/bindings/): pycaffe's names over cblob's Model.
"""pycaffe's names for the work pycaffe does on weights, so that such code ports by changing one
import (`import caffe` becomes `from cblob import caffe`):

    net = caffe.Net("deploy.prototxt", "weights.caffemodel", caffe.TEST)
    w = net.params["conv1"][0].data          # a writable NumPy view
    net.params["conv1"][0].data[...] = w * 2   # changes what save writes
    net.save("edited.caffemodel")

A Net is a cblob.Model: the net definition (a deploy.prototxt, or any Caffe net) with the
trained weights attached by layer name, as pycaffe's Net(prototxt, weights, phase) attaches them
(Caffe's Net::CopyTrainedLayersFrom, cblob.Model.attach_weights): each layer of the definition
that a layer of the weights names gets its blobs, after Caffe's checks (a layer of another
num_output raises ShapeError in Caffe's words). net.attach_report says what was left out: the
weights' layers the definition lacks (Caffe's "Ignoring source layer") and the definition's
layers no weights layer names. With pycaffe's params, layers, layer_dict, _layer_names, save
and copy_from. What needs Caffe's engine (forward, backward, net.blobs' activations, solvers,
layer setup's initial values for layers that get no weights) is not here: cblob reads and
writes weights, it runs no layers; the phase does not filter layers.
"""
from __future__ import annotations

import os
from typing import NamedTuple

from ._formats import load
from ._model import Model
from ._raw import AttachList, Phase

TRAIN = 0  # pycaffe's caffe.TRAIN
TEST = 1   # pycaffe's caffe.TEST


class AttachReport(NamedTuple):
    """What attaching weights to a definition left out, by layer name, in order."""
    ignored: list[str]   # the weights' layers whose name the definition lacks ("Ignoring source layer")
    unfilled: list[str]  # the definition's layers whose name no weights layer has (they get no weights)


def Net(network_file: str | os.PathLike[str], *args, weights: str | os.PathLike[str] | None = None,
        phase: int | None = None, **kwargs) -> Model:
    """pycaffe's caffe.Net(network_file, phase, weights=...) or caffe.Net(network_file, weights,
    phase): the net definition of network_file (a prototxt, or any Caffe net) with the weights
    file's blobs (a .caffemodel, or an .npz, safetensors file or .npy folder cblob.load reads)
    attached by layer name, as pycaffe attaches them (see the module's documentation); the
    result's attach_report lists what was left out. With no weights, the net of network_file as
    it is (a prototxt: its layers without blobs)."""
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
    definition = load(network_file)
    if weights is None:
        definition.attach_report = AttachReport([], [])
        return definition
    trained = load(weights)
    net = definition.attach_weights(trained)
    net.attach_report = AttachReport(
        [trained.layers[i].name for i in definition.attach_unmatched(trained, AttachList.IGNORED)],
        [definition.layers[i].name for i in definition.attach_unmatched(trained, AttachList.UNFILLED)])
    return net


__all__ = ["AttachReport", "Net", "TEST", "TRAIN", "Phase"]
