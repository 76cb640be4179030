#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks the binary wheel (bindings/python/test.sh runs it on build-wheel.sh's output):
auditwheel show calls it manylinux and finds no library outside the wheel but glibc's; the
wheel holds libcblob.so.1, the program and the bundled BLIS, protobuf-c and Jansson (zlib, which
cblob's zip reader and writer use, is a library manylinux lets a wheel take from the system), and
every ELF file's run path stays inside the wheel
($ORIGIN...); .dist-info/licenses holds cblob's license and one for every bundled library, each
listed in METADATA; Requires-Python is pyproject.toml's. The wheel installs on glibc 2.17
(manylinux2014: RHEL 7 and 8, Amazon Linux 2, Ubuntu 20.04, Debian 11): auditwheel's policy and
the wheel's tag are manylinux_2_17, and no ELF file in it needs a glibc symbol version newer than
2.17 (objdump -T); its program's `cblob info` runs (the bundled BLIS starts on this CPU). It
prints the manylinux policy the wheel meets and, for each ELF file, the newest glibc symbol
version it needs (what keeps the policy where it is).

usage: check_wheel.py WHEEL
"""
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# The oldest glibc the wheel must run on (bindings/python/build-deps.sh builds for it).
OLDEST_GLIBC = (2, 17)
GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"}


def fail(message):
    sys.exit(f"check_wheel: {message}")


def main(wheel):
    show = subprocess.run(["auditwheel", "show", wheel], capture_output=True, text=True, check=True).stdout
    text = " ".join(show.split())
    print(text)
    policy = re.search(r'consistent with the following platform tag: "manylinux_(\d+)_(\d+)_x86_64"', text)
    if not policy:
        fail("auditwheel does not call the wheel manylinux")
    if (int(policy.group(1)), int(policy.group(2))) > OLDEST_GLIBC:
        fail(f"auditwheel's policy is manylinux_{policy.group(1)}_{policy.group(2)}: the wheel does not install on "
             f"glibc {'.'.join(map(str, OLDEST_GLIBC))}")
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
        # The bundled BLIS starts on this CPU (a BLIS built for no sub-configuration of it aborts
        # at its first call), loaded through the run paths alone.
        program = Path(folder) / "cblob/bin/cblob"
        program.chmod(0o755)  # zipfile does not keep the mode bits
        info = subprocess.run([str(program), "info"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        if info.returncode != 0 or "BLIS" not in info.stdout:
            fail(f"the wheel's `cblob info` failed ({info.returncode}): {info.stdout}{info.stderr}")
        print("  " + next(line.strip() for line in info.stdout.splitlines() if "BLIS" in line))
        check_requires_python(z, names)
        for name in ["cblob/libcblob.so.1", "cblob/bin/cblob"] + bundled:
            symbols = subprocess.run(["objdump", "-T", str(Path(folder) / name)], capture_output=True, text=True,
                                     check=True).stdout
            versions = sorted({tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", symbols)})
            print(f"  {name}: newest glibc symbol version {'.'.join(map(str, versions[-1])) if versions else '-'}")
            if versions and versions[-1] > OLDEST_GLIBC:
                fail(f"{name} needs glibc {'.'.join(map(str, versions[-1]))}, newer than "
                     f"{'.'.join(map(str, OLDEST_GLIBC))}")
    tags = re.findall(r"manylinux_(\d+)_(\d+)_x86_64", Path(wheel).name)
    if not tags or min((int(a), int(b)) for a, b in tags) > OLDEST_GLIBC:
        fail(f"{Path(wheel).name} is not tagged manylinux_{OLDEST_GLIBC[0]}_{OLDEST_GLIBC[1]} or older")
    print(f"check_wheel: {Path(wheel).name}: installs on glibc {'.'.join(map(str, OLDEST_GLIBC))}; BLIS, "
          "protobuf-c and Jansson bundled with their licenses, run paths inside")


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
