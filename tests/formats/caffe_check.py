#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""cblob against real Caffe: Debian 11's build of BVLC Caffe (1.0.0+git20180821.99bd997),
fetched into a private folder by scripts/caffe-env.sh. Where tests/formats/upgrade_check.py
compares cblob with Caffe's expected answers, this runs Caffe itself. Each check is one CTest test:

    caffe_check.py CHECK --tool CBLOB --source DIR --data DIR --work DIR

Checks:
    upgrade_text    every V0 and V1 net of tests/formats/upgrade/ and every BVLC net of
                    tests/formats/bvlc_nets/ through Caffe's upgrade_net_proto_text and through
                    `cblob upgrade` to text: the two outputs, parsed by Python's protobuf against
                    BVLC's caffe.proto, are the same message (a difference is printed field by field);
                    and Caffe's tool, given cblob's text, reads it as that message too
    upgrade_binary  the same nets as binary NetParameters, a V1 LeNet carrying the real
                    lenet_iter_10000 weights in legacy dims, and the real model itself, through
                    upgrade_net_proto_binary and `cblob upgrade` to .caffemodel: the same message,
                    and the same bytes (Caffe's C++ protobuf writes fields in number order); and
                    Caffe's tool, given cblob's file, reads it as that message too
    caffe_loads     Caffe loads what cblob writes: weights changed in NumPy and written back by
                    `cblob convert --like` from .npz and from .safetensors, and cblob's upgrade of
                    the V1 LeNet, each loaded by caffe::Net::CopyTrainedLayersFrom into BVLC's LeNet
                    (tests/formats/caffe_peer.cpp, compiled here against libcaffe): every parameter
                    blob has the shape and the float32 bits cblob was given

Exits 77 (skipped), saying why, when Caffe has not been fetched (scripts/caffe-env.sh: no network,
a mirror without the packages), or protoc, Python's protobuf, NumPy or a C++ compiler is missing.
"""
import difflib
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upgrade_check import Failure, check, check_parser, parse_text, read, run, run_check, skip  # noqa: E402

UPGRADE_VECTORS = [  # tests/formats/upgrade/: the V0 and V1 ones (Caffe's inputs and expected V1 nets)
    "net_simple_v0_proto", "net_simple_expected_v1_proto", "net_imagenet_v0_proto",
    "net_imagenet_expected_v1_proto", "net_allparams_input_proto", "net_allparams_expected_output_proto",
    "padding_simple_input_proto", "padding_simple_expected_output_proto", "padding_twotops_input_proto",
    "padding_twotops_expected_output_proto", "input_dim_net", "v1_deploy_input_shape",
]


def find_caffe(ctx):
    """The wrapper of a fetched Caffe, or skip: tests never download."""
    script = os.path.join(ctx.source, "scripts", "caffe-env.sh")
    result = subprocess.run(["bash", script, "--print"], capture_output=True, text=True)
    if result.returncode != 0:
        skip(f"real Caffe is not available ({result.stderr.strip().splitlines()[-1] if result.stderr.strip() else 'caffe-env.sh failed'}); "
             "scripts/caffe-env.sh fetches it (scripts/setup.sh runs it)")
    wrapper = result.stdout.strip()
    env = dict(os.environ)
    for line in subprocess.run([wrapper, "--env"], capture_output=True, text=True, check=True).stdout.splitlines():
        key, _, value = line.partition("=")
        env[key] = value
    env["GLOG_minloglevel"] = "2"  # Caffe's notes (e.g. "Note that future Caffe releases...") are not errors
    ctx.caffe_run = wrapper
    ctx.caffe_env = env
    ctx.caffe_dir = os.path.dirname(os.path.dirname(wrapper))


def caffe_tool(ctx, args):
    result = subprocess.run([ctx.caffe_run] + args, capture_output=True, text=True, env=ctx.caffe_env)
    if result.returncode != 0:
        raise Failure(f"Caffe's {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result


def differences(got, expected):
    from google.protobuf import text_format
    return "\n".join(difflib.unified_diff(text_format.MessageToString(expected).splitlines(),
                                          text_format.MessageToString(got).splitlines(), "Caffe's", "cblob's",
                                          lineterm="", n=3))


def inputs(ctx):
    """(stem, path) of every V0/V1 vector and BVLC net, as text."""
    found = [(stem, os.path.join(ctx.source, "tests", "formats", "upgrade", stem + ".prototxt"))
             for stem in UPGRADE_VECTORS]
    folder = os.path.join(ctx.source, "tests", "formats", "bvlc_nets")
    nets = sorted(n for n in os.listdir(folder) if n.endswith(".prototxt"))
    check(len(nets) >= 8, f"BVLC's nets are missing from {folder}")
    found += [(n[:-len(".prototxt")], os.path.join(folder, n)) for n in nets]
    for stem, path in found:
        check(os.path.isfile(path), f"missing test input {path}")
    return found


def upgrade_both_ways(ctx, stem, path, binary):
    """Upgrades PATH with Caffe's tool and with `cblob upgrade`, and checks the two agree: the same
    message (binary: the same bytes), which Caffe's own tool reads back as its own upgrade."""
    tool = "upgrade_net_proto_binary" if binary else "upgrade_net_proto_text"
    suffix = ".caffemodel" if binary else ".prototxt"
    caffe_out = os.path.join(ctx.tmp, stem + ".caffe" + suffix)
    cblob_out = os.path.join(ctx.tmp, stem + ".cblob" + suffix)
    caffe_tool(ctx, [tool, path, caffe_out])
    run(ctx, ["upgrade", "--quiet", path, cblob_out])

    def message(file):
        return ctx.caffe.NetParameter.FromString(read(file)) if binary else parse_text(ctx, read(file, "r"))

    by_caffe, by_cblob = message(caffe_out), message(cblob_out)
    check(len(by_caffe.layer) > 0 and len(by_caffe.layers) == 0, f"{stem}: Caffe's upgrade has no current layer")
    if by_cblob != by_caffe:
        raise Failure(f"{stem}: `cblob upgrade` differs from Caffe's {tool}:\n"
                      f"{differences(by_cblob, by_caffe)[:8000]}")
    if binary:
        a, b = read(caffe_out), read(cblob_out)
        if a != b:
            at = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            raise Failure(f"{stem}: the same message but not the same bytes as Caffe's ({len(a)} and {len(b)} "
                          f"bytes, first difference at byte {at})")
    # Caffe reads what cblob wrote: its own tool, given cblob's output, makes the same message.
    again = cblob_out + ".read_by_caffe"
    caffe_tool(ctx, [tool, cblob_out, again])
    reread = message(again)
    if reread != by_caffe:
        raise Failure(f"{stem}: Caffe reads cblob's upgrade as another net:\n{differences(reread, by_caffe)[:8000]}")


def upgrade_text(ctx):
    nets = inputs(ctx)
    for stem, path in nets:
        upgrade_both_ways(ctx, stem, path, binary=False)
    print(f"{len(nets)} nets: cblob's text upgrade is Caffe's message")


def v1_lenet(ctx):
    """lenet_iter_10000 rewritten as a V1 net (`layers`, V1 type enums, blobs in legacy dims), as
    Caffe wrote models before 2015: the weights Caffe's upgrade must carry over unchanged."""
    caffe = ctx.caffe
    model = caffe.NetParameter.FromString(read(os.path.join(ctx.data, "lenet_iter_10000.caffemodel")))
    types = {"Data": "DATA", "Convolution": "CONVOLUTION", "Pooling": "POOLING", "InnerProduct": "INNER_PRODUCT",
             "ReLU": "RELU", "SoftmaxWithLoss": "SOFTMAX_LOSS", "Accuracy": "ACCURACY", "Softmax": "SOFTMAX"}
    v1 = caffe.NetParameter(name=model.name)
    for layer in model.layer:
        old = v1.layers.add(name=layer.name, type=caffe.V1LayerParameter.LayerType.Value(types[layer.type]))
        old.bottom.extend(layer.bottom)
        old.top.extend(layer.top)
        for field in ("convolution_param", "pooling_param", "inner_product_param", "data_param", "transform_param",
                      "accuracy_param", "loss_param"):
            if layer.HasField(field):
                getattr(old, field).CopyFrom(getattr(layer, field))
        for rule in layer.include:
            old.include.add().CopyFrom(rule)
        for blob in layer.blobs:
            dims = list(blob.shape.dim)
            legacy = [1] * (4 - len(dims)) + dims
            check(len(legacy) == 4, f"{layer.name}: a blob of {len(dims)} axes")
            new = old.blobs.add(num=legacy[0], channels=legacy[1], height=legacy[2], width=legacy[3])
            new.data.extend(blob.data)
    path = os.path.join(ctx.tmp, "lenet_v1.caffemodel")
    with open(path, "wb") as f:
        f.write(v1.SerializeToString())
    return path


def upgrade_binary(ctx):
    sources = []
    for stem, path in inputs(ctx):
        binary = os.path.join(ctx.tmp, stem + ".in.caffemodel")
        with open(binary, "wb") as f:
            f.write(parse_text(ctx, read(path, "r")).SerializeToString())
        sources.append((stem, binary))
    sources.append(("lenet_v1_with_weights", v1_lenet(ctx)))
    sources.append(("lenet_iter_10000", os.path.join(ctx.data, "lenet_iter_10000.caffemodel")))
    for stem, path in sources:
        upgrade_both_ways(ctx, stem, path, binary=True)
    print(f"{len(sources)} nets: cblob's binary upgrade is Caffe's message and bytes")


def compile_peer(ctx):
    """tests/formats/caffe_peer.cpp against the fetched libcaffe, kept in the work folder."""
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx is None:
        skip("no C++ compiler (scripts/setup.sh installs g++)")
    source = os.path.join(ctx.source, "tests", "formats", "caffe_peer.cpp")
    os.makedirs(ctx.work, exist_ok=True)
    peer = os.path.join(ctx.work, "caffe_peer")
    stamp = os.path.join(ctx.caffe_dir, "complete")
    if (os.path.exists(peer) and os.path.getmtime(peer) > os.path.getmtime(source)
            and os.path.getmtime(peer) > os.path.getmtime(stamp)):
        return peer
    root = os.path.join(ctx.caffe_dir, "root")
    lib = os.path.join(root, "usr", "lib", "x86_64-linux-gnu")
    command = [cxx, "-O1", "-std=c++14", "-DCPU_ONLY", f"-I{ctx.caffe_dir}/include", f"-I{root}/usr/include",
               source, "-o", peer + ".tmp", f"{lib}/libcaffe.so.1.0.0", f"{lib}/libprotobuf.so.23", f"{lib}/libglog.so.0",
               f"-Wl,-rpath-link,{lib}:{root}/usr/lib"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise Failure(f"caffe_peer.cpp does not compile against Caffe:\n{' '.join(command)}\n{result.stderr[-4000:]}")
    os.replace(peer + ".tmp", peer)
    return peer


def caffe_blobs(ctx, peer, net, weights, stem):
    """{(layer, index): float32 array} as Caffe holds them after loading WEIGHTS into NET."""
    import numpy
    out = os.path.join(ctx.tmp, stem + ".blobs")
    os.mkdir(out)
    result = subprocess.run([peer, "load", net, weights, out], capture_output=True, text=True, env=ctx.caffe_env)
    if result.returncode != 0:
        raise Failure(f"Caffe did not load {stem} (caffe_peer exited {result.returncode}):\n{result.stderr[-3000:]}")
    blobs = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        layer, index, shape = parts[0], int(parts[1]), [int(d) for d in parts[2:-1]]
        blobs[(layer, index)] = numpy.fromfile(os.path.join(out, f"{layer}.{index}.f32"), dtype="<f4").reshape(shape)
    return blobs


def same_blobs(got, expected, what):
    import numpy
    check(sorted(got) == sorted(expected), f"{what}: Caffe's net has the blobs {sorted(got)}, cblob wrote {sorted(expected)}")
    for key, array in expected.items():
        check(got[key].shape == array.shape, f"{what}: {key[0]}/{key[1]} has shape {got[key].shape} in Caffe, "
              f"{array.shape} in what cblob was given")
        equal = numpy.array_equal(got[key].view("<u4"), numpy.ascontiguousarray(array, dtype="<f4").view("<u4"))
        check(equal, f"{what}: {key[0]}/{key[1]}: Caffe holds other values than cblob was given")


def caffe_loads(ctx):
    try:
        import numpy
    except ImportError:
        skip("NumPy is not installed (scripts/setup.sh installs python3-numpy)")
    peer = compile_peer(ctx)
    net = os.path.join(ctx.source, "tests", "formats", "bvlc_nets", "mnist_lenet.prototxt")
    lenet = os.path.join(ctx.data, "lenet_iter_10000.caffemodel")
    original = caffe_blobs(ctx, peer, net, lenet, "original")
    check(len(original) == 8, f"Caffe's LeNet has {len(original)} parameter blobs, not 8")

    # Weights a user changed in NumPy, written back by cblob from .npz and from .safetensors.
    npz = os.path.join(ctx.tmp, "lenet.npz")
    run(ctx, ["convert", "--quiet", lenet, "-o", npz])
    with numpy.load(npz) as archive:
        tuned = {key: archive[key] for key in archive.files}
    rng = numpy.random.default_rng(26)
    changed = {}
    for key, array in tuned.items():
        layer, index = key.rsplit("/", 1)
        value = (array * numpy.float32(0.5) + rng.standard_normal(array.shape).astype(numpy.float32)).astype("<f4")
        value.flat[0] = numpy.float32(-0.0)  # a sign bit alone must survive
        changed[(layer, int(index))] = value
    check(sorted(changed) == sorted(original), f"cblob's .npz of LeNet holds {sorted(changed)}")
    tuned_npz = os.path.join(ctx.tmp, "tuned.npz")
    numpy.savez(tuned_npz, **{f"{layer}/{index}": value for (layer, index), value in changed.items()})
    from_npz = os.path.join(ctx.tmp, "from_npz.caffemodel")
    run(ctx, ["convert", "--quiet", tuned_npz, "--like", lenet, "-o", from_npz])
    same_blobs(caffe_blobs(ctx, peer, net, from_npz, "from_npz"), changed, "from .npz")

    tuned_st = os.path.join(ctx.tmp, "tuned.safetensors")
    run(ctx, ["convert", "--quiet", from_npz, "-o", tuned_st])
    from_st = os.path.join(ctx.tmp, "from_safetensors.caffemodel")
    run(ctx, ["convert", "--quiet", tuned_st, "--like", lenet, "-o", from_st])
    same_blobs(caffe_blobs(ctx, peer, net, from_st, "from_safetensors"), changed, "from .safetensors")

    # cblob's upgrade of a V1 model: Caffe loads the original weights from it.
    upgraded = os.path.join(ctx.tmp, "lenet_v1_upgraded.caffemodel")
    run(ctx, ["upgrade", "--quiet", v1_lenet(ctx), upgraded])
    same_blobs(caffe_blobs(ctx, peer, net, upgraded, "upgraded_v1"), original, "V1 LeNet upgraded by cblob")
    print("Caffe loads cblob's .npz and .safetensors write-backs and its V1 upgrade: 8 blobs, every bit")


CHECKS = {"upgrade_text": upgrade_text, "upgrade_binary": upgrade_binary, "caffe_loads": caffe_loads}


def main():
    parser = check_parser(CHECKS, __doc__)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    find_caffe(args)
    return run_check(CHECKS, args, "cblob-caffe-")


if __name__ == "__main__":
    sys.exit(main())
