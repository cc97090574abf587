"""A session start in its own process leaves the note scan, the repo map and the due passes of a large
project to a detached process, and still answers; that process does the work, and the next session
start says what it found. Real notes, a real git repository, a real detached `tether maintain --background`.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import git
from tether.adapters import hooks
from tether.adapters.hooks.session import session_state
from tether.lifecycle import background
from tether.lifecycle.housekeeping import BACKGROUND_DONE, refresh_repo, run_background
from tether.lifecycle.passes import META_HINTS
from tether.notes.stamps import SCANNED
from tether.workspace import Workspace

WAIT_SECONDS = 60.0


def start(repo: Path, session: str) -> str:
    """A session start hook, in this process (the background process it may start is a real one)."""
    payload = {
        "session_id": session,
        "cwd": str(repo),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    out = io.StringIO()
    assert hooks.main(["claude", "SessionStart"], stdin=io.StringIO(json.dumps(payload)), stdout=out) == 0
    return out.getvalue()


def background_runs(repo: Path) -> int:
    log = repo / ".tether" / "logs" / "tether.log"
    return log.read_text(encoding="utf-8").count(BACKGROUND_DONE) if log.exists() else 0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def edit_in_place(note: Path, old: str, new: str) -> None:
    """What an editor that saves in place does: the same inode rewritten, the directory left alone."""
    directory = note.parent.stat().st_mtime_ns
    with open(note, "r+", encoding="utf-8") as handle:
        text = handle.read().replace(old, new)
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    assert note.parent.stat().st_mtime_ns == directory


def test_a_large_project_s_in_place_edit_is_found_by_the_background_scan(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "HOOK_MAX_NOTES", 1)
    with Workspace.open(repo, home=home) as ws:
        pinned = ws.add("Staging API is on port 6443", category="context", pinned=True).memory
        ws.add("Deploys go through make ship", category="context")
        ws.store.set_meta(SCANNED, "0 2")  # the last scan of every note was long ago
        note = Path(ws.store.note_path(pinned.id) or "")
    edit_in_place(note, "port 6443", "port 7443")

    first = start(repo, "s1")
    assert "6443" in first  # answered from the index as it was: the scan went to the background
    wait_for(lambda: background_runs(repo) == 1, "the background pass")
    with Workspace.open(repo, home=home, light=True, sync_notes=False) as ws:
        assert ws.get(pinned.id).summary == "Staging API is on port 7443"
    assert "7443" in start(repo, "s2")  # a scan under a minute old: trusted, nothing left to the background
    assert background_runs(repo) == 1


def test_a_small_project_s_session_start_scans_in_place_edits_itself(repo: Path, home: Path) -> None:
    with Workspace.open(repo, home=home) as ws:
        pinned = ws.add("Staging API is on port 6443", category="context", pinned=True).memory
        note = Path(ws.store.note_path(pinned.id) or "")
    edit_in_place(note, "port 6443", "port 7443")
    assert "7443" in start(repo, "s1")


def test_the_due_passes_of_a_large_project_run_in_the_background_and_speak_at_the_next_session_start(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime, timedelta

    monkeypatch.setattr(background, "HOOK_MAX_MEMORIES", 1)
    then = datetime.now(UTC).replace(microsecond=0) - timedelta(days=200)
    with Workspace.open(repo, home=home, clock=lambda: then) as old:
        for n in range(10):
            old.add(f"Convention {n} nobody uses any more")
    with Workspace.open(repo, home=home) as ws:
        for n in range(20):
            ws.ack(ws.add(f"Current decision {n}").memory.id)
        for n in range(20):
            with session_state(ws.store, f"past-{n}", ws.clock()) as state:
                state.turn = 1

    first = start(repo, "hint-1")
    assert "look stale" not in first  # counted in the background, not in the hook
    wait_for(lambda: background_runs(repo) == 1, "the background pass")
    with Workspace.open(repo, home=home, light=True, sync_notes=False) as ws:
        assert "look stale" in (ws.store.get_meta(META_HINTS) or "")
    second = start(repo, "hint-2")
    assert "10 of 30 memories look stale after 21 sessions" in second  # hint-1 is one of them
    assert "look stale" not in start(repo, "hint-3")


def test_a_large_repository_s_renames_are_followed_in_the_background(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "HOOK_MAX_FILES", 1)
    with Workspace.open(repo, home=home) as ws:
        memory = ws.add("upload() must stream", category="gotcha", files=["src/app/upload.py"]).memory
        refresh_repo(ws)
        repo_map = ws.repo_map()
        assert repo_map is not None and (repo_map.size() or 0) > 1
    git(repo, "mv", "src/app/upload.py", "src/app/uploader.py")
    git(repo, "commit", "-q", "-m", "rename")

    start(repo, "s1")
    wait_for(lambda: background_runs(repo) == 1, "the background pass")
    with Workspace.open(repo, home=home, light=True, sync_notes=False) as ws:
        assert ws.get(memory.id).files == ("src/app/uploader.py",)
    assert "followed renames (src/app/upload.py → src/app/uploader.py)" in start(repo, "s2")


def test_one_background_process_at_a_time(repo: Path, home: Path) -> None:
    with Workspace.open(repo, home=home) as ws:
        assert background.start(ws, ["note scan"])
        assert not background.start(ws, ["note scan"])  # started moments ago: not a second one
        wait_for(lambda: background_runs(repo) == 1, "the background pass")
        with background.background_lock(ws, wait=False) as held:
            assert held
            assert not run_background(ws, ws.sync)  # another holds the lock: nothing done twice
        assert run_background(ws, ws.sync)
        assert not background.start(ws, [])  # nothing to do: nothing started
