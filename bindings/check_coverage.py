#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""CTest bindings.coverage: every function of the public header is reachable from each
language's public safe layer, or is listed in the one exclusion table (codegen/bindings/
exclusions.yaml) with a reason.

"Reachable" is read off the safe layers' sources themselves, not off the generator's model, so
a hand-written layer that forgets a call, a template that drops one, or a generated file that
was not regenerated all fail it. Per language, the sources (hand-written and generated, without
tests and without the raw layer) are cut into named bodies: functions, methods, properties,
constructors, and (Python) class and module attributes. The public entry points are the bodies
a user of the package can name:

  Rust    `pub fn` / `pub unsafe fn` (not pub(crate)), and every fn of a trait impl (Drop, Deref)
  Go      exported functions and methods (capitalised) of package cblob, outside _test.go files
  C#      `public` members of public types, and `override`s (a SafeHandle's ReleaseHandle)
  Python  what `cblob.__all__` names: its functions, and every public or dunder member of its
          classes (methods, properties, class attributes)

From the entry points the check follows every name a body mentions (a call, a method, a path
segment, a function passed by name) to the bodies of that name, and collects the C functions
(cblob_*) the bodies reach: `sys::cblob_x` in Rust, `NativeMethods.cblob_x` in C#, `lib.cblob_x`
in Python and the raw layer's `cX` functions in Go (codegen/ffi.py's names). Following names
rather than types over-approximates (two methods of one name are one node), never misses a
call.

    check_coverage.py SOURCE_DIR               the check (exit 1 and a list when something fails)
    check_coverage.py SOURCE_DIR --table       also print the function x language table
    check_coverage.py SOURCE_DIR --header H --root R
        read the header H and the bindings under R instead (the test of this test renders a
        scratch description there)
"""
import argparse
import ast
import re
import sys
from pathlib import Path

import yaml

LANGUAGES = ("rust", "go", "csharp", "python")
EXCLUSIONS = "codegen/bindings/exclusions.yaml"
HEADER = "include/cblob/cblob.h"

# ---- sources ----------------------------------------------------------------------------------


def rust_sources(root):
    return sorted((root / "bindings/rust/cblob/src").glob("*.rs"))


def go_sources(root):
    return sorted(p for p in (root / "bindings/go").glob("*.go")
                  if not p.name.endswith("_test.go") and p.name != "raw_generated.go")


def csharp_sources(root):
    # Native.g.cs is the raw layer, but its SafeHandle classes (public, with ReleaseHandle) are
    # part of what a user holds.
    return sorted((root / "bindings/csharp/CBlob").glob("*.cs"))


def python_sources(root):
    return sorted(p for p in (root / "bindings/python/src/cblob").glob("*.py") if p.name != "_raw.py")


# ---- brace languages: a block tree ------------------------------------------------------------


def strip_code(text, raw_strings=False):
    """The text with comments and string contents blanked (same length, newlines kept), so braces
    in them do not count."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == '"' or (c == "`" and raw_strings):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" and c == '"' else 1
            blank(i + 1, j)
            i = j + 1
        elif c == "'" and i + 2 < n and (text[i + 2] == "'" or (text[i + 1] == "\\" and text[i + 3] == "'")):
            j = i + (3 if text[i + 2] == "'" else 4)
            blank(i + 1, j - 1)
            i = j
        else:
            i += 1
    return "".join(out)


def blocks(code):
    """Yields (header, body, depth path) for every {...} block: the header is the text since the
    previous ';', '{' or '}' at the same level (a ';' inside brackets, as in Rust's [u8; N], does
    not count); the path lists the enclosing blocks' headers."""
    stack = []  # (header, start of body)
    last_break = 0
    brackets = 0
    for i, c in enumerate(code):
        if c in "([":
            brackets += 1
        elif c in ")]":
            brackets = max(brackets - 1, 0)
        elif c == "{":
            header = code[last_break:i].strip()
            stack.append((header, i + 1, brackets))
            last_break = i + 1
            brackets = 0
        elif c == "}":
            if not stack:
                continue
            header, start, brackets = stack.pop()
            yield header, code[start:i], [h for h, _, _ in stack]
            last_break = i + 1
        elif c == ";" and brackets == 0:
            last_break = i + 1


RUST_FN = re.compile(r"\bfn\s+(\w+)")
GO_FUNC = re.compile(r"^func\s*(?:\([^)]*\)\s*)?(\w+)")


def last_statement(header):
    """A block's header less what precedes it on the same level (attributes, doc comments are
    already blank)."""
    return header.strip()


def rust_bodies(path):
    code = strip_code(path.read_text(encoding="utf-8"))
    bodies = []
    for header, body, outer in blocks(code):
        m = RUST_FN.search(header)
        if not m or "{" in header:
            continue
        name = m.group(1)
        trait_impl = any(re.match(r"^(unsafe\s+)?impl\b.*\bfor\b", h) for h in outer[-1:])
        public = bool(re.search(r"(^|\s)pub\s+(unsafe\s+|const\s+|extern\s+\"C\"\s+)*fn\b", header)) or trait_impl
        bodies.append((name, header + "{" + body + "}", public))
    return bodies


