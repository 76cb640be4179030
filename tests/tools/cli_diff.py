#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`cblob diff A B` (issue 28) on real files and on models changed at test time, its figures
computed here independently with NumPy:

    cli_diff.py CHECK --tool CBLOB --source DIR --data DIR --work DIR

Checks:
    itself             a model against itself (a copy, the same path, through a link): exit 0,
                       "equal", for a .caffemodel, an .npz, a blob file; --quiet prints nothing
    fine_tuned         a few values of one blob changed in NumPy and put back with
                       `convert --like`: exit 1, that blob and only it, with the number of values
                       that differ and the largest absolute and relative differences NumPy finds;
                       --atol / --rtol above them make it equal, below them not
    layer_removed      a layer cut out of the NetParameter's bytes: that layer only is reported,
                       removed (and added with A and B swapped)
    conversions        a .caffemodel against its own `convert` to npz, safetensors (both names)
                       and a .npy folder: equal, the structure said not compared
    shapes_dtypes      a blob reshaped, one of another size, one stored as float64 and one with
                       NaNs: shape and dtype changes reported, values compared where the counts
                       agree, NaN at the same place equal and against a number counted
    parameters         prototxt nets that differ in num_output, a bottom and a param spec: each
                       field reported by its path; a .caffemodel against its own prototxt: equal,
                       the weights said not compared
    mistakes           one file, three, a missing one (named), a folder, - twice, a net against a
                       blob file, a bad tolerance: exit 2 with one line; A and B the same path: 0;
                       a .npy folder without index.json refused, and read with --npy-names
    reopened           a lazily opened side opened again after every layer (the memory bound's
                       mechanism, forced by CBLOB_TOOL_TEST_RELIEVE_BYTES=1) reports the same
    signals            SIGINT and SIGTERM while values are compared: 130 and 143, the output ends
                       with the incomplete line, --json's is no document
    json_output        every --json document of the checks above against docs/diff-schema-1.json;
                       output stopped by a corrupt member read lazily is no document, ends with
                       the incomplete line, exit 2

