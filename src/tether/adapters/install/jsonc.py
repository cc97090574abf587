"""JSON config files edited in place: only the values tether changes are rewritten, comments (JSONC) kept.

    new_text = rewrite(text, new_data, comments=True)

`rewrite` parses the text into spans, compares them with the new data and rebuilds only the objects and
lists whose members changed: every other byte (formatting, one-line objects, key spelling, `//` and `/* */`
comments) is copied. New members are indented like their siblings. The result is parsed again and must
equal the new data, else `CannotEdit` is raised and the caller decides (re-serialise, or refuse).
Gemini CLI reads its settings with comments (`strip-json-comments`); the other agents' files are strict JSON.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any


class CannotEdit(Exception):
    """The text could not be rewritten to the new data without touching something else."""


class Invalid(ValueError):
    """Not valid JSON (or JSONC); the message names the line and column."""


def _position(text: str, at: int) -> str:
    line = text.count("\n", 0, at) + 1
    return f"line {line}, column {at - (text.rfind(chr(10), 0, at) + 1) + 1}"


def blank_comments(text: str) -> str:
    """`text` with each `//` and `/* */` comment replaced by spaces (newlines kept): same offsets, plain JSON."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] not in "\r\n":
                out[i] = " "
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise Invalid(f"a /* comment is never closed ({_position(text, i)})")
            for j in range(i, end + 2):
                if text[j] not in "\r\n":
                    out[j] = " "
            i = end + 2
        else:
            i += 1
    return "".join(out)


def loads(text: str, *, comments: bool = False) -> Any:
    """Parse JSON (with `comments`, JSONC); `Invalid` names the line and column of the first error."""
    plain = blank_comments(text) if comments else text
    try:
        return json.loads(plain)
    except json.JSONDecodeError as exc:
        before = plain[: exc.pos].rstrip()
        hint = (
            "; a trailing comma is not allowed"
            if before.endswith(",") and exc.msg.startswith("Expecting")
            else ""
        )
        raise Invalid(f"{exc.msg} at line {exc.lineno}, column {exc.colno}{hint}") from None


@dataclass
class Node:
    start: int
    end: int
    value: Any
    elements: list[Element] = field(default_factory=list)  # members of an object, items of a list
    inner: int = 0  # just after `{` or `[`
    closing: int = 0  # the `}` or `]`


@dataclass
class Element:
    lead: int  # where the text before it starts (after `{`, `[` or the previous comma)
    start: int
    value: Node
    comma: int | None  # the comma after it, None for the last
    key: str | None = None


