#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Cross-checks cblob's models against independent readers, through ctypes over libcblob.so:

    model_crosscheck.py CHECK --lib LIBCBLOB --source DIR --work DIR

Checks:
    structure_and_params   nets from tests/tools/make_net.py (V2, V1, V0; hostile names, unknown
                           fields, structure): every layer's bottoms, tops, phase, rules, param
                           specs and parameters against Python's protobuf with proto/caffe_blobs.proto
                           and proto/caffe_params.proto (Caffe's field numbers); every layer's JSON
                           against docs/inspect-schema-2.json ($defs/layer)
    npz_numpy              cblob's .npz read by numpy.load; numpy.savez's read by cblob
    safetensors_both_ways  cblob's .safetensors read by the safetensors package (PyPI), and its
                           files read by cblob. The package comes from a virtual environment the
                           check makes under --work (venv-safetensors, made once and reused).

Exits 77 (skipped) with a reason when protoc, protobuf, NumPy, jsonschema or (for the last check)
the safetensors package cannot be had.
"""
import argparse
import ctypes
import importlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SKIPPED = 77


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIPPED)


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


# ---- cblob through ctypes ----------------------------------------------------------------------

c_i64p = ctypes.POINTER(ctypes.c_int64)


class Cblob:
    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        lib.cblob_last_error_message.restype = ctypes.c_char_p
        self.ctx = ctypes.c_void_p()
        self.ok(lib.cblob_context_create(ctypes.byref(self.ctx)))

    def ok(self, status):
        if status != 0:
            raise Failure(f"cblob: status {status}: {self.lib.cblob_last_error_message().decode(errors='replace')}")

    def open(self, path):
        model = ctypes.c_void_p()
        self.ok(self.lib.cblob_model_open_file(self.ctx, path.encode(), ctypes.byref(model)))
        return model

    def open_kind(self, function, path):
        model = ctypes.c_void_p()
        self.ok(getattr(self.lib, function)(self.ctx, path.encode(), ctypes.byref(model)))
        return model

    def count(self, function, *args):
        out = ctypes.c_int64()
        self.ok(getattr(self.lib, function)(*args, ctypes.byref(out)))
        return out.value

    def text(self, function, *args):
        out = ctypes.c_char_p()
        self.ok(getattr(self.lib, function)(*args, ctypes.byref(out)))
        return out.value

    def json(self, function, model, layer, flags=0):
        size = ctypes.c_size_t()
        self.ok(getattr(self.lib, function)(model, ctypes.c_int64(layer), flags, None, ctypes.c_size_t(0),
                                            ctypes.byref(size)))
        buffer = ctypes.create_string_buffer(size.value + 1)
        self.ok(getattr(self.lib, function)(model, ctypes.c_int64(layer), flags, buffer, ctypes.c_size_t(size.value + 1),
                                            ctypes.byref(size)))
        return json.loads(buffer.value.decode())

    def layers(self, model):
        return self.count("cblob_model_num_layers", model)

    def strings(self, model, layer, counter, getter):
        n = self.count(counter, model, ctypes.c_int64(layer))
        return [self.text(getter, model, ctypes.c_int64(layer), ctypes.c_int64(i)) for i in range(n)]

    def values(self, model, layer, index, part=0):
        """A blob's values as a NumPy array of its dtype and shape, read without a handle."""
        import numpy as np
        dims = (ctypes.c_int64 * 32)()
        axes = ctypes.c_int32()
        self.ok(self.lib.cblob_model_layer_blob_shape(model, ctypes.c_int64(layer), ctypes.c_int64(index), 32, dims,
                                                      ctypes.byref(axes)))
        dtype = ctypes.c_int32()
        self.ok(self.lib.cblob_model_layer_blob_dtype(model, ctypes.c_int64(layer), ctypes.c_int64(index),
                                                      ctypes.byref(dtype)))
        np_dtype = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint32}[dtype.value]
        shape = tuple(dims[i] for i in range(axes.value))
        out = np.zeros(shape, dtype=np_dtype)
        self.ok(self.lib.cblob_model_layer_blob_read(model, ctypes.c_int64(layer), ctypes.c_int64(index), part,
                                                     ctypes.c_int64(0), ctypes.c_int64(out.size),
                                                     out.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(out.nbytes)))
        return out

    def export(self, function, model, flags, path):
        self.ok(getattr(self.lib, function)(model, flags, path.encode()))


def make_net(source, path, options):
    subprocess.run([sys.executable, os.path.join(source, "tests", "tools", "make_net.py")] + options.split() + [path],
                   check=True)


# ---- the wire format, to hand Python each layer's bytes ----------------------------------------

