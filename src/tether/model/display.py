"""Memory text is data: shown anywhere (a terminal, an agent's context, a JSON reply) it cannot act.

A note can come from anyone with push access to the repository, so its text may carry terminal escape
sequences (`ESC [ 2 J` clears the screen, OSC sequences retitle the window or write the clipboard) or
bidirectional overrides that make a line read differently from what it says. Shown to a person or an
agent, those characters are replaced by a visible escape (`\\x1b`, `\\u202e`); in JSON they are written as
`\\u` escapes, which decode to the same data.
"""

from __future__ import annotations

import json
import re

# Not `typing.TYPE_CHECKING`: a session start answered from the index (`tether.quickstart`) prints through
# this module and imports no `typing`; mypy reads any constant of this name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# C0 controls except tab and line breaks, DEL, C1 controls (0x9b is a one-byte CSI on some terminals), and
# the bidirectional embeddings, overrides and isolates (the "Trojan Source" characters). Memory text may not
# hold them (`first_control`, used by validation).
# Lone surrogates too (a CLI argument with a byte that was not UTF-8, a JSON or YAML `\\udcff` escape): they
# are no text, and printing or storing one fails with an encoding error far from where it came in.
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_REFUSED = re.compile(f"[{_CONTROLS}]")
# Every character `str.splitlines` breaks a line at. Besides LF and CR: VT, FF, the file/group/record
# separators and NEL (all controls above), and the Unicode line and paragraph separators, which are not
# controls and which an agent's context, a terminal or a JavaScript string may show as a new line: a
# summary holding one could forge a line of the injected block (`=== Project memory (pinned) ===`).
LINE_BREAKS = "\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"
_LINE_BREAK = re.compile(f"[{LINE_BREAKS}]")
# Shown, a carriage return is escaped too (alone, it sends the cursor back to overwrite the line), and so
# are U+2028/U+2029: only a real line feed starts a line in what tether prints.
_UNSAFE = re.compile(f"[{_CONTROLS}\r\u2028\u2029]")
# Inside JSON text, C0 is already escaped by `json.dumps`; the rest reaches the output raw.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def first_control(text: str) -> re.Match[str] | None:
    """The first character memory text may not hold (tab, line feed and carriage return are allowed)."""
    return _REFUSED.search(text)


def first_line_break(text: str) -> re.Match[str] | None:
    """The first character of `text` that any reader could take for the end of a line.

    >>> first_line_break("one\u2028two").start()
    3
    """
    return _LINE_BREAK.search(text)


def printable(text: str) -> str:
    """`text` with every control character other than tab and newline shown as an escape.

    >>> printable("red \\x1b[31mtext")
    'red \\\\x1b[31mtext'
    """
    return _UNSAFE.sub(_visible, text)


def printable_data(value: Any) -> Any:
    """`printable` applied to every string inside nested dicts, lists and tuples."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {key: printable_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [printable_data(item) for item in value]
    return value


def safe_json(value: Any, **options: Any) -> str:
    """`json.dumps` (non-ASCII kept readable) with the characters above written as `\\u` escapes.

    The result decodes to exactly `value`: an export stays a faithful copy.
    """
    text = json.dumps(value, ensure_ascii=False, **options)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
