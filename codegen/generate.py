#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""cblob's code generator.

Reads the API description (codegen/api/*.yaml), the dtype table (codegen/dtypes.yaml) and the
kernel op table (codegen/ops.yaml), checks them, and renders every output listed in
codegen/outputs.yaml from templates/ with Jinja2 (StrictUndefined: a missing field is an error,
never an empty string).

    generate.py                 render into the repository (files are rewritten only if changed)
    generate.py --out DIR       render into DIR instead
    generate.py --check         render into a temporary folder and fail if the repository differs
    generate.py --list-outputs  print the output paths, one per line (the build reads this)
"""
import argparse
import difflib
import os
import re
import sys
import tempfile
from pathlib import Path

import jinja2
import yaml

import ffi
import manual
import safe
import safe_dlpack
import safe_records
import safe_tables
import sweep

ROOT = Path(__file__).resolve().parent.parent
CODEGEN = ROOT / "codegen"
TEMPLATES = ROOT / "templates"
# The cblob program's manual: its help, option tables, manual page and README section (manual.py).
MANUAL = ROOT / "docs" / "cblob.1.md"

# Folders whose every file must come from the generator: a stray file there is stale output.
GENERATED_ROOTS = ("generated",)

SCALAR_TYPES = {
    "void", "int32_t", "int64_t", "uint32_t", "uint64_t", "size_t", "double", "float",
    "char", "uint8_t", "int", "uint16_t",
}
PARAM_DIRS = {"in", "out", "inout"}
# opaque: a handle (typedef of an undefined struct); callback: a function pointer type; foreign: a
# struct another header defines, declared by its tag only (passed by pointer).
TYPE_KINDS = {"opaque", "callback", "foreign"}
OWNERSHIPS = {"borrowed", "caller_owns", "transfers_to_callee"}
# Kinds of value the bad-input sweep knows how to make bad (templates/tests/bad_input_sweep.c.j2).
CHECK_KINDS = {
    "attach_list", "blob_text_bytes", "blob_text_path",
    "dtype", "part", "mode", "thread_count", "bool", "num_axes", "dims", "dim", "axis", "axis_bound",
    "legacy_index", "capacity_axes", "text_capacity", "num_indices", "indices",
    "legacy_position", "buffer_bytes", "same_count_blob", "same_shape_blob",
    # NeoML operations (codegen/api/40_neoml.yaml)
    "tensor_rank", "neoml_blob", "named_dim", "compare_axes_count", "compare_axes", "same_count_dims",
    "window", "window_size", "window_position", "window_shift", "matching_dtype", "element_length",
    "same_shape_any_dtype", "blob_count", "blob_list", "neoml_blob_list", "fill_value", "object_index",
    "element_position", "element_count", "access", "mapped_buffer",
    # GPU (codegen/api/30_gpu.yaml)
    "device_index", "device_buffer", "compute_capability", "text_room",
    # DLPack (codegen/api/50_dlpack.yaml)
    "memory", "dlpack_versioned", "dlpack_legacy",
    # Caffe formats
    "blob_proto_bytes", "vector_proto_bytes", "net_proto_bytes", "proto_size", "proto_capacity",
    "blob_proto_path", "vector_proto_path", "net_proto_path", "net_text_bytes", "net_text_path", "output_path", "blob_array", "proto_blob_count",
    "blob_capacity", "net_format", "text", "layer_index", "layer_blob_index",
    # Net structure and exports
    "net_model", "layer_capacity", "structure_index", "rule_kind", "json_flags", "export_flags", "npz_flags", "read_start",
    "read_count", "read_bytes", "safetensors_bytes", "npz_bytes", "safetensors_path", "npz_path",
    # Arenas and communicators (codegen/api/60_comm.yaml)
    "arena_blobs", "arena_count", "arena_alignment", "comm_engine", "timeout_ms", "bucket_bytes",
    "comm_blobs", "comm_blob_count", "reduce_op", "comm_root", "nccl_id_size", "nccl_id", "nccl_ranks", "nccl_rank",
    # Files of any kind (codegen/api/24_files.yaml)
    "any_file_path", "open_flags", "convert_dtype", "file_descriptor", "model_file", "blobs_file", "file_blob_index",
    "output_folder", "replace_flags", "proto_flags",
}

# How the CPU dispatch cuts a kernel's work into ranges for the thread pool (ops.yaml `split`).
SPLITS = {"elements", "sum", "rows", "bands"}

# How a conversion family from a float type to an integer type drops the fraction (ops.yaml
# `rounding`): the C function its CPU kernel and its CUDA twin call.
ROUNDINGS = {"nearest_even": "rint", "toward_zero": "trunc"}

# Threads per block of every generated CUDA kernel: the launcher (templates/cuda/launch.c.j2) and
# the kernels' __launch_bounds__ read this one number.
CUDA_BLOCK_THREADS = 256
# A CUDA reduction's first pass: at most this many partial sums (the second pass's input), each
# thread with this many loads in flight (templates/cuda/_reduce_parts.j2).
CUDA_REDUCE_PARTS = 1024
CUDA_REDUCE_UNROLL = 4


class DescriptionError(Exception):
    pass


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def base_type(c_type):
    """'const cblob_blob **' -> 'cblob_blob'."""
    t = c_type.replace("const", " ").replace("*", " ")
    return " ".join(t.split())


def pointer_depth(c_type):
    return c_type.count("*")


def load_model():
    dtypes = load_yaml(CODEGEN / "dtypes.yaml")
    op_tables = load_yaml(CODEGEN / "ops.yaml")
    sections = []
    for path in sorted((CODEGEN / "api").glob("*.yaml")):
        section = load_yaml(path)
        section["file"] = path.name
        section.setdefault("constants", [])
        section.setdefault("enums", [])
        section.setdefault("types", [])
        section.setdefault("structs", [])
        section.setdefault("functions", [])
        sections.append(section)

    for section in sections:
        for enum in section["enums"]:
            if enum.get("from_dtypes"):
                enum["values"] = [
                    {"name": d["enum"], "value": d["value"], "doc": f"{d['name']} ({d['ctype']})."}
                    for d in dtypes
                ]

    model = {
        "dtypes": dtypes,
        "ops": op_tables["kernels"],
        "sections": sections,
        "enums": [e for s in sections for e in s["enums"]],
        "types": [t for s in sections for t in s["types"]],
        "structs": [t for s in sections for t in s["structs"]],
        "functions": [f for s in sections for f in s["functions"]],
        "constants": [c for s in sections for c in s["constants"]],
    }
    validate(model)
    enrich(model)
    check_cuda_twins(model)
    try:
        sweep.build(model)
        sweep.build_oom(model, load_yaml(CODEGEN / "oom_sweep.yaml"))
    except sweep.SweepError as e:
        raise DescriptionError(f"bad-input sweep: {e}") from e
    try:
        ffi.annotate(model)
    except ffi.FfiError as e:
        raise DescriptionError(f"bindings type map: {e}") from e
    try:
        safe.annotate(model)
        safe_dlpack.annotate(model)
        safe_records.annotate(model)
        safe_tables.annotate(model)
    except (safe.BindingError, ffi.FfiError, safe_dlpack.DlpackError, safe_records.RecordError) as e:
        raise DescriptionError(f"bindings' safe layers: {e}") from e
    try:
        model["manual"] = manual.annotate(manual.load(MANUAL))
    except manual.ManualError as e:
        raise DescriptionError(f"the program's manual: {e}") from e
    return model


def validate(model):
    errors = []
    known_types = set(SCALAR_TYPES)
    known_types.update(e["name"] for e in model["enums"])
    known_types.update(t["name"] for t in model["types"])
    known_types.update(t["name"] for t in model["structs"])
    known_types.update(t for t in model.get("extra_types", []))
    # Structs another header defines (DLPack's): the API spells them with their tag, which needs
    # no typedef and so no include of that header.
    known_types.update(f"struct {t['name']}" for t in model["types"] if t["kind"] == "foreign")

    for t in model["types"]:
        if t.get("kind") not in TYPE_KINDS:
            errors.append(f"type {t.get('name', '?')}: kind must be one of {sorted(TYPE_KINDS)}")

    statuses = set()
    for enum in model["enums"]:
        seen = set()
        for v in enum["values"]:
            if not v["name"].startswith("CBLOB_"):
                errors.append(f"enum value {v['name']} lacks the CBLOB_ prefix")
            if v["value"] in seen:
                errors.append(f"enum {enum['name']}: value {v['value']} used twice")
            seen.add(v["value"])
        if enum["name"] == "cblob_status":
            statuses = {v["name"] for v in enum["values"]}

    names = set()
    for fn in model["functions"]:
        where = fn.get("name", "?")
        for key in ("name", "since", "doc", "params", "statuses"):
            if key not in fn:
                errors.append(f"{where}: missing '{key}'")
        if not where.startswith("cblob_"):
            errors.append(f"{where}: exported names start with cblob_")
        if where in names:
            errors.append(f"{where}: declared twice")
        names.add(where)
        if not re.fullmatch(r"\d+\.\d+", str(fn.get("since", ""))):
            errors.append(f"{where}: 'since' must look like 1.0")
        returns = fn.get("returns", "cblob_status")
        if base_type(returns) not in known_types:
            errors.append(f"{where}: unknown return type {returns}")
        if returns == "cblob_status" and "CBLOB_OK" not in fn.get("statuses", []):
            errors.append(f"{where}: returns a status but does not list CBLOB_OK")
        for st in fn.get("statuses", []):
            if st not in statuses:
                errors.append(f"{where}: unknown status {st}")
        pnames = [p["name"] for p in fn.get("params", [])]
        for p in fn.get("params", []):
            pw = f"{where}({p.get('name', '?')})"
            if base_type(p.get("type", "")) not in known_types:
                errors.append(f"{pw}: unknown type {p.get('type')}")
            if p.get("dir", "in") not in PARAM_DIRS:
                errors.append(f"{pw}: dir must be one of {sorted(PARAM_DIRS)}")
            if p.get("ownership", "borrowed") not in OWNERSHIPS:
                errors.append(f"{pw}: ownership must be one of {sorted(OWNERSHIPS)}")
            if "check" in p and p["check"] not in CHECK_KINDS:
                errors.append(f"{pw}: unknown check kind {p['check']}")
            if "length" in p and p["length"] not in pnames:
                errors.append(f"{pw}: length names no parameter")
            if p.get("dir") == "out" and pointer_depth(p["type"]) == 0:
                errors.append(f"{pw}: an out parameter must be a pointer")
    if errors:
        raise DescriptionError("API description errors:\n  " + "\n  ".join(errors))


def enrich(model):
    """Derived fields the templates use, computed once here instead of in every template."""
    handle_types = {t["name"] for t in model["types"] if t["kind"] == "opaque"}
    foreign_types = {f"struct {t['name']}" for t in model["types"] if t["kind"] == "foreign"}
    for fn in model["functions"]:
        fn.setdefault("returns", "cblob_status")
        fn.setdefault("getter", False)
        fn.setdefault("dtype_math", False)
        fn.setdefault("sweep_after_ok", "")
        fn.setdefault("gpu", False)
        fn.setdefault("nccl", False)
        fn["returns_status"] = fn["returns"] == "cblob_status"
        fn["summary"] = fn["doc"].strip().split("\n")[0]
        for p in fn["params"]:
            p.setdefault("dir", "in")
            p.setdefault("nullable", False)
            p.setdefault("ownership", "borrowed")
            p.setdefault("check", None)
            p.setdefault("length", None)
            p.setdefault("doc", None)
            p["base"] = base_type(p["type"])
            p["depth"] = pointer_depth(p["type"])
            p["is_const"] = p["type"].strip().startswith("const")
            p["is_handle"] = p["base"] in handle_types and p["depth"] == 1
            p["is_foreign"] = p["base"] in foreign_types
            # An array of handles the callee writes (its length names the room for them).
            p["is_handle_array"] = (p["base"] in handle_types and p["depth"] == 2 and p["dir"] == "out"
                                    and p["length"] is not None)
            p["is_pointer"] = p["depth"] > 0 or p["base"].endswith("_fn")
        fn["c_params"] = ", ".join(f"{p['type']}{'' if p['type'].endswith('*') else ' '}{p['name']}"
                                   for p in fn["params"]) or "void"
    for op in model["ops"]:
        op.setdefault("blis", {})
        op.setdefault("prefer", "kernel")
        op.setdefault("cublas", False)
        op.setdefault("copy_engine", False)
        op.setdefault("may_alias", False)
        op.setdefault("wide", False)
        if "stream" in op:
            raise DescriptionError(f"kernel {op['name']}: `stream` is gone (the 256-bit variant lost to 512-bit vectors "
                                   "from 1 MiB on); see `wide` in ops.yaml")
        op.setdefault("extents", {})
        op.setdefault("n", None)
        op.setdefault("rounding", "nearest_even")
        if op["rounding"] not in ROUNDINGS:
            raise DescriptionError(f"kernel {op['name']}: rounding {op['rounding']} is none of {sorted(ROUNDINGS)}")
        op["round_fn"] = ROUNDINGS[op["rounding"]]
        op["arg_names"] = [re.split(r"[ *]", p)[-1] for p in op["params"]]
        op["cuda_params"] = [cuda_param(op, p) for p in op["params"]]
        sums = [p for p in op["cuda_params"] if p["kind"] == "sum"]
        if len(sums) > 1:
            raise DescriptionError(f"kernel {op['name']}: a CUDA reduction computes one sum, not {len(sums)}")
        op["cuda_sum"] = sums[0] if sums else None
        op.setdefault("split", "sum" if sums else "elements")
        op.setdefault("split_kib", None)
        op.setdefault("cuda_min_blocks", None)
        if op["cuda_min_blocks"] is not None and (not isinstance(op["cuda_min_blocks"], int) or op["cuda_min_blocks"] < 1):
            raise DescriptionError(f"kernel {op['name']}: cuda_min_blocks must be a whole number of blocks, at least 1")
        if op["split_kib"] is not None and (not isinstance(op["split_kib"], int) or op["split_kib"] < 1):
            raise DescriptionError(f"kernel {op['name']}: split_kib must be a whole number of KiB, at least 1")
        if op["split"] not in SPLITS or (op["split"] == "sum") != bool(sums):
            raise DescriptionError(f"kernel {op['name']}: split {op['split']} is none of {sorted(SPLITS)}, "
                                   "or `sum` for a kernel without a double * sum (or the reverse)")
    for d in model["dtypes"]:
        d["kernels"] = [op["name"] for op in model["ops"] if d["name"] in op["dtypes"]]
    model["dtype_by_name"] = {d["name"]: d for d in model["dtypes"]}
    for op in model["ops"]:
        # A kernel that only moves elements (ops.yaml `moves_bits`) serves every dtype of its size:
        # the first dtype of each size has it, the others launch that one.
        op.setdefault("moves_bits", False)
        owners = {}
        op["cuda_kernel_of"] = {}
        for name in op["dtypes"]:
            size = model["dtype_by_name"][name]["dlpack"]["bits"]
            op["cuda_kernel_of"][name] = owners.setdefault(size, name) if op["moves_bits"] else name
        op["cuda_dtypes"] = [name for name in op["dtypes"] if op["cuda_kernel_of"][name] == name]
    model["versions"] = sorted({fn["since"] for fn in model["functions"]},
                               key=lambda v: tuple(int(x) for x in v.split(".")))


def cuda_param(op, text):
    """How a kernel parameter crosses to the GPU: a device array of T, a reduction's sum (the host
    reads the result; the kernel writes partial sums), or a scalar passed by value."""
    name = re.split(r"[ *]", text)[-1]
    c_type = text[: len(text) - len(name)].strip()
    if "*" not in c_type:
        return {"name": name, "kind": "scalar", "type": c_type}
    if re.search(r"\bT\b", c_type):
        return {"name": name, "kind": "array", "type": c_type, "const": c_type.startswith("const"), "untyped": False}
    if c_type == "void *" and "target" in op:
        # The output of a conversion family: an array of the family's target dtype.
        return {"name": name, "kind": "array", "type": c_type, "const": False, "untyped": True}
    if c_type == "double *":
        # The host's result; on the device, the first pass's partial sums (templates/cuda/_reduce.j2).
        return {"name": "partials", "kind": "sum", "type": c_type, "result": name}
    raise DescriptionError(
        f"kernel {op['name']}, parameter '{text}': the CUDA launcher passes T arrays, double sums and "
        f"scalars; teach cuda_param() in codegen/generate.py and templates/cuda/launch.c.j2 this kind")


def check_cuda_twins(model):
    missing = [op["name"] for op in model["ops"]
               if not (TEMPLATES / "cuda" / "ops" / f"{op['name']}.cu.j2").is_file()]
    if missing:
        raise DescriptionError(
            "kernels without a CUDA twin: " + ", ".join(missing) + ". Every kernel in codegen/ops.yaml "
            "needs templates/cuda/ops/<name>.cu.j2 beside its CPU template (the body only: the "
            "signature is generated; templates/cuda/ops/axpy.cu.j2 is a short example).")


def expand_outputs(model):
    """(template, output path, extra context) for every file the generator writes; a section of a
    hand-written file (`splice`) has no template but the name of its renderer."""
    manifest = load_yaml(CODEGEN / "outputs.yaml")
    jobs = []
    for entry in manifest:
        if "splice" in entry:
            jobs.append((None, entry["output"], {"splice": entry["splice"]}))
        elif entry.get("per") == "dtype":
            for d in model["dtypes"]:
                jobs.append((entry["template"], entry["output"].format(dtype=d["suffix"]), {"dt": d}))
        elif entry.get("per") == "kernel":
            for op in model["ops"]:
                jobs.append((entry["template"], entry["output"].format(kernel=op["name"]), {"op": op}))
        else:
            jobs.append((entry["template"], entry["output"], {}))
    return jobs


def make_env():
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )

    def ctype(type_text, dt):
        """Writes a kernel parameter type with T replaced by the dtype's C type."""
        return re.sub(r"\bT\b", dt["ctype"], type_text)

    def comment(text, prefix=" * "):
        lines = text.strip().split("\n")
        return "\n".join((prefix + line).rstrip() for line in lines)

    def erased(type_text):
        """Writes a kernel parameter with the element type erased to void (for the table)."""
        return re.sub(r"\bT\b", "void", type_text)

    def c_string(text):
        """Writes text as a C string literal, one source line per literal piece."""
        pieces = []
        for line in text.splitlines(keepends=True):
            escaped = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            pieces.append(f'"{escaped}"')
        return "\n".join(pieces) if pieces else '""'

    def cuda_param_decl(param, dt, op):
        """A kernel parameter in CUDA: arrays get the dtype and, unless the op lets its arrays be
        the same memory (ops.yaml `may_alias`), __restrict__, as the CPU kernels do."""
        if param["kind"] == "array":
            restrict = "" if op["may_alias"] else "__restrict__ "
            return re.sub(r"\bT\b", dt["ctype"], param["type"]) + restrict + param["name"]
        if param["kind"] == "sum":
            return f"double *__restrict__ {param['name']}"
        return f"{param['type']}{'' if param['type'].endswith('*') else ' '}{param['name']}"

    def roff_escape_line(line):
        """A line of a no-fill block, as roff shows it."""
        escaped = manual.roff_escape(line)
        return ("\\&" + escaped) if escaped[:1] in (".", "'") else escaped

    env.filters["roff"] = manual.roff
    env.filters["roff_lines"] = manual.roff_lines
    env.filters["roff_escape_line"] = roff_escape_line
    env.filters["ctype"] = ctype
    env.filters["erased"] = erased
    env.filters["comment"] = comment
    env.filters["c_string"] = c_string
    env.filters["cuda_param"] = cuda_param_decl
    env.globals["cuda_block_threads"] = CUDA_BLOCK_THREADS
    env.globals["cuda_reduce_parts"] = CUDA_REDUCE_PARTS
    env.globals["cuda_reduce_unroll"] = CUDA_REDUCE_UNROLL
    return env


def render_all(model, out_root):
    env = make_env()
    written = []
    for template, output, extra in expand_outputs(model):
        if template is None:
            text = splice(model, output, extra["splice"])
        else:
            text = env.get_template(template).render(model=model, output=output, **extra)
        path = Path(out_root) / output
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            # Write then rename, so a concurrent build never compiles half a file.
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        written.append(output)
    return written


# Sections of hand-written files that the generator keeps: the renderer of each, and the lines that
# enclose it in the file (the file's own text around them is never touched).
SPLICES = {
    "readme_program": manual.readme_section,
}


def splice(model, output, name):
    """The committed file with its generated section rendered again."""
    text = (ROOT / output).read_text(encoding="utf-8")
    begin = f"<!-- {name}: generated from docs/cblob.1.md by codegen/generate.py; edit that file, not this section -->\n"
    end = f"<!-- {name} ends -->\n"
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise DescriptionError(f"{output}: the generated section {name} needs its two marker lines:\n{begin}{end}")
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + SPLICES[name](model["manual"]) + text[stop:]


def check(model):
    with tempfile.TemporaryDirectory(prefix="cblob-codegen-") as tmp:
        outputs = render_all(model, tmp)
        problems = []
        for output in outputs:
            fresh = (Path(tmp) / output).read_text(encoding="utf-8")
            committed_path = ROOT / output
            if not committed_path.exists():
                problems.append(f"{output}: missing (run codegen/generate.py)")
                continue
            committed = committed_path.read_text(encoding="utf-8")
            if committed != fresh:
                diff = difflib.unified_diff(committed.splitlines(), fresh.splitlines(),
                                            f"committed/{output}", f"regenerated/{output}",
                                            lineterm="", n=2)
                problems.append("\n".join(list(diff)[:40]))
        expected = set(outputs)
        for root in GENERATED_ROOTS:
            for path in (ROOT / root).rglob("*"):
                rel = path.relative_to(ROOT).as_posix()
                if path.is_file() and rel not in expected:
                    problems.append(f"{rel}: in generated/ but no output produces it (stale)")
        if problems:
            print("generated code is stale:\n" + "\n".join(problems), file=sys.stderr)
            return 1
        print(f"codegen: {len(outputs)} files up to date")
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="render into this folder instead of the repository")
    parser.add_argument("--check", action="store_true", help="fail if committed output is stale")
    parser.add_argument("--list-outputs", action="store_true", help="print output paths")
    args = parser.parse_args()
    try:
        model = load_model()
    except DescriptionError as e:
        print(e, file=sys.stderr)
        return 1
    if args.list_outputs:
        for _, output, _ in expand_outputs(model):
            print(output)
        return 0
    if args.check:
        return check(model)
    render_all(model, args.out or ROOT)
    if model["bindings_missing"]:
        # Not an error here (the library and the raw layers build without it), but the bindings'
        # coverage test fails until each function has a binding block or an exclusion.
        print("codegen: no binding block (codegen/bindings/) for " + ", ".join(model["bindings_missing"])
              + ": the safe layers do not reach them yet", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
