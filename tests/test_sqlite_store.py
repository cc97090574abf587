"""The SQLite index on real files: pragmas, schema, migrations, the vector cache, the memo, errors.

What every store must do is `test_store_contract.py`; this file is what only SQLite does."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tether.embed import HashedEmbedder
from tether.model.memory import Memory
from tether.store.base import Event, Query
from tether.store.sqlite.rows import where as _where
from tether.store.sqlite.schema import BUSY_TIMEOUT_MS, MIGRATIONS, TELEMETRY_TOTALS, migrate
from tether.store.sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "index.db")
    try:
        yield s
    finally:
        s.close()


def mem(mid: str, summary: str, **kw: object) -> Memory:
    return Memory(id=mid, summary=summary, created=T0, updated=T0).with_changes(**kw)


def put(store: SQLiteStore, memory: Memory) -> None:
    embedder = HashedEmbedder()
    store.put(memory, None, embedder.embed([memory.text])[0], embedder.id)


def test_wal_and_busy_timeout(store: SQLiteStore) -> None:
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
    assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_schema_has_both_fts_tokenizers_embeddings_and_telemetry(store: SQLiteStore) -> None:
    sql = {name: text for name, text in store.conn.execute("SELECT name, sql FROM sqlite_master")}
    assert "unicode61" in sql["fts_words"]
    assert "tokenize='trigram'" in sql["fts_trigram"]
    columns = {row[1] for row in store.conn.execute("PRAGMA table_info(embeddings)")}
    assert {"embedder", "dim", "vector"} <= columns
    assert {"telemetry", "events", "migrations", "note_problems"} <= set(sql)


def test_migrations_are_recorded_and_run_once(tmp_path: Path, store: SQLiteStore) -> None:
    names = [row[0] for row in store.conn.execute("SELECT name FROM migrations ORDER BY name")]
    assert names == sorted(name for name, _ in MIGRATIONS)
    assert migrate(store.conn) == []
    again = SQLiteStore(tmp_path / "index.db")  # reopening an existing index applies nothing new
    assert again.conn.execute("SELECT count(*) FROM migrations").fetchone()[0] == len(MIGRATIONS)
    again.close()


def test_migrations_run_from_an_empty_database(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "raw.db", isolation_level=None)
    assert migrate(conn) == [name for name, _ in MIGRATIONS]
    conn.close()


def test_link_keys_migration_folds_the_targets_an_older_index_stored(tmp_path: Path) -> None:
    old = SQLiteStore(tmp_path / "index.db")
    put(old, mem("aaaa0001", "links as written", details="[[Deploy Checklist]] [[deploy  checklist#x]]"))
    # As a tether before 0007 left it: targets as written, the migration not recorded.
    old.conn.execute("DELETE FROM links")
    old.conn.executemany(
        "INSERT INTO links SELECT rowid, ? FROM memories", [("Deploy Checklist",), ("deploy  checklist#x",)]
    )
    old.conn.execute("DELETE FROM migrations WHERE name = '0007_link_keys'")
    old.close()
    store = SQLiteStore(tmp_path / "index.db")  # opening it runs the migration
    assert store.conn.execute("SELECT target FROM links").fetchall() == [("deploy checklist",)]
    assert store.linking(["Deploy checklist"]) == ["aaaa0001"]
    store.close()


def test_feedback_totals_are_kept_in_step_and_an_older_index_gets_them(tmp_path: Path) -> None:
    old = SQLiteStore(tmp_path / "index.db")
    old.record([Event("aaaa0001", "surfaced", T0), Event("aaaa0001", "surfaced", T0)])
    old.record(
        [Event("aaaa0002", "surfaced", T0), Event("aaaa0002", "acted", T0), Event("x", "archived", T0)]
    )
    assert old.feedback_totals() == (3, 1)
    summed = old.conn.execute("SELECT total(surfaced), total(acted) FROM telemetry").fetchone()
    assert summed == (3.0, 1.0)  # the kept totals are the counters' sums
    # As a tether before 0011 left it: telemetry without kept totals, the migration not recorded.
    old.conn.execute("DELETE FROM meta WHERE key IN (?, ?)", TELEMETRY_TOTALS)
    assert old.feedback_totals() == (3, 1)  # summed from the counters meanwhile
    old.conn.execute("DELETE FROM migrations WHERE name = '0011_telemetry_totals'")
    old.close()
    store = SQLiteStore(tmp_path / "index.db")  # opening it runs the migration
    assert dict(store.conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", TELEMETRY_TOTALS)) == {
        TELEMETRY_TOTALS[0]: "3",
        TELEMETRY_TOTALS[1]: "1",
    }
    store.record([Event("aaaa0001", "acted", T0)])
    assert store.feedback_totals() == (3, 2)
    store.close()


def test_second_connection_sees_committed_writes(tmp_path: Path, store: SQLiteStore) -> None:
    other = SQLiteStore(tmp_path / "index.db")
    put(store, mem("0000000a", "seen"))
    assert other.get("0000000a") is not None
    other.close()


def test_memories_by_id_see_writes_from_another_process(tmp_path: Path, store: SQLiteStore) -> None:
    put(store, mem("aaaa0001", "the upload retry limit is 3"))
    put(store, mem("aaaa0002", "the cache key includes the tenant"))
    first = store.memories(["aaaa0001", "aaaa0002", "ffffffff"])
    assert sorted(first) == ["aaaa0001", "aaaa0002"]
    assert store.memories(["aaaa0001"])["aaaa0001"] is first["aaaa0001"]  # served again without a read
    other = SQLiteStore(tmp_path / "index.db")  # another session's connection
    try:
        put(other, mem("aaaa0001", "the upload retry limit is 5", status="archived"))
        other.remove("aaaa0002")
    finally:
        other.close()
    again = store.memories(["aaaa0001", "aaaa0002"])
    assert list(again) == ["aaaa0001"]
    assert again["aaaa0001"].summary == "the upload retry limit is 5"
    assert again["aaaa0001"].status == "archived"
    assert again["aaaa0001"].content_hash == mem("x", "the upload retry limit is 5").content_hash


def test_pinned_lookup_uses_the_partial_index(store: SQLiteStore) -> None:
    put(store, mem("aaaa0001", "pinned fact", pinned=True))
    put(store, mem("aaaa0002", "plain fact"))
    assert [m.id for m in store.find(Query(pinned=True))] == ["aaaa0001"]
    assert [m.id for m in store.find(Query(pinned=False))] == ["aaaa0002"]
    plan = store.conn.execute("EXPLAIN QUERY PLAN SELECT id FROM memories WHERE pinned = 1").fetchall()
    assert "memories_pinned" in str(plan)


def test_lookups_by_id_or_file_walk_their_key_not_the_status_index(store: SQLiteStore) -> None:
    """Without table statistics the planner walked every active memory through the status index for a
    read hook's handful of gotchas by id (13 ms at 10k memories instead of 0.1)."""
    put(store, mem("aaaa0001", "a gotcha", category="gotcha", files=("src/a.py",)))
    put(store, mem("aaaa0002", "a fact", files=("src/a.py",)))
    for query, found in (
        (Query(ids=("aaaa0001", "aaaa0002"), category="gotcha"), ["aaaa0001"]),
        (Query(file="src/a.py", scope="project"), ["aaaa0001", "aaaa0002"]),
    ):
        assert [m.id for m in store.find(query)] == found
        where, params = _where(query)
        plan = str(
            store.conn.execute(f"EXPLAIN QUERY PLAN SELECT id FROM memories{where}", params).fetchall()
        )
        assert "memories_status" not in plan, plan


