# SPDX-License-Identifier: BSD-2-Clause
"""DLPack in the Rust and Go safe layers: what is mechanical about it, generated.

generate.py calls annotate(model) after safe.annotate. Two sources:

- codegen/bindings/dlpack.yaml, DLPack's own declarations as far as the layers mirror them: the
  constants, the structs (Rust's #[repr(C)] mirrors; Go reads the C structs through cgo and
  copies DLDevice and DLDataType into values of its own), and the DLTensor fields each owned
  tensor type reads out. The dtype <-> DLDataType mapping comes from codegen/dtypes.yaml. It is
  the one DLPack table: codegen/safe_tables.py reads C#'s and Python's mirrors off it too.
- the exports and imports of codegen/api/50_dlpack.yaml, whose binding blocks say `dlpack:
  export` or `dlpack: import` (and the Rust and Go class and names): an export wraps the
  tensor the call makes in the language's owned tensor type (for Rust, with the blob's view
  tracking, the exported memory claimed for the call: for reading when `read_only`, else for
  writing); an import takes that wrapper and empties it on success only (Rust gives it back in
  ImportError on failure). Their documentation is the header's, in the language's names, with
  the block's `note` and the language's `note` after it.

What needs judgement stays hand-written beside the output: the owned tensor types (who runs the
deleter, handing over, adopting a tensor from elsewhere), host slices over a tensor, and Rust's
ImportError (bindings/rust/cblob/src/dlpack.rs, bindings/go/dlpack.go).
"""
import re
import textwrap
from pathlib import Path

import yaml

import ffi
import safe

TABLE = Path(__file__).resolve().parent / "bindings" / "dlpack.yaml"

RUST_FIELD_TYPES = {"uint8_t": "u8", "uint16_t": "u16", "int32_t": "i32", "uint32_t": "u32", "uint64_t": "u64",
                    "void *": "*mut c_void", "int64_t *": "*mut i64"}


class DlpackError(Exception):
    pass


def load_table():
    return yaml.safe_load(TABLE.read_text(encoding="utf-8"))


def constant_names(table, lang):
    """{C name: the language's name as its documentation writes it}."""
    out = {}
    for c in table["constants"]:
        if c.get(lang):
            out[c["c"]] = f"[`{c[lang]}`]" if lang == "rust" else c[lang]
    return out


def translate_constants(text, table, lang):
    names = constant_names(table, lang)
    return re.sub(r"\b(kDL\w+|DLPACK_FLAG_\w+)\b", lambda m: names.get(m.group(0), m.group(0)), text)


def code_constant(table, code, lang):
    return next(c[lang] for c in table["constants"] if c["group"] == "code" and c["value"] == code)


def dtype_names(model, lang):
    """[(dtype row, the language's name of its cblob_dtype value)] in dtypes.yaml's order."""
    values = {v["c"]: v for e in model["ffi"]["enums"] for v in e["values"]}
    key = {"rust": "rust", "go": "go"}[lang]
    out = []
    for d in model["dtypes"]:
        name = values[d["enum"]]["names"][key]
        out.append((d, f"DType::{name}" if lang == "rust" else f"DType{name}"))
    return out


# ---- the exports and imports ----------------------------------------------------------------------


def struct_of(param):
    """The struct a parameter points to, without its tag ("struct DLManagedTensor" -> DLManagedTensor)."""
    return param["base"].removeprefix("struct ")


class Transfer:
    """One export or import function, read off its parameters."""

    def __init__(self, fn, block, table):
        self.fn = fn
        self.block = block
        params = fn["params"]
        outs = [p for p in params if p["dir"] == "out"]
        tensors = table["tensors"]
        tensor_in = [p for p in params if p["dir"] == "in" and struct_of(p) in tensors]
        self.kind = block["dlpack"]
        if self.kind == "export":
            if len(outs) != 1 or struct_of(outs[0]) not in tensors or outs[0].get("ownership") != "caller_owns":
                raise DlpackError(f"{fn['name']}: an export gives one new DLPack tensor the caller owns")
            self.tensor = outs[0]
        elif self.kind == "import":
            if len(tensor_in) != 1 or tensor_in[0].get("ownership") != "transfers_to_callee":
                raise DlpackError(f"{fn['name']}: an import takes one DLPack tensor (ownership: transfers_to_callee)")
            self.tensor = tensor_in[0]
        else:
            raise DlpackError(f"{fn['name']}: dlpack: {self.kind!r} is neither export nor import")
        if self.kind == "export" and not any(p["name"] == "part" for p in params):
            # Rust claims the memory the export views: the one its part parameter picks.
            raise DlpackError(f"{fn['name']}: an export says which memory it views (a part parameter)")
        self.struct = struct_of(self.tensor)
        self.wrapper = tensors[self.struct]

    def note(self, lang):
        notes = [self.block.get("note"), (self.block.get(lang) or {}).get("note")]
        return "\n\n".join(n.strip() for n in notes if n)


