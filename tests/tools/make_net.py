#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes synthetic Caffe nets (NetParameter, binary .caffemodel) for tests and benchmarks.

Plain Python, no protobuf: the wire format is written by hand with Caffe's field numbers, so the
generator runs anywhere and can write what protobuf libraries never would (unknown fields in every
position, unpacked floats, over-long varints, groups). Output is deterministic for a seed.

usage: make_net.py [options] OUT            (OUT '-' writes standard output)

  --format v2|v1|v0      layer (field 100), V1 layers (field 2), or V1 layers whose blobs,
                         name and type live in the nested V0 layer (field 1)      [v2]
  --layers N             number of layers                                          [12]
  --seed S               seed of every choice                                      [1]
  --names plain|hostile  hostile: names colliding after sanitising ('a/b', 'a_b', 'a:b'),
                         repeated names, names differing by case, '/', '..', escape
                         sequences, 300-byte names, bytes that are not UTF-8        [plain]
  --blobs K              blobs per layer: a fixed K, or 'mixed' (0 to 3)           [mixed]
  --max-values N         values per blob at most (shapes are drawn under it)       [64]
  --empty-blobs K        K empty blobs (a zero dimension) more per layer           [0]
  --huge BYTES           one more layer with one blob of BYTES bytes of float data,
                         streamed (a multi-GiB file needs no multi-GiB of memory)  [0]
  --unknown              unknown fields in every position: top level, layers, blobs, shapes,
                         parameter messages (varint, fixed32, fixed64, length, groups)
  --unpacked             some blobs' values unpacked (one tag per value)
  --doubles              some blobs in double_data / double_diff
  --diffs                some blobs with a diff
  --structure            bottoms, tops, phase, include/exclude rules, param specs and layer
                         parameters (convolution_param, pooling_param, ... with Caffe's field
                         numbers, SSD's 202-206 among them)
  --tiny                 many tiny layers: short names, one bottom and top, no blobs but a
                         one-value blob on every fourth layer (a memory benchmark's shape)
  --all                  --names hostile --unknown --unpacked --doubles --diffs --structure
"""
import argparse
import random
import struct
import sys

# ---- the wire format ------------------------------------------------------------------------

VARINT, FIXED64, LENGTH, GROUP_START, GROUP_END, FIXED32 = 0, 1, 2, 3, 4, 5


def varint(value, extra=0):
    """A varint; `extra` pads it with continuation bytes (valid, and longer than needed)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value or extra:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
        if not value:
            while extra > 1:
                out.append(0x80)
                extra -= 1
            out.append(0)
            return bytes(out)


def tag(number, wire_type):
    return varint((number << 3) | wire_type)


def field_varint(number, value):
    return tag(number, VARINT) + varint(value)


def field_bytes(number, payload, padding=0):
    """A length-delimited field; padding writes its length with that many bytes more than needed."""
    return tag(number, LENGTH) + varint(len(payload), padding) + payload


def field_float(number, value):
    return tag(number, FIXED32) + struct.pack("<f", value)


def packed_floats(number, values, double=False):
    return field_bytes(number, struct.pack("<%d%s" % (len(values), "d" if double else "f"), *values))


def unpacked_floats(number, values, double=False):
    wire = FIXED64 if double else FIXED32
    return b"".join(tag(number, wire) + struct.pack("<d" if double else "<f", v) for v in values)


# ---- what the net holds ----------------------------------------------------------------------

class Net:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.format = args.format

    def unknown(self):
        """An unknown field of a random wire type (numbers forks use, and far ones)."""
        if not self.args.unknown or self.rng.random() < 0.4:
            return b""
        # Numbers forks use (SSD-Caffe: 205, 207; others 208, 209) that cblob's schema leaves unknown, and far
        # ones (200 and 201 are SSD-Caffe's annotated_data_param and multibox_loss_param, now known).
        number = self.rng.choice([208, 209, 205, 207, 999, 5000, 123456])
        kind = self.rng.randrange(5)
        if kind == 0:
            return field_varint(number, self.rng.randrange(1 << 40))
        if kind == 1:
            return tag(number, FIXED32) + struct.pack("<I", self.rng.randrange(1 << 32))
        if kind == 2:
            return tag(number, FIXED64) + struct.pack("<Q", self.rng.randrange(1 << 64))
        if kind == 3:
            return field_bytes(number, bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(12))))
        return tag(number, GROUP_START) + field_varint(1, 7) + tag(number, GROUP_END)

    def name(self, index):
        if self.args.tiny:
            return b"l%d" % index
        if self.args.names == "plain":
            return b"layer_%d" % index
        choices = [b"conv/%d" % (index % 5), b"conv_%d" % (index % 5), b"conv:%d" % (index % 5), b"repeated",
                   b"Case%d" % (index % 3), b"case%d" % (index % 3), b"../../etc/passwd", b"a/b/../c",
                   b"\x1b[31mred\x1b[0m", b"x" * 300 + b"%d" % index, b"\xff\xfe\xc3(" + b"%d" % index,
                   b"..", b"/", b"", b"tab\tand\nnewline", b"layer_%d" % index]
        return self.rng.choice(choices)

    def values(self, count):
        return [self.rng.randrange(-1000, 1000) / 8.0 for _ in range(count)]

    def shape_dims(self):
        limit = self.args.max_values
        dims = []
        for _ in range(self.rng.randrange(1, 5)):
            room = max(1, limit // max(1, prod(dims)))
            dims.append(self.rng.randrange(1, min(room, 16) + 1))
        return dims

    def blob_shape(self, dims):
        inner = b""
        if self.args.unpacked and self.rng.random() < 0.3:
            inner += b"".join(field_varint(1, d) for d in dims)
        else:
            inner += field_bytes(1, b"".join(varint(d) for d in dims))
        return field_bytes(7, inner + self.unknown())

    def blob(self, dims=None, empty=False):
        """A BlobProto: shape (or legacy dims), data, maybe a diff, unknown fields anywhere."""
        if empty:
            dims = [0] + self.shape_dims()[1:]
        elif dims is None:
            dims = self.shape_dims()
        count = prod(dims)
        double = self.args.doubles and self.rng.random() < 0.3
        unpacked = self.args.unpacked and self.rng.random() < 0.3
        parts = [self.unknown()]
        if not empty and len(dims) <= 4 and self.rng.random() < 0.2:
            legacy = ([1] * (4 - len(dims)) + dims)
            parts.append(b"".join(field_varint(n + 1, d) for n, d in enumerate(legacy)))
        else:
            parts.append(self.blob_shape(dims))
        writer = unpacked_floats if unpacked else packed_floats
        data = self.values(count)
        if count or not empty:
            parts.append(writer(8 if double else 5, data, double) if count else b"")
        parts.append(self.unknown())
        if count and self.args.diffs and self.rng.random() < 0.3:
            parts.append(writer(9 if double else 6, self.values(count), double))
        self.rng.shuffle(parts)
        return b"".join(parts)

    def blobs(self, index):
        if self.args.tiny:
            return [self.blob([1])] if index % 4 == 0 else []
        k = self.rng.randrange(4) if self.args.blobs == "mixed" else int(self.args.blobs)
        out = [self.blob() for _ in range(k)]
        out += [self.blob(empty=True) for _ in range(self.args.empty_blobs)]
        return out

    # ---- structure ---------------------------------------------------------------------------

    def rule(self):
        inner = field_varint(1, self.rng.randrange(2))
        if self.rng.random() < 0.5:
            inner += field_varint(2, self.rng.randrange(-3, 3) & ((1 << 64) - 1))
        inner += field_bytes(4, b"stage%d" % self.rng.randrange(3))
        if self.rng.random() < 0.5:
            inner += field_bytes(5, b"not%d" % self.rng.randrange(3))
        return inner + self.unknown()

    def param_spec(self, index):
        inner = field_bytes(1, b"shared_%d" % index) if self.rng.random() < 0.5 else b""
        inner += field_float(3, self.rng.choice([0.0, 1.0, 2.0]))
        inner += field_float(4, self.rng.choice([0.0, 1.0]))
        return inner + self.unknown()

    def layer_params(self, kind):
        """(field number in V2, in V1, payload) of a parameter message for the layer's type."""
        r = self.rng
        if kind == "Convolution":
            body = field_varint(1, r.randrange(1, 64)) + field_varint(4, 3) + field_varint(6, 1) + field_varint(3, 1)
            body += field_bytes(7, field_bytes(1, b"xavier"))
            return 106, 10, body
        if kind == "Pooling":
            return 121, 19, field_varint(1, r.randrange(2)) + field_varint(2, 2) + field_varint(3, 2)
        if kind == "InnerProduct":
            return 117, 17, field_varint(1, r.randrange(1, 1000)) + field_varint(2, 0)
        if kind == "ReLU":
            return 123, 30, field_float(1, 0.125)
        if kind == "BatchNorm":
            return 139, None, field_varint(1, 1) + field_float(3, 1e-5)
        if kind == "Scale":
            return 142, None, field_varint(4, 1)
        if kind == "PriorBox":
            return 203, None, packed_floats(1, [30.0]) + packed_floats(3, [2.0, 3.0]) + field_varint(4, 1)
        if kind == "Permute":
            return 202, None, field_bytes(1, varint(0) + varint(2) + varint(3) + varint(1))
        if kind == "Normalize":
            return 206, None, field_varint(1, 0) + field_float(4, 1e-10)
        if kind == "DetectionOutput":
            nms = field_float(1, 0.45) + field_varint(2, 400)
            return 204, None, field_varint(1, 21) + field_bytes(4, nms) + field_varint(7, 200)
        return None

    V1_TYPES = {"Convolution": 4, "Pooling": 17, "InnerProduct": 14, "ReLU": 18, "Data": 5, "Softmax": 20}

    def layer_type(self, index):
        if self.args.tiny:
            return "ReLU"
        if self.format == "v2":
            return self.rng.choice(["Convolution", "Pooling", "InnerProduct", "ReLU", "BatchNorm", "Scale",
                                    "PriorBox", "Permute", "Normalize", "DetectionOutput", "Input"])
        return self.rng.choice(list(self.V1_TYPES))

    def layer(self, index):
        name, kind, blobs = self.name(index), self.layer_type(index), self.blobs(index)
        if self.format == "v2":
            return self.v2_layer(index, name, kind, blobs)
        return self.v1_layer(index, name, kind, blobs)

    def structure(self, index, bottom, top, v1):
        fields = []
        for _ in range(self.rng.randrange(0, 3) if self.args.structure else 1 if self.args.tiny else 0):
            fields.append(field_bytes(2 if v1 else 3, b"blob%d" % self.rng.randrange(max(1, index))))
        for _ in range(self.rng.randrange(1, 3) if self.args.structure else 1 if self.args.tiny else 0):
            fields.append(field_bytes(3 if v1 else 4, b"blob%d" % index))
        if not self.args.structure:
            return fields
        if self.rng.random() < 0.3:
            fields.append(field_bytes(32 if v1 else 8, self.rule()))
        if self.rng.random() < 0.2:
            fields.append(field_bytes(33 if v1 else 9, self.rule()))
        if not v1:
            if self.rng.random() < 0.4:
                fields.append(field_varint(10, self.rng.randrange(2)))
            for i in range(self.rng.randrange(3)):
                fields.append(field_bytes(6, self.param_spec(i)))
        else:
            for i in range(self.rng.randrange(3)):
                fields.append(field_bytes(1001, b"shared_%d" % i))
            fields.append(packed_floats(7, [1.0, 2.0]))
        return fields

    def v2_layer(self, index, name, kind, blobs):
        fields = [field_bytes(1, name), field_bytes(2, kind.encode())]
        fields += self.structure(index, b"", b"", False)
        params = self.layer_params(kind) if self.args.structure else None
        if params:
            fields.append(field_bytes(params[0], params[2] + self.unknown()))
        fields += [field_bytes(7, b) for b in blobs]
        fields += [self.unknown(), self.unknown()]
        if self.args.unknown:
            self.rng.shuffle(fields)
        # An over-long length now and then: valid protobuf, and a writer must keep its bytes.
        return field_bytes(100, b"".join(fields), 2 if self.args.unknown and self.rng.random() < 0.1 else 0)

    def v1_layer(self, index, name, kind, blobs):
        type_value = self.V1_TYPES[kind]
        if self.format == "v0":
            v0 = field_bytes(1, name) + field_bytes(2, kind.lower().encode()) + self.unknown()
            v0 += b"".join(field_bytes(50, b) for b in blobs) + field_varint(3, 10)
            fields = [field_bytes(1, v0)]
            if self.rng.random() < 0.5:
                fields.append(field_varint(5, type_value))
        else:
            fields = [field_bytes(4, name), field_varint(5, type_value)]
            fields += [field_bytes(6, b) for b in blobs]
        fields += self.structure(index, b"", b"", True)
        params = self.layer_params(kind) if self.args.structure else None
        if params and params[1]:
            fields.append(field_bytes(params[1], params[2]))
        fields.append(self.unknown())
        return field_bytes(2, b"".join(fields))

    def write(self, out):
        out.write(self.unknown())
        out.write(field_bytes(1, b"synthetic_%s_%d" % (self.format.encode(), self.args.seed)))
        for index in range(self.args.layers):
            out.write(self.layer(index))
            out.write(self.unknown())
        if self.args.huge:
            self.write_huge(out)
        out.write(self.unknown())

    def write_huge(self, out):
        """One layer with one blob of args.huge bytes of float data, written in pieces."""
        count = self.args.huge // 4
        payload = count * 4
        values = tag(5, LENGTH) + varint(payload)
        shape = self.blob_shape_bytes([count])
        blob_size = len(shape) + len(values) + payload
        blob_field = tag(7 if self.format == "v2" else 6, LENGTH) + varint(blob_size)
        name = field_bytes(1 if self.format == "v2" else 4, b"huge")
        kind = field_bytes(2, b"InnerProduct") if self.format == "v2" else field_varint(5, 14)
        layer_size = len(name) + len(kind) + len(blob_field) + blob_size
        out.write(tag(100 if self.format == "v2" else 2, LENGTH) + varint(layer_size) + name + kind + blob_field)
        out.write(shape + values)
        chunk = struct.pack("<4f", 0.5, -1.25, 2.0, 0.0) * (1 << 16)
        left = payload
        while left:
            piece = chunk[:min(left, len(chunk))]
            out.write(piece)
            left -= len(piece)

    @staticmethod
    def blob_shape_bytes(dims):
        return field_bytes(7, field_bytes(1, b"".join(varint(d) for d in dims)))


def prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def main():
    parser = argparse.ArgumentParser(usage=__doc__.split("usage: ")[1].split("\n")[0], add_help=True,
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--format", choices=["v2", "v1", "v0"], default="v2")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--names", choices=["plain", "hostile"], default="plain")
    parser.add_argument("--blobs", default="mixed")
    parser.add_argument("--max-values", type=int, default=64)
    parser.add_argument("--empty-blobs", type=int, default=0)
    parser.add_argument("--huge", type=int, default=0)
    for flag in ("unknown", "unpacked", "doubles", "diffs", "structure", "tiny", "all"):
        parser.add_argument("--" + flag, action="store_true")
    args = parser.parse_args()
    if args.all:
        args.names, args.unknown, args.unpacked, args.doubles, args.diffs, args.structure = (
            "hostile", True, True, True, True, True)
    net = Net(args)
    if args.out == "-":
        net.write(sys.stdout.buffer)
    else:
        with open(args.out, "wb") as out:
            net.write(out)


if __name__ == "__main__":
    main()
