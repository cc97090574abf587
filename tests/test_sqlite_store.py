"""The SQLite index on real files: pragmas, schema, migrations, and each Store method."""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tether.embed import HashedEmbedder
from tether.model.memory import Memory
from tether.store.base import Event, NoteRef, Query
from tether.store.sqlite.schema import BUSY_TIMEOUT_MS, MIGRATIONS, migrate
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


def test_put_get_update_remove(store: SQLiteStore) -> None:
    memory = mem("0000000a", "Upload retries", details="See [[0000000b]]", files=("src/up.py", "src/"))
    put(store, memory)
    assert store.get("0000000a") == memory
    changed = memory.with_changes(summary="Upload retries twice", files=("src/up.py",))
    put(store, changed)
    assert store.get("0000000a") == changed
    assert store.owners(["src/"]) == {}
    assert store.owners(["src/up.py"]) == {"src/up.py": ["0000000a"]}
    assert store.linking(["0000000b"]) == ["0000000a"]
    store.remove("0000000a")
    assert store.get("0000000a") is None
    for table in ("file_refs", "links", "embeddings", "fts_words", "fts_trigram"):
        assert store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_find_filters(store: SQLiteStore) -> None:
    put(store, mem("0000000a", "a", category="gotcha", files=("x.py",)))
    put(store, mem("0000000b", "b", category="pref", pinned=True, origin="rules:AGENTS.md"))
    put(store, mem("0000000c", "c", status="archived"))
    put(store, mem("0000000d", "d", scope="user", origin="agent"))

    def ids(**kw: object) -> list[str]:
        return [m.id for m in store.find(Query(**kw))]  # type: ignore[arg-type]

    assert ids() == ["0000000a", "0000000b", "0000000d"]
    assert ids(status=None) == ["0000000a", "0000000b", "0000000c", "0000000d"]
    assert ids(status=("archived",)) == ["0000000c"]
    assert ids(category="gotcha") == ["0000000a"]
    assert ids(pinned=True) == ["0000000b"]
    assert ids(origin="rules:") == ["0000000b"]
    assert ids(origin="rules_") == []  # LIKE wildcards are escaped
    assert ids(scope="user") == ["0000000d"]
    assert ids(file="x.py") == ["0000000a"]
    assert ids(ids=("0000000b", "0000000c")) == ["0000000b"]
    assert ids(limit=1) == ["0000000a"]
    assert store.count(Query(status=None)) == 4


def test_text_search_both_indexes_active_only(store: SQLiteStore) -> None:
    put(store, mem("0000000a", "Retry uploads with exponential backoff"))
    put(store, mem("0000000b", "Staging uses port 6443", details="uploads go elsewhere"))
    put(store, mem("0000000c", "Archived upload note", status="archived"))
    hits = {h.id: h for h in store.text_search(["uploads"], limit=10)}
    assert set(hits) == {"0000000a", "0000000b"}
    assert hits["0000000a"].words < hits["0000000b"].words < 0  # summary hits weigh more
    # The trigram index finds substrings the word index cannot.
    sub = {h.id: h for h in store.text_search(["xponenti"], limit=10)}
    assert set(sub) == {"0000000a"} and sub["0000000a"].words == 0 and sub["0000000a"].trigram < 0
    assert store.text_search(['"quoted" OR'], limit=10) == []  # FTS syntax in input is quoted, not run
    assert store.text_search([], limit=10) == []


def test_unicode_text_search(store: SQLiteStore) -> None:
    put(store, mem("0000000a", "Café menu parsing breaks on naïve dates"))
    assert [h.id for h in store.text_search(["cafe"], limit=5)] == ["0000000a"]
    assert [h.id for h in store.text_search(["naive"], limit=5)] == ["0000000a"]


