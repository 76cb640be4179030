# SPDX-License-Identifier: BSD-2-Clause
"""The safe layers' types that are tables, not calls: the families of statuses that Python's
exception classes stand for (codegen/bindings/errors.yaml), the mirrors of DLPack's structs and
enums (codegen/bindings/dlpack.yaml, the one DLPack table, which codegen/safe_dlpack.py renders
for Rust and Go: dlpack_table() reads it as enums and structs) and the plain records the layers
return (codegen/bindings/records.yaml, whose records Rust and Go generate in
codegen/safe_records.py), rendered for C# and Python.

generate.py calls annotate(model) after safe.annotate: it checks each table against the API
description (a family names statuses of cblob_status, each status at most once; a struct's field
has a type this module can spell in both languages) and leaves model["tables"] with the lines
the templates print (templates/bindings/csharp/Tables.g.cs.j2, python/error_classes.py.j2,
python/structs.py.j2). A table this module cannot follow stops the generator with a message.
"""
import re
from pathlib import Path

import yaml

import ffi
import safe_dlpack
from safe import BindingError

BINDINGS = Path(__file__).resolve().parent / "bindings"
TYPEMAP = yaml.safe_load((Path(__file__).resolve().parent / "ffi_types.yaml").read_text(encoding="utf-8"))


def load(name):
    return yaml.safe_load((BINDINGS / name).read_text(encoding="utf-8"))


