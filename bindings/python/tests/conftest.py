# SPDX-License-Identifier: BSD-2-Clause
"""What the suites share: where the sources and the real Caffe files are, their expected answers
(*.layers.txt, *.blob.txt: an independent decoding of each file), and Python's protobuf package
over proto/caffe_blobs.proto (compiled by protoc at test time) as a second, independent reader.

The suites test whichever cblob `import cblob` finds: bindings/python/test.sh installs it (from
source, then the binary wheel) and runs pytest from this folder.
"""
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("CBLOB_SOURCE_DIR", Path(__file__).resolve().parents[3]))
CAFFE_DATA_DIR = Path(os.environ.get("CBLOB_CAFFE_DATA_DIR", SOURCE_DIR.parent / "shared" / "data" / "caffe"))
SAMPLES = SOURCE_DIR / "samples"


def caffe_file(name):
    """A file of ../shared/data/caffe, or a skip that says it is absent."""
    path = CAFFE_DATA_DIR / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the real Caffe files live in ../shared/data/caffe)")
    return path


def close(actual, expected):
    """Sums of float32 values against the answers' 9 significant digits."""
    return abs(actual - expected) <= 1e-6 * max(abs(expected), 1.0)


def expected_layers(path):
    """(net name, [(name, type, [(shape, first, sum)])]) from a *.layers.txt file."""
    name, layers = None, []
    for line in Path(path).read_text().splitlines():
        if line.startswith("net name: "):
            name = line[len("net name: "):].strip("'")
        elif re.match(r"\d+ \| ", line):
            cells = line.split(" | ")
            blobs = [[tuple(int(d) for d in m.group(1).split(",")), math.nan, math.nan]
                     for m in re.finditer(r"shape=\[([\d,]+)\]", cells[4])]
            layers.append((cells[1], cells[2], blobs))
        elif ": n=" in line:
            m = re.match(r"(.+)\.blobs\[(\d+)\]: n=(\d+) first=(\S+) sum=(\S+)", line)
            blob = next(b for n, _, b in layers if n == m.group(1))[int(m.group(2))]
            assert math.prod(blob[0]) == int(m.group(3))
            blob[1], blob[2] = float(m.group(4)), float(m.group(5))
    return name, layers


def expected_blob(path):
    """{"shape", "count", "first", "sum", "min", "max"} from a *.blob.txt file."""
    text = Path(path).read_text()
    shape = tuple(int(d) for d in re.search(r"=\[([\d,]+)\]", text).group(1).split(","))
    stats = dict(re.findall(r"(first|sum|min|max)=(\S+)", text))
    return {"shape": shape, "count": int(re.search(r"values: (\d+)", text).group(1)),
            **{k: float(v) for k, v in stats.items()}}


@pytest.fixture(scope="session")
def caffe_pb2(tmp_path_factory):
    """Message classes for proto/caffe_blobs.proto from Python's protobuf package: protoc writes
    the descriptor set, the package builds the classes (what protoc's --python_out code does,
    without tying the test to one protoc and runtime pairing)."""
    protoc = shutil.which("protoc")
    if protoc is None:
        pytest.skip("protoc is not installed (scripts/setup.sh installs protobuf-compiler)")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    out = tmp_path_factory.mktemp("proto") / "caffe_blobs.pb"
    subprocess.run([protoc, f"-I{SOURCE_DIR / 'proto'}", f"--descriptor_set_out={out}",
                    str(SOURCE_DIR / "proto" / "caffe_blobs.proto")], check=True)
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(file)

    class Messages:
        pass

    for name in ("NetParameter", "BlobProto", "BlobProtoVector"):
        descriptor = pool.FindMessageTypeByName(f"caffe.{name}")
        make = getattr(message_factory, "GetMessageClass", None)
        cls = make(descriptor) if make else message_factory.MessageFactory(pool).GetPrototype(descriptor)
        setattr(Messages, name, cls)
    return Messages
