"""The note directories' stamps: tether's own writes keep them in step, a note another program writes or
deletes moves them, and what they cannot see (a note saved in place) waits for a scan of every note."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import note_files
from tether.model.memory import Memory
from tether.notes import format as notes
from tether.notes.stamps import STAMPS, dir_stamps, kept_in_step, last_scan, record_scan
from tether.store.memory import InMemoryStore
from tether.workspace import Workspace


def test_tether_s_own_writes_keep_the_index_in_step(repo: Path, home: Path, ws: Workspace) -> None:
    first = ws.add("Staging API is on port 6443").memory
    ws.pin(first.id)
    second = ws.add("Deploys go through make ship").memory
    ws.delete(second.id)
    # The write path moved the record with each write: a hook's sync trusts it, without a scan.
    assert ws.store.get_meta(STAMPS) == ws.index.dir_stamps()
    with Workspace.open(repo, home=home, light=True) as hook:
        assert hook.last_sync is not None and not hook.last_sync.seen  # no note was looked at
        assert hook.get(first.id).pinned


def test_a_note_another_program_writes_or_deletes_is_seen_by_a_hook(
    repo: Path, home: Path, ws: Workspace
) -> None:
    kept = ws.add("Staging API is on port 6443").memory
    directory = note_files(repo)[0].parent
    other = Memory(id="0a0b0c0d", summary="Logs live in the callisto journal", category="context")
    temp = directory / ".incoming.tmp"
    temp.write_text(notes.render(other), encoding="utf-8")
    os.replace(temp, directory / notes.note_name(other))  # git, or an editor that replaces the file
    with Workspace.open(repo, home=home, light=True) as hook:
        assert hook.last_sync is not None and hook.last_sync.added == [other.id]
    next(directory.glob(f"{kept.id}-*.md")).unlink()
    with Workspace.open(repo, home=home, light=True) as hook:
        assert hook.last_sync is not None and hook.last_sync.removed == [kept.id]


def test_an_in_place_save_waits_for_a_scan_of_every_note(repo: Path, home: Path, ws: Workspace) -> None:
    memory = ws.add("Staging API is on port 6443").memory
    note = note_files(repo)[0]
    with open(note, "r+", encoding="utf-8") as handle:
        text = handle.read().replace("6443", "7443")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    with Workspace.open(repo, home=home, light=True) as hook:
        assert "6443" in hook.get(memory.id).summary  # the directory did not move: the hook trusts it
        assert hook.sync(full=True).updated == [memory.id]
        assert last_scan(hook.store) is not None


def test_the_record_moves_only_when_it_was_in_step(tmp_path: Path) -> None:
    store = InMemoryStore()
    directory = tmp_path / "notes"
    directory.mkdir()
    before = dir_stamps([directory, None])
    store.set_meta(STAMPS, "stale")  # something changed that no sync has seen yet
    with kept_in_step(store, [directory, None]):
        (directory / "a.md").write_text("x", encoding="utf-8")
    assert store.get_meta(STAMPS) == "stale"  # still stale: the next sync scans
    (directory / "a.md").unlink()
    store.set_meta(STAMPS, dir_stamps([directory, None]))
    with kept_in_step(store, [directory, None]):
        (directory / "b.md").write_text("x", encoding="utf-8")
    assert store.get_meta(STAMPS) == dir_stamps([directory, None]) != before


def test_the_last_scan_is_recorded_with_its_count() -> None:
    store = InMemoryStore()
    assert last_scan(store) is None
    record_scan(store, 12)
    found = last_scan(store)
    assert found is not None and 0 <= found[0] < 60 and found[1] == 12
    store.set_meta("notes.scanned", "garbage")
    assert last_scan(store) is None
