#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The Python binding's benchmark (not a test): ratios measured in one run.

1. Call overhead: Blob.count (a property: the ctypes call, its status check, the out-value)
   against an empty C call through the same FFI (ctypes, libbench_ffi.so): bench_ffi_empty(void),
   the other bindings' baseline, and bench_ffi_empty_getter, an empty function with count's
   signature (ctypes' cost grows with the arguments). Target: at most 1.5x.
2. Loading every blob of a large model into NumPy: cblob.load(path) and its arrays (views, no
   copy) against the usual Caffe-free way, NetParameter.ParseFromString on the file's bytes plus
   numpy.array(blob.data) per blob, with protobuf's pure-Python and upb (C) backends. Each
   contender loads in a fresh process (imports excluded from the time); rounds interleave the
   contenders. Target: cblob at least 10x faster than the faster backend.
3. The same against upb on small models, where per-blob calls weigh most: the real LeNet of
   ../shared/data/caffe (1.7 MB, 8 blobs) and a model of YuFaceDetectNet's size and shape (2.7 MB,
   40 convolutions of 3x3 kernels and biases: 80 blobs; synthetic, since the real file is not
   here). Target (issue 22): at least 1.0x upb.
4. safetensors: one tensor out of a large file (cblob.load(path)[name][0], and with lazy=True,
   against the safetensors package's safe_open(...).get_tensor(key)), target at most 2x the
   package's time; and the whole
   file (dict(cblob.load(path)) against safetensors.numpy.load_file), target at least 1.0x.

Figures are medians over the rounds, with min-max. --before LIBRARY adds, to sections 2 and 4,
cblob's contenders again with that libcblob.so.1 (CBLOB_LIBRARY: another build's, the library
before a change), interleaved with the others, so that before and after are measured in one run.

usage: bench_python.py --ffi LIBBENCH_FFI [--size-mib N] [--safetensors-mib N] [--rounds N] [--folder DIR]
                       [--before LIBRARY]
"""
import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def per_call_ns(statement, env, number=200_000):
    return min(timeit.repeat(statement, globals=env, number=number, repeat=3)) / number * 1e9


def call_overhead(ffi_path, rounds):
    import cblob
    ffi = ctypes.CDLL(ffi_path)
    empty, getter = ffi.bench_ffi_empty, ffi.bench_ffi_empty_getter
    empty.restype, empty.argtypes = None, ()
    getter.restype, getter.argtypes = ctypes.c_int32, (ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64))
    blob = cblob.Blob((2, 3))
    env = {"empty": empty, "getter": getter, "handle": blob._h, "out": ctypes.c_int64(), "blob": blob}
    statements = {"empty()": "empty()", "empty getter": "getter(handle, out)", "Blob.count": "blob.count"}
    times = {name: [] for name in statements}
    for _ in range(rounds):
        for name, statement in statements.items():
            times[name].append(per_call_ns(statement, env))
    print("\n1. one cheap call (Blob.count) against an empty C call through ctypes (ns per call)")
    for name, values in times.items():
        print(f"   {name:14s} {statistics.median(values):7.1f}  ({min(values):.1f}-{max(values):.1f})")
    count = statistics.median(times["Blob.count"])
    for baseline in ("empty()", "empty getter"):
        ratio = count / statistics.median(times[baseline])
        print(f"   Blob.count / {baseline:13s} {ratio:5.2f}x  target <= 1.5x: {'met' if ratio <= 1.5 else 'MISSED'}")


def write_model(path, size_mib):
    """A V2 .caffemodel of about size_mib MiB of float32 weights: 100 layers of a weight and a
    bias blob, as a deep net has."""
    import numpy as np
    import cblob
    rng = np.random.default_rng(0)
    model = cblob.Model.new("Bench")
    per_layer = size_mib * 2**20 // 4 // 100
    side = int(per_layer ** 0.5)
    for i in range(100):
        model.add_layer(f"fc{i}", "InnerProduct", [rng.standard_normal((side, side), dtype=np.float32),
                                                   rng.standard_normal(side, dtype=np.float32)])
    model.save(path)


CHILD = {
    "cblob": """
import time, cblob
start = time.perf_counter()
arrays = dict(cblob.load(PATH))
total = sum(a.size for v in arrays.values() for a in v)
print(time.perf_counter() - start, total)
""",
    "cblob_one": """
import time, cblob
start = time.perf_counter()
array = cblob.load(PATH)[NAME][0]
print(time.perf_counter() - start, array.size)
""",
    "cblob_one_lazy": """
import time, cblob
start = time.perf_counter()
array = cblob.load(PATH, lazy=True)[NAME][0]
print(time.perf_counter() - start, array.size)
""",
    "safetensors_one": """
import time, safetensors
start = time.perf_counter()
with safetensors.safe_open(PATH, "np") as f:
    array = f.get_tensor(KEY)
print(time.perf_counter() - start, array.size)
""",
    "safetensors_all": """
import time, safetensors.numpy
start = time.perf_counter()
arrays = safetensors.numpy.load_file(PATH)
print(time.perf_counter() - start, sum(a.size for a in arrays.values()))
""",
    "read_floor": """
