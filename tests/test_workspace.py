"""The library API every adapter uses: project layout, lifecycle of a memory, export/import, doctor."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import git, index_ids, make_git_repo, note_files
from tether.errors import NoProjectError, NotFoundError, ValidationError
from tether.project import find_project_root, init_project, resolve, user_home
from tether.store.base import Query
from tether.workspace import Workspace


def test_init_walks_up_to_the_git_root(tmp_path: Path, home: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    paths, created = init_project(repo / "src" / "app", home)
    assert created and paths.root == repo
    tether = repo / ".tether"
    assert (tether / "memories").is_dir() and (tether / "config.toml").is_file()
    ignored = (tether / ".gitignore").read_text(encoding="utf-8").split()
    assert {"index.db*", "logs/", ".lock"} <= set(ignored)
    again, created_again = init_project(repo, home)
    assert not created_again and again.root == repo
    # git itself agrees the derived files are ignored and the notes are not.
    with Workspace.open(repo, home=home) as ws:
        ws.add("Committed with the repo")
    status = git(repo, "status", "--porcelain", "--untracked-files=all", ".tether")
    listed = sorted(line[3:] for line in status.splitlines())
    assert listed == [
        ".tether/.gitignore",
        ".tether/config.toml",
        f".tether/memories/{note_files(repo)[0].name}",
    ]


def test_project_is_found_from_a_subdirectory_but_not_above_git(tmp_path: Path, home: Path) -> None:
    outer = tmp_path / "outer"
    init_project(outer, home)  # not a git repo: .tether/ lands in the directory itself
    inner = make_git_repo(outer / "inner")
    assert find_project_root(inner / "src") is None, "a parent's .tether/ must not capture a nested repo"
    with pytest.raises(NoProjectError, match="run `tether init`"):
        resolve(inner, home, require_project=True)
    init_project(inner / "src", home)
    assert find_project_root(inner / "src" / "app") == inner


def test_tether_home_relocates_user_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "th"))
    assert user_home() == tmp_path / "th"
    monkeypatch.delenv("TETHER_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert user_home() == tmp_path / "xdg" / "tether"


def test_supersede_chain(ws: Workspace) -> None:
    old = ws.add("Deploy with fabric").memory
    new = ws.add("Deploy with ansible", supersedes=old.id).memory
    assert ws.get(old.id).status == "superseded"
    assert [m.id for m in ws.find()] == [new.id]
    assert [m.id for m in ws.chain(new)] == [old.id]
    assert [m.id for m in ws.chain(ws.get(old.id))] == [new.id]
    assert [r.memory.id for r in ws.search("deploy")] == [new.id]
    with pytest.raises(NotFoundError, match="no memory 0000ffff"):
        ws.add("Replaces nothing", supersedes="0000ffff")
    assert "Replaces nothing" not in {m.summary for m in ws.find(Query(status=None))}


def test_archive_restore_delete(repo: Path, ws: Workspace) -> None:
    memory = ws.add("Temporary workaround for the flaky test").memory
    ws.archive(memory.id)
    assert ws.find() == [] and ws.get(memory.id).status == "archived"
    assert "status: archived" in note_files(repo)[0].read_text(encoding="utf-8")
    ws.restore(memory.id)
    assert [m.id for m in ws.find()] == [memory.id]
    ws.delete(memory.id)
    assert note_files(repo) == [] and index_ids(repo) == set()
    with pytest.raises(NotFoundError):
        ws.get(memory.id)


def test_pin_and_edit_write_the_note_and_count_as_acted(repo: Path, ws: Workspace) -> None:
    memory = ws.add("Run migrations before tests", files=["Makefile"]).memory
    ws.pin(memory.id)
    edited = ws.edit(memory.id, details="Because the fixtures assume the latest schema.", files=["docs/"])
    assert edited.pinned and edited.files == ("docs/",)
    text = note_files(repo)[0].read_text(encoding="utf-8")
    assert "pinned: true" in text and "- docs/" in text and "latest schema" in text
    assert ws.store.telemetry([memory.id])[memory.id].acted == 2
    assert ws.edit(memory.id, files=["docs"]) == edited, "an edit that changes nothing writes nothing"


def test_edit_of_summary_keeps_the_note_file_name(repo: Path, ws: Workspace) -> None:
    memory = ws.add("Old words").memory
    name = note_files(repo)[0].name
    ws.edit(memory.id, summary="New words")
    assert [p.name for p in note_files(repo)] == [name]


def test_wikilinks_both_ways(ws: Workspace) -> None:
    target = ws.add("The deploy checklist").memory
    source = ws.add("Before release", details=f"Follow [[{target.id}]].").memory
    outgoing, incoming = ws.links(source)
    assert [m.id for m in outgoing] == [target.id] and incoming == []
    outgoing, incoming = ws.links(target)
    assert outgoing == [] and [m.id for m in incoming] == [source.id]


def test_export_import_round_trip_is_exact(repo: Path, home: Path, ws: Workspace, tmp_path: Path) -> None:
    a = ws.add("Prefer small PRs", category="pref", pinned=True).memory
    b = ws.add(
        "Auth tokens expire hourly",
        category="gotcha",
        files=["src/app/auth.py", "src/"],
        details="See [[" + a.id + "]].\n\nUnicode: naïve café ✓",
        priority="high",
    ).memory
    c = ws.add("Old decision", category="decision").memory
    ws.add("New decision", category="decision", supersedes=c.id)
    ws.archive(b.id)
    ws.add("Personal habit", scope="user")
    ws.add("only this session", scope="session", session="s1")
    first = [json.dumps(d, sort_keys=True) for d in ws.export()]
    assert len(first) == 5  # session memory is not exported

    other_home = tmp_path / "home2"
    fresh = make_git_repo(tmp_path / "fresh")
    init_project(fresh, other_home)
    with Workspace.open(fresh, home=other_home) as target:
        assert target.import_lines(first) == (5, 0)
        assert target.import_lines(first) == (0, 5), "importing twice is idempotent"
    with Workspace.open(fresh, home=other_home) as target:
        second = [json.dumps(d, sort_keys=True) for d in target.export()]
    assert second == first


def test_import_validates_every_line_before_writing_any(repo: Path, ws: Workspace) -> None:
    good = json.dumps(
        {
            "id": "00000001",
            "summary": "fine",
            "created": "2026-01-01T00:00:00Z",
            "updated": "2026-01-01T00:00:00Z",
        }
    )
    bad = json.dumps(
        {
            "id": "00000002",
            "summary": "bad",
            "category": "rumour",
            "created": "2026-01-01T00:00:00Z",
            "updated": "2026-01-01T00:00:00Z",
        }
    )
    with pytest.raises(ValidationError, match="line 2: invalid category 'rumour'"):
        ws.import_lines([good, bad])
    with pytest.raises(ValidationError, match="line 1: not a tether memory"):
        ws.import_lines(["{not json"])
    assert note_files(repo) == [] and index_ids(repo) == set()


def test_import_refuses_conflicting_ids(repo: Path, ws: Workspace) -> None:
    memory = ws.add("Original").memory
    line = json.dumps(
        {
            "id": memory.id,
            "summary": "Imposter",
            "created": "2026-01-01T00:00:00Z",
            "updated": "2026-01-01T00:00:00Z",
        }
    )
    with pytest.raises(ValidationError, match=f"already exist with different content \\({memory.id}\\)"):
        ws.import_lines([line])
    assert ws.get(memory.id).summary == "Original"


def test_doctor_reports_dead_refs_and_missing_vectors(repo: Path, ws: Workspace) -> None:
    alive = ws.add("About upload", files=["src/app/upload.py"]).memory
    dead = ws.add("About a file that goes away", files=["docs/deploy.md"]).memory
    git(repo, "rm", "-q", "docs/deploy.md")
    git(repo, "commit", "-q", "-m", "drop deploy doc")
    ws.store.put_vectors("other-1", [(alive.id, [1.0])])
    report = ws.doctor()
    kinds = {(p.kind, p.where) for p in report.problems}
    assert ("dead-ref", dead.id) in kinds and ("dead-ref", alive.id) not in kinds
    assert ("index", str(ws.paths.index)) in kinds
    assert report.memories == 2 and report.notes == 2


def test_open_without_project_needs_init(tmp_path: Path, home: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=plain, check=True)
    with pytest.raises(NoProjectError, match="tether init"):
        Workspace.open(plain, home=home)
    with Workspace.open(plain, home=home, require_project=False) as ws:
        assert ws.add("user-level fact", scope="user").created
        with pytest.raises(NoProjectError, match="--scope user"):
            ws.add("project fact")


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_cli_rebuilds_a_damaged_index_from_the_notes(repo: Path, tether, damage: str) -> None:  # type: ignore[no-untyped-def]
    # The index is derived: a damaged one must not lock the user out of `list`, `reindex` or `doctor`.
    added = json.loads(tether("add", "Uploads are chunked at 5 MB", "--json").out)["id"]
    tether("list")
    index = repo / ".tether" / "index.db"
    for suffix in ("-wal", "-shm"):
        index.with_name(index.name + suffix).unlink(missing_ok=True)
    if damage == "garbage":
        index.write_bytes(b"not a database" * 500)
    else:
        index.write_bytes(index.read_bytes()[:100] + b"\0" * 3000)
    done = tether("list")
    assert done.code == 0, done.err
    assert added in done.out
    assert "damaged" in done.err
    assert list(index.parent.glob("index.db.damaged-*"))


def _line(**fields: object) -> str:
    return json.dumps(
        {
            "id": "0000000a",
            "summary": "fine",
            "created": "2026-01-01T00:00:00Z",
            "updated": "2026-01-01T00:00:00Z",
        }
        | fields
    )


def test_import_refuses_credentials_like_every_other_write(repo: Path, ws: Workspace) -> None:
    # `tether import` wrote straight to the notes: no secret check, unlike add, MCP, seeds and the UI.
    token = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
    with pytest.raises(ValidationError, match="line 2: refused: the text looks like a credential"):
        ws.import_lines([_line(), _line(id="0000000b", details=f"export GH_TOKEN={token}")])
    assert note_files(repo) == [] and index_ids(repo) == set()
    assert ws.import_lines([_line(id="0000000b", details=f"export GH_TOKEN={token}")], allow_secret=True) == (
        1,
        0,
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pinned": "false"}, "pinned: expected true or false, got a string 'false'"),
        ({"pinned": 1}, "pinned: expected true or false"),
        ({"details": None}, "details: expected a string, got null"),
        ({"summary": None}, "summary: expected a string, got null"),
        ({"summary": 42}, "summary: expected a string"),
        ({"category": True}, "category: expected a string, got true or false"),
        ({"files": "src/app.py"}, "files: expected a list"),
        ({"files": ["ok.py", 3]}, "files[1]: expected a string"),
        ({"supersedes": 12345678}, "supersedes: expected a string or null"),
        ({"created": 20260101}, "created: expected a string"),
        ({"created": "last tuesday"}, "invalid date"),
        ({"created": "0001-01-01T00:00:00+05:00"}, "invalid date ('0001-01-01T00:00:00+05:00' is outside"),
        ({"id": None}, "id: expected a string"),
    ],
)
def test_import_types_are_strict(repo: Path, ws: Workspace, fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=f"line 1: {re.escape(message)}"):
        ws.import_lines([_line(**fields)])
    assert note_files(repo) == []


def test_import_of_a_line_that_is_not_an_object_names_the_line(ws: Workspace) -> None:
    for line in ("[1, 2]", '"text"', "null", "[" * 100_000):
        with pytest.raises(ValidationError, match="line 1: "):
            ws.import_lines([line])
