#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes the expected answers for a .caffemodel in the format of ../shared/data/caffe/*.layers.txt
(net name, format, one line per layer with its blob shapes, and per blob the count, first value,
sum, min and max of its float data), by decoding the protobuf wire format with Python alone: an
independent reading to check cblob's bindings against (bindings/*/ tests read samples/*.layers.txt).

Reads only what Caffe's current format (NetParameter.layer = 100) stores for the structure and the
weights: layer name (1), type (2), bottoms (3), tops (4) and blobs (7), each BlobProto with shape
(7, dims packed or not) and float data (5, packed or not). Other fields are skipped.

usage: describe_model.py MODEL [--check EXPECTED]
  without --check: prints the description; with it: exits 1 when EXPECTED differs from it."""
import hashlib
import os
import struct
import sys


def varint(buf, pos):
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def fields(buf):
    """(field number, wire type, value) of each field; value is an int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire} at byte {pos}")
        yield number, wire, value


def blob(buf):
    dims, data = [], []
    for number, wire, value in fields(buf):
        if number == 7:  # BlobShape
            for n, w, v in fields(value):
                if n == 1 and w == 2:
                    pos = 0
                    while pos < len(v):
                        d, pos = varint(v, pos)
                        dims.append(d)
                elif n == 1:
                    dims.append(v)
        elif number == 5 and wire == 2:
            data.extend(struct.unpack(f"<{len(value) // 4}f", value))
        elif number == 5:
            data.append(struct.unpack("<f", value)[0])
    return dims, data


def describe(path):
    raw = open(path, "rb").read()
    name, layers = "", []
    for number, _, value in fields(raw):
        if number == 1:
            name = value.decode()
        elif number == 100:
            layer = {"name": "", "type": "", "bottoms": [], "tops": [], "blobs": []}
            for n, _, v in fields(value):
                if n == 1:
                    layer["name"] = v.decode()
                elif n == 2:
                    layer["type"] = v.decode()
                elif n == 3:
                    layer["bottoms"].append(v.decode())
                elif n == 4:
                    layer["tops"].append(v.decode())
                elif n == 7:
                    layer["blobs"].append(blob(v))
            layers.append(layer)
    lines = [f"file: {os.path.basename(path)}", f"size: {len(raw)} bytes",
             f"sha256: {hashlib.sha256(raw).hexdigest()}", f"net name: '{name}'",
             f"format: V2 (NetParameter.layer, field 100): {len(layers)} entries", "",
             "# idx | name | type | bottoms -> tops | blobs: shape (element count)"]
    for i, layer in enumerate(layers):
        blobs = "; ".join(f"shape=[{','.join(map(str, d))}] ({len(v)} data(float32))" for d, v in layer["blobs"]) or "-"
        io = f"[{','.join(layer['bottoms'])}] -> [{','.join(layer['tops'])}]" if layer["bottoms"] or layer["tops"] else "-"
        lines.append(f"{i} | {layer['name']} | {layer['type']} | {io} | {blobs}")
    with_blobs = [layer for layer in layers if layer["blobs"]]
    total = sum(len(v) for layer in layers for _, v in layer["blobs"])
    lines += ["", f"layers: {len(layers)}, layers with blobs: {len(with_blobs)}, total parameter values: {total}", "",
              "# blob value checks (float64 accumulation of stored values)"]
    for layer in with_blobs:
        for j, (_, v) in enumerate(layer["blobs"]):
            lines.append(f"{layer['name']}.blobs[{j}]: n={len(v)} first={v[0]:.9g} sum={sum(v):.9g} "
                         f"min={min(v):.9g} max={max(v):.9g}")
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) == 2:
        sys.stdout.write(describe(argv[1]))
        return 0
    if len(argv) == 4 and argv[2] == "--check":
        expected = open(argv[3], encoding="utf-8").read()
        if describe(argv[1]) != expected:
            print(f"{argv[3]} is stale: regenerate it with {argv[0]} {argv[1]} > {argv[3]}")
            return 1
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
