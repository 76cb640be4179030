# SPDX-License-Identifier: BSD-2-Clause
"""The bindings' safe layers: every method that is one library call plus the language's error
check, rendered in Rust, Go, C# and Python from the API description.

generate.py calls annotate(model) after ffi.annotate. It reads the binding blocks
(codegen/bindings/NN_area.yaml: a map from function name to its block, beside the API
description's files; classes.yaml says where each class and module lives in each language), works
out once, for every function, what each parameter is (the receiver, a handle, a shape, a path, a
two-call buffer, ...) and what the call returns, and asks one emitter per language for the
method's signature, body and documentation. Templates only print what this module made, so a new
function in codegen/api/ with a binding block gets a safe method in all four languages without
hand work, and a block this module cannot follow stops the generator with a message instead of
producing a wrong method.

A binding block (every key is optional but `class`, and `hand` replaces the rest):

  class       the Blob, Context, Net, Window, Comm row of classes.yaml whose handle parameter is
              the receiver, or the module (gpu, proto, library) of a free function. A function of
              a class without that handle among its inputs is a static creator (Blob::new_x in
              Rust, NewX in Go, a static method in C#, a classmethod in Python).
  name        the method's name in snake_case; Go and C# write it in PascalCase (Go's initialisms:
              codegen/ffi_types.yaml), Rust and Python as is. Default: the C name less `cblob_`
              and the class's prefix.
  hand        why the function is wrapped by hand in every language (a view, DLPack, a request's
              lifetime): nothing is generated, and the coverage test checks that the hand-written
              layer reaches it. Per language: `rust: {hand: why}`.
  excluded    true: the language's safe layer does not reach the function, for the reason the one
              exclusion table gives (codegen/bindings/exclusions.yaml; the two must agree).
  lifecycle   true for a type's destroy function: the generated lifetime code of its class
              (classes.yaml's `lifecycle`) calls it; languages outside that list say `hand`.
  property    a getter: a property in C# and Python (`python: {setter: position}` on the setter
              of the same property pairs them).
  infallible  Rust: a pure getter that cannot fail on a live handle returns a plain value (a
              failure there is a broken invariant: a panic with the library's message).
  result      `bool` for an int32 out-value that is a yes/no; `list` makes a getter of one item
              (`const char **`) and the count function named by `count:` one list method.
  count       with result: list, the function that gives the number of items.
  record      the result is a record of codegen/bindings/records.yaml (the one table of the records'
              types, fields and documentation) made of the call's out-values, in order; with
              result: list, each item is one (a layer's ParamSpec list). C# and Python generate it
              here, Rust and Go in codegen/safe_records.py.
  lists       with record: an out-value that counts a list field's items, by its C name: {item: the
              function giving one item (a `const char **`), args: its parameters that are not the
              list method's (`index`: the record's index; a number as it is)}. The field takes the
              count's place (a Rule's stages).
  also        with record (Go): more functions of the same inputs whose out-values are the
              record's next fields, called in turn (a layer's name, type and blob count).
  access      Rust: the blob memories the call reads and writes, for the crate's view tracking
              ("write self.part", "read source.part", "read self.data", "read self.diff if
              write_diff"): `self.<part>` is the receiver's, `<param>.<part>` another blob's,
              `.part` the memory the call's part parameter picks.
  reshapes    Rust: the call may give the blob new storage (the crate then stops counting its
              views with former sharers).
  mut         Rust: the receiver is `&mut self` (default: when the call writes its memory or
              reshapes it).
  unsafe      Rust: an `unsafe fn` (a raw pointer the caller vouches for).
  params      per parameter (by its C name): `name` (the language's), `default`, `type` (a
              language's type instead of the default mapping), `keyword` (Python: keyword-only).
  returns     a language's type for the result instead of the default mapping (Rust usize).
  order       a language's order of the parameters (C names), when it differs from C's.
  dlpack      export or import: a DLPack function; Rust and Go generate it around their owned tensor
              types (codegen/safe_dlpack.py) instead of here, with `note`, said after the header's
              documentation; C# generates it here (its owned tensor classes are a role).
  constructor C#: a static creator of its class is the class's constructor instead (new Blob(...)).
  layer_member  Python: a Net method whose first parameter is the layer index is also a member of
              each Layer (and LayerArrays) of the model, for its own index: a property when the
              layer is its only parameter (layer.bottoms), else a method (layer.rules(kind)).
  rust, go, csharp, python
              the same keys for one language, over the block's.
"""
import re
import textwrap
from pathlib import Path

import yaml

import ffi

BINDINGS = Path(__file__).resolve().parent / "bindings"
LANGUAGES = ("rust", "go", "csharp", "python")
BLOCK_KEYS = {"class", "name", "hand", "excluded", "lifecycle", "summary", "property", "setter", "infallible", "result", "count", "access",
              "reshapes", "mut", "unsafe", "params", "returns", "order", "generic", "dlpack", "note", "record", "lists",
              "also", "layer_member", "constructor"} | set(LANGUAGES)
PARAM_KEYS = {"name", "default", "type", "keyword", "what", "varargs"} | set(LANGUAGES)


# The Python module each created class lives in (the generated _safe.py imports them at its end):
# the blob classes in _blob.py, the model in _model.py (a method of a Net that makes a Net).
PYTHON_MODULES = {"Model": "_model"}


def python_module(cls):
    return PYTHON_MODULES.get(cls, "_blob")


class BindingError(Exception):
    pass


# ---- reading the blocks -------------------------------------------------------------------------


def merged(base, over):
    """A block with a language's keys over the shared ones (params merged per parameter)."""
    out = {k: v for k, v in base.items() if k not in LANGUAGES}
    for key, value in (over or {}).items():
        if key == "params":
            params = {name: dict(p) for name, p in out.get("params", {}).items()}
            for name, p in value.items():
                params.setdefault(name, {}).update(p)
            out["params"] = params
        else:
            out[key] = value
    return out