def read_varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def top_level_layers(data):
    """(field number, payload) of the net's layer fields."""
    at, out = 0, []
    while at < len(data):
        tag, at = read_varint(data, at)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, at = read_varint(data, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            length, at = read_varint(data, at)
            if number in (2, 100):
                out.append(data[at:at + length])
            at += length
        elif wire == 3:  # a group: skip to its end tag
            depth = 1
            while depth:
                inner, at = read_varint(data, at)
                kind = inner & 7
                if kind == 3:
                    depth += 1
                elif kind == 4:
                    depth -= 1
                elif kind == 0:
                    _, at = read_varint(data, at)
                elif kind == 1:
                    at += 8
                elif kind == 5:
                    at += 4
                elif kind == 2:
                    length, at = read_varint(data, at)
                    at += length
    return out


# ---- structure and parameters ------------------------------------------------------------------

STRUCTURE = {"v2": {"name", "type", "bottom", "top", "phase", "param", "include", "exclude"},
             "v1": {"name", "type", "bottom", "top", "param", "include", "exclude"}}


def compile_protos(source, folder):
    protoc = shutil.which("protoc")
    if protoc is None:
        skip("protoc is not installed (scripts/setup.sh installs protobuf-compiler)")
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        skip("python3-protobuf is not installed")
    # Names in a file are bytes (hostile ones are not UTF-8, which Python's protobuf refuses in a
    # string field): strings are read as bytes.
    for name in ("caffe_blobs.proto", "caffe_params.proto"):
        with open(os.path.join(source, "proto", name), encoding="utf-8") as f:
            text = f.read().replace("optional string ", "optional bytes ").replace("repeated string ", "repeated bytes ")
        text = text.replace(" base_ = ", " base = ")  # Caffe's name (protobuf-c's C needs base_)
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)
    subprocess.run([protoc, f"-I{folder}", f"--python_out={folder}", os.path.join(folder, "caffe_blobs.proto"),
                    os.path.join(folder, "caffe_params.proto")], check=True)
    sys.path.insert(0, folder)
    return importlib.import_module("caffe_params_pb2")


def float_equal(json_value, value):
    import numpy as np
    if isinstance(json_value, str):
        return {"nan": np.isnan(value), "inf": value == np.inf, "-inf": value == -np.inf}[json_value]
    return np.float32(json_value) == np.float32(value)


def same_value(field, json_value, value):
    from google.protobuf.descriptor import FieldDescriptor as F
    if field.type == F.TYPE_MESSAGE:
        return isinstance(json_value, dict) and same_message(json_value, value, set())
    if field.type == F.TYPE_ENUM:
        known = field.enum_type.values_by_number.get(value)
        return json_value == (known.name if known else value)
    if field.type in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return float_equal(json_value, value)
    if field.type == F.TYPE_BYTES:
        return json_value == value.decode("utf-8", "replace")
    return json_value == value


def same_message(rendered, message, leave_out):
    """Every field Python reads is rendered the same, and nothing else is rendered."""
    seen = set()
    for field, value in message.ListFields():
        if field.name in leave_out:
            continue
        seen.add(field.name)
        if field.name not in rendered:
            return False
        if field.label == field.LABEL_REPEATED:
            if len(value) != len(rendered[field.name]) or not all(
                    same_value(field, j, v) for j, v in zip(rendered[field.name], value)):
                return False
        elif not same_value(field, rendered[field.name], value):
            return False
    return set(rendered) - {"unknown_fields"} == seen


def check_layer(cb, model, i, fields, v1, validator):
    layer_json = cb.json("cblob_model_layer_json", model, i)
    errors = sorted(validator.iter_errors(layer_json), key=str)
    check(not errors, f"layer {i}: its JSON does not follow docs/inspect-schema-2.json: {errors[:1]}")
    texts = lambda values: [v.decode("utf-8", "replace") for v in values]  # noqa: E731
    check(layer_json["bottoms"] == texts(fields.bottom), f"layer {i}: bottoms {layer_json['bottoms']} != {fields.bottom}")
    check(cb.strings(model, i, "cblob_model_layer_num_bottoms", "cblob_model_layer_bottom") == list(fields.bottom),
          f"layer {i}: bottoms differ")
    check(layer_json["tops"] == texts(fields.top), f"layer {i}: tops differ")
    check(cb.strings(model, i, "cblob_model_layer_num_tops", "cblob_model_layer_top") == list(fields.top),
          f"layer {i}: tops differ")
    if not v1:
        phase = {0: "TRAIN", 1: "TEST"}.get(fields.phase, fields.phase) if fields.HasField("phase") else None
        check(layer_json["phase"] == phase, f"layer {i}: phase {layer_json['phase']} != {phase}")
    for kind, rules in (("include", fields.include), ("exclude", fields.exclude)):
        check(len(layer_json[kind]) == len(rules), f"layer {i}: {kind} rules differ in number")
        for j, rule in enumerate(rules):
            check(same_message(layer_json[kind][j], rule, set()), f"layer {i}: {kind} rule {j} differs")
            check(cb.count("cblob_model_layer_num_rules", model, ctypes.c_int64(i), 0 if kind == "include" else 1) ==
                  len(rules), f"layer {i}: {kind} count")
    if v1:
        count = max(len(fields.param), len(fields.blobs_lr), len(fields.weight_decay))
    else:
        count = len(fields.param)
        for j, spec in enumerate(fields.param):
            check(same_message(layer_json["param"][j], spec, set()), f"layer {i}: param spec {j} differs")
    check(cb.count("cblob_model_layer_num_param_specs", model, ctypes.c_int64(i)) == count, f"layer {i}: param specs")
    params = cb.json("cblob_model_layer_params_json", model, i)
    check(same_message(params, fields, STRUCTURE["v1" if v1 else "v2"]),
          f"layer {i}: parameters {json.dumps(params)[:300]} differ from Python's {fields}")


