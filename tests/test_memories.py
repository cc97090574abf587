"""`tether.memories`: every write validated, under the writer lock, note first; no acknowledged change lost.

The lost-update tests hold the writer lock themselves while another process's edit waits for it, change the
memory meanwhile (as a second writer holding the lock would), then let the waiting edit go: it must apply
its change to what is there *now*, not to what it saw before it queued (issue 11, item 7).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tether.errors import NotFoundError, ValidationError
from tether.fs import file_lock
from tether.notes import format as notes
from tether.workspace import Workspace


def start(repo: Path, home: Path, code: str) -> subprocess.Popen[str]:
    """A second process running `code` with `ws` open on the repository (sync done before it queues)."""
    script = f"from pathlib import Path\nfrom tether.workspace import Workspace\nws = Workspace.open(Path({str(repo)!r}))\n{code}\n"
    return subprocess.Popen(
        [sys.executable, "-c", script],
        env={**os.environ, "TETHER_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def queued(process: subprocess.Popen[str]) -> None:
    """Give the process time to open the workspace and block on the writer lock (more is harmless)."""
    time.sleep(1.5)
    assert process.poll() is None, process.communicate()


def test_an_edit_waiting_for_the_lock_keeps_the_change_made_meanwhile(
    repo: Path, home: Path, ws: Workspace
) -> None:
    memory = ws.add("Uploads retry three times", category="context").memory
    with file_lock(ws.paths.tether_dir / ".lock"):
        other = start(repo, home, f"ws.edit({memory.id!r}, summary='Uploads retry five times')")
        queued(other)
        ws.write(
            ws.get(memory.id).with_changes(priority="high", category="gotcha")
        )  # the writer holding the lock
    _, err = other.communicate(timeout=60)
    assert other.returncode == 0, err
    with Workspace.open(repo) as fresh:
        now = fresh.get(memory.id)
        assert (now.summary, now.priority, now.category) == ("Uploads retry five times", "high", "gotcha")
        on_disk = notes.read(Path(fresh.store.note_path(memory.id) or ""), "project")
        assert (on_disk.summary, on_disk.priority) == ("Uploads retry five times", "high")


def test_a_hard_delete_is_not_undone_by_an_edit_that_was_waiting(
    repo: Path, home: Path, ws: Workspace
) -> None:
    memory = ws.add("Cache keys include the tenant").memory
    note = Path(ws.store.note_path(memory.id) or "")
    with file_lock(ws.paths.tether_dir / ".lock"):
        other = start(repo, home, f"ws.edit({memory.id!r}, details='why: tenants share a cache')")
        queued(other)
        note.unlink()
        ws.store.remove(memory.id)
    _, err = other.communicate(timeout=60)
    assert other.returncode != 0 and "no memory" in err  # it says the memory is gone
    assert not note.exists()
    with Workspace.open(repo) as fresh, pytest.raises(NotFoundError):
        fresh.get(memory.id)


def test_edit_refuses_fields_that_cannot_change(ws: Workspace) -> None:
    memory = ws.add("A fact").memory
    with pytest.raises(ValidationError, match="cannot edit scope"):
        ws.edit(memory.id, scope="user")
    assert ws.edit(memory.id, summary="A fact") == memory  # no change: nothing written, same record


def test_absolute_keeps_user_paths_and_roots_project_ones(ws: Workspace) -> None:
    assert ws.root is not None
    assert ws.absolute(["src/a.py", "src/"]) == [str(ws.root / "src/a.py"), str(ws.root / "src") + "/"]
    assert ws.absolute(["~/notes.md"], scope="user") == ["~/notes.md"]


def test_re_adding_archived_knowledge_restores_it_for_the_person(ws: Workspace) -> None:
    # It came back as "already saved" and stayed archived: the fact was never recalled again.
    memory = ws.add("Staging API is on port 6443").memory
    ws.archive(memory.id, reason="rm")
    again = ws.add("staging api is on   PORT 6443")
    assert (again.memory.id, again.created, again.restored, again.memory.status) == (
        memory.id,
        False,
        True,
        "active",
    )
    assert [e.event for e in ws.store.events(memory.id, limit=1)] == ["restored"]
    assert [m.id for m in ws.find()] == [memory.id]


def test_re_adding_archived_knowledge_as_an_agent_leaves_it_archived_and_says_so(ws: Workspace) -> None:
    # An archive is someone's decision: an agent (or distill, or a seed) saying it again does not undo it.
    memory = ws.add("Staging API is on port 6443").memory
    ws.archive(memory.id, reason="rm")
    for origin in ("agent", "distilled", "seed"):
        again = ws.add("Staging API is on port 6443", origin=origin)
        assert (again.created, again.restored, again.memory.status) == (False, False, "archived")
    assert ws.find() == []
