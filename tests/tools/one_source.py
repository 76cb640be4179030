#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""One source for every surface (issue 23): checks on the code and on the built program.

    one_source.py CHECK --source DIR [--tool CBLOB] [--data DIR] [--work DIR]

Checks:
    program_links_the_public_abi   tools/CMakeLists.txt compiles no file of src/io, and the cblob
                                   program holds no copy of the error core or src/io (nm): the
                                   library reads, writes and identifies files for it
    inputs_opened_once             strace: `cblob inspect` and `cblob convert` open each input
                                   once and read about its size once (1.1 read every input twice)
    one_codec_each                 one varint decoder, one half-float converter, one .npy header
                                   parser, one UTF-8 validator in src/, cuda/ and tools/
    internal_calls                 code of the library (src/ but libcblob_mpi, cuda/) calls no
                                   public entry point: one would rename the failing function
                                   that cblob_last_error_function reports
    one_allocator                  no raw malloc, calloc, realloc, strdup, strndup (or aligned
                                   and array forms) in src/ and cuda/ outside src/util/alloc.c:
                                   every host allocation can be made to fail (issue 27)
    one_allocator_self_test        one_allocator fails on a copy of the tree with a raw malloc
    core_names_no_upper_layer      src/core includes no header of a folder that includes the core
                                   (no circle), but for the backend registry (src/core/backends.c)
                                   (issue 29)
    threads_in_one_place           the library starts threads only in src/threads (issue 29)

Exits 77 (skipped) with a reason when a tool it needs (nm, strace) cannot run here.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIPPED = 77


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIPPED)


def fail(what):
    print(f"FAILED: {what}")
    sys.exit(1)


def sources(root, folders, suffixes=(".c", ".h")):
    for folder in folders:
        for base, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if name.endswith(suffixes):
                    yield os.path.join(base, name)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def program_links_the_public_abi(args):
    with open(os.path.join(args.source, "tools", "CMakeLists.txt")) as f:
        cmake = strip_comments(re.sub(r"#[^\n]*", "", f.read()))
    if "src/io" in cmake or "status.c" in cmake:
        fail("tools/CMakeLists.txt compiles a file of src/io or the error core")
    if shutil.which("nm") is None:
        skip("nm is not installed (binutils)")
    symbols = subprocess.run(["nm", args.tool], capture_output=True, text=True, check=True).stdout.split("\n")
    defined = [line.split()[-1] for line in symbols if len(line.split()) == 3 and line.split()[1] in "TtDdBbRr"]
    copies = [name for name in defined if re.match(r"cb_(fail|output_|input_|out_dir_|last_error|npy_|varint_|half_)", name)]
    if copies:
        fail(f"the program holds copies of the library's code: {', '.join(sorted(copies))}")
    print(f"the program defines {len(defined)} symbols, none of the error core, src/io or the codecs")


def traced_opens(args, command, path):
    """The program's openat calls of path, and the bytes it read from descriptors of it."""
    log = os.path.join(args.work, "trace")
    # LeakSanitizer cannot run under ptrace: the sanitizer build's leaks are its own tests' to find.
    env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    result = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,open,read,pread64,close", "-o", log, args.tool]
                            + command, capture_output=True, env=env)
    if result.returncode != 0:
        with open(log) as f:
            traced = f.read()
        if "PTRACE" in traced or "Operation not permitted" in result.stderr.decode(errors="replace"):
            skip("strace cannot trace here (ptrace is not permitted)")
        fail(f"cblob {' '.join(command)} exited {result.returncode}: {result.stderr.decode(errors='replace')}")
    opens, fds, read = 0, set(), 0
    with open(log) as f:
        for line in f:
            m = re.search(r'open(?:at)?\((?:AT_FDCWD, )?"([^"]*)".*\)\s+=\s+(\d+)', line)
            if m and os.path.realpath(m.group(1)) == os.path.realpath(path):
                opens += 1
                fds.add(m.group(2))
                continue
            m = re.search(r"p?read(?:64)?\((\d+), .*\)\s+=\s+(\d+)", line)
            if m and m.group(1) in fds:
                read += int(m.group(2))
            m = re.search(r"close\((\d+)\)", line)
            if m:
                fds.discard(m.group(1))
    return opens, read