def load_blocks(model):
    """{function name: block} from codegen/bindings/NN_*.yaml, checked against the description."""
    functions = {fn["name"]: fn for fn in model["functions"]}
    blocks, errors = {}, []
    for path in sorted(BINDINGS.glob("[0-9]*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for name, block in data.items():
            where = f"{path.name}: {name}"
            if name not in functions:
                errors.append(f"{where}: no such function in codegen/api/")
                continue
            if name in blocks:
                errors.append(f"{where}: a second binding block")
                continue
            block = block or {}
            for key in block:
                if key not in BLOCK_KEYS:
                    errors.append(f"{where}: unknown key {key!r} (known: {', '.join(sorted(BLOCK_KEYS))})")
            for language in LANGUAGES:
                for key in block.get(language) or {}:
                    if key not in BLOCK_KEYS - set(LANGUAGES):
                        errors.append(f"{where}: unknown key {language}.{key}")
            if "hand" not in block and "class" not in block and not block.get("excluded") and not block.get("lifecycle"):
                errors.append(f"{where}: a block needs a class (or hand: and the reason, or excluded: true)")
            pnames = {p["name"] for p in functions[name]["params"]}
            for layer in [block] + [block.get(lang) or {} for lang in LANGUAGES]:
                for pname, p in (layer.get("params") or {}).items():
                    if pname not in pnames:
                        errors.append(f"{where}: params names {pname!r}, which the function does not have")
                    for key in p:
                        if key not in PARAM_KEYS:
                            errors.append(f"{where}: params.{pname}: unknown key {key!r}")
            block["file"] = path.name
            blocks[name] = block
    errors += check_exclusions(blocks, functions)
    if errors:
        raise BindingError("binding blocks:\n  " + "\n  ".join(errors))
    return blocks


def check_exclusions(blocks, functions):
    """The blocks' `excluded: true` and the exclusion table must name the same (function,
    language) pairs."""
    table = yaml.safe_load((BINDINGS / "exclusions.yaml").read_text(encoding="utf-8")) or []
    listed = {(row["function"], lang) for row in table for lang in row.get("languages", LANGUAGES)}
    marked = set()
    for name, block in blocks.items():
        for lang in LANGUAGES:
            if merged(block, block.get(lang)).get("excluded"):
                marked.add((name, lang))
    errors = [f"exclusions.yaml excludes {f} for {lang}, but its binding block does not say excluded: true"
              for f, lang in sorted(listed - marked)]
    errors += [f"{f}'s binding block excludes it for {lang}, but exclusions.yaml gives no reason"
               for f, lang in sorted(marked - listed)]
    return errors


def load_classes():
    data = yaml.safe_load((BINDINGS / "classes.yaml").read_text(encoding="utf-8"))
    classes = {}
    for key, row in data["classes"].items():
        classes[key] = {"key": key, "kind": "class", "handle": row["handle"], "params": row.get("params", {}),
                        "names": {lang: row.get(lang, key) for lang in LANGUAGES},
                        "lifecycle": row.get("lifecycle", []), "close": row.get("close", "generated"),
                        "lent_by": row.get("lent_by"), "rust_fields": row.get("rust_fields", "")}
    for key, row in data["modules"].items():
        classes[key] = {"key": key, "kind": "module", "handle": None, "params": {},
                        "names": {lang: row.get(lang, "") for lang in LANGUAGES}}
    return classes


# ---- what each parameter is ---------------------------------------------------------------------
#
# A call's parameters are read once into roles, the same for every language:
#   inputs:  self, context, handle, handles (an array of handles and its count), dims (int64
#            array and its count), ints (int32 array), bytes (bytes and their size), path, string,
#            bool, flags, enum, scalar, pointer
#   outputs: value (a scalar, enum, bool or pointer the call writes), created (a new handle the
#            caller owns), text (char buffer of the two-call convention), blob_bytes (uint8_t
#            buffer of the two-call convention), shape (int64 array of at most CBLOB_MAX_AXES and its
#            count), array (int64 array of the two-call convention), created_list (new handles, two
#            calls), string (a `const char **` the library owns)


class Arg:
    """One parameter of the safe method (or a C parameter it fills)."""

    def __init__(self, role, param, **extra):
        self.role = role
        self.param = param                # the C parameter (the array's, for an array and count)
        self.c = param["name"]
        self.base = param["base"]
        self.count = extra.get("count")   # the C parameter holding an array's length
        self.cls = extra.get("cls")       # the class of a handle argument
        self.flags = extra.get("flags")   # the enum of a flags argument
        self.spec = {}                    # the block's params entry, per language (filled later)


class Result:
    def __init__(self, role, param, **extra):
        self.role = role
        self.param = param
        self.c = param["name"]
        self.base = param["base"]
        self.count = extra.get("count")   # the out-parameter with the array's length
        self.capacity = extra.get("capacity")  # the in-parameter with the array's room
        self.cls = extra.get("cls")
        self.as_bool = extra.get("as_bool", False)


BOOL_OUT = re.compile(r"^out_(is_|has_|equal)")
FLAG_ENUMS = {"json_flags": "cblob_json_flags", "export_flags": "cblob_export_flags", "npz_flags": "cblob_export_flags",
              "replace_flags": "cblob_replace_flags", "open_flags": "cblob_open_flags", "proto_flags": "cblob_proto_flags"}
# Enum parameters whose 0 means "none of them" (cblob_file_open's dtype: keep each array's own):
# an Option in Rust, a nullable in C#, None in Python, the zero value in Go.
OPTIONAL_ENUM_CHECKS = {"convert_dtype"}


class Call:
    """A function read as a safe method: receiver, arguments and results."""

    def __init__(self, fn, block, cls, classes, model):
        self.fn = fn
        self.block = block
        self.cls = cls
        self.name = fn["name"]
        params = fn["params"]
        handle_classes = {c["handle"]: c for c in classes.values() if c["kind"] == "class" and c["key"] in
                          ("Blob", "Context", "Net", "Comm", "File", "Request")}
        enums = {e["name"] for e in model["enums"]}
        lengths = {p["length"] for p in params if p.get("length")}
        self.receiver = None
        if cls["kind"] == "class":
            self.receiver = next((p for p in params if p["base"] == cls["handle"] and p["depth"] == 1
                                  and p["dir"] == "in"), None)
        self.static = self.receiver is None and cls["kind"] == "class"
        self.args, self.results = [], []
        if not fn["returns_status"]:
            # A string the library returns directly (its version, its BLAS), never NULL.
            if fn["returns"].replace(" ", "") != "constchar*":
                raise BindingError(f"{self.name}: only a status or a `const char *` result has a safe form")
            self.results.append(Result("direct_text", {"name": "return", "base": "char"}))
        outs = [p for p in params if p["dir"] == "out"]
        claimed = set()
        for p in outs:
            if p["name"] in claimed:
                continue
            if p.get("length"):
                counter = next((q for q in outs if q is not p and q["name"] not in claimed and q["depth"] == 1
                                and q["base"] in ("size_t", "int32_t", "int64_t") and outs.index(q) > outs.index(p)),
                               None)
                capacity = next(q for q in params if q["name"] == p["length"])
                if counter is None:
                    raise BindingError(f"{self.name}: the array {p['name']} has no out-parameter with its length")
                claimed.update({p["name"], counter["name"]})
                if p["base"] == "char":
                    role = "text"
                elif p["base"] == "uint8_t":
                    role = "blob_bytes"
                elif p["base"] == "int64_t" and capacity.get("check") == "capacity_axes":
                    role = "shape"
                elif p["base"] == "int64_t":
                    role = "array"
                elif p["base"] in handle_classes and p["depth"] == 2:
                    role = "created_list"
                else:
                    raise BindingError(f"{self.name}: no safe form for the array {p['name']} ({p['type']})")
                self.results.append(Result(role, p, count=counter["name"], capacity=capacity["name"],
                                           cls=handle_classes.get(p["base"])))
                continue
            claimed.add(p["name"])
            if p["depth"] == 2 and p["base"].startswith("struct DLManaged") and p.get("ownership") == "caller_owns":
                self.results.append(Result("tensor", p))  # an exported DLPack tensor the caller deletes
            elif p["depth"] == 2 and p["base"] in handle_classes:
                if p.get("ownership") != "caller_owns":
                    # A handle the library lends (a file's model) must never be destroyed by
                    # the object a generated method would wrap it in.
                    raise BindingError(f"{self.name}: {p['name']} is a handle the caller does not own; "
                                       "wrap it by hand (hand: and the reason)")
                self.results.append(Result("created", p, cls=handle_classes[p["base"]]))
            elif p["depth"] == 2 and p["base"] == "char":
                self.results.append(Result("string", p))
            elif p["depth"] == 2 and p["base"] == "void":
                self.results.append(Result("value", p))
            elif p["depth"] == 1 and (p["base"] in ffi_scalars(model) or p["base"] in enums):
                self.results.append(Result("value", p, as_bool=bool(BOOL_OUT.match(p["name"]))
                                           or block.get("result") == "bool"))
            else:
                raise BindingError(f"{self.name}: no safe form for the out-parameter {p['name']} ({p['type']})")
        for p in params:
            if p["dir"] == "out" or p["name"] in lengths and not p.get("length"):
                continue
            if block.get("result") == "list" and p["name"] == "index":
                continue  # a list method reads every index
            if p is self.receiver:
                self.args.append(Arg("self", p, cls=cls))
                continue
            self.args.append(self.in_arg(p, handle_classes, enums, params))
        self.check_array_counts(params)

    def in_arg(self, p, handle_classes, enums, params):
        base, depth, check = p["base"], p["depth"], p.get("check")
        if depth == 1 and base == "cblob_context":
            return Arg("context", p, cls=handle_classes[base])
        if depth == 1 and base in handle_classes:
            return Arg("handle", p, cls=handle_classes[base])
        if depth == 2 and base in handle_classes and p.get("length"):
            return Arg("handles", p, count=p["length"], cls=handle_classes[base])
        if depth == 1 and base == "int64_t" and p["is_const"] and p.get("length"):
            return Arg("dims", p, count=p["length"])
        if depth == 1 and base == "int32_t" and p["is_const"] and p.get("length"):
            return Arg("ints", p, count=p["length"])
        if depth == 1 and base == "uint8_t" and p["is_const"] and p.get("length"):
            return Arg("bytes", p, count=p["length"])
        if depth == 1 and base == "char" and p["is_const"]:
            is_path = p["name"] in ("path", "folder") or (check or "").endswith(("path", "folder"))
            return Arg("path" if is_path else "string", p)
        if depth == 1 and base == "void":
            return Arg("pointer", p)
        if depth == 1 and base.startswith("struct DLManaged") and p.get("ownership") == "transfers_to_callee":
            return Arg("tensor", p)  # a DLPack tensor the call takes on success only
        if depth == 0 and base in enums and check in OPTIONAL_ENUM_CHECKS:
            return Arg("optional_enum", p)
        if depth == 0 and base in enums:
            return Arg("enum", p)
        if depth == 0 and check == "bool":
            return Arg("bool", p)
        if depth == 0 and check in FLAG_ENUMS:
            return Arg("flags", p, flags=FLAG_ENUMS[check])
        if depth == 0 and base in ("int32_t", "int64_t", "double", "float", "size_t", "uint32_t", "uint64_t"):
            return Arg("scalar", p)
        raise BindingError(f"{self.name}: no safe form for the parameter {p['name']} ({p['type']}); "
                           "wrap it by hand (hand: and the reason) or teach codegen/safe.py")

    def check_array_counts(self, params):
        for arg in self.args:
            if arg.count and not any(q["name"] == arg.count for q in params):
                raise BindingError(f"{self.name}: {arg.c}'s length {arg.count} is no parameter")


def ffi_scalars(model):
    return {"int32_t", "int64_t", "uint32_t", "uint64_t", "size_t", "double", "float", "uint8_t", "void"}


# ---- documentation --------------------------------------------------------------------------------


class Names:
    """Every function's, enum value's and constant's name in each language, for translating the
    description's prose (which speaks C) into the language a method's reader uses."""

    def __init__(self, model):
        self.functions = {lang: {} for lang in LANGUAGES}
        self.values = {lang: {} for lang in LANGUAGES}
        lang_key = {"rust": "rust", "go": "go", "csharp": "cs", "python": "py"}
        for e in model["ffi"]["enums"]:
            for v in e["values"]:
                for lang in LANGUAGES:
                    self.values[lang][v["c"]] = (e["names"][lang_key[lang]], v["names"][lang_key[lang]])
        for c in model["ffi"]["constants"]:
            for lang in LANGUAGES:
                self.values[lang][c["c"]] = (None, c["names"][lang_key[lang]])

    def translate(self, text, lang):
        def function(m):
            found = self.functions[lang].get(m.group(0))
            return found or m.group(0)

        def value(m):
            found = self.values[lang].get(m.group(0))
            if not found:
                return m.group(0)
            enum, name = found
            if enum is None:
                return name if lang in ("rust", "python") else name
            separator = {"rust": "::", "go": "", "csharp": ".", "python": "."}[lang]
            return f"{enum}{separator}{name}" if lang != "go" else f"{enum}{name}"
        text = re.sub(r"\bcblob_[a-z0-9_]+\b(?:\(\))?", lambda m: function(re.match(r"cblob_\w+", m.group(0))), text)
        return re.sub(r"\bCBLOB_[A-Z0-9_]+\b", value, text)


def doc_text(fn, spec=None):
    """A method's documentation: the header's, after the block's summary when it has one (for a
    method whose form hides what the header's text speaks of: a list read item by item)."""
    text = fn["doc"].strip()
    summary = (spec or {}).get("summary")
    return f"{summary.strip()}\n\n{text}" if summary else text


# ---- helpers shared by the emitters ---------------------------------------------------------------


def camel(name, lang, tm):
    return tm.camel(name, lang)


def lower_camel(name, lang, tm):
    text = tm.camel(name, lang)
    # Go's initialisms stay in capitals at the start too ("ID"), but a parameter starts lower case.
    m = re.match(r"^([A-Z]+)(?=[A-Z][a-z]|$)", text)
    if m and len(m.group(1)) > 1:
        return m.group(1).lower() + text[len(m.group(1)):]
    return text[0].lower() + text[1:]


def default_name(fn, cls):
    name = re.sub(r"^cblob_", "", fn["name"])
    prefixes = {"Blob": "blob_", "Window": "window_", "Context": "context_", "Net": "model_", "Comm": "comm_", "File": "file_",
                "gpu": "gpu_", "proto": "proto_", "library": ""}
    prefix = prefixes.get(cls["key"], "")
    return name[len(prefix):] if name.startswith(prefix) else name


def parse_access(entries, call):
    """[(param or 'self', part: data|diff|part|both, write: bool, condition param or None)]."""
    out = []
    for entry in entries or []:
        m = re.fullmatch(r"(read|write) (\w+)\.(data|diff|part|both)(?: if (\w+))?", entry.strip())
        if not m:
            raise BindingError(f"{call.name}: access entry {entry!r} is not 'read|write <param>.<data|diff|part|both> [if <bool param>]'")
        who, part, cond = m.group(2), m.group(3), m.group(4)
        names = {a.c for a in call.args} | {"self"}
        if who not in names or (cond and cond not in names):
            raise BindingError(f"{call.name}: access entry {entry!r} names no parameter")
        out.append((who, part, m.group(1) == "write", cond))
    return out


# ---- one method in one language ---------------------------------------------------------------------


class Method:
    """What a template prints for one method: where it goes, its signature, body and doc."""

    def __init__(self, call, lang, owner, name, doc, lines, static=False, kind="method", sort=0):
        self.function = call.name
        self.lang = lang
        self.owner = owner          # the class (type name) or module it belongs to
        self.name = name
        self.doc = doc              # lines, without comment markers
        self.lines = lines          # the whole declaration, indented for its place
        self.static = static
        self.kind = kind
        self.sort = sort
        self.first_call = call.name  # the C function whose message a failure of the first call carries


def neutral_default(value, lang, names, arg):
    """A block's default (CBLOB_PART_DATA, false, 0, null) as the language writes it."""
    if value is None:
        return {"csharp": "null", "python": "None"}.get(lang, "nil")
    if value is True or value is False:
        return {"python": str(value)}.get(lang, str(value).lower())
    if isinstance(value, str) and value.startswith("CBLOB_"):
        enum, name = names.values[lang][value]
        return f"{enum}.{name}" if enum else name
    return str(value)


class Emitter:
    lang = None

    def __init__(self, model, tm, names, classes):
        self.model = model
        self.tm = tm
        self.names = names
        self.classes = classes

    # -- names and types ---------------------------------------------------------------------------

    def method_name(self, spec, call):
        base = spec.get("name") or default_name(call.fn, call.cls)
        return base

    def param_name(self, arg, spec):
        p = (spec.get("params") or {}).get(arg.c, {})
        return p.get("name") or self.ident(arg.c)

    def ident(self, c_name):
        return c_name

    def arg_spec(self, arg, spec, call):
        """The block's params entry for an argument, with the class's defaults under it."""
        out = {}
        class_params = call.cls["params"].get(arg.c, {})
        if self.lang in class_params:
            out["type"] = class_params[self.lang]
        p = (spec.get("params") or {}).get(arg.c, {})
        out.update({k: v for k, v in p.items() if k not in LANGUAGES})
        out.update(p.get(self.lang) or {})
        return out

    def ordered(self, call, spec):
        args = [a for a in call.args if a.role != "self"]
        order = spec.get("order")
        if order:
            # The listed parameters first, in that order; the others after them, in C's.
            by_name = {a.c: a for a in args}
            if set(order) - set(by_name):
                raise BindingError(f"{call.name}: order names {sorted(set(order) - set(by_name))}, no parameters of it")
            return [by_name[n] for n in order] + [a for a in args if a.c not in order]
        return args

    def translate(self, text):
        return self.names.translate(text, self.lang)

    def doc(self, call, spec):
        return self.translate(doc_text(call.fn, spec)).split("\n")


def lists_last(args, roles=("dims", "ints", "handles")):
    """Whether the last argument is an array the language can take as a variadic/params list."""
    return bool(args) and args[-1].role in roles


# ---- Rust -------------------------------------------------------------------------------------------

RUST_SCALARS = {"int32_t": "i32", "int64_t": "i64", "double": "f64", "float": "f32", "size_t": "usize",
                "uint32_t": "u32", "uint64_t": "u64"}


class RustEmitter(Emitter):
    lang = "rust"

    def ident(self, c_name):
        return ffi.TypeMap.rust_ident(c_name)

    def type_of(self, c_base):
        if c_base in RUST_SCALARS:
            return RUST_SCALARS[c_base]
        return self.tm.type_name(c_base, "rust")

    def doc(self, call, spec):
        # The description's prose is C documentation, not Markdown: what rustdoc would read as a
        # link or HTML is escaped before the names are translated.
        text = doc_text(call.fn, spec)
        for a, b in (("[", "\\["), ("]", "\\]"), ("<", "\\<"), (">", "\\>")):
            text = text.replace(a, b)
        return self.translate(text).split("\n")

    def emit(self, call, spec):
        owner = call.cls["names"]["rust"]
        name = self.method_name(spec, call)
        args = self.ordered(call, spec)
        decls, prelude, expr = [], [], {}
        unsafe_fn = bool(spec.get("unsafe"))
        for arg in args:
            a = self.arg_spec(arg, spec, call)
            n = a.get("name") or self.ident(arg.c)
            role = arg.role
            if role == "context":
                decls.append(f"{n}: &Context")
                expr[arg.c] = f"{n}.as_ptr()"
            elif role == "handle":
                decls.append(f"{n}: &{a.get('type') or arg.cls['names']['rust']}")
                expr[arg.c] = f"{n}.as_ptr()"
            elif role == "handles":
                decls.append(f"{n}: {a.get('type') or '&[&' + arg.cls['names']['rust'] + ']'}")
                prelude.append(f"let {n}_raw: Vec<*mut sys::{arg.cls['handle']}> = {n}.iter().map(|b| b.as_ptr()).collect();")
                expr[arg.c] = f"{n}_raw.as_ptr()"
                expr[arg.count] = self.count_expr(call, arg.count, f"{n}_raw.len()")
            elif role in ("dims", "ints"):
                decls.append(f"{n}: &[{'i64' if role == 'dims' else 'i32'}]")
                expr[arg.c] = f"{n}.as_ptr()"
                expr[arg.count] = self.count_expr(call, arg.count, f"{n}.len()")
            elif role == "bytes":
                decls.append(f"{n}: &[u8]")
                expr[arg.c] = f"{n}.as_ptr()"
                expr[arg.count] = self.count_expr(call, arg.count, f"{n}.len()")
            elif role == "path":
                decls.append(f"{n}: impl AsRef<Path>")
                prelude.append(f"let {n} = c_path({n}.as_ref())?;")
                expr[arg.c] = f"{n}.as_ptr()"
            elif role == "string":
                what = a.get("what") or f"the {arg.c.replace('_', ' ')}"
                if arg.param["nullable"]:
                    decls.append(f"{n}: Option<&str>")
                    prelude.append(f"let {n} = {n}.map(|t| c_string(t, \"{what}\")).transpose()?;")
                    expr[arg.c] = f"{n}.as_deref().map_or(ptr::null(), CStr::as_ptr)"
                else:
                    decls.append(f"{n}: &str")
                    prelude.append(f"let {n} = c_string({n}, \"{what}\")?;")
                    expr[arg.c] = f"{n}.as_ptr()"
            elif role == "bool":
                decls.append(f"{n}: bool")
                expr[arg.c] = f"i32::from({n})"
            elif role == "flags":
                flag = self.tm.type_name(arg.flags, "rust")
                decls.append(f"{n}: &[{flag}]")
                expr[arg.c] = f"flag_bits({n}, {flag}::raw)"
            elif role == "enum":
                decls.append(f"{n}: {self.type_of(arg.base)}")
                expr[arg.c] = f"{n}.raw()"
            elif role == "optional_enum":
                decls.append(f"{n}: Option<{self.type_of(arg.base)}>")
                expr[arg.c] = f"{n}.map_or(0, |v| v.raw())"
            elif role == "scalar":
                c_type = self.type_of(arg.base)
                t = a.get("type") or c_type
                decls.append(f"{n}: {t}")
                expr[arg.c] = n if t == c_type else f"{n} as {c_type}"
            elif role == "pointer":
                mut = "const" if arg.param["is_const"] else "mut"
                decls.append(f"{n}: *{mut} c_void")
                expr[arg.c] = n
                unsafe_fn = True
            else:
                raise BindingError(f"{call.name}: Rust has no form for a {role} argument")
        return self.method(call, spec, owner, name, decls, prelude, expr, unsafe_fn)

    def count_expr(self, call, count_name, length):
        p = next(q for q in call.fn["params"] if q["name"] == count_name)
        if p["base"] == "size_t":
            return length
        return f"len_{'i32' if p['base'] == 'int32_t' else 'i64'}({length})"

    def method(self, call, spec, owner, name, decls, prelude, expr, unsafe_fn):
        results = call.results
        infallible = bool(spec.get("infallible"))
        access = parse_access(spec.get("access"), call)
        reshapes = bool(spec.get("reshapes"))
        writes_self = any(who == "self" and write for who, _, write, _ in access)
        mutable = spec.get("mut", writes_self or reshapes)
        receiver = "self.as_ptr()"
        if call.receiver is not None:
            expr[call.receiver["name"]] = "raw" if reshapes else receiver
        tail_lines, ret = [], "Result<()>"
        u = "" if unsafe_fn else "unsafe "

        def c_call(extra=None):
            values = dict(expr)
            values.update(extra or {})
            args = ", ".join(values[p["name"]] for p in call.fn["params"])
            text = f"sys::{call.name}({args})"
            return text if unsafe_fn else f"unsafe {{ {text} }}"

        roles = [r.role for r in results]
        if spec.get("result") == "list":
            return self.list_method(call, spec, owner, name, decls, prelude, expr, mutable, unsafe_fn)
        if roles == ["direct_text"]:
            ret, tail_lines = "String", [f"unsafe {{ text({c_call()[len('unsafe { '):-2]}) }}"]
            roles = None
        if roles is None:
            pass
        elif not results:
            if reshapes:
                core = f"self.reshaping(|raw| {c_call()})"
            else:
                core = f"check({c_call()})"
            body = self.wrap_access(access, core, mutable, call, prelude)
            tail_lines = [body]
        elif all(r == "value" for r in roles) or roles == ["shape"] or roles == ["string"]:
            out_names, converts, types = [], [], []
            for r in results:
                if r.role == "shape":
                    prelude_out = ["let mut dims = [0i64; MAX_AXES as usize];", "let mut axes_count = 0i32;"]
                    prelude.extend(prelude_out)
                    expr[r.capacity] = "MAX_AXES"
                    expr[r.c] = "dims.as_mut_ptr()"
                    expr[r.count] = "&mut axes_count"
                    converts.append("dims[..axes_count as usize].to_vec()")
                    types.append("Vec<i64>")
                    continue
                v = self.ident(r.c[4:] if r.c.startswith("out_") else r.c)
                if v == "self" or v in {a.c for a in call.args}:
                    v = self.ident(r.c)  # out_axis beside an axis argument
                init, conv, t, fallible_conv = self.out_value(r, spec, v)
                prelude.append(f"let mut {v} = {init};")
                expr[r.c] = f"&mut {v}"
                converts.append(conv)
                types.append(t)
            tail_conv = converts[0] if len(converts) == 1 else "(" + ", ".join(converts) + ")"
            t = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
            fallible_conv = any(c.endswith("?") for c in converts)
            # A lone conversion that can fail (an enum value this crate does not know) is the
            # result itself; others are wrapped in Ok.
            tail = tail_conv[:-1] if fallible_conv and len(converts) == 1 else f"Ok({tail_conv})"
            if infallible:
                if access:
                    raise BindingError(f"{call.name}: an infallible getter claims no memory")
                tail_lines = [f"infallible({c_call()});"]
                if fallible_conv:
                    tail_lines.append(tail)
                    ret = f"Result<{t}>"
                else:
                    tail_lines.append(tail_conv)
                    ret = t
            else:
                tail_lines = [self.wrap_access(access, f"check({c_call()})", mutable, call, prelude) + "?;", tail]
                ret = f"Result<{t}>"
        elif roles == ["created"]:
            r = results[0]
            t = r.cls["names"]["rust"]
            expr[r.c] = "out"
            core = f"{t}::created(|out| {c_call()})"
            tail_lines = [self.wrap_access(access, core, mutable, call, prelude)]
            ret = f"Result<{t}>"
            if spec.get("shares_memory"):
                pass
        elif roles in (["text"], ["blob_bytes"]):
            r = results[0]
            helper = "read_text" if r.role == "text" else "read_bytes"
            expr[r.c], expr[r.capacity], expr[r.count] = "buffer", "size", "length"
            core = self.wrap_access(access, f"{helper}(|buffer, size, length| {c_call()})", mutable, call, prelude)
            t = "String" if r.role == "text" else "Vec<u8>"
            if spec.get("returns"):
                core, t = f"{core}.map({spec['returns']}::from)", spec["returns"]
            if infallible:
                tail_lines, ret = [f"must({core})"], t
            else:
                tail_lines, ret = [core], f"Result<{t}>"
        elif roles == ["array"]:
            r = results[0]
            expr[r.c], expr[r.capacity], expr[r.count] = "values", "room", "count"
            t = (spec.get("returns") or "Vec<i64>")
            core = f"read_array(|values, room, count| {c_call()})"
            if t != "Vec<i64>":
                elem = t[4:-1]
                core = f"{core}.map(|values| values.into_iter().map(|v| v as {elem}).collect())"
            tail_lines = [core]
            ret = f"Result<{t}>"
        elif roles == ["created_list"]:
            r = results[0]
            expr[r.c], expr[r.capacity], expr[r.count] = "handles", "room", "count"
            tail_lines = [f"read_created(|room, handles, count| {c_call()})"]
            ret = f"Result<Vec<{r.cls['names']['rust']}>>"
        else:
            raise BindingError(f"{call.name}: Rust has no form for results {roles}")
        self_decl = []
        if call.receiver is not None:
            self_decl = ["&mut self" if mutable else "&self"]
        signature = ", ".join(self_decl + decls)
        head = f"pub {'unsafe ' if unsafe_fn else ''}fn {name}({signature}) -> {ret} {{"
        lines = ["#[inline]", head] + [f"    {l}" for l in prelude] + [f"    {l}" for l in tail_lines] + ["}"]
        doc = self.doc(call, spec)
        if unsafe_fn:
            doc += ["", "# Safety", "The pointer arguments must be what the description above asks for: cblob passes them",
                    "on as they are."]
        return Method(call, "rust", owner, name, doc, lines, static=call.static)

    def out_value(self, r, spec, v):
        """(initial value, conversion to the result, result type) of a value out-parameter."""
        base = r.base
        returns = spec.get("returns")
        if r.role == "string":
            init = "ptr::null()"
            if returns == "Option<String>":
                return init, f"(!{v}.is_null()).then(|| unsafe {{ text({v}) }})", "Option<String>", False
            return init, f"unsafe {{ text({v}) }}", "String", False
        if r.param["depth"] == 2:  # void **
            const = CTypeConst(r.param["type"])
            init = "ptr::null()" if const else "ptr::null_mut()"
            t = "*const c_void" if const else "*mut c_void"
            return init, v, t, False
        enum = next((e for e in self.model["enums"] if e["name"] == base), None)
        if enum:
            t = self.tm.type_name(base, "rust")
            return "0", f"known({t}::from_raw({v}), {v}, \"{t}\")?", t, True
        if r.as_bool:
            return "0", f"{v} != 0", "bool", False
        t = RUST_SCALARS[base]
        init = "0.0" if t in ("f32", "f64") else "0"
        if returns and returns != t:
            return init, f"{v} as {returns}", returns, False
        return init, v, t, False

    def wrap_access(self, access, core, mutable, call, prelude):
        """The call inside with_access, claiming the memories the block's access lists (owned
        Arcs when the receiver is &mut self, which the closure borrows)."""
        if not access:
            return core
        list_args = {a.c: a for a in call.args if a.role == "handles"}
        entries = []
        for who, part, write, cond in access:
            target = "self" if who == "self" else self.ident(who)
            kind = "Access::Write" if write else "Access::Read"
            parts = {"data": ["Part::Data"], "diff": ["Part::Diff"], "both": ["Part::Data", "Part::Diff"],
                     "part": ["part"]}[part]
            for p in parts:
                entries.append((target, p, kind, cond, who in list_args))
        helper = "with_owned_access" if mutable else "with_access"
        if not any(cond or many for _, _, _, cond, many in entries):
            items = ", ".join(self.claim(t, p, k, mutable) for t, p, k, _, _ in entries)
            return f"{helper}(&[{items}], || {core})"
        element = "(Arc<Memory>, Access)" if mutable else "(&Arc<Memory>, Access)"
        prelude.append(f"let mut uses: Vec<{element}> = Vec::new();")
        for target, p, kind, cond, many in entries:
            if many:
                line = f"uses.extend({target}.iter().map(|b| {self.claim('b', p, kind, mutable)}));"
            else:
                line = f"uses.push({self.claim(target, p, kind, mutable)});"
            prelude.append(f"if {self.ident(cond)} {{ {line} }}" if cond else line)
        return f"{helper}(&uses, || {core})"

    @staticmethod
    def claim(target, part, kind, mutable):
        memory = f"{target}.memory({part})"
        return f"(Arc::clone({memory}), {kind})" if mutable else f"({memory}, {kind})"

    def list_method(self, call, spec, owner, name, decls, prelude, expr, mutable, unsafe_fn):
        count_fn = spec.get("count")
        count = next(fn for fn in self.model["functions"] if fn["name"] == count_fn)
        item = call.results[0]
        index = next(p["name"] for p in call.fn["params"] if p["name"] == "index")
        expr_item = dict(expr)
        expr_item[index] = "i"
        expr_item[item.c] = "&mut value"
        count_expr = {}
        for p in count["params"]:
            if p["dir"] == "out":
                count_expr[p["name"]] = "&mut n"
            else:
                count_expr[p["name"]] = expr[p["name"]]
        count_args = ", ".join(count_expr[p["name"]] for p in count["params"])
        item_args = ", ".join(expr_item[p["name"]] for p in call.fn["params"])
        lines = [f"pub fn {name}({', '.join(['&self'] + decls)}) -> Result<Vec<String>> {{"]
        lines += [f"    {l}" for l in prelude]
        lines += ["    let mut n = 0i64;",
                  f"    check(unsafe {{ sys::{count_fn}({count_args}) }})?;",
                  "    (0..n)",
                  "        .map(|i| {",
                  "            let mut value = ptr::null();",
                  f"            check(unsafe {{ sys::{call.name}({item_args}) }})?;",
                  "            Ok(unsafe { text(value) })",
                  "        })",
                  "        .collect()",
                  "}"]
        return Method(call, "rust", owner, name, self.doc(call, spec), lines, static=call.static)

    def doc_lines(self, method):
        return method.doc


def CTypeConst(c_text):
    """Whether what a `T **` out-parameter's value points to is const (`const void **`)."""
    return ffi.CType(c_text).base_const


# ---- Go ---------------------------------------------------------------------------------------------

GO_SCALARS = {"int32_t": ("int", "C.int32_t"), "int64_t": ("int64", "C.int64_t"), "double": ("float64", "C.double"),
              "float": ("float32", "C.float"), "size_t": ("uintptr", "C.size_t"), "uint32_t": ("uint32", "C.uint32_t"),
              "uint64_t": ("uint64", "C.uint64_t")}
GO_RECEIVERS = {"Blob": "b", "Window": "b", "Context": "c", "Net": "m", "Comm": "c", "File": "f"}


class GoEmitter(Emitter):
    lang = "go"

    def method_name(self, spec, call):
        base = spec.get("name") or default_name(call.fn, call.cls)
        if re.match(r"^[A-Z]", base):
            return base
        return self.tm.camel(base, "go")

    def ident(self, c_name):
        return self.tm.go_ident(c_name)

    def zero(self, t):
        if t in ("string",):
            return '""'
        if t == "bool":
            return "false"
        if t.startswith("[]") or t.startswith("*") or t == "error":
            return "nil"
        return "0"

    def emit(self, call, spec):
        owner = call.cls["names"]["go"]
        name = self.method_name(spec, call)
        args = self.ordered(call, spec)
        decls, before, expr, keep, nests = [], [], {}, [], []
        handle_checks = []
        variadic = lists_last(args) and not spec.get("no_variadic")
        frame = None
        for i, arg in enumerate(args):
            a = self.arg_spec(arg, spec, call)
            n = a.get("name") or self.ident(arg.c)
            role = arg.role
            last = variadic and i == len(args) - 1
            if role == "context":
                n = a.get("name") or "ctx"
                decls.append(f"{n} *Context")
                if call.receiver is None and frame is None:
                    frame = (n, "cblob_context", "c")
                    expr[arg.c] = "c"
                else:
                    handle_checks.append((n, f"h{len(handle_checks)}"))
                    expr[arg.c] = handle_checks[-1][1]
            elif role == "handle":
                decls.append(f"{n} *{arg.cls['names']['go']}")
                handle_checks.append((n, f"h{len(handle_checks)}"))
                expr[arg.c] = handle_checks[-1][1]
            elif role == "handles":
                decls.append(f"{n} {'...' if last else '[]'}*{arg.cls['names']['go']}")
                before += [f"{n}List, {n}First, err := handles({n})", "if err != nil {", "\treturn {zeroes}", "}"]
                keep += [n, f"{n}List"]
                expr[arg.c] = f"{n}First"
                expr[arg.count] = f"{self.c_count(call, arg.count)}(len({n}List))"
            elif role == "dims":
                decls.append(f"{n} {'...' if last else '[]'}int64")
                expr[arg.c] = f"int64s({n})"
                expr[arg.count] = f"axes({n})"
                keep.append(n)
            elif role == "ints":
                decls.append(f"{n} {'...' if last else '[]'}int")
                before.append(f"{n}C, {n}First := int32s({n})")
                expr[arg.c] = f"{n}First"
                expr[arg.count] = f"C.int32_t(len({n}C))"
                keep.append(f"{n}C")
            elif role == "bytes":
                decls.append(f"{n} []byte")
                expr[arg.c] = f"bytesPtr({n})"
                expr[arg.count] = f"C.size_t(len({n}))"
                keep.append(n)
            elif role in ("path", "string"):
                decls.append(f"{n} string")
                cname = "c" + n[0].upper() + n[1:]
                if role == "path":
                    nests.append(f"withPath({n}, func({cname} *C.char) (err error) {{")
                else:
                    what = a.get("what") or f"the {arg.c.replace('_', ' ')}"
                    helper = "withOptionalString" if arg.param["nullable"] else "withString"
                    nests.append(f"{helper}({n}, \"{what}\", func({cname} *C.char) (err error) {{")
                expr[arg.c] = cname
            elif role == "bool":
                decls.append(f"{n} bool")
                expr[arg.c] = f"boolInt({n})"
            elif role == "flags":
                decls.append(f"{n} {self.tm.type_name(arg.flags, 'go')}")
                expr[arg.c] = f"C.int32_t({n})"
            elif role in ("enum", "optional_enum"):
                # An optional enum's zero value (DType(0)) is its "none".
                decls.append(f"{n} {self.tm.type_name(arg.base, 'go')}")
                expr[arg.c] = f"C.{arg.base}({n})"
            elif role == "scalar":
                t, c_type = GO_SCALARS[arg.base]
                decls.append(f"{n} {a.get('type') or t}")
                expr[arg.c] = f"{c_type}({n})"
            elif role == "pointer":
                decls.append(f"{n} uintptr")
                before.append("// A device address or driver object, never Go memory: its bits go to C as they are.")
                before.append(f"{n}Pointer := *(*unsafe.Pointer)(unsafe.Pointer(&{n}))")
                expr[arg.c] = f"{n}Pointer"
            else:
                raise BindingError(f"{call.name}: Go has no form for a {role} argument")
        if call.receiver is not None:
            recv = GO_RECEIVERS[call.cls["key"]]
            frame = (recv, call.cls["handle"], "p")
            expr[call.receiver["name"]] = "p"
        if spec.get("result") == "list":
            return self.list_method(call, spec, owner, name, decls, expr, frame)
        if [r.role for r in call.results] == ["direct_text"]:
            lines = [f"func {name}({', '.join(decls)}) string {{", f"\treturn {self.raw_call(call, expr)}", "}"]
            return Method(call, "go", owner, name, self.go_doc(name, call, spec), lines, static=True)
        types, targets, rhs, returns, outer_decls = self.results(call, spec, expr, frame)
        return self.method(call, spec, owner, name, decls, before, expr, keep, nests, handle_checks,
                           frame, types, targets, rhs, returns, outer_decls)

    def c_count(self, call, count_name):
        p = next(q for q in call.fn["params"] if q["name"] == count_name)
        return {"int32_t": "C.int32_t", "int64_t": "C.int64_t", "size_t": "C.size_t"}[p["base"]]

    def raw_call(self, call, expr):
        fields = {f["name"] for f in call.fn["go"]["fields"]}
        args = [expr[p["name"]] for p in call.fn["params"] if p["name"] not in fields]
        return f"{call.fn['go']['func']}({', '.join(args)})"

    def results(self, call, spec, expr, frame):
        """(result types, the variables the call assigns besides err, the call expression, the
        return expressions, declarations before the call)."""
        roles = [r.role for r in call.results]
        returns_override = spec.get("returns")
        if not roles:
            return [], [], self.raw_call(call, expr), [], []
        if all(r == "value" or r == "string" for r in roles):
            names, types, convs = [], [], []
            for r in call.results:
                v = "v" if len(call.results) == 1 else self.ident(r.c[4:] if r.c.startswith("out_") else r.c)
                names.append(v)
                t, conv = self.convert(r, v, returns_override if len(call.results) == 1 else None)
                types.append(t)
                convs.append(conv)
            return types, names, self.raw_call(call, expr), convs, []
        if roles == ["created"]:
            r = call.results[0]
            t = r.cls["names"]["go"]
            wrap = f"{t[0].lower()}{t[1:]}Created"
            return [f"*{r.cls['names']['go']}"], ["r"], self.raw_call(call, expr), [f"{wrap}(r, err)"], []
        if roles in (["text"], ["blob_bytes"]):
            r = call.results[0]
            text = r.role == "text"
            expr[r.c], expr[r.capacity] = "buffer", "size"
            helper, ctype, t = ("readText", "*C.char", "string") if text else ("readBytes", "*C.uint8_t", "[]byte")
            rhs = (f"{helper}(func(buffer {ctype}, size C.size_t) (C.size_t, error) {{\n"
                   f"\treturn {self.raw_call(call, expr)}\n}})")
            return [t], ["out"], rhs, ["out"], []
        if roles == ["shape"]:
            r = call.results[0]
            expr[r.capacity], expr[r.c] = "MaxAxes", "int64s(dims)"
            return ["[]int64"], ["n"], self.raw_call(call, expr), ["dims[:n]"], ["dims := make([]int64, MaxAxes)"]
        if roles == ["array"]:
            r = call.results[0]
            expr[r.c], expr[r.capacity] = "values", "room"
            t = returns_override or "[]int64"
            rhs = (f"readInt64s(func(values *C.int64_t, room C.int64_t) (C.int64_t, error) {{\n"
                   f"\treturn {self.raw_call(call, expr)}\n}})")
            return [t], ["out"], rhs, ["out" if t == "[]int64" else "ints(out)"], []
        if roles == ["created_list"] and frame is not None and frame[1] == "cblob_context":
            # readVector checks the context's handle itself and wraps every new blob.
            r = call.results[0]
            expr[r.capacity], expr[r.c] = "room", "handles"
            rhs = (f"readVector({frame[0]}, func(c *C.cblob_context, room C.int64_t, handles **C.{r.cls['handle']}) "
                   f"(C.int64_t, error) {{\n\treturn {self.raw_call(call, expr)}\n}})")
            return [f"[]*{r.cls['names']['go']}"], ["out"], rhs, ["out"], ["NOFRAME"]
        raise BindingError(f"{call.name}: Go has no form for results {roles}")

    def convert(self, r, v, override):
        if r.role == "string":
            return "string", f"goString({v})"
        if r.param["depth"] == 2:
            return "uintptr", f"uintptr({v})"
        enum = next((e for e in self.model["enums"] if e["name"] == r.base), None)
        if enum:
            t = self.tm.type_name(r.base, "go")
            return t, f"{t}({v})"
        if r.as_bool:
            return "bool", f"{v} != 0"
        t = override or GO_SCALARS[r.base][0]
        return t, f"{t}({v})"

    def method(self, call, spec, owner, name, decls, before, expr, keep, nests, handle_checks, frame,
               types, targets, rhs, returns, outer_decls):
        if spec.get("result") == "list":
            return self.list_method(call, spec, owner, name, decls, expr, frame)
        all_types = types + ["error"]
        result_list = all_types[0] if len(all_types) == 1 else "(" + ", ".join(all_types) + ")"
        zeroes = ", ".join([self.zero(t) for t in types] + ["err"])
        body, err_declared = [], False
        for line in before:
            if "{zeroes}" in line:
                err_declared = True
            body.append(line.replace("{zeroes}", zeroes))
        rhs_lines = rhs.split("\n")
        assigned = ", ".join(targets + ["err"])
        if outer_decls == ["NOFRAME"]:
            frame, outer_decls = None, []
        shape = bool(outer_decls)  # a fixed array the call fills: nothing to return on failure
        if not nests:
            # The handles are checked here (ErrClosed for a closed one) and their objects kept
            # alive until the call returns; the call itself is direct (no closure).
            checks = ([(frame[0], frame[2])] if frame else []) + handle_checks
            for var, h in checks:
                body += [f"{h}, err {'=' if err_declared and False else ':='} {var}.handle()", "if err != nil {",
                         f"\treturn {zeroes}", "}"]
                err_declared = True
            body += outer_decls
            op = ":=" if targets or not err_declared else "="
            if not targets and not err_declared:
                op = ":="
            body.append(f"{assigned} {op} {rhs_lines[0]}")
            body += rhs_lines[1:]
            keep = keep + [var for var, _ in checks]
        else:
            # Strings and paths are copied into C memory inside closures (freed when they
            # return), and the call runs in the innermost one.
            body += [f"var {t}" for t in self.target_decls(call, targets)]
            body += outer_decls
            openers = []
            if frame is not None:
                var, handle, param = frame
                openers.append(f"{var}.do(func({param} *C.{handle}) (err error) {{")
            inner = []
            for var, h in handle_checks:
                inner += [f"{h}, err := {var}.handle()", "if err != nil {", "\treturn err", "}"]
            openers += nests
            depth = 1
            for opener in openers[1:]:
                inner.append("\t" * (depth - 1) + "return " + opener)
                depth += 1
            inner.append("\t" * (depth - 1) + f"{assigned} = {rhs_lines[0]}")
            inner += ["\t" * (depth - 1) + l for l in rhs_lines[1:]]
            inner.append("\t" * (depth - 1) + "return")
            for d in reversed(range(1, depth)):
                inner.append("\t" * (d - 1) + "})")
            body.append(f"err {'=' if err_declared else ':='} {openers[0]}")
            body += ["\t" + l for l in inner]
            body.append("})")
            keep = keep + [var for var, _ in handle_checks]
        for k in keep:
            body.append(f"runtime.KeepAlive({k})")
        if not types:
            body.append("return err")
        elif returns[0].endswith("(r, err)"):
            body.append(f"return {returns[0]}")
        elif shape:
            body += ["if err != nil {", f"\treturn {zeroes}", "}", f"return {', '.join(returns)}, nil"]
        else:
            body.append(f"return {', '.join(returns)}, err")
        recv = ""
        if call.receiver is not None:
            recv = f"({GO_RECEIVERS[call.cls['key']]} *{owner}) "
        lines = [f"func {recv}{name}({', '.join(decls)}) {result_list} {{"] + ["\t" + l for l in body] + ["}"]
        return Method(call, "go", owner, name, self.go_doc(name, call, spec), lines, static=call.receiver is None)

    def target_decls(self, call, targets):
        """`name type` of the variables a call in a closure assigns (the raw layer's result types)."""
        out = []
        fields = call.fn["go"]["fields"]
        roles = [r.role for r in call.results]
        for t in targets:
            if t == "r":
                out.append(f"r *C.{call.results[0].cls['handle']}")
            elif t == "out" and roles[0] == "created_list":
                out.append(f"out []*{call.results[0].cls['names']['go']}")
            elif t == "out":
                out.append("out " + {"text": "string", "blob_bytes": "[]byte", "array": "[]int64"}[roles[0]])
            elif t == "n":
                out.append("n C.int32_t")
            else:
                r = next(r for r in call.results if (self.ident(r.c[4:] if r.c.startswith("out_") else r.c) == t
                                                       or (t == "v" and len(call.results) == 1)))
                field = next(f for f in fields if f["name"] == r.c)
                out.append(f"{t} {field['go']}")
        return out

    def list_method(self, call, spec, owner, name, decls, expr, frame):
        count_fn = next(fn for fn in self.model["functions"] if fn["name"] == spec["count"])
        index = "index"
        count_expr = dict(expr)
        item_expr = dict(expr)
        item_expr[index] = "i"
        count_args = ", ".join(count_expr[p["name"]] for p in count_fn["params"] if p["dir"] != "out")
        fields = {f["name"] for f in call.fn["go"]["fields"]}
        item_args = ", ".join(item_expr[p["name"]] for p in call.fn["params"] if p["name"] not in fields)
        var, handle, param = frame
        body = ["var out []string",
                f"err := {var}.do(func({param} *C.{handle}) error {{",
                f"\tn, err := {count_fn['go']['func']}({count_args})",
                "\tfor i := C.int64_t(0); err == nil && i < n; i++ {",
                "\t\tvar text *C.char",
                f"\t\tif text, err = {call.fn['go']['func']}({item_args}); err == nil {{",
                "\t\t\tout = append(out, goString(text))",
                "\t\t}",
                "\t}",
                "\treturn err",
                "})",
                "return out, err"]
        recv = f"({GO_RECEIVERS[call.cls['key']]} *{owner}) "
        lines = [f"func {recv}{name}({', '.join(decls)}) ([]string, error) {{"] + ["\t" + l for l in body] + ["}"]
        return Method(call, "go", owner, name, self.go_doc(name, call, spec), lines)

    def go_doc(self, name, call, spec):
        text = self.translate(doc_text(call.fn, spec))
        first, _, rest = text.partition(" ")
        verbs_not = {"Caffe's", "NeoML's", "Since"}
        if re.fullmatch(r"[A-Z][a-z]+s", first) and first not in verbs_not:
            text = f"{name} {first.lower()} {rest}"
        elif first in ("The", "A", "An", "Whether", "Where", "How", "Which", "What"):
            text = f"{name} returns {first.lower()} {rest}"
        else:
            text = f"{name} wraps {call.name}: {text}"
        return text.split("\n")


# ---- C# ---------------------------------------------------------------------------------------------

CS_SCALARS = {"int32_t": "int", "int64_t": "long", "double": "double", "float": "float", "size_t": "ulong",
              "uint32_t": "uint", "uint64_t": "ulong"}


def xml(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def generated_elsewhere(spec, lang):
    """Whether the language's method of a block comes from another module: Rust's and Go's
    records (codegen/safe_records.py) and DLPack transfers (codegen/safe_dlpack.py)."""
    return lang in ("rust", "go") and not spec.get("excluded") and bool(spec.get("record") or spec.get("dlpack"))


def cs_dlpack_owner(base):
    """The C# class that owns a DLPack struct ("struct DLManagedTensorVersioned": DlpackTensor),
    from codegen/bindings/dlpack.yaml's `tensors`."""
    table = yaml.safe_load((BINDINGS / "dlpack.yaml").read_text(encoding="utf-8"))
    owners = {f"struct {c}": t["csharp"] for c, t in table["tensors"].items() if t.get("csharp")}
    if base not in owners:
        raise BindingError(f"no C# owner for {base} in codegen/bindings/dlpack.yaml's tensors")
    return owners[base]


class CsEmitter(Emitter):
    lang = "csharp"

    def method_name(self, spec, call):
        base = spec.get("name") or default_name(call.fn, call.cls)
        if re.match(r"^[A-Z]", base):
            return base
        return self.tm.camel(base, "cs")

    def ident(self, c_name):
        first, *rest = c_name.split("_")
        return ffi.TypeMap.cs_ident(first + "".join(w.capitalize() for w in rest))

    def emit(self, call, spec):
        owner = call.cls["names"]["csharp"]
        name = self.method_name(spec, call)
        args = self.ordered(call, spec)
        decls, prelude, uses, expr = [], [], [], {}
        params_last = lists_last(args)
        defaults = {}
        for i, arg in enumerate(args):
            a = self.arg_spec(arg, spec, call)
            n = a.get("name") or self.ident(arg.c)
            role = arg.role
            last = params_last and i == len(args) - 1
            default = ""
            if "default" in a:
                default = " = " + neutral_default(a["default"], "csharp", self.names, arg)
            if role == "context":
                decls.append(f"Context {n}{default}")
                uses.append((f"Context.GuardOf({n}, nameof({n}))", n))
            elif role == "handle":
                t = arg.cls["names"]["csharp"]
                decls.append(f"{t} {n}{default}")
                uses.append((f"{t}.GuardOf({n}, nameof({n}))", n))
            elif role == "handles":
                t = arg.cls["names"]["csharp"]
                decls.append(f"{'params ' if last else ''}{t}[] {n}")
                uses.append((f"Guard.UseAll(Proto.Guards({n}))", f"{n}List"))
                expr[arg.c] = f"{n}Ptrs"
                expr[arg.count] = f"{n}Ptrs.Length"
            elif role in ("dims", "ints"):
                t = "long" if role == "dims" else "int"
                decls.append(f"{'params ' if last else ''}{t}[] {n}")
                prelude.append(f"{n} = {n} ?? new {t}[0];")
                expr[arg.c] = n
                expr[arg.count] = f"{n}.Length"
            elif role == "bytes":
                decls.append(f"byte[] {n}")
                prelude.append(f"Blob.Required({n}, nameof({n}));")
                expr[arg.c] = n
                expr[arg.count] = f"(UIntPtr){n}.Length"
            elif role in ("path", "string"):
                decls.append(f"string {n}{default}")
                what = "the path" if role == "path" else (a.get("what") or f"the {arg.c.replace('_', ' ')}")
                value = n if arg.param["nullable"] else f"Blob.Required({n}, nameof({n}))"
                prelude.append(f"byte[] {n}Utf8 = Text.ToUtf8({value}, \"{what}\");")
                expr[arg.c] = f"{n}Utf8"
            elif role == "bool":
                decls.append(f"bool {n}{default}")
                expr[arg.c] = f"{n} ? 1 : 0"
            elif role == "flags":
                default = default or " = 0"  # no flags
                decls.append(f"{self.tm.type_name(arg.flags, 'cs')} {n}{default}")
                expr[arg.c] = f"(int){n}"
            elif role == "enum":
                decls.append(f"{self.tm.type_name(arg.base, 'cs')} {n}{default}")
                expr[arg.c] = n
            elif role == "optional_enum":
                t = self.tm.type_name(arg.base, "cs")
                default = default or " = null"
                decls.append(f"{t}? {n}{default}")
                expr[arg.c] = f"{n} ?? ({t})0"
            elif role == "scalar":
                c_type = CS_SCALARS[arg.base]
                t = a.get("type") or c_type
                decls.append(f"{t} {n}{default}")
                expr[arg.c] = f"(UIntPtr){n}" if arg.base == "size_t" else n
            elif role == "pointer":
                decls.append(f"IntPtr {n}")
                expr[arg.c] = n
            elif role == "tensor":
                # The owned wrapper hands its pointer over for the call (DlpackTensorBase.Use)
                # and gets it back unless the call succeeds (Took below).
                decls.append(f"{cs_dlpack_owner(arg.base)} {n}")
                uses.append((f"Blob.Required({n}, nameof({n}))", n))
            else:
                raise BindingError(f"{call.name}: C# has no form for a {role} argument")
            defaults[arg.c] = bool(default)
        # Optional parameters come last (C# requires it), params arrays after them.
        order = [i for i, a in enumerate(args) if not defaults.get(a.c)] + [i for i, a in enumerate(args) if defaults.get(a.c)]
        if params_last and order[-1] != len(args) - 1:
            order.remove(len(args) - 1)
            order.append(len(args) - 1)
        decls = [decls[i] for i in order]
        if call.receiver is not None:
            uses.insert(0, ("guard", "self"))
        return self.method(call, spec, owner, name, decls, prelude, uses, expr)

    def method(self, call, spec, owner, name, decls, prelude, uses, expr):
        roles = [r.role for r in call.results]
        property_ = bool(spec.get("property"))
        returns = spec.get("returns")
        lambda_needed = any(r in ("created", "text", "blob_bytes") for r in roles) or spec.get("result") == "list"
        # Each guarded handle is used as an IntPtr (Use converts); lambdas take copies.
        using_lines, locals_ = [], []
        claim = None  # the using variable of a DLPack tensor the call takes
        for i, (opener, var) in enumerate(uses):
            u = f"u{i}"
            if any(a.role == "tensor" and self.ident(a.c) == var for a in call.args):
                claim = u
            if opener == "guard":
                using_lines.append(f"using (var {u} = guard.Use())")
            else:
                using_lines.append(f"using (var {u} = {opener}.Use())" if not opener.startswith("Guard.UseAll")
                                   else f"using (var {u} = {opener})")
            if opener.startswith("Guard.UseAll"):
                if lambda_needed:
                    locals_.append(f"IntPtr[] {var[:-4]}Ptrs = {u}.Ptrs;")
                else:
                    for key, value in list(expr.items()):
                        expr[key] = value.replace(f"{var[:-4]}Ptrs", f"{u}.Ptrs")
            elif lambda_needed:
                locals_.append(f"IntPtr {self.local(var)} = {u};")
                self.bind(call, var, self.local(var), expr)
            else:
                self.bind(call, var, u, expr)
        body, t = [], "void"
        if roles == ["direct_text"]:
            c_args = ", ".join(expr[p["name"]] for p in call.fn["params"])
            t, body = "string", [f"return Text.FromUtf8(NativeMethods.{call.name}({c_args}));"]
        elif spec.get("result") == "list":
            count_fn = next(fn for fn in self.model["functions"] if fn["name"] == spec["count"])
            count_args = ", ".join("out n" if p["dir"] == "out" else expr[p["name"]] for p in count_fn["params"])
            item_expr = dict(expr)
            item_expr["index"] = "i"
            record = spec.get("record")
            if record:  # each item a record of the item call's out-values
                outs, convs, reads = [], [], []
                lists = spec.get("lists") or {}
                for r, field in zip(call.results, record_fields(record, call)):
                    v = self.ident(r.c[4:] if r.c.startswith("out_") else r.c)
                    ct, conv, _ = self.out_value(r, v, returns)
                    outs.append(f"    {ct} {v};")
                    item_expr[r.c] = f"out {v}"
                    if r.c in lists:  # a list field, counted by this out-value
                        list_name = self.ident(field["name"])
                        item = next(fn for fn in self.model["functions"] if fn["name"] == lists[r.c]["item"])
                        sub = dict(expr, index="j", **{k: "i" if a == "index" else str(a)
                                                      for k, a in lists[r.c].get("args", {}).items()})
                        sub_args = ", ".join("out text" if p["dir"] == "out" else sub[p["name"]] for p in item["params"])
                        reads += [f"    var {list_name} = new string[{v}];", f"    for (long j = 0; j < {v}; j++)", "    {",
                                  "        IntPtr text;", f"        CBlobException.Check(NativeMethods.{item['name']}({sub_args}));",
                                  f"        {list_name}[j] = Text.FromUtf8(text);", "    }"]
                        conv = list_name
                    convs.append(conv)
                item_args = ", ".join(item_expr[p["name"]] for p in call.fn["params"])
                t = f"IReadOnlyList<{record}>"
                inner = ["long n;", f"CBlobException.Check(NativeMethods.{count_fn['name']}({count_args}));",
                         f"var items = new {record}[n];", "for (long i = 0; i < n; i++)", "{"] + outs + [
                         f"    CBlobException.Check(NativeMethods.{call.name}({item_args}));"] + reads + [
                         f"    items[i] = new {record}({', '.join(convs)});", "}", "return items;"]
            else:
                item_args = ", ".join("out text" if p["dir"] == "out" else item_expr[p["name"]] for p in call.fn["params"])
                t = "IReadOnlyList<string>"
                inner = ["long n;", f"CBlobException.Check(NativeMethods.{count_fn['name']}({count_args}));",
                         "var texts = new string[n];", "for (long i = 0; i < n; i++)", "{", "    IntPtr text;",
                         f"    CBlobException.Check(NativeMethods.{call.name}({item_args}));",
                         "    texts[i] = Text.FromUtf8(text);", "}", "return texts;"]
            body = prelude + using_lines + ["{"] + ["    " + l for l in locals_ + inner] + ["}"]
        elif not roles or all(r in ("value", "string", "tensor") for r in roles) or roles == ["shape"]:
            decl_lines, conv = [], []
            if roles == ["shape"]:
                r = call.results[0]
                decl_lines += ["long[] dims = new long[Constants.MaxAxes];", "int n;"]
                expr[r.capacity], expr[r.c], expr[r.count] = "dims.Length", "dims", "out n"
                conv.append("dims")
                t = "long[]"
                after = ["Array.Resize(ref dims, n);"]
            else:
                after = []
                types = []
                for r in call.results:
                    v = "value" if len(call.results) == 1 else self.ident(r.c[4:])
                    ct, c_conv, rt = self.out_value(r, v, returns)
                    decl_lines.append(f"{ct} {v};")
                    expr[r.c] = f"out {v}"
                    conv.append(c_conv)
                    types.append(rt)
                if types:
                    t = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
                if spec.get("record"):  # the out-values, in order, are the record's fields
                    t, entry = spec["record"], record_entry(spec["record"])
                    record_fields(t, call)
                    if entry.get("kind") == "struct":
                        conv = ["new " + t + " { " + ", ".join(f"{self.tm.camel(f['name'], 'cs')} = {c}"
                                                             for f, c in zip(entry["fields"], conv)) + " }"]
                    else:
                        conv = [f"new {t}({', '.join(conv)})"]
            c_args = ", ".join(expr[p["name"]] for p in call.fn["params"])
            check = f"CBlobException.Check(NativeMethods.{call.name}({c_args}));"
            body = prelude + decl_lines
            if using_lines:
                body += using_lines + ["    " + check]
            else:
                body.append(check)
            body += after
            if conv:
                body.append(f"return {conv[0] if len(conv) == 1 else '(' + ', '.join(conv) + ')'};")
        elif roles == ["created"]:
            r = call.results[0]
            t = r.cls["names"]["csharp"]
            expr[r.c] = "out h"
            c_args = ", ".join(expr[p["name"]] for p in call.fn["params"])
            h = self.tm.handle_class(r.cls["handle"])
            native = f"NativeMethods.{call.name}({c_args})"
            if claim:
                native = f"{claim}.Took({native})"
            creator = f"return {t}.Created((out {h} h) => {native});"
            if spec.get("constructor"):  # the constructor's handle, made by a private helper
                creator = f"return {t}.CreatedHandle((out {h} h) => {native});"
                t = h
            body = prelude + (using_lines + ["{"] + ["    " + l for l in locals_ + [creator]] + ["}"]
                              if using_lines else [creator])
        elif roles in (["text"], ["blob_bytes"]):
            r = call.results[0]
            expr[r.c], expr[r.capacity], expr[r.count] = "buffer", "size", "out length"
            c_args = ", ".join(expr[p["name"]] for p in call.fn["params"])
            helper = "ReadText" if r.role == "text" else "ReadBytes"
            t = "string" if r.role == "text" else "byte[]"
            read = (f"return Text.{helper}((byte[] buffer, UIntPtr size, out UIntPtr length) =>\n"
                    f"    NativeMethods.{call.name}({c_args}));")
            read_lines = read.split("\n")
            body = prelude + (using_lines + ["{"] + ["    " + l for l in locals_ + read_lines] + ["}"]
                              if using_lines else read_lines)
        elif roles == ["array"]:
            r = call.results[0]
            expr[r.c], expr[r.capacity], expr[r.count] = "buffer", "room", "out count"
            c_args = ", ".join(expr[p["name"]] for p in call.fn["params"])
            t = returns or "long[]"
            read = [f"long[] values = Text.ReadInt64s((long[] buffer, long room, out long count) =>",
                    f"    NativeMethods.{call.name}({c_args}));"]
            read.append("return values;" if t == "long[]" else "return Array.ConvertAll(values, v => checked((int)v));")
            body = prelude + (using_lines + ["{"] + ["    " + l for l in locals_ + read] + ["}"] if using_lines else read)
        elif roles == ["created_list"]:
            # Proto.ReadVector guards the context and adopts every new blob.
            r = call.results[0]
            context = next(a for a in call.args if a.role == "context")
            expr[context.c], expr[r.capacity], expr[r.c], expr[r.count] = "c", "room", "handles", "out count"
            c_args = ", ".join(expr[p["name"]] for p in call.fn["params"])
            t = f"{r.cls['names']['csharp']}[]"
            body = prelude + [f"return Proto.ReadVector({self.ident(context.c)}, (IntPtr c, long room, IntPtr[] handles, out long count) =>",
                              f"    NativeMethods.{call.name}({c_args}));"]
        else:
            raise BindingError(f"{call.name}: C# has no form for results {roles}")
        doc = ["<summary>"] + [xml(l) for l in self.doc(call, spec)] + ["</summary>"]
        static = "static " if call.receiver is None else ""
        if property_:
            if decls:
                raise BindingError(f"{call.name}: a C# property takes no parameters")
            lines = [f"public {static}{t} {name}", "{", "    get", "    {"] + ["        " + l for l in body] + ["    }", "}"]
        elif spec.get("constructor"):
            if call.receiver is not None or roles != ["created"]:
                raise BindingError(f"{call.name}: a C# constructor is a static creator of its class")
            helper = f"{name}Handle"  # NewHandle
            args = ", ".join(d.split(" = ")[0].split()[-1] for d in decls)
            lines = [f"public {owner}({', '.join(decls)})", f"    : this({helper}({args}))", "{", "}", "",
                     f"static {t} {helper}({', '.join(d.split(' = ')[0].replace('params ', '') for d in decls)})", "{"] + [
                     "    " + l for l in body] + ["}"]
            return Method(call, "csharp", owner, name, doc, lines, static=True, kind="constructor")
        else:
            lines = [f"public {static}{t} {name}({', '.join(decls)})", "{"] + ["    " + l for l in body] + ["}"]
        return Method(call, "csharp", owner, name, doc, lines, static=call.receiver is None)

    @staticmethod
    def local(var):
        return "self" if var == "self" else var + "Ptr"

    def bind(self, call, var, value, expr):
        if var == "self":
            expr[call.receiver["name"]] = value
            return
        for arg in call.args:
            if self.ident(arg.c) == var or arg.c == var:
                expr[arg.c] = value
                return
        for arg in call.args:
            if arg.role in ("context", "handle"):
                expr.setdefault(arg.c, value)

    def out_value(self, r, v, returns):
        """(C# type of the out variable, the conversion to the result, the result type)."""
        if r.role == "tensor":
            owner = cs_dlpack_owner(r.base)
            return "IntPtr", f"new {owner}({v})", owner
        if r.role == "string":
            return "IntPtr", f"{v} == IntPtr.Zero ? null : Text.FromUtf8({v})", "string"
        if r.param["depth"] == 2:
            return "IntPtr", v, "IntPtr"
        enum = next((e for e in self.model["enums"] if e["name"] == r.base), None)
        if enum:
            t = self.tm.type_name(r.base, "cs")
            return t, v, t
        if r.as_bool:
            return "int", f"{v} != 0", "bool"
        t = CS_SCALARS[r.base]
        if returns and returns != t:
            return t, f"checked(({returns}){v})", returns
        return t, v, t


# ---- Python -----------------------------------------------------------------------------------------

PY_CTYPES = {"int32_t": "c_int32", "int64_t": "c_int64", "double": "c_double", "float": "c_float",
             "size_t": "c_size_t", "uint32_t": "c_uint32", "uint64_t": "c_uint64"}
PY_HINTS = {"int32_t": "int", "int64_t": "int", "double": "float", "float": "float", "size_t": "int",
            "uint32_t": "int", "uint64_t": "int"}
# Integers are checked against the C type's range before any call (_util.py): ctypes would pass
# 2**64 + 3 as 3.
PY_INT_CHECKS = {"int32_t": "int32_arg", "int64_t": "int64_arg", "size_t": "uint64_arg", "uint32_t": "uint32_arg",
                 "uint64_t": "uint64_arg"}
# How a path parameter is used, for the OSError subclass of a failed call (_errors.os_cause).
PY_PATH_MODES = {"output_path": "write", "output_folder": "folder", "any_file_path": "any"}


class PyEmitter(Emitter):
    lang = "python"

    def emit(self, call, spec):
        owner = call.cls["names"]["python"]
        name = self.method_name(spec, call)
        args = self.ordered(call, spec)
        plain, defaulted, keyword, prelude, expr = [], [], [], [], {}
        varargs = None
        self.io = None  # (path variable, mode) of the first path parameter
        for arg in args:
            a = self.arg_spec(arg, spec, call)
            n = a.get("name") or arg.c
            role = arg.role
            default = None
            if "default" in a:
                default = neutral_default(a["default"], "python", self.names, arg)
            hint = ""
            if role == "context":
                default = default or "None"
                hint = "Context | None"
                prelude.append(f"{n} = _context.context_or_default({n})")
                expr[arg.c] = f"{n}._h"
                a.setdefault("keyword", True)
            elif role == "handle":
                hint = arg.cls["names"]["python"]
                expr[arg.c] = f"{n}._h"
            elif role == "handles":
                hint = f"Sequence[{arg.cls['names']['python']}]"
                prelude.append(f"{n}_len, {n}_ptr = handle_array({n})")
                expr[arg.c], expr[arg.count] = f"{n}_ptr", f"{n}_len"
            elif role in ("dims", "ints"):
                hint = "Sequence[int]"
                array = "shape_array" if role == "dims" else "int32_array"
                value = f"one_or_many({n})" if a.get("varargs") == "unwrap" else n
                prelude.append(f"{n}_len, {n}_ptr = {array}({value})")
                expr[arg.c], expr[arg.count] = f"{n}_ptr", f"{n}_len"
                if a.get("varargs"):
                    varargs = f"*{n}: int"
                    continue
            elif role == "bytes":
                hint = "bytes"
                prelude.append(f"{n} = bytes({n})")
                expr[arg.c], expr[arg.count] = n, f"len({n})"
            elif role == "path":
                hint = "str | os.PathLike[str]"
                expr[arg.c] = f"path_bytes({n})"
                if self.io is None:
                    self.io = (n, PY_PATH_MODES.get(arg.param.get("check"), "read"))
            elif role == "string":
                hint = "str | None" if arg.param["nullable"] else "str"
                expr[arg.c] = f"text_bytes({n}, \"{n}\")"
            elif role == "bool":
                hint = "bool"
                expr[arg.c] = f"int(bool({n}))"
            elif role == "flags":
                hint = f"{self.tm.type_name(arg.flags, 'py')} | int"
                expr[arg.c] = f"int32_arg({n}, \"{n}\")"
                default = default or "0"
            elif role == "enum":
                hint = self.tm.type_name(arg.base, "py")
                # A dtype may be a DType or anything NumPy reads as one (np.float32, "int32").
                expr[arg.c] = f"dtype_code({n})" if arg.base == "cblob_dtype" else f"int32_arg({n}, \"{n}\")"
            elif role == "optional_enum":
                hint = f"{self.tm.type_name(arg.base, 'py')} | None"
                default = default or "None"
                convert = "dtype_code" if arg.base == "cblob_dtype" else "int32_arg"
                expr[arg.c] = f"0 if {n} is None else {convert}({n})"
            elif role == "scalar":
                hint = PY_HINTS[arg.base]
                check = PY_INT_CHECKS.get(arg.base)
                expr[arg.c] = f"{check}({n}, \"{n}\")" if check else n
            elif role == "pointer":
                hint = "int"
                expr[arg.c] = f"{n} or None"
            else:
                raise BindingError(f"{call.name}: Python has no form for a {role} argument")
            text = f"{n}: {hint}" if hint else n
            if default is not None:
                text += f" = {default}"
            if a.get("keyword"):
                keyword.append(text)
            elif default is not None:
                defaulted.append(text)
            else:
                plain.append(text)
        if varargs:
            params = plain + defaulted + [varargs] + keyword
        else:
            params = plain + defaulted + (["*"] + keyword if keyword else [])
        return self.method(call, spec, owner, name, params, prelude, expr)

    def method(self, call, spec, owner, name, params, prelude, expr):
        first_call = call.name  # what a failure of the first C call names
        roles = [r.role for r in call.results]
        returns = spec.get("returns")
        receiver = call.receiver is not None
        if receiver:
            expr[call.receiver["name"]] = "self._h"
        body, hint = list(prelude), "None"
        if roles == ["direct_text"]:
            body.append(f"return lib.{call.name}({self.args(call, expr)}).decode(\"utf-8\", \"replace\")")
            hint = "str"
        elif spec.get("result") == "list":
            count_fn = next(fn for fn in self.model["functions"] if fn["name"] == spec["count"])
            first_call = count_fn["name"]
            count_args = ", ".join("count" if p["dir"] == "out" else expr[p["name"]] for p in count_fn["params"])
            item_expr = dict(expr)
            item_expr["index"] = "i"
            record = spec.get("record")
            if record:  # each item a record of the item call's out-values
                fields = record_fields(record, call)
                lists = spec.get("lists") or {}
                outs, convs, reads = [], [], []
                for r, field in zip(call.results, fields):
                    v = r.c[4:] if r.c.startswith("out_") else r.c
                    ctype, conv, _ = self.out_value(r, v, "optional" if field["type"].endswith("?") else returns)
                    outs.append((v, ctype))
                    item_expr[r.c] = v
                    if r.c in lists:  # a list field, counted by this out-value
                        item = next(fn for fn in self.model["functions"] if fn["name"] == lists[r.c]["item"])
                        sub = dict(expr, index="j", **{k: "i" if a == "index" else str(a)
                                                      for k, a in lists[r.c].get("args", {}).items()})
                        sub_args = ", ".join("text" if p["dir"] == "out" else sub[p["name"]] for p in item["params"])
                        if not reads:
                            outs.append(("text", "c_char_p"))
                        reads += [f"    {field['name']} = []", f"    for j in range({v}.value):",
                                  f"        check(lib.{item['name']}({sub_args}))",
                                  f"        {field['name']}.append((text.value or b\"\").decode(\"utf-8\", \"replace\"))"]
                        conv = field["name"]
                    convs.append(conv)
                item_args = ", ".join(item_expr[p["name"]] for p in call.fn["params"])
                body += ["count = c_int64()",
                         f"check(lib.{count_fn['name']}({count_args}))",
                         f"{', '.join(v for v, _ in outs)} = {', '.join(c + '()' for _, c in outs)}",
                         "items = []",
                         "for i in range(count.value):",
                         f"    check(lib.{call.name}({item_args}))"] + reads + [
                         f"    items.append({record}({', '.join(convs)}))",
                         "return items"]
                hint = f"list[{record}]"
            else:
                item_args = ", ".join("out" if p["dir"] == "out" else item_expr[p["name"]] for p in call.fn["params"])
                body += ["count, out = c_int64(), c_char_p()",
                         f"check(lib.{count_fn['name']}({count_args}))",
                         "items = []",
                         "for i in range(count.value):",
                         f"    check(lib.{call.name}({item_args}))",
                         "    items.append((out.value or b\"\").decode(\"utf-8\", \"replace\"))",
                         "return items"]
                hint = "list[str]"
        elif not roles:
            body.append(f"check(lib.{call.name}({self.args(call, expr)}){self.io_arg()})")
        elif all(r in ("value", "string") for r in roles):
            outs, convs, hints = [], [], []
            for r in call.results:
                v = "out" if len(call.results) == 1 else r.c[4:] if r.c.startswith("out_") else r.c
                ctype, conv, h = self.out_value(r, v, returns)
                outs.append(f"{v} = {ctype}()")
                expr[r.c] = v
                convs.append(conv)
                hints.append(h)
            body += outs
            body.append(f"check(lib.{call.name}({self.args(call, expr)}){self.io_arg()})")
            body.append("return " + ", ".join(convs))
            hint = hints[0] if len(hints) == 1 else f"tuple[{', '.join(hints)}]"
        elif roles == ["shape"]:
            r = call.results[0]
            expr[r.capacity], expr[r.c], expr[r.count] = "MAX_AXES", "dims", "num_axes"
            body += ["dims, num_axes = (c_int64 * MAX_AXES)(), c_int32()",
                     f"check(lib.{call.name}({self.args(call, expr)}))",
                     "return tuple(dims[:num_axes.value])"]
            hint = "tuple[int, ...]"
        elif roles == ["created"]:
            r = call.results[0]
            cls = returns or r.cls["names"]["python"]
            expr[r.c] = "out"
            context = "self._context" if receiver else next(
                (f"{a.c}" for a in call.args if a.role == "context"), "None")
            if not receiver and cls == owner:
                maker = "cls._created"
            else:
                maker = f"{python_module(cls)}.{cls}._created"
            body.append(f"return {maker}(lambda out: lib.{call.name}({self.args(call, expr)}), {context}{self.io_arg()})")
            hint = cls
        elif roles in (["text"], ["blob_bytes"]):
            r = call.results[0]
            helper = "read_text" if r.role == "text" else "read_bytes"
            fixed = [expr[p["name"]] for p in call.fn["params"] if p["name"] not in (r.c, r.capacity, r.count)]
            body.append(f"return {helper}(lib.{call.name}{''.join(', ' + a for a in fixed)})")
            hint = "str" if r.role == "text" else "bytes"
        elif roles == ["array"]:
            r = call.results[0]
            fixed = [expr[p["name"]] for p in call.fn["params"] if p["name"] not in (r.c, r.capacity, r.count)]
            body.append(f"return read_int64s(lib.{call.name}{''.join(', ' + a for a in fixed)})")
            hint = "list[int]"
        elif roles == ["created_list"]:
            r = call.results[0]
            cls = r.cls["names"]["python"]
            fixed = [expr[p["name"]] for p in call.fn["params"] if p["name"] not in (r.c, r.capacity, r.count)]
            context = next((a.c for a in call.args if a.role == "context"), "None")
            body.append(f"return read_created({python_module(cls)}.{cls}, {context}, lib.{call.name}{''.join(', ' + a for a in fixed)})")
            hint = f"list[{cls}]"
        else:
            raise BindingError(f"{call.name}: Python has no form for results {roles}")
        doc = self.doc(call, spec)
        static = call.receiver is None and call.cls["kind"] == "class"
        first = ["cls"] if static else (["self"] if receiver else [])
        signature = ", ".join(first + params)
        lines = []
        if static:
            lines.append("@classmethod")
        if spec.get("property"):
            lines.append("@property")
        if spec.get("setter"):
            lines.append(f"@{spec['setter']}.setter")
            name = spec["setter"]
        lines.append(f"def {name}({signature}) -> {hint}:")
        lines += [("    " + l) if l else "" for l in docstring(doc)]
        lines += ["    " + l for l in body]
        kind = "setter" if spec.get("setter") else "method"
        method = Method(call, "python", owner, name, doc, lines, static=static, kind=kind)
        method.first_call = first_call
        return method

    def args(self, call, expr):
        return ", ".join(expr[p["name"]] for p in call.fn["params"])

    def io_arg(self):
        """The path a failed call names, for the OSError subclass of its error (_errors.check)."""
        return f", io=({self.io[0]}, \"{self.io[1]}\")" if self.io else ""

    def out_value(self, r, v, returns):
        if r.role == "string":
            if returns == "optional":
                return "c_char_p", f"None if {v}.value is None else {v}.value.decode(\"utf-8\", \"replace\")", "str | None"
            return "c_char_p", f"({v}.value or b\"\").decode(\"utf-8\", \"replace\")", "str"
        if r.param["depth"] == 2:
            return "c_void_p", f"{v}.value or 0", "int"
        enum = next((e for e in self.model["enums"] if e["name"] == r.base), None)
        if enum:
            t = self.tm.type_name(r.base, "py")
            return "c_int32", f"{t}({v}.value)", t
        if r.as_bool:
            return "c_int32", f"bool({v}.value)", "bool"
        return PY_CTYPES[r.base], f"{v}.value", PY_HINTS[r.base]


def record_entry(name):
    """A record of codegen/bindings/records.yaml."""
    table = yaml.safe_load((BINDINGS / "records.yaml").read_text(encoding="utf-8"))
    record = next((r for r in table["records"] if r["name"] == name), None)
    if record is None:
        raise BindingError(f"record: {name} is no record of codegen/bindings/records.yaml")
    return record


def record_fields(name, call=None):
    """The fields of a record of codegen/bindings/records.yaml, in order; with call, checked to
    be as many as the call's out-values, which fill them."""
    fields = record_entry(name)["fields"]
    if call is not None and len(fields) != len(call.results):
        raise BindingError(f"{call.name}: record {name} has {len(fields)} fields, the call {len(call.results)} out-values")
    return fields


def docstring(lines):
    lines = [l.replace("\\", "\\\\").rstrip() for l in lines]
    if len(lines) == 1:
        return [f'"""{lines[0]}"""']
    return [f'"""{lines[0]}'] + lines[1:] + ['"""']


# ---- the whole model --------------------------------------------------------------------------------

EMITTERS = {"rust": RustEmitter, "go": GoEmitter, "csharp": CsEmitter, "python": PyEmitter}


def display_name(lang, cls, method, static):
    owner = cls["names"][lang]
    if lang == "rust":
        return f"`{owner}::{method}`" if owner else f"`{method}`"
    if cls["kind"] == "module" and lang in ("go", "python"):
        return method
    return f"{owner}.{method}" if owner else method


def annotate(model):
    """Adds model["safe"]: per language, the generated methods grouped by owner (see the module
    doc), and model["bindings"]: every function's block (or None) for the coverage report."""
    tm = ffi.TypeMap(model)
    names = Names(model)
    classes = load_classes()
    blocks = load_blocks(model)
    emitters = {lang: cls(model, tm, names, classes) for lang, cls in EMITTERS.items()}
    functions = {fn["name"]: fn for fn in model["functions"]}
    jobs = []
    for fn in model["functions"]:
        block = blocks.get(fn["name"])
        if block is None or block.get("hand") or block.get("excluded") or block.get("lifecycle"):
            continue
        key = block.get("class")
        if key not in classes:
            raise BindingError(f"{block['file']}: {fn['name']}: class {key!r} is no row of classes.yaml")
        cls = classes[key]
        for lang in LANGUAGES:
            spec = merged(block, block.get(lang))
            if spec.get("hand") or spec.get("excluded") or generated_elsewhere(spec, lang):
                continue
            jobs.append((fn, block, cls, lang, spec))
    # Names first, so that every method's documentation can name the others; a hand-written
    # method whose block gives its class and name is named too.
    for fn in model["functions"]:
        block = blocks.get(fn["name"]) or {}
        for lang in LANGUAGES:
            spec = merged(block, block.get(lang))
            if (spec.get("hand") or generated_elsewhere(spec, lang)) and spec.get("class") in classes:
                cls = classes[spec["class"]]
                method = spec.get("name") or default_name(fn, cls)
                if lang in ("go", "csharp") and not re.match(r"^[A-Z]", method):
                    method = tm.camel(method, "go" if lang == "go" else "cs")
                names.functions[lang][fn["name"]] = display_name(lang, cls, method, False)
    calls = {}
    for fn, block, cls, lang, spec in jobs:
        call = calls.get(fn["name"]) or Call(fn, block, cls, classes, model)
        calls[fn["name"]] = call
        method = emitters[lang].method_name(spec, call)
        if lang == "python" and spec.get("setter"):
            method = spec["setter"]
        names.functions[lang][fn["name"]] = display_name(lang, cls, method, call.static)
        if spec.get("count"):
            names.functions[lang][spec["count"]] = names.functions[lang][fn["name"]]
    safe = {lang: {"classes": {}, "modules": {}} for lang in LANGUAGES}
    for fn, block, cls, lang, spec in jobs:
        try:
            method = emitters[lang].emit(calls[fn["name"]], spec)
        except BindingError as e:
            raise BindingError(f"{block['file']}: {e}") from e
        group = "modules" if cls["kind"] == "module" else "classes"
        owner = cls["names"][lang] if group == "classes" else cls["key"]
        entry = safe[lang][group].setdefault(owner, {"name": cls["names"][lang], "key": cls["key"], "methods": []})
        entry["methods"].append(method)
    for cls in classes.values():
        for lang in cls.get("lifecycle", []):
            entry = safe[lang]["classes"].setdefault(cls["names"][lang], {"name": cls["names"][lang], "key": cls["key"],
                                                                          "methods": []})
            entry["methods"] = lifecycle_methods(lang, cls, model, tm, names) + entry["methods"]
    for lang in LANGUAGES:
        for group in safe[lang].values():
            for entry in group.values():
                # A setter follows its property's getter (Python's @x.setter needs x defined);
                # trait impls (Rust's Drop) go outside the type's impl block.
                entry["traits"] = [m for m in entry["methods"] if m.kind == "trait"]
                entry["methods"] = [m for m in entry["methods"] if m.kind != "trait"]
                entry["methods"].sort(key=lambda m: m.kind == "setter")
                # ... and right after it: a type checker reads `@x.setter` only there.
                for setter in [m for m in entry["methods"] if m.kind == "setter"]:
                    getter = next((m for m in entry["methods"] if m.name == setter.name and m.kind != "setter"), None)
                    if getter is not None:
                        entry["methods"].remove(setter)
                        entry["methods"].insert(entry["methods"].index(getter) + 1, setter)
    safe["python"]["layer_members"] = layer_members(jobs, safe)
    safe["go"]["text"] = "\n".join(line for group in ("classes", "modules") for entry in safe["go"][group].values()
                                    for m in entry["methods"] for line in m.lines)
    model["safe"] = safe
    model["safe_names"] = names  # for codegen/safe_dlpack.py's documentation
    annotate_tests(model)
    model["bindings"] = {name: blocks.get(name) for name in functions}
    missing = [fn["name"] for fn in model["functions"] if fn["name"] not in blocks]
    model["bindings_missing"] = missing


def layer_members(jobs, safe):
    """Python's members of a Layer that call a model's method with the layer's index (the
    blocks' `layer_member`): the lines of each, for the _LayerMethods table."""
    methods = {m.function: m for entry in safe["python"]["classes"].values() for m in entry["methods"]}
    members = []
    for fn, block, cls, lang, spec in jobs:
        if lang != "python" or not spec.get("layer_member"):
            continue
        m = methods[fn["name"]]
        head = next(l for l in m.lines if l.startswith("def "))
        found = re.match(r"def (\w+)\(self, layer: int(?:, (.*))?\) -> (.+):$", head)
        if not found:
            raise BindingError(f"{fn['name']}: layer_member needs a method whose first parameter is the layer, not {head!r}")
        name, rest, hint = found.groups()
        text = " ".join(line.strip() for line in m.doc if line.strip())
        first = re.match(r"(.*?\.)(?:\s|$)", text)  # the model method's first sentence
        doc = textwrap.wrap(first.group(1) if first else text, 96)
        args = ", ".join(["index"] + [p.split(":")[0].strip() for p in split_params(rest or "")])
        signature = f"(self, {rest})" if rest else "(self)"
        members.append(([] if rest else ["@property"]) + [f"def {name}{signature} -> {hint}:"] +
                       ["    " + line for line in docstring(doc)] +
                       ["    model, index = self._structure()", f"    return model.{name}({args})"])
    return members


# ---- a handle type's lifetime --------------------------------------------------------------------------
#
# What every owned handle type has in a language, whatever its methods: taking ownership of a new
# handle, giving it up once (the destroy function), and the checks each call makes. classes.yaml's
# `lifecycle` lists the languages whose code for a class is generated; the type itself (its fields
# and documentation) stays with the hand-written part, since what it holds besides the handle is
# judgement (a Rust blob's view counters, a Go blob's open mappings).


def lifecycle_methods(lang, cls, model, tm, names):
    handle = cls["handle"]
    destroy = f"{handle}_destroy"
    fn = next(f for f in model["functions"] if f["name"] == destroy)
    t = cls["names"][lang]
    doc = names.translate(doc_text(fn), lang)

    class Call:  # what Method needs to know of the function it wraps
        name = destroy
    if lang == "rust":
        lines = ["/// Runs a call that makes a new handle into `out` and takes ownership of it.",
                 f"pub(crate) fn created(call: impl FnOnce(*mut *mut sys::{handle}) -> sys::cblob_status) -> Result<{t}> {{",
                 "    let mut raw = ptr::null_mut();",
                 "    check(call(&mut raw))?;",
                 f"    let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::Internal, \"a NULL {handle} handle\"))?;",
                 f"    Ok({t} {{ raw{', ' + cls['rust_fields'] if cls.get('rust_fields') else ''} }})",
                 "}",
                 "",
                 "/// The raw handle, for calls through [`crate::sys`]; it stays owned by `self`.",
                 "#[inline]",
                 f"pub fn as_ptr(&self) -> *mut sys::{handle} {{",
                 "    self.raw.as_ptr()",
                 "}"]
        drop = [f"impl Drop for {t} {{"] + [f"    /// {l}" if l else "    ///" for l in doc.split("\n")] + [
                "    fn drop(&mut self) {",
                f"        unsafe {{ sys::{destroy}(self.raw.as_ptr()) }}",
                "    }",
                "}"]
        return [Method(Call, lang, t, "created", [], lines, kind="lifecycle"),
                Method(Call, lang, t, "drop", [], drop, kind="trait")]
    if lang == "go":
        recv = GO_RECEIVERS[cls["key"]]
        lower = t[0].lower() + t[1:]
        raw = tm.go_func(destroy)
        lines = [f"// new{t} wraps a handle the caller owns; a finalizer drops it if it is never closed.",
                 f"func new{t}(ptr *C.{handle}) *{t} {{",
                 f"\t{recv} := &{t}{{ptr: ptr}}",
                 f"\truntime.SetFinalizer({recv}, (*{t}).release)",
                 f"\treturn {recv}",
                 "}",
                 "",
                 f"// {lower}Created wraps the handle a creating call returned, or passes its error on.",
                 f"func {lower}Created(ptr *C.{handle}, err error) (*{t}, error) {{",
                 "\tif err != nil {",
                 "\t\treturn nil, err",
                 "\t}",
                 f"\treturn new{t}(ptr), nil",
                 "}",
                 ""]
        if cls.get("close", "generated") == "generated":
            lines += [f"// Close {doc[0].lower()}{doc[1:]}".replace("\n", "\n// "),
                      "// Calling Close again does nothing; the finalizer calls it, late, for one never closed.",
                      f"func ({recv} *{t}) Close() error {{",
                      f"\tif {recv} != nil {{",
                      f"\t\t{recv}.release()",
                      f"\t\truntime.SetFinalizer({recv}, nil)",
                      "\t}",
                      "\treturn nil",
                      "}",
                      ""]
        if cls.get("lent_by"):
            lines += [f"// release drops the hold once (Close, or the finalizer): a {t} lent by a {cls['lent_by']} ends the",
                      f"// loan (the {cls['lent_by']} frees the handle), any other destroys the handle.",
                      f"func ({recv} *{t}) release() {{",
                      f"\tif {recv}.ptr != nil {{",
                      f"\t\tif {recv}.lender != nil {{",
                      f"\t\t\t{recv}.lender.endLoan()",
                      f"\t\t\t{recv}.lender = nil",
                      "\t\t} else {",
                      f"\t\t\t{raw}({recv}.ptr)",
                      "\t\t}",
                      f"\t\t{recv}.ptr = nil",
                      "\t}",
                      "}",
                      ""]
        else:
            lines += [f"// release drops the hold once (Close, or the finalizer).",
                      f"func ({recv} *{t}) release() {{",
                      f"\tif {recv}.ptr != nil {{",
                      f"\t\t{raw}({recv}.ptr)",
                      f"\t\t{recv}.ptr = nil",
                      "\t}",
                      "}",
                      ""]
        lines += ["// handle returns the handle, or ErrClosed after Close.",
                  f"func ({recv} *{t}) handle() (*C.{handle}, error) {{",
                  f"\tif {recv} == nil || {recv}.ptr == nil {{",
                  "\t\treturn nil, ErrClosed",
                  "\t}",
                  f"\treturn {recv}.ptr, nil",
                  "}",
                  "",
                  "// do runs a call on the handle and keeps the object alive through it.",
                  f"func ({recv} *{t}) do(call func(p *C.{handle}) error) error {{",
                  f"\tp, err := {recv}.handle()",
                  "\tif err != nil {",
                  "\t\treturn err",
                  "\t}",
                  "\terr = call(p)",
                  f"\truntime.KeepAlive({recv})",
                  "\treturn err",
                  "}"]
        return [Method(Call, lang, t, "lifecycle", [], lines, kind="lifecycle")]
    if lang == "csharp":
        h = tm.handle_class(handle)
        arg = t[0].lower() + t[1:]
        lines = [f"readonly {h} handle;",
                 "readonly Guard guard;",
                 "",
                 f"{t}({h} handle)",
                 "{",
                 "    this.handle = handle;",
                 "    guard = new Guard(handle);",
                 "}",
                 "",
                 "/// <summary>The native handle, for interop; it stays owned by this object (do not dispose it).</summary>",
                 f"public {h} Handle {{ get {{ return handle; }} }}",
                 "",
                 "/// <summary>Whether <see cref=\"Dispose\"/> has run.</summary>",
                 "public bool IsDisposed { get { return guard.IsDisposed; } }",
                 ""]
        if cls.get("close", "generated") == "generated":
            lines += ["/// <summary>"] + [f"/// {xml(l)}" for l in doc.split("\n")] + [
                      "/// Calling it again does nothing. A call in flight on another thread finishes first: the",
                      "/// hold is dropped when it returns.",
                      "/// </summary>",
                      "public void Dispose()",
                      "{",
                      "    guard.Dispose();",
                      "}",
                      ""]
        lines += ["/// <summary>Starts a call with the handle (ObjectDisposedException after Dispose).</summary>",
                  "internal Use Use()",
                  "{",
                  "    return guard.Use();",
                  "}",
                  "",
                  "/// <summary>The guard of an argument (ArgumentNullException for null).</summary>",
                  f"internal static Guard GuardOf({t} {arg}, string name)",
                  "{",
                  f"    if ({arg} == null)",
                  "        throw new ArgumentNullException(name);",
                  f"    return {arg}.guard;",
                  "}",
                  "",
                  "/// <summary>A call that creates a handle into its out-parameter.</summary>",
                  f"internal delegate Status Creator(out {h} created);",
                  "",
                  "/// <summary>The handle a call creates, or the call's error.</summary>",
                  f"internal static {h} CreatedHandle(Creator create)",
                  "{",
                  f"    {h} created;",
                  "    Status status = create(out created);",
                  "    if (status != Status.Ok)",
                  "    {",
                  "        created.Dispose();",
                  "        throw CBlobException.Last(status);",
                  "    }",
                  "    return created;",
                  "}",
                  "",
                  "/// <summary>An object over the handle a call creates, or the call's error.</summary>",
                  f"internal static {t} Created(Creator create)",
                  "{",
                  f"    return new {t}(CreatedHandle(create));",
                  "}"]
        return [Method(Call, lang, t, "lifecycle", [], lines, kind="lifecycle")]
    raise BindingError(f"classes.yaml: {cls['key']}: no generated lifecycle for {lang}")


# ---- generated tests of the generated methods ------------------------------------------------------
#
# Each generated method is called once on an object whose handle is gone, with arguments of the
# right types: Go's must return ErrClosed (a closed handle, or a closed context for a creator), C#'s
# must throw ObjectDisposedException (a disposed object or context), Python's must raise
# InvalidArgumentError with Status.INVALID_ARGUMENT and the library's message naming the C
# function (the library refuses a NULL handle: the status mapping, through the real library).
# Rust has no such object (ownership makes a closed or NULL handle unrepresentable in safe code).


def split_params(text):
    depth, out, current = 0, [], ""
    for ch in text:
        if ch in "([<{":
            depth += 1
        elif ch in ")]>}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        out.append(current.strip())
    return out


GO_ZERO = {"string": '"x"', "bool": "false", "uintptr": "0", "float64": "0", "float32": "0", "int": "0", "int64": "0"}


def go_test_cases(safe):
    cases = []
    for group in ("classes", "modules"):
        for entry in safe["go"][group].values():
            for m in entry["methods"]:
                if m.kind != "method":
                    continue
                head = next(l for l in m.lines if l.startswith("func "))
                mm = re.match(r"func (?:\((\w+) \*(\w+)\) )?(\w+)\((.*)\) (.*) \{$", head)
                if not mm:
                    continue
                _, recv_type, name, params, results = mm.groups()
                args, has_ctx = [], False
                for p in split_params(params):
                    pname, ptype = p.split(" ", 1)
                    if ptype.startswith("..."):
                        continue
                    if ptype.startswith("*"):
                        args.append(f"&cblob.{ptype[1:]}{{}}")
                        has_ctx = has_ctx or ptype == "*Context"
                    elif ptype.startswith("[]"):
                        args.append("nil")
                    else:
                        args.append(GO_ZERO.get(ptype, f"cblob.{ptype}(0)" if ptype[0].isupper() else "0"))
                if recv_type:
                    call = f"(&cblob.{recv_type}{{}}).{name}({', '.join(args)})"
                elif has_ctx:
                    call = f"cblob.{name}({', '.join(args)})"
                else:
                    continue  # a free function of the library: no handle to close
                n_results = len(split_params(results.strip("()")))
                blanks = ", ".join(["_"] * (n_results - 1) + ["err"])
                cases.append({"name": f"{recv_type or 'Package'}.{name}", "call": call, "assign": blanks,
                              "function": m.function})
    return cases


CS_ZERO = {"string": '"x"', "bool": "false", "int": "0", "long": "0", "double": "0", "float": "0", "ulong": "0",
           "IntPtr": "IntPtr.Zero", "byte[]": "new byte[0]", "long[]": "new long[0]", "int[]": "new int[0]"}


def csharp_test_cases(safe):
    cases = []
    for group in ("classes", "modules"):
        for entry in safe["csharp"][group].values():
            owner = entry["name"]
            if owner not in ("Blob", "Context", "Model"):
                continue  # a Comm needs MPI or NCCL to exist; modules hold no handle
            for m in entry["methods"]:
                if m.kind != "method":
                    continue
                head = next(l for l in m.lines if l.startswith("public "))
                mm = re.match(r"public (static )?(\S+(?: \S+)?) (\w+)(?:\((.*)\))?$", head)
                if not mm:
                    continue
                static, rtype, name, params = mm.groups()
                args = []
                for p in split_params(params or ""):
                    if "=" in p:
                        break  # optional parameters keep their defaults
                    ptype, pname = p.rsplit(" ", 1)
                    if ptype.startswith("params "):
                        continue
                    if ptype in ("Blob", "Model", "Context"):
                        args.append(f"disposed{ptype}")
                    elif ptype.endswith("[]") and ptype not in CS_ZERO:
                        args.append(f"new {ptype[:-2]}[0]")
                    else:
                        args.append(CS_ZERO.get(ptype, f"default({ptype})"))
                if static:
                    if "disposedContext" not in args:
                        continue
                    call = f"{owner}.{name}({', '.join(args)})"
                elif params is None:
                    call = f"disposed{owner}.{name}"
                else:
                    call = f"disposed{owner}.{name}({', '.join(args)})"
                expression = f"GC.KeepAlive({call})" if rtype != "void" else call
                cases.append({"name": f"{owner}.{name}", "expression": expression, "function": m.function})
    return cases


PY_ZERO = {"int": "0", "float": "0.0", "bool": "False", "str": '"x"', "bytes": 'b""', "str | None": '"x"',
           "str | os.PathLike[str]": '"x"'}


def python_test_cases(safe, model, tm):
    enums = {tm.type_name(e["name"], "py"): tm.value_name(e, e["values"][0]["name"], "py") for e in model["enums"]}
    cases = []
    for group in ("classes", "modules"):
        for key, entry in safe["python"][group].items():
            owner = entry["name"]
            for m in entry["methods"]:
                if m.kind not in ("method", "setter"):
                    continue
                decorators = [l for l in m.lines if l.startswith("@")]
                head = next(l for l in m.lines if l.startswith("def "))
                mm = re.match(r"def (\w+)\((.*)\) -> .*:$", head)
                name, params = mm.groups()
                params = split_params(params)
                first = params[0] if params else ""
                args, kwargs = [], []
                keyword = False
                for p in params[1:] if first in ("self", "cls") else params:
                    if p == "*" or p.startswith("*"):
                        keyword = True
                        continue
                    pname, _, rest = p.partition(":")
                    hint, _, default = rest.partition("=")
                    pname, hint = pname.strip(), hint.strip()
                    if pname == "context":
                        kwargs.append("context=null(cblob.Context)")
                        continue
                    if default.strip():
                        continue
                    if hint in ("Blob", "Model", "Context", "Window"):
                        value = f"null(cblob.{hint})"
                    elif hint.startswith("Sequence"):
                        value = "[]"
                    elif hint in enums:
                        value = f"_raw.{hint}.{enums[hint]}"
                    else:
                        value = PY_ZERO.get(hint, "0")
                    (kwargs.append(f"{pname}={value}") if keyword else args.append(value))
                every = args + kwargs
                if "@property" in decorators:
                    call = f"null(cblob.{owner}).{name}"
                elif any(d.endswith(".setter") for d in decorators):
                    call = f"setattr(null(cblob.{owner}), \"{name}\", 0)"
                elif "@classmethod" in decorators:
                    if not any(k.startswith("context=") for k in kwargs):
                        continue
                    call = f"cblob.{owner}.{name}({', '.join(every)})"
                elif first == "self":
                    call = f"null(cblob.{owner}).{name}({', '.join(every)})"
                elif any(k.startswith("context=") for k in kwargs):
                    call = f"cblob.{name}({', '.join(every)})"
                else:
                    continue  # a free function without a handle
                cases.append({"name": f"{owner or 'cblob'}.{name}".lstrip("."), "call": call, "function": m.first_call})
    return cases


def annotate_tests(model):
    tm = ffi.TypeMap(model)
    safe = model["safe"]
    model["safe_tests"] = {"go": go_test_cases(safe), "csharp": csharp_test_cases(safe),
                           "python": python_test_cases(safe, model, tm)}