import os, time, numpy as np
start = time.perf_counter()
size = os.stat(PATH).st_size
buffer = np.empty(size, dtype=np.uint8)
with open(PATH, 'rb', buffering=0) as f:
    done = 0
    while done < size:
        done += f.readinto(memoryview(buffer)[done:])
print(time.perf_counter() - start, 0)  # bytes, no values to count
""",
    "protobuf": """
import time, numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
pool = descriptor_pool.DescriptorPool()
for f in descriptor_pb2.FileDescriptorSet.FromString(open(DESCRIPTORS, 'rb').read()).file:
    pool.Add(f)
NetParameter = message_factory.GetMessageClass(pool.FindMessageTypeByName('caffe.NetParameter'))
start = time.perf_counter()
net = NetParameter()
with open(PATH, 'rb') as f:
    net.ParseFromString(f.read())
arrays = {l.name: [np.array(b.data, dtype=np.float32).reshape(tuple(b.shape.dim)) for b in l.blobs] for l in net.layer}
total = sum(a.size for v in arrays.values() for a in v)
print(time.perf_counter() - start, total)
""",
}


def race(contenders, rounds, substitutions):
    """{name: [seconds per round]} of contenders {name: child}, each in a fresh process, rounds
    interleaved; the children must agree on the number of values they read."""
    times, totals = {name: [] for name in contenders}, set()
    for _ in range(rounds):
        for name, (child, env) in contenders.items():
            code = CHILD[child]
            for key, value in substitutions.items():
                code = code.replace(key, repr(value))
            out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True,
                                 text=True, check=True).stdout.split()
            times[name].append(float(out[0]))
            totals.add(int(out[1]))
    assert len(totals) == 1, f"the contenders read different numbers of values: {totals}"
    return times


def report(times, ours, theirs, target, at_least=True, show_times=True):
    for name, values in times.items() if show_times else ():
        print(f"   {name:22s} {statistics.median(values):8.4f}  ({min(values):.4f}-{max(values):.4f})")
    ratio = statistics.median(times[theirs]) / statistics.median(times[ours])
    met = ratio >= target if at_least else 1 / ratio <= target
    shown = f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"
    print(f"   {ours} is {shown} than {theirs}; target {'>=' if at_least else '<='} "
          f"{target if at_least else str(target) + 'x the time'}{'x' if at_least else ''}: {'met' if met else 'MISSED'}")


def write_small_conv_model(path):
    """A model of YuFaceDetectNet's size and shape: 40 convolutions of 3x3 kernels with biases."""
    import numpy as np
    import cblob
    rng = np.random.default_rng(1)
    model = cblob.Model.new("SmallConvNet")
    channels = [3] + [16, 32, 32, 32, 48, 64, 64, 48] * 5  # 2.8 MB of weights
    for i in range(40):
        cin, cout = channels[i], channels[i + 1]
        model.add_layer(f"conv{i}", "Convolution", [rng.standard_normal((cout, cin, 3, 3), dtype=np.float32),
                                                    rng.standard_normal(cout, dtype=np.float32)])
    model.save(path)