def test_vectors_keep_embedder_id_and_dim(store: SQLiteStore) -> None:
    put(store, mem("0000000a", "one"))
    store.put_vectors("other-2", [("0000000a", [0.6, 0.8])])
    ids, blob, dim = store.vectors("other-2")
    assert ids == ["0000000a"] and dim == 2 and list(array("f", blob)) == pytest.approx([0.6, 0.8])
    hashed = HashedEmbedder()
    ids, blob, dim = store.vectors(hashed.id)
    assert ids == [] and dim == 0, "a memory has one vector row; the last embedder wins"
    assert [m.id for m in store.missing_vectors(hashed.id)] == ["0000000a"]
    store.drop_vectors(keep=None)
    assert store.missing_vectors("other-2")[0].id == "0000000a"


def test_dir_refs_and_owners(store: SQLiteStore) -> None:
    put(store, mem("0000000a", "a", files=("src/", "src/a.py")))
    put(store, mem("0000000b", "b", files=("src/a.py",)))
    put(store, mem("0000000c", "c", files=("src/",), status="archived"))
    assert store.dir_refs() == {"src/": ["0000000a"]}
    assert {k: sorted(v) for k, v in store.owners(["src/a.py", "nope"]).items()} == {
        "src/a.py": ["0000000a", "0000000b"]
    }


def test_telemetry_and_event_log(store: SQLiteStore) -> None:
    put(store, mem("0000000a", "a"))
    store.record(
        [
            Event("0000000a", "surfaced", T0, "s1", 1, {"receipt": "file"}),
            Event("0000000a", "surfaced", T0 + timedelta(hours=1), "s1", 2),
            Event("0000000a", "acted", T0 + timedelta(hours=2), "s1", 2, {"via": "get"}),
        ]
    )
    tel = store.telemetry(["0000000a"])["0000000a"]
    assert (tel.surfaced, tel.acted) == (2, 1)
    assert tel.first_surfaced == T0 and tel.last_surfaced == T0 + timedelta(hours=1)
    assert tel.last_acted == T0 + timedelta(hours=2)
    events = list(store.events("0000000a"))
    assert [e.event for e in events] == ["acted", "surfaced", "surfaced"]
    assert events[-1].receipts == {"receipt": "file"} and events[-1].session == "s1"
    assert store.surfaced_in_session("s1", 1) == {"0000000a"}
    assert store.surfaced_in_session("s1", 2) == set()


def test_clear_keeps_telemetry_and_session_memory(store: SQLiteStore) -> None:
    put(store, mem("0000000a", "a"))
    put(store, mem("0000000b", "b", scope="session", session="s"))
    store.record([Event("0000000a", "acted", T0)])
    store.clear()
    assert [m.id for m in store.find(Query(status=None))] == ["0000000b"]
    assert store.telemetry(["0000000a"])["0000000a"].acted == 1


def test_note_ref_is_unique_per_path(store: SQLiteStore) -> None:
    ref = NoteRef("/n/x.md", 1, 10)
    store.put(mem("0000000a", "a"), ref)
    store.put(mem("0000000b", "b"), ref)  # the note at that path now holds another id
    assert store.get("0000000a") is None
    assert store.note_refs() == {"/n/x.md": ("0000000b", ref)}


def test_transaction_rolls_back_on_error(store: SQLiteStore) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        put(store, mem("0000000a", "a"))
        raise RuntimeError("boom")
    assert store.get("0000000a") is None
    put(store, mem("0000000b", "b"))  # and the connection is usable afterwards
    assert store.get("0000000b") is not None


def test_second_connection_sees_committed_writes(tmp_path: Path, store: SQLiteStore) -> None:
    other = SQLiteStore(tmp_path / "index.db")
    put(store, mem("0000000a", "seen"))
    assert other.get("0000000a") is not None
    other.close()


def test_meta_round_trip(store: SQLiteStore) -> None:
    assert store.get_meta("k") is None
    store.set_meta("k", "v")
    assert store.get_meta("k") == "v"


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
