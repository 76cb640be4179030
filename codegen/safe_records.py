# SPDX-License-Identifier: BSD-2-Clause
"""Records in the Rust and Go safe layers: a call whose out-values make one value of a named type
(the GPU libraries' versions), or a list of such values read item by item (a layer's param specs).

generate.py calls annotate(model) after safe.annotate. A binding block says `record: <name>`, a
record of codegen/bindings/records.yaml (the one table of the records' types, fields and
documentation, which C# and Python read too; its header has the keys), with the block's keys
as codegen/safe.py's module doc gives them:

  class, name   the function's class (or module) and name (Go's in camel case, or `go: {name}`)
  result, count with result: list, the function that gives the number of items: the method
                returns a list, one item per index (the `index` parameter)
  lists         an out-value that counts a list field's items: {item: the function giving one
                string, args: its other parameters (`index`: the record's index; a number as it is)}
  also          more functions of the same inputs whose out-values are the next fields, called
                in turn (Go: a layer's name, type and blob count)
  summary       said before the header's documentation (for a list, which the header describes
                item by item; with `also`, instead of it)

The out-values fill the record's fields in order. The type, with its fields' documentation, and
the function, with the header's documentation in the language's names, go to
bindings/rust/cblob/src/records_generated.rs (module `records`: types and functions of a module
in a `pub mod` of that name, re-exported by the crate's module) and
bindings/go/records_generated.go.
"""
import textwrap

import ffi
import safe

RUST_FIELD = {"int32_t": "i32", "int64_t": "i64", "float": "f32", "double": "f64", "uint32_t": "u32", "uint64_t": "u64"}
GO_FIELD = {"int32_t": "int", "int64_t": "int64", "float": "float32", "double": "float64", "uint32_t": "uint32",
            "uint64_t": "uint64"}


# records.yaml's types of a field an out-value of the C type may fill (a count, int64_t, may be an
# int32 field: C#'s Layer.BlobCount).
RECORD_TYPES = {"int32_t": ("int32",), "int64_t": ("int32",), "float": ("float32",)}


class RecordError(Exception):
    pass


def wrap(text, width):
    return textwrap.fill(" ".join(text.split()), width).split("\n")


