# SPDX-License-Identifier: BSD-2-Clause
"""What the GPU kernels compile to, read from the SASS (no GPU needed).

Compiles every kernel family (generated/cuda/<family>.cu, the sources the library embeds) with the
real NVRTC for sm_90 and sm_80, with the library's options (cuda/cuda_jit.c: --fmad=false), and
disassembles the cubins with cuobjdump (from PyPI: scripts/sass-tools.sh). For each kernel it prints
the registers per thread and its hot loop: of the innermost loops that touch global memory (a
backward branch whose body holds LDG or STG and no other backward branch), the one handling the
most elements per pass (the unrolled main loop; the others are remainders run at most a few
times), with its instructions and the elements one pass handles: the bytes its global stores write
(its loads read, for a reduction, which stores nothing in the loop) divided by the element size.
Instructions per element is their ratio. A kernel with two paths, one through shared memory (LDS or
STS in the loop: the transpose's tiles) and one without, gets a row for each. --all-loops lists
every loop, outer loops (marked "outer": their body holds the inner loop's instructions once, and
its elements) and remainders too.

Targets (issue 13): transpose at most 24 instructions per element, strided copy at most 12,
element-wise kernels at most 10.

    python3 bench/bench_sass.py [--nvrtc libnvrtc.so.13] [--families axpy,transpose] [--all-loops]
"""
import argparse
import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCHS = ["sm_90", "sm_80"]
ELEMENT_BYTES = {"f32": 4, "f64": 8, "i32": 4, "u32": 4}
TARGETS = {"transpose": 24, "copy_strided": 12}
ELEMENT_WISE_TARGET = 10
REDUCTIONS = {"asum", "sumsq"}


def find_nvrtc(given):
    candidates = [given, os.environ.get("CBLOB_NVRTC_LIBRARY"), "libnvrtc.so.13",
                  os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64", "libnvrtc.so.13"),
                  "/usr/local/cuda/lib64/libnvrtc.so.13"]
    for name in candidates:
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    sys.exit("bench_sass: no NVRTC (libnvrtc.so.13); give --nvrtc")


def compile_cubin(nvrtc, source, name, arch):
    program = ctypes.c_void_p()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(program), source, name.encode(), 0, None, None) != 0:
        sys.exit(f"bench_sass: NVRTC cannot create {name}")
    options = (ctypes.c_char_p * 2)(f"--gpu-architecture={arch}".encode(), b"--fmad=false")
    result = nvrtc.nvrtcCompileProgram(program, 2, options)
    if result != 0:
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        sys.exit(f"bench_sass: NVRTC failed on {name} for {arch}: {log.value.decode(errors='replace')}")
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetCUBINSize(program, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetCUBIN(program, cubin)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
    return cubin.raw


def sass_tools():
    folder = subprocess.run([os.path.join(ROOT, "scripts", "sass-tools.sh")], check=True, capture_output=True,
                            text=True).stdout.strip()
    env = dict(os.environ, PATH=folder + os.pathsep + os.environ.get("PATH", ""))
    return os.path.join(folder, "cuobjdump"), env


INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")


def functions(sass):
    """{kernel: [(address, opcode, operands)]} from cuobjdump -sass."""
    found, current = {}, None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = found.setdefault(m.group(1), [])
            continue
        m = INSTRUCTION.search(line)
        if m and current is not None:
            current.append((int(m.group(1), 16), m.group(3), m.group(4)))
    return found


def registers(usage):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"Function (\S+):\s*\n\s*REG:(\d+)", usage)}


def access_bytes(opcode):
    """Bytes one LDG/STG moves, from its width suffix (32 bits without one)."""
    for suffix, size in ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1)):
        if suffix in opcode:
            return size
    return 4


def backward_branches(code):
    """(start, end) of each loop: a branch back to an earlier address."""
    found = []
    for address, opcode, operands in code:
        m = re.search(r"0x([0-9a-f]+)", operands)
        if opcode.startswith("BRA") and m and int(m.group(1), 16) < address:
            found.append((int(m.group(1), 16), address))
    return found