Exits 77 (skipped) with a reason when NumPy or jsonschema cannot be had.
"""
import argparse
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

INCOMPLETE = b"!! cblob diff: the output above is incomplete: it stopped part-way"


class Context:
    validator = None
    documents = []  # every --json document, validated by json_output


def run(ctx, args, expect=None, stdin=None):
    result = subprocess.run([ctx.tool] + args, capture_output=True, stdin=stdin if stdin is not None else subprocess.DEVNULL)
    if expect is not None and result.returncode != expect:
        raise Failure(f"cblob {' '.join(args)} exited {result.returncode}, expected {expect}:\n"
                      f"{result.stdout.decode(errors='replace')}{result.stderr.decode(errors='replace')}")
    return result


def diff_json(ctx, a, b, expect, *options):
    out = run(ctx, ["diff", "--json", *options, a, b], expect).stdout
    check(all(c == 10 or 32 <= c < 127 for c in out), "diff --json: output is not ASCII")
    doc = json.loads(out)
    check(doc["equal"] == (expect == 0), f"diff {a} {b}: equal is {doc['equal']}, exit {expect}")
    Context.documents.append((f"diff {' '.join(options)} {a} {b}", doc))
    return doc


def path(ctx, name):
    return os.path.join(ctx.work, name)


def lenet(ctx):
    source = os.path.join(ctx.data, "lenet_iter_10000.caffemodel")
    if not os.path.exists(source):
        skip(f"{source} is absent (the real Caffe files: ../shared/data/caffe)")
    return source


def npz_of(ctx, model, name):
    out = path(ctx, name)
    run(ctx, ["convert", "--quiet", model, "-o", out], 0)
    return out


def load_npz(file):
    with np.load(file) as z:
        return {k: z[k] for k in z.files}


def save_npz(file, arrays):
    np.savez(file, **arrays)


# ---- checks ------------------------------------------------------------------------------------

def itself(ctx):
    model = lenet(ctx)
    copy = path(ctx, "copy.caffemodel")
    shutil.copyfile(model, copy)
    link = path(ctx, "link.caffemodel")
    os.symlink(copy, link)
    sample = os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel")
    mean = os.path.join(ctx.data, "cifar10_mean.binaryproto")
    mean_copy = path(ctx, "mean.binaryproto")
    shutil.copyfile(mean, mean_copy)
    npz = npz_of(ctx, model, "lenet.npz")
    for a, b in ((model, copy), (model, model), (copy, link), (sample, sample), (npz, npz), (mean, mean_copy)):
        r = run(ctx, ["diff", a, b], 0)
        lines = r.stdout.decode().splitlines()
        check(lines and lines[-1].startswith("equal"), f"diff {a} {b}: {r.stdout!r}")
        check(r.stderr == b"", f"diff {a} {b} wrote on standard error: {r.stderr!r}")
        r = run(ctx, ["diff", "--quiet", a, b], 0)
        check(r.stdout == b"" and r.stderr == b"", f"diff --quiet {a} {b} printed {r.stdout!r} {r.stderr!r}")
        doc = diff_json(ctx, a, b, 0)
        check(doc["layers"] == [] and doc["blobs"] == [] and doc["net"] == [], f"{a} {b}: {doc}")
    # A copy is compared through and through: every blob and value of lenet.
    doc = diff_json(ctx, model, copy, 0)
    check(doc["summary"]["blobs_compared"] == 8 and doc["summary"]["values_compared"] == 431080,
          f"lenet against its copy: {doc['summary']}")
    check(doc["compared"] == {"structure": True, "values": True, "reason": None}, f"{doc['compared']}")
    same = diff_json(ctx, model, model, 0)
    check(same["compared"]["reason"] is not None and "same file" in same["compared"]["reason"], f"{same['compared']}")


def fine_tune(ctx, changes):
    """lenet with values changed ({key: [(flat index, new value)]}) through NumPy and convert --like."""
    model = lenet(ctx)
    base = load_npz(npz_of(ctx, model, "base.npz"))
    tuned = {k: v.copy() for k, v in base.items()}
    for key, edits in changes.items():
        flat = tuned[key].reshape(-1)
        for index, value in edits:
            flat[index] = value
    tuned_npz = path(ctx, "tuned.npz")
    save_npz(tuned_npz, tuned)
    out = path(ctx, "tuned.caffemodel")
    run(ctx, ["convert", "--quiet", tuned_npz, "--like", model, "-o", out], 0)
    return model, out, base, tuned


def expected_stats(a, b):
    a = a.astype(np.float64).reshape(-1)
    b = b.astype(np.float64).reshape(-1)
    differ = a != b
    abs_diff = np.abs(b - a)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(a != 0, abs_diff / np.abs(a), np.where(differ, np.inf, 0.0))
    return int(differ.sum()), float(abs_diff.max()), float(rel.max())


def close(x, y):
    return x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y))


def fine_tuned(ctx):
    model, tuned, base, new = fine_tune(ctx, {"conv2/0": [(0, 0.25), (17, -1.5), (24999, 3.0)]})
    differing, max_abs, max_rel = expected_stats(base["conv2/0"], new["conv2/0"])
    check(differing == 3, f"the test changed {differing} values, not 3")
    doc = diff_json(ctx, model, tuned, 1)
    check(len(doc["layers"]) == 1, f"expected one layer: {doc['layers']}")
    layer = doc["layers"][0]
    check(layer["name"] == "conv2" and layer["status"] == "changed" and layer["changes"] == [], f"{layer}")
    check(len(layer["blobs"]) == 1 and layer["blobs"][0]["index"] == 0, f"expected blob 0 only: {layer['blobs']}")
    blob = layer["blobs"][0]
    check(blob["differing"] == 3 and blob["nan_mismatches"] == 0, f"{blob}")
    check(close(blob["max_abs_diff"], max_abs), f"max_abs_diff {blob['max_abs_diff']}, NumPy {max_abs}")
    check(close(blob["max_rel_diff"], max_rel), f"max_rel_diff {blob['max_rel_diff']}, NumPy {max_rel}")
    s = doc["summary"]
    check(s["blobs_compared"] == 8 and s["blobs_differing"] == 1 and s["values_differing"] == 3 and
          s["layers_changed"] == 1 and s["layers_removed"] == 0 and s["layers_added"] == 0, f"{s}")
    text = run(ctx, ["diff", model, tuned], 1).stdout.decode()
    check("conv2" in text and "3 of 25000 values differ" in text, f"the text: {text}")
    for other in ("conv1", "ip1", "ip2"):
        check(other not in text.split("+++", 1)[1], f"the text names {other}: {text}")
    check(run(ctx, ["diff", "--quiet", model, tuned], 1).stdout == b"", "--quiet printed")
    # A tolerance above the changes makes them equal; below them it does not.
    diff_json(ctx, model, tuned, 0, "--atol", repr(max_abs * 1.001))
    doc = diff_json(ctx, model, tuned, 1, "--atol", repr(max_abs * 0.999))
    check(doc["layers"][0]["blobs"][0]["differing"] >= 1, f"{doc['layers']}")
    diff_json(ctx, model, tuned, 0, "--rtol", repr(max_rel * 1.001))
    doc = diff_json(ctx, model, tuned, 1, "--rtol", repr(max_rel * 0.999))
    check(doc["atol"] == 0 and close(doc["rtol"], max_rel * 0.999), f"{doc['atol']} {doc['rtol']}")
    # Two blobs of two layers: both, and nothing else.
    model, tuned, base, new = fine_tune(ctx, {"ip1/1": [(3, 0.0)], "ip2/0": [(0, 1e3)]})
    doc = diff_json(ctx, model, tuned, 1)
    found = sorted((l["name"], b["index"], b["differing"]) for l in doc["layers"] for b in l["blobs"])
    check(found == [("ip1", 1, 1), ("ip2", 0, 1)], f"{found}")
    for layer in doc["layers"]:
        key = f"{layer['name']}/{layer['blobs'][0]['index']}"
        _, max_abs, max_rel = expected_stats(base[key], new[key])
        check(close(layer["blobs"][0]["max_abs_diff"], max_abs) and close(layer["blobs"][0]["max_rel_diff"], max_rel),
              f"{key}: {layer['blobs'][0]}, NumPy {max_abs} {max_rel}")


def varint_at(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def fields(data):
    """(number, wire type, start, end, payload start) of each top-level field of a message."""
    i = 0
    while i < len(data):
        start = i
        tag, i = varint_at(data, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, i = varint_at(data, i)
            payload = i
        elif wire == 1:
            payload, i = i, i + 8
        elif wire == 5:
            payload, i = i, i + 4
        elif wire == 2:
            length, payload = varint_at(data, i)
            i = payload + length
        else:
            raise Failure(f"wire type {wire} at {start}")
        yield number, wire, start, i, payload


def without_layer(data, name):
    """The NetParameter's bytes without the layer of that name (V2 field 100, V1 field 2)."""
    for number, wire, start, end, payload in fields(data):
        if number not in (100, 2) or wire != 2:
            continue
        name_field = 1 if number == 100 else 4
        for n, w, s, e, p in fields(data[payload:end]):
            if n == name_field and w == 2 and data[payload:end][p:e] == name.encode():
                return data[:start] + data[end:]
    raise Failure(f"no layer {name}")