def wrap(text, width=96):
    """Paragraphs filled to the width of the generated files' comments."""
    return "\n\n".join(textwrap.fill(" ".join(par.split()), width) for par in text.split("\n\n"))


def doc_of(fn, notes, emitter, lang, name, table):
    """The header's documentation in the language's names, with the notes after it (which are
    written for the language: Rust's links stay links)."""
    class Call:
        pass
    Call.fn, Call.name = fn, fn["name"]
    lines = emitter.doc(Call, {}) if lang == "rust" else emitter.go_doc(name, Call, {})
    lines += [""] + emitter.translate(wrap(notes)).split("\n")
    return [translate_constants(line, table, lang) for line in lines]


def rust_transfer(t, spec, emitter, tm, table):
    fn = t.fn
    name = spec.get("name") or safe.default_name(fn, {"key": spec["class"]})
    wrapper = t.wrapper["rust"]
    decls, expr, unsafe_fn = [], {}, False
    read_only = None
    for p in fn["params"]:
        n = emitter.ident(p["name"])
        if p is t.tensor:
            if t.kind == "import":
                decls.append(f"mut {n}: {wrapper}")
                expr[p["name"]] = f"{n}.as_ptr()"
            else:
                expr[p["name"]] = "&mut out"
        elif p["dir"] == "out":
            expr[p["name"]] = "out"
        elif p["base"] == "cblob_blob" and t.kind == "export":
            expr[p["name"]] = "self.as_ptr()"
        elif p["base"] == "cblob_context":
            decls.append(f"{n}: &Context")
            expr[p["name"]] = f"{n}.as_ptr()"
        elif p.get("check") == "bool":
            decls.append(f"{n}: bool")
            expr[p["name"]] = f"i32::from({n})"
            read_only = n if p["name"] == "read_only" else read_only
        elif p["depth"] == 0 and p["base"] in tm.enums:
            decls.append(f"{n}: {tm.type_name(p['base'], 'rust')}")
            expr[p["name"]] = f"{n}.raw()"
        elif p["depth"] == 1 and p["base"] == "void":
            decls.append(f"{n}: *mut c_void")
            expr[p["name"]] = n
            unsafe_fn = True
        else:
            raise DlpackError(f"{fn['name']}: Rust has no form for {p['name']} ({p['type']})")
    c_call = f"sys::{fn['name']}({', '.join(expr[p['name']] for p in fn['params'])})"
    u = "unsafe " if unsafe_fn else ""
    tn = emitter.ident(t.tensor["name"])
    if t.kind == "export":
        access = f"if {read_only} {{ Access::Read }} else {{ Access::Write }}" if read_only else "Access::Write"
        head = f"pub {u}fn {name}(&self, {', '.join(decls)}) -> Result<{wrapper}> {{"
        body = [f"let access = {access};",
                "let mut out = ptr::null_mut();",
                "// SAFETY: a live handle used by this thread alone; a valid out-pointer.",
                f"with_access(&[(self.memory(part), access)], || check(unsafe {{ {c_call} }}))?;",
                "// SAFETY: the call succeeded, so out is a new tensor the wrapper now owns.",
                f"let mut tensor = unsafe {{ {wrapper}::from_raw(out)? }};",
                "tensor.memory = Some(Arc::clone(self.memory(part)));",
                "Ok(tensor)"]
    else:
        head = (f"pub {u}fn {name}({', '.join(decls)}) -> std::result::Result<Blob, ImportError<{wrapper}>> {{")
        body = ["// SAFETY: the tensor is valid (the wrapper's invariant); on success cblob owns it"
                + ("; the stream is the caller's promise." if unsafe_fn else "."),
                f"let result = Blob::created(|out| unsafe {{ {c_call} }});",
                "match result {",
                f"    Ok(blob) => Ok(blob.joining({tn}.memory.take(), {tn}.into_raw())),",
                f"    Err(error) => Err(ImportError {{ error, {'tensor' if tn == 'tensor' else 'tensor: ' + tn} }}),",
                "}"]
    extra = [f"The result owns the tensor: see [`{wrapper}`]." if t.kind == "export" else
             "On success cblob owns the tensor and runs its deleter once nothing uses the memory any more; "
             "on failure the [`ImportError`] gives the error and the tensor back, its deleter not run."]
    if t.note("rust"):
        extra.append(t.note("rust"))
    doc = doc_of(fn, "\n\n".join(extra), emitter, "rust", name, table)
    if unsafe_fn:
        doc += ["", "# Safety", "The pointer arguments must be what the description above asks for: cblob passes them",
                "on as they are."]
    return {"doc": doc, "lines": [head] + [f"    {line}" for line in body] + ["}"]}


