"""Edits of Codex's `config.toml` without a TOML library: tether owns `[mcp_servers.tether]` and nothing else.

The file is never re-serialised. A small scanner splits it into statements (blank and comment lines, table
headers, key/value pairs, values spanning lines included) and only the statements of tether's table are
written, appended or cut; every other byte stays where it was. `tomllib` parses the file before and after
each edit, and the edit is refused unless the parsed result is exactly the old content plus (or minus)
tether's keys.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.adapters.install.jsonconf import Problem
from tether.adapters.install.specs import SERVER_NAME, is_tether_server

TABLE = ("mcp_servers", SERVER_NAME)


@dataclass(frozen=True)
class Stmt:
    """One statement of a TOML file: text[start:end] covers whole lines, the final newline included."""

    start: int
    end: int
    kind: str  # "blank" | "comment" | "table" | "array" | "keyval"
    key: tuple[str, ...] = ()


_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"', "\\": "\\"}


def _bad(text: str, at: int) -> Problem:
    line = text.count("\n", 0, at) + 1
    return Problem(f"has TOML that tether's editor cannot follow near line {line}; edit the file by hand")


def _basic_string(text: str, i: int) -> tuple[str, int]:
    """Decode a one-line basic string starting at the opening quote; return (value, index after it)."""
    out: list[str] = []
    i += 1
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            esc = text[i + 1 : i + 2]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 2
            elif esc in ("u", "U"):
                width = 4 if esc == "u" else 8
                out.append(chr(int(text[i + 2 : i + 2 + width], 16)))
                i += 2 + width
            else:
                raise _bad(text, i)
            continue
        if c == "\n":
            break
        out.append(c)
        i += 1
    raise _bad(text, i)


def _skip_string(text: str, i: int) -> int:
    """Index just after the string (any of the four kinds) that opens at i."""
    quote = text[i]
    if text.startswith(quote * 3, i):
        j = i + 3
        while True:
            if quote == '"' and text[j : j + 1] == "\\":
                j += 2
                continue
            if j >= len(text):
                raise _bad(text, i)
            if text.startswith(quote * 3, j):
                j += 3
                extra = 0  # up to two more quotes belong to the content: `"""a""""` is `a"`
                while extra < 2 and text[j : j + 1] == quote:
                    j += 1
                    extra += 1
                return j
            j += 1
    if quote == '"':
        return _basic_string(text, i)[1]
    end = text.find("'", i + 1)
    if end < 0 or "\n" in text[i:end]:
        raise _bad(text, i)
    return end + 1


def _skip_value(text: str, i: int) -> int:
    """Index just after the value that starts at i (arrays and inline tables may span lines)."""
    c = text[i : i + 1]
    if c in ('"', "'"):
        return _skip_string(text, i)
    if c not in ("[", "{"):
        j = i
        while j < len(text) and text[j] not in "\n#":
            j += 1
        return j
    depth = 0
    j = i
    while j < len(text):
        c = text[j]
        if c in ('"', "'"):
            j = _skip_string(text, j)
            continue
        if c == "#":
            while j < len(text) and text[j] != "\n":
                j += 1
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise _bad(text, i)


def _skip_blanks(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _line_end(text: str, i: int) -> int:
    """From i (after a statement), skip trailing blanks and a comment; return the index after the newline."""
    i = _skip_blanks(text, i)
    if text[i : i + 1] == "#":
        while i < len(text) and text[i] != "\n":
            i += 1
    if text[i : i + 1] == "\r":
        i += 1
    if i < len(text):
        if text[i] != "\n":
            raise _bad(text, i)
        i += 1
    return i


def _key(text: str, i: int) -> tuple[tuple[str, ...], int]:
    """Parse a (dotted) key at i; return its parts and the index after it (and after trailing blanks)."""
    parts: list[str] = []
    while True:
        i = _skip_blanks(text, i)
        c = text[i : i + 1]
        if c == '"':
            part, i = _basic_string(text, i)
        elif c == "'":
            end = _skip_string(text, i)
            part, i = text[i + 1 : end - 1], end
        else:
            match = _BARE.match(text, i)
            if not match:
                raise _bad(text, i)
            part, i = match.group(0), match.end()
        parts.append(part)
        i = _skip_blanks(text, i)
        if text[i : i + 1] != ".":
            return tuple(parts), i
        i += 1


def scan(text: str) -> list[Stmt]:
    """Split a TOML document (already known to be valid) into statements covering every byte."""
    stmts: list[Stmt] = []
    i = 0
    while i < len(text):
        j = _skip_blanks(text, i)
        c = text[j : j + 1]
        if c in ("", "\n", "\r"):
            end = _line_end(text, j)
            stmts.append(Stmt(i, end, "blank"))
        elif c == "#":
            end = _line_end(text, j)
            stmts.append(Stmt(i, end, "comment"))
        elif c == "[":
            array = text.startswith("[[", j)
            key, k = _key(text, j + (2 if array else 1))
            close = "]]" if array else "]"
            if not text.startswith(close, k):
                raise _bad(text, k)
            end = _line_end(text, k + len(close))
            stmts.append(Stmt(i, end, "array" if array else "table", key))
        else:
            key, k = _key(text, j)
            if text[k : k + 1] != "=":
                raise _bad(text, k)
            k = _skip_value(text, _skip_blanks(text, k + 1))
            end = _line_end(text, k)
            stmts.append(Stmt(i, end, "keyval", key))
        if end <= i:
            raise _bad(text, i)
        i = end
    return stmts


def _string(value: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes, except that TOML has no `\/` (json never emits
    # it) and wants \uXXXX for control characters (json does that too).
    return json.dumps(value, ensure_ascii=False)


def _render_key(part: str) -> str:
    return part if _BARE.fullmatch(part) else _string(part)


def render_value(value: object) -> str:
    """TOML for the small set of values tether writes: strings, integers, booleans and lists of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    raise TypeError(f"tether writes no TOML value of type {type(value).__name__}")


