#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks the binary wheel (bindings/python/test.sh runs it on build-wheel.sh's output):
auditwheel show calls it manylinux and finds no library outside the wheel but glibc's; the
wheel holds libcblob.so.1, the program and the bundled BLIS, protobuf-c and Jansson (zlib, which
cblob's zip reader and writer use, is a library manylinux lets a wheel take from the system), and
every ELF file's run path stays inside the wheel
($ORIGIN...); .dist-info/licenses holds cblob's license and one for every bundled library, each
listed in METADATA; Requires-Python is pyproject.toml's. It prints the manylinux policy the wheel
meets and, for each ELF file, the newest glibc symbol version it needs (what keeps the policy
where it is).

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
        bundled = [n for n in names if n.startswith("cblob.libs/") and not n.endswith("/")]
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
        check_licenses(z, names, bundled)
        check_requires_python(z, names)
        for name in ["cblob/libcblob.so.1", "cblob/bin/cblob"] + bundled:
            symbols = subprocess.run(["objdump", "-T", str(Path(folder) / name)], capture_output=True, text=True,
                                     check=True).stdout
            versions = sorted({tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+\.\d+)", symbols)})
            print(f"  {name}: newest glibc symbol version {'.'.join(map(str, versions[-1])) if versions else '-'}")
    tag = re.search(r"manylinux_(\d+)_(\d+)_x86_64", Path(wheel).name)
    print(f"check_wheel: {Path(wheel).name}: manylinux_{tag.group(1)}_{tag.group(2)}; BLIS, protobuf-c and "
          "Jansson bundled with their licenses, run paths inside")


def check_licenses(z, names, bundled):
    dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    metadata = z.read(f"{dist_info}/METADATA").decode()
    listed = set(re.findall(r"^License-File: (.+)$", metadata, re.M))
    licenses = {n.split("/licenses/", 1)[1] for n in names if n.startswith(f"{dist_info}/licenses/") and not n.endswith("/")}
    if "LICENSE" not in licenses or b"BSD 2-Clause" not in z.read(f"{dist_info}/licenses/LICENSE"):
        fail(f"cblob's own license is not in {dist_info}/licenses: {sorted(licenses)}")
    for library in bundled:
        stem = re.sub(r"-[0-9a-f]{8}\.so.*", "", library.split("/")[-1])
        if f"{stem}.copyright" not in licenses:
            fail(f"{library} is bundled without its license ({stem}.copyright): {sorted(licenses)}")
    if licenses != listed:
        fail(f"METADATA's License-File entries {sorted(listed)} are not the licenses {sorted(licenses)}")


def check_requires_python(z, names):
    dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    metadata = z.read(f"{dist_info}/METADATA").decode()
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    wanted = re.search(r'^requires-python = "(.+)"', pyproject, re.M).group(1)
    found = re.search(r"^Requires-Python: (.+)$", metadata, re.M)
    if not found or found.group(1).strip() != wanted:
        fail(f"Requires-Python is {found and found.group(1)!r}, not pyproject.toml's {wanted!r}")


if __name__ == "__main__":
    main(sys.argv[1])