def small_models(rounds, folder):
    descriptors = Path(folder) / "caffe_blobs.pb"
    subprocess.run(["protoc", f"-I{ROOT / 'proto'}", f"--descriptor_set_out={descriptors}",
                    str(ROOT / "proto" / "caffe_blobs.proto")], check=True)
    small = Path(folder) / "small_conv.caffemodel"
    write_small_conv_model(small)
    lenet = ROOT.parent / "shared" / "data" / "caffe" / "lenet_iter_10000.caffemodel"
    print("\n3. small models into NumPy arrays, each load in a fresh process (seconds)")
    for path in (lenet, small):
        if not path.exists():
            print(f"   {path}: absent, not measured")
            continue
        print(f"   {path.name} ({path.stat().st_size / 1e6:.1f} MB)")
        contenders = {"cblob": ("cblob", {}), "protobuf upb": ("protobuf", {"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "upb"})}
        report(race(contenders, rounds, {"PATH": str(path), "DESCRIPTORS": str(descriptors)}), "cblob", "protobuf upb", 1.0)


def with_before(contenders, before):
    """The contenders, and each cblob one again as "<name> (before)" with the library `before`."""
    if before is None:
        return contenders
    added = {f"{name} (before)": (child, {**env, "CBLOB_LIBRARY": before})
             for name, (child, env) in contenders.items() if name.startswith("cblob")}
    return {**contenders, **added}


def report_before(times, name):
    """The contender against itself with the library before (with_before), no target."""
    ratio = statistics.median(times[f"{name} (before)"]) / statistics.median(times[name])
    print(f"   {name}: {ratio:.2f}x the speed it had with the library before (above 1: faster now)")


def safetensors_file(size_mib, rounds, folder, before=None):
    import numpy as np
    import cblob
    path = Path(folder) / "bench.safetensors"
    model = cblob.Model.new("Tensors")
    count = 16
    side = int((size_mib * 2**20 // 4 // count) ** 0.5)
    for i in range(count):
        model.add_layer(f"t{i}", "InnerProduct", [np.full((side, side), i, np.float32)])
    model.save_safetensors(path)
    del model
    print(f"\n4. a {path.stat().st_size / 2**20:.0f} MiB safetensors file of {count} tensors (seconds)")
    print("   one tensor (t7.0)")
    one = with_before({"cblob": ("cblob_one", {}), "cblob lazy=True": ("cblob_one_lazy", {}),
                       "safetensors package": ("safetensors_one", {})}, before)
    times = race(one, rounds, {"PATH": str(path), "NAME": "t7", "KEY": "t7.0"})
    report(times, "cblob", "safetensors package", 2, at_least=False)
    report(times, "cblob lazy=True", "safetensors package", 2, at_least=False, show_times=False)
    if before is not None:
        report_before(times, "cblob")
        report_before(times, "cblob lazy=True")
    print("   the whole file")
    whole = with_before({"cblob": ("cblob", {}), "safetensors package": ("safetensors_all", {})}, before)
    times = race(whole, rounds, {"PATH": str(path)})
    report(times, "cblob", "safetensors package", 1.0)
    if before is not None:
        report_before(times, "cblob")
    path.unlink()


def model_loading(size_mib, rounds, folder, pure_python=True, before=None):
    from google.protobuf.internal import api_implementation
    path = Path(folder) / "bench.caffemodel"
    descriptors = Path(folder) / "caffe_blobs.pb"
    write_model(path, size_mib)
    subprocess.run(["protoc", f"-I{ROOT / 'proto'}", f"--descriptor_set_out={descriptors}",
                    str(ROOT / "proto" / "caffe_blobs.proto")], check=True)
    contenders = {"cblob": ("cblob", {}),
                  "protobuf upb": ("protobuf", {"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "upb"}),
                  "protobuf python": ("protobuf", {"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}),
                  # The floor of any loader that puts each value into fresh memory once: the whole
                  # file read into a fresh array (its pages faulted in by the read), no parse.
                  "read(2) floor": ("read_floor", {})}
    if not pure_python:  # minutes per round on a large model
        del contenders["protobuf python"]
    contenders = with_before(contenders, before)
    times, totals = {name: [] for name in contenders}, set()
    for _ in range(rounds):
        for name, (child, env) in contenders.items():
            code = CHILD[child].replace("PATH", repr(str(path))).replace("DESCRIPTORS", repr(str(descriptors)))
            out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True,
                                 text=True, check=True).stdout.split()
            times[name].append(float(out[0]))
            if child != "read_floor":  # reads bytes, counts no values
                totals.add(int(out[1]))
    assert len(totals) == 1, f"the contenders read different numbers of values: {totals}"
    print(f"\n2. every blob of a {path.stat().st_size / 2**20:.0f} MiB model (100 layers, {totals.pop():,} float32 "
          f"values) into NumPy arrays (seconds; protobuf {api_implementation.Type()} is this process's default)")
    for name, values in times.items():
        print(f"   {name:16s} {statistics.median(values):8.4f}  ({min(values):.4f}-{max(values):.4f})")
    cblob_time = statistics.median(times["cblob"])
    faster = min(statistics.median(values) for name, values in times.items() if name.startswith("protobuf"))
    ratio = faster / cblob_time
    print(f"   cblob is {ratio:.1f}x faster than the faster protobuf backend; target >= 10x: "
          f"{'met' if ratio >= 10 else 'MISSED'}")
    floor = statistics.median(times["read(2) floor"])
    print(f"   the read(2) floor is {faster / floor:.1f}x faster than the faster protobuf backend: the most any "
          f"loader that copies each value into fresh memory once can reach; cblob takes {cblob_time / floor:.2f}x "
          f"the floor's time")
    for name in [n for n in times if n != "cblob"]:  # (cblob / cblob (before): above 1, faster than before)
        print(f"   cblob / {name}: {statistics.median(times[name]) / cblob_time:.1f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ffi", required=True, help="libbench_ffi.so (build/release/bench)")
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--safetensors-mib", type=int, default=1024)
    parser.add_argument("--no-pure-python", action="store_true", help="leave out protobuf's pure-Python backend")
    parser.add_argument("--sections", default="1,2,3,4", help="which measurements (the doc's numbers)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--folder", default=os.environ.get("TMPDIR", "/tmp"))
    parser.add_argument("--before", help="another libcblob.so.1 to run cblob's contenders with too (sections 2, 4)")
    args = parser.parse_args()
    import cblob
    print(f"cblob {cblob.version()} ({cblob.library_path()}), Python {sys.version.split()[0]}")
    sections = set(args.sections.split(","))
    if "1" in sections:
        call_overhead(args.ffi, args.rounds)
    folder = tempfile.mkdtemp(dir=args.folder, prefix="cblob-bench-python-")
    try:
        if "2" in sections:
            model_loading(args.size_mib, args.rounds, folder, pure_python=not args.no_pure_python, before=args.before)
        if "3" in sections:
            small_models(args.rounds, folder)
        if "4" in sections:
            safetensors_file(args.safetensors_mib, args.rounds, folder, before=args.before)
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
