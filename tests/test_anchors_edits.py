"""Edit locations from each agent's payload, located in the file on disk."""

from __future__ import annotations

import pytest

from tether.anchors.edits import Edit, from_payload, locate, locations, parse_patch

TEXT = "import os\n\n\ndef charge():\n    key = new_key()\n    return post(key)\n\n\ndef refund():\n    return 1\n"


def test_an_old_string_is_located_at_the_lines_that_change_not_its_context() -> None:
    edit = Edit(
        "a.py",
        old="    key = new_key()\n    return post(key)",
        new="    key = new_key()\n    return post(key, retry=False)",
    )
    assert locate(edit, TEXT) == [(6, 6)]
    insertion = Edit("a.py", old="def refund():\n    return 1", new="def refund():\n    log()\n    return 1")
    assert locate(insertion, TEXT) == [(9, 10)]  # between the two lines it goes between
    assert locate(Edit("a.py", old="nowhere", new="x"), TEXT) == []
    assert locate(Edit("a.py", old="return", new="yield", all=True), TEXT) == [(6, 6), (10, 10)]
    # a model re-indenting the old text still finds it
    assert locate(Edit("a.py", old="def refund():\n  return 1", new="def refund():\n  return 2"), TEXT) == [
        (10, 10)
    ]


def test_a_whole_file_write_is_located_where_it_first_differs() -> None:
    new = TEXT.replace("return 1", "return 2")
    assert locate(Edit("a.py", new=new, whole=True), TEXT) == [(10, 10)]
    assert locate(Edit("a.py", new=TEXT, whole=True), TEXT) == []


def test_codex_patches_give_one_edit_per_hunk_of_updated_files() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/a.py\n@@ def refund():\n-    return 1\n+    return 2\n"
        "@@\n def charge():\n-    key = new_key()\n+    key = old_key()\n"
        "*** Add File: src/new.py\n+print(1)\n*** Delete File: src/old.py\n*** End Patch"
    )
    edits = parse_patch(patch)
    assert [e.path for e in edits] == ["src/a.py", "src/a.py"]
    assert [locate(e, TEXT) for e in edits] == [[(10, 10)], [(5, 5)]]
    only_added = parse_patch(
        "*** Begin Patch\n*** Update File: a.py\n@@\n def refund():\n+    log()\n     return 1\n*** End Patch"
    )
    assert locate(only_added[0], TEXT) == [(9, 10)]


@pytest.mark.parametrize(
    "tool, tool_input, expected",
    [
        ("Edit", {"file_path": "/r/a.py", "old_string": "a", "new_string": "b"}, [Edit("/r/a.py", "a", "b")]),
        ("Write", {"file_path": "/r/a.py", "content": "x"}, [Edit("/r/a.py", new="x", whole=True)]),
        (
            "MultiEdit",
            {"file_path": "/r/a.py", "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c"}]},
            [Edit("/r/a.py", "a", "b"), Edit("/r/a.py", "c", "")],
        ),
        (
            "replace",
            {"file_path": "/r/a.py", "old_string": "a", "new_string": "b", "allow_multiple": True},
            [Edit("/r/a.py", "a", "b", all=True)],
        ),
        ("write_file", {"file_path": "/r/a.py", "content": "x"}, [Edit("/r/a.py", new="x", whole=True)]),
        ("Read", {"file_path": "/r/a.py"}, []),
    ],
)
def test_each_agents_payload_gives_its_edits(
    tool: str, tool_input: dict[str, object], expected: list[Edit]
) -> None:
    assert from_payload(tool, tool_input) == expected


def test_locations_read_each_file_once_and_skip_missing_ones() -> None:
    reads: list[str] = []

    def read(path: str) -> str | None:
        reads.append(path)
        return TEXT if path == "a.py" else None

    edits = [
        Edit("a.py", old="return 1", new="return 2"),
        Edit("a.py", old="key = new_key()", new="k"),
        Edit("b.py", old="x", new="y"),
    ]
    found = locations(edits, read)
    assert [(p.path, p.lines, p.text) for p in found] == [
        ("a.py", (10, 10), "return 2"),
        ("a.py", (5, 5), "k"),
    ]
    assert reads == ["a.py", "b.py"]
