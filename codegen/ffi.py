# SPDX-License-Identifier: BSD-2-Clause
"""The bindings' type map: how each C type of the API description is declared in the Rust
(cblob-sys), C# (P/Invoke), Go (cgo) and Python (ctypes) raw layers, and how enum, constant and
handle names read in each language.

generate.py calls annotate(model) after it has checked and enriched the description. Every
function then carries `rust`, `cs`, `go` and `py` fields with its declaration pieces, and
model["ffi"] holds the enums, handles, callbacks, structs, constants and element types with their
names in each language. Templates only print these; every decision lives here, so a new function
in codegen/api/ is declared in all four bindings without hand work, and a type this module cannot
map stops the generator with a message instead of producing a wrong declaration.
"""
import re
from pathlib import Path

import yaml

TYPEMAP_PATH = Path(__file__).resolve().parent / "ffi_types.yaml"

RUST_KEYWORDS = {
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum",
    "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod",
    "move", "mut", "priv", "pub", "ref", "return", "self", "static", "struct", "super", "trait",
    "true", "try", "type", "unsafe", "use", "where", "while", "yield",
}
CS_KEYWORDS = {
    "base", "bool", "byte", "char", "checked", "class", "const", "decimal", "default", "delegate",
    "do", "double", "event", "explicit", "extern", "false", "fixed", "float", "in", "int",
    "interface", "internal", "is", "lock", "long", "namespace", "new", "null", "object",
    "operator", "out", "override", "params", "private", "protected", "public", "readonly", "ref",
    "sbyte", "sealed", "short", "sizeof", "stackalloc", "static", "string", "struct", "this",
    "throw", "true", "typeof", "uint", "ulong", "unchecked", "unsafe", "ushort", "using",
    "virtual", "void", "volatile", "while",
}
GO_KEYWORDS = {
    "break", "case", "chan", "const", "continue", "default", "defer", "else", "fallthrough",
    "for", "func", "go", "goto", "if", "import", "interface", "map", "package", "range", "return",
    "select", "struct", "switch", "type", "var", "len", "cap", "new", "make", "string", "error",
}


class FfiError(Exception):
    pass


class CType:
    """A parsed C type: base name, whether the base is const, and one const flag per '*'."""

    def __init__(self, text):
        self.text = text
        tokens = re.findall(r"\*|[A-Za-z_]\w*", text)
        base, self.base_const, self.stars = [], False, []
        for tok in tokens:
            if tok == "*":
                self.stars.append(False)
            elif tok == "const":
                if self.stars:
                    self.stars[-1] = True
                else:
                    self.base_const = True
            elif self.stars:
                raise FfiError(f"cannot parse C type {text!r}")
            else:
                base.append(tok)
        self.base = " ".join(base)
        self.depth = len(self.stars)

    def pointee_const(self, level):
        """Whether what the pointer at level (1 = outermost from the base) points to is const."""
        return self.base_const if level == 1 else self.stars[level - 2]

    def deref(self):
        """The C spelling of the type one pointer less ('cblob_blob **' -> 'cblob_blob *')."""
        if self.depth == 0:
            raise FfiError(f"{self.text!r} is not a pointer")
        text = ("const " if self.base_const else "") + self.base
        for const in self.stars[:-1]:
            text += " *" + (" const" if const else "")
        return text


def words(name):
    return [w for w in name.lower().split("_") if w]


def camel(name, initialisms=(), spelled=None):
    caps = {i.upper() for i in initialisms}
    spelled = spelled or {}
    return "".join(spelled.get(w) or (w.upper() if w.upper() in caps else w.capitalize())
                   for w in words(name))


