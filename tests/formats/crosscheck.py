#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Cross-checks cblob's Caffe formats against an independent implementation: Python's protobuf
package (Debian's python3-protobuf) with proto/caffe_blobs.proto compiled by protoc at test time,
and NumPy for .npy files. Each check is one CTest test:

    crosscheck.py CHECK --tool CBLOB --helper WRITE_SAMPLES --source DIR --data DIR

Checks:
    cblob_writes_what_python_reads     cblob's models and vectors, parsed by Python
    python_writes_what_cblob_reads     Python's messages (packed, unpacked, unknown fields, legacy,
                                       double, V1) read by cblob through `cblob convert` and `inspect`
    npy_to_binaryproto                 .npy files of every dtype to BlobProto(Vector), read back
    inspect_json                       `cblob inspect --json`: its schema, the sample model, and the
                                       real Caffe files against their .layers.txt / .blob.txt
    cli_bad_input                      missing, unreadable and corrupt inputs: one line, exit 2
    prototxt                           `cblob convert --to prototxt` of the real .caffemodel files
                                       and of tests/tools/make_net.py's nets (V2, V1, V0; hostile
                                       names, unknown fields, every parameter message): the text
                                       is what Python's text_format prints of the binary less its
                                       blobs (unknown fields included), and it parses back to the
                                       same message; cblob reads its own text and Python's back
                                       to the same net