_SPACE = re.compile(r"[ \t\r\n]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _string(s: str, i: int) -> tuple[str, int]:
    """The string whose opening quote is at i, and the index after its closing quote."""
    match = _STRING.match(s, i)
    assert match is not None
    return json.loads(match.group(0)), match.end()


_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


def _skip(s: str, i: int) -> int:
    match = _SPACE.match(s, i)
    assert match is not None
    return match.end()


def _parse(s: str, i: int) -> Node:
    """The value at i of `s` (valid JSON: `loads` accepted it), with the spans of everything inside."""
    i = _skip(s, i)
    if s[i] == '"':
        value, end = _string(s, i)
        return Node(i, end, value)
    if s[i] not in "{[":
        match = _SCALAR.match(s, i)
        assert match is not None
        return Node(i, match.end(), json.loads(match.group(0)))
    is_object = s[i] == "{"
    node = Node(i, i, {} if is_object else [], inner=i + 1)
    lead = j = i + 1
    close = "}" if is_object else "]"
    if s[_skip(s, j)] == close:
        node.closing = _skip(s, j)
        node.end = node.closing + 1
        return node
    while True:
        start = _skip(s, lead)
        key: str | None = None
        if is_object:
            key, j = _string(s, start)
            j = _skip(s, j) + 1  # the colon
            if key in node.value:
                raise CannotEdit(f"the key {key!r} appears twice in one object")
        child = _parse(s, j if is_object else start)
        after = _skip(s, child.end)
        comma = after if s[after] == "," else None
        node.elements.append(Element(lead, start, child, comma, key))
        if is_object:
            node.value[key] = child.value
        else:
            node.value.append(child.value)
        if comma is None:
            node.closing = after
            node.end = after + 1
            return node
        lead = comma + 1


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@dataclass
class _Writer:
    text: str
    unit: str
    nl: str

    def line_indent(self, at: int) -> str:
        start = self.text.rfind("\n", 0, at) + 1
        return self.text[start : start + len(self.text[start:at]) - len(self.text[start:at].lstrip(" \t"))]

    def render(self, value: Any, indent: str, inline: bool) -> str:
        if inline:
            return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        text = json.dumps(value, ensure_ascii=False, indent=self.unit)
        return text.replace("\n", self.nl + indent)

    def rewrite(self, node: Node, new: Any) -> str:
        """The new text for `node`'s span."""
        if _same(node.value, new):
            return self.text[node.start : node.end]
        old = node.value
        if isinstance(old, dict) and isinstance(new, dict):
            return self._container(node, self._members(node, new))
        if isinstance(old, list) and isinstance(new, list):
            return self._container(node, self._items(node, new))
        return self.render(new, self.line_indent(node.start), inline=False)

    def _body(self, element: Element, new: Any) -> str:
        head = self.text[element.start : element.value.start]  # `"key": ` for a member
        return head + self.rewrite(element.value, new)

    def _members(self, node: Node, new: dict[str, Any]) -> list[_Part]:
        """Kept members in the file's order, deleted ones left out; a new key goes after the key before it."""
        order = list(new)
        kept = [e for e in node.elements if e.key in new]
        known = {e.key for e in kept}

        def added_after(index: int) -> list[_Part]:
            out: list[_Part] = []
            for key in order[index + 1 :]:
                if key in known:
                    break
                out.append((None, json.dumps(key, ensure_ascii=False) + ": ", new[key]))
            return out

        parts = added_after(-1)
        for element in kept:
            assert element.key is not None
            parts.append((element, self._body(element, new[element.key]), None))
            parts += added_after(order.index(element.key))
        return parts

    def _items(self, node: Node, new: list[Any]) -> list[_Part]:
        old = [json.dumps(e.value.value, sort_keys=True) for e in node.elements]
        matcher = SequenceMatcher(None, old, [json.dumps(v, sort_keys=True) for v in new], autojunk=False)
        parts: list[_Part] = []
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    parts.append((node.elements[i], self._body(node.elements[i], new[j]), None))
            elif op in ("insert", "replace"):
                parts += [(None, "", new[j]) for j in range(j1, j2)]
        return parts

    def _container(self, node: Node, parts: list[_Part]) -> str:
        text = self.text
        leads = [text[e.lead : e.start] for e in node.elements]
        multiline = not node.elements or any("\n" in lead for lead in leads)
        if multiline:  # a new element is indented like its siblings (or one unit deeper than the container)
            sibling = next((lead for lead in reversed(leads) if "\n" in lead), None)
            indent = (
                sibling.rsplit("\n", 1)[1]
                if sibling is not None
                else self.line_indent(node.start) + self.unit
            )
            new_lead = self.nl + indent
        else:
            indent, new_lead = "", " "
        end = node.elements[-1].value.end if node.elements else node.inner
        closing = text[end : node.closing]
        if not node.elements and "\n" not in closing:
            closing = self.nl + self.line_indent(node.start)
        # A comment after an element on its own line (`"a": 1, // why`) belongs to that element: when
        # something is inserted after the element, that rest of the line moves in front of the new one;
        # when the element after it is removed, the rest of the line stays.
        moved: set[int] = set()  # elements (by index) whose lead lost its first line; -1 is the closing

        def first_line(following: str) -> int:
            cut = following.index("\n")
            return cut - 1 if cut and following[cut - 1] == "\r" else cut

        def line_rest(after: Element) -> str:
            index = node.elements.index(after) + 1
            key = index if index < len(leads) else -1
            following = leads[index] if key >= 0 else closing
            if not multiline or "\n" not in following or key in moved:
                return ""
            moved.add(key)
            return following[: first_line(following)]

        kept = {id(element) for element, _, _ in parts if element is not None}
        carried: dict[int, str] = {}  # comments of removed elements' first lines, by the kept index after
        for index, removed in enumerate(node.elements):
            lead = leads[index]
            if id(removed) in kept or "\n" not in lead or not lead[: first_line(lead)].strip():
                continue
            after = next((j for j in range(index + 1, len(leads)) if id(node.elements[j]) in kept), -1)
            carried[after] = carried.get(after, "") + lead[: first_line(lead)]

        def own_lead(element: Element) -> str:
            index = node.elements.index(element)
            lead = text[element.lead : element.start]
            return carried.get(index, "") + (lead[first_line(lead) :] if index in moved else lead)

        chunks: list[str] = []
        previous: Element | None = None
        for i, (element, body, value) in enumerate(parts):
            if element is None:
                lead = leads[0] if i == 0 and leads and not multiline else new_lead
                if previous is not None:
                    lead = line_rest(previous) + lead
                chunks.append(lead + body + self.render(value, indent, inline=not multiline))
                previous = None
                continue
            lead = own_lead(element)
            if not multiline:
                lead = leads[0] if i == 0 else (lead or " ")
            trail = text[element.value.end : element.comma] if element.comma is not None else ""
            chunks.append(lead + body + trail)
            previous = element
        if -1 in moved:
            closing = closing[first_line(closing) :]
        closing = carried.get(-1, "") + closing
        return text[node.start] + ",".join(chunks) + (closing if chunks else "") + text[node.closing]


# One element of a rebuilt container: (kept element, its new text, None) or (None, `"key": ` or "", value).
_Part = tuple[Element | None, str, Any]


def _unit(text: str) -> str:
    match = re.search(r"\n([ \t]+)\S", text)
    if match is None:
        return "  "
    found = match.group(1)
    return "\t" if found.startswith("\t") else " " * len(found)


def rewrite(text: str, new: Any, *, comments: bool = False) -> str:
    """`text` changed to hold `new`, rewriting only what differs (see the module docstring)."""
    plain = blank_comments(text) if comments else text
    root = _parse(plain, 0)
    writer = _Writer(text, _unit(plain), "\r\n" if "\r\n" in text else "\n")
    out = text[: root.start] + writer.rewrite(root, new) + text[root.end :]
    try:
        ok = _same(loads(out, comments=comments), new)
    except Invalid:
        ok = False
    if not ok:
        raise CannotEdit("the rewritten text does not hold the new data")
    return out