def layer_removed(ctx):
    model = lenet(ctx)
    with open(model, "rb") as f:
        data = f.read()
    cut = path(ctx, "cut.caffemodel")
    with open(cut, "wb") as f:
        f.write(without_layer(data, "ip1"))
    doc = diff_json(ctx, model, cut, 1)
    check([(l["name"], l["status"]) for l in doc["layers"]] == [("ip1", "removed")], f"{doc['layers']}")
    check(len(doc["layers"][0]["blobs"]) == 2 and all(b["status"] == "removed" for b in doc["layers"][0]["blobs"]),
          f"{doc['layers'][0]}")
    s = doc["summary"]
    check(s["layers_removed"] == 1 and s["layers_changed"] == 0 and s["layers_added"] == 0 and
          s["blobs_compared"] == 6 and s["blobs_compared_differing"] == 0, f"{s}")
    doc = diff_json(ctx, cut, model, 1)
    check([(l["name"], l["status"]) for l in doc["layers"]] == [("ip1", "added")], f"{doc['layers']}")
    text = run(ctx, ["diff", model, cut], 1).stdout.decode()
    check("removed  ip1" in text and "\nchanged  " not in text and "\nadded  " not in text, f"the text: {text}")
    # The weights alone: an .npz without the layer's keys.
    arrays = load_npz(npz_of(ctx, model, "all.npz"))
    less = path(ctx, "less.npz")
    save_npz(less, {k: v for k, v in arrays.items() if not k.startswith("ip1/")})
    doc = diff_json(ctx, model, less, 1)
    check([(l["name"], l["status"]) for l in doc["layers"]] == [("ip1", "removed")], f"{doc['layers']}")