class Record:
    """One record function, read off its parameters and its block."""

    def __init__(self, fn, block, spec, model, classes, tm, lang):
        self.fn = fn
        self.spec = spec
        entry = safe.record_entry(spec["record"])
        if lang not in entry.get("languages", []):
            raise RecordError(f"{fn['name']}: record: {entry['name']} of codegen/bindings/records.yaml does not list {lang}")
        # records.yaml's entry, as this module reads it: the type's name per language, its doc
        # lower case without the closing period (Rust writes it as a sentence, Go after "<Type> <verb>").
        doc = " ".join(entry["doc"].split()).rstrip(".")
        self.record = {"type": {"rust": entry.get("rust", entry["name"]), "go": entry.get("go", entry["name"])},
                       "doc": doc[0].lower() + doc[1:], "verb": entry.get("verb", "is"), "derive": entry.get("derive")}
        key = spec.get("class")
        if key not in classes:
            raise RecordError(f"{fn['name']}: record: class {key!r} is no row of classes.yaml")
        self.cls = classes[key]
        self.count = next((f for f in model["functions"] if f["name"] == spec.get("count")), None)
        if spec.get("count") and self.count is None:
            raise RecordError(f"{fn['name']}: record: count names no function")
        functions = {f["name"]: f for f in model["functions"]}
        self.outs = [p for p in fn["params"] if p["dir"] == "out"]
        self.also = []
        for other in spec.get("also") or []:
            if other not in functions:
                raise RecordError(f"{fn['name']}: record: also names {other}, no function")
            other = functions[other]
            outs = [p for p in other["params"] if p["dir"] == "out"]
            ins = [p["name"] for p in other["params"] if p["dir"] == "in"]
            if ins != [p["name"] for p in fn["params"] if p["dir"] == "in"]:
                raise RecordError(f"{fn['name']}: record: {other['name']} must take the same inputs")
            self.also.append((other, outs))
            self.outs += outs
        if len(self.outs) != len(entry["fields"]):
            raise RecordError(f"{fn['name']}: record: {entry['name']} has {len(entry['fields'])} fields, "
                              f"the calls {len(self.outs)} out-values ({', '.join(p['name'] for p in self.outs)})")
        lists = spec.get("lists") or {}
        unknown = set(lists) - {p["name"] for p in self.outs}
        if unknown:
            raise RecordError(f"{fn['name']}: record: lists names {', '.join(sorted(unknown))}, no out-values")
        fields = {}
        for p, field in zip(self.outs, entry["fields"]):
            fields[p["name"]] = dict(field, optional=field["type"] == "str?")
            if p["name"] in lists:
                fields[p["name"]].update(list=lists[p["name"]]["item"], args=lists[p["name"]].get("args") or {})
        for p in self.outs:
            is_text = p["depth"] == 2 and p["base"] == "char"
            if not is_text and (p["depth"] != 1 or (p["base"] not in RUST_FIELD and p["base"] not in tm.enums)):
                raise RecordError(f"{fn['name']}: record: no field form for {p['name']} ({p['type']})")
            if p["base"] in tm.enums and "unknown" not in fields[p["name"]]:
                raise RecordError(f"{fn['name']}: record: the enum field {p['name']} needs `unknown`")
        self.fields = []
        for p in self.outs:
            f = dict(fields[p["name"]], c=p["name"], base=p["base"], text=p["depth"] == 2,
                     enum=p["base"] in tm.enums)
            if (f["type"] == "[str]") != bool(f.get("list")):
                raise RecordError(f"{fn['name']}: record: {p['name']} fills {f['name']} ({f['type']}): "
                                  "a list of strings is a count with `lists`, and only that")
            expected = ("str", "str?") if f["text"] else RECORD_TYPES.get(p["base"], ()) if not f["enum"] else None
            if not f.get("list") and expected is not None and f["type"] not in expected:
                raise RecordError(f"{fn['name']}: record: {p['name']} ({p['type']}) cannot fill "
                                  f"{f['name']}, a {f['type']} in codegen/bindings/records.yaml")
            go = f.get("go") or {}
            f["go"] = go if isinstance(go, dict) else {"name": go}
            if f.get("list"):
                if f["list"] not in functions:
                    raise RecordError(f"{fn['name']}: record: {p['name']}'s list names no function")
                f["list"] = functions[f["list"]]
            self.fields.append(f)
        self.ins = [p for p in fn["params"] if p["dir"] == "in"]
        self.receiver = next((p for p in self.ins if self.cls["kind"] == "class" and p["base"] == self.cls["handle"]), None)
        for p in self.ins:
            if p is not self.receiver and not (p["depth"] == 0 and (p["base"] == "int64_t" or p["base"] in tm.enums)):
                raise RecordError(f"{fn['name']}: record: no form for the parameter {p['name']} ({p['type']})")
        self.tm = tm

    def name(self, lang):
        base = self.spec.get("name") or safe.default_name(self.fn, self.cls)
        return base if lang == "rust" else (base if base[:1].isupper() else self.tm.camel(base, "go"))

    def doc_fn(self):
        fn = dict(self.fn)
        if self.also:
            # Several calls' worth: the summary says what the record holds, its fields the rest.
            fn["doc"] = self.spec["summary"].strip()
        elif self.spec.get("summary"):
            fn["doc"] = f"{self.spec['summary'].strip()}\n\n{self.fn['doc'].strip()}"
        return fn


def in_args(r, lang, emitter):
    """(declarations, {C name: expression}) of the function's inputs; the list's index is `i`."""
    decls, expr = [], {}
    for p in r.ins:
        n = emitter.ident(p["name"])
        if p is r.receiver:
            expr[p["name"]] = "self.as_ptr()" if lang == "rust" else "p"
        elif p["name"] == "index" and r.count:
            expr[p["name"]] = "i"
        elif p["base"] in r.tm.enums:
            decls.append(f"{n} {r.tm.type_name(p['base'], 'go')}" if lang == "go" else f"{n}: {r.tm.type_name(p['base'], 'rust')}")
            expr[p["name"]] = f"{n}.raw()" if lang == "rust" else f"C.{p['base']}({n})"
        elif lang == "rust":
            ptype = r.cls["params"].get(p["name"], {}).get("rust", "i64")
            decls.append(f"{n}: {ptype}")
            expr[p["name"]] = n if ptype == "i64" else f"{n} as i64"
        else:
            decls.append(f"{n} int")
            expr[p["name"]] = f"C.int64_t({n})"
    return decls, expr


def list_args(r, f, expr, lang, item):
    """The arguments of a list field's function: the record function's own inputs by name, the
    record's index where `args` says `index`, `args`' constants, `j` as its index."""
    out = []
    for p in f["list"]["params"]:
        if p["dir"] == "out":
            out.append("&mut value" if lang == "rust" else None)
        elif p["name"] == "index":
            out.append("j")
        elif f["args"].get(p["name"]) == "index":
            out.append(item)  # the record's index under the list function's name (`rule`)
        elif p["name"] in f["args"]:
            out.append(str(int(f["args"][p["name"]])))
        elif p["name"] in expr and p["name"] != "index":
            out.append(expr[p["name"]])
        else:
            raise RecordError(f"{r.fn['name']}: record: cannot pass {f['list']['name']}'s {p['name']}")
    return ", ".join(a for a in out if a is not None)