def xml(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def wrap(text, width, first, rest=None):
    """text as lines of at most width characters, the first starting with first, the others
    with rest (default: first)."""
    rest = first if rest is None else rest
    lines, line = [], first
    for word in text.split():
        if line.strip() and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = rest + word
        else:
            line += ("" if line == first or line == rest else " ") + word
    lines.append(line)
    return lines


def wrap_items(items, opening, closing, width=110):
    """opening, the items separated by commas, closing: broken between items, the lines after
    the first aligned under the first item."""
    lines, line = [], opening
    for i, item in enumerate(items):
        text = item + ("," if i < len(items) - 1 else closing)
        if line != opening and len(line) + 1 + len(text) > width:
            lines.append(line)
            line = " " * len(opening) + text
        else:
            line += ("" if line == opening else " ") + text
    return lines + [line]


def cs_summary(text, indent):
    """A C# <summary> of text, one line when it fits in 110 columns."""
    pad = " " * indent
    one = f"{pad}/// <summary>{xml(text)}</summary>"
    if len(one) <= 110:
        return [one]
    return [f"{pad}/// <summary>"] + wrap(xml(text), 110, f"{pad}/// ") + [f"{pad}/// </summary>"]


# ---- Python's exception classes: the families of statuses ----------------------------------------


def error_families(model):
    status = model["ffi"]["status"]
    by_c = {v["c"]: v for v in status["values"]}
    families = load("errors.yaml")["families"]
    errors, seen, names = [], {}, set()
    for family in families:
        name = family["python"]
        for key in family:
            if key not in {"python", "bases", "parent", "statuses", "errno", "doc"}:
                errors.append(f"errors.yaml: {name}: unknown key {key!r}")
        if family.get("parent", "CblobError") not in names | {"CblobError"}:
            errors.append(f"errors.yaml: {name}: its parent {family['parent']} is not a family listed before it")
        if ("statuses" in family) == ("errno" in family):
            errors.append(f"errors.yaml: {name}: give statuses or errno (an I/O error's cause), not both")
        for c in family.get("statuses", []):
            if c not in by_c:
                errors.append(f"errors.yaml: {name}: no status {c} in cblob_status")
            elif c in seen:
                errors.append(f"errors.yaml: {name}: {c} is {seen[c]}'s already")
            seen[c] = name
        names.add(name)
    unlisted = [v["c"] for v in status["values"] if v["c"] not in seen and v["value"] != 0]
    if unlisted:
        errors.append(f"errors.yaml: no family for {', '.join(unlisted)} (they would raise InternalError)")
    if errors:
        raise BindingError("\n  ".join(errors))

    classes = []
    for family in families:
        statuses = [by_c[c]["names"]["py"] for c in family.get("statuses", [])]
        doc = family.get("doc") or by_c[family["statuses"][0]]["doc"]
        if len(statuses) == 1 and "Status." not in doc:
            doc = doc.rstrip(".") + f" (Status.{statuses[0]})."
        bases = [family.get("parent", "CblobError")] + family.get("bases", [])
        lines = [f"class {family['python']}({', '.join(bases)}):"]
        lines += wrap(f'"""{doc}"""', 100, "    ")
        classes.append({"name": family["python"], "lines": lines, "statuses": statuses,
                        "errno": family.get("errno", [])})
    return classes


# ---- DLPack's structs and enums ------------------------------------------------------------------


def dlpack_table():
    """codegen/bindings/dlpack.yaml (the one DLPack table, laid out for codegen/safe_dlpack.py) as
    C# and Python read it: its groups with a C# enum as enums of their constants, its structs with
    each field's C# name, type and documentation, the C# owner class of each managed tensor."""
    table = safe_dlpack.load_table()

    def plain(text):  # the common documentation without Rust's markup, as a sentence
        text = re.sub(r"\[`([^`]*)`\]", r"\1", text).replace("`", "")
        return text.rstrip(".") + "."

    enums = []
    for key, group in table["groups"].items():
        cs = group.get("csharp")
        if not cs:
            continue
        values = [{"value": 0, "csharp": "None", "doc": cs["zero"]}] if cs.get("zero") else []
        values += [{"c": c["c"], "value": c["value"], "csharp": c["csharp"], "python": c.get("python"),
                    "doc": plain(c["doc"])} for c in table["constants"] if c["group"] == key]
        missing = [v["c"] for v in values if not v["csharp"]]
        if missing:
            raise BindingError(f"dlpack.yaml: {', '.join(missing)}: no C# name in a group C# has an enum of")
        enums.append({"c": group.get("c"), "csharp": {"name": cs["name"], "type": cs["type"]}, "flags": cs.get("flags"),
                      "doc": cs["doc"], "values": values})
    owners = {c: t.get("csharp") for c, t in table["tensors"].items()}
    structs = []
    for s in table["structs"]:
        doc = s["doc"].rstrip(".")
        fields = [{"c": f["name"], "type": f["type"], "csharp": (f.get("csharp") or {}).get("name"),
                   "csharp_type": (f.get("csharp") or {}).get("type"),
                   "doc": (f.get("csharp") or {}).get("doc") or plain(f["doc"])} for f in s["fields"]]
        structs.append({"c": s["name"], "fields": fields, "csharp_owner": owners.get(s["name"]),
                        # DLPack's <c>DLDevice</c>: where ...; DLPack's <c>DLManagedTensor</c> (DLPack before 1.0): ...
                        "summary": (" " if doc.startswith("(") else ": ") + doc + ".",
                        "python_doc": (f"{s['name']} {doc}." if doc.startswith("(") else doc[0].upper() + doc[1:] + ".")})
    return {"enums": enums, "structs": structs}


def dlpack(tm, model):
    table = dlpack_table()
    enums = {e["c"]: e for e in table["enums"] if e.get("c")}
    structs = {s["c"]: s for s in table["structs"]}
    cs, py = [], []

    for e in table["enums"]:
        name = e["csharp"]["name"]
        cs += [""] + cs_summary(e["doc"], 4)
        if e.get("flags"):
            cs.append("    [Flags]")
        cs += [f"    public enum {name} : {e['csharp']['type']}", "    {"]
        for v in e["values"]:
            doc = f"<c>{v['c']}</c>: {xml(v['doc'])}" if v.get("c") else xml(v["doc"])
            cs += [f"        /// <summary>{doc}</summary>", f"        {v['csharp']} = {v['value']},"]
        cs.append("    }")
        py += [f"{v['python']} = {v['value']}  # {v['c']}" for v in e["values"] if v.get("python")]

    def spell(field, owner):
        t = field["type"]
        base = t.rstrip(" *")
        pointer = t.endswith("*")
        if t == "deleter":
            return "IntPtr", f"CFUNCTYPE(None, POINTER({owner}))", f"<c>void (*)({owner} *)</c>: "
        if pointer:
            inner = "c_void_p" if base == "void" else f"POINTER({TYPEMAP['scalars'][base]['py']})"
            return "IntPtr", inner, "" if base == "void" else f"<c>{xml(t)}</c>: "
        if base in TYPEMAP["scalars"]:
            return field.get("csharp_type") or TYPEMAP["scalars"][base]["cs"], TYPEMAP["scalars"][base]["py"], ""
        if base in enums:
            return enums[base]["csharp"]["name"], "c_int32", ""  # a C enum is an int
        if base in structs:
            return base, base, ""
        raise BindingError(f"dlpack.yaml: {owner}.{field['c']}: no spelling of the type {t!r}")

    for s in table["structs"]:
        cs += ["", f"    /// <summary>DLPack's <c>{s['c']}</c>{xml(s['summary'])}</summary>",
               "    [StructLayout(LayoutKind.Sequential)]", f"    public partial struct {s['c']}", "    {"]
        fields = []
        for f in s["fields"]:
            cs_type, py_type, prefix = spell(f, s["c"])
            cs += [f"        /// <summary>{prefix}{xml(f['doc'])}</summary>",
                   f"        public {cs_type} {f.get('csharp') or tm.camel(f['c'], 'cs')};"]
            fields.append(f'("{f["c"]}", {py_type})')
        if s["c"] == "DLDataType":
            cs += dtype_conversions(model, enums["DLDataTypeCode"])
        cs.append("    }")
        if s.get("csharp_owner"):
            cs += owner_members(s, tm)
        # A struct whose fields name it (a deleter) gets them once the class exists.
        self_referent = any(f["type"] == "deleter" for f in s["fields"])
        py += ["", "", f"class {s['c']}(Structure):", f'    """{s["python_doc"]}"""']
        if self_referent:
            py += ["", ""] + wrap_items(fields, f"{s['c']}._fields_ = [", "]")
        else:
            py += wrap_items(fields, "    _fields_ = [", "]")
    return cs, py


def dtype_conversions(model, codes):
    """DLDataType.Of(dtype) and its DType property, from codegen/dtypes.yaml's DLPack codes."""
    members = {v["value"]: v["csharp"] for v in codes["values"]}
    dtypes = [(v["names"]["cs"], d["dlpack"]) for d in model["dtypes"]
              for v in model["ffi"]["dtype"]["values"] if v["c"] == d["enum"]]
    for name, dl in dtypes:
        if dl["code"] not in members:
            raise BindingError(f"dlpack.yaml: DLDataTypeCode has no value {dl['code']} (dtype {name})")
    return ["", "        /// <summary>The DLPack type of a cblob dtype (" +
            ", ".join(f"{n} is <c>{members[dl['code']]}</c> {dl['bits']}" for n, dl in dtypes) + ").</summary>",
            "        public static DLDataType Of(DType dtype)", "        {", "            switch (dtype)", "            {"] + [
            f"                case CBlob.DType.{n}: return new DLDataType(DLDataTypeCode.{members[dl['code']]}, {dl['bits']}, 1);"
            for n, dl in dtypes] + [
            "                default: throw new ArgumentOutOfRangeException(nameof(dtype));", "            }", "        }", "",
            "        /// <summary>The cblob dtype of this type, or null when cblob has none.</summary>",
            "        public DType? DType", "        {", "            get", "            {",
            "                foreach (DType d in new[] { " + ", ".join(f"CBlob.DType.{n}" for n, _ in dtypes) + " })",
            "                    if (Of(d).Equals(this))", "                        return d;", "                return null;",
            "            }", "        }"]


def owner_members(struct, tm):
    """What the C# class owning a managed tensor of the struct reads from its layout: where the
    deleter and the DLTensor are, and a copy of the whole struct."""
    def field(kind):
        f = next(f for f in struct["fields"] if f["type"] == kind)
        return f.get("csharp") or tm.camel(f["c"], "cs")
    c, owner = struct["c"], struct["csharp_owner"]
    return ["", f"    public sealed partial class {owner}", "    {",
            f'        internal override int DeleterOffset {{ get {{ return (int)Marshal.OffsetOf(typeof({c}), "{field("deleter")}"); }} }}',
            "",
            f'        internal override int TensorOffset {{ get {{ return (int)Marshal.OffsetOf(typeof({c}), "{field("DLTensor")}"); }} }}',
            "", "        /// <summary>A copy of the whole struct.</summary>", f"        public unsafe {c} Value", "        {",
            "            get", "            {", f"                {c} value = *({c}*)Live();", "                GC.KeepAlive(this);",
            "                return value;", "            }", "        }", "    }"]


# ---- records ----------------------------------------------------------------------------------------


def lower_camel(tm, name):
    """A C# parameter's name: minLevel for min_level."""
    text = tm.camel(name, "cs")
    return text[0].lower() + text[1:]


RECORD_TYPES = {"int32": ("int", "int"), "float32": ("float", "float"), "str": ("string", "str"),
                "str?": ("string", "str | None"), "[str]": ("IReadOnlyList<string>", "list[str]")}


def records(tm, model):
    enums = {e["names"]["py"]: e for e in model["ffi"]["enums"]}
    cs, py, py_imports = [], [], set()
    for r in load("records.yaml")["records"]:
        langs = r.get("languages", ["csharp", "python"])
        typed = []
        for f in r["fields"]:
            if f["type"] in RECORD_TYPES:
                typed.append((f, *RECORD_TYPES[f["type"]]))
            elif f["type"] in enums:
                typed.append((f, enums[f["type"]]["names"]["cs"], f["type"]))
                py_imports.add(f["type"])
            else:
                raise BindingError(f"records.yaml: {r['name']}.{f['name']}: no spelling of the type {f['type']!r}")
        if "csharp" in langs:
            cs += [""] + cs_summary(r["doc"], 4)
            if r.get("kind") == "struct":
                cs += [f"    public partial struct {r['name']}", "    {"]
                for f, cs_type, _ in typed:
                    cs += cs_summary(f["doc"], 8) + [f"        public {cs_type} {tm.camel(f['name'], 'cs')};"]
            else:
                args = ", ".join(f"{cs_type} {lower_camel(tm, f['name'])}" for f, cs_type, _ in typed)
                cs += [f"    public sealed partial class {r['name']}", "    {", f"        internal {r['name']}({args})",
                       "        {"]
                cs += [f"            {tm.camel(f['name'], 'cs')} = {lower_camel(tm, f['name'])};" for f, _, _ in typed]
                cs.append("        }")
                for f, cs_type, _ in typed:
                    cs += [""] + cs_summary(f["doc"], 8) + [f"        public {cs_type} {tm.camel(f['name'], 'cs')} {{ get; }}"]
            cs.append("    }")
        if "python" in langs:
            py += ["", "", f"class {r['name']}(NamedTuple):"]
            py += wrap(f'"""{r["doc"]}', 100, "    ") + [""]
            for f, _, _ in typed:
                py += wrap(f"{f['name']}: {f['doc']}", 100, "    ", "        ")
            py.append('    """')
            py += [""] + [f"    {f['name']}: {py_type}" for f, _, py_type in typed]
    return cs, py, sorted(py_imports)


def no_gpu(model):
    """C#'s CBlobException.IsNoGpu: true for the statuses errors.yaml's no_gpu lists."""
    by_c = {v["c"]: v for v in model["ffi"]["status"]["values"]}
    listed = load("errors.yaml")["no_gpu"]
    unknown = [c for c in listed if c not in by_c]
    if unknown:
        raise BindingError(f"errors.yaml: no_gpu names {', '.join(unknown)}, no statuses of cblob_status")
    return ["", "    public partial class CBlobException", "    {", "        /// <summary>",
            "        /// Whether the status is one that says the GPU stack cannot be used on this machine:",
            "        /// " + ", ".join(f"<see cref=\"CBlob.Status.{by_c[c]['names']['cs']}\"/>" for c in listed[:3]) + ",",
            "        /// " + ", ".join(f"<see cref=\"CBlob.Status.{by_c[c]['names']['cs']}\"/>" for c in listed[3:]) + ".",
            "        /// </summary>", "        public bool IsNoGpu", "        {", "            get", "            {",
            "                switch (Status)", "                {"] + [
            f"                    case Status.{by_c[c]['names']['cs']}:" for c in listed] + [
            "                        return true;", "                    default:", "                        return false;",
            "                }", "            }", "        }", "    }"]


def annotate(model):
    tm = ffi.TypeMap(model)
    cs_dlpack, py_dlpack = dlpack(tm, model)
    cs_records, py_records, py_imports = records(tm, model)
    model["tables"] = {
        "errors": error_families(model),
        "errors_all": wrap_items([f'"{c["name"]}"' for c in error_families(model)] + ['"FAMILIES"', '"OS_ERRORS"'],
                                 "__all__ = [", "]"),
        "csharp": {"dlpack": cs_dlpack, "records": cs_records + no_gpu(model)},
        "python": {"dlpack": py_dlpack, "records": py_records, "imports": py_imports,
                   "record_names": [r["name"] for r in load("records.yaml")["records"]
                                    if "python" in r.get("languages", ["csharp", "python"])]},
    }