def go_bodies(path):
    code = strip_code(path.read_text(encoding="utf-8"), raw_strings=True)
    # The cgo preamble is a comment (blanked); C functions it defines are not Go bodies.
    bodies = []
    for header, body, outer in blocks(code):
        if outer:
            continue
        # The header runs from the previous block; the declaration is its last func line.
        header = header[header.rfind("\nfunc") + 1:] if "\nfunc" in header else header
        m = GO_FUNC.match(header)
        if not m:
            continue
        name = m.group(1)
        bodies.append((name, header + "{" + body + "}", name[0].isupper()))
    return bodies


def csharp_member_name(header):
    """The member a block's header declares: the identifier before its parameter list (methods,
    constructors), or its last word (properties)."""
    paren = header.find("(")
    if paren < 0:
        words = re.findall(r"\w+", header)
        return words[-1] if words else None
    before = re.sub(r"<[^<>]*>\s*$", "", header[:paren].rstrip())  # Name<T>(
    words = re.findall(r"\w+", before)
    return words[-1] if words else None


def csharp_bodies(path):
    code = strip_code(path.read_text(encoding="utf-8"))
    bodies = []
    # A type's declaration names it ("class Blob"); "where T : struct" of a generic method does not.
    type_decl = re.compile(r"\b(class|struct|interface|enum|namespace)\s+[A-Za-z_]")
    for header, body, outer in blocks(code):
        header = " ".join(header.split())  # comments are blanked: one space each
        header = re.sub(r"^(\[[^\[\]]*\]\s*)+", "", header)  # attributes
        types = [h for h in outer if type_decl.search(h) and "namespace" not in h]
        if not types or type_decl.search(header):
            continue
        # A member is a block directly inside a type: methods, constructors, properties. An
        # accessor or a lambda inside a member belongs to the member's body.
        if not (outer and type_decl.search(outer[-1])):
            continue
        name = csharp_member_name(header)
        if not name or name in ("get", "set"):
            continue
        type_public = all(re.search(r"\bpublic\b", h) for h in types)
        member_public = bool(re.search(r"\b(public|override)\b", header)) or header.startswith("~")
        bodies.append((name, header + "{" + body + "}", type_public and member_public))
    # Expression-bodied members: "public long Count => ...;"
    for statement in re.split(r"[;{}]", code):
        head, arrow, _ = " ".join(statement.split()).partition("=>")
        if arrow and re.match(r"public\b", head):
            bodies.append((csharp_member_name(head), statement, True))
    return bodies


# ---- Python -----------------------------------------------------------------------------------


def python_bodies(root):
    """(name, source, public) for functions, methods and class/module attributes of the package,
    public as `cblob.__all__` makes them."""
    package = root / "bindings/python/src/cblob"
    exported = set()
    for name in ("__init__.py", "_safe.py"):
        # __init__'s list, plus the generated module's free functions (`+ _safe.__all__`).
        if not (package / name).exists():
            continue
        for node in ast.parse((package / name).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                lists = [n for n in ast.walk(node.value) if isinstance(n, ast.List)]
                exported |= {e.value for lst in lists for e in lst.elts if isinstance(e, ast.Constant)}
    # A class is public when __all__ names it or a public class derives from it (the generated
    # method tables, _BlobMethods).
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in python_sources(root)}
    bases = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [getattr(b, "id", None) for b in node.bases]
    public_classes, todo = set(), [c for c in bases if c in exported]
    while todo:
        c = todo.pop()
        if c not in public_classes:
            public_classes.add(c)
            todo += [b for b in bases.get(c, []) if b]
    bodies = []
    for path, tree in trees.items():
        text = path.read_text(encoding="utf-8")
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                public_class = node.name in public_classes
                # The class statement itself (bases, decorators) leads to its members.
                bodies.append((node.name, "", public_class))
                for item in node.body:
                    for name, source in python_named(item, text):
                        member_public = not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
                        bodies.append((name, source, public_class and member_public))
                        bodies.append((node.name, name + "(", public_class))  # class -> members
            else:
                for name, source in python_named(node, text):
                    bodies.append((name, source, name in exported))
    return bodies


def python_named(node, text):
    """(name, the identifiers its code uses) of a function or an assignment: names and
    attributes from the syntax tree, so docstrings and comments do not count."""
    def used(tree):
        return " ".join(n.id if isinstance(n, ast.Name) else n.attr
                        for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute)))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield node.name, used(node)
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Name):
                    yield t.id, used(node.value)
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        yield node.target.id, used(node.value)


# ---- reachability -----------------------------------------------------------------------------

NAME = re.compile(r"[A-Za-z_]\w*")