def _render_keyval(key: str, value: object, newline: str) -> str:
    return f"{_render_key(key)} = {render_value(value)}{newline}"


def parse(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Problem(f"is not valid TOML ({exc})") from None


def _servers(data: dict[str, Any]) -> dict[str, Any]:
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise Problem("`mcp_servers` should be a table")
    return servers


def _without_empty_servers(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("mcp_servers") == {}:
        data = dict(data)
        del data["mcp_servers"]
    return data


@dataclass
class TomlMcpEditor:
    """Codex `config.toml`: add, update or remove `[mcp_servers.tether]`."""

    entry: dict[str, Any]

    def parse(self, text: str | None) -> dict[str, Any]:
        return parse(text)

    def install(self, text: str | None) -> str:
        text = text or ""
        data = parse(text)
        existing = _servers(data).get(SERVER_NAME)
        if existing is None:
            new = self._append(text)
        elif is_tether_server(existing):
            new = self._update(text)
        else:
            raise Problem(
                f"already has `[mcp_servers.{SERVER_NAME}]` that does not run `tether mcp`; "
                "rename or remove it, then install again"
            )
        expected = copy.deepcopy(data)
        expected.setdefault("mcp_servers", {}).setdefault(SERVER_NAME, {}).update(self.entry)
        self._verify(new, expected)
        return new

    def _newline(self, text: str) -> str:
        return "\r\n" if "\r\n" in text else "\n"

    def _append(self, text: str) -> str:
        nl = self._newline(text)
        block = f"[mcp_servers.{SERVER_NAME}]{nl}" + "".join(
            _render_keyval(k, v, nl) for k, v in self.entry.items()
        )
        if not text.strip():
            return block
        if not text.endswith("\n"):
            text += nl
        return text + nl + block

    @staticmethod
    def _not_a_table() -> Problem:
        return Problem(
            f"defines `mcp_servers.{SERVER_NAME}` other than as a `[mcp_servers.{SERVER_NAME}]` table; "
            "tether only edits that form. Rewrite it as such a table (or remove it), then try again"
        )

    def _main_table(self, stmts: Sequence[Stmt]) -> int:
        for i, stmt in enumerate(stmts):
            if stmt.kind == "table" and stmt.key == TABLE:
                return i
        raise self._not_a_table()

    def _update(self, text: str) -> str:
        """Rewrite the command/args lines of the existing table; keep every other line of it."""
        stmts = scan(text)
        head = self._main_table(stmts)
        nl = self._newline(text)
        body: list[Stmt] = []
        for stmt in stmts[head + 1 :]:
            if stmt.kind in ("table", "array"):
                break
            body.append(stmt)
        replaced: dict[int, str] = {}
        missing: list[str] = []
        for key, value in self.entry.items():
            found = [s for s in body if s.kind == "keyval" and s.key == (key,)]
            if found:
                replaced[found[0].start] = _render_keyval(key, value, nl)
            else:
                missing.append(_render_keyval(key, value, nl))
        out: list[str] = []
        for i, stmt in enumerate(stmts):
            chunk = text[stmt.start : stmt.end]
            if stmt.start in replaced:
                chunk = replaced[stmt.start]
            out.append(chunk)
            if i == head:
                if not chunk.endswith("\n"):
                    out.append(nl)
                out.extend(missing)
        return "".join(out)

    def uninstall(self, text: str) -> str:
        data = parse(text)
        servers = _servers(data)
        if not is_tether_server(servers.get(SERVER_NAME)):
            return text
        stmts = scan(text)
        self._main_table(stmts)
        cut: set[int] = set()  # indexes of statements to remove
        inside = False
        for i, stmt in enumerate(stmts):
            if stmt.kind in ("table", "array"):
                inside = stmt.key[:2] == TABLE
                if inside:
                    cut.add(i)
                    # the table ends at its last key/value; comments after it introduce what follows
                    j = i + 1
                    last = i
                    while j < len(stmts) and stmts[j].kind not in ("table", "array"):
                        if stmts[j].kind == "keyval":
                            last = j
                        j += 1
                    cut.update(range(i + 1, last + 1))
                    while last + 1 < len(stmts) and stmts[last + 1].kind == "blank":
                        last += 1
                        cut.add(last)
            elif not inside and stmt.kind == "keyval" and self._defines_tether(stmts, i):
                raise self._not_a_table()  # a dotted or inline definition besides the table
        kept = [text[s.start : s.end] for i, s in enumerate(stmts) if i not in cut]
        new = "".join(kept)
        if stmts and (len(stmts) - 1) in cut:  # cut at the end: drop the blank line tether put before it
            stripped = new.rstrip("\r\n")
            new = stripped + self._newline(text) if stripped.strip() else ""
        expected = copy.deepcopy(data)
        del expected["mcp_servers"][SERVER_NAME]
        self._verify(new, _without_empty_servers(expected), prune=True)
        return new

    @staticmethod
    def _defines_tether(stmts: Sequence[Stmt], index: int) -> bool:
        table: tuple[str, ...] = ()
        for stmt in reversed(stmts[:index]):
            if stmt.kind in ("table", "array"):
                table = stmt.key
                break
        return (table + stmts[index].key)[:2] == TABLE

    @staticmethod
    def _verify(new: str, expected: dict[str, Any], prune: bool = False) -> None:
        try:
            got = tomllib.loads(new)
        except tomllib.TOMLDecodeError:
            got = None
        if got is not None and prune:
            got = _without_empty_servers(got)
        if got != expected:
            raise Problem(
                f"could not be edited safely: changing `[mcp_servers.{SERVER_NAME}]` would alter other "
                "settings (is `mcp_servers` an inline table?); edit the file by hand"
            )

    def equivalent(self, a: str, b: str) -> bool:
        try:
            return _without_empty_servers(parse(a)) == _without_empty_servers(parse(b))
        except Problem:
            return False

    def is_blank(self, text: str) -> bool:
        return not text.strip()
