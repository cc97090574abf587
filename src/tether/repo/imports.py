"""Import specs: what a file imports, as strings that depend on its content alone (DESIGN §3, fan-in).

Fan-in (how many files import a file: the blast radius) takes three steps, so a refresh re-reads only the
files whose content changed and re-resolves only what a change can move:

1. `parse_imports(path, text)` turns one file into import *specs* (cached per file by the repo map);
2. `tether.repo.resolve` resolves specs against the current file set;
3. `tether.repo.fanin` counts, per file, the distinct other files that import it, from scratch or
   brought up to date from the last count.

    >>> parse_imports("pkg/a.py", "from . import b\\nimport os")
    ['.:b', 'os']

Coverage, and what is not covered:

- Python (the import lines, `tether.repo.pyscan`): `import a.b`, `from a.b import c` (a submodule `c` if one exists, else module `a.b`),
  relative imports, packages via `__init__.py`, src-layout and any other package root (the directory
  above the topmost `__init__.py`; so a file in a directory that is not a package answers to its bare
  name, as scripts import their siblings), plus names relative to the repo root (namespace packages).
  When several files answer to a name, the one sharing the longest directory prefix with the importer wins.
  `import a.b` counts for `a/b.py` only, not for the parents' `__init__.py`. Not covered:
  `importlib`/`__import__` strings, `sys.path` tricks, `.pyi` stubs.
- JavaScript/TypeScript (regex): relative specifiers in `import … from`, bare `import '…'`,
  `export … from`, `require('…')`, `import('…')`; resolved with extensions and `index` files, and the
  TypeScript ESM habit of importing `./x.js` for `./x.ts`. Not covered: package names, tsconfig
  `paths`/`baseUrl` aliases, template-literal specifiers; a specifier inside a string or a `//` comment
  that does not start its line can count.
- Go (regex, over the file's header: imports come before its first top-level declaration): import paths
  under a module declared by a `go.mod` in the repo (longest module path wins). A package's fan-in is the
  number of files in other directories importing it; each non-test file of the package carries it (`_test.go` files get 0). Not covered: `replace` directives, vendoring.
- Rust (regex): `mod x;` (`x.rs` or `x/mod.rs` beside the declaring module) and `crate::`/`super::`/
  `self::` paths, in `use` trees (braces expanded) and inline, resolved to the longest module prefix
  that is a file under the crate root (the nearest directory holding `lib.rs` or `main.rs`). Not
  covered: `#[path]` attributes, inline `mod x { … }` nesting, other crates of a workspace.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tether.repo.pyscan import python_specs

JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")

_LANG_BY_SUFFIX = {".py": "python", ".go": "go", ".rs": "rust", **dict.fromkeys(JS_EXTS, "js")}


def language_of(path: str) -> str | None:
    """The language whose imports `path` holds ("python", "js", "go", "gomod", "rust"), or None."""
    name = path.rsplit("/", 1)[-1]
    if name == "go.mod":
        return "gomod"
    dot = name.rfind(".")
    return _LANG_BY_SUFFIX.get(name[dot:]) if dot > 0 else None


def parse_imports(path: str, text: str) -> list[str]:
    """The import specs of one file, deduplicated, in first-seen order."""
    lang = language_of(path)
    if lang == "python":
        specs = python_specs(text)
    elif lang == "js":
        specs = _js_specs(text)
    elif lang == "go":
        specs = _go_specs(text)
    elif lang == "gomod":
        specs = _gomod_specs(text)
    elif lang == "rust":
        specs = _rust_specs(text)
    else:
        specs = []
    return list(dict.fromkeys(s for s in specs if s and "\n" not in s))


# -- parsing ---------------------------------------------------------------------------------------


# A relative specifier, then what must come just before it. Looking for the quoted string first and for the
# keyword behind it is twice as fast as one pattern led by the keywords (tried at every position of the
# file); a keyword more than `_JS_LOOKBACK` characters before its string (a long run of blanks) is missed.
_JS_QUOTED = re.compile(r"""(['"])(\.\.?(?:/[^'"\n]*)?)\1""")
_JS_OPENINGS = ("'.", '".')  # how a relative specifier starts: `str.find` looks for them
_JS_BEFORE = re.compile(r"(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)\Z")
_JS_LOOKBACK = 64


def _without_block_comments(text: str) -> str:
    r"""`text` without its `/* ... */` comments (each from a `/*` to the next `*/`; from a `/*` never closed,
    nothing more is cut, as a regex `/\*.*?\*/` would leave it). In one pass: that regex tries every `/*`
    again to the end of the text when none closes, and a file of them took minutes."""
    if "/*" not in text:
        return text
    kept, pos = [], 0
    while (opened := text.find("/*", pos)) >= 0:
        closed = text.find("*/", opened + 2)
        if closed < 0:
            break
        kept.append(text[pos:opened])
        pos = closed + 2
    kept.append(text[pos:])
    return "".join(kept)


_WORD_START = re.compile(r"\b")
_LINE_COMMENT_TAIL = re.compile(r"//[^\n]*")


def _at_word_start(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    r"""What `\b` followed by `pattern` finds in `text` (as `finditer` would: leftmost, not overlapping)."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        if _WORD_START.match(text, m.start()):
            yield m
            pos = m.end()
        else:
            pos = m.start() + 1


class _Quoted:
    """`_JS_QUOTED.search(text, pos)` for rising `pos`, tried only where a quote and a dot open a string,
    found by `str.find` and kept between calls: the regex's own scan for a quote (a class, tried at every
    position) was most of a TypeScript file's parse."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.next = [text.find(opening) for opening in _JS_OPENINGS]  # per opening; -1: none left

    def search(self, pos: int) -> re.Match[str] | None:
        text, found = self.text, self.next
        for i, at in enumerate(found):
            if 0 <= at < pos:
                found[i] = text.find(_JS_OPENINGS[i], pos)
        while True:
            live = [(at, i) for i, at in enumerate(found) if at >= 0]
            if not live:
                return None
            at, i = min(live)
            m = _JS_QUOTED.match(text, at)
            if m is not None:
                return m
            found[i] = text.find(_JS_OPENINGS[i], at + 1)


def _js_specs(text: str) -> list[str]:
    text = _without_block_comments(text)
    before = _JS_BEFORE.search
    out: list[str] = []
    pos = line = seen = 0  # `line`: where the line holding `seen` starts (strings come in order: found once)
    quoted = _Quoted(text)
    while (m := quoted.search(pos)) is not None:
        start = m.start()
        newline = text.rfind("\n", seen, start)
        line, seen = (newline + 1 if newline >= 0 else line), start
        # Neither the string nor its keyword on a line that is a `//` comment (asked of the few strings
        # found, not by rewriting the whole text).
        keyword = before(text, max(0, start - _JS_LOOKBACK), start)
        if _comment_line(text, line, start):
            found = False
        elif keyword is not None:
            at = keyword.start()
            found = not _comment_line(text, line if at >= line else text.rfind("\n", 0, at) + 1, at)
        else:
            found = "//" in text[max(0, start - _JS_LOOKBACK) : start] and _keyword_past_comments(text, start)
        if found:
            out.append(m.group(2))
            pos = m.end()
        else:
            pos = start + 1  # its closing quote may open the next one (the pattern led by keywords saw that)
    return out


def _comment_line(text: str, line: int, at: int) -> bool:
    """Whether `at`, on the line starting at `line`, is past the `//` that line's first non-blanks are."""
    while line < at and text[line] in " \t\r\f\v":
        line += 1
    return line + 2 <= at and text.startswith("//", line)


_LINE_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_JS_REACH = 1024  # how far back a keyword is looked for past comment lines (a longer line: not looked at)


def _keyword_past_comments(text: str, start: int) -> bool:
    """Whether the keyword comes before the string at `start` once the `//` comment lines are taken out (a
    keyword, then comment lines, then its string), as stripping every comment line first found it: asked
    of the lines just before the string only."""
    begin = max(0, start - 4 * _JS_LOOKBACK)
    newline = text.rfind("\n", max(0, begin - _JS_REACH), begin) if begin else -1
    if begin and newline < 0 and begin > _JS_REACH:
        return False  # the line is longer than the reach
    cleaned = _LINE_COMMENT.sub("", text[newline + 1 : start])
    return _JS_BEFORE.search(cleaned, max(0, len(cleaned) - _JS_LOOKBACK)) is not None


_GO_BLOCK = re.compile(r"import\s*\(")  # (at a word start: `_at_word_start`)
_GO_SINGLE = re.compile(r"""import\s+(?:[\w.]+\s+)?["`]([^"`\n]+)["`]""")
_GO_STRING = re.compile(r"""["`]([^"`\n]+)["`]""")


# A top-level declaration at the start of a line: Go's imports all come before the first one (the spec's
# SourceFile: the package clause, then every ImportDecl, then the declarations).
_GO_DECL = re.compile(r"^(?:func|type|var|const)\b", re.M)


def _go_header(text: str) -> str:
    """The part of `text` that can hold imports: up to its first top-level declaration that is not inside a
    block comment (a cgo preamble's C code is), or all of it when that is unclear (a `/*` never closed).
    Reading a big file's header only makes a pull's Go files cheap to parse."""
    start = 0
    while (m := _GO_DECL.search(text, start)) is not None:
        opened = text.rfind("/*", 0, m.start())
        if opened < 0 or text.rfind("*/", opened, m.start()) >= 0:
            return text[: m.start()]
        closed = text.find("*/", m.start())
        if closed < 0:
            return text
        start = closed + 2
    return text


def _go_specs(text: str) -> list[str]:
    # Import paths never contain "//", so cutting every line at "//" is safe for what we look for.
    text = _without_block_comments(_go_header(text))
    text = _LINE_COMMENT_TAIL.sub("", text) if "//" in text else text
    out = [m.group(1) for m in _at_word_start(_GO_SINGLE, text)]
    pos = 0
    for m in _at_word_start(_GO_BLOCK, text):
        if m.start() < pos:
            continue  # (inside the block read last)
        closed = text.find(")", m.end())  # the block: up to the first `)`, as `import\s*\((.*?)\)` reads it
        if closed < 0:
            break  # no block closes after here
        out.extend(_GO_STRING.findall(text, m.end(), closed))
        pos = closed + 1
    return out


def _gomod_specs(text: str) -> list[str]:
    m = re.search(r"^\s*module\s+\"?([^\s\"]+)", text, re.M)
    return [f"module {m.group(1)}"] if m else []


# Each pattern starts with its literal word, not with the `\b` or `^` it needs there (checked on what it finds,
# `_at_word_start`): a leading anchor keeps the regex engine from skipping ahead to that word, which made
# these patterns 3-30x slower on a repository's Rust files.
_RUST_MOD = re.compile(r"mod\s+(\w+)\s*;")
_RUST_MOD_LINE = re.compile(r"^\s*(?:pub(?:\([^)\n]*\))?\s+)?mod\s+(\w+)\s*;", re.M)  # from the line's start
_RUST_USE = re.compile(r"use\s+")  # then the tree, to the next `;` (`_rust_uses`)
_RUST_PATH = re.compile(r"(?:crate|super|self)(?:\s*::\s*\w+)+")
_RUST_ROOTS = ("crate", "super", "self")
_USE_PUNCT = re.compile(r"\s*(::|[{},])\s*")
_USE_ALIAS = re.compile(r"\s+as\s+\w+$")
_BLANKS = re.compile(r"\s+")


def _rust_mods(text: str) -> Iterator[str]:
    r"""`mod x;` items: the word `mod` with only blanks or a `pub(...)` before it on its line (one line: a
    `pub(\n...)` spread over several is not seen)."""
    pos = start = seen = 0  # `start`: where the line holding `seen` starts (candidates come in order)
    while (m := _RUST_MOD.search(text, pos)) is not None:
        newline = text.rfind("\n", seen, m.start())
        start, seen = (newline + 1 if newline >= 0 else start), m.start()
        line = _RUST_MOD_LINE.match(text, start)
        if line is not None and line.end() == m.end():
            yield m.group(1)
            pos = m.end()
        else:
            pos = m.start() + 1


def _rust_uses(text: str) -> Iterator[tuple[int, int, str]]:
    r"""`use` items as (start, end, the tree): what `\buse\s+([^;]+);` finds, in one pass (that pattern reads
    from every `use` to the end of the text when no `;` follows, and a file of them took minutes)."""
    pos, semi = 0, -1
    while (m := _RUST_USE.search(text, pos)) is not None:
        start = m.start()
        if not _WORD_START.match(text, start):
            pos = start + 1
            continue
        if semi < m.end():
            semi = text.find(";", m.end())  # (the first after it: none lies between)
            if semi < 0:
                return
        if semi - (start + 3) < 2:  # `use ;`: the blank and the tree need a character each
            pos = start + 1
            continue
        yield start, semi + 1, text[m.end() : semi]
        pos = semi + 1


def _rust_specs(text: str) -> list[str]:
    text = _without_block_comments(text)
    if "//" in text:
        text = _LINE_COMMENT_TAIL.sub("", text)
    out = [f"mod:{name}" for name in _rust_mods(text)]
    outside, last = [], 0  # the text without its `use` items
    for start, end, body in _rust_uses(text):
        outside.append(text[last:start])
        last = end
        # (Blanks collapsed first: around a long run of them `\s*` beside `\s*` tried every split of it. Then
        # the only blank left is " ": a tree without one has none to drop.)
        tree = _BLANKS.sub(" ", body.strip())
        tree = _USE_PUNCT.sub(_group_1, tree) if " " in tree else tree
        for path in _expand_use_tree(tree):
            segs = [s for s in _USE_ALIAS.sub("", path).split("::") if s]
            if segs and segs[-1] == "self":
                segs.pop()
            if segs and segs[0] in _RUST_ROOTS and re.fullmatch(r"\w+", segs[-1]):
                out.append("use:" + "::".join(segs))
    outside.append(text[last:])
    # Paths used inline (`crate::db::open()`), outside `use` items (already expanded above).
    for m in _rust_paths("".join(outside)):
        out.append("use:" + _BLANKS.sub("", m.group(0)))
    return out


def _group_1(m: re.Match[str]) -> str:
    return m.group(1)  # (`sub` with a callable: a template `\1` is expanded in Python at every match)


def _rust_paths(text: str) -> Iterator[re.Match[str]]:
    """`_at_word_start(_RUST_PATH, text)`, tried only where a path can start: a `crate`, `super` or `self`
    ending just before a `::` (blanks between), found from each `::` by `str.find` (the regex's own scan,
    led by an alternation, tried every position of the file: most of a Rust file's parse)."""
    pos, colons = 0, text.find("::")
    while colons >= 0:
        end = colons
        while end > 0 and text[end - 1].isspace():  # (`\s` is `str.isspace` for a str pattern)
            end -= 1
        word = 5 if text.endswith(("crate", "super"), 0, end) else 4 if text.endswith("self", 0, end) else 0
        start = end - word
        colons = text.find("::", colons + 1)
        if not word or start < pos or (m := _RUST_PATH.match(text, start)) is None:
            continue
        if _WORD_START.match(text, start):
            yield m
            pos = m.end()
            while 0 <= colons < pos:  # (the match's own `::`s)
                colons = text.find("::", colons + 1)
        else:
            pos = start + 1


# Braces nested deeper than this in one `use` item are not Rust anyone writes: a file's text, not the reader's
# stack, decides how deep the recursion would go.
_USE_TREE_DEPTH = 16


def _expand_use_tree(tree: str, levels: int = _USE_TREE_DEPTH) -> list[str]:
    """`a::{b,c::{d,e}}` -> [a::b, a::c::d, a::c::e] (whitespace around `::{},` already removed)."""
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    if levels == 0:
        return []
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [prefix + sub for part in parts if part for sub in _expand_use_tree(part, levels - 1)]
