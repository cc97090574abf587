"""Warning-style code comments: find them in a source file and turn each into a gotcha's text.

The rule (GOTCHAS.md has the reasons):

1. **Comments** are found by a small lexer per language that knows the language's strings, so a `//` or a
   `#` inside a string, a template literal, a regular expression literal (JS/TS), a raw string (Rust, Go)
   or a char literal is not a comment. Languages: TypeScript/JavaScript (`//`, `/* */`), Rust (`//`,
   `///`, `//!`, nestable `/* */`), Go (`//`, `/* */`), Python (`#`).
2. **One comment** = a block comment, or a run of line comments on consecutive lines, each alone on its
   line with the same marker (`//`, `///`, `//!` or `#`); a comment after code on a line continues on the
   following comment-only lines that start in the same column. Markers, a block's leading `*` and the
   common indentation are stripped; lines keep their breaks.
3. **Warning-style** = the comment holds an upper-case tag (`NOTE`, `NB`, `WARNING`, `WARN`, `HACK`, `XXX`,
   `IMPORTANT`, `SAFETY`, `CAUTION`, `FIXME`) at the start of one of its lines or followed by `:`/`(`, or
   a capitalized one with a colon (`Note:`, `Warning:`, `Safety:`, ...), or one of the words (any case,
   whole words) must, mustn't, never, don't, do not, always, careful, carefully, beware, caution,
   important, importantly, avoid, make sure, should never, workaround. `TODO` alone is not a warning (a
   plan, not a constraint on the code as it is), nor is `should not` (mostly a test's expectation).
4. **Left out**: license and copyright headers, comments that are mostly commented-out code, and every
   comment of a generated or vendored file (one saying so in its first lines, `Code generated ... DO NOT
   EDIT`, `@generated`, or one under `generated/`, `vendor/`, `node_modules/`, `dist/`, `*.pb.go`, ...).

Summary = the first sentence, on one line, at most 160 characters (cut at a word, with `…`); details =
the rest of the comment (the whole comment when the first sentence had to be cut).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

SUMMARY_CHARS = 160  # tether's SUMMARY_MAX: what one injected line may hold

LANGUAGES = {
    "ts": "js",
    "tsx": "js",
    "mts": "js",
    "cts": "js",
    "js": "js",
    "jsx": "js",
    "mjs": "js",
    "cjs": "js",
    "rs": "rust",
    "go": "go",
    "py": "python",
    "pyi": "python",
}

TAGS = ("NOTE", "NB", "WARNING", "WARN", "HACK", "XXX", "IMPORTANT", "SAFETY", "CAUTION", "FIXME")
_TAG_ALT = "|".join(TAGS) + r"|N\.B\."
# An upper-case tag counts at the start of a line of the comment (`NOTE the order`, `- HACK:`) or anywhere
# when it is followed by `:` or `(` (`... see NOTE(ab): ...`); `WARN` inside prose ("log at WARN level")
# is a log level, not a warning.
TAG_RE = re.compile(
    rf"(?m)^[ \t]*(?:[-*>][ \t]*)?(?:{_TAG_ALT})(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?:{_TAG_ALT})[:(]"
)
CAPITAL_TAG_RE = re.compile(
    r"^[ \t]*(?:[-*>#][ \t]*)*(?:Note|Nb|Warning|Warn|Hack|Important|Safety|Caution|Fixme)[ \t]*:"
    r"|^[ \t]*#[ \t]*Safety[ \t]*$",  # Rust's `# Safety` doc section
    re.MULTILINE,
)
# A line comment opening with a tag starts a comment of its own, even right under another one.
NEW_TAG_RE = re.compile(rf"[ \t]*(?:TODO|{_TAG_ALT})(?![A-Za-z0-9_])")
_APOS = "['\u2019]"
WORDS_RE = re.compile(
    rf"(?<![\w-])(?:must(?:n{_APOS}t)?|never|don{_APOS}t|do[ \t]+not|always|careful(?:ly)?|beware|caution"
    rf"|important(?:ly)?|avoid|make[ \t]+sure|should[ \t]+never|workaround)(?![\w-])",
    re.IGNORECASE,
)
LICENSE_RE = re.compile(r"copyright|spdx-license-identifier|licensed under|license, version", re.IGNORECASE)
GENERATED_RE = re.compile(
    r"code generated .*do not edit|@generated|(auto-?)?generated (file|code)|do not (edit|modify)"
    r"|this file (is|was|has been) (auto-?|automatically )?generated",
    re.IGNORECASE,
)
GENERATED_HEAD_LINES = 10  # a generated file says so at its top
# A line that reads as code: commented-out code, not prose.
CODE_LINE_RE = re.compile(
    r"(?:[;{}]|=>)\s*$|^\s*(?:import|export|const|let|var|fn|pub|use|func|def|await)\s+[\w{*]"
    r"|^\s*(?:if|for|while|return|switch|match)\s*\(|^\s*[\w.]+\s*=\s*\S"
)
SYMBOL_RE = re.compile(
    r"^(?P<indent>[ \t]*)(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:unsafe\s+)?"
    r"(?:static\s+)?(?:abstract\s+)?(?:fn|function\*?|class|def|func|impl(?:<[^>]*>)?|struct|enum|trait"
    r"|interface|mod)\s+(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_$][\w$]*)"
    r"|^(?P<indent2>[ \t]*)(?:export\s+)?(?:const|let)\s+(?P<name2>[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*"
    r"(?:async\s*)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=>"
)


# Generated, vendored and built files: nobody edits them by hand, so their comments warn nobody.
GENERATED_PATH_RE = re.compile(
    r"(^|/)(node_modules|vendor|third_party|dist|generated|__generated__)/|\.(generated|gen|min|pb)\.\w+$"
    r"|_pb2?\.py$|\.pb\.go$|_generated\.\w+$|(^|/)zz_generated"
)


def language_of(path: str) -> str | None:
    """The lexer for `path` by its extension (`js` covers TypeScript), or None for files we do not read."""
    name = path.rsplit("/", 1)[-1]
    if "." not in name:
        return None
    return LANGUAGES.get(name.rsplit(".", 1)[-1].lower())


@dataclass(frozen=True)
class Comment:
    """One comment as the reader sees it: first and last line (1-based), text without markers."""

    line: int
    end_line: int
    text: str
    marker: str  # "//", "///", "//!", "#", "/*", "/**", "/*!"
    trailing: bool  # it follows code on its first line


@dataclass(frozen=True)
class Gotcha:
    """A warning-style comment as a memory: where it is and what would be injected."""

    id: str
    path: str
    line: int
    end_line: int
    text: str
    summary: str
    details: str
    symbol: str  # nearest enclosing `fn` / `function` / `class` / `def` ... name, or ""
    trigger: str  # what made it a warning: the tag or the word (lower-cased for words)


def comment_hash(path: str, line: int, text: str) -> str:
    """The stable id of a comment memory: what the frozen labels refer to."""
    return hashlib.sha256(f"{path}\0{line}\0{text}".encode()).hexdigest()[:16]


# --- lexing -------------------------------------------------------------------------------------------

_JS_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^")
_JS_REGEX_KEYWORDS = {
    "return",
    "typeof",
    "case",
    "do",
    "else",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "instanceof",
    "yield",
    "await",
}
_RUST_RAW_RE = re.compile(r'(?:br|cr|r)(#*)"')
_RUST_CHAR_RE = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]{1,6}\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'")
_PY_STRING_RE = re.compile(r"(?i)(?<![\w])([rbuf]{0,2})('''|\"\"\"|'|\")")


def raw_comments(text: str, lang: str) -> Iterator[tuple[int, int, str]]:
    """(start offset, end offset, marker) of every comment in `text`, skipping strings of the language."""
    if lang == "python":
        yield from _python_comments(text)
        return
    n = len(text)
    i = 0
    # JS/TS template literals nest: `a ${ b(`c ${d}`) } e`. Each entry is the brace depth at which the
    # template's `${` opened; code inside it closes back into the template at that depth.
    templates: list[int] = []
    depth = 0
    last = ""  # last significant code character or word, for JS regex detection
    special = re.compile(
        r"[/\"'`{}]"
        if lang == "js"
        else r"[/\"'`]|(?<![\w])(?:br|cr|r)#*\""
        if lang == "rust"
        else r"[/\"'`]"
    )
    word_re = re.compile(r"[A-Za-z_$][\w$]*$")
    while i < n:
        m = special.search(text, i)
        if m is None:
            break
        j = m.start()
        chunk = text[max(i, j - 64) : j].rstrip()
        if chunk:
            w = word_re.search(chunk)
            last = w.group(0) if w else chunk[-1]
        ch = text[j]
        nxt = text[j + 1] if j + 1 < n else ""
        if ch == "/" and nxt == "/":
            end = text.find("\n", j)
            end = n if end < 0 else end
            marker = "//"
            if text.startswith("///", j) and not text.startswith("////", j):
                marker = "///"
            elif text.startswith("//!", j):
                marker = "//!"
            yield j, end, marker
            i = end
            continue
        if ch == "/" and nxt == "*":
            end = _block_end(text, j, nested=lang == "rust")
            marker = "/*"
            if text.startswith("/**", j) and not text.startswith("/**/", j):
                marker = "/**"
            elif text.startswith("/*!", j):
                marker = "/*!"
            yield j, end, marker
            i = end
            continue
        if ch == "/":
            if lang == "js" and (last in _JS_REGEX_BEFORE or last in _JS_REGEX_KEYWORDS or last == ""):
                i = _js_regex_end(text, j)
                last = "/re/"
            else:
                i = j + 1
                last = "/"
            continue
        if lang == "rust" and ch in "rbc":
            # r"..." / r#"..."# / br"..." / cr"...": raw strings (the search only stops at one that does
            # not continue an identifier).
            raw = _RUST_RAW_RE.match(text, j)
            assert raw is not None
            close = '"' + raw.group(1)
            end = text.find(close, raw.end())
            i = n if end < 0 else end + len(close)
            last = "str"
            continue
        if ch == "'" and lang == "rust":
            lit = _RUST_CHAR_RE.match(text, j)
            i = lit.end() if lit else j + 1  # otherwise a lifetime or a label: `'a`
            last = "str"
            continue
        if ch == "`" and lang == "go":
            end = text.find("`", j + 1)
            i = n if end < 0 else end + 1
            last = "str"
            continue
        if ch == "`" and lang == "js":
            i = _template_scan(text, j + 1, templates, depth)
            last = "str"
            continue
        if ch in "\"'" or (ch == "`" and lang != "rust"):
            i = _string_end(text, j, ch, multiline=lang == "rust" and ch == '"')
            last = "str"
            continue
        if ch == "{" and lang == "js":
            depth += 1
            i = j + 1
            last = "{"
            continue
        if ch == "}" and lang == "js":
            if templates and templates[-1] == depth:
                templates.pop()
                i = _template_scan(text, j + 1, templates, depth)
                last = "str"
                continue
            depth -= 1
            i = j + 1
            last = "}"
            continue
        i = j + 1


def _block_end(text: str, start: int, nested: bool) -> int:
    if not nested:
        end = text.find("*/", start + 2)
        return len(text) if end < 0 else end + 2
    level, i = 0, start
    while i < len(text):
        if text.startswith("/*", i):
            level += 1
            i += 2
        elif text.startswith("*/", i):
            level -= 1
            i += 2
            if level == 0:
                return i
        else:
            i += 1
    return len(text)


def _string_end(text: str, start: int, quote: str, multiline: bool) -> int:
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return i + 1
        if ch == "\n" and not multiline:
            return i + 1  # an unterminated string ends with its line (a lexer must not swallow the file)
        i += 1
    return len(text)


def _js_regex_end(text: str, start: int) -> int:
    i, in_class = start + 1, False
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "\n":
            return start + 1  # not a regex after all: a division at the end of a line
        if ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "/" and not in_class:
            return i + 1
        i += 1
    return len(text)


def _template_scan(text: str, i: int, templates: list[int], depth: int) -> int:
    """Scan a template literal's text from `i`; return after its closing backtick or its next `${`."""
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "`":
            return i + 1
        if ch == "$" and text.startswith("${", i):
            templates.append(depth)
            return i + 2
        i += 1
    return len(text)


