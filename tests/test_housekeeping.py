"""`tether.lifecycle.housekeeping`: what session start does, each pass on its own, and memories following
renamed files and directories (from any working directory)."""

from __future__ import annotations

from pathlib import Path

from conftest import git
from tether.lifecycle.housekeeping import end_session, maintain, moved_directory, refresh_repo
from tether.notes import format as notes
from tether.store.base import Query
from tether.workspace import Workspace


def test_a_memory_follows_its_renamed_file_even_from_a_subdirectory(repo: Path, home: Path) -> None:
    (repo / "src" / "app" / "deep").mkdir()
    with Workspace.open(repo, home=home) as ws:
        memory = ws.add("Uploads retry", files=["src/app/upload.py"]).memory
        refresh_repo(ws)
    git(repo, "mv", "src/app/upload.py", "src/app/uploader.py")
    git(repo, "commit", "-q", "-m", "rename")
    # An agent session (or a command) started in a subdirectory: paths stay repo-relative.
    with Workspace.open(repo / "src" / "app" / "deep", home=home) as ws:
        moved = refresh_repo(ws).renamed
        assert moved == [(memory.id, "src/app/upload.py", "src/app/uploader.py")]
        now = ws.get(memory.id)
        assert now.files == ("src/app/uploader.py",)
        assert notes.read(Path(ws.store.note_path(memory.id) or ""), "project").files == (
            "src/app/uploader.py",
        )
        assert next(e.event for e in ws.store.events(memory.id)) == "renamed"


def test_a_directory_ref_follows_when_its_files_moved_together(repo: Path, home: Path) -> None:
    with Workspace.open(repo, home=home) as ws:
        memory = ws.add("The app package is the public API", files=["src/app/"]).memory
        refresh_repo(ws)
    git(repo, "mv", "src/app", "src/core")
    git(repo, "commit", "-q", "-m", "move the package")
    with Workspace.open(repo, home=home) as ws:
        refresh_repo(ws)
        assert ws.get(memory.id).files == ("src/core/",)


def test_a_hook_skips_a_refresh_made_moments_ago_at_the_same_head(repo: Path, home: Path) -> None:
    with Workspace.open(repo, home=home) as ws:
        memory = ws.add("Uploads retry", files=["src/app/upload.py"]).memory
        refresh_repo(ws)
        repo_map = ws.repo_map()
        assert repo_map is not None and repo_map.fresh(3600)
        (repo / "src" / "app" / "new.py").write_text("import app.upload\n", encoding="utf-8")
        refresh_repo(ws, in_hook=True)  # nothing new at HEAD, refreshed a moment ago: skipped
        assert not repo_map.tables.present("src/app/new.py")
        assert repo_map.exists("src/app/new.py")  # an appeared file is still seen, by one lstat
        git(repo, "mv", "src/app/upload.py", "src/app/uploader.py")
        git(repo, "commit", "-q", "-m", "rename")
        assert not repo_map.fresh(3600)  # HEAD moved
        assert refresh_repo(ws, in_hook=True).renamed == [
            (memory.id, "src/app/upload.py", "src/app/uploader.py")
        ]


def test_moved_directory_needs_one_consistent_target() -> None:
    assert moved_directory("a/", [("a/x.py", "b/x.py"), ("a/y/z.py", "b/y/z.py")]) == "b/"
    assert moved_directory("a/", [("a/x.py", "b/x.py"), ("a/y.py", "c/y.py")]) is None
    assert moved_directory("a/", [("a/x.py", "a/renamed.py")]) is None
    assert moved_directory("a/", [("other/x.py", "b/x.py")]) is None


def test_maintain_runs_every_pass_even_when_one_fails(ws: Workspace, repo: Path) -> None:
    (repo / "AGENTS.md").write_bytes(b"\xff\xfe not utf-8")  # the rules pass reports, the others still run
    pinned = ws.add("Deploys need a ticket", pinned=True).memory
    report = maintain(ws)
    assert report.archived == [] and ws.get(pinned.id).pinned
    log = (ws.paths.logs / "tether.log").read_text(encoding="utf-8")
    assert "rules sync" in log or "rules pass failed" in log


def test_end_session_drops_that_sessions_memory_only(ws: Workspace) -> None:
    mine = ws.add("scratch: trying approach B", scope="session", session="s1").memory
    other = ws.add("scratch: approach A", scope="session", session="s2").memory
    end_session(ws, "s1", transcript="")
    left = [m.id for m in ws.find(Query(status=None, scope="session"))]
    assert mine.id not in left and other.id in left
