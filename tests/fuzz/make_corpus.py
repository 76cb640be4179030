#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes the fuzz targets' seed corpus (tests/fuzz/corpus/): small BlobProto, BlobProtoVector and
NetParameter inputs covering what the readers must handle: packed and unpacked values, legacy
dims, double_data, diffs, unknown fields of every wire type (groups too), V2, V1 and V0 layers.
Encoded by hand here, independently of cblob; deterministic, so rerunning changes nothing.
Files named regression_*.bin are inputs the fuzzers once failed on, kept as seeds; this script
leaves them alone.

    make_corpus.py [OUT_DIR]   (default: the corpus folder beside this script)
"""
import os
import struct
import sys


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = v & 0x7F
        v >>= 7
        out.append(byte | (0x80 if v else 0))
        if not v:
            return bytes(out)


def tag(field, wire):
    return varint(field << 3 | wire)


def int_field(field, v):
    return tag(field, 0) + varint(v)


def ld(field, payload):
    return tag(field, 2) + varint(len(payload)) + payload


def floats(field, values, packed=True):
    if packed:
        return ld(field, b"".join(struct.pack("<f", v) for v in values))
    return b"".join(tag(field, 5) + struct.pack("<f", v) for v in values)


def doubles(field, values, packed=True):
    if packed:
        return ld(field, b"".join(struct.pack("<d", v) for v in values))
    return b"".join(tag(field, 1) + struct.pack("<d", v) for v in values)


def shape(dims, packed=True):
    if packed:
        return ld(7, ld(1, b"".join(varint(d) for d in dims)))
    return ld(7, b"".join(int_field(1, d) for d in dims))


def unknown_fields():
    return (int_field(1000, 7) + ld(1001, b"fork") + tag(1002, 5) + b"\x01\x02\x03\x04" +
            tag(1003, 1) + bytes(8) + tag(1004, 3) + int_field(1, 1) + tag(1004, 4))


def blobs():
    v6 = [0.5 * i - 1 for i in range(6)]
    return {
        "packed": shape([2, 3]) + floats(5, v6),
        "unpacked": shape([2, 3], False) + floats(5, v6, False),
        "with_diff": shape([6]) + floats(5, v6) + floats(6, v6, False),
        "legacy": int_field(1, 1) + int_field(2, 2) + int_field(3, 1) + int_field(4, 3) + floats(5, v6),
        "double": shape([3]) + doubles(8, v6[:3]) + doubles(9, v6[:3], False) + floats(5, [1]),
        "scalar": floats(5, [3.5]),
        "zero_count": shape([0, 4]),
        "unknown_fields": unknown_fields() + shape([2]) + floats(5, [1, 2]) + int_field(10, 3),
        "split_values": floats(5, v6[:2]) + shape([6]) + floats(5, v6[2:4], False) + floats(5, v6[4:]),
        "bad_count": shape([4]) + floats(5, v6[:3]),
        "negative_dim": shape([2, -1]) + floats(5, v6),
    }


def vectors(b):
    return {
        "two": ld(1, b["packed"]) + ld(1, b["double"]),
        "mixed": ld(1, b["legacy"]) + ld(1, b["unpacked"]) + ld(1, b["scalar"]),
        "empty_blob": ld(1, b["zero_count"]),
    }


def models(b):
    v2_layer = ld(1, b"conv1") + ld(2, b"Convolution") + ld(7, b["packed"]) + ld(7, b["scalar"])
    v2_extras = ld(3, b"data") + ld(4, b"conv1") + ld(106, int_field(1, 20)) + int_field(9999, 1)
    v1_layer = ld(4, b"fc") + int_field(5, 14) + ld(6, b["legacy"]) + ld(2, b"bottom") + floats(7, [1.0], False)
    v0 = ld(1, b"old") + ld(2, b"conv") + ld(50, b["with_diff"])
    return {
        "v2": ld(1, b"Net") + ld(100, ld(1, b"data") + ld(2, b"Input")) + ld(100, v2_layer),
        "v2_extras": ld(3, b"data") + int_field(4, 1) + int_field(5, 1) + ld(100, v2_layer + v2_extras) + ld(1, b"Net"),
        "v1": ld(1, b"Old") + ld(2, v1_layer) + ld(2, ld(4, b"relu") + int_field(5, 18)) + ld(2, int_field(5, 1234)),
        "v0_nested": ld(2, ld(1, v0)),
        "name_only": ld(1, b"Empty"),
        "both_formats": ld(100, ld(1, b"a")) + ld(2, ld(4, b"b")),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    b = blobs()
    for kind, seeds in (("blob", b), ("blob_vector", vectors(b)), ("model", models(b))):
        folder = os.path.join(out, kind)
        os.makedirs(folder, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(folder, name + ".bin"), "wb") as f:
                f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