def _python_comments(text: str) -> Iterator[tuple[int, int, str]]:
    i, n = 0, len(text)
    special = re.compile(r"[#'\"]")
    while i < n:
        m = special.search(text, i)
        if m is None:
            return
        j = m.start()
        if text[j] == "#":
            end = text.find("\n", j)
            end = n if end < 0 else end
            yield j, end, "#"
            i = end
            continue
        quote = text[j]
        triple = text.startswith(quote * 3, j)
        if triple:
            end = j + 3
            while end < n:
                if text[end] == "\\":
                    end += 2
                    continue
                if text.startswith(quote * 3, end):
                    end += 3
                    break
                end += 1
            i = min(end, n)
        else:
            i = _string_end(text, j, quote, multiline=False)


# --- comments -----------------------------------------------------------------------------------------


def comments(text: str, lang: str) -> list[Comment]:
    """Every comment of a file, with line comments on consecutive lines merged into one."""
    starts = _line_starts(text)
    out: list[Comment] = []
    run: list[tuple[int, int, str]] = []  # (line, column, cleaned text) of the current line-comment run
    run_marker = ""
    run_trailing = False

    def flush() -> None:
        nonlocal run
        if run:
            body = _dedent([t for _, _, t in run])
            out.append(Comment(run[0][0], run[-1][0], body, run_marker, run_trailing))
        run = []

    for start, end, marker in raw_comments(text, lang):
        line = _line_of(starts, start)
        column = start - starts[line - 1]
        before = text[starts[line - 1] : start]
        trailing = bool(before.strip())
        if marker in ("//", "///", "//!", "#"):
            cleaned = text[start + len(marker) : end]
            cleaned = cleaned[1:] if cleaned.startswith(" ") else cleaned
            cleaned = cleaned.rstrip()
            follows = (
                run
                and marker == run_marker
                and not NEW_TAG_RE.match(cleaned)
                and not trailing
                and line == run[-1][0] + 1
                and (not run_trailing or column == run[0][1])
            )
            if not follows:
                flush()
                run_marker, run_trailing = marker, trailing
            run.append((line, column, cleaned))
            continue
        flush()
        end_line = _line_of(starts, max(start, end - 1))
        out.append(Comment(line, end_line, _clean_block(text[start:end], marker), marker, trailing))
    flush()
    return out


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def _clean_block(raw: str, marker: str) -> str:
    body = raw[len(marker) :]
    body = body[:-2] if body.endswith("*/") else body
    lines = []
    for ln in body.split("\n"):
        stripped = ln.strip()
        if stripped.startswith("*"):
            stripped = stripped[1:]
            stripped = stripped[1:] if stripped.startswith(" ") else stripped
            lines.append(stripped.rstrip())
        else:
            lines.append(ln.rstrip())
    return _dedent(lines)


