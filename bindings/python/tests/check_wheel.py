#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks the binary wheel (bindings/python/test.sh runs it on auditwheel repair's output):
auditwheel show calls it manylinux and finds no library outside the wheel but glibc's; the
wheel holds libcblob.so.1, the program and the bundled BLIS, protobuf-c and Jansson (zlib, which
cblob's zip reader and writer use, is a library manylinux lets a wheel take from the system), and
every ELF file's run path stays inside the wheel ($ORIGIN...).

usage: check_wheel.py WHEEL
"""
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}


def fail(message):
    sys.exit(f"check_wheel: {message}")


def main(wheel):
    show = subprocess.run(["auditwheel", "show", wheel], capture_output=True, text=True, check=True).stdout
    text = " ".join(show.split())
    print(text)
    if not re.search(r'consistent with the following platform tag: "manylinux_2_\d+_x86_64"', text):
        fail("auditwheel does not call the wheel manylinux")
    external = set(re.findall(r"(\S+\.so[.\d]*) with versions", text))
    bundled_prefixes = ("libcblob.so", "libprotobuf-c-", "libblis-", "libjansson-", "libzip-", "libz-", "libcrypto-",
                        "libbz2-", "liblzma-", "libzstd-", "libgnutls-", "libnettle-")
    inside = {n for n in external if n.startswith(bundled_prefixes)}
    if external - GLIBC - inside:
        fail(f"libraries from outside the wheel: {sorted(external - GLIBC - inside)}")
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as folder:
        names = z.namelist()
        for needed in ("cblob/libcblob.so.1", "cblob/bin/cblob", "cblob/_raw.py", "cblob/py.typed"):
            if needed not in names:
                fail(f"{needed} is not in the wheel")
        bundled = [n for n in names if n.startswith("cblob.libs/")]
        for prefix in ("cblob.libs/libblis-", "cblob.libs/libprotobuf-c-", "cblob.libs/libjansson-"):
            if not any(n.startswith(prefix) for n in bundled):
                fail(f"no {prefix}* bundled: {bundled}")
        z.extractall(folder)
        for name in ("cblob/libcblob.so.1", "cblob/bin/cblob"):
            dynamic = subprocess.run(["readelf", "-d", str(Path(folder) / name)], capture_output=True, text=True,
                                     check=True).stdout
            paths = re.findall(r"R(?:UN)?PATH\).*\[(.*)\]", dynamic)
            if not paths or any(not p.startswith("$ORIGIN") for p in paths[0].split(":")):
                fail(f"{name}'s run path leaves the wheel: {paths}")
    print(f"check_wheel: {Path(wheel).name}: manylinux, BLIS, protobuf-c and Jansson bundled, run paths inside")


if __name__ == "__main__":
    main(sys.argv[1])
