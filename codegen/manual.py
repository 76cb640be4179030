# SPDX-License-Identifier: BSD-2-Clause
"""The cblob program's manual (docs/cblob.1.md): one document, read here into a model that the
templates render as the program's help and option tables (generated/tools/help.c), the manual page
(generated/tools/cblob.1.in) and the program's section of README.md (zstd's programs/zstd.1.md is
the model).

The document is Markdown with a few rules, checked here so that every rendering can trust it:

- `# NAME(SECTION) -- summary` first; `## SECTION` headings; under `## COMMANDS`, a `### command`
  heading per command, whose first paragraph is its one-line summary and second its usage.
- Inline markup: `literal` and *METAVARIABLE* (capitals, digits, '.', '_' and a trailing '...'),
  nothing else. A line ending in a backslash ends a line of a line block (a synopsis).
- An option: "* `--name` *VALUE*, `-n` *VALUE*:" (names in backquotes, an optional metavariable),
  its text on the lines below, indented by two spaces. Every option of a command's list is one
  the program accepts: the option tables the program parses with are rendered from these lists.
- ```sh fenced blocks are kept as they are (the examples).
"""
import re
import textwrap
from pathlib import Path

WIDTH = 100  # the help's lines
OPTION_COLUMN = 24  # where an option's text starts in the help


class ManualError(Exception):
    pass


# ---- inline markup -----------------------------------------------------------------------------

INLINE = re.compile(r"`([^`]+)`|\*([A-Z][A-Z0-9._]*(?:\.\.\.)?)\*")


def check_inline(text, where):
    rest = INLINE.sub("", text)
    if "`" in rest or re.search(r"\*\S", rest):
        raise ManualError(f"{where}: only `literal` and *METAVARIABLE* markup is allowed: {text!r}")


def plain(text):
    """The text as the help prints it: literals as they are, metavariables in capitals."""
    return INLINE.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)


def roff_escape(text):
    return text.replace("\\", "\\e").replace("-", "\\-")