def rust_record(r, emitter):
    if r.also:
        raise RecordError(f"{r.fn['name']}: record: Rust has no form for `also` yet")
    t = r.record["type"]["rust"]
    owner = r.cls["names"]["rust"] if r.cls["kind"] == "class" else None
    decls, expr = in_args(r, "rust", emitter)
    fields, inits, values, names = [], [], [], []
    copy = eq = True
    for f in r.fields:
        v = f["name"]
        if f.get("list"):
            ftype = "Vec<String>"
            args = list_args(r, f, expr, "rust", "i")
            value = "\n".join([f"(0..{v})",
                               "    .map(|j| {",
                               "        let mut value = ptr::null();",
                               f"        check(unsafe {{ sys::{f['list']['name']}({args}) }})?;",
                               "        Ok(unsafe { text(value) })",
                               "    })",
                               "    .collect::<Result<_>>()?"])
            inits.append("0")
            copy = False
        elif f["text"]:
            ftype = "Option<String>" if f.get("optional") else "String"
            value = f"(!{v}.is_null()).then(|| unsafe {{ text({v}) }})" if f.get("optional") else f"unsafe {{ text({v}) }}"
            inits.append("ptr::null()")
            copy = False
        elif f["enum"]:
            ftype = r.tm.type_name(f["base"], "rust")
            fallback = emitter.names.values["rust"][f["unknown"]][1]
            value = f"{ftype}::from_raw({v}).unwrap_or({ftype}::{fallback})"
            inits.append("0")
        else:
            ftype = RUST_FIELD[f["base"]]
            value = v
            inits.append("0.0" if ftype.startswith("f") else "0")
            eq = eq and not ftype.startswith("f")
        fields += [f"    /// {line}" for line in wrap(emitter.translate(f["doc"]), 92)] + [f"    pub {v}: {ftype},"]
        values.append(v if value == v else f"{v}: {value}")
        names.append(v)
        expr[f["c"]] = f"&mut {v}"
    derive = r.record.get("derive") or (["Debug", "Clone"] + (["Copy"] if copy else []) + ["PartialEq"] + (["Eq"] if eq else []))
    doc = r.record["doc"]
    type_lines = [f"/// {line}" for line in wrap(doc[0].upper() + doc[1:] + ".", 92 if owner is None else 96)]
    type_lines += [f"#[derive({', '.join(derive)})]", f"pub struct {t} {{"] + fields + ["}"]
    args = ", ".join(expr[p["name"]] for p in r.fn["params"])
    declare = (f"let ({', '.join('mut ' + n for n in names)}) = ({', '.join(inits)});" if len(names) > 1
               else f"let mut {names[0]} = {inits[0]};")
    if len(values) > 3 or any(f.get("list") for f in r.fields):
        result = [f"Ok({t} {{"] + [f"    {line}" for v in values for line in f"{v},".split("\n")] + ["})"]
    else:
        result = [f"Ok({t} {{ {', '.join(values)} }})"]
    item = [declare, f"check(unsafe {{ sys::{r.fn['name']}({args}) }})?;"] + result
    name = r.name("rust")
    self_decl = ["&self"] if r.receiver is not None else []
    if r.count:
        count_expr = {p["name"]: ("&mut n" if p["dir"] == "out" else expr[p["name"]]) for p in r.count["params"]}
        count_args = ", ".join(count_expr[p["name"]] for p in r.count["params"])
        body = ["let mut n = 0i64;",
                f"check(unsafe {{ sys::{r.count['name']}({count_args}) }})?;",
                "(0..n)",
                "    .map(|i| {"] + [f"        {line}" for line in item] + ["    })", "    .collect()"]
        ret = f"Result<Vec<{t}>>"
    else:
        body, ret = item, f"Result<{t}>"
    lines = [f"pub fn {name}({', '.join(self_decl + decls)}) -> {ret} {{"] + [f"    {line}" for line in body] + ["}"]

    class Call:
        fn = r.doc_fn()
    doc = emitter.doc(Call, {})
    return {"owner": owner, "module": None if owner else r.cls["key"], "type": type_lines,
            "doc": doc, "lines": lines}


