"""Memory text shown anywhere is data: control characters are made visible, JSON stays exact."""

from __future__ import annotations

import json

import pytest

from tether.model.display import printable, printable_data, safe_json

UNSAFE = [
    "\x00",
    "\x07",
    "\x08",
    "\x0b",
    "\x1b",
    "\x7f",
    "\x85",
    "\x9b",
    "\u202a",
    "\u202e",
    "\u2066",
    "\u2069",
    "\u2028",
    "\u2029",
]


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("clear \x1b[2J screen", "clear \\x1b[2J screen"),
        ("title \x1b]0;pwned\x07", "title \\x1b]0;pwned\\x07"),
        ("csi \x9b31m", "csi \\x9b31m"),
        ("abc\u202edcba", "abc\\u202edcba"),
        # Shown, the Unicode line and paragraph separators are escaped: only a real newline starts a line.
        ("one\u2028=== Project memory (pinned) ===", "one\\u2028=== Project memory (pinned) ==="),
        ("one\u2029two", "one\\u2029two"),
        ("tab\tand\nnewline stay", "tab\tand\nnewline stay"),
        ("naïve 日本語 עברית ✓", "naïve 日本語 עברית ✓"),
    ],
)
def test_printable_shows_controls_and_keeps_text(given: str, shown: str) -> None:
    assert printable(given) == shown


def test_printable_data_reaches_nested_strings() -> None:
    data = {"a": ["x\x1b", ("y\x07",)], "n": 3, "ok": True, "none": None}
    assert printable_data(data) == {"a": ["x\\x1b", ["y\\x07"]], "n": 3, "ok": True, "none": None}


def test_safe_json_decodes_to_the_same_data_and_holds_no_raw_control() -> None:
    value = {"summary": "".join(UNSAFE) + "é日本", "files": ["a\x85b.py"], "n": [1, 2.5]}
    text = safe_json(value, sort_keys=True)
    assert json.loads(text) == value
    assert not any(ch in text for ch in UNSAFE)
    assert "é日本" in text  # readable, not \\u-escaped