def roff(text):
    """Inline markup as roff: literals in bold, metavariables in italics."""
    out = []
    position = 0
    for m in INLINE.finditer(text):
        out.append(roff_escape(text[position:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + roff_escape(m.group(1)) + "\\fR")
        else:
            out.append("\\fI" + roff_escape(m.group(2)) + "\\fR")
        position = m.end()
    out.append(roff_escape(text[position:]))
    return "".join(out)


def roff_lines(text):
    """A paragraph as roff source lines; a line starting with '.' or "'" would be a request."""
    lines = textwrap.wrap(roff(text), 100, break_long_words=False, break_on_hyphens=False)
    return [("\\&" + line) if line[:1] in (".", "'") else line for line in lines]


# ---- parsing -----------------------------------------------------------------------------------

class Option:
    def __init__(self, names, value, text):
        self.names = names  # ["-o", "--output"]
        self.value = value  # "OUT", or None for a flag
        self.text = text

    @property
    def key(self):
        """The C identifier's part: the long name in capitals (--allow-missing: ALLOW_MISSING)."""
        long_names = [n for n in self.names if n.startswith("--")]
        return (long_names[0] if long_names else self.names[0]).lstrip("-").replace("-", "_").upper()

    @property
    def label(self):
        return ", ".join(f"{n} {self.value}" if self.value else n for n in self.names)

    @property
    def label_markup(self):
        return ", ".join(f"`{n}` *{self.value}*" if self.value else f"`{n}`" for n in self.names)


OPTION_HEAD = re.compile(r"^\* (.+?):(?: (.*))?$")
OPTION_NAME = re.compile(r"^`(-{1,2}[a-z0-9][a-z0-9-]*)`(?: \*([A-Z][A-Z0-9._]*)\*)?$")
STATUS_NAME = re.compile(r"^`([A-Z0-9_]+|[0-9]+)`$")


def parse_item_head(head, where, names_pattern):
    names, value = [], None
    for part in head.split(", "):
        m = names_pattern.match(part)
        if not m:
            raise ManualError(f"{where}: '{part}' is not an item name (`--name` *VALUE*)")
        names.append(m.group(1))
        if m.lastindex and m.lastindex >= 2 and m.group(2):
            if value not in (None, m.group(2)):
                raise ManualError(f"{where}: the names of one option take one value ({head})")
            value = m.group(2)
    return names, value


def parse_blocks(lines, where):
    """Paragraphs, line blocks, items and code blocks of a section's lines."""
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            end = lines.index("```", i + 1)
            blocks.append({"kind": "code", "lines": lines[i + 1:end]})
            i = end + 1
        elif line.startswith("* "):
            m = OPTION_HEAD.match(line)
            if not m:
                raise ManualError(f"{where}: an item is '* `--name`:' and its text below: {line!r}")
            text = [m.group(2)] if m.group(2) else []
            i += 1
            while i < len(lines) and lines[i].startswith("  "):
                text.append(lines[i].strip())
                i += 1
            body = " ".join(text)
            check_inline(body, where)
            blocks.append({"kind": "item", "head": m.group(1), "text": body})
        else:
            paragraph = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(("* ", "```")):
                paragraph.append(lines[i])
                i += 1
            if all(l.endswith("\\") for l in paragraph[:-1]) and len(paragraph) > 1:
                rows = [l[:-1] if l.endswith("\\") else l for l in paragraph]
                for row in rows:
                    check_inline(row, where)
                blocks.append({"kind": "lines", "lines": rows})
            else:
                if any(l.endswith("\\") for l in paragraph):
                    raise ManualError(f"{where}: a line block ends every line but its last in '\\'")
                text = " ".join(l.strip() for l in paragraph)
                check_inline(text, where)
                blocks.append({"kind": "paragraph", "text": text})
    return blocks


def split_headings(lines, marker):
    """(heading, lines) for each heading of this level, and the lines before the first."""
    parts, before, current = [], [], None
    for line in lines:
        if line.startswith(marker + " "):
            current = (line[len(marker) + 1:].strip(), [])
            parts.append(current)
        elif current is None:
            before.append(line)
        else:
            current[1].append(line)
    return before, parts


def options_of(blocks, where):
    options = []
    for block in blocks:
        if block["kind"] == "item":
            names, value = parse_item_head(block["head"], where, OPTION_NAME)
            options.append(Option(names, value, block["text"]))
    return options


def load(path):
    source = Path(path).read_text(encoding="utf-8")
    source = re.sub(r"<!--.*?-->\n*", "", source, flags=re.S)
    lines = source.split("\n")
    title = re.match(r"^# (\w+)\((\d)\) -- (.+)$", lines[0])
    if not title:
        raise ManualError(f"{path}: the first line is '# name(section) -- summary'")
    _, sections = split_headings(lines[1:], "##")
    manual = {"name": title.group(1), "section": title.group(2), "summary": title.group(3), "sections": {}}
    for heading, body in sections:
        where = f"{path}, {heading}"
        if heading == "COMMANDS":
            _, commands = split_headings(body, "###")
            manual["commands"] = [command(name, lines_, f"{path}, {name}") for name, lines_ in commands]
        else:
            manual["sections"][heading] = parse_blocks(body, where)
    for required in ("SYNOPSIS", "DESCRIPTION", "COMMON OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        if required not in manual["sections"]:
            raise ManualError(f"{path}: no '## {required}' section")
    common = manual["sections"]["COMMON OPTIONS"]
    manual["common_intro"] = [b for b in common if b["kind"] != "item"]
    manual["common_options"] = options_of(common, f"{path}, COMMON OPTIONS")
    manual["statuses"] = [
        {"names": parse_item_head(b["head"], f"{path}, EXIT STATUS", STATUS_NAME)[0], "text": b["text"]}
        for b in manual["sections"]["EXIT STATUS"] if b["kind"] == "item"]
    manual["environment"] = [
        {"names": parse_item_head(b["head"], f"{path}, ENVIRONMENT", STATUS_NAME)[0], "text": b["text"]}
        for b in manual["sections"].get("ENVIRONMENT", []) if b["kind"] == "item"]
    manual["synopsis"] = manual["sections"]["SYNOPSIS"][0]["lines"]
    codes = [b for b in manual["sections"]["EXAMPLES"] if b["kind"] == "code"]
    captions = [b for b in manual["sections"]["EXAMPLES"] if b["kind"] == "paragraph"]
    if len(codes) != 2 or len(captions) != 1:
        raise ManualError(f"{path}: EXAMPLES holds the examples, then a paragraph and the sample's output")
    manual["examples"], manual["sample_output"] = codes[0]["lines"], codes[1]["lines"]
    manual["sample_caption"] = captions[0]["text"]
    return manual


def command(name, lines, where):
    blocks = parse_blocks(lines, where)
    if len(blocks) < 2 or blocks[0]["kind"] != "paragraph" or blocks[1]["kind"] not in ("paragraph", "lines"):
        raise ManualError(f"{where}: a command starts with its summary, then its usage")
    summary = blocks[0]["text"]
    if len(summary) > WIDTH - 16 or not summary.endswith("."):
        raise ManualError(f"{where}: the summary is one sentence of at most {WIDTH - 16} characters")
    usage = blocks[1]["lines"] if blocks[1]["kind"] == "lines" else [blocks[1]["text"]]
    if not all(plain(u).startswith("cblob " + name) for u in usage):
        raise ManualError(f"{where}: the usage starts with `cblob {name}`")
    body = blocks[2:]
    return {
        "name": name,
        "identifier": name.upper(),
        "summary": summary,
        "usage": usage,
        "paragraphs": [b for b in body if b["kind"] == "paragraph"],
        "options": options_of(body, where),
    }


# ---- the help ----------------------------------------------------------------------------------

def wrap(text, indent=0, first=None):
    return textwrap.fill(plain(text), WIDTH, initial_indent=" " * indent if first is None else first,
                         subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False)


def option_lines(label, text):
    label = "  " + label
    if len(label) <= OPTION_COLUMN - 2:
        return wrap(text, OPTION_COLUMN, first=label.ljust(OPTION_COLUMN))
    return label + "\n" + wrap(text, OPTION_COLUMN)


def command_help(manual, cmd):
    out = []
    for i, usage in enumerate(cmd["usage"]):
        out.append(("usage: " if i == 0 else "       ") + plain(usage))
    for paragraph in cmd["paragraphs"]:
        out += ["", wrap(paragraph["text"])]
    if cmd["options"]:
        out += ["", "options:"] + [option_lines(o.label, o.text) for o in cmd["options"]]
        out += ["", "common options:"] + [option_lines(o.label, o.text) for o in manual["common_options"]]
    return "\n".join(out) + "\n"


def main_help(manual):
    out = []
    for i, line in enumerate(manual["synopsis"]):
        out.append(("usage: " if i == 0 else "       ") + plain(line))
    out += ["", "commands:"]
    out += [option_lines(c["name"], c["summary"]) for c in manual["commands"]]
    out += [option_lines("help [COMMAND]", "This text, or a command's.")]
    out += ["", "examples:"] + ["  " + line for line in manual["examples"]]
    out += ["", "exit status:"]
    out += [option_lines(", ".join(s["names"]), s["text"]) for s in manual["statuses"]]
    out += ["", wrap(f"'cblob COMMAND --help' tells a command's options; the manual page {manual['name']}"
                     f"({manual['section']}) tells everything.")]
    return "\n".join(out) + "\n"


def annotate(manual):
    """What the templates use: the help texts and each command's option table."""
    manual["main_help"] = main_help(manual)
    for cmd in manual["commands"]:
        cmd["help"] = command_help(manual, cmd)
        table = cmd["options"] + (manual["common_options"] if cmd["options"] else [])
        keys = [o.key for o in table]
        if len(set(keys)) != len(keys):
            raise ManualError(f"cblob {cmd['name']}: two options share a name: {keys}")
        cmd["table"] = [{"name": n, "value": o.value, "id": f"TOOL_{cmd['identifier']}_{o.key}"}
                        for o in table for n in o.names]
        cmd["ids"] = [f"TOOL_{cmd['identifier']}_{o.key}" for o in table]
    return manual


# ---- Markdown for README.md ----------------------------------------------------------------------

def markdown_fill(text, first="", rest=""):
    """Wraps Markdown, never inside a `code span` (its spaces are kept until the lines are made)."""
    kept = re.sub(r"`[^`]+`", lambda m: m.group(0).replace(" ", "\0"), text)
    return textwrap.fill(kept, WIDTH, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                         break_on_hyphens=False).replace("\0", " ")


def markdown_paragraph(text):
    return markdown_fill(text)


def readme_section(manual):
    """README.md's first look at the program: the examples and the sample model's table, which a
    test compares with what the program prints; the rest is the manual's (docs/cblob.1.md)."""
    out = ["```sh\n" + "\n".join(manual["examples"]) + "\n```\n"]
    out.append(markdown_paragraph(manual["sample_caption"]) + "\n")
    out.append("```text\n" + "\n".join(manual["sample_output"]) + "\n```\n")
    out.append(markdown_paragraph(
        "(`build/release/tools/cblob` in a build tree.) Its manual, every command and option, is "
        "[docs/cblob.1.md](docs/cblob.1.md), which `cblob COMMAND --help` and `man cblob` print too."))
    return "\n".join(out) + "\n"