"""In-place JSON(C) rewrites: only what changes is rewritten, comments and formatting stay."""

from __future__ import annotations

import json

import pytest

from tether.adapters.install import jsonc

GEMINI = """{
  // the look
  "theme": "GitHub", /* set by hand */
  "mcpServers": {
    "fs": {"command": "npx"} // files
  }
}
"""


@pytest.mark.parametrize(
    ("text", "new", "expected"),
    [
        ("{}", {"a": 1}, '{\n  "a": 1\n}'),
        ('{"a": 1, "b": 2}', {"a": 1}, '{"a": 1}'),
        ('{"a": 1, "b": 2}', {"b": 2}, '{"b": 2}'),
        ('{"a": 1}', {"a": 1, "b": [1]}, '{"a": 1, "b": [1]}'),
        ('{"hooks": {"x": 1}}', {"version": 1, "hooks": {"x": 1}}, '{"version": 1, "hooks": {"x": 1}}'),
        ('{\n  "a": 1,\n  "b": 2\n}', {"b": 2}, '{\n  "b": 2\n}'),
        ('{\n  "a": 1,\n  "b": 2\n}', {"a": 1}, '{\n  "a": 1\n}'),
        (
            '{\n    "a": {"keep": "one line"}\n}',
            {"a": {"keep": "one line"}, "z": {"k": 1}},
            '{\n    "a": {"keep": "one line"},\n    "z": {\n        "k": 1\n    }\n}',
        ),
        ("[1, 2, 3]", [1, 3, 4], "[1, 3, 4]"),
        (
            '{\n  "a": 1, // about a\n  "b": 2 // about b\n}',
            {"a": 1, "x": 0, "b": 2, "y": 3},
            '{\n  "a": 1, // about a\n  "x": 0,\n  "b": 2, // about b\n  "y": 3\n}',
        ),
        ('{\r\n  "a": 1\r\n}\r\n', {"a": 1, "b": [2]}, '{\r\n  "a": 1,\r\n  "b": [\r\n    2\r\n  ]\r\n}\r\n'),
        ('{"a": "x"}', {"a": True}, '{"a": true}'),
    ],
)
def test_rewrite_changes_only_what_differs(text: str, new: object, expected: str) -> None:
    assert jsonc.rewrite(text, new, comments=True) == expected


def test_comments_survive_an_insert_and_a_removal() -> None:
    data = jsonc.loads(GEMINI, comments=True)
    data["mcpServers"]["tether"] = {"command": "tether", "args": ["mcp"]}
    added = jsonc.rewrite(GEMINI, data, comments=True)
    for comment in ("// the look", "/* set by hand */", "// files"):
        assert comment in added
    assert '"fs": {"command": "npx"}, // files\n    "tether": {' in added
    del data["mcpServers"]["tether"]
    assert jsonc.rewrite(added, data, comments=True) == GEMINI


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,\n}', "line 2, column 1; a trailing comma is not allowed"),
        ('{"a": 1 /* open', "comment is never closed (line 1, column 9)"),
        ('{\n  "a": 1\n  "b": 2\n}', "Expecting ',' delimiter at line 3, column 3"),
    ],
)
def test_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(jsonc.Invalid) as caught:
        jsonc.loads(text, comments=True)
    assert message in str(caught.value)


def test_strict_json_refuses_comments_and_strings_keep_slashes() -> None:
    with pytest.raises(jsonc.Invalid):
        jsonc.loads('{"a": 1 // no\n}')
    text = '{"url": "http://x/*y*/", "b": "//"} // real comment'
    assert jsonc.loads(text, comments=True) == {"url": "http://x/*y*/", "b": "//"}


def test_duplicate_keys_cannot_be_edited_in_place() -> None:
    with pytest.raises(jsonc.CannotEdit):
        jsonc.rewrite('{"a": 1, "a": 2}', {"a": 3})


def test_the_result_is_checked() -> None:
    text = json.dumps({"k": list(range(5))}, indent=3)
    new = {"k": [0, 9, 2, 3, 4, 5], "n": None}
    assert json.loads(jsonc.rewrite(text, new)) == new