def conversions(ctx):
    for model in (lenet(ctx), os.path.join(ctx.source, "samples", "tiny_lenet.caffemodel")):
        outputs = [npz_of(ctx, model, "c.npz"), path(ctx, "c.safetensors"), path(ctx, "torch.safetensors"),
                   path(ctx, "folder")]
        run(ctx, ["convert", "--quiet", model, "-o", outputs[1]], 0)
        run(ctx, ["convert", "--quiet", model, "-o", outputs[2], "--names", "torch"], 0)
        run(ctx, ["convert", "--quiet", model, "--to", "npy", "-o", outputs[3]], 0)
        inspected = json.loads(run(ctx, ["inspect", "--json", "--shapes", model], 0).stdout)
        blobs = sum(len(l["blobs"]) for l in inspected["layers"])
        values = sum(b["count"] for l in inspected["layers"] for b in l["blobs"])
        for out in outputs:
            for a, b in ((model, out), (out, model)):
                doc = diff_json(ctx, a, b, 0)
                check(doc["compared"]["structure"] is False and doc["compared"]["values"] is True and
                      "weights only" in doc["compared"]["reason"], f"{a} {b}: {doc['compared']}")
                check(doc["summary"]["blobs_compared"] == blobs and doc["summary"]["values_compared"] == values,
                      f"{a} {b}: {doc['summary']}, inspect says {blobs} blobs, {values} values")
            text = run(ctx, ["diff", model, out], 0).stdout.decode()
            check("weights only" in text and text.splitlines()[-1].startswith("equal"), f"the text: {text}")
        shutil.rmtree(outputs[3])
    # A repeated layer name: the later layer is `<name>@<index>` in the exports, and matches.
    net = path(ctx, "repeated.caffemodel")
    subprocess.run([sys.executable, os.path.join(ctx.source, "tests", "tools", "make_net.py"), "--names", "hostile",
                    "--blobs", "1", "--layers", "40", net], check=True)
    for kind in ("npz", "safetensors"):
        out = path(ctx, f"repeated.{kind}")
        run(ctx, ["convert", "--quiet", net, "-o", out], 0)
        doc = diff_json(ctx, net, out, 0)
        check(doc["summary"]["blobs_compared"] >= 40, f"{kind}: {doc['summary']}")