class TypeMap:
    def __init__(self, model):
        spec = yaml.safe_load(TYPEMAP_PATH.read_text(encoding="utf-8"))
        self.scalars = spec["scalars"]
        # Structs of other headers, by the C spelling the API uses ("struct DLManagedTensor").
        self.foreign = {f"struct {t['name']}": t for t in model["types"] if t["kind"] == "foreign"}
        self.words = spec["words"]
        self.enum_strip = spec["enum_strip"]
        self.initialisms = spec["initialisms"]
        self.elements = spec["elements"]
        self.enums = {e["name"]: e for e in model["enums"]}
        self.opaques = {t["name"]: t for t in model["types"] if t["kind"] == "opaque"}
        self.callbacks = {t["name"]: t for t in model["types"] if t["kind"] == "callback"}
        self.structs = {s["name"]: s for s in model["structs"]}
        functions = {fn["name"] for fn in model["functions"]}
        # An opaque type with a <type>_destroy function is an owned handle: C# wraps it in a
        # SafeHandle whose release calls that function.
        self.destroyers = {name: f"{name}_destroy" for name in self.opaques
                           if f"{name}_destroy" in functions}

    def kind(self, base):
        if base in self.scalars:
            return "scalar"
        for kind, table in (("enum", self.enums), ("opaque", self.opaques),
                            ("callback", self.callbacks), ("struct", self.structs)):
            if base in table:
                return kind
        if base in self.foreign:
            return "foreign"
        raise FfiError(f"type {base!r} has no mapping: add it to codegen/ffi_types.yaml")

    # ---- names ---------------------------------------------------------------------------

    def camel(self, name, lang):
        return camel(name, self.initialisms.get(lang, ()), self.words)

    def type_name(self, c_name, lang):
        return self.camel(re.sub(r"^cblob_", "", c_name), lang)

    def value_name(self, enum, value_name, lang):
        """The value's name in a language: CamelCase, or the C name less its prefix in Python
        (Status.SHAPE for CBLOB_ERR_SHAPE), where enum members are written in capitals."""
        strips = self.enum_strip.get(enum["name"]) or [self.common_prefix(enum)]
        for prefix in strips:
            rest = value_name[len(prefix):]
            if value_name.startswith(prefix) and re.fullmatch(r"[A-Za-z]\w*", rest):
                return rest.upper() if lang == "py" else self.camel(rest, lang)
        raise FfiError(f"enum {enum['name']}: cannot name {value_name} (prefixes {strips}); "
                       "set enum_strip in codegen/ffi_types.yaml")

    @staticmethod
    def common_prefix(enum):
        """The values' longest common prefix ending in '_' (CBLOB_PART_ for CBLOB_PART_DATA and
        CBLOB_PART_DIFF); for one value, the enum's name in capitals plus '_'."""
        names = [v["name"] for v in enum["values"]]
        if len(names) == 1:
            return enum["name"].upper() + "_"
        prefix = names[0]
        for name in names[1:]:
            while not name.startswith(prefix):
                prefix = prefix[:-1]
        return prefix[:prefix.rfind("_") + 1]

    def handle_class(self, c_name):
        return self.type_name(c_name, "cs") + "Handle"

    # ---- Rust (cblob-sys) ----------------------------------------------------------------

    def rust_base(self, base):
        kind = self.kind(base)
        if kind == "scalar":
            return self.scalars[base]["rust"]
        if kind == "foreign":
            return self.foreign[base]["name"]  # an opaque struct of that name in cblob-sys
        return base

    def rust_type(self, c_text):
        t = CType(c_text)
        text = self.rust_base(t.base)
        if t.depth == 0 and t.base == "void":
            raise FfiError(f"void is not a value type ({c_text!r})")
        for level in range(1, t.depth + 1):
            text = ("*const " if t.pointee_const(level) else "*mut ") + text
        return text

    def rust_return(self, c_text):
        return "" if c_text.strip() == "void" else " -> " + self.rust_type(c_text)

    @staticmethod
    def rust_ident(name):
        return f"r#{name}" if name in RUST_KEYWORDS else name

    # ---- C# (P/Invoke) -------------------------------------------------------------------

    def cs_value(self, base):
        kind = self.kind(base)
        if kind == "scalar":
            return self.scalars[base]["cs"]
        if kind == "enum":
            return self.type_name(base, "cs")
        if kind == "callback":
            return self.type_name(base, "cs")
        if kind == "struct":
            return self.type_name(base, "cs")
        return "IntPtr"

    def cs_param(self, p):
        t, name = CType(p["type"]), self.cs_ident(p["name"])
        kind = self.kind(t.base)
        if t.depth == 0:
            return f"{self.cs_value(t.base)} {name}"
        if t.depth == 1:
            # Handles cross as IntPtr: the safe layer guards each call itself (CBlob/Guard.cs),
            # more cheaply than the marshaller's SafeHandle reference count.
            if kind in ("opaque", "foreign") or t.base == "void":
                return f"IntPtr {name}"
            if t.base == "char" and t.base_const and p["dir"] == "in":
                return f"byte[] {name}"  # NUL-terminated UTF-8, made by the safe layer
            if p["length"]:
                attr = {"in": "[In] ", "out": "[Out] ", "inout": "[In, Out] "}[p["dir"]]
                return f"{attr}{self.cs_value(t.base)}[] {name}"
            if kind in ("scalar", "enum", "struct"):
                modifier = {"out": "out", "in": "ref", "inout": "ref"}[p["dir"]]
                attr = "[In] " if p["dir"] == "in" else ""
                return f"{attr}{modifier} {self.cs_value(t.base)} {name}"
        if t.depth == 2 and p["length"]:
            # An array of pointers (handles, say): the safe layer owns or references each one.
            attr = {"in": "[In] ", "out": "[Out] ", "inout": "[In, Out] "}[p["dir"]]
            return f"{attr}IntPtr[] {name}"
        if t.depth == 2 and p["dir"] == "out":
            # Only a handle the caller owns goes into a SafeHandle: one the library lends
            # (cblob_file_model's model) must never be destroyed by the caller.
            if kind == "opaque" and t.base in self.destroyers and p.get("ownership") == "caller_owns":
                return f"out {self.handle_class(t.base)} {name}"
            return f"out IntPtr {name}"
        return f"IntPtr {name}"

    def cs_return(self, c_text):
        t = CType(c_text)
        if t.depth:
            return "IntPtr"  # never a string: the marshaller would free the library's memory
        return self.cs_value(t.base)

    @staticmethod
    def cs_ident(name):
        return f"@{name}" if name in CS_KEYWORDS else name

    # ---- Python (ctypes) -----------------------------------------------------------------

    def py_scalar(self, base):
        kind = self.kind(base)
        if kind == "scalar":
            return self.scalars[base]["py"]
        if kind == "enum":
            return "c_int32"  # enums are int32_t; the safe layer turns them into IntEnums
        if kind in ("callback", "struct"):
            return base  # the CFUNCTYPE or Structure the raw layer defines under the C name
        raise FfiError(f"{base!r} cannot be passed by value to ctypes")

    def py_type(self, c_text):
        """The ctypes type of a parameter or result. Handles, foreign structs and untyped memory
        are c_void_p (the safe layer keeps handles as c_void_p, which ctypes passes without a
        conversion); `const char *` is c_char_p (bytes in, and a result ctypes copies into
        bytes); other pointers are POINTER(T), arrays of pointers POINTER(c_void_p)."""
        t = CType(c_text)
        kind = self.kind(t.base)
        if t.depth == 0:
            return "None" if t.base == "void" else self.py_scalar(t.base)
        if t.depth == 1:
            if kind in ("opaque", "foreign") or t.base == "void":
                return "c_void_p"
            if t.base in ("char", "uint8_t") and t.base_const:
                return "c_char_p"  # text, or bytes the library reads
            if t.base in ("char", "uint8_t"):
                return "POINTER(c_char)"  # a buffer the library writes (create_string_buffer)
            if kind == "callback":
                raise FfiError(f"pointer to {t.base!r} has no ctypes mapping")
            return f"POINTER({self.py_scalar(t.base)})"
        if t.depth == 2:
            if t.base == "char":
                return "POINTER(c_char_p)"
            if kind in ("opaque", "foreign") or t.base == "void":
                return "POINTER(c_void_p)"
        raise FfiError(f"C type {c_text!r} has no ctypes mapping: extend ffi.py's py_type")

    # ---- Go (cgo) ------------------------------------------------------------------------

    def go_type(self, c_text):
        t = CType(c_text)
        kind = self.kind(t.base)
        if t.base == "void":
            if t.depth == 0:
                return ""
            text, depth = "unsafe.Pointer", t.depth - 1
        else:
            if kind == "scalar":
                text = self.scalars[t.base]["go"]
            elif kind == "foreign":
                text = f"C.struct_{self.foreign[t.base]['name']}"  # cgo's name for a struct tag
            else:
                text = f"C.{t.base}"
            depth = t.depth
        return "*" * depth + text

    @staticmethod
    def go_ident(name):
        first, *rest = name.split("_")
        name = first + "".join(w.capitalize() for w in rest)
        return f"{name}_" if name in GO_KEYWORDS else name

    def go_func(self, c_name):
        return "c" + self.camel(re.sub(r"^cblob_", "", c_name), "go")