def go_record(r, emitter):
    t = r.record["type"]["go"]
    decls, expr = in_args(r, "go", emitter)
    fields, values, targets, lists = [], [], [], []
    for f in r.fields:
        gname = f["go"].get("name") or r.tm.camel(f["name"], "go")
        v = emitter.ident(f["name"])
        if f.get("list"):
            count = emitter.ident("num_" + f["name"])
            ftype, value = "[]string", v
            args = list_args(r, f, expr, "go", "i")
            lists += [f"var {v} []string",
                      f"for j := C.int64_t(0); e == nil && j < {count}; j++ {{",
                      "\tvar text *C.char",
                      f"\tif text, e = {f['list']['go']['func']}({args}); e == nil {{",
                      f"\t\t{v} = append({v}, goString(text))",
                      "\t}",
                      "}"]
            targets.append(count)
        elif f["text"]:
            ftype, value = "string", f"goString({v})"
            targets.append(v)
        elif f["enum"]:
            ftype = r.tm.type_name(f["base"], "go")
            value = f"{ftype}({v})"
            targets.append(v)
        else:
            ftype = f["go"].get("type") or GO_FIELD[f["base"]]
            value = f"{ftype}({v})"
            targets.append(v)
        fields.append((gname, ftype, emitter.translate(f["doc"])))
        values.append(f"{gname}: {value}")
    type_lines = [f"// {line}" for line in wrap(f"{t} {r.record.get('verb', 'is')} {r.record['doc']}.", 96)]
    type_lines.append(f"type {t} struct {{")
    for g, ftype, doc in fields:
        type_lines += [f"\t// {line}" for line in wrap(doc, 92)] + [f"\t{g} {ftype}"]  # gofmt: a comment ends an alignment run
    type_lines.append("}")
    args = ", ".join(expr[p["name"]] for p in r.ins)
    name = r.name("go")
    raw = r.fn["go"]["func"]
    literal = f"{t}{{{', '.join(values)}}}"
    if r.count:
        recv = safe.GO_RECEIVERS[r.cls["key"]]
        count_args = ", ".join(expr[p["name"]] for p in r.count["params"] if p["dir"] == "in")
        body = [f"var out []{t}",
                f"err := {recv}.do(func(p *C.{r.cls['handle']}) error {{",
                f"\tn, err := {r.count['go']['func']}({count_args})",
                "\tfor i := C.int64_t(0); err == nil && i < n; i++ {",
                f"\t\t{', '.join(targets)}, e := {raw}({args})"] + [f"\t\t{line}" for line in lists] + [
                f"\t\tout, err = append(out, {literal}), e",
                "\t}",
                "\treturn err",
                "})",
                "return out, err"]
        head = f"func ({recv} *{r.cls['names']['go']}) {name}({', '.join(decls)}) ([]{t}, error) {{"
    elif r.receiver is None and not lists and not r.also:
        body = [f"{', '.join(targets)}, err := {raw}({args})", f"return {literal}, err"]
        head = f"func {name}({', '.join(decls)}) ({t}, error) {{"
    elif r.receiver is not None and not lists:
        recv = safe.GO_RECEIVERS[r.cls["key"]]
        calls = [(r.fn, [p for p in r.fn["params"] if p["dir"] == "out"])] + r.also
        body = [f"var out {t}", f"err := {recv}.do(func(p *C.{r.cls['handle']}) error {{"]
        for k, (fn, outs) in enumerate(calls):
            names = ", ".join(emitter.ident(next(f["name"] for f in r.fields if f["c"] == o["name"])) for o in outs)
            body.append(f"\t{names}, err := {fn['go']['func']}({args})")
            if k < len(calls) - 1:
                body += ["\tif err != nil {", "\t\treturn err", "\t}"]
        body += [f"\tout = {literal}", "\treturn err", "})", "return out, err"]
        head = f"func ({recv} *{r.cls['names']['go']}) {name}({', '.join(decls)}) ({t}, error) {{"
    else:
        raise RecordError(f"{r.fn['name']}: record: Go has no form for this record")
    lines = [head] + [f"\t{line}" for line in body] + ["}"]

    class Call:
        fn = r.doc_fn()
        name = r.fn["name"]
    return {"type": type_lines, "doc": emitter.go_doc(name, Call, {}), "lines": lines}


def annotate(model):
    """Adds model["records"]: {"rust": [...], "go": [...]}, each item a type and its function."""
    names = model["safe_names"]
    tm = ffi.TypeMap(model)
    classes = safe.load_classes()
    emitters = {"rust": safe.RustEmitter(model, tm, names, classes), "go": safe.GoEmitter(model, tm, names, classes)}
    functions = {fn["name"]: fn for fn in model["functions"]}
    out = {"rust": [], "go": []}
    for fname, block in model["bindings"].items():
        for lang in ("rust", "go"):
            spec = safe.merged(block or {}, (block or {}).get(lang))
            if not spec.get("record") or spec.get("excluded"):
                continue
            r = Record(functions[fname], block, spec, model, classes, tm, lang)
            out[lang].append(rust_record(r, emitters[lang]) if lang == "rust" else go_record(r, emitters[lang]))
    rust_modules = {}
    for item in out["rust"]:
        rust_modules.setdefault(item["module"], []).append(item)
    model["records"] = {"rust_root": rust_modules.pop(None, []), "rust_modules": rust_modules, "go": out["go"]}
