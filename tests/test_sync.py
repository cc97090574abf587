"""Incremental sync from notes to the index, full reindex, and an index that can always be thrown away."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import index_ids, note_files
from tether.config import set_value
from tether.embed import HashedEmbedder
from tether.embed.providers import make_embedder
from tether.model.memory import Memory
from tether.notes.sync import scan, sync
from tether.store.base import Event, NoteRef, Query
from tether.store.sqlite.store import SQLiteStore
from tether.workspace import Workspace


def test_unchanged_notes_are_not_reread(repo: Path, home: Path, ws: Workspace) -> None:
    memory = ws.add("Incremental by stat").memory
    ws.close()
    path = note_files(repo)[0]
    stat = path.stat()
    with Workspace.open(repo, home=home) as again:
        assert again.last_sync is not None and not again.last_sync.changed
    # Same size and mtime: sync trusts the stat and does not read the file (that is what makes it cheap).
    text = path.read_text(encoding="utf-8").replace("Incremental by stat", "Incremental by STAT")
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with Workspace.open(repo, home=home) as again:
        assert again.get(memory.id).summary == "Incremental by stat"
        # `reindex` rebuilds from nothing and sees the change.
        again.reindex()
        assert again.get(memory.id).summary == "Incremental by STAT"


def test_a_long_lived_process_trusts_directory_mtimes_while_its_scan_is_fresh(
    repo: Path, home: Path, ws: Workspace
) -> None:
    memory = ws.add("Fresh scans are trusted").memory
    ws.sync()  # a scan of every note: the directory's stamp after the write
    path = note_files(repo)[0]
    directory = os.stat(path.parent).st_mtime_ns
    path.write_text(path.read_text(encoding="utf-8").replace("trusted", "trusted, edited in place"), "utf-8")
    os.utime(path.parent, ns=(directory, directory))  # an editor's in-place save leaves the directory alone
    assert not ws.sync(fresh_within=3600).changed  # scanned moments ago: one stat per directory
    assert ws.get(memory.id).summary == "Fresh scans are trusted"
    assert ws.sync(fresh_within=0).updated == [memory.id]  # the scan is older than that: every note
    path.unlink()  # a pull deleting the note moves the directory's mtime: seen at once
    assert ws.sync(fresh_within=3600).removed == [memory.id]


def test_a_watch_in_slices_finds_an_in_place_edit_and_vouches_for_a_clean_pass(
    repo: Path, home: Path, ws: Workspace
) -> None:
    ids = [ws.add(f"Watched memory {n}").memory.id for n in range(5)]
    ws.sync(full=True)
    index = ws.index
    assert index.watch(0.0) is None  # a slice of no time checks one note: the pass goes on
    passes = [index.watch(0.0) for _ in range(10)]
    assert passes[:4] == [None, None, None, True]  # five notes, one a slice, nothing changed
    while index.watch(0.0) is None:  # let the pass under way end: it checked some notes already
        pass
    path = next(p for p in note_files(repo) if p.name.startswith(ids[3]))
    directory = os.stat(path.parent).st_mtime_ns
    path.write_text(path.read_text(encoding="utf-8").replace("Watched", "Watched, edited"), "utf-8")
    os.utime(path.parent, ns=(directory, directory))  # an in-place save: the directory's mtime stays
    assert index.watch(1.0) is False  # found: the caller syncs every note
    assert ws.sync(full=True).updated == [ids[3]]
    assert index.watch(1.0) is True
    # A clean pass counts as a scan: a long-lived process trusts the mtimes from its start.
    index._scanned = None
    assert index.watch(1.0) is True
    assert not ws.sync(full=True, fresh_within=3600).changed


def test_only_changed_notes_are_updated(repo: Path, home: Path, ws: Workspace) -> None:
    ids = [ws.add(f"memory number {i}").memory.id for i in range(5)]
    ws.close()
    target = next(p for p in note_files(repo) if p.name.startswith(ids[2]))
    target.write_text(target.read_text(encoding="utf-8") + "\nmore detail\n", encoding="utf-8")
    with Workspace.open(repo, home=home) as again:
        report = again.last_sync
        assert report is not None
        assert (report.added, report.updated, report.removed) == ([], [ids[2]], [])


def test_deleting_the_index_loses_no_memory(repo: Path, home: Path, ws: Workspace) -> None:
    added = [
        ws.add("Project fact", files=["src/app/upload.py"], category="gotcha", pinned=True),
        ws.add("Archived fact"),
        ws.add("User fact", scope="user"),
    ]
    ws.archive(added[1].memory.id)
    before = {m.id: m for m in ws.find(Query(status=None))}
    ws.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{repo}/.tether/index.db{suffix}").unlink(missing_ok=True)
    with Workspace.open(repo, home=home) as again:
        assert {m.id: m for m in again.find(Query(status=None))} == before
        assert [r.memory.id for r in again.search("project fact")][:1] == [added[0].memory.id]


def test_reindex_rebuilds_and_keeps_telemetry(repo: Path, ws: Workspace) -> None:
    memory = ws.add("Keep my counts").memory
    ws.ack(memory.id)
    ws.store.conn.execute("DELETE FROM fts_words")  # damage the derived data
    report = ws.reindex()
    assert report.added == [memory.id]
    assert [h.id for h in ws.store.text(["counts"], 5)] == [memory.id]
    assert ws.store.telemetry([memory.id])[memory.id].acted == 1
    assert index_ids(repo) == {memory.id}


def test_reindex_embeddings_only(ws: Workspace) -> None:
    memory = ws.add("Vectors again").memory
    ws.store.put_vectors("other-3", [(memory.id, [1.0, 0.0, 0.0])])
    assert ws.store.missing_vectors(ws.embedder.id)
    report = ws.reindex(embeddings_only=True)
    assert report.updated == [memory.id] and ws.store.missing_vectors(ws.embedder.id) == []


def test_scan_skips_hidden_and_non_note_files(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x")
    (tmp_path / ".a.md.tmp").write_text("x")
    (tmp_path / ".hidden.md").write_text("x")
    (tmp_path / "b.txt").write_text("x")
    assert [Path(p).name for p in scan(tmp_path)] == ["a.md"]
    assert scan(tmp_path / "missing") == {} and scan(None) == {}


def test_sync_records_problem_once_and_clears_it_when_the_note_goes(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    bad = folder / "bad.md"
    bad.write_text("no frontmatter", encoding="utf-8")
    store = SQLiteStore(tmp_path / "index.db")
    embedder = HashedEmbedder()
    first = sync(store, [(folder, "project")], embedder)
    assert [p.path for p in first.problems] == [str(bad)]
    assert list(store.note_problems()) == [str(bad)]
    bad.unlink()
    assert sync(store, [(folder, "project")], embedder).problems == []
    assert store.note_problems() == {}
    store.close()


def test_user_notes_sync_into_any_project(repo: Path, home: Path, tmp_path: Path) -> None:
    from conftest import make_git_repo
    from tether.project import init_project

    with Workspace.open(repo, home=home) as ws:
        memory = ws.add("Follows me everywhere", scope="user").memory
    other = make_git_repo(tmp_path / "other")
    init_project(other, home)
    with Workspace.open(other, home=home) as ws:
        assert ws.get(memory.id).scope == "user"
        ws.store.record([Event(memory.id, "acted", memory.created)])


def test_note_indexed_by_another_writer_during_a_sync_is_not_dropped(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: sync scanned the disk before reading the index, so a note another process wrote and
    indexed in between looked deleted, and its index row was removed."""
    import tether.notes.sync as sync_module

    real_scan = sync_module.scan
    other = Workspace.open(repo, home=home)
    added: list[str] = []

    def scan_then_other_writer_adds(directory: Path | None) -> dict[str, NoteRef]:
        found = real_scan(directory)
        if directory == other.paths.project_notes and not added:
            added.append(other.add("written while the other process synced").memory.id)
        return found

    with Workspace.open(repo, home=home, sync_notes=False) as ws:
        monkeypatch.setattr(sync_module, "scan", scan_then_other_writer_adds)
        report = ws.sync()
        assert report.removed == []
        assert index_ids(repo) == set(added)
    other.close()


