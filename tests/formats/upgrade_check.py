#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`cblob upgrade` (cblob_model_upgrade) against BVLC Caffe: its own test vectors, and every
output parsed by Python's protobuf (Debian's python3-protobuf) with BVLC's caffe.proto
(third_party/caffe/caffe.proto, compiled by protoc at test time), the reference schema that is
not cblob's. Each check is one CTest test:

    upgrade_check.py CHECK --tool CBLOB --source DIR --data DIR

Checks:
    caffe_vectors       test_upgrade_proto.cpp's pairs (tests/formats/upgrade/): V0 with padding
                        layers, Caffe's "all params" V0 net, the ImageNet V0 and V1 nets, each
                        upgraded (to text and to binary) to the same message as Caffe's expected
                        upgrade, field by field; every V1 LayerType to Caffe's type string; input
                        fields to an Input layer; Caffe's refusals refused, naming the layer
    v1_cifar10_quick    a V1 cifar10_quick with weights (legacy dims, a diff, NaN payloads, -0):
                        upgraded, every BlobProto is the same bytes; the layers are what Caffe's
                        UpgradeV1Net makes (built here by hand from caffe.proto); inspect says V2
    program             the mistakes users make: OUT = IN (also through a link), the arguments the
                        wrong way round, a net already current (said, written, exit 0), an .npz
                        input, a name that says another format: refused with one line, nothing
                        changed
    prototxt_bvlc       the text cblob writes for the real .caffemodel files, the sample and the
                        upgraded nets parses with protobuf's text_format against BVLC's caffe.proto
                        to the same message as the binary less its blobs
    bvlc_nets           BVLC's own net definitions (tests/formats/bvlc_nets/: LeNet, AlexNet,
                        GoogLeNet, R-CNN, BatchNorm, a siamese net sharing params, HDF5 data, a
                        fully convolutional CaffeNet): read by cblob, written as text and read
                        again, each time the same message as protobuf's text_format makes of the
                        original against BVLC's caffe.proto; cblob's second text is its first