Exits 77 (skipped) with a reason when protoc, protobuf or NumPy is missing.
"""
import argparse
import codecs
import importlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIPPED = 77


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIPPED)


try:
    import numpy as np
    from google import protobuf as _protobuf  # noqa: F401  (only to know it is there)
except ImportError as e:
    skip(f"{e.name} is not installed for {sys.executable} (scripts/setup.sh installs python3-protobuf and python3-numpy)")


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


# ---- the same formula as tests/formats/support.c ------------------------------------------

def ft_value(dtype, seed, i):
    k = (i * 37 + seed * 101) % 211
    if dtype == "int32":
        return float(k - 105)
    if dtype == "uint32":
        return float(k)
    return (k - 105) / 8.0


def ft_values(dtype, seed, count):
    return [ft_value(dtype, seed, i) for i in range(count)]


# ---- protos --------------------------------------------------------------------------------

FORK_FIELDS = {
    "message BlobProto {": [
        "optional string fork_note = 1000;",
        "repeated int32 fork_quantized = 1001;",
        "optional fixed64 fork_stamp = 1002;",
        "optional BlobShape fork_nested = 1003;",
        "optional fixed32 fork_scale = 1004;",
    ],
    "message LayerParameter {": [
        "repeated string bottom = 3;",
        "repeated string top = 4;",
        "optional BlobShape convolution_param = 106;",
        "optional string fork_engine = 5000;",
    ],
    "message NetParameter {": [
        "repeated string input = 3;",
        "repeated int64 input_dim = 4;",
        "optional bool force_backward = 5;",
    ],
    "message V1LayerParameter {": [
        "repeated string bottom = 2;",
        "repeated string top = 3;",
        "repeated float blobs_lr = 7;",
    ],
}


def compile_protos(source, folder):
    """Three variants of proto/caffe_blobs.proto, each in its own package so they coexist: as is,
    with every repeated field unpacked, and with the fields a full caffe.proto or a fork adds."""
    protoc = shutil.which("protoc")
    if protoc is None:
        skip("protoc is not installed (scripts/setup.sh installs protobuf-compiler)")
    with open(os.path.join(source, "proto", "caffe_blobs.proto"), encoding="utf-8") as f:
        text = f.read()
    variants = {
        "caffe_packed": text.replace("package caffe;", "package caffe_packed;"),
        "caffe_unpacked": text.replace("package caffe;", "package caffe_unpacked;").replace("[packed = true]",
                                                                                          "[packed = false]"),
    }
    fork = text.replace("package caffe;", "package caffe_fork;")
    for opening, fields in FORK_FIELDS.items():
        check(opening in fork, f"proto/caffe_blobs.proto lacks '{opening}'")
        fork = fork.replace(opening, opening + "\n  " + "\n  ".join(fields))
    variants["caffe_fork"] = fork
    # A net's structure as the sample holds it: bottoms, tops and the parameters it has (kept as
    # bytes), so that Python re-encodes every field in its place.
    net = text.replace("package caffe;", "package caffe_net;").replace("message LayerParameter {", """message LayerParameter {
  repeated string bottom = 3;
  repeated string top = 4;
  optional bytes convolution_param = 106;
  optional bytes inner_product_param = 117;
  optional bytes pooling_param = 121;
  optional bytes input_param = 143;""")
    variants["caffe_net"] = net
    for name, body in variants.items():
        with open(os.path.join(folder, name + ".proto"), "w", encoding="utf-8") as f:
            f.write(body)
        subprocess.run([protoc, f"-I{folder}", f"--python_out={folder}", os.path.join(folder, name + ".proto")],
                       check=True)
    sys.path.insert(0, folder)
    return {name: importlib.import_module(name + "_pb2") for name in variants}


# ---- running cblob -------------------------------------------------------------------------

def run(args, tool, expect=0):
    result = subprocess.run([tool] + args, capture_output=True, text=True)
    if expect is not None and result.returncode != expect:
        raise Failure(f"cblob {' '.join(args)} exited {result.returncode}, expected {expect}:\n"
                      f"{result.stdout}{result.stderr}")
    return result


def inspect_json(tool, path):
    return json.loads(run(["inspect", "--json", path], tool).stdout)


def to_npy(tool, path, folder):
    run(["convert", path, "--to", "npy", folder], tool)


def floats_equal(got, expected):
    return len(got) == len(expected) and all(a == b for a, b in zip(got, expected))


# ---- checks --------------------------------------------------------------------------------

def cblob_writes_what_python_reads(ctx):
    folder = os.path.join(ctx.tmp, "samples")
    os.mkdir(folder)
    subprocess.run([ctx.helper, folder], check=True)
    for module in (ctx.protos["caffe_packed"], ctx.protos["caffe_unpacked"]):
        # Declared unpacked or not, a reader takes both encodings.
        with open(os.path.join(folder, "v2.caffemodel"), "rb") as f:
            net = module.NetParameter.FromString(f.read())
        check(net.name == "CrossV2" and len(net.layer) == 4 and len(net.layers) == 0, "v2: name or layer count")
        data, conv, bn, ints = net.layer
        check((data.name, data.type, len(data.blobs)) == ("data", "Input", 0), "v2: layer data")
        check((conv.name, conv.type, len(conv.blobs)) == ("conv1", "Convolution", 2), "v2: layer conv1")
        weights, bias = conv.blobs
        check(list(weights.shape.dim) == [4, 3, 2, 2], "v2: conv1 weights shape")
        check(floats_equal(weights.data, ft_values("float32", 1, 48)), "v2: conv1 weights data")
        check(floats_equal(weights.diff, ft_values("float32", 2, 48)), "v2: conv1 weights diff")
        check(len(weights.double_data) == 0 and not weights.HasField("num"), "v2: float blobs write no double/legacy")
        check(floats_equal(bias.data, ft_values("float32", 3, 4)), "v2: conv1 bias data")
        check(floats_equal(bias.diff, [0.0] * 4), "v2: a diff never written reads as zeros")
        (scale,) = bn.blobs
        check(len(scale.data) == 0 and floats_equal(scale.double_data, ft_values("float64", 5, 3)), "v2: bn data")
        check(floats_equal(scale.double_diff, ft_values("float64", 6, 3)), "v2: bn diff")
        matrix, scalar = ints.blobs
        check(list(matrix.shape.dim) == [2, 3] and floats_equal(matrix.double_data, ft_values("int32", 7, 6)),
              "v2: int32 blob as double_data")
        check(not scalar.HasField("shape") and floats_equal(scalar.double_data, [ft_value("uint32", 8, 0)]),
              "v2: a uint32 scalar: no shape, one double_data value")

        with open(os.path.join(folder, "v1.caffemodel"), "rb") as f:
            v1 = module.NetParameter.FromString(f.read())
        check(v1.name == "CrossV1" and len(v1.layers) == 3 and len(v1.layer) == 0, "v1: name or layers count")
        conv, relu, custom = v1.layers
        layer_type = module.V1LayerParameter.LayerType
        check(conv.name == "conv1" and conv.type == layer_type.Value("CONVOLUTION"), "v1: conv1 type")
        check(list(conv.blobs[0].shape.dim) == [2, 2] and floats_equal(conv.blobs[0].data, ft_values("float32", 11, 4)),
              "v1: conv1 blob")
        check(relu.type == layer_type.Value("RELU") and len(relu.blobs) == 0, "v1: relu")
        # 99 names no LayerType: proto2 keeps it as an unknown field, which re-serializes as is.
        check(not custom.HasField("type") and b"\x28\x63" in custom.SerializeToString(), "v1: type 99 on the wire")

        with open(os.path.join(folder, "vector.binaryproto"), "rb") as f:
            vector = module.BlobProtoVector.FromString(f.read())
        check(len(vector.blobs) == 3, "vector: 3 blobs")
        a, b, c = vector.blobs
        check(floats_equal(a.data, ft_values("float32", 13, 3)) and floats_equal(a.diff, ft_values("float32", 14, 3)),
              "vector: float32 blob")
        check(list(b.shape.dim) == [2, 2] and floats_equal(b.double_data, ft_values("float64", 15, 4)),
              "vector: float64 blob")
        check(floats_equal(c.double_data, ft_values("uint32", 17, 4)), "vector: uint32 blob")

    # The shipped sample, re-encoded by Python, is the same bytes: cblob writes canonical protobuf.
    sample = os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel")
    with open(sample, "rb") as f:
        raw = f.read()
    net = ctx.protos["caffe_net"].NetParameter.FromString(raw)
    check(net.name == "TinyLeNet" and len(net.layer) == 9, "sample: name and layers")
    check([(list(layer.bottom), list(layer.top)) for layer in net.layer][1:3] == [(["data"], ["conv1"]),
                                                                                 (["conv1"], ["pool1"])],
          "sample: bottoms and tops")
    check(net.SerializeToString() == raw, "sample: Python re-encodes it to different bytes")


def blob_message(module, shape=None, legacy=None, data=None, diff=None, double_data=None, double_diff=None):
    blob = module.BlobProto()
    if shape is not None:
        blob.shape.dim.extend(shape)
    if legacy is not None:
        blob.num, blob.channels, blob.height, blob.width = legacy
    blob.data.extend(data or [])
    blob.diff.extend(diff or [])
    blob.double_data.extend(double_data or [])
    blob.double_diff.extend(double_diff or [])
    return blob


def write(path, message):
    with open(path, "wb") as f:
        f.write(message.SerializeToString())
    return path


def load_npy(folder, name):
    return np.load(os.path.join(folder, name))


def python_writes_what_cblob_reads(ctx):
    n = 0
    for variant in ("caffe_packed", "caffe_unpacked", "caffe_fork"):
        module = ctx.protos[variant]
        values = ft_values("float32", 21, 6)
        grads = ft_values("float32", 22, 6)
        cases = [
            ("shape", blob_message(module, shape=[2, 3], data=values, diff=grads), [2, 3], "float32", True),
            ("legacy", blob_message(module, legacy=(1, 2, 1, 3), data=values), [1, 2, 1, 3], "float32", False),
            ("double", blob_message(module, shape=[6], data=[9.0] * 2, double_data=values, double_diff=grads), [6],
             "float64", True),
        ]
        for name, message, shape, dtype, has_diff in cases:
            if variant == "caffe_fork":
                message.fork_note = "written by a fork"
                message.fork_quantized.extend([1, -2, 3])
                message.fork_stamp = 1234567890123
                message.fork_nested.dim.extend([7, 8])
                message.fork_scale = 5
            path = write(os.path.join(ctx.tmp, f"{variant}_{name}.binaryproto"), message)
            out = os.path.join(ctx.tmp, f"npy_{n}")
            n += 1
            to_npy(ctx.tool, path, out)
            array = load_npy(out, "blob_0.npy")
            check(list(array.shape) == shape and array.dtype == np.dtype(dtype), f"{variant} {name}: shape or dtype")
            check(floats_equal(array.ravel().tolist(), values), f"{variant} {name}: data")
            check(os.path.exists(os.path.join(out, "blob_0_diff.npy")) == has_diff, f"{variant} {name}: diff file")
            if has_diff:
                check(floats_equal(load_npy(out, "blob_0_diff.npy").ravel().tolist(), grads), f"{variant} {name}: diff")
            blob = inspect_json(ctx.tool, path)["blobs"][0]
            check(blob["shape"] == shape and blob["dtype"] == dtype and blob["has_diff"] == has_diff,
                  f"{variant} {name}: inspect")

        # A current-format net with what full Caffe files carry (and a fork's extras).
        net = module.NetParameter(name=f"py_{variant}")
        data_layer = net.layer.add(name="data", type="Input")
        conv = net.layer.add(name="conv/1x1", type="Convolution")
        conv.blobs.append(blob_message(module, shape=[2, 1, 1, 3], data=values))
        conv.blobs.append(blob_message(module, shape=[2], data=values[:2]))
        if variant == "caffe_fork":
            net.input.append("data")
            net.input_dim.extend([1, 1, 1, 3])
            net.force_backward = True
            data_layer.top.append("data")
            conv.bottom.append("data")
            conv.top.append("conv")
            conv.convolution_param.dim.append(2)
            conv.fork_engine = "fast"
        path = write(os.path.join(ctx.tmp, f"{variant}.caffemodel"), net)
        doc = inspect_json(ctx.tool, path)
        check(doc["kind"] == "net" and doc["format"] == "V2" and doc["name"] == f"py_{variant}", f"{variant} net header")
        check([(l["name"], l["type"], len(l["blobs"])) for l in doc["layers"]] ==
              [("data", "Input", 0), ("conv/1x1", "Convolution", 2)], f"{variant} net layers")
        check(doc["layers"][1]["blobs"][0]["shape"] == [2, 1, 1, 3], f"{variant} net blob shape")
        out = os.path.join(ctx.tmp, f"net_{variant}")
        to_npy(ctx.tool, path, out)
        check(sorted(os.listdir(out)) == ["conv_1x1_0.npy", "conv_1x1_1.npy", "index.json"],
              f"{variant} npy names: {os.listdir(out)}")
        with open(os.path.join(out, "index.json"), encoding="utf-8") as f:
            index = json.load(f)
        check([(e["file"], e["layer"], e["layer_index"], e["blob"], e["part"], e["shape"]) for e in index["files"]] ==
              [("conv_1x1_0.npy", "conv/1x1", 1, 0, "data", [2, 1, 1, 3]), ("conv_1x1_1.npy", "conv/1x1", 1, 1, "data", [2])],
              f"{variant} index.json: {index}")
        check(floats_equal(load_npy(out, "conv_1x1_0.npy").ravel().tolist(), values), f"{variant} npy values")

        # V1, with legacy dims as old Caffe wrote them.
        v1 = module.NetParameter(name="old")
        layer_type = module.V1LayerParameter.LayerType
        layer = v1.layers.add(name="fc", type=layer_type.Value("INNER_PRODUCT"))
        layer.blobs.append(blob_message(module, legacy=(1, 1, 2, 3), data=values))
        v1.layers.add(name="loss", type=layer_type.Value("SOFTMAX_LOSS"))
        if variant == "caffe_fork":
            layer.bottom.append("data")
            layer.blobs_lr.extend([1.0, 2.0])
        doc = inspect_json(ctx.tool, write(os.path.join(ctx.tmp, f"{variant}_v1.caffemodel"), v1))
        check(doc["format"] == "V1" and [(l["name"], l["type"]) for l in doc["layers"]] ==
              [("fc", "INNER_PRODUCT"), ("loss", "SOFTMAX_LOSS")], f"{variant} V1 layers")
        check(doc["layers"][0]["blobs"][0]["shape"] == [1, 1, 2, 3], f"{variant} V1 legacy dims give 4 axes")

        vector = module.BlobProtoVector()
        vector.blobs.append(blob_message(module, shape=[3], data=values[:3]))
        vector.blobs.append(blob_message(module, shape=[1], double_data=[0.125]))
        doc = inspect_json(ctx.tool, write(os.path.join(ctx.tmp, f"{variant}_vector.binaryproto"), vector))
        check(doc["kind"] == "blob_vector" and [b["dtype"] for b in doc["blobs"]] == ["float32", "float64"],
              f"{variant} vector")


def npy_to_binaryproto(ctx):
    arrays = {
        "f4": np.array(ft_values("float32", 31, 24), dtype="<f4").reshape(2, 3, 4),
        "f8": np.array(ft_values("float64", 32, 5), dtype="<f8"),
        "i4": np.array(ft_values("int32", 33, 6), dtype="<i4").reshape(3, 2),
        "u4": np.array(ft_values("uint32", 34, 1), dtype="<u4").reshape(()),
    }
    module = ctx.protos["caffe_packed"]
    paths = []
    for code, array in arrays.items():
        path = os.path.join(ctx.tmp, f"{code}.npy")
        np.save(path, array)
        paths.append(path)
        out = os.path.join(ctx.tmp, f"{code}.binaryproto")
        run(["convert", path, "--to", "binaryproto", out], ctx.tool)
        with open(out, "rb") as f:
            blob = module.BlobProto.FromString(f.read())
        check(list(blob.shape.dim) == list(array.shape), f"{code}: shape")
        stored = blob.data if code == "f4" else blob.double_data
        check(floats_equal(stored, array.ravel().tolist()), f"{code}: values")
        check(len(blob.diff) == 0 and len(blob.double_diff) == 0, f"{code}: no diff")
        back = os.path.join(ctx.tmp, f"{code}_back")
        to_npy(ctx.tool, out, back)
        again = load_npy(back, "blob_0.npy")
        check(again.shape == array.shape and np.array_equal(again, array.astype(again.dtype)), f"{code}: round trip")
    out = os.path.join(ctx.tmp, "all.binaryproto")
    run(["convert"] + paths + ["--to", "binaryproto", out], ctx.tool)
    with open(out, "rb") as f:
        vector = module.BlobProtoVector.FromString(f.read())
    check(len(vector.blobs) == 4, "several .npy files make a BlobProtoVector")
    single = os.path.join(ctx.tmp, "single.binaryproto")
    run(["convert", paths[0], "--vector", "--to", "binaryproto", single], ctx.tool)
    with open(single, "rb") as f:
        check(len(module.BlobProtoVector.FromString(f.read()).blobs) == 1, "--vector makes a one-blob vector")


BLOB_KEYS = {"shape", "count", "dtype", "has_diff", "sum", "asum", "sumsq", "min", "max"}
LAYER_KEYS = {"name", "type", "bottoms", "tops", "phase", "include", "exclude", "param", "params", "blobs"}


def check_schema(doc):
    check(set(doc) == {"schema", "file", "kind", "format", "name", "layers", "blobs"} and doc["schema"] == 2,
          f"top-level keys {sorted(doc)}")
    check(doc["kind"] in ("net", "blob", "blob_vector"), "kind")
    check(doc["format"] in ("V2", "V1", None) and (doc["format"] is None) == (doc["kind"] != "net"), "format")
    blobs = list(doc["blobs"])
    for layer in doc["layers"]:
        check(set(layer) == LAYER_KEYS and isinstance(layer["name"], str), "layer keys")
        blobs += layer["blobs"]
    check(not (doc["kind"] == "net" and doc["blobs"]) and not (doc["kind"] != "net" and doc["layers"]),
          "layers for nets, blobs for blob files")
    for blob in blobs:
        check(set(blob) == BLOB_KEYS, f"blob keys {sorted(blob)}")
        check(all(isinstance(d, int) for d in blob["shape"]) and blob["count"] == math.prod(blob["shape"]), "count")
        check(blob["dtype"] in ("float32", "float64") and isinstance(blob["has_diff"], bool), "dtype, has_diff")


def parse_expectations(path):
    """The .layers.txt / .blob.txt decodings beside the Caffe files (see their SOURCES.md)."""
    layers, stats, blob = [], {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = re.match(r"^(\d+) \| (.*?) \| (.*?) \| .*? \| (.*)$", line)
            if row:
                shapes = [[int(d) for d in m.split(",") if d] for m in re.findall(r"shape=\[([\d,]*)\]", row.group(4))]
                counts = [int(c) for c in re.findall(r"\((\d+) data", row.group(4))]
                layers.append((row.group(2), row.group(3), shapes, counts))
            found = re.match(r"^(.*)\.blobs\[(\d+)\]: .*first=(\S+) sum=(\S+) min=(\S+) max=(\S+)", line)
            if found:
                stats[(found.group(1), int(found.group(2)))] = [float(x) for x in found.group(3, 4, 5, 6)]
            if line.startswith("shape:"):
                blob["shape"] = [int(d) for d in re.search(r"\[([\d,]*)\]", line).group(1).split(",")]
            if line.startswith("values:"):
                blob["count"] = int(line.split()[1])
            if line.startswith("stats:"):
                blob["stats"] = [float(x) for x in re.findall(r"=(\S+)", line)]
    return layers, stats, blob


def close(got, expected):
    return abs(got - expected) <= 1e-7 * abs(expected) + 1e-12


def inspect_json_check(ctx):
    # The sample: every statistic recomputed in Python from the file's own values. Its values are
    # multiples of 1/512 with 10-bit mantissas, so every sum is exact and compares with ==.
    sample = os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel")
    doc = inspect_json(ctx.tool, sample)
    check_schema(doc)
    with open(sample, "rb") as f:
        net = ctx.protos["caffe_packed"].NetParameter.FromString(f.read())
    check(doc["file"] == sample and doc["name"] == net.name and len(doc["layers"]) == len(net.layer), "sample header")
    for got, layer in zip(doc["layers"], net.layer):
        check(got["name"] == layer.name and got["type"] == layer.type and len(got["blobs"]) == len(layer.blobs),
              f"sample layer {layer.name}")
        for blob, message in zip(got["blobs"], layer.blobs):
            values = np.array(message.data, dtype=np.float64)
            check(blob["shape"] == list(message.shape.dim) and blob["count"] == values.size, "sample blob shape")
            check(blob["sum"] == values.sum() and blob["asum"] == np.abs(values).sum(), "sample sums")
            check(close(blob["sumsq"], (values * values).sum()), "sample sumsq")
            check(blob["min"] == values.min() and blob["max"] == values.max(), "sample min/max")
            check(blob["dtype"] == "float32" and blob["has_diff"] is False, "sample dtype")
    # The table: the net's header and every layer, and nothing on stderr off a terminal (progress
    # is for terminals only).
    result = run(["inspect", sample], ctx.tool)
    check(result.stderr == "", f"inspect wrote to stderr: {result.stderr!r}")
    check("TinyLeNet" in result.stdout and "format V2" in result.stdout and "layers  9 (4 with blobs: 8 blobs, 3002 values)"
          in result.stdout, "inspect table header")
    for layer in net.layer:
        check(re.search(rf"^  {re.escape(layer.name)}\s+{re.escape(layer.type)}\s", result.stdout, re.M) is not None,
              f"inspect table row for {layer.name}")
    check(re.search(r"^  conv1\s+Convolution\s+data -> conv1\s+0\s+4x1x3x3\s+36\s+float32\s+no\s", result.stdout,
                    re.M) is not None, "inspect table blob row")
    # An empty blob: min and max are null, sums 0.
    empty = ctx.protos["caffe_packed"].BlobProto()
    empty.shape.dim.extend([0, 4])
    doc = inspect_json(ctx.tool, write(os.path.join(ctx.tmp, "empty.binaryproto"), empty))
    check_schema(doc)
    check(doc["blobs"][0]["min"] is None and doc["blobs"][0]["sum"] == 0 and doc["blobs"][0]["count"] == 0,
          "an empty blob has null min/max")

    if not os.path.isdir(ctx.data):
        print(f"SKIPPED part: the Caffe files folder {ctx.data} is absent; the sample was checked")
        return
    checked = 0
    for name in sorted(os.listdir(ctx.data)):
        path = os.path.join(ctx.data, name)
        base, ext = os.path.splitext(path)
        expected_path = base + (".layers.txt" if ext == ".caffemodel" else ".blob.txt")
        if ext not in (".caffemodel", ".binaryproto") or not os.path.exists(expected_path):
            continue
        doc = inspect_json(ctx.tool, path)
        check_schema(doc)
        layers, stats, blob = parse_expectations(expected_path)
        if ext == ".caffemodel":
            check([(l["name"], l["type"]) for l in doc["layers"]] == [(n, t) for n, t, _, _ in layers],
                  f"{name}: layer names and types")
            for got, (lname, _, shapes, counts) in zip(doc["layers"], layers):
                check([b["shape"] for b in got["blobs"]] == shapes and [b["count"] for b in got["blobs"]] == counts,
                      f"{name}: {lname} shapes and counts")
                for i, b in enumerate(got["blobs"]):
                    _, total, low, high = stats[(lname, i)]
                    check(close(b["sum"], total) and close(b["min"], low) and close(b["max"], high),
                          f"{name}: {lname}.blobs[{i}] statistics {b['sum']}, {b['min']}, {b['max']}")
        else:
            (b,) = doc["blobs"]
            _, total, low, high = blob["stats"]
            check(doc["kind"] == "blob" and b["shape"] == blob["shape"] and b["count"] == blob["count"], f"{name}: shape")
            check(close(b["sum"], total) and close(b["min"], low) and close(b["max"], high), f"{name}: statistics")
        checked += 1
    check(checked > 0, f"no Caffe file with an expectation in {ctx.data}")


def cli_bad_input(ctx):
    sample = os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel")
    with open(sample, "rb") as f:
        raw = f.read()
    truncated = os.path.join(ctx.tmp, "truncated.caffemodel")
    with open(truncated, "wb") as f:
        f.write(raw[: len(raw) // 2])
    garbage = os.path.join(ctx.tmp, "garbage.bin")
    with open(garbage, "wb") as f:
        f.write(b"\xff" * 64)
    empty = os.path.join(ctx.tmp, "empty.bin")
    open(empty, "wb").close()
    bad_npy = {
        "not_npy.npy": b"hello",
        "big_endian.npy": None,
        "fortran.npy": None,
        "short.npy": None,
        "complex.npy": None,
    }
    for name in bad_npy:
        path = os.path.join(ctx.tmp, name)
        if name == "not_npy.npy":
            with open(path, "wb") as f:
                f.write(bad_npy[name])
        elif name == "big_endian.npy":
            np.save(path, np.arange(3, dtype=">f4"))
        elif name == "fortran.npy":
            np.save(path, np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
        elif name == "complex.npy":
            np.save(path, np.arange(3, dtype=np.complex64))
        else:
            np.save(path, np.arange(100, dtype="<f4"))
            with open(path, "r+b") as f:
                f.truncate(os.path.getsize(path) - 4)
    missing = os.path.join(ctx.tmp, "missing.caffemodel")
    cases = [
        (["inspect", missing], missing, "No such file"),
        (["inspect", ctx.tmp], ctx.tmp, "has no index.json"),
        (["inspect", "--json", truncated], truncated, "NetParameter.layer"),
        (["inspect", garbage], garbage, "at byte"),
        (["inspect", empty], empty, "empty"),
        (["convert", truncated, "--to", "npy", os.path.join(ctx.tmp, "never")], truncated, "truncated"),
        (["inspect"], "FILE", "missing"),
        (["inspect", "--frobnicate", sample], "--frobnicate", "unknown option"),
        (["convert", sample], "--to", "missing"),
        (["convert", sample, "--to", "hdf5", os.path.join(ctx.tmp, "x")], "hdf5", "unknown format"),
        (["frobnicate"], "frobnicate", "unknown command"),
    ]
    for name in bad_npy:
        path = os.path.join(ctx.tmp, name)
        cases.append((["convert", path, "--to", "binaryproto", os.path.join(ctx.tmp, "out.binaryproto")], path, ""))
    for args, subject, text in cases:
        result = run(args, ctx.tool, expect=2)
        lines = result.stderr.splitlines()
        check(len(lines) == 1 and subject in lines[0] and text in lines[0] and result.stdout == "",
              f"cblob {' '.join(args)}: stderr {result.stderr!r}, stdout {result.stdout!r}")
    check(not os.path.exists(os.path.join(ctx.tmp, "out.binaryproto")), "a failed convert left an output file")
    # Output that cannot be written: the work failed, not the input (exit 1).
    unwritable = os.path.join(ctx.tmp, "no-folder", "out.binaryproto")
    np.save(os.path.join(ctx.tmp, "ok.npy"), np.zeros(2, dtype="<f4"))
    result = run(["convert", os.path.join(ctx.tmp, "ok.npy"), "--to", "binaryproto", unwritable], ctx.tool, expect=1)
    check(len(result.stderr.splitlines()) == 1 and unwritable in result.stderr, f"unwritable: {result.stderr!r}")
    # Help names every command.
    help_text = run(["help"], ctx.tool).stdout
    check(all(word in help_text for word in ("info", "inspect", "convert", "--json", "binaryproto")), "help")


# ---- a net's definition as text --------------------------------------------------------------

def compile_text_protos(source, folder):
    """proto/caffe_blobs.proto and caffe_params.proto in a package of their own, with every string
    field as bytes: protobuf's text format writes both alike (C-escaped), and bytes hold names that
    are not UTF-8 as they are."""
    modules = {}
    if folder not in sys.path:
        sys.path.insert(0, folder)
    for name in ("caffe_blobs", "caffe_params"):
        with open(os.path.join(source, "proto", name + ".proto"), encoding="utf-8") as f:
            text = f.read()
        text = text.replace("package caffe;", "package caffe_text;")
        text = text.replace('import "caffe_blobs.proto";', 'import "caffe_text_blobs.proto";')
        text = re.sub(r"\b(optional|repeated) string\b", r"\1 bytes", text)
        text = text.replace(" base_ = ", " base = ")  # Caffe's name (protobuf-c's C needs base_)
        with open(os.path.join(folder, "caffe_text_" + name.split("_")[1] + ".proto"), "w", encoding="utf-8") as f:
            f.write(text)
    for name in ("caffe_text_blobs", "caffe_text_params"):
        subprocess.run([shutil.which("protoc"), f"-I{folder}", f"--python_out={folder}",
                        os.path.join(folder, name + ".proto")], check=True)
        modules[name] = importlib.import_module(name + "_pb2")
    return modules["caffe_text_params"]


def read_varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def encode_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def wire_fields(data):
    """(number, wire type, the field's bytes, its payload) of each field; groups whole."""
    pos, out = 0, []
    while pos < len(data):
        start = pos
        key, pos = read_varint(data, pos)
        number, kind = key >> 3, key & 7
        payload = None
        if kind == 0:
            _, pos = read_varint(data, pos)
        elif kind == 1:
            pos += 8
        elif kind == 5:
            pos += 4
        elif kind == 2:
            length, pos = read_varint(data, pos)
            payload = data[pos:pos + length]
            pos += length
        elif kind == 3:
            depth = 1
            while depth:
                inner, pos = read_varint(data, pos)
                inner_kind = inner & 7
                if inner_kind == 0:
                    _, pos = read_varint(data, pos)
                elif inner_kind == 1:
                    pos += 8
                elif inner_kind == 5:
                    pos += 4
                elif inner_kind == 2:
                    length, pos = read_varint(data, pos)
                    pos += length
                elif inner_kind == 3:
                    depth += 1
                elif inner_kind == 4:
                    depth -= 1
        else:
            raise Failure(f"wire type {kind} at byte {start}")
        out.append((number, kind, data[start:pos], payload))
    return out


def without(data, number, nested=None):
    """The message's bytes less the fields of that number (and, in the fields `nested` names, the
    fields its value names), everything else as it is."""
    out = bytearray()
    for field_number, kind, raw, payload in wire_fields(data):
        if field_number == number:
            continue
        if nested and field_number in nested and kind == 2:
            inner = without(payload, *nested[field_number])
            raw = encode_varint(field_number << 3 | 2) + encode_varint(len(inner)) + inner
        out += raw
    return bytes(out)


def definition_of(net_bytes):
    """A NetParameter less its layers' blobs, by hand: layer (100) less blobs (7); layers (2) less
    blobs (6) and less the blobs (50) of their V0 layer (1)."""
    out = bytearray()
    for number, kind, raw, payload in wire_fields(net_bytes):
        if number == 100 and kind == 2:
            inner = without(payload, 7)
        elif number == 2 and kind == 2:
            inner = without(payload, 6, {1: (50,)})
        else:
            out += raw
            continue
        out += encode_varint(number << 3 | 2) + encode_varint(len(inner)) + inner
    return bytes(out)


NUMBER_LINE = re.compile(r"^(\s*[A-Za-z0-9_]+): (-?[0-9.eE+-]+|-?inf|nan)$")
HEX_LINE = re.compile(r"^(\s*[0-9]+): 0x([0-9a-f]{8}|[0-9a-f]{16})$")
STRING_LINE = re.compile(r'^(\s*[0-9]+): "(.*)"$')
EMPTY_BLOCK = re.compile(r"^( *)([0-9]+) \{\n\1\}$", re.M)


def same_text(got, expected):
    """Line by line, where C++ protobuf's printer (Caffe's, which cblob follows) and Python's differ
    only in spelling: a float (C++ writes 6 significant digits or else 9, Python the fewest from 6
    that read back), an unknown fixed32 or fixed64 (C++ in hex with 8 or 16 digits, Python in
    decimal), an empty unknown length-delimited field (C++ `N: ""`, Python an empty block)."""
    expected = EMPTY_BLOCK.sub(r'\1\2: ""', expected)
    got_lines, expected_lines = got.splitlines(), expected.splitlines()
    for i, (a, b) in enumerate(zip(got_lines, expected_lines)):
        if a == b:
            continue
        x, y = NUMBER_LINE.match(a), NUMBER_LINE.match(b)
        if x and y and x.group(1) == y.group(1) and np.float32(float(x.group(2))) == np.float32(float(y.group(2))):
            continue
        x = HEX_LINE.match(a)
        if x and y and x.group(1) == y.group(1) and int(x.group(2), 16) == int(y.group(2)):
            continue
        # Python reads bytes that begin with an end-group tag as an empty message (it stops at the
        # tag); C++ does not (the message did not end there), and prints them as a string.
        x = STRING_LINE.match(a)
        if x and b == x.group(1) + ': ""':
            data = codecs.escape_decode(x.group(2).encode())[0]
            if data and read_varint(data, 0)[0] & 7 == 4:
                continue
        return f"line {i + 1}: cblob wrote {a!r}, Python prints {b!r}"
    if len(got_lines) != len(expected_lines):
        return f"cblob wrote {len(got_lines)} lines, Python prints {len(expected_lines)}"
    return None


def prototxt_check(ctx):
    from google.protobuf import text_format
    folder = os.path.join(ctx.tmp, "prototxt")
    os.mkdir(folder)
    params = compile_text_protos(ctx.source, ctx.tmp)
    make_net = os.path.join(ctx.source, "tests", "tools", "make_net.py")
    nets = sorted(os.path.join(ctx.data, name) for name in os.listdir(ctx.data) if name.endswith(".caffemodel"))
    check(nets, f"no .caffemodel in {ctx.data}")
    for fmt in ("v2", "v1", "v0"):
        for options in (["--structure", "--names", "hostile"], ["--all"]):
            for seed in (1, 2):
                path = os.path.join(folder, f"{fmt}-{options[0][2:]}-{seed}.caffemodel")
                subprocess.run([sys.executable, make_net, "--format", fmt, "--layers", "24", "--seed", str(seed),
                                *options, path], check=True)
                nets.append(path)
    parsed_back = 0
    for path in nets:
        out = os.path.join(folder, os.path.basename(path) + ".prototxt")
        run(["convert", "--quiet", path, "--to", "prototxt", "-o", out], ctx.tool)
        with open(out, "rb") as f:
            text = f.read()
        check(text.isascii(), f"{path}: the text is not ASCII")
        standard_output = run(["convert", path, "--to", "prototxt", "-o", "-"], ctx.tool).stdout
        check(standard_output.encode() == text, f"{path}: the text on standard output differs from the file's")
        with open(path, "rb") as f:
            binary = f.read()
        expected = params.NetParameterFields.FromString(definition_of(binary))
        printed = text_format.MessageToString(expected, print_unknown_fields=True)
        difference = same_text(text.decode(), printed)
        check(difference is None, f"{os.path.basename(path)}: {difference}")
        # cblob reads its own text back (unknown fields by number included) to the same net.
        again = run(["convert", out, "--to", "prototxt", "-o", "-"], ctx.tool).stdout
        check(again.encode() == text, f"{os.path.basename(path)}: cblob reads its text back to another net")
        if re.search(rb"^\s*[0-9]+[ :]", text, re.M):
            continue  # unknown fields by number: no parser reads them without the fork's schema
        back = text_format.Parse(text, params.NetParameterFields())
        check(back == expected, f"{os.path.basename(path)}: the text parses to another message")
        # Python's text of the net, read by cblob, is the same net.
        python_text = os.path.join(folder, os.path.basename(path) + ".python.prototxt")
        with open(python_text, "w", encoding="ascii") as f:
            f.write(printed)
        again = run(["convert", python_text, "--to", "prototxt", "-o", "-"], ctx.tool).stdout
        check(again.encode() == text, f"{os.path.basename(path)}: cblob reads Python's text to another net")
        parsed_back += 1
    check(parsed_back >= 1 + 6, f"only {parsed_back} texts had no unknown fields to parse back")

    # Not a net nor one blob: refused, nothing written.
    vector = os.path.join(folder, "two.binaryproto")
    run(["convert", "--quiet", "--vector", os.path.join(ctx.data, "cifar10_mean.binaryproto"), "-o", vector,
         "--to", "binaryproto"], ctx.tool, expect=None)
    if os.path.exists(vector):
        out = os.path.join(folder, "vector.prototxt")
        result = run(["convert", vector, "--to", "prototxt", "-o", out], ctx.tool, expect=2)
        check("--to prototxt" in result.stderr and not os.path.exists(out), f"a blob vector: {result.stderr}")


def blob_prototxt_check(ctx):
    """A BlobProto as text (the real mean files): protobuf's text_format parses cblob's text to the
    message cblob writes as binary, with the original file's values; cblob reads its text and
    Python's back."""
    from google.protobuf import text_format
    folder = os.path.join(ctx.tmp, "blob_prototxt")
    os.mkdir(folder)
    compile_text_protos(ctx.source, ctx.tmp)
    blobs = importlib.import_module("caffe_text_blobs_pb2")
    means = [os.path.join(ctx.data, name) for name in ("cifar10_mean.binaryproto", "ilsvrc_2012_mean.binaryproto")]
    means = [path for path in means if os.path.exists(path)]
    if not means:
        skip(f"no mean file in {ctx.data}")
    for path in means:
        name = os.path.basename(path)
        out = os.path.join(folder, name + ".prototxt")
        run(["convert", "--quiet", path, "--to", "prototxt", "-o", out], ctx.tool)
        with open(out, "rb") as f:
            text = f.read()
        check(text.isascii() and text.startswith(b"data: ") and b"\nshape {\n  dim: " in text, f"{name}: {text[:60]!r}")
        standard_output = run(["convert", path, "--to", "prototxt", "-o", "-"], ctx.tool).stdout
        check(standard_output.encode() == text, f"{name}: the text on standard output differs from the file's")
        parsed = text_format.Parse(text, blobs.BlobProto())
        # cblob reads the text back (told from its first field) into the binary it writes.
        back = os.path.join(folder, name + ".back.binaryproto")
        run(["convert", "--quiet", out, "--to", "binaryproto", "-o", back], ctx.tool)
        with open(back, "rb") as f:
            binary = blobs.BlobProto.FromString(f.read())
        check(parsed == binary, f"{name}: the text parses to another message than cblob's binary")
        with open(path, "rb") as f:
            original = blobs.BlobProto.FromString(f.read())
        check(list(parsed.shape.dim) == [original.num, original.channels, original.height, original.width],
              f"{name}: shape {list(parsed.shape.dim)}")
        check(np.array_equal(np.array(parsed.data, np.float32), np.array(original.data, np.float32)),
              f"{name}: the values differ from the file's")
        # Python's text of the blob (its own float spelling), read by cblob, is the same blob.
        python_text = os.path.join(folder, name + ".python.prototxt")
        with open(python_text, "w", encoding="ascii") as f:
            f.write(text_format.MessageToString(binary))
        again = run(["convert", python_text, "--to", "prototxt", "-o", "-"], ctx.tool).stdout
        check(again.encode() == text, f"{name}: cblob reads Python's text to another blob")
    # A user's mistakes: a blob's text with a field BlobProto lacks names its line and column.
    bad = os.path.join(folder, "bad.prototxt")
    with open(bad, "w", encoding="ascii") as f:
        f.write("shape {\n  dim: 2\n}\ndata: 1\ndatum: 2\n")
    result = run(["convert", bad, "--to", "binaryproto", "-o", os.path.join(folder, "bad.binaryproto")], ctx.tool,
                 expect=2)
    check("bad.prototxt:5:1" in result.stderr and "datum" in result.stderr, result.stderr)
    check(not os.path.exists(os.path.join(folder, "bad.binaryproto")), "bad.binaryproto was written")


CHECKS = {
    "cblob_writes_what_python_reads": cblob_writes_what_python_reads,
    "python_writes_what_cblob_reads": python_writes_what_cblob_reads,
    "npy_to_binaryproto": npy_to_binaryproto,
    "inspect_json": inspect_json_check,
    "cli_bad_input": cli_bad_input,
    "prototxt": prototxt_check,
    "blob_prototxt": blob_prototxt_check,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--tool", required=True)
    parser.add_argument("--helper", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cblob-crosscheck-") as tmp:
        args.tmp = tmp
        protos = os.path.join(tmp, "protos")
        os.mkdir(protos)
        args.protos = compile_protos(args.source, protos)
        try:
            CHECKS[args.check](args)
        except Failure as e:
            print(f"FAILED: {args.check}: {e}", file=sys.stderr)
            return 1
    print(f"ok: {args.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