@pytest.mark.parametrize(("first", "then"), [("hashed", "static"), ("static", "hashed")])
def test_changing_the_embedder_re_embeds_the_index(repo: Path, home: Path, first: str, then: str) -> None:
    # Vectors are kept per embedder id: the next open after a switch embeds every memory in the new space,
    # and a query in that space finds them (vectors of another embedder are never compared).
    set_value(repo / ".tether" / "config.toml", "embedder", first)
    with Workspace.open(repo, home=home) as ws:
        memory = ws.add("Tool execution uses runTool").memory
        old = ws.embedder.id
        assert ws.store.missing_vectors(old) == []
    set_value(repo / ".tether" / "config.toml", "embedder", then)
    with Workspace.open(repo, home=home) as ws:
        new = ws.embedder.id
        assert new != old and new == make_embedder(then).id
        assert ws.store.missing_vectors(new) == []
        query = ws.embedder.embed(["Tool execution uses runTool"])[0]
        assert [mid for mid, _ in ws.store.nearest(new, query, 1)] == [memory.id]


def test_a_reindex_that_fails_midway_leaves_the_index_as_it_was(
    repo: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reindex cleared the index (committed), then re-added note by note: a kill or an error in
    # between left an index missing memories (and hooks recalling from it) until the next full sync.
    ids = {ws.add(f"Fact number {i} about uploads").memory.id for i in range(5)}
    ws.store.record([Event(next(iter(ids)), "surfaced", ws.clock())])
    calls = {"n": 0}
    real_put = SQLiteStore.put

    def put(self: SQLiteStore, *args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk I/O error (simulated) on the third memory")
        real_put(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteStore, "put", put)
    with pytest.raises(OSError, match="simulated"):
        ws.reindex()
    monkeypatch.undo()
    assert index_ids(repo) == ids  # read with a plain connection: nothing was committed
    assert {m.id for m in ws.find()} == ids
    assert sum(t.surfaced for t in ws.store.telemetry().values()) == 1


def test_reindex_keeps_session_memories_whole(repo: Path, ws: Workspace) -> None:
    session = ws.add("Working on the chunked upload bug", scope="session", session="s1").memory
    ws.add("Uploads stream in 5 MB chunks")
    ws.reindex()
    assert ws.get(session.id).scope == "session"
    assert session.id in [hit.id for hit in ws.store.text(["chunked"], 10)]
    embedder = ws.embedder
    near = ws.store.nearest(embedder.id, embedder.embed(["chunked upload bug"])[0], 5)
    assert session.id in [mid for mid, _ in near]
    assert ws.store.missing_vectors(embedder.id) == []


def test_reindex_waits_for_the_writer_lock(repo: Path, home: Path, ws: Workspace) -> None:
    # It ran outside the lock: an add between its read of the notes and its swap was dropped from the index.
    import subprocess
    import sys
    import time

    from tether.fs import file_lock

    ws.add("Before the reindex")
    with file_lock(ws.paths.tether_dir / ".lock"):
        code = (
            "from pathlib import Path; from tether.workspace import Workspace\n"
            f"ws = Workspace.open(Path({str(repo)!r})); ws.reindex(); print('done')"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            env={**os.environ, "TETHER_HOME": str(home)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.5)
        assert proc.poll() is None, proc.communicate()  # waiting for the lock
        # The writer holding the lock adds a memory (as `Memories.add` does under it).
        added = ws.write(Memory(id="0d0d0d0d", summary="Written while the reindex waited"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.strip() == "done", err
    assert added.id in index_ids(repo) and len(index_ids(repo)) == 2
