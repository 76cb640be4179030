#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Puts the license of every library auditwheel bundled into the repaired wheel, as its
.dist-info/licenses/<library>.copyright (PEP 639; libblis.copyright for cblob.libs/libblis-<hash>.so.4), listed in METADATA as a License-File, and
rewrites RECORD. BSD, zlib, OpenSSL's Apache-2.0 and the others require their notices in binary
redistributions; a wheel that bundles the binaries is one.

Where each text comes from: auditwheel names a bundled copy <soname stem>-<hash>.<version>; the
library it copied is the one the build's libcblob.so.1 and program load (ldd on the wheel before
repair). A library build-deps.sh built (BLIS) has its text in LICENSE_DIR/<stem>.copyright; any
other is Debian's, whose package ships the license as /usr/share/doc/<package>/copyright. The other
texts of LICENSE_DIR (zig.copyright: the compiler's runtime, linked into every ELF file) go in too.

usage: add_licenses.py REPAIRED_WHEEL UNREPAIRED_WHEEL [LICENSE_DIR]
"""
import base64
import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def fail(message):
    sys.exit(f"add_licenses: {message}")


def loaded_libraries(wheel):
    """{soname: path} of what the unrepaired wheel's ELF files load (transitively, by ldd)."""
    found = {}
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as folder:
        z.extractall(folder)
        for name in ("cblob/libcblob.so.1", "cblob/bin/cblob"):
            text = subprocess.run(["ldd", str(Path(folder) / name)], capture_output=True, text=True, check=True).stdout
            for soname, path in re.findall(r"^\s*(\S+) => (/\S+)", text, re.M):
                found[soname] = path
    return found


def debian_copyright(path):
    """The copyright file of the Debian package that ships path (merged /usr: /lib is /usr/lib)."""
    real = str(Path(path).resolve())
    for candidate in (real, real.replace("/usr/lib/", "/lib/", 1), "/usr" + real if real.startswith("/lib/") else real):
        owner = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if owner.returncode == 0:
            package = owner.stdout.split(":")[0]
            text = Path(f"/usr/share/doc/{package}/copyright")
            if text.exists():
                return package, text.read_bytes()
    fail(f"no Debian package's copyright file for {path}")


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main(repaired, unrepaired, license_dir=None):
    loaded = loaded_libraries(unrepaired)
    with zipfile.ZipFile(repaired) as z:
        entries = {info.filename: (info, z.read(info)) for info in z.infolist()}
    dist_info = next(n.split("/")[0] for n in entries if n.endswith(".dist-info/METADATA"))
    added = {}
    for name in entries:
        m = re.match(r"cblob\.libs/(lib[^/]+?)-[0-9a-f]{8}\.so[.\d]*$", name)
        if not m:
            continue
        stem = m.group(1)  # auditwheel keeps the file's name (libbz2.so.1.0.4), not the soname
        sonames = [s for s in loaded if s.split(".so")[0] == stem]
        if len(sonames) != 1:
            fail(f"{name}: {len(sonames)} loaded libraries named {stem} (ldd of the unrepaired wheel found {sorted(loaded)})")
        soname = sonames[0]
        own = Path(license_dir) / f"{stem}.copyright" if license_dir else None
        if own and own.exists():
            added[f"{dist_info}/licenses/{stem}.copyright"] = own.read_bytes()
            continue
        package, text = debian_copyright(loaded[soname])
        added[f"{dist_info}/licenses/{stem}.copyright"] = (
            b"The wheel's cblob.libs/" + name.split("/")[-1].encode() + b" is " + soname.encode() +
            b" from Debian's package " + package.encode() + b"; its copyright file follows.\n\n" + text)
    if not added:
        fail("the wheel bundles no library: was it repaired?")
    # The rest of LICENSE_DIR: what the compiler put into every ELF file (zig's compiler-rt).
    for text in sorted(Path(license_dir).glob("*.copyright")) if license_dir else []:
        added.setdefault(f"{dist_info}/licenses/{text.name}", text.read_bytes())
    metadata_name = f"{dist_info}/METADATA"
    info, metadata = entries[metadata_name]
    head, _, body = metadata.decode().partition("\n\n")
    head += "".join(f"\nLicense-File: {n.split('/licenses/', 1)[1]}" for n in sorted(added))
    entries[metadata_name] = (info, (head + "\n\n" + body).encode())
    record_name = f"{dist_info}/RECORD"
    out = Path(repaired).with_suffix(".tmp")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        lines = []
        for name, (info, data) in entries.items():
            if name == record_name:
                continue
            z.writestr(info, data)
            if not info.is_dir():  # RECORD lists files only
                lines.append(record_line(name, data))
        for name, data in sorted(added.items()):
            z.writestr(name, data)
            lines.append(record_line(name, data))
        lines.append(f"{record_name},,")
        z.writestr(record_name, "\n".join(lines) + "\n")
    out.replace(repaired)
    print(f"add_licenses: {len(added)} licenses of bundled code in {Path(repaired).name}: "
          f"{', '.join(sorted(n.rsplit('/', 1)[1] for n in added))}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
