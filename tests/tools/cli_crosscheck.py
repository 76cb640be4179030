#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Cross-checks what the cblob program writes against independent readers:

    cli_crosscheck.py CHECK --tool CBLOB --source DIR --data DIR --work DIR

Checks:
    json_schemas          every `cblob inspect --json` output (the sample, the real Caffe files,
                          nets from tests/tools/make_net.py in V2, V1 and V0 with hostile names and
                          every kind of field, a 5,000-layer net, blob files, standard input)
                          against docs/inspect-schema-2.json, and every index.json of `--to npy`
                          against docs/npy-index-schema-1.json (jsonschema, Draft 2020-12)
    exports_numpy         `--to npz` read by numpy.load, equal to the `--to npy` folder's files
                          (through index.json) and to the statistics `inspect --json` gives
    exports_safetensors   `--to safetensors` (and `--names torch`) read by PyPI's safetensors
                          (safetensors.numpy.load_file), equal to the npz; the package comes from
                          the virtual environment tests/formats/model_crosscheck.py makes
    way_back_from_numpy   weights changed in NumPy (np.savez, and a folder of np.save files)
                          go back into the net with `--like`; Python's protobuf reads the result:
                          the changed blobs hold the new values, every other byte is the base's
    codecs_against_peers  one .npy codec for .npy files and .npz members (an int64 member
                          converts with --dtype as a .npy file does); an npz whose member NumPy
                          refuses for its CRC-32 is refused too; names that are not UTF-8 export
                          as keys NumPy opens; --names torch of a V1 net writes the shapes
                          PyTorch's load_state_dict wants, read back by PyPI's safetensors
    npz_to_pipes          `--to npz` into a FIFO that this process reads as it is written, and
                          into /dev/stdout as a pipe, for the real Caffe nets and the sample:
                          written strictly forward (each member's CRC-32 and sizes in a data
                          descriptor), read by numpy.load, zipfile (CRC-32s checked) and cblob
                          inspect, and the same arrays as the npz written to a regular file
    npz_zip64             npz past zip's 32-bit fields: more than 65,535 members (written to a file
                          and to a pipe), and, through a pipe, a member of more than 4 GiB with a
                          member after it (so sizes, offsets and the directory's place need
                          zip64): read by zipfile (each CRC-32 checked), numpy.load and cblob. The
                          4 GiB tensor comes from a sparse safetensors file and its zeros are kept
                          as holes in the streamed copy: 4 GiB of memory for cblob, little disk
    json_as_before        `inspect --json`, `--shapes --json` and `--params` of the real Caffe files,
                          the sample and nets from make_net.py (V2, V1, V0; parameters of every
                          kind, and unknown fields everywhere) give the bytes the renderer before
                          issue 32's streaming writer gave (SHA-256 in tests/tools/json_as_before.txt,
                          written by the build of main at 80fe37a): the layer JSON is now written
                          as a stream over the layer's bytes, and must not have changed. One
                          difference is by design: groups at a layer's top level, which the old
                          renderer dropped, are listed as unknown fields (wire type 3); for nets
                          holding them the comparison leaves those entries out