def loops(code):
    """Each loop whose body touches global memory: (instructions, stored, loaded, innermost, shared)."""
    result = []
    branches = backward_branches(code)
    for start, end in branches:
        body = [o for a, o, _ in code if start <= a <= end]
        stored = sum(access_bytes(o) for o in body if o.startswith("STG"))
        loaded = sum(access_bytes(o) for o in body if o.startswith("LDG"))
        innermost = not any(start <= s and e <= end and (s, e) != (start, end) for s, e in branches)
        shared = any(o.startswith(("LDS", "STS")) for o in body)
        if stored or loaded:
            result.append((len(body), stored, loaded, innermost, shared))
    return result


def target_for(family):
    return TARGETS.get(family, None if family in REDUCTIONS else ELEMENT_WISE_TARGET)


def written_bytes(family, suffix):
    """Bytes of an element a kernel writes: the target's for a conversion family, else the dtype's."""
    if family.startswith(("convert_to_", "truncate_to_")):
        return ELEMENT_BYTES[family.rsplit("_", 1)[-1]]
    return ELEMENT_BYTES.get(suffix, 4)


def hot_loops(found, elements_of):
    """The innermost loop with the most elements per pass; one per path when a kernel has a
    shared-memory path and a direct one."""
    innermost = [loop for loop in found if loop[-2]]
    paths = [[loop for loop in innermost if loop[-1]], [loop for loop in innermost if not loop[-1]]]
    paths = [path for path in paths if path] or [found]
    return [max(path, key=lambda loop: (elements_of(loop), -loop[0])) for path in paths]


def report(family, arch, cubin, cuobjdump, env, rows, all_loops):
    with tempfile.NamedTemporaryFile(suffix=".cubin") as file:
        file.write(cubin)
        file.flush()
        sass = subprocess.run([cuobjdump, "-sass", file.name], check=True, capture_output=True, text=True, env=env).stdout
        usage = subprocess.run([cuobjdump, "-res-usage", file.name], check=True, capture_output=True, text=True,
                               env=env).stdout
    regs = registers(usage)
    for kernel, code in sorted(functions(sass).items()):
        suffix = kernel.rsplit("_", 1)[-1]
        element = written_bytes(family, suffix)
        read_element = ELEMENT_BYTES.get(suffix, 8 if kernel == "cblob_sum_parts" else 4)
        found = loops(code)
        if not found:
            rows.append((kernel, arch, regs.get(kernel, 0), "-", "-", "-", "", target_for(family), "no loop"))
            continue
        def elements_of(loop):
            return loop[1] / element if loop[1] else loop[2] / read_element

        for loop in (found if all_loops else hot_loops(found, elements_of)):
            instructions, _, _, innermost, shared = loop
            elements = elements_of(loop)
            per_element = instructions / elements
            target = target_for(family)
            verdict = "-" if target is None else ("meets" if per_element <= target else "MISSES")
            kind = ", ".join(word for word, yes in (("shared memory", shared), ("outer", not innermost)) if yes)
            rows.append((kernel, arch, regs.get(kernel, 0), instructions, f"{elements:g}", f"{per_element:.1f}", kind,
                         target, verdict))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nvrtc")
    parser.add_argument("--families", help="comma-separated family names (default: all)")
    parser.add_argument("--all-loops", action="store_true", help="every loop touching global memory, not only the hot one")
    args = parser.parse_args()
    nvrtc = find_nvrtc(args.nvrtc)
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    cuobjdump, env = sass_tools()
    wanted = set(args.families.split(",")) if args.families else None
    sources = sorted(glob.glob(os.path.join(ROOT, "generated", "cuda", "*.cu")))
    rows = []
    for path in sources:
        family = os.path.splitext(os.path.basename(path))[0]
        if wanted and family not in wanted:
            continue
        source = open(path, "rb").read()
        for arch in ARCHS:
            report(family, arch, compile_cubin(nvrtc, source, f"cblob_{family}.cu", arch), cuobjdump, env, rows,
                   args.all_loops)
    print(f"NVRTC {major.value}.{minor.value}, options --fmad=false; the hot loop of each kernel")
    header = ("kernel", "arch", "regs", "loop instr", "elements/pass", "instr/element", "loop", "target", "verdict")
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(str(value).ljust(width) for value, width in zip(row, widths)).rstrip())
    misses = sum(1 for row in rows if row[-1] == "MISSES" and "outer" not in row[-3])
    print(f"{misses} loop(s) miss their target" if misses else "every loop meets its target")


if __name__ == "__main__":
    main()