def test_a_delete_leaves_no_derived_rows(store: SQLiteStore) -> None:
    put(store, mem("0000000a", "Upload retries", details="See [[0000000b]]", files=("src/up.py", "src/")))
    store.remove("0000000a")
    for table in ("file_refs", "links", "embeddings", "fts_words", "fts_trigram"):
        assert store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_the_vector_cache_never_outlives_its_index(tmp_path: Path) -> None:
    """A rebuilt index starts its write counter over: the cache beside it must not answer for it."""
    index = tmp_path / "index.db"
    first = SQLiteStore(index)
    put(first, mem("0000000a", "retry the upload"))
    query = HashedEmbedder().embed(["retry the upload"])[0]
    assert [mid for mid, _ in first.nearest(HashedEmbedder().id, query, 3)] == ["0000000a"]
    first.close()
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"index.db{suffix}").unlink(missing_ok=True)
    second = SQLiteStore(index)  # same write counter as the first one had, different database
    put(second, mem("0000000b", "retry the upload, again"))
    try:
        assert [mid for mid, _ in second.nearest(HashedEmbedder().id, query, 3)] == ["0000000b"]
    finally:
        second.close()


def test_errors_are_tethers_own(tmp_path: Path) -> None:
    from tether.errors import StoreDamaged, StoreUnavailable

    bad = tmp_path / "index.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreDamaged, match="damaged"):
        SQLiteStore(bad)
    good = SQLiteStore(tmp_path / "ok.db", busy_timeout_ms=50)
    holder = sqlite3.connect(tmp_path / "ok.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreUnavailable, match="unavailable"):
            good.put(mem("0000000a", "a"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        good.close()
