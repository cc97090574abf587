"""`tether.store.sqlite.changes`: every write logs the memory it changed under the write counter's new value,
and a reader behind a gap in the log (a writer that does not log, a pruned range, a reindex) is told so."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tether.model.memory import Memory
from tether.store.sqlite import changes
from tether.store.sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "index.db")
    try:
        yield s
    finally:
        s.close()


def counter(store: SQLiteStore) -> int:
    return int(store.version().rsplit(":", 1)[1])


def mem(mid: str, summary: str) -> Memory:
    return Memory(mid, summary, created=T0, updated=T0)


def test_each_write_logs_what_it_changed(store: SQLiteStore) -> None:
    start = counter(store)
    store.put(mem("aaaa0001", "first"))
    store.put(mem("aaaa0002", "second"))
    middle = counter(store)
    store.put_vectors("hashed", [("aaaa0001", [1.0, 0.0])])  # vectors only: no memory's fields changed
    store.remove("aaaa0002")
    now = counter(store)
    assert now == start + 4
    assert changes.changed_since(store.conn, start, middle) == changes.Changes({"aaaa0001", "aaaa0002"}, True)
    assert changes.changed_since(store.conn, middle, now) == changes.Changes({"aaaa0002"}, True)
    assert changes.changed_since(store.conn, middle, middle + 1) == changes.Changes(set(), False)
    assert changes.changed_since(store.conn, now, now) == changes.Changes(set(), False)
    assert changes.changed_since(store.conn, now, start) is None  # a counter that went back: unknown


def test_a_write_that_keeps_the_words_says_so(store: SQLiteStore) -> None:
    # A pin or an archive leaves the full-text indexes as they were: kept postings stay exact.
    memory = mem("aaaa0001", "the upload retry limit is 3").with_changes(
        files=("src/up.py",), tags=("upload",)
    )
    store.put(memory)
    before = counter(store)
    store.put(memory.with_changes(pinned=True, status="archived", priority="high"))
    assert changes.changed_since(store.conn, before, counter(store)) == changes.Changes({"aaaa0001"}, False)
    for edit in ({"summary": "the upload retry limit is 5"}, {"details": "why"}, {"files": ("src/down.py",)}):
        before = counter(store)
        store.put(memory.with_changes(**edit))  # type: ignore[arg-type]
        assert changes.changed_since(store.conn, before, counter(store)) == changes.Changes(
            {"aaaa0001"}, True
        )
    assert [h.id for h in store.text(["down"], 5)] == ["aaaa0001"]  # the last edit's words are searched


def test_a_clear_changes_everything(store: SQLiteStore) -> None:
    store.put(mem("aaaa0001", "first"))
    before = counter(store)
    store.clear()
    assert changes.changed_since(store.conn, before, counter(store)) is None


def test_a_write_that_does_not_log_leaves_a_gap(store: SQLiteStore) -> None:
    # An older tether (mid-upgrade) bumps the counter without logging: the reader cannot know what changed.
    store.put(mem("aaaa0001", "first"))
    before = counter(store)
    store.conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors.version'")
    store.conn.execute("UPDATE memories SET summary = 'changed by an older tether'")
    store.put(mem("aaaa0002", "second"))
    assert changes.changed_since(store.conn, before, counter(store)) is None
    assert changes.changed_since(store.conn, before + 1, counter(store)) == changes.Changes(
        {"aaaa0002"}, True
    )


def test_the_log_keeps_its_last_versions_only(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "KEPT", 3)
    start = counter(store)
    for n in range(6):
        store.put(mem(f"aaaa000{n}", f"memory {n}"))
    now = counter(store)
    assert store.conn.execute("SELECT count(*) FROM changes").fetchone()[0] == 3
    assert changes.changed_since(store.conn, start, now) is None  # pruned away: unknown
    assert changes.changed_since(store.conn, now - 3, now) == changes.Changes(
        {"aaaa0003", "aaaa0004", "aaaa0005"}, True
    )