def _dedent(lines: list[str]) -> str:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    indents = [len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()]
    cut = min(indents) if indents else 0
    return "\n".join(ln[cut:] if ln.strip() else "" for ln in lines)


# --- warnings -----------------------------------------------------------------------------------------


def trigger_of(text: str) -> str:
    """What makes a comment warning-style (the tag, or the word lower-cased), or "" when nothing does."""
    tag = TAG_RE.search(text)
    if tag:
        return tag.group(0).strip(" \t-*>:(").upper().replace("N.B.", "NB")
    cap = CAPITAL_TAG_RE.search(text)
    if cap:
        return cap.group(0).strip(" \t-*>#:").upper()
    word = WORDS_RE.search(text)
    if word:
        return " ".join(word.group(0).lower().replace("\u2019", "'").split())
    return ""


def is_code(text: str) -> bool:
    """Mostly commented-out code: more than half of its non-empty lines read as code."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    return bool(lines) and sum(1 for ln in lines if CODE_LINE_RE.search(ln)) * 2 > len(lines)


def is_generated(found: list[Comment]) -> bool:
    """A generated file says so in one of its first comments."""
    return any(GENERATED_RE.search(c.text) for c in found if c.line <= GENERATED_HEAD_LINES)


def split_summary(text: str) -> tuple[str, str]:
    """(summary, details): the first sentence on one line (≤ 160 characters) and the rest."""
    paragraphs = re.split(r"\n\s*\n", text.strip(), maxsplit=1)
    first = " ".join(paragraphs[0].split())
    rest_of_text = paragraphs[1].strip() if len(paragraphs) > 1 else ""
    sentence, after = first, ""
    for m in re.finditer(r"[.!?](?=\s+\S)", first):
        before = first[: m.start()].rsplit(" ", 1)[-1].lower()
        if before in ("e.g", "i.e", "etc", "vs", "cf", "n.b", "approx", "incl") or before.endswith(".g"):
            continue
        sentence, after = first[: m.end()], first[m.end() :].strip()
        break
    if len(sentence) > SUMMARY_CHARS:
        cut = sentence[: SUMMARY_CHARS - 1]
        cut = cut[: cut.rfind(" ")] if " " in cut else cut
        return cut.rstrip() + "…", text.strip()
    details = "\n\n".join(p for p in (after, rest_of_text) if p)
    return sentence, details


_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def gotchas(path: str, text: str) -> list[Gotcha]:
    """Every warning-style comment of one file, as gotcha memories (empty for generated files)."""
    lang = language_of(path)
    if lang is None or GENERATED_PATH_RE.search(path):
        return []
    found = comments(text, lang)
    if is_generated(found):
        return []
    lines = text.split("\n")
    out = []
    for c in found:
        body = _CONTROL_RE.sub(" ", c.text).replace("\r", "")
        if not body.strip() or LICENSE_RE.search(body) or is_code(body):
            continue
        trigger = trigger_of(body)
        if not trigger:
            continue
        summary, details = split_summary(body)
        if not summary.strip(" .…"):
            continue
        out.append(
            Gotcha(
                id=comment_hash(path, c.line, body),
                path=path,
                line=c.line,
                end_line=c.end_line,
                text=body,
                summary=summary,
                details=details,
                symbol=enclosing_symbol(lines, c.line),
                trigger=trigger,
            )
        )
    return out


def enclosing_symbol(lines: list[str], line: int) -> str:
    """The nearest `fn`/`function`/`class`/`def`/... above `line`, indented less than the line is."""
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    indent = len(here) - len(here.lstrip())
    if indent == 0:
        return ""
    for index in range(line - 2, -1, -1):
        m = SYMBOL_RE.match(lines[index])
        if m is None:
            continue
        pad = m.group("indent") if m.group("indent") is not None else m.group("indent2") or ""
        if len(pad) < indent:
            return m.group("name") or m.group("name2") or ""
    return ""