def doc_lines(text):
    return [line.rstrip() for line in text.strip().split("\n")]


def annotate_function(tm, fn):
    params = fn["params"]
    fn["rust"] = {
        "params": ", ".join(f"{tm.rust_ident(p['name'])}: {tm.rust_type(p['type'])}" for p in params),
        "ret": tm.rust_return(fn["returns"]),
    }
    fn["cs"] = {
        "params": ", ".join(tm.cs_param(p) for p in params),
        "ret": tm.cs_return(fn["returns"]),
    }
    fn["py"] = {
        "restype": tm.py_type(fn["returns"]),
        "argtypes": [tm.py_type(p["type"]) for p in params],
        "names": [p["name"] for p in params],
    }
    fn["doc_lines"] = doc_lines(fn["doc"])

    # Go: a call that returns a status goes through a C wrapper in the cgo preamble that returns
    # the status, a copy of the thread's message (read in the same C call, before the goroutine
    # can move to another thread) and the out-values by value, so no Go pointer crosses for them.
    # Handles cross as uintptr_t: they point to C memory, and a pointer argument would make cgo
    # check it and move it to the Go heap, an allocation per call.
    ret = CType(fn["returns"])
    go = {"func": tm.go_func(fn["name"]), "wrapper": "cbgo_" + re.sub(r"^cblob_", "", fn["name"])}
    go_params, fields, c_args, c_params, wrapper_args = [], [], [], [], []
    for p in params:
        t = CType(p["type"])
        if fn["returns_status"] and p["dir"] == "out" and not p["length"] and t.depth >= 1:
            field_c = t.deref()
            fields.append({"name": p["name"], "c": field_c, "go": tm.go_type(field_c)})
            c_args.append(f"&r.{p['name']}")
            continue
        gname = tm.go_ident(p["name"])
        go_params.append({"name": gname, "go": tm.go_type(p["type"])})
        if fn["returns_status"] and tm.kind(t.base) == "opaque" and t.depth == 1:
            c_params.append(f"uintptr_t {p['name']}")
            c_args.append(f"({p['type']}){p['name']}")
            wrapper_args.append(f"C.uintptr_t(uintptr(unsafe.Pointer({gname})))")
        else:
            c_params.append(f"{p['type']}{'' if p['type'].endswith('*') else ' '}{p['name']}")
            c_args.append(p["name"])
            wrapper_args.append(gname)
    go.update({
        "params": go_params,
        "param_list": ", ".join(f"{q['name']} {q['go']}" for q in go_params),
        "arg_list": ", ".join(q["name"] for q in go_params),
        "wrapper_args": ", ".join(wrapper_args),
        "fields": fields,
        "c_params": ", ".join(c_params) or "void",
        "c_args": ", ".join(c_args),
        "returns_string": ret.base == "char" and ret.depth == 1,
        "ret": "" if fn["returns"].strip() == "void" else tm.go_type(fn["returns"]),
    })
    if fn["returns_status"]:
        go["results"] = ", ".join([f["go"] for f in fields] + ["error"])
        if len(fields) + 1 > 1:
            go["results"] = f"({go['results']})"
    fn["go"] = go


