"""Tags and aliases (`tether.model.labels`): Obsidian's frontmatter lists as fields of a tether note.

Kept through parse and render byte for byte, through the index (a sync, an edit, a reindex), shown by
`get`, searchable, and `[[wikilinks]]` resolve by an alias as they do by the summary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Run, note_files
from tether.errors import ValidationError
from tether.model import labels
from tether.notes import format as notes
from tether.workspace import Workspace

Tether = Callable[..., Run]

OBSIDIAN_NOTE = """\
---
id: 5eed0001
summary: Releases go out on Tuesdays after the freeze lifts
category: decision
files: []
tags:
- release
- area/ops
aliases:
- Release runbook
- Shipping day
priority: normal
pinned: false
origin: user
status: active
created: '2026-01-05T10:00:00Z'
updated: '2026-01-05T10:00:00Z'
---

Freeze lifts Monday night; see the checklist.
"""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["#deploy", "Deploy", "area/billing"], ("deploy", "area/billing")),
        ("deploy, infra ops", ("deploy", "infra", "ops")),
        (None, ()),
        ([], ()),
        (["  x-1_y  "], ("x-1_y",)),
    ],
)
def test_tags_are_words_without_their_hash_and_without_repeats(
    value: object, expected: tuple[str, ...]
) -> None:
    assert labels.tags(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["two words"], "a tag is one word"),
        (["2026"], "not only digits"),
        (["a#b"], "a tag is one word"),
        (["x" * 65], "the limit is 64"),
        ([f"t{n}" for n in range(33)], "33 tags, the limit is 32"),
        (["bad\x1b[2J"], "U+001B"),
        (["a\u2028b"], "U+2028"),
        (7, "must be a list of strings"),
        ([1, 2], "must be a list of strings"),
    ],
)
def test_bad_tags_say_what_is_wrong(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        labels.tags(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["see [[other]]"], "a [[wikilink]] could not name it"),
        (["a|b"], "could not name it"),
        (["two\nlines"], "one line"),
        (["x" * 161], "the limit is 160"),
    ],
)
def test_bad_aliases_say_what_is_wrong(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        labels.aliases(value)


def test_an_obsidian_note_round_trips_byte_for_byte_and_older_notes_are_unchanged() -> None:
    memory = notes.parse(OBSIDIAN_NOTE, "n.md", "project")
    assert memory.tags == ("release", "area/ops")
    assert memory.aliases == ("Release runbook", "Shipping day")
    assert notes.render(memory) == OBSIDIAN_NOTE
    # A note without them is written without the keys, as before.
    plain = notes.render(memory.with_changes(tags=(), aliases=()))
    assert "tags:" not in plain and "aliases:" not in plain
    # Obsidian's other spellings: one string, inline lists, a leading #.
    inline = OBSIDIAN_NOTE.replace("tags:\n- release\n- area/ops\n", "tags: '#release, area/ops'\n").replace(
        "aliases:\n- Release runbook\n- Shipping day\n", "aliases: Release runbook\n"
    )
    parsed = notes.parse(inline, "n.md", "project")
    assert (parsed.tags, parsed.aliases) == (("release", "area/ops"), ("Release runbook",))


def test_tags_and_aliases_survive_the_index_are_shown_and_searchable(
    repo: Path, home: Path, tether: Tether
) -> None:
    note = repo / ".tether" / "memories" / "5eed0001-releases.md"
    note.write_text(OBSIDIAN_NOTE, encoding="utf-8")
    got = json.loads(tether("get", "5eed", "--json").out)
    assert got["tags"] == ["release", "area/ops"] and got["aliases"] == ["Release runbook", "Shipping day"]
    text = tether("get", "5eed0001").out
    assert "tags: #release #area/ops" in text and "aliases: Release runbook; Shipping day" in text
    # Found by a tag and by an alias, words that are nowhere else in the memory.
    for query in ("ops", "runbook", "shipping"):
        found = json.loads(tether("search", query, "--json").out)
        assert [hit["id"] for hit in found][:1] == ["5eed0001"], (query, found)
    # An edit of another field, a reindex and an export keep them; the note is rewritten with them.
    assert tether("edit", "5eed0001", "--summary", "Releases go out on Wednesdays").code == 0
    assert tether("reindex").code == 0
    after = notes.parse(note.read_text(encoding="utf-8"), str(note), "project")
    assert (after.summary, after.tags, after.aliases) == (
        "Releases go out on Wednesdays",
        ("release", "area/ops"),
        ("Release runbook", "Shipping day"),
    )
    exported = [json.loads(line) for line in tether("export").out.splitlines()]
    assert exported[0]["tags"] == ["release", "area/ops"]


def test_cli_add_and_edit_set_tags_and_aliases(repo: Path, tether: Tether) -> None:
    added = json.loads(
        tether("add", "Billing retries are capped", "--tag", "#billing", "--alias", "Retry cap", "--json").out
    )
    assert added["tags"] == ["billing"] and added["aliases"] == ["Retry cap"]
    [path] = note_files(repo)
    assert "tags:\n- billing\naliases:\n- Retry cap\n" in path.read_text(encoding="utf-8")
    edited = json.loads(tether("edit", added["id"], "--tag", "payments", "--tag", "ops", "--json").out)
    assert edited["tags"] == ["payments", "ops"] and edited["aliases"] == ["Retry cap"]
    cleared = json.loads(tether("edit", added["id"], "--alias", "", "--json").out)
    assert cleared["aliases"] == [] and cleared["tags"] == ["payments", "ops"]
    bad = tether("add", "Another fact", "--tag", "two words")
    assert bad.code == 1 and "a tag is one word" in bad.err


def test_wikilinks_resolve_by_alias_as_by_title_and_id(repo: Path, home: Path, ws: Workspace) -> None:
    (repo / ".tether" / "memories" / "5eed0001-releases.md").write_text(OBSIDIAN_NOTE, encoding="utf-8")
    ws.sync()
    by_alias = ws.add("Hotfixes skip the freeze", details="Unlike [[release runbook|the usual day]].").memory
    by_title = ws.add(
        "Tag the release commit", details="See [[Releases go out on Tuesdays after the freeze lifts]]."
    ).memory
    by_id = ws.add("Announce in #eng", details="After [[5eed0001]].").memory
    target = ws.get("5eed0001")
    for source in (by_alias, by_title, by_id):
        outgoing, _ = ws.links(source)
        assert [m.id for m in outgoing] == ["5eed0001"], source.details
    exact = ws.add("Ops checks the dashboard", details="Before [[Shipping day]].").memory
    # Case and spacing aside, as Obsidian resolves them: by alias and by title, both ways.
    loose = ws.add(
        "QA signs off",
        details="Per [[SHIPPING  DAY]] and [[releases go out on tuesdays after the freeze lifts]].",
    ).memory
    assert [m.id for m in ws.links(loose)[0]] == ["5eed0001"]
    _, incoming = ws.links(target)
    assert {by_alias.id, by_title.id, by_id.id, exact.id, loose.id} == {m.id for m in incoming}
    # A title wins over another note's alias of the same words.
    twin = ws.add("Shipping day", details="The day itself.").memory
    assert [m.id for m in ws.links(exact)[0]] == [twin.id]


def test_a_note_with_a_hostile_tag_is_skipped_and_reported(repo: Path, tether: Tether) -> None:
    hostile = OBSIDIAN_NOTE.replace("- release\n", '- "rel\\e[2Jease"\n')
    (repo / ".tether" / "memories" / "5eed0001-releases.md").write_text(hostile, encoding="utf-8")
    listed = tether("list")
    assert "5eed0001" not in listed.out and "U+001B" in listed.err
    assert "\x1b" not in listed.err  # shown escaped, never obeyed
