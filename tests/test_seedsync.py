"""Seed files as versioned data: stable names per entry, edits in place, removals archived, on a real
workspace (notes and SQLite index) in a real git repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.errors import SecretError, ValidationError
from tether.intake.seeds import read_seed_file
from tether.intake.seedsync import seed
from tether.store.base import Query
from tether.workspace import Workspace


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def seeded(ws: Workspace) -> dict[str, tuple[str, str, str]]:
    """id -> (summary, status, details) of every seeded memory."""
    return {m.id: (m.summary, m.status, m.details) for m in ws.find(Query(status=None, origin="seed"))}


def test_version_key_is_accepted_and_entries_are_named(tmp_path: Path) -> None:
    path = write(
        tmp_path / "seeds.json",
        {
            "version": 3,
            "memories": [{"key": "deploy", "summary": "Deploys on Tuesdays"}, {"summary": "Use uv"}],
        },
    )
    (deploy, uv) = read_seed_file(path)
    assert deploy[0] == "key deploy" and deploy[1].summary == "Deploys on Tuesdays"
    assert uv[0].startswith("text ")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"version": [1], "memories": []}, "version: expected a number or text"),
        ({"version": 1, "memories": [], "extra": 1}, "keys extra, memories, version"),
        (
            {"memories": [{"id": "a", "summary": "x"}, {"key": "a", "summary": "y"}]},
            r"memories\[1\]: the same key",
        ),
        ({"memories": [{"id": "a", "key": "b", "summary": "x"}]}, "an id or a key, not both"),
        ({"memories": [{"key": "", "summary": "x"}]}, r"memories\[0\]\.key: one line"),
    ],
)
def test_bad_versions_and_names_are_refused(tmp_path: Path, data: object, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        read_seed_file(write(tmp_path / "seeds.json", data))


def test_an_edited_entry_updates_its_memory_in_place(ws: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "seeds.json"
    write(path, {"version": 1, "memories": [{"id": "deploy", "summary": "Deploys happen on Tuesdays"}]})
    first = seed(ws, path)
    (mid,) = first.added
    again = seed(ws, path)
    assert (again.added, again.updated, again.unchanged) == ([], [], 1)

    write(
        path,
        {
            "version": 2,
            "memories": [
                {"id": "deploy", "summary": "Deploys happen on Thursdays", "category": "decision"},
            ],
        },
    )
    report = seed(ws, path)
    assert report.updated == [mid] and report.added == []
    memory = ws.get(mid)
    assert (memory.summary, memory.category, memory.status) == (
        "Deploys happen on Thursdays",
        "decision",
        "active",
    )
    assert memory.details == "Seed from seeds.json, key deploy"
    assert len(seeded(ws)) == 1  # no duplicate
    assert len(list((ws.root / ".tether" / "memories").glob("*.md"))) == 1  # type: ignore[operator]


def test_a_removed_entry_is_archived_and_restored_when_it_returns(ws: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "seeds.json"
    entries = [{"key": "a", "summary": "Fact A"}, {"key": "b", "summary": "Fact B"}]
    write(path, entries)
    ids = seed(ws, path).added
    write(path, entries[:1])
    report = seed(ws, path)
    assert report.archived == [ids[1]] and ws.get(ids[1]).status == "archived"
    assert ws.get(ids[0]).status == "active"
    write(path, entries)
    back = seed(ws, path)
    assert back.restored == [ids[1]] and ws.get(ids[1]).status == "active" and back.added == []


def test_a_person_archiving_a_seed_is_not_undone(ws: Workspace, tmp_path: Path) -> None:
    path = write(tmp_path / "seeds.json", [{"key": "a", "summary": "Fact A"}])
    (mid,) = seed(ws, path).added
    ws.archive(mid, reason="not true any more")
    report = seed(ws, path)
    assert report.restored == [] and ws.get(mid).status == "archived"


def test_an_edited_keyless_entry_is_remove_plus_add(ws: Workspace, tmp_path: Path) -> None:
    path = write(tmp_path / "seeds.json", [{"summary": "Run make test"}])
    (old,) = seed(ws, path).added
    write(path, [{"summary": "Run make check"}])
    report = seed(ws, path)
    assert report.archived == [old] and len(report.added) == 1
    assert ws.get(report.added[0]).summary == "Run make check"


def test_other_seed_files_are_left_alone(ws: Workspace, tmp_path: Path) -> None:
    one = write(tmp_path / "one.json", [{"key": "a", "summary": "From one"}])
    two = write(tmp_path / "two.json", [{"key": "a", "summary": "From two"}])
    (a,) = seed(ws, one).added
    (b,) = seed(ws, two).added
    write(two, [])
    assert seed(ws, two).archived == [b]
    assert ws.get(a).status == "active"


def test_seeds_from_before_names_are_adopted(ws: Workspace, tmp_path: Path) -> None:
    legacy = ws.add("Deploys happen on Tuesdays", origin="seed").memory
    path = write(tmp_path / "seeds.json", [{"key": "deploy", "summary": "Deploys happen on Tuesdays"}])
    report = seed(ws, path)
    assert report.updated == [legacy.id] and report.added == []
    assert ws.get(legacy.id).details == "Seed from seeds.json, key deploy"


def test_an_entry_moving_scope_is_a_new_memory(ws: Workspace, tmp_path: Path) -> None:
    path = write(tmp_path / "seeds.json", [{"key": "k", "summary": "Prefers tabs"}])
    (old,) = seed(ws, path).added
    write(path, [{"key": "k", "summary": "Prefers tabs", "scope": "user"}])
    report = seed(ws, path)
    assert report.archived == [old] and len(report.added) == 1
    assert ws.get(report.added[0]).scope == "user"


def test_a_credential_in_an_edit_is_refused_and_nothing_changes(ws: Workspace, tmp_path: Path) -> None:
    path = write(tmp_path / "seeds.json", [{"key": "ci", "summary": "CI token lives in the vault"}])
    (mid,) = seed(ws, path).added
    token = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
    write(path, [{"key": "ci", "summary": "CI token", "details": f"it is {token}"}])
    with pytest.raises(SecretError):
        seed(ws, path)
    assert ws.get(mid).summary == "CI token lives in the vault"