def inputs_opened_once(args):
    if shutil.which("strace") is None:
        skip("strace is not installed (scripts/setup.sh installs it)")
    model = os.path.join(args.data, "lenet_iter_10000.caffemodel")
    size = os.path.getsize(model)
    out = os.path.join(args.work, "out.npz")
    folder = os.path.join(args.work, "npy")
    back = os.path.join(args.work, "back.caffemodel")
    for command, inputs in ((["inspect", model], [model]), (["inspect", "--json", model], [model]),
                            (["convert", model, "-o", out], [model]), (["convert", model, "--to", "npy", folder], [model]),
                            (["convert", out, "--like", model, "-o", back], [out, model]),
                            # diff opens a lazily read input again only past 64 MiB of its values.
                            (["diff", model, out], [model, out])):
        for path in inputs:
            opens, read = traced_opens(args, command, path)
            if opens != 1:
                fail(f"cblob {' '.join(command)} opened {path} {opens} times")
            whole = os.path.getsize(path)
            # The first 64 KiB are read to tell the kind, then the reader of that kind reads.
            if read > whole + (64 << 10) + 4096:
                fail(f"cblob {' '.join(command)} read {read} bytes of the {whole}-byte {path}")
    print(f"each input opened once, and read about once ({size} bytes of LeNet)")


# What each codec's one implementation looks like, and the file it lives in.
CODECS = [
    ("varint decoder", re.compile(r"&\s*0x7f\)?\s*<<"), {"src/util/varint.c"}),
    ("half-float converter", re.compile(r"0x3ff\b|\b0x7c00\b"), {"src/util/half.c"}),
    (".npy header parser", re.compile(r"fortran_order"), {"src/util/npy.c"}),
    ("UTF-8 validator", re.compile(r"0xc2\b.*0xdf\b|0xdfff\b"), {"src/util/utf8.c"}),
]


def one_codec_each(args):
    found = {name: set() for name, _, _ in CODECS}
    for path in sources(args.source, ["src", "cuda", "tools"]):
        with open(path, errors="replace") as f:
            text = strip_comments(f.read())
        relative = os.path.relpath(path, args.source)
        for name, pattern, _ in CODECS:
            if pattern.search(text) and not relative.endswith(".h"):
                found[name].add(relative)
    for name, _, home in CODECS:
        if found[name] != home:
            fail(f"the {name} is in {sorted(found[name])}, not only in {sorted(home)}")
    print("; ".join(f"one {name} ({', '.join(sorted(home))})" for name, _, home in CODECS))


def internal_calls(args):
    public = set()
    for path in sources(args.source, ["include/cblob"], (".h",)):
        with open(path) as f:
            # Calls that can fail or enter (cblob_status, void): a getter of text cannot rename a failure.
            public.update(re.findall(r"CBLOB_API\s+(?:cblob_status|void)\s+(cblob_[a-z0-9_]+)\s*\(", f.read()))
    if not public:
        fail("no public function found in include/cblob")
    calls = []
    for path in sources(args.source, ["src", "cuda"], (".c",)):
        relative = os.path.relpath(path, args.source)
        if relative.startswith("src/comm/mpi/"):
            continue  # libcblob_mpi is a library of its own: a user of the public ABI
        with open(path) as f:
            text = strip_comments(f.read())
        for number, line in enumerate(text.split("\n"), 1):
            if line.startswith("CBLOB_API"):
                continue  # a definition
            for name in re.findall(r"\b(cblob_[a-z0-9_]+)\s*\(", line):
                if name in public:
                    calls.append(f"{relative}:{number}: {name}")
    if calls:
        fail("the library calls its public entry points (which rename the failing call):\n  " + "\n  ".join(calls))
    print(f"no code of the library calls one of the {len(public)} public functions")


# The one allocator (src/util/alloc.h) and the calls it stands for. A call through a pointer
# (allocator->malloc, .malloc) or with a prefix (cb_malloc, json_malloc) is not a raw one.
ALLOCATOR_HOME = "src/util/alloc.c"
RAW_ALLOCATION = re.compile(
    r"(?<![\w.>])(malloc|calloc|realloc|reallocarray|strdup|strndup|aligned_alloc|posix_memalign|memalign|valloc)\s*\(")
# PENDING: folders not yet moved to the allocator. Empty since every folder moved (issue 27); nothing
# may be added to it.
PENDING = []


def strip_strings(text):
    return re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)


def raw_allocations(root):
    found = []
    for path in sources(root, ["src", "cuda"]):
        relative = os.path.relpath(path, root)
        if relative == ALLOCATOR_HOME or any(relative.startswith(folder + "/") for folder in PENDING):
            continue
        with open(path, errors="replace") as f:
            text = strip_strings(strip_comments(f.read()))
        for number, line in enumerate(text.split("\n"), 1):
            for m in RAW_ALLOCATION.finditer(line):
                found.append(f"{relative}:{number}: {m.group(1)}")
    return found