def structure_and_params(args):
    try:
        import jsonschema
    except ImportError:
        skip("python3-jsonschema is not installed (scripts/setup.sh installs it)")
    pb = compile_protos(args.source, args.work)
    with open(os.path.join(args.source, "docs", "inspect-schema-2.json"), encoding="utf-8") as f:
        schema = json.load(f)
    layer_schema = dict(schema["$defs"]["layer"], **{"$defs": schema["$defs"]})
    validator = jsonschema.Draft202012Validator(layer_schema)
    cb = Cblob(args.lib)
    checked = 0
    for options in ("--format v2 --all --layers 80", "--format v1 --all --layers 60", "--format v0 --all --layers 40",
                    "--format v2 --structure --layers 80 --seed 7", "--format v1 --structure --unknown --seed 3"):
        path = os.path.join(args.work, "net.caffemodel")
        make_net(args.source, path, options)
        with open(path, "rb") as f:
            layers = top_level_layers(f.read())
        model = cb.open(path)
        check(cb.layers(model) == len(layers), f"{options}: {cb.layers(model)} layers, Python finds {len(layers)}")
        v1 = "v2" not in options
        for i, data in enumerate(layers):
            message = pb.V1LayerParameterFields() if v1 else pb.LayerParameterFields()
            message.ParseFromString(bytes(data))
            check_layer(cb, model, i, message, v1, validator)
            checked += 1
        cb.lib.cblob_model_destroy(model)
    print(f"{checked} layers agree with Python's protobuf and follow the schema")


# ---- npz ---------------------------------------------------------------------------------------

def blobs_of(cb, model):
    """{(layer name bytes, index): values} of every blob."""
    out = {}
    for i in range(cb.layers(model)):
        name = cb.text("cblob_model_layer_name", model, ctypes.c_int64(i))
        for j in range(cb.count("cblob_model_layer_num_blobs", model, ctypes.c_int64(i))):
            out.setdefault((name, j), cb.values(model, i, j))
    return out


def npz_numpy(args):
    try:
        import numpy as np
    except ImportError:
        skip("NumPy is not installed (scripts/setup.sh installs python3-numpy)")
    cb = Cblob(args.lib)
    net = os.path.join(args.work, "net.caffemodel")
    make_net(args.source, net, "--format v2 --doubles --unpacked --layers 60 --max-values 6000 --seed 5")
    model = cb.open(net)
    npz = os.path.join(args.work, "model.npz")
    cb.export("cblob_model_to_npz_file", model, 0, npz)
    expected = blobs_of(cb, model)
    with np.load(npz) as archive:
        keys = set(archive.keys())
        check(len(keys) == len(expected), f"numpy finds {len(keys)} arrays, cblob exported {len(expected)}")
        for (name, index), values in expected.items():
            key = f"{name.decode()}/{index}"
            check(key in keys, f"numpy lacks {key}")
            got = archive[key]
            check(got.dtype == values.dtype and got.shape == values.shape and np.array_equal(got, values),
                  f"{key}: numpy reads {got.dtype}{got.shape}, cblob has {values.dtype}{values.shape}")
    # The other way: numpy.savez (and savez_compressed) read by cblob.
    arrays = {"conv1/0": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "conv1/1": np.array([1.5, -2.0]),
              "fc/0": np.arange(6, dtype=np.int32).reshape(3, 2), "fc/0/diff": np.ones((3, 2), dtype=np.int32)}
    for writer in (np.savez, np.savez_compressed):
        path = os.path.join(args.work, "numpy.npz")
        writer(path, **arrays)
        read = cb.open_kind("cblob_model_open_npz_file", path)
        got = blobs_of(cb, read)
        for key, values in arrays.items():
            if key.endswith("/diff"):
                continue
            layer, index = key.rsplit("/", 1)
            check(np.array_equal(got[(layer.encode(), int(index))], values), f"{writer.__name__}: {key} differs")
        check(np.array_equal(cb.values(read, 1, 0, part=1), arrays["fc/0/diff"]), "the diff differs")
        cb.lib.cblob_model_destroy(read)
    print(f"{len(expected)} arrays agree with numpy.load; numpy.savez and savez_compressed files read back")