def shapes_dtypes(ctx):
    model = lenet(ctx)
    base = load_npz(npz_of(ctx, model, "s.npz"))
    changed = dict(base)
    changed["conv1/0"] = base["conv1/0"].reshape(20, 25)               # same values, another shape
    changed["conv1/1"] = np.concatenate([base["conv1/1"], [1.0]]).astype(np.float32)  # another size
    changed["ip2/1"] = base["ip2/1"].astype(np.float64)                 # another dtype, same values
    ip2 = base["ip2/0"].astype(np.float64)
    ip2.reshape(-1)[5] += 0.5
    changed["ip2/0"] = ip2                                               # another dtype, one value changed
    other = path(ctx, "changed.npz")
    save_npz(other, changed)
    doc = diff_json(ctx, npz_of(ctx, model, "s2.npz"), other, 1)
    blobs = {(l["name"], b["index"]): b for l in doc["layers"] for b in l["blobs"]}
    check(sorted(blobs) == [("conv1", 0), ("conv1", 1), ("ip2", 0), ("ip2", 1)], f"{sorted(blobs)}")
    b = blobs[("conv1", 0)]
    check(b["a"]["shape"] == [20, 1, 5, 5] and b["b"]["shape"] == [20, 25] and b["values_compared"] and
          b["differing"] == 0, f"reshaped: {b}")
    b = blobs[("conv1", 1)]
    check(b["a"]["count"] == 20 and b["b"]["count"] == 21 and not b["values_compared"] and "differing" not in b,
          f"another size: {b}")
    b = blobs[("ip2", 1)]
    check(b["a"]["dtype"] == "float32" and b["b"]["dtype"] == "float64" and b["differing"] == 0, f"dtype: {b}")
    b = blobs[("ip2", 0)]
    _, max_abs, max_rel = expected_stats(base["ip2/0"], ip2)
    check(b["b"]["dtype"] == "float64" and b["differing"] == 1 and close(b["max_abs_diff"], max_abs) and
          close(b["max_rel_diff"], max_rel), f"dtype and a value: {b}, NumPy {max_abs} {max_rel}")
    text = run(ctx, ["diff", model, other], 1).stdout.decode()
    check("20x1x5x5 float32 -> 20x25 float32" in text and "values not compared (20 and 21 values)" in text, text)
    # NaN: equal at the same place, a difference against a number; an int32 blob against uint32.
    x = np.array([1.0, np.nan, 0.0, -0.0, np.inf, 2.0], dtype=np.float32)
    y = np.array([1.0, np.nan, -0.0, 0.0, np.inf, np.nan], dtype=np.float32)
    for name, arrays in (("x.npz", {"l/0": x, "m/0": np.arange(4, dtype=np.int32)}),
                         ("y.npz", {"l/0": y, "m/0": np.arange(4, dtype=np.uint32)})):
        save_npz(path(ctx, name), arrays)
    doc = diff_json(ctx, path(ctx, "x.npz"), path(ctx, "y.npz"), 1)
    blobs = {l["name"]: l["blobs"][0] for l in doc["layers"]}
    check(blobs["l"]["differing"] == 1 and blobs["l"]["nan_mismatches"] == 1 and blobs["l"]["max_abs_diff"] == 0,
          f"NaN: {blobs['l']}")
    check(blobs["m"]["a"]["dtype"] == "int32" and blobs["m"]["b"]["dtype"] == "uint32" and blobs["m"]["differing"] == 0,
          f"int32 against uint32: {blobs['m']}")
    save_npz(path(ctx, "z.npz"), {"l/0": x, "m/0": np.arange(4, dtype=np.int32)})
    diff_json(ctx, path(ctx, "x.npz"), path(ctx, "z.npz"), 0)
    # An infinite relative difference: A holds 0 where B does not.
    save_npz(path(ctx, "w.npz"), {"l/0": np.array([1.0, np.nan, 0.5, -0.0, np.inf, 2.0], dtype=np.float32),
                                  "m/0": np.arange(4, dtype=np.int32)})
    doc = diff_json(ctx, path(ctx, "x.npz"), path(ctx, "w.npz"), 1)
    b = doc["layers"][0]["blobs"][0]
    check(b["max_rel_diff"] == "inf" and b["max_abs_diff"] == 0.5 and b["differing"] == 1, f"{b}")
    # Two blob files, by index.
    means = [os.path.join(ctx.data, n) for n in ("cifar10_mean.binaryproto", "ilsvrc_2012_mean.binaryproto")]
    doc = diff_json(ctx, means[0], means[1], 1)
    check(len(doc["blobs"]) == 1 and doc["blobs"][0]["a"]["shape"] == [1, 3, 32, 32] and
          not doc["blobs"][0]["values_compared"], f"{doc['blobs']}")
    mean = path(ctx, "mean.npy")
    run(ctx, ["convert", "--quiet", means[0], "-o", mean], 0)
    values = np.load(mean)
    diff_json(ctx, means[0], mean, 0)
    values.reshape(-1)[100] += 1
    np.save(mean, values)
    doc = diff_json(ctx, means[0], mean, 1)
    check(doc["blobs"][0]["differing"] == 1 and doc["blobs"][0]["max_abs_diff"] == 1, f"{doc['blobs']}")


NET = """name: "Generated"
layer {{ name: "data" type: "Input" top: "data" input_param {{ shape {{ dim: 1 dim: 1 dim: 28 dim: 28 }} }} }}
layer {{
  name: "conv1" type: "Convolution" bottom: "{bottom}" top: "conv1"
  param {{ lr_mult: 1 }} param {{ lr_mult: {lr} }}
  convolution_param {{ num_output: {num_output} kernel_size: 5 stride: 1 }}
}}
layer {{ name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }}
"""