def reachable(bodies, raw_name):
    """The C functions reachable from the public bodies. raw_name maps an identifier to the C
    function it calls (or None)."""
    by_name = {}
    for name, source, _ in bodies:
        by_name.setdefault(name, []).append(source)
    seen, todo = set(), [(name, name) for name, _, public in bodies if public]
    found = {}
    while todo:
        name, entry = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for source in by_name.get(name, ()):
            for ident in set(NAME.findall(source)):
                for c in raw_name(ident):
                    found.setdefault(c, entry)
                if ident in by_name and ident not in seen:
                    todo.append((ident, entry))
    return found


def go_raw_names(root):
    """The Go raw layer's function names (cBlobCreate) and the C functions each reaches: its own,
    and for a call that returns a status, those its C wrapper's error copy (cbgo_message, in the
    cgo preamble) calls: cblob_last_error_message and its parts."""
    text = (root / "bindings/go/raw_generated.go").read_text(encoding="utf-8")
    copy = re.search(r"(?ms)^static char \*cbgo_message\(void\) \{(.*?)^\}", text)
    error_calls = sorted(set(re.findall(r"\b(cblob_\w+)\(", copy.group(1)))) if copy else []
    names = {}
    for m in re.finditer(r"(?m)^func (c[A-Z]\w*)\(", text):
        body_start = m.end()
        call = re.search(r"C\.(cbgo_|cblob_)(\w+)\(", text[body_start:body_start + 4000])
        if call:
            reached = ["cblob_" + call.group(2)]
            if call.group(1) == "cbgo_":
                reached += error_calls
            names[m.group(1)] = reached
    return names


def language_reach(root, language):
    def c_name(ident):
        return [ident] if ident.startswith("cblob_") else []
    if language == "rust":
        return reachable([b for p in rust_sources(root) for b in rust_bodies(p)], c_name)
    if language == "go":
        raw = go_raw_names(root)
        return reachable([b for p in go_sources(root) for b in go_bodies(p)], lambda i: raw.get(i) or c_name(i))
    if language == "csharp":
        return reachable([b for p in csharp_sources(root) for b in csharp_bodies(p)], c_name)
    return reachable(python_bodies(root), c_name)


# ---- the check --------------------------------------------------------------------------------


def header_functions(path):
    text = re.sub(r"/\*.*?\*/", " ", path.read_text(encoding="utf-8"), flags=re.S)
    return re.findall(r"CBLOB_API\s[^;(]*?\b(cblob_\w+)\s*\(", text)


def load_exclusions(path):
    """{function: {language: reason}}; a row without `languages` excludes it from all four."""
    table = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    problems, exclusions = [], {}
    for row in table:
        name, reason = row.get("function"), (row.get("reason") or "").strip()
        languages = row.get("languages", list(LANGUAGES))
        if not name or not reason:
            problems.append(f"{path.name}: every row needs a function and a reason ({row})")
            continue
        if re.search(r"\b(todo|not (done|written|wrapped) yet|later)\b", reason, re.I):
            problems.append(f"{path.name}: {name}: 'not done yet' is not a reason to exclude a function")
        for language in languages:
            if language not in LANGUAGES:
                problems.append(f"{path.name}: {name}: unknown language {language}")
            exclusions.setdefault(name, {})[language] = reason
    return exclusions, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--header", type=Path, help="the header to read (default: the tree's)")
    parser.add_argument("--root", type=Path, help="where the bindings are (default: SOURCE)")
    parser.add_argument("--table", action="store_true", help="print the function x language table")
    args = parser.parse_args()
    root = args.root or args.source
    functions = header_functions(args.header or args.source / HEADER)
    exclusions, problems = load_exclusions(args.source / EXCLUSIONS)
    reach = {language: language_reach(root, language) for language in LANGUAGES}

    for name in sorted(set(exclusions) - set(functions)):
        problems.append(f"{EXCLUSIONS}: {name} is not a function of the header")
    rows = []
    for name in functions:
        cells = []
        for language in LANGUAGES:
            excluded = exclusions.get(name, {}).get(language)
            via = reach[language].get(name)
            if via and excluded:
                problems.append(f"{name}: excluded for {language} ({excluded!r}) but reachable "
                                f"(through {via}): drop the exclusion")
            elif not via and not excluded:
                problems.append(f"{name}: not reachable from the {language} safe layer; give it a "
                                f"binding: block (codegen/bindings/) or a reason in {EXCLUSIONS}")
            cells.append(via or ("excluded" if excluded else "MISSING"))
        rows.append((name, cells))
    if args.table:
        width = max(len(n) for n in functions)
        print(f"{'function':{width}}  " + "  ".join(f"{lang:24}" for lang in LANGUAGES))
        for name, cells in rows:
            print(f"{name:{width}}  " + "  ".join(f"{c:24}" for c in cells))
    if problems:
        print("\n".join(problems))
        print(f"bindings.coverage: {len(problems)} problem(s)")
        return 1
    excluded = sum(len(v) for v in exclusions.values())
    print(f"bindings.coverage: {len(functions)} functions x {len(LANGUAGES)} languages: every one reachable "
          f"from the public safe layer, but {excluded} (function, language) pairs excluded with a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