def annotate(model):
    """Adds each binding's spelling of every function, type and name (see the module doc)."""
    tm = TypeMap(model)
    for fn in model["functions"]:
        annotate_function(tm, fn)

    enums = []
    for e in model["enums"]:
        enums.append({
            "c": e["name"],
            "doc": e["doc"],
            "names": {lang: tm.type_name(e["name"], lang) for lang in ("rust", "cs", "go", "py")},
            "values": [{
                "c": v["name"], "value": v["value"], "doc": v["doc"],
                "names": {lang: tm.value_name(e, v["name"], lang) for lang in ("rust", "cs", "go", "py")},
            } for v in e["values"]],
        })
    constants = [{
        "c": c["name"], "value": c["value"], "doc": c["doc"],
        "names": {"rust": re.sub(r"^CBLOB_", "", c["name"]), "py": re.sub(r"^CBLOB_", "", c["name"]),
                  "cs": tm.camel(re.sub(r"^CBLOB_", "", c["name"]), "cs"),
                  "go": tm.camel(re.sub(r"^CBLOB_", "", c["name"]), "go")},
    } for c in model["constants"]]
    # A handle type some call lends (an out-parameter the caller does not own: cblob_file_model's
    # model) gets a lent form in C#: it holds the lender's SafeHandle instead of destroying.
    lent = {}
    for fn in model["functions"]:
        for p in fn["params"]:
            t = CType(p["type"])
            if (p["dir"] == "out" and t.depth == 2 and t.base in tm.destroyers and not p.get("length")
                    and p.get("ownership") != "caller_owns"):
                lender = next(q for q in fn["params"] if q["dir"] == "in" and CType(q["type"]).base in tm.destroyers)
                lent[t.base] = tm.handle_class(CType(lender["type"]).base)
    handles = [{
        "c": name, "doc": tm.opaques[name]["doc"], "cs_class": tm.handle_class(name),
        "destroy": destroy, "lender": lent.get(name),
    } for name, destroy in tm.destroyers.items()]
    callbacks = [{
        "c": cb["name"], "doc": cb["doc"], "cs_name": tm.type_name(cb["name"], "cs"),
        "rust_params": ", ".join(f"{tm.rust_ident(p['name'])}: {tm.rust_type(p['type'])}"
                                 for p in cb["params"]),
        "rust_ret": tm.rust_return(cb["returns"]),
        "cs_params": ", ".join(tm.cs_param(dict(p, dir="in", ownership="borrowed", length=None))
                               for p in cb["params"]),
        "cs_ret": tm.cs_return(cb["returns"]),
        "py_restype": tm.py_type(cb["returns"]),
        "py_argtypes": [tm.py_type(p["type"]) for p in cb["params"]],
    } for cb in tm.callbacks.values()]
    structs = [{
        "c": s["name"], "doc": s["doc"], "cs_name": tm.type_name(s["name"], "cs"),
        "fields": [{"name": f["name"], "doc": f.get("doc", ""),
                    "rust": tm.rust_type(f["type"]),
                    "cs": tm.cs_value(CType(f["type"]).base) if CType(f["type"]).depth == 0 else "IntPtr",
                    "py": tm.py_type(f["type"])}
                   for f in s["fields"]],
    } for s in model["structs"]]
    status_enum = next(e for e in enums if e["c"] == "cblob_status")
    dtype_enum = next(e for e in enums if e["c"] == "cblob_dtype")
    elements = []
    for d in model["dtypes"]:
        if d["ctype"] not in tm.elements:
            raise FfiError(f"dtype {d['name']}: no element type for {d['ctype']} in codegen/ffi_types.yaml")
        value = next(v for v in dtype_enum["values"] if v["c"] == d["enum"])
        elements.append({"dtype": d["name"], "ctype": d["ctype"], "enum": value["names"],
                         **tm.elements[d["ctype"]]})
    model["ffi"] = {
        "enums": enums, "constants": constants, "handles": handles, "callbacks": callbacks,
        "structs": structs, "foreign": [{"c": t["name"], "doc": t["doc"]} for t in tm.foreign.values()], "status": status_enum,
        "dtype": dtype_enum, "elements": elements,
        "opaques": [{"c": name, "doc": t["doc"]} for name, t in tm.opaques.items()],
    }