def parameters(ctx):
    nets = {}
    for name, fill in (("a", dict(bottom="data", lr=2, num_output=20)), ("b", dict(bottom="data", lr=2, num_output=30)),
                       ("c", dict(bottom="image", lr=1, num_output=20))):
        nets[name] = path(ctx, f"{name}.prototxt")
        with open(nets[name], "w", encoding="utf-8") as f:
            f.write(NET.format(**fill))
    doc = diff_json(ctx, nets["a"], nets["b"], 1)
    check(doc["compared"]["values"] is False and "holds no weights" in doc["compared"]["reason"], f"{doc['compared']}")
    check(len(doc["layers"]) == 1 and doc["layers"][0]["name"] == "conv1", f"{doc['layers']}")
    check(doc["layers"][0]["changes"] == [{"field": "params.convolution_param.num_output", "a": 20, "b": 30}],
          f"{doc['layers'][0]['changes']}")
    text = run(ctx, ["diff", nets["a"], nets["b"]], 1).stdout.decode()
    check("params.convolution_param.num_output: 20 -> 30" in text and "holds no weights" in text, text)
    doc = diff_json(ctx, nets["a"], nets["c"], 1)
    fields_changed = sorted(c["field"] for c in doc["layers"][0]["changes"])
    check(fields_changed == ["bottoms[0]", "param[1].lr_mult"], f"{fields_changed}")
    # A field only one side sets, and a layer's type.
    with open(nets["b"], "w", encoding="utf-8") as f:
        f.write(NET.format(bottom="data", lr=2, num_output=20).replace("stride: 1 ", "").replace('"ReLU"', '"PReLU"'))
    doc = diff_json(ctx, nets["a"], nets["b"], 1)
    changes = {l["name"]: l["changes"] for l in doc["layers"]}
    check(changes == {"conv1": [{"field": "params.convolution_param.stride", "a": [1]}],
                      "relu1": [{"field": "type", "a": "ReLU", "b": "PReLU"}]}, f"{changes}")
    # A .caffemodel against its own definition: the structure equal, the weights not compared.
    model = lenet(ctx)
    proto = path(ctx, "lenet.prototxt")
    run(ctx, ["convert", "--quiet", model, "--to", "prototxt", "-o", proto], 0)
    doc = diff_json(ctx, model, proto, 0)
    check(doc["compared"] == {"structure": True, "values": False,
                              "reason": "B holds no weights (a net definition): blobs were not compared"},
          f"{doc['compared']}")


def mistakes(ctx):
    model = lenet(ctx)
    mean = os.path.join(ctx.data, "cifar10_mean.binaryproto")
    missing = path(ctx, "missing.caffemodel")
    folder = path(ctx, "empty-folder")
    os.mkdir(folder)
    cases = [
        (["diff"], ["A and B are missing"]),
        (["diff", model], ["B is missing"]),
        (["diff", model, model, model], ["two files only"]),
        (["diff", model, missing], ["missing.caffemodel"]),
        (["diff", missing, model], ["missing.caffemodel"]),
        (["diff", model, folder], ["empty-folder"]),
        (["diff", "-", "-"], ["standard input"]),
        (["diff", model, mean], ["a net", "a blob file"]),
        (["diff", "--atol", "x", model, model], ["--atol x"]),
        (["diff", "--rtol", "-1", model, model], ["--rtol -1"]),
        (["diff", "--bogus", model, model], ["--bogus"]),
        (["diff", "--quiet", "--json", model, model], ["--quiet and --json"]),
    ]
    for args, parts in cases:
        r = run(ctx, args, 2)
        err = r.stderr.decode()
        check(r.stdout == b"" and err.count("\n") == 1 and err.startswith("cblob diff: ") and
              all(p in err for p in parts), f"cblob {' '.join(args)}: {err!r} {r.stdout!r}")
    # A folder of one's own .npy files (no index.json) is refused, and read with --npy-names.
    own = path(ctx, "own")
    run(ctx, ["convert", "--quiet", model, "--to", "npy", "-o", own], 0)
    os.remove(os.path.join(own, "index.json"))
    check(b"index.json" in run(ctx, ["diff", model, own], 2).stderr, "a folder without index.json")
    doc = diff_json(ctx, model, own, 0, "--npy-names")
    check(doc["summary"]["blobs_compared"] == 8, f"{doc['summary']}")
    # Standard input for one of them.
    with open(model, "rb") as f:
        run(ctx, ["diff", "-", model], 0, stdin=f)
    check(b"diff" in run(ctx, ["help"], 0).stdout, "cblob help does not list diff")
    check(b"--atol" in run(ctx, ["diff", "--help"], 0).stdout, "cblob diff --help")