def one_allocator(args):
    found = raw_allocations(args.source)
    if found:
        fail("raw allocations outside src/util/alloc.c (use cb_malloc and friends, src/util/alloc.h, so that a "
             "test can make them fail):\n  " + "\n  ".join(found))
    print(f"no raw allocation in src/ and cuda/ outside {ALLOCATOR_HOME}" +
          (f"; not yet checked: {', '.join(PENDING)}" if PENDING else ""))


def one_allocator_self_test(args):
    """one_allocator must see a raw malloc added to a file it checks (src/formats is not pending)."""
    scratch = tempfile.mkdtemp(dir=args.work)
    shutil.copytree(os.path.join(args.source, "src"), os.path.join(scratch, "src"))
    os.makedirs(os.path.join(scratch, "cuda"))
    if raw_allocations(scratch):
        fail("the tree is not clean before the raw malloc is added")
    with open(os.path.join(scratch, "src", "formats", "added.c"), "w") as f:
        f.write('/* malloc( in a comment */\nstatic const char *t = "strdup(";\nvoid *f(void) { return malloc(4); }\n')
    found = raw_allocations(scratch)
    if found != ["src/formats/added.c:3: malloc"]:
        fail(f"one_allocator found {found} in a tree with one raw malloc in src/formats/added.c, line 3")
    print("one_allocator finds the one raw malloc added, and nothing in comments or strings")
def folder_of(relative):
    """The folder a file of src/ or cuda/ is about: src/<folder>/..., or cuda."""
    parts = relative.split(os.sep)
    return "cuda" if parts[0] == "cuda" else parts[1] if len(parts) > 2 else "src"


def core_names_no_upper_layer(args):
    # Internal headers are included by name (every src/ folder is on the include path), or with
    # their folder ("comm/comm.h", "core/run_kernels.h" of generated/core).
    owners, includes = {}, {}
    for path in sources(args.source, ["src", "cuda"]):
        relative = os.path.relpath(path, args.source)
        if relative.endswith(".h"):
            owners.setdefault(os.path.basename(path), set()).add(folder_of(relative))
        with open(path) as f:
            includes[relative] = re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), flags=re.M)
    folders = set(folder_of(r) for r in includes)

    def targets(name):
        first = name.split("/")[0]
        return {first} if "/" in name and first in folders else owners.get(os.path.basename(name), set())

    edges = {}
    for relative, names in includes.items():
        for name in names:
            for target in targets(name) - {folder_of(relative)}:
                edges.setdefault((folder_of(relative), target), []).append(f"{relative}: {name}")
    registry = os.path.join("src", "core", "backends.c")
    circles = [f"{where} (and {edges[(upper, 'core')][0]})"
               for (lower, upper), found in sorted(edges.items()) if lower == "core" and (upper, "core") in edges
               for where in found if not where.startswith(registry + ":")]
    if circles:
        fail("src/core includes a folder that includes it:\n  " + "\n  ".join(circles))
    print(f"src/core includes none of the {len([e for e in edges if e[1] == 'core'])} folders that include it "
          "(the backend registry apart)")


def threads_in_one_place(args):
    starts = []
    for path in sources(args.source, ["src", "cuda"], (".c",)):
        relative = os.path.relpath(path, args.source)
        if relative.startswith(os.path.join("src", "threads") + os.sep):
            continue
        with open(path) as f:
            text = strip_comments(f.read())
        for number, line in enumerate(text.split("\n"), 1):
            if re.search(r"\b(pthread_create|thrd_create)\s*\(", line):
                starts.append(f"{relative}:{number}")
    if starts:
        fail("threads started outside src/threads (threads.h: the pool, or a lane):\n  " + "\n  ".join(starts))
    print("every thread of the library is started in src/threads")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("check", choices=["program_links_the_public_abi", "inputs_opened_once", "one_codec_each",
                                          "internal_calls", "one_allocator", "one_allocator_self_test",
                                          "core_names_no_upper_layer", "threads_in_one_place"])
    parser.add_argument("--source", required=True)
    parser.add_argument("--tool")
    parser.add_argument("--data")
    parser.add_argument("--work")
    args = parser.parse_args()
    scratch = None
    if args.work is not None:
        os.makedirs(args.work, exist_ok=True)
        scratch = args.work = tempfile.mkdtemp(dir=args.work)
    try:
        globals()[args.check](args)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
