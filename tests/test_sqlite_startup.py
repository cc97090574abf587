"""`StartIndex`: the index as a quiet session start reads and writes it, against `SQLiteStore`'s answers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tether.model.timestamps import iso, utcnow
from tether.store.base import Event, Query
from tether.store.sqlite.startup import StartIndex
from tether.workspace import Workspace


def test_only_an_existing_migrated_wal_index_is_opened(tmp_path: Path) -> None:
    missing = tmp_path / "absent.db"
    assert StartIndex.open(str(missing)) is None
    assert not missing.exists()  # nothing created
    old = tmp_path / "old.db"
    with sqlite3.connect(old) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)")
        conn.execute("INSERT INTO migrations VALUES ('0001_core', 'then')")
    assert StartIndex.open(str(old)) is None  # the ordinary path migrates it
    rollback = tmp_path / "rollback.db"
    with sqlite3.connect(rollback) as conn:
        conn.execute("CREATE TABLE t (x)")
    assert StartIndex.open(str(rollback)) is None  # not in WAL mode
    odd = tmp_path / "a?b.db"
    odd.write_bytes(b"")
    assert StartIndex.open(str(odd)) is None


def test_a_file_that_is_not_a_database_raises(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    path.write_bytes(b"garbage " * 512)
    with pytest.raises(sqlite3.DatabaseError):
        StartIndex.open(str(path))


def test_its_reads_are_the_store_s(ws: Workspace, repo: Path) -> None:
    ws.add("Staging API listens on 6443", pinned=True, files=["src/app/upload.py"])
    ws.add("Old", pinned=True)
    archived = ws.add("Gone soon", pinned=True).memory
    ws.edit(archived.id, status="archived")
    ws.add("Plain memory about uploads")
    with ws.store.transaction():
        ws.store.put_session_state("past", {"turn": 1}, utcnow())
    ws.store.set_meta("some.key", "v")
    ws.repo_map().refresh()  # type: ignore[union-attr]
    index = StartIndex.open(str(ws.paths.index))
    assert index is not None
    try:
        assert index.meta(["some.key", "absent.key"]) == {"some.key": "v"}
        assert index.memories() == ws.store.count(Query(status=None))
        assert index.active("project") == ws.store.count(Query(scope="project"))
        assert index.sessions_since(None) == ws.store.session_count()
        assert index.sessions_since("9999-01-01T00:00:00Z") == 0
        assert [row[0] for row in index.pinned()] == [m.id for m in ws.find(Query(pinned=True))]
        tables = ws.store.repomap()
        assert index.repo_state() == tables.state()
        assert index.present("src/app/upload.py") and not index.present("src/nope.py")
        assert index.present_under("src/") and not index.present_under("lib/")
        assert set(index.rule_file_candidates()) <= tables.present_paths()
    finally:
        index.close()


def test_a_new_session_is_recorded_as_the_store_records_it(ws: Workspace) -> None:
    one = ws.add("Pinned one", pinned=True).memory
    at = utcnow()
    index = StartIndex.open(str(ws.paths.index))
    assert index is not None
    state = {"turn": 0, "touched": [], "seen": {one.id: 0}, "denied": [], "hints": 0, "tools_used": False}
    try:
        before = ws.store.feedback_totals()
        assert index.start_session("quick", state, iso(at), [one.id])
        assert not index.start_session("quick", state, iso(at), [one.id])  # known: nothing written
        assert ws.store.feedback_totals() == (before[0] + 1, before[1])  # its showing counted once
    finally:
        index.close()
    with ws.store.transaction():
        ws.store.put_session_state("store", state, at)
    ws.store.record([Event(one.id, "surfaced", at, "store", 0, {"receipt": "pinned"})])
    conn = ws.store.conn  # type: ignore[attr-defined]
    sessions = conn.execute("SELECT id, started, seen, state FROM sessions WHERE id IN ('quick', 'store')")
    by_id = {row[0]: row[1:] for row in sessions}
    assert by_id["quick"] == by_id["store"]
    events = conn.execute("SELECT session, memory_id, turn, event, receipts, at FROM events ORDER BY seq")
    by_session: dict[str, list[tuple[object, ...]]] = {}
    for session, *rest in events:
        by_session.setdefault(session, []).append(tuple(rest))
    assert by_session["quick"] == by_session["store"] != []
    assert ws.store.telemetry([one.id])[one.id].surfaced == 2