Exits 77 (skipped) with a reason when protoc or protobuf is missing.
"""
import argparse
import difflib
import hashlib
import importlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SKIPPED = 77


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIPPED)


def compile_caffe_proto(source, folder):
    protoc = shutil.which("protoc")
    if protoc is None:
        skip("protoc is not installed (scripts/setup.sh installs protobuf-compiler)")
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        skip("Python's protobuf is not installed (scripts/setup.sh installs python3-protobuf)")
    proto = os.path.join(source, "third_party", "caffe", "caffe.proto")
    subprocess.run([protoc, f"-I{os.path.dirname(proto)}", f"--python_out={folder}", proto], check=True)
    sys.path.insert(0, folder)
    return importlib.import_module("caffe_pb2")


def run(ctx, args, expect=0):
    result = subprocess.run([ctx.tool] + args, capture_output=True, text=True)
    if expect is not None and result.returncode != expect:
        raise Failure(f"cblob {' '.join(args)} exited {result.returncode}, expected {expect}:\n"
                      f"{result.stdout}{result.stderr}")
    return result


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def parse_text(ctx, text):
    from google.protobuf import text_format
    return text_format.Parse(text, ctx.caffe.NetParameter())


def same_message(got, expected, what):
    """Field by field: equal messages, else a diff of their text forms."""
    if got == expected:
        return
    from google.protobuf import text_format
    diff = "\n".join(difflib.unified_diff(text_format.MessageToString(expected).splitlines(),
                                          text_format.MessageToString(got).splitlines(), "Caffe's", "cblob's",
                                          lineterm="", n=2))
    raise Failure(f"{what}: the upgraded net differs from what Caffe makes:\n{diff[:6000]}")


def fixture(ctx, name):
    return os.path.join(ctx.source, "tests", "formats", "upgrade", name + ".prototxt")


def upgrade_both_ways(ctx, source, stem):
    """cblob upgrade to text and to binary: the two messages (they must be the same net)."""
    text_out = os.path.join(ctx.tmp, stem + ".prototxt")
    binary_out = os.path.join(ctx.tmp, stem + ".caffemodel")
    run(ctx, ["upgrade", "--quiet", source, text_out])
    run(ctx, ["upgrade", "--quiet", source, binary_out])
    as_text = parse_text(ctx, read(text_out, "r"))
    as_binary = ctx.caffe.NetParameter.FromString(read(binary_out))
    check(as_text == as_binary, f"{stem}: the text and the binary upgrade differ")
    check(len(as_binary.layers) == 0 and len(as_binary.layer) > 0, f"{stem}: not in the current format")
    return as_binary


# ---- Caffe's own test vectors ------------------------------------------------------------------

# UpgradeV1LayerType (upgrade_proto.cpp): each V1 LayerType's current type string.
V1_TYPE_STRINGS = {
    "NONE": "", "ABSVAL": "AbsVal", "ACCURACY": "Accuracy", "ARGMAX": "ArgMax", "BNLL": "BNLL",
    "CONCAT": "Concat", "CONTRASTIVE_LOSS": "ContrastiveLoss", "CONVOLUTION": "Convolution",
    "DECONVOLUTION": "Deconvolution", "DATA": "Data", "DROPOUT": "Dropout", "DUMMY_DATA": "DummyData",
    "EUCLIDEAN_LOSS": "EuclideanLoss", "ELTWISE": "Eltwise", "EXP": "Exp", "FLATTEN": "Flatten",
    "HDF5_DATA": "HDF5Data", "HDF5_OUTPUT": "HDF5Output", "HINGE_LOSS": "HingeLoss", "IM2COL": "Im2col",
    "IMAGE_DATA": "ImageData", "INFOGAIN_LOSS": "InfogainLoss", "INNER_PRODUCT": "InnerProduct", "LRN": "LRN",
    "MEMORY_DATA": "MemoryData", "MULTINOMIAL_LOGISTIC_LOSS": "MultinomialLogisticLoss", "MVN": "MVN",
    "POOLING": "Pooling", "POWER": "Power", "RELU": "ReLU", "SIGMOID": "Sigmoid",
    "SIGMOID_CROSS_ENTROPY_LOSS": "SigmoidCrossEntropyLoss", "SILENCE": "Silence", "SOFTMAX": "Softmax",
    "SOFTMAX_LOSS": "SoftmaxWithLoss", "SPLIT": "Split", "SLICE": "Slice", "TANH": "TanH",
    "WINDOW_DATA": "WindowData", "THRESHOLD": "Threshold",
}


def caffe_vectors(ctx):
    # Caffe gives the V2 net each of these becomes (RunV0UpgradeTest, then RunV1UpgradeTest).
    for source, expected in (("net_simple_v0_proto", "net_simple_expected_v2_proto"),
                             ("net_simple_expected_v1_proto", "net_simple_expected_v2_proto"),
                             ("net_imagenet_v0_proto", "net_imagenet_expected_v2_proto"),
                             ("net_imagenet_expected_v1_proto", "net_imagenet_expected_v2_proto"),
                             ("input_dim_net", "input_dim_expected"),
                             ("v1_deploy_input_shape", "v1_deploy_expected")):
        got = upgrade_both_ways(ctx, fixture(ctx, source), source)
        same_message(got, parse_text(ctx, read(fixture(ctx, expected), "r")), source)
    # The Input layer made from input_dim: its BlobShape's dim is [packed = true], so protobuf
    # (Caffe's upgrade_net_proto_binary too) writes the dims as one packed field; cblob wrote them
    # unpacked before (the same message, other bytes). The whole net here is built by the upgrade,
    # so its bytes are the ones protobuf writes.
    got = upgrade_both_ways(ctx, fixture(ctx, "input_dim_net"), "input_dim_net")
    check(read(os.path.join(ctx.tmp, "input_dim_net.caffemodel")) == got.SerializeToString(),
          "input_dim_net: the upgraded bytes are not the ones protobuf writes for the same message")
    # Caffe gives the V1 (or V0) net these become: upgraded, both are the same current net. For
    # the padding tests the expected output is V0 with the padding layers folded in.
    for source, expected in (("net_allparams_input_proto", "net_allparams_expected_output_proto"),
                             ("padding_simple_input_proto", "padding_simple_expected_output_proto"),
                             ("padding_twotops_input_proto", "padding_twotops_expected_output_proto")):
        got = upgrade_both_ways(ctx, fixture(ctx, source), source)
        reference = upgrade_both_ways(ctx, fixture(ctx, expected), expected)
        same_message(got, reference, source)
        check(not any(layer.name.startswith("pad") for layer in got.layer), f"{source}: a padding layer was kept")
    # The padding layers are gone, their pad in the convolution they fed, which reads their input.
    simple = upgrade_both_ways(ctx, fixture(ctx, "padding_simple_input_proto"), "padding_simple_again")
    conv1 = [layer for layer in simple.layer if layer.name == "conv1"][0]
    check(list(conv1.bottom) == ["data"] and list(conv1.convolution_param.pad) == [2],
          f"padding_simple: conv1 is {conv1}")

    # Every V1 LayerType to its type string (TestUpgradeV1LayerType).
    caffe = ctx.caffe
    net = caffe.NetParameter(name="all_types")
    for name, value in caffe.V1LayerParameter.LayerType.items():
        net.layers.add(name=f"layer_{name.lower()}", type=value)
    path = os.path.join(ctx.tmp, "all_types_v1.caffemodel")
    with open(path, "wb") as f:
        f.write(net.SerializeToString())
    check(set(V1_TYPE_STRINGS) == set(caffe.V1LayerParameter.LayerType.keys()), "caffe.proto's V1 types changed")
    got = upgrade_both_ways(ctx, path, "all_types")
    for v1, layer in zip(net.layers, got.layer):
        expected = V1_TYPE_STRINGS[caffe.V1LayerParameter.LayerType.Name(v1.type)]
        check(layer.HasField("type") and layer.type == expected and layer.name == v1.name,
              f"V1 type {v1.type}: upgraded to {layer.type!r}, Caffe writes {expected!r}")
    check(len(got.layer) == len(net.layers), "all_types: layers lost")

    # Caffe's refusals: refused, naming the layer, nothing written.
    refusals = {
        "unknown_v0_type": ("layers { layer { name: 'odd' type: 'fancy_conv' } top: 'x' }", ["odd", "fancy_conv"]),
        "v0_param_of_another_type": ("layers { layer { name: 'r' type: 'relu' num_output: 3 } top: 'x' }",
                                     ["\"r\"", "num_output", "relu"]),
        "padding_into_relu": ("input: 'data' layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'data' "
                              "top: 'pd' } layers { layer { name: 'r' type: 'relu' } bottom: 'pd' top: 'r' }",
                              ["\"r\"", "padding", "relu"]),
        "unknown_bottom": ("layers { layer { name: 'c' type: 'conv' } bottom: 'nowhere' top: 'c' }",
                           ["\"c\"", "nowhere"]),
        "layer_and_layers": ("layer { name: 'a' type: 'ReLU' } layers { name: 'b' type: RELU }", ["both layer", "refuses"]),
        "short_input_dim": ("input: 'data' input_dim: 1 input_dim: 3 layer { name: 'a' type: 'ReLU' }", ["input_dim"]),
    }
    for stem, (text, words) in refusals.items():
        source = os.path.join(ctx.tmp, stem + ".prototxt")
        with open(source, "w", encoding="ascii") as f:
            f.write(text + "\n")
        out = os.path.join(ctx.tmp, stem + ".out.caffemodel")
        result = run(ctx, ["upgrade", source, out], expect=2)
        check(all(word in result.stderr for word in words) and result.stderr.count("\n") == 1,
              f"{stem}: the refusal does not say {words}: {result.stderr!r}")
        check(not os.path.exists(out), f"{stem}: an output was written")


# ---- a V1 cifar10_quick with weights -----------------------------------------------------------

def v1_cifar10_quick(ctx):
    caffe = ctx.caffe
    T = caffe.V1LayerParameter.LayerType
    net = caffe.NetParameter(name="CIFAR10_quick")
    values_seed = [1]

    def blob(num, channels, height, width, diff=False, special=False):
        b = caffe.BlobProto(num=num, channels=channels, height=height, width=width)
        count = num * channels * height * width
        values = [((i * 7919 + values_seed[0] * 104729) % 2001 - 1000) / 997.0 for i in range(count)]
        values_seed[0] += 1
        b.data.extend(values)
        if special:  # NaN payloads, -0 and a subnormal must come back as these bits
            raw = bytearray(struct.pack(f"<{count}f", *b.data))
            raw[0:4] = struct.pack("<I", 0x7FC00ABC)
            raw[4:8] = struct.pack("<I", 0xFFC00101)
            raw[8:12] = struct.pack("<I", 0x80000000)
            raw[12:16] = struct.pack("<I", 0x00000003)
            del b.data[:]
            b.data.extend(struct.unpack(f"<{count}f", bytes(raw)))
        if diff:
            b.diff.extend(v / 3 for v in values)
        return b

    data = net.layers.add(name="cifar", type=T.Value("DATA"), top=["data", "label"])
    data.data_param.source = "examples/cifar10/cifar10_train_lmdb"
    data.data_param.batch_size = 100
    data.data_param.backend = caffe.DataParameter.LMDB
    data.data_param.scale = 0.00390625  # old style: UpgradeNetDataTransformation moves it
    data.data_param.mean_file = "examples/cifar10/mean.binaryproto"
    data.include.add(phase=caffe.TRAIN)

    def conv(name, bottom, num_output, channels, diff=False, special=False):
        layer = net.layers.add(name=name, type=T.Value("CONVOLUTION"), bottom=[bottom], top=[name])
        layer.blobs_lr.extend([1, 2])
        layer.weight_decay.extend([1, 0])
        p = layer.convolution_param
        p.num_output = num_output
        p.pad.append(2)
        p.kernel_size.append(5)
        p.stride.append(1)
        p.weight_filler.type, p.weight_filler.std = "gaussian", 0.0001
        p.bias_filler.type = "constant"
        layer.blobs.extend([blob(num_output, channels, 5, 5, diff=diff, special=special), blob(1, 1, 1, num_output)])
        return layer

    def pool(name, bottom, method):
        layer = net.layers.add(name=name, type=T.Value("POOLING"), bottom=[bottom], top=[name])
        layer.pooling_param.pool = method
        layer.pooling_param.kernel_size = 3
        layer.pooling_param.stride = 2

    def relu(name, bottom):
        net.layers.add(name=name, type=T.Value("RELU"), bottom=[bottom], top=[bottom])

    conv("conv1", "data", 32, 3, special=True)
    pool("pool1", "conv1", caffe.PoolingParameter.MAX)
    relu("relu1", "pool1")
    conv("conv2", "pool1", 32, 32, diff=True)
    relu("relu2", "conv2")
    pool("pool2", "conv2", caffe.PoolingParameter.AVE)
    conv("conv3", "pool2", 64, 32)
    relu("relu3", "conv3")
    pool("pool3", "conv3", caffe.PoolingParameter.AVE)
    for name, bottom, out, inputs in (("ip1", "pool3", 64, 1024), ("ip2", "ip1", 10, 64)):
        layer = net.layers.add(name=name, type=T.Value("INNER_PRODUCT"), bottom=[bottom], top=[name])
        layer.blobs_lr.extend([1, 2])
        layer.inner_product_param.num_output = out
        layer.inner_product_param.weight_filler.type = "gaussian"
        layer.blobs.extend([blob(1, 1, out, inputs), blob(1, 1, 1, out)])
    accuracy = net.layers.add(name="accuracy", type=T.Value("ACCURACY"), bottom=["ip2", "label"], top=["accuracy"])
    accuracy.include.add(phase=caffe.TEST)
    net.layers.add(name="loss", type=T.Value("SOFTMAX_LOSS"), bottom=["ip2", "label"], top=["loss"])
    source = os.path.join(ctx.tmp, "cifar10_quick_v1.caffemodel")
    with open(source, "wb") as f:
        f.write(net.SerializeToString())

    # What UpgradeNetAsNeeded makes of it, built here from caffe.proto's messages.
    expected = caffe.NetParameter(name="CIFAR10_quick")
    for v1 in net.layers:
        layer = expected.layer.add(name=v1.name, type=V1_TYPE_STRINGS[T.Name(v1.type)], bottom=v1.bottom, top=v1.top)
        layer.include.extend(v1.include)
        for i in range(max(len(v1.blobs_lr), len(v1.weight_decay))):
            spec = layer.param.add()
            if i < len(v1.blobs_lr):
                spec.lr_mult = v1.blobs_lr[i]
            if i < len(v1.weight_decay):
                spec.decay_mult = v1.weight_decay[i]
        layer.blobs.extend(v1.blobs)
        for v1_field, field in (("data_param", "data_param"), ("convolution_param", "convolution_param"),
                                ("pooling_param", "pooling_param"), ("inner_product_param", "inner_product_param")):
            if v1.HasField(v1_field):
                getattr(layer, field).CopyFrom(getattr(v1, v1_field))
        if v1.type == T.Value("DATA"):
            layer.transform_param.scale = layer.data_param.scale
            layer.transform_param.mean_file = layer.data_param.mean_file
            layer.data_param.ClearField("scale")
            layer.data_param.ClearField("mean_file")

    out = os.path.join(ctx.tmp, "cifar10_quick.caffemodel")
    result = run(ctx, ["upgrade", source, out])
    check("wrote " + out in result.stdout and result.stderr == "", f"the program said {result.stdout!r} {result.stderr!r}")
    got = caffe.NetParameter.FromString(read(out))
    # Messages with NaN values never compare equal: the blobs are compared as bytes below.
    got_structure, expected_structure = caffe.NetParameter(), caffe.NetParameter()
    got_structure.CopyFrom(got)
    expected_structure.CopyFrom(expected)
    for layer in list(got_structure.layer) + list(expected_structure.layer):
        del layer.blobs[:]
    same_message(got_structure, expected_structure, "cifar10_quick")
    check([l.type for l in got.layer][:4] == ["Data", "Convolution", "Pooling", "ReLU"] and
          got.layer[1].param[0].lr_mult == 1 and got.layer[1].param[1].lr_mult == 2, "cifar10_quick: types or specs")

    # Every BlobProto is the same bytes: the values bit for bit, legacy dims as they were.
    def blob_payloads(data, layer_field, blob_field):
        out = []
        for number, payload in fields(data):
            if number == layer_field:
                out.append([p for n, p in fields(payload) if n == blob_field])
        return out
    before, after = blob_payloads(read(source), 2, 6), blob_payloads(read(out), 100, 7)
    check(len(before) == len(after) and all(a == b for a, b in zip(before, after)) and sum(map(len, after)) == 10,
          "cifar10_quick: a blob's bytes changed")
    weights = after[1][0]
    check(before[1][0] == weights and struct.pack("<I", 0x7FC00ABC) in weights and struct.pack("<I", 0xFFC00101) in weights,
          "cifar10_quick: conv1's NaN payloads")

    # The program shows the current format; the text form is the same net less its blobs.
    shown = run(ctx, ["inspect", out]).stdout
    check("format V2" in shown and "Convolution" in shown and "InnerProduct" in shown, f"inspect: {shown[:400]}")
    text_out = os.path.join(ctx.tmp, "cifar10_quick.prototxt")
    run(ctx, ["upgrade", "--quiet", source, "--to", "prototxt", text_out])
    same_message(parse_text(ctx, read(text_out, "r")), expected_structure, "cifar10_quick as text")
    ctx.upgraded.append(out)


def fields(data):
    """(number, payload) of each length-delimited field of a message (other fields skipped)."""
    pos, out = 0, []

    def varint():
        nonlocal pos
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value
    while pos < len(data):
        key = varint()
        kind = key & 7
        if kind == 0:
            varint()
        elif kind == 1:
            pos += 8
        elif kind == 5:
            pos += 4
        elif kind == 2:
            length = varint()
            out.append((key >> 3, data[pos:pos + length]))
            pos += length
        else:
            raise Failure(f"wire type {kind}")
    return out


# ---- the program's refusals ---------------------------------------------------------------------

def digest(path):
    return hashlib.sha256(read(path)).hexdigest()


def program(ctx):
    source = fixture(ctx, "v1_deploy_input_shape")
    v1 = os.path.join(ctx.tmp, "old.prototxt")
    shutil.copyfile(source, v1)
    before = digest(v1)
    # OUT = IN, by name and through a symbolic link.
    result = run(ctx, ["upgrade", v1, v1], expect=2)
    check("never writes over an input" in result.stderr and digest(v1) == before, f"OUT = IN: {result.stderr}")
    link = os.path.join(ctx.tmp, "link.prototxt")
    os.symlink(v1, link)
    result = run(ctx, ["upgrade", v1, link], expect=2)
    check("the same file" in result.stderr and digest(v1) == before, f"OUT = IN by a link: {result.stderr}")
    # The wrong way round: the old net named last is never replaced.
    new = os.path.join(ctx.tmp, "new.prototxt")
    run(ctx, ["upgrade", "--quiet", v1, new])
    result = run(ctx, ["upgrade", new, v1], expect=2)
    check("wrong way round" in result.stderr and digest(v1) == before, f"wrong order: {result.stderr}")
    result = run(ctx, ["upgrade", os.path.join(ctx.tmp, "missing.prototxt"), v1], expect=2)
    check("the input comes first" in result.stderr and digest(v1) == before, f"missing input: {result.stderr}")
    # A net already current: said on standard error, written (the same net), exit 0.
    lenet = os.path.join(ctx.data, "lenet_iter_10000.caffemodel")
    out = os.path.join(ctx.tmp, "lenet_again.caffemodel")
    result = run(ctx, ["upgrade", lenet, out])
    check("current format already" in result.stderr, f"already current: {result.stderr!r}")
    check(read(out) == read(lenet), "an already-current net (no input fields) is written as the same bytes")
    # An .npz is weights, not a net.
    npz = os.path.join(ctx.tmp, "lenet.npz")
    run(ctx, ["convert", "--quiet", lenet, "-o", npz])
    out = os.path.join(ctx.tmp, "from_npz.caffemodel")
    result = run(ctx, ["upgrade", npz, out], expect=2)
    check("not a Caffe net" in result.stderr and not os.path.exists(out), f".npz input: {result.stderr}")
    # A name that says another format than --to.
    result = run(ctx, ["upgrade", v1, os.path.join(ctx.tmp, "x.caffemodel"), "--to", "prototxt"], expect=2)
    check("its name says" in result.stderr, f"--to against the name: {result.stderr}")
    result = run(ctx, ["upgrade", v1], expect=2)
    check("the output is missing" in result.stderr, f"one argument: {result.stderr}")
    help_text = run(ctx, ["help", "upgrade"]).stdout
    check("cblob upgrade" in help_text and "--to" in help_text, "help upgrade")


# ---- text against BVLC's schema ------------------------------------------------------------------

def prototxt_bvlc(ctx):
    caffe = ctx.caffe
    nets = sorted(os.path.join(ctx.data, n) for n in os.listdir(ctx.data) if n.endswith(".caffemodel"))
    nets.append(os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel"))
    v1_cifar10_quick(ctx)  # writes an upgraded net
    nets += ctx.upgraded
    check(len(nets) >= 3, f"nets: {nets}")
    for path in nets:
        out = os.path.join(ctx.tmp, os.path.basename(path) + ".prototxt")
        run(ctx, ["convert", "--quiet", path, "--to", "prototxt", "-o", out])
        binary = caffe.NetParameter.FromString(read(path))
        for layer in binary.layer:
            del layer.blobs[:]
        for layer in binary.layers:
            del layer.blobs[:]
        same_message(parse_text(ctx, read(out, "r")), binary, os.path.basename(path) + " as text")


def bvlc_nets(ctx):
    folder = os.path.join(ctx.source, "tests", "formats", "bvlc_nets")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".prototxt"))
    check(len(names) >= 8, f"BVLC's nets are missing from {folder}: {names}")
    for name in names:
        original = parse_text(ctx, read(os.path.join(folder, name), "r"))
        check(len(original.layer) > 0, f"{name}: protobuf read no layer")
        first = os.path.join(ctx.tmp, "first_" + name)
        second = os.path.join(ctx.tmp, "second_" + name)
        run(ctx, ["convert", "--quiet", os.path.join(folder, name), "--to", "prototxt", "-o", first])
        same_message(parse_text(ctx, read(first, "r")), original, name + " written by cblob")
        run(ctx, ["convert", "--quiet", first, "--to", "prototxt", "-o", second])
        check(read(first) == read(second), f"{name}: cblob's text of its own text is not the same text")
        shown = run(ctx, ["inspect", os.path.join(folder, name)]).stdout
        check(f"layers  {len(original.layer)} " in shown, f"{name}: inspect does not count its {len(original.layer)} "
              f"layers:\n{shown[:400]}")
    print(f"{len(names)} BVLC nets read, written and read again to protobuf's message")


CHECKS = {
    "caffe_vectors": caffe_vectors,
    "v1_cifar10_quick": v1_cifar10_quick,
    "program": program,
    "prototxt_bvlc": prototxt_bvlc,
    "bvlc_nets": bvlc_nets,
}


def run_check(checks, args, prefix):
    """Runs checks[args.check] in a temporary folder (args.tmp) with BVLC's caffe.proto compiled
    (args.caffe); 0 when it passes, 1 with the failure on stderr. Shared with caffe_check.py."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        args.tmp = tmp
        protos = os.path.join(tmp, "protos")
        os.mkdir(protos)
        args.caffe = compile_caffe_proto(args.source, protos)
        try:
            checks[args.check](args)
        except Failure as e:
            print(f"FAILED: {args.check}: {e}", file=sys.stderr)
            return 1
    print(f"ok: {args.check}")
    return 0


def check_parser(checks, doc):
    """The command line both drivers take: a check by name, the cblob program, Caffe's source and
    the test data. Shared with caffe_check.py, which adds its own options."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("check", choices=sorted(checks))
    parser.add_argument("--tool", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--data", required=True)
    return parser


def main():
    args = check_parser(CHECKS, __doc__).parse_args()
    args.upgraded = []
    return run_check(CHECKS, args, "cblob-upgrade-")


if __name__ == "__main__":
    sys.exit(main())