# ---- safetensors -------------------------------------------------------------------------------

def ensure_safetensors(home, scratch):
    """Imports safetensors, from a virtual environment under home made for it if needed (the
    check then runs again in it, scratch removed first)."""
    try:
        import safetensors.numpy  # noqa: F401
        return
    except ImportError:
        pass
    import fcntl
    venv = os.path.join(home, "venv-safetensors")
    python = os.path.join(venv, "bin", "python3")
    if os.environ.get("CBLOB_CROSSCHECK_IN_VENV"):
        skip("the safetensors package could not be imported in its virtual environment")
    os.makedirs(home, exist_ok=True)
    # Checks that run at once (ctest -j) share the environment: one makes it while the others wait,
    # and a half-made one (no mark: its maker was stopped) is made again. Without the lock a check
    # found the interpreter of an environment still being made, without pip yet, and skipped.
    with open(os.path.join(home, "venv-safetensors.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        complete = os.path.join(venv, "safetensors-installed")
        if not os.path.exists(complete):
            shutil.rmtree(venv, ignore_errors=True)
            made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], capture_output=True)
            if made.returncode != 0:
                skip(f"cannot make a virtual environment (python3-venv): {made.stderr.decode()[-200:]}")
            installed = subprocess.run([python, "-m", "pip", "install", "--quiet", "safetensors"], capture_output=True)
            if installed.returncode != 0:
                skip(f"pip cannot install safetensors from PyPI: {installed.stderr.decode()[-300:]}")
            open(complete, "w").close()
    os.environ["CBLOB_CROSSCHECK_IN_VENV"] = "1"
    shutil.rmtree(scratch, ignore_errors=True)
    os.execv(python, [python] + sys.argv)


def safetensors_both_ways(args):
    try:
        import numpy as np
    except ImportError:
        skip("NumPy is not installed (scripts/setup.sh installs python3-numpy)")
    ensure_safetensors(args.home, args.work)
    from safetensors.numpy import load_file, save_file
    cb = Cblob(args.lib)
    net = os.path.join(args.work, "net.caffemodel")
    make_net(args.source, net, "--format v1 --doubles --diffs --layers 50 --max-values 5000 --seed 11")
    model = cb.open(net)
    path = os.path.join(args.work, "model.safetensors")
    cb.export("cblob_model_to_safetensors_file", model, 1, path)  # with diffs
    tensors = load_file(path)
    expected = blobs_of(cb, model)
    for (name, index), values in expected.items():
        key = f"{name.decode()}.{index}"
        check(key in tensors and np.array_equal(tensors[key], values) and tensors[key].dtype == values.dtype,
              f"safetensors reads {key} differently")
    with open(path, "rb") as f:
        length = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(length))
    check(header["__metadata__"]["format"] == "V1", "metadata format")
    # The other way: safetensors' own file, with PyTorch names, read by cblob.
    theirs = {"conv.weight": np.arange(12, dtype=np.float32).reshape(3, 4), "conv.bias": np.zeros(3, np.float32),
              "bn.running_mean": np.array([1, 2], np.float64), "bn.running_var": np.array([3, 4], np.float64),
              "bn.num_batches_tracked": np.array(7, np.int64), "fc.0": np.ones((2, 2), np.int32)}
    save_file(theirs, os.path.join(args.work, "theirs.safetensors"), metadata={"name": "theirs"})
    read = cb.open_kind("cblob_model_open_safetensors_file", os.path.join(args.work, "theirs.safetensors"))
    got = blobs_of(cb, read)
    check(np.array_equal(got[(b"conv", 0)], theirs["conv.weight"]) and np.array_equal(got[(b"conv", 1)], theirs["conv.bias"]),
          "conv differs")
    check(np.array_equal(got[(b"bn", 0)], theirs["bn.running_mean"]) and np.array_equal(got[(b"bn", 2)], [1.0]),
          "bn differs (or its scale factor is not 1)")
    check(np.array_equal(got[(b"fc", 0)], theirs["fc.0"]), "fc differs")
    print(f"{len(expected)} tensors agree with safetensors.numpy.load_file; its save_file output reads back")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=["structure_and_params", "npz_numpy", "safetensors_both_ways"])
    parser.add_argument("--lib", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    args.home = args.work  # the virtual environment stays there between runs
    scratch = args.work = tempfile.mkdtemp(dir=args.home)
    try:
        globals()[args.check](args)
    except Failure as e:
        print(f"FAILED: {e}")
        sys.exit(1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