Exits 77 (skipped) with a reason when NumPy, jsonschema, protobuf or safetensors cannot be had.
"""
import argparse
import importlib.util
import json
import math
import os
import shutil
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


try:
    import numpy as np
except ImportError:
    skip("NumPy is not installed (scripts/setup.sh installs python3-numpy)")


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- running cblob and the generator ---------------------------------------------------------

def run(args, ctx, expect=0, stdin=None):
    result = subprocess.run([ctx.tool] + args, capture_output=True, stdin=stdin)
    if expect is not None and result.returncode != expect:
        raise Failure(f"cblob {' '.join(args)} exited {result.returncode}, expected {expect}: "
                      f"{result.stderr.decode(errors='replace')}")
    return result


def make_net(ctx, options, name):
    path = os.path.join(ctx.work, name)
    subprocess.run([sys.executable, os.path.join(ctx.source, "tests", "tools", "make_net.py")] + options.split() + [path],
                   check=True)
    return path


def inspect_json(ctx, path, stdin=None):
    out = run(["inspect", "--json", path], ctx, stdin=stdin).stdout
    check(all(b == 10 or 32 <= b < 127 for b in out), f"inspect --json {path}: output is not ASCII")
    return json.loads(out)


def to_npy(ctx, path, name):
    folder = os.path.join(ctx.work, name)
    run(["convert", path, "--to", "npy", folder], ctx)
    with open(os.path.join(folder, "index.json"), encoding="utf-8") as f:
        return folder, json.load(f)


def npy_arrays(folder, index):
    """{(layer_index, blob, part): array} of a --to npy folder."""
    return {(e["layer_index"], e["blob"], e["part"]): np.load(os.path.join(folder, e["file"])) for e in index["files"]}


# ---- checks ------------------------------------------------------------------------------------

def json_schemas(ctx):
    try:
        import jsonschema
    except ImportError:
        skip("python3-jsonschema is not installed (scripts/setup.sh installs it)")
    validators = {}
    for name in ("inspect-schema-2.json", "npy-index-schema-1.json"):
        with open(os.path.join(ctx.source, "docs", name), encoding="utf-8") as f:
            validators[name] = jsonschema.Draft202012Validator(json.load(f))

    def validate(doc, schema, what):
        errors = sorted(validators[schema].iter_errors(doc), key=lambda e: list(e.path))
        check(not errors, f"{what}: {errors[0].message if errors else ''} at {list(errors[0].path) if errors else ''}")

    inputs = [os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel")]
    for options in ("--format v2 --all --layers 120", "--format v1 --all --layers 80 --seed 2",
                    "--format v0 --all --layers 60 --seed 3", "--all --layers 5000 --seed 4 --max-values 4",
                    "--tiny --layers 2000", "--blobs 0 --empty-blobs 8 --layers 50"):
        inputs.append(make_net(ctx, options, f"net{len(inputs)}.caffemodel"))
    if os.path.isdir(ctx.data):
        inputs += [os.path.join(ctx.data, n) for n in sorted(os.listdir(ctx.data)) if n.endswith((".caffemodel", ".binaryproto"))]
    else:
        print(f"(the Caffe files folder {ctx.data} is absent: checking the sample and generated nets only)")
    np.save(os.path.join(ctx.work, "a.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.save(os.path.join(ctx.work, "b.npy"), np.arange(3, dtype=np.int32))
    for name, npys in (("blob", ["a.npy"]), ("vector", ["a.npy", "b.npy"])):
        out = os.path.join(ctx.work, f"{name}.binaryproto")
        run(["convert"] + [os.path.join(ctx.work, n) for n in npys] + ["--to", "binaryproto", out], ctx)
        inputs.append(out)
    layers = 0
    for path in inputs:
        doc = inspect_json(ctx, path)
        validate(doc, "inspect-schema-2.json", path)
        layers += len(doc["layers"])
        if len(doc["layers"]) > 1000:
            continue  # thousands of files: the tools_files suite converts those
        # A folder's name that names no format (a name ending .caffemodel would be refused).
        npy_folder = "npy_" + os.path.basename(path).replace(".", "_")
        _, index = to_npy(ctx, path, npy_folder)
        validate(index, "npy-index-schema-1.json", f"{path}: index.json")
        shutil.rmtree(os.path.join(ctx.work, npy_folder))
    with open(inputs[0], "rb") as f:
        validate(inspect_json(ctx, "-", stdin=f), "inspect-schema-2.json", "standard input")
    print(f"{len(inputs)} files ({layers} layers) follow inspect-schema-2.json; their index.json files npy-index-schema-1.json")


def exports_numpy(ctx):
    net = make_net(ctx, "--format v2 --all --layers 200 --seed 5 --max-values 2000", "net.caffemodel")
    folder, index = to_npy(ctx, net, "npy")
    arrays = npy_arrays(folder, index)
    doc = inspect_json(ctx, net)
    npz = os.path.join(ctx.work, "net.npz")
    run(["convert", net, "--to", "npz", npz], ctx)
    # Keys as the library names them: <layer>/<index>, <layer>@<layer index>/... for a repeated name.
    seen, checked = set(), 0
    with np.load(npz) as archive:
        keys = set(archive.keys())
        for i, layer in enumerate(doc["layers"]):
            prefix = layer["name"] if layer["name"] not in seen else f"{layer['name']}@{i}"
            seen.add(layer["name"])
            if "\ufffd" in prefix:
                continue  # zip names are bytes: numpy decodes them its own way
            for j, blob in enumerate(layer["blobs"]):
                got = archive[f"{prefix}/{j}"]
                want = arrays[(i, j, "data")]
                check(got.dtype == want.dtype and got.shape == tuple(blob["shape"]) and np.array_equal(got, want),
                      f"{prefix}/{j}: npz and npy differ")
                total = got.astype(np.float64).sum()
                check(math.isclose(total, blob["sum"], rel_tol=1e-12, abs_tol=1e-9), f"{prefix}/{j}: sum {total} vs {blob['sum']}")
                if blob["has_diff"]:
                    check(np.array_equal(archive[f"{prefix}/{j}/diff"], arrays[(i, j, "diff")]), f"{prefix}/{j}/diff")
                checked += 1
        check(checked > 100 and len(keys) >= checked, f"only {checked} arrays checked of {len(keys)}")
    print(f"{checked} npz arrays agree with the .npy folder and inspect's statistics")


def exports_safetensors(ctx):
    crosscheck = load_module(os.path.join(ctx.source, "tests", "formats", "model_crosscheck.py"), "model_crosscheck")
    crosscheck.ensure_safetensors(ctx.home, ctx.work)
    from safetensors.numpy import load_file
    net = make_net(ctx, "--format v1 --doubles --diffs --layers 80 --seed 6 --max-values 3000", "net.caffemodel")
    folder, index = to_npy(ctx, net, "npy")
    arrays = npy_arrays(folder, index)
    path = os.path.join(ctx.work, "net.safetensors")
    run(["convert", net, "--to", "safetensors", path], ctx)
    tensors = load_file(path)
    for entry in index["files"]:
        key = f"{entry['layer']}.{entry['blob']}" + (".diff" if entry["part"] == "diff" else "")
        want = arrays[(entry["layer_index"], entry["blob"], entry["part"])]
        check(key in tensors and np.array_equal(tensors[key], want) and tensors[key].dtype == want.dtype,
              f"safetensors reads {key} differently")
    # PyTorch's names: a Convolution's blobs are weight and bias; the unmapped layers are said.
    torch = os.path.join(ctx.work, "torch.safetensors")
    result = run(["convert", net, "--names", "torch", "--to", "safetensors", torch], ctx)
    named = load_file(torch)
    doc = inspect_json(ctx, net)
    for layer in doc["layers"]:
        if layer["type"] == "CONVOLUTION" and len(layer["blobs"]) == 2:
            check(f"{layer['name']}.weight" in named and f"{layer['name']}.bias" in named, f"{layer['name']}: torch names")
    stderr = result.stderr.decode()
    check("--names torch:" in stderr and "keep <layer>.<index> keys" in stderr, f"unmapped layers not said: {stderr!r}")
    print(f"{len(index['files'])} tensors agree with safetensors.numpy.load_file; --names torch names convolutions")


def way_back_from_numpy(ctx):
    formats = load_module(os.path.join(ctx.source, "tests", "formats", "crosscheck.py"), "crosscheck")
    os.makedirs(os.path.join(ctx.work, "protos"))
    protos = formats.compile_protos(ctx.source, os.path.join(ctx.work, "protos"))
    base = os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel")
    with open(base, "rb") as f:
        base_bytes = f.read()
    npz = os.path.join(ctx.work, "w.npz")
    run(["convert", base, "--to", "npz", npz], ctx)
    with np.load(npz) as archive:
        weights = {k: archive[k] for k in archive.keys()}
    weights["conv1/0"] = weights["conv1/0"] * 2
    weights["ip2/1"] = np.arange(10, dtype=np.float32)
    np.savez(npz, **weights)
    folder = os.path.join(ctx.work, "by_hand")
    os.mkdir(folder)
    for key, value in weights.items():  # a folder as a user writes it: <layer>_<index>.npy, no index.json
        layer, index = key.split("/")
        np.save(os.path.join(folder, f"{layer}_{index}.npy"), value)
    for weights_path in (npz, folder):
        out = os.path.join(ctx.work, "back.caffemodel")
        # A folder without index.json is read by its files' names only when asked: an interrupted
        # conversion leaves no index.json too.
        by_name = ["--npy-names"] if weights_path == folder else []
        run(["convert", weights_path] + by_name + ["--like", base, "--to", "caffemodel", out], ctx)
        with open(out, "rb") as f:
            back = f.read()
        net = protos["caffe_packed"].NetParameter.FromString(back)
        layers = {layer.name: layer for layer in net.layer}
        check(np.array_equal(np.array(layers["conv1"].blobs[0].data, dtype=np.float32).reshape(4, 1, 3, 3),
                             weights["conv1/0"]), "conv1/0 was not replaced")
        check(list(layers["ip2"].blobs[1].data) == list(range(10)), "ip2/1 was not replaced")
        # Only the changed values' bytes differ: the same length, and equal outside them.
        check(len(back) == len(base_bytes), "the net's size changed")
        differing = sum(a != b for a, b in zip(back, base_bytes))
        check(0 < differing <= 4 * (36 + 10), f"{differing} bytes differ")
    print("weights changed in NumPy come back into the net; everything else stays byte for byte")


def codecs_against_peers(ctx):
    # An int64 member (NumPy's default integer type), as a .npy file and inside an .npz.
    labels = np.array([0, 1, 7, -3], dtype=np.int64)
    npz = os.path.join(ctx.work, "labels.npz")
    np.savez(npz, **{"fc/0": labels})
    npy = os.path.join(ctx.work, "labels.npy")
    np.save(npy, labels)
    for path in (npz, npy):
        refused = run(["convert", path, "-o", os.path.join(ctx.work, "x.safetensors" if path == npz else "x.binaryproto")],
                      ctx, expect=2).stderr.decode()
        check("int64 values (NumPy's default integer type)" in refused, f"{path}: {refused!r}")
    out = os.path.join(ctx.work, "labels.safetensors")
    run(["convert", npz, "--dtype", "int32", "-o", out], ctx)
    doc = inspect_json(ctx, out)
    blob = doc["layers"][0]["blobs"][0]
    check(blob["dtype"] == "int32" and blob["sum"] == 5 and blob["shape"] == [4], f"converted member: {blob}")
    # A flipped data byte: NumPy raises BadZipFile on the member's CRC-32; cblob refuses the file.
    corrupt = os.path.join(ctx.work, "corrupt.npz")
    np.savez(corrupt, **{"fc/0": np.arange(64, dtype=np.float32)})
    with open(corrupt, "r+b") as f:
        data = bytearray(f.read())
        at = data.index(b"PK\x01\x02") - 8  # inside the member's values
        data[at] ^= 0x10
        f.seek(0)
        f.write(data)
    import zipfile
    try:
        with np.load(corrupt) as archive:
            archive["fc/0"]
        check(False, "NumPy read a corrupt member")
    except zipfile.BadZipFile:
        pass
    refused = run(["inspect", corrupt], ctx, expect=2).stderr.decode()
    check("CRC" in refused, f"corrupt npz: {refused!r}")
    # Hostile names (bytes that are not UTF-8 among them) export as keys NumPy opens.
    net = make_net(ctx, "--names hostile --layers 60 --seed 23 --blobs 1 --max-values 4", "hostile.caffemodel")
    exported = os.path.join(ctx.work, "hostile.npz")
    result = run(["convert", net, "-o", exported], ctx, expect=None)
    if result.returncode == 0:
        with np.load(exported) as archive:
            check(len(archive.files) > 0 and all(archive[k] is not None for k in archive.files), "numpy.load")
    else:  # two layers whose keys would be one: refused, never one of them dropped
        check("would both be exported as key" in result.stderr.decode(), result.stderr.decode())
    # PyTorch's shapes for a V1 net's InnerProduct (legacy 4-D (1, 1, out, in) in the file).
    crosscheck = load_module(os.path.join(ctx.source, "tests", "formats", "model_crosscheck.py"), "model_crosscheck")
    crosscheck.ensure_safetensors(ctx.home, ctx.work)
    from safetensors.numpy import load_file
    net = make_net(ctx, "--format v1 --layers 40 --seed 5 --blobs 2 --max-values 300", "v1.caffemodel")
    torch = os.path.join(ctx.work, "torch.safetensors")
    run(["convert", net, "--names", "torch", "-o", torch], ctx)
    tensors = load_file(torch)
    doc = inspect_json(ctx, net)
    checked = 0
    for layer in doc["layers"]:
        if layer["type"] == "INNER_PRODUCT" and len(layer["blobs"]) == 2:
            for blob, suffix, rank in ((layer["blobs"][0], ".weight", 2), (layer["blobs"][1], ".bias", 1)):
                want = list(blob["shape"])  # Caffe's legacy leading 1s dropped down to PyTorch's rank
                while len(want) > rank and want[0] == 1:
                    want = want[1:]
                got = tensors[layer["name"] + suffix].shape
                check(list(got) == want, f"{layer['name']}{suffix}: {got}, want {want} (file {blob['shape']})")
                checked += len(blob["shape"]) > rank and blob["shape"][0] == 1
    # And the way back takes PyTorch's shapes for the legacy ones.
    back = os.path.join(ctx.work, "back.caffemodel")
    run(["convert", torch, "--like", net, "-o", back], ctx)
    print(f"int64 members convert as .npy files do; corrupt members refused as NumPy refuses them; "
          f"{checked} V1 InnerProduct blobs with legacy leading 1s in PyTorch's shapes, and back")


def read_stream(net, ctx, how):
    """The bytes of `cblob convert NET --to npz` into a FIFO read as it is written, or /dev/stdout."""
    import threading
    if how == "stdout":
        return run(["convert", net, "--to", "npz", "/dev/stdout"], ctx).stdout
    fifo = os.path.join(ctx.work, "stream.npz")
    os.mkfifo(fifo, 0o600)
    try:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        keeper = os.open(fifo, os.O_WRONLY)  # the reader sees the end once cblob and we close
        os.set_blocking(reader, True)
        pieces = []

        def drain():
            while True:
                piece = os.read(reader, 1 << 16)
                if not piece:
                    return
                pieces.append(piece)

        thread = threading.Thread(target=drain)
        thread.start()
        try:
            run(["convert", net, "--to", "npz", fifo], ctx)
        finally:
            os.close(keeper)
            thread.join(60)
            os.close(reader)
        check(not thread.is_alive(), f"{net}: the FIFO's reader never saw the end")
        check(os.path.exists(fifo) and not os.path.isfile(fifo), f"{net}: the FIFO was replaced")
        return b"".join(pieces)
    finally:
        os.unlink(fifo)


def npz_to_pipes(ctx):
    import io
    import stat
    import zipfile
    nets = sorted(os.path.join(ctx.data, name) for name in os.listdir(ctx.data) if name.endswith(".caffemodel"))
    nets.append(os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel"))
    check(len(nets) >= 2, f"no real Caffe nets in {ctx.data}")
    checked = 0
    for net in nets:
        regular = os.path.join(ctx.work, "regular.npz")
        run(["convert", net, "--to", "npz", regular], ctx)
        with np.load(regular) as archive:
            want = {key: archive[key] for key in archive.files}
        for how in ("fifo", "stdout"):
            data = read_stream(net, ctx, how)
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                check(archive.testzip() is None, f"{net} through {how}: a member's CRC-32 is wrong")
                infos = archive.infolist()
                check(infos and all(info.flag_bits & 8 and info.compress_type == zipfile.ZIP_STORED for info in infos),
                      f"{net} through {how}: members not stored with data descriptors")
            # cblob reads it back too: its reader, unlike zipfile, refuses bytes after the end
            # record (a "wrote ..." line printed into the output, say).
            streamed = os.path.join(ctx.work, "streamed.npz")
            with open(streamed, "wb") as f:
                f.write(data)
            check(inspect_json(ctx, streamed)["layers"] == inspect_json(ctx, regular)["layers"],
                  f"{net} through {how}: cblob inspect reads another model")
            with np.load(io.BytesIO(data)) as archive:
                check(sorted(archive.files) == sorted(want), f"{net} through {how}: other members")
                for key, array in want.items():
                    got = archive[key]
                    check(got.dtype == array.dtype and np.array_equal(got, array), f"{net} through {how}: {key} differs")
                    checked += 1
    # Standard output redirected to a file that holds something else (`>> log`): written through,
    # after what was there, with the bytes the pipe got; not refused as a file to replace.
    appended = os.path.join(ctx.work, "appended.log")
    with open(appended, "wb") as f:
        f.write(b"what the shell wrote first\n")
    with open(appended, "ab") as f:
        result = subprocess.run([ctx.tool, "convert", nets[0], "--to", "npz", "/dev/stdout"], stdout=f,
                                stderr=subprocess.PIPE)
    check(result.returncode == 0, f"convert --to npz /dev/stdout >> a log: {result.stderr.decode(errors='replace')}")
    with open(appended, "rb") as f:
        check(f.read() == b"what the shell wrote first\n" + read_stream(nets[0], ctx, "stdout"),
              "/dev/stdout appended to a log: not the log's line followed by the streamed npz")
    print(f"{checked} arrays streamed into FIFOs and pipes agree with the regular files' npz")

def write_safetensors(path, tensors):
    """A safetensors file of float32 tensors [(name, count, {index: value})], every other value 0;
    the zeros are left as holes, so a tensor of 4 GiB costs no disk."""
    import struct
    header, at = {}, 0
    for name, count, _ in tensors:
        header[name] = {"dtype": "F32", "shape": [count], "data_offsets": [at, at + 4 * count]}
        at += 4 * count
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        start, at = f.tell(), 0
        for _, count, values in tensors:
            for index, value in sorted(values.items()):
                f.seek(start + at + 4 * index)
                f.write(struct.pack("<f", value))
            at += 4 * count
        f.truncate(start + at)


def stream_to_sparse_file(args, ctx, path):
    """Runs cblob ARGS with standard output a pipe, copying what comes out into PATH with runs of
    zero bytes left as holes (as `cp --sparse=always` does)."""
    import fcntl
    process = subprocess.Popen([ctx.tool] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        fcntl.fcntl(process.stdout.fileno(), 1031, 1 << 20)  # F_SETPIPE_SZ: fewer, larger reads
    except OSError:
        pass
    zeros = bytes(1 << 20)
    with open(path, "wb") as f:
        while True:
            piece = os.read(process.stdout.fileno(), 1 << 20)
            if not piece:
                break
            if piece == zeros[:len(piece)]:
                f.seek(len(piece), os.SEEK_CUR)
            else:
                f.write(piece)
        f.truncate(f.tell())
    error = process.stderr.read()
    check(process.wait() == 0, f"cblob {' '.join(args)} exited {process.returncode}: {error.decode(errors='replace')}")


def npz_zip64(ctx):
    import zipfile
    # 1. More members than a zip's 16-bit count holds: the end record's count is in the zip64 end
    #    record, found through its locator.
    many = 70_000
    st = os.path.join(ctx.work, "many.safetensors")
    write_safetensors(st, [(f"t{i:05d}.0", 1, {0: float(i)}) for i in range(many)])
    regular = os.path.join(ctx.work, "many.npz")
    run(["convert", st, "--to", "npz", regular], ctx)
    streamed = os.path.join(ctx.work, "many_streamed.npz")
    with open(streamed, "wb") as f:
        f.write(run(["convert", st, "--to", "npz", "/dev/stdout"], ctx).stdout)
    for path in (regular, streamed):
        with open(path, "rb") as f:
            check(b"PK\x06\x06" in f.read()[-200:], f"{path}: no zip64 end record for {many} members")
        with zipfile.ZipFile(path) as archive:
            check(len(archive.infolist()) == many, f"{path}: zipfile finds {len(archive.infolist())} members")
            check(archive.testzip() is None, f"{path}: a member's CRC-32 is wrong")
        with np.load(path) as archive:
            check(len(archive.files) == many, f"{path}: numpy.load finds {len(archive.files)} members")
            for i in (0, 1, 65_534, 65_535, 65_536, many - 1):
                got = archive[f"t{i:05d}/0"]
                check(got.dtype == np.float32 and got.tolist() == [float(i)], f"{path}: t{i:05d} holds {got}")
        check(len(inspect_json(ctx, path)["layers"]) == many, f"cblob inspect {path}: not {many} layers")
    # 2. A member of more than 4 GiB through a pipe, and one after it: its size, the next one's
    #    offset and the central directory's place all need zip64 fields (and the data descriptor
    #    its 8-byte sizes).
    big = (1 << 30) + 1
    st = os.path.join(ctx.work, "big.safetensors")
    write_safetensors(st, [("before.0", 3, {0: 1.0, 1: 2.0, 2: 3.0}), ("big.0", big, {0: 1.5, big - 1: 2.5}),
                           ("after.0", 10, {i: float(i) for i in range(10)})])
    streamed = os.path.join(ctx.work, "big_streamed.npz")
    stream_to_sparse_file(["convert", st, "--to", "npz", "/dev/stdout"], ctx, streamed)
    os.unlink(st)
    check(os.path.getsize(streamed) > 4 * big, f"{streamed}: only {os.path.getsize(streamed)} bytes")
    with zipfile.ZipFile(streamed) as archive:
        infos = {info.filename: info for info in archive.infolist()}
        check(sorted(infos) == ["after/0.npy", "before/0.npy", "big/0.npy"], f"members {sorted(infos)}")
        check(infos["big/0.npy"].file_size > 4 * big and infos["after/0.npy"].header_offset > 1 << 32,
              f"sizes and offsets as read: {[(i.filename, i.file_size, i.header_offset) for i in infos.values()]}")
        # Read whole through zipfile, which checks the CRC-32 at the end (BadZipFile otherwise).
        with archive.open("big/0.npy") as member:
            version = np.lib.format.read_magic(member)
            shape, _, dtype = np.lib.format._read_array_header(member, version)
            check(shape == (big,) and dtype == np.float32, f"big/0: shape {shape}, dtype {dtype}")
            first, size, last = member.read(4), 4, b""
            while True:
                piece = member.read(1 << 24)
                if not piece:
                    break
                size += len(piece)
                last = (last + piece)[-4:]
        check(size == 4 * big, f"big/0: {size} bytes of values")
        check(np.frombuffer(first + last, np.float32).tolist() == [1.5, 2.5], "big/0: first and last values")
    with np.load(streamed) as archive:
        check(archive["before/0"].tolist() == [1.0, 2.0, 3.0], "before/0 differs")
        check(archive["after/0"].tolist() == [float(i) for i in range(10)], "after/0 differs")
    shapes = {layer["name"]: [blob["shape"] for blob in layer["blobs"]]
              for layer in json.loads(run(["inspect", "--shapes", "--json", streamed], ctx).stdout)["layers"]}
    check(shapes == {"before": [[3]], "big": [[big]], "after": [[10]]}, f"cblob inspect --shapes: {shapes}")
    print(f"{many} members to a file and a pipe, and a {4 * big:,}-byte member through a pipe, read back")


def json_as_before_outputs(ctx):
    """{(mode, name): output bytes} of every case of json_as_before; groups at a layer's top level
    left out of the outputs of nets that hold them (`normalise`)."""
    inputs = {os.path.basename(p): p for p in
              [os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel")] +
              [os.path.join(ctx.data, f) for f in sorted(os.listdir(ctx.data)) if f.endswith((".caffemodel", ".binaryproto"))]}
    normalised = set()
    for fmt in ("v2", "v1", "v0"):
        for seed in (1, 2, 3):
            name = f"{fmt}_{seed}_structure"
            inputs[name] = make_net(ctx, f"--format {fmt} --seed {seed} --structure --layers 40", name)
            name = f"{fmt}_{seed}_all"
            inputs[name] = make_net(ctx, f"--format {fmt} --seed {seed} --all --layers 40", name)
            normalised.add(name)
    outputs = {}
    for name, path in inputs.items():
        for mode in ("--json", "--shapes --json", "--params"):
            # run beside the file, named by its base name: the output holds the name as given
            result = subprocess.run([os.path.abspath(ctx.tool), "inspect", "--quiet"] + mode.split() + [os.path.basename(path)],
                                    capture_output=True, cwd=os.path.dirname(path))
            check(result.returncode == 0, f"inspect {mode} {name}: exit {result.returncode}: {result.stderr!r}")
            out = result.stdout
            if name in normalised and mode != "--params":
                out = normalise(out)
            elif name in normalised:
                continue  # the table's parameter lines hold the groups too; the JSON covers them
            outputs[(mode, name)] = out
    return outputs


def normalise(out):
    """The JSON with the unknown fields of wire type 3 (groups) of each layer's params left out,
    dumped again (the old output, which has none, compares the same way)."""
    doc = json.loads(out)
    for layer in doc["layers"]:
        unknown = layer["params"].get("unknown_fields")
        if unknown is not None:
            kept = [e for e in unknown if e["wire_type"] != 3]
            if kept:
                layer["params"]["unknown_fields"] = kept
            else:
                del layer["params"]["unknown_fields"]
    return json.dumps(doc).encode()


def json_as_before(ctx):
    import hashlib
    expected = {}
    with open(os.path.join(ctx.source, "tests", "tools", "json_as_before.txt"), encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                digest, name, mode = line.rstrip("\n").split("  ", 2)
                expected[(mode, name)] = digest
    outputs = json_as_before_outputs(ctx)
    check(set(outputs) == set(expected), f"cases differ from the record: {sorted(set(outputs) ^ set(expected))}")
    changed = [f"inspect {mode} {name}" for (mode, name), out in sorted(outputs.items())
               if hashlib.sha256(out).hexdigest() != expected[(mode, name)]]
    check(not changed, f"{len(changed)} of {len(outputs)} outputs changed: {', '.join(changed)}")
    print(f"{len(outputs)} outputs as before")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=["json_schemas", "exports_numpy", "exports_safetensors", "way_back_from_numpy",
                                          "codecs_against_peers", "npz_to_pipes", "npz_zip64", "json_as_before",
                                          "json_as_before_record"])
    parser.add_argument("--tool", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    args.home = args.work  # the safetensors virtual environment stays there between runs
    scratch = args.work = tempfile.mkdtemp(dir=args.home)
    try:
        if args.check == "json_as_before_record":  # writes the record with the tool given (main's build)
            import hashlib
            for (mode, name), out in sorted(json_as_before_outputs(args).items()):
                print(f"{hashlib.sha256(out).hexdigest()}  {name}  {mode}")
            return
        globals()[args.check](args)
    except Failure as e:
        print(f"FAILED: {e}")
        sys.exit(1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