def go_transfer(t, spec, emitter, tm, table):
    fn = t.fn
    name = spec.get("name") or tm.camel(safe.default_name(fn, {"key": spec["class"]}), "go")
    wrapper = t.wrapper["go"]
    decls, expr, before = [], {}, []
    for p in fn["params"]:
        n = emitter.ident(p["name"])
        if p is t.tensor:
            if t.kind == "import":
                decls.append(f"t *{wrapper}")
                expr[p["name"]] = "t.ptr"
        elif p["dir"] == "out":
            continue
        elif p["base"] == "cblob_blob" and t.kind == "export":
            expr[p["name"]] = "p"
        elif p["base"] == "cblob_context":
            decls.append("ctx *Context")
            expr[p["name"]] = "c"
        elif p.get("check") == "bool":
            decls.append(f"{n} bool")
            expr[p["name"]] = f"boolInt({n})"
        elif p["depth"] == 0 and p["base"] in tm.enums:
            decls.append(f"{n} {tm.type_name(p['base'], 'go')}")
            expr[p["name"]] = f"C.{p['base']}({n})"
        elif p["depth"] == 1 and p["base"] == "void":
            decls.append(f"{n} uintptr")
            before += ["// A driver object, never Go memory: its bits go to C as they are.",
                       f"{n}Pointer := *(*unsafe.Pointer)(unsafe.Pointer(&{n}))"]
            expr[p["name"]] = f"{n}Pointer"
        else:
            raise DlpackError(f"{fn['name']}: Go has no form for {p['name']} ({p['type']})")
    c_call = f"{fn['go']['func']}({', '.join(expr[p['name']] for p in fn['params'] if p['name'] in expr)})"
    struct = t.struct
    if t.kind == "export":
        head = f"func (b *Blob) {name}({', '.join(decls)}) (*{wrapper}, error) {{"
        body = [f"var ptr *C.{struct}",
                "err := b.do(func(p *C.cblob_blob) (err error) {",
                f"\tptr, err = {c_call}",
                "\treturn",
                "})",
                "if err != nil {",
                "\treturn nil, err",
                "}",
                f"return new{wrapper}(ptr), nil"]
        extra = f"The result owns the tensor: see {wrapper}."
    else:
        head = f"func {name}({', '.join(decls)}) (*Blob, error) {{"
        body = ["if t == nil || t.ptr == nil {",
                "\treturn nil, ErrClosed",
                "}"] + before + [
                "b, err := newIn(ctx, func(c *C.cblob_context) (*C.cblob_blob, error) {",
                f"\treturn {c_call}",
                "})",
                "if err == nil {",
                "\tt.Release()",
                "}",
                "runtime.KeepAlive(t)",
                "return b, err"]
        extra = ("On success cblob owns the tensor (t is released: its Close does nothing) and runs its deleter "
                 "once nothing uses the memory any more. On failure t still owns the tensor, its deleter not run; "
                 "a closed or released t is ErrClosed.")
    if t.note("go"):
        extra += "\n\n" + t.note("go")
    doc = doc_of(fn, extra, emitter, "go", name, table)
    return {"doc": doc, "lines": [head] + [f"\t{line}" for line in body] + ["}"]}


# ---- DLPack's declarations -------------------------------------------------------------------------


def rust_field_type(field):
    t = field["type"]
    if t in RUST_FIELD_TYPES:
        return RUST_FIELD_TYPES[t]
    return t  # another mirrored struct


def rust_declarations(table, model):
    out = {"constants": [], "structs": [], "dtypes": []}
    for c in table["constants"]:
        t = table["groups"][c["group"]]["rust"]
        out["constants"].append({"doc": wrap(f"`{c['c']}`: {c['doc']}.").split("\n"), "line": f"pub const {c['rust']}: {t} = {c['value']};"})
    for s in table["structs"]:
        doc = s.get("doc")
        head = f"`{s['name']}`" + ((" " if doc.startswith("(") else ": ") + doc.rstrip(".") + "." if doc else ".")
        fields = []
        for f in s["fields"]:
            if f["type"] == "deleter":
                t = f"Option<unsafe extern \"C\" fn(*mut {s['name']})>"
            else:
                t = rust_field_type(f)
            fields.append({"doc": f["doc"], "line": f"pub {f['name']}: {t},"})
        out["structs"].append({"name": s["name"], "doc": head, "derive": ", ".join(s["derive"]), "fields": fields})
    for d, variant in dtype_names(model, "rust"):
        out["dtypes"].append({"variant": variant, "code": code_constant(table, d["dlpack"]["code"], "rust"),
                              "bits": d["dlpack"]["bits"]})
    out["getters"] = [{"name": g["field"], "doc": wrap(translate_constants(g["doc"], table, "rust"), 92).split("\n"),
                       "type": rust_field_type(next(f for f in table_struct(table, "DLTensor")["fields"]
                                                    if f["name"] == g["field"]))}
                      for g in table["getters"] if g.get("rust", {}) is not None]
    out["tensors"] = list(table["tensors"].values())
    return out