def reopened(ctx):
    model, tuned, _, _ = fine_tune(ctx, {"conv2/0": [(5, 9.0)], "ip1/0": [(399999, -9.0)]})
    with open(model, "rb") as f:
        cut = path(ctx, "cut.caffemodel")
        with open(cut, "wb") as g:
            g.write(without_layer(f.read(), "conv2"))
    npz = npz_of(ctx, model, "r.npz")
    for a, b, expect in ((model, tuned, 1), (tuned, cut, 1), (npz, tuned, 1), (model, npz, 0)):
        plain = run(ctx, ["diff", "--json", a, b], expect).stdout
        env = dict(os.environ, CBLOB_TOOL_TEST_RELIEVE_BYTES="1")
        again = subprocess.run([ctx.tool, "diff", "--json", a, b], capture_output=True, env=env)
        check(again.returncode == expect and again.stdout == plain,
              f"diff {a} {b} opening the files again after every layer: exit {again.returncode}, "
              f"{again.stdout[:300]!r} against {plain[:300]!r}; {again.stderr!r}")
        check(json.loads(plain)["summary"]["values_compared"] > 400000, f"{json.loads(plain)['summary']}")


def signals(ctx):
    model = lenet(ctx)
    copy = path(ctx, "copy.caffemodel")
    shutil.copyfile(model, copy)
    for signal, status in (("INT", 130), ("TERM", 143)):
        for options in ([], ["--json"]):
            env = dict(os.environ, CBLOB_TOOL_TEST_SIGNAL=f"{signal}:work:50")
            r = subprocess.run([ctx.tool, "diff", *options, model, copy], capture_output=True, env=env)
            check(r.returncode == status, f"SIG{signal} {options}: exit {r.returncode}, {r.stderr!r}")
            check(r.stdout.rstrip(b"\n").endswith(INCOMPLETE), f"SIG{signal} {options}: {r.stdout[-200:]!r}")
            check(b"interrupted by SIG" + signal.encode() in r.stderr, f"SIG{signal}: {r.stderr!r}")
            if options:
                try:
                    json.loads(r.stdout)
                    raise Failure("an interrupted --json output parses as JSON")
                except json.JSONDecodeError:
                    pass


def json_output(ctx):
    try:
        import jsonschema
    except ImportError:
        skip("python3-jsonschema is not installed (scripts/setup.sh installs it)")
    with open(os.path.join(ctx.source, "docs", "diff-schema-1.json"), encoding="utf-8") as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    for check_ in (itself, fine_tuned, layer_removed, conversions, shapes_dtypes, parameters):
        check_(ctx)
    check(len(Context.documents) > 30, f"only {len(Context.documents)} documents")
    for what, doc in Context.documents:
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        check(not errors, f"{what}: {errors[0].message if errors else ''} at {list(errors[0].path) if errors else ''}")
    # A member whose bytes do not match its CRC-32 is found only when read (lazily): the output
    # stops part-way and is no document.
    model = lenet(ctx)
    npz = npz_of(ctx, model, "j.npz")
    with open(npz, "r+b") as f:
        data = bytearray(f.read())
        marker = data.find(b"ip1/0.npy")  # the local header's name; the values follow the .npy header
        start = data.find(b"\n", data.find(b"{'descr'", marker)) + 1
        data[start + 100] ^= 0xFF
        f.seek(0)
        f.write(data)
    r = run(ctx, ["diff", "--json", model, npz], 2)
    check(r.stdout.rstrip(b"\n").endswith(INCOMPLETE), f"the output's end: {r.stdout[-200:]!r}")
    try:
        json.loads(r.stdout)
        raise Failure("an output that stopped part-way parses as JSON")
    except json.JSONDecodeError:
        pass
    check(b"ip1" in r.stderr, f"standard error: {r.stderr!r}")
    r = run(ctx, ["diff", model, npz], 2)
    check(r.stdout.rstrip(b"\n").endswith(INCOMPLETE), f"the text's end: {r.stdout[-200:]!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=["itself", "fine_tuned", "layer_removed", "conversions", "shapes_dtypes",
                                          "parameters", "mistakes", "reopened", "signals", "json_output"])
    parser.add_argument("--tool", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    scratch = args.work = tempfile.mkdtemp(dir=args.work)
    try:
        globals()[args.check](args)
    except Failure as e:
        print(f"FAILED: {e}")
        sys.exit(1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
