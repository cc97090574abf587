"""`tether.store.sqlite.memo`: the memories a store read are kept across the writes that did not change them,
re-read when any connection changed them, and all re-read when the change log cannot say what changed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tether.model.memory import Memory
from tether.store.sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
IDS = [f"aaaa000{n}" for n in range(5)]


def mem(mid: str, summary: str, **kw: object) -> Memory:
    return Memory(mid, summary, created=T0, updated=T0).with_changes(**kw)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    store = SQLiteStore(tmp_path / "index.db")
    with store.transaction():
        for n, mid in enumerate(IDS):
            store.put(mem(mid, f"memory {n}", status="archived" if n == 4 else "active"))
    store.close()
    return tmp_path / "index.db"


@pytest.fixture
def warm(path: Path) -> Iterator[SQLiteStore]:
    store = SQLiteStore(path, warm=True)
    try:
        yield store
    finally:
        store.close()


def reads_of_memories(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    store.conn.set_trace_callback(
        lambda sql: seen.append(sql) if "FROM memories WHERE id IN" in sql else None
    )
    return seen


def test_a_warm_store_reads_every_active_memory_at_once(warm: SQLiteStore) -> None:
    warm.memories([])
    seen = reads_of_memories(warm)
    got = warm.memories(IDS[:4])
    assert [m.summary for m in got.values()] == ["memory 0", "memory 1", "memory 2", "memory 3"]
    assert seen == []  # every active one was read in the first call
    assert warm.memories([IDS[4]])[IDS[4]].status == "archived"  # an inactive one is read by id
    assert len(seen) == 1


def test_past_its_bound_a_warm_store_reads_by_id(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.store.sqlite import store as store_module

    monkeypatch.setattr(store_module, "PRELOAD_MAX", 3)
    warm = SQLiteStore(path, warm=True)
    try:
        seen = reads_of_memories(warm)
        assert list(warm.memories(IDS[:2])) == IDS[:2]
        assert len(seen) == 1
    finally:
        warm.close()


@pytest.mark.parametrize("warm_store", [True, False])
def test_a_write_elsewhere_rereads_only_what_it_changed(path: Path, warm_store: bool) -> None:
    store = SQLiteStore(path, warm=warm_store)
    other = SQLiteStore(path)  # another process's connection
    try:
        first = store.memories(IDS)
        other.put(mem(IDS[1], "memory 1, reworded"))
        other.remove(IDS[2])
        other.put(mem("bbbb0001", "a new one"))
        other.put_vectors("hashed", [(IDS[0], [1.0, 0.0])])
        again = store.memories([*IDS, "bbbb0001"])
        assert list(again) == [IDS[0], IDS[1], IDS[3], IDS[4], "bbbb0001"]
        assert again[IDS[0]] is first[IDS[0]] and again[IDS[3]] is first[IDS[3]]  # kept: the same objects
        assert again[IDS[4]] is first[IDS[4]]
        assert again[IDS[1]].summary == "memory 1, reworded"
        assert again["bbbb0001"].summary == "a new one"
    finally:
        store.close()
        other.close()


def test_a_gap_in_the_log_rereads_everything(path: Path, warm: SQLiteStore) -> None:
    first = warm.memories(IDS)
    # An older tether's write: the counter moves, nothing is logged.
    warm.conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors.version'")
    warm.conn.execute("UPDATE memories SET summary = 'changed by an older tether' WHERE id = ?", (IDS[3],))
    again = warm.memories(IDS)
    assert again[IDS[3]].summary == "changed by an older tether"
    assert all(again[mid] is not first[mid] for mid in IDS)


def test_a_rebuilt_index_is_read_anew(path: Path, warm: SQLiteStore) -> None:
    first = warm.memories(IDS)
    warm.set_meta("index.id", "another")  # what a rebuilt index looks like: its own id
    again = warm.memories(IDS)
    assert all(again[mid] is not first[mid] for mid in IDS)