def table_struct(table, name):
    return next(s for s in table["structs"] if s["name"] == name)


def go_declarations(table, model):
    out = {"groups": [], "structs": [], "dtypes": [], "getters": [], "tensors": list(table["tensors"].values())}
    for key, group in table["groups"].items():
        members = [c for c in table["constants"] if c["group"] == key and c.get("go")]
        if not members:
            continue
        typed = "go_base" in group
        width = max(len(c["go"]) for c in members)
        digits = max(len(str(c["value"])) for c in members)
        t = group["go"]
        lines = [f"{c['go']:<{width}} {t} = {c['value']:<{digits}} // {c['c']}: {c['doc'].replace('`', '')}"
                 for c in members]
        out["groups"].append({"type": t if typed else None, "base": group.get("go_base"), "type_doc": group.get("go_doc"),
                              "doc": group["go_group_doc"], "lines": lines})
    for s in table["structs"]:
        if "go" not in s:
            continue
        width = max(len(f["go"]["name"]) for f in s["fields"])
        out["structs"].append({"name": s["name"], "doc": f"{s['name']} is DLPack's {s['name']}: {s['doc']}.",
                               "fields": [f"{f['go']['name']:<{width}} {f['go']['type']}" for f in s["fields"]],
                               "convert": {f["name"]: f"{f['go']['name']}: {f['go']['type']}(%s.{f['name']})"
                                           for f in s["fields"]}})
    for d, name in dtype_names(model, "go"):
        out["dtypes"].append({"name": name, "code": code_constant(table, d["dlpack"]["code"], "go"), "bits": d["dlpack"]["bits"]})
    tensor = table_struct(table, "DLTensor")
    mirrored = {s["name"]: s for s in out["structs"]}
    for g in table["getters"]:
        go = g["go"]
        field = next(f for f in tensor["fields"] if f["name"] == g["field"])
        doc = translate_constants(go.get("doc") or g["doc"], table, "go")
        doc = f"{go['name']} returns {doc[0].lower()}{doc[1:]}".replace("`", "")
        entry = {"name": go["name"], "type": go["type"], "doc": wrap(doc, 92).split("\n"), "helper": f"dl{go['name']}", "convert": None}
        if go.get("call"):
            entry["call"] = go["call"].replace("{t}", "t.tensor()")
        elif field["type"] in mirrored:
            fields = ", ".join(conv % f"t.{g['field']}" for conv in mirrored[field["type"]]["convert"].values())
            entry["convert"], entry["zero"] = f"{go['type']}{{{fields}}}", f"{go['type']}{{}}"
        else:
            entry["convert"], entry["zero"] = f"{go['type']}(t.{g['field']})", "0"
        if entry["convert"]:
            entry["call"] = f"{entry['helper']}(t.tensor())"
        out["getters"].append(entry)
    return out


def annotate(model):
    """Adds model["dlpack"]: the Rust and Go declarations and transfer functions."""
    table = load_table()
    names = model["safe_names"]
    tm = ffi.TypeMap(model)
    classes = safe.load_classes()
    emitters = {"rust": safe.RustEmitter(model, tm, names, classes), "go": safe.GoEmitter(model, tm, names, classes)}
    functions = {fn["name"]: fn for fn in model["functions"]}
    out = {"rust": rust_declarations(table, model), "go": go_declarations(table, model)}
    jobs = []
    for fname, block in model["bindings"].items():
        if not block or not block.get("dlpack"):
            continue
        for lang in ("rust", "go"):
            if (block.get(lang) or {}).get("excluded"):
                continue
            spec = safe.merged(block, block.get(lang))
            if spec.get("class") != "Blob":
                raise DlpackError(f"{fname}: a DLPack export or import is a method (or a creator) of Blob")
            jobs.append((lang, Transfer(functions[fname], block, table), spec))
            if lang == "go" and block["dlpack"] == "import":
                names.functions["go"][fname] = spec["name"]  # a function of the package, not a method
    for lang in ("rust", "go"):
        emit = rust_transfer if lang == "rust" else go_transfer
        out[lang]["transfers"] = [emit(t, spec, emitters[lang], tm, table) for job_lang, t, spec in jobs
                                  if job_lang == lang]
    model["dlpack"] = out
