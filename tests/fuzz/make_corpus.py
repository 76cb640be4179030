#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes the fuzz targets' seed corpus (tests/fuzz/corpus/): small BlobProto, BlobProtoVector,
NetParameter, safetensors, npz and npy inputs covering what the readers must handle: packed and unpacked values, legacy
dims, double_data, diffs, unknown fields of every wire type (groups too), V2, V1 and V0 layers.
Encoded by hand here, independently of cblob; deterministic, so rerunning changes nothing.
Files named regression_*.bin are inputs the fuzzers once failed on, kept as seeds; this script
leaves them alone.

    make_corpus.py [OUT_DIR]   (default: the corpus folder beside this script)
"""
import io
import json
import os
import struct
import sys
import zipfile


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
        # data in double, diff kept as float: the handle's diff is converted both ways
        "double_data_float_diff": shape([3]) + doubles(8, v6[:3]) + floats(6, v6[3:]),
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
    # an odd-length name puts the float diff at an odd offset of the file
    v1_mixed = ld(4, b"ip") + int_field(5, 14) + ld(6, b["double_data_float_diff"])
    return {
        "v2": ld(1, b"Net") + ld(100, ld(1, b"data") + ld(2, b"Input")) + ld(100, v2_layer),
        "v2_extras": ld(3, b"data") + int_field(4, 1) + int_field(5, 1) + ld(100, v2_layer + v2_extras) + ld(1, b"Net"),
        "v1": ld(1, b"Old") + ld(2, v1_layer) + ld(2, ld(4, b"relu") + int_field(5, 18)) + ld(2, int_field(5, 1234)),
        "v0_nested": ld(2, ld(1, v0)),
        "v1_mixed_diff": ld(1, b"Mixed") + ld(2, v1_mixed),
        "name_only": ld(1, b"Empty"),
        "both_formats": ld(100, ld(1, b"a")) + ld(2, ld(4, b"b")),
    }


def safetensors_file(tensors, metadata=None):
    """tensors: [(key, dtype, shape, raw bytes)]"""
    header, offset, data = {}, 0, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for key, dtype, dims, raw in tensors:
        header[key] = {"dtype": dtype, "shape": dims, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    return {
        "plain": safetensors_file([("conv1.0", "F32", [2, 3], f32), ("conv1.1", "F64", [1], struct.pack("<d", 0.5))],
                                  {"name": "net", "format": "V2", "layer_types": json.dumps({"conv1": "Convolution"})}),
        "torch": safetensors_file([("bn.running_mean", "F32", [2], f32[:8]), ("bn.running_var", "F32", [2], f32[8:16]),
                                   ("bn.num_batches_tracked", "I64", [], struct.pack("<q", 3)),
                                   ("fc.weight", "F16", [2], b"\x00\x3c\x00\xc0"), ("fc.bias", "BF16", [1], b"\x80\x3f")]),
        "diff": safetensors_file([("a.0", "I32", [2], struct.pack("<2i", -1, 2)), ("a.0.diff", "U32", [2], struct.pack("<2I", 1, 2))]),
        "empty": safetensors_file([]),
        "scalar": safetensors_file([("s.0", "F32", [], f32[:4]), ("z.0", "F32", [0, 3], b"")]),
    }


def npy(dtype, dims, raw):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % d for d in dims) if len(dims) != 1 else "%d," % dims[0])
    total = (10 + len(header) + 1 + 63) // 64 * 64
    header = header + " " * (total - 10 - len(header) - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + raw


def npz_file(members, compression=zipfile.ZIP_STORED):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = compression
            archive.writestr(info, data)
    return out.getvalue()


def npz_seeds():
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    members = [("conv1/0.npy", npy("<f4", [2, 3], f32)), ("conv1/1.npy", npy("<f8", [1], struct.pack("<d", 0.5))),
               ("conv1/0/diff.npy", npy("<f4", [2, 3], f32)), ("fc/0.npy", npy("<i4", [], struct.pack("<i", 7)))]
    return {
        "stored": npz_file(members),
        "deflated": npz_file(members, zipfile.ZIP_DEFLATED),
        "empty": npz_file([]),
        "uint": npz_file([("u/0.npy", npy("<u4", [0, 2], b""))]),
    }


def npy_seeds():
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    version2 = npy("<f8", [2], struct.pack("<2d", 0.5, -1))
    version2 = b"\x93NUMPY\x02\x00" + struct.pack("<I", len(version2) - 10) + version2[10:]
    return {
        "f4": npy("<f4", [2, 3], f32),
        "scalar_i4": npy("<i4", [], struct.pack("<i", -7)),
        "empty_u4": npy("<u4", [0, 5], b""),
        "i8": npy("<i8", [2], struct.pack("<2q", 1 << 40, -3)),
        "f2": npy("<f2", [3], struct.pack("<3H", 0x3C00, 0xFC00, 0x7E00)),
        "b1": npy("|b1", [4], bytes([1, 0, 1, 2])),
        "u1_many_axes": npy("|u1", [1] * 32, b"\x09"),
        "u8": npy("<u8", [1], struct.pack("<Q", (1 << 64) - 1)),
        "version2": version2,
        "fortran": npy("<f4", [1], f32[:4]).replace(b"False", b"True "),
        "big_endian": npy(">f4", [1], f32[:4]),
        # The header ends right after "'descr':" with the value missing (the 1.0 reader ran strchr
        # past the end of the header here).
        "descr_at_end": b"\x93NUMPY\x01\x00\x09\x00{'descr':",
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    b = blobs()
    for kind, seeds in (("blob", b), ("blob_vector", vectors(b)), ("model", models(b)),
                        ("safetensors", safetensors_seeds()), ("npz", npz_seeds()), ("npy", npy_seeds())):
        folder = os.path.join(out, kind)
        os.makedirs(folder, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(folder, name + ".bin"), "wb") as f:
                f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
