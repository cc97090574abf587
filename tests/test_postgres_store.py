"""The team database's own behaviour (`tether.store.postgres`), beyond the store contract it shares.

Migrations, error translation, tenancy, the conflict rules (last writer by `updated`, tombstones), counters
under concurrent writers and the HNSW index, on the real Postgres of `conftest.postgres_server`.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import errors as pg

from tether.embed import HashedEmbedder
from tether.errors import StoreDamaged, StoreUnavailable
from tether.model.memory import Memory
from tether.store.base import Event, Query
from tether.store.postgres import driver, errors, schema, search
from tether.store.postgres.store import PostgresStore
from tether.store.postgres.tenancy import Tenant

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashedEmbedder()


def tenant(project: str | None = "git:p1", user: str = "u1") -> Tenant:
    return Tenant(project, user)


def mem(mid: str, summary: str, **kw: object) -> Memory:
    return Memory(id=mid, summary=summary, created=T0, updated=T0).with_changes(**kw)


def put(store: PostgresStore, memory: Memory, **kw: Any) -> None:
    store.put(memory, None, EMBEDDER.embed([memory.text])[0], EMBEDDER.id, **kw)


@pytest.fixture
def open_store(pg_url: str) -> Iterator[Any]:
    opened: list[PostgresStore] = []

    def make(t: Tenant | None = None) -> PostgresStore:
        opened.append(PostgresStore(pg_url, t or tenant()))
        return opened[-1]

    yield make
    for store in opened:
        store.close()


# -- schema and errors -------------------------------------------------------------------------------------


def test_migrations_run_once_and_are_recorded(open_store: Any, pg_url: str) -> None:
    open_store()
    with psycopg.connect(pg_url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM tether_migrations ORDER BY name")]
        assert names == [name for name, _ in schema.MIGRATIONS]
        assert schema.migrate(conn) == []
        extensions = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
    assert {"vector", "pg_trgm"} <= extensions


def test_link_keys_migration_folds_the_targets_an_older_database_stored(open_store: Any, pg_url: str) -> None:
    put(open_store(), mem("aaaa0001", "links as written", details="[[Deploy Checklist]]"))
    with psycopg.connect(pg_url) as conn:  # as a tether before 0005 left it
        conn.execute('UPDATE tether_memories SET links = \'{"Deploy Checklist","deploy  checklist#x"}\'')
        conn.execute("DELETE FROM tether_migrations WHERE name = '0005_link_keys'")
    store = open_store()  # opening it runs the migration
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT links FROM tether_memories").fetchone() == (["deploy checklist"],)
    assert store.linking(["Deploy checklist"]) == ["aaaa0001"]


def _open_and_close(url: str) -> str:
    PostgresStore(url, tenant()).close()
    return "ok"


def test_processes_opening_a_new_database_at_once_migrate_it_once(pg_url: str) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as workers:
        assert workers.map(_open_and_close, [pg_url] * 4) == ["ok"] * 4
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM tether_migrations").fetchone() == (len(schema.MIGRATIONS),)


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "psycopg" else real(name))
    with pytest.raises(StoreUnavailable, match=r"pip install 'tether\[postgres\]'"):
        driver.require()


def test_an_unreachable_server_is_unavailable_with_the_reason(tmp_path: Any) -> None:
    url = f"postgresql://nobody@/tether?host={tmp_path}"
    with pytest.raises(StoreUnavailable, match="team database is unavailable") as caught:
        PostgresStore(url, tenant(), connect_timeout=1)
    assert "socket" in str(caught.value) or "connect" in str(caught.value)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (pg.DataCorrupted("bad page"), StoreDamaged),
        (pg.IndexCorrupted("bad index"), StoreDamaged),
        (pg.UndefinedTable("no tether_memories"), StoreDamaged),
        (psycopg.OperationalError("server closed the connection"), StoreUnavailable),
        (pg.DiskFull("no space"), StoreUnavailable),
        (pg.SerializationFailure("retry"), StoreUnavailable),
        (pg.InsufficientPrivilege("denied"), StoreUnavailable),
        (pg.SyntaxError("a bug"), pg.SyntaxError),  # programming errors stay what they are
        (pg.UniqueViolation("a bug"), pg.UniqueViolation),
    ],
)
def test_driver_errors_become_tethers(exc: psycopg.Error, expected: type[Exception]) -> None:
    assert type(errors.translate(exc)) is expected


# -- tenancy -----------------------------------------------------------------------------------------------


def test_projects_and_users_are_isolated(open_store: Any) -> None:
    mine, teammate = open_store(tenant("git:p1", "u1")), open_store(tenant("git:p1", "u2"))
    other_project, user_only = open_store(tenant("git:p2", "u1")), open_store(tenant(None, "u1"))
    put(mine, mem("0000000a", "Uploads retry with backoff", files=("src/up.py",)))
    put(mine, mem("0000000b", "I like short uploads answers", scope="user"))
    put(mine, mem("0000000c", "Scratch about uploads", scope="session", session="s1"))
    put(other_project, mem("0000000d", "Uploads in the other project", files=("src/up.py",)))
    mine.record([Event("0000000a", "surfaced", T0, "s1", 1), Event("0000000b", "acted", T0)])

    def seen(store: PostgresStore) -> set[str]:
        return {m.id for m in store.find(Query(status=None))}

    assert seen(mine) == {"0000000a", "0000000b", "0000000c"}
    assert seen(teammate) == {"0000000a"}  # project memory is shared; user and session memory are not
    assert seen(other_project) == {"0000000b", "0000000d"}  # my user memory follows me
    assert seen(user_only) == {"0000000b"}
    query = EMBEDDER.embed(["uploads"])[0]
    for store, expected in ((teammate, {"0000000a"}), (other_project, {"0000000b", "0000000d"})):
        assert {h.id for h in store.text(["uploads"], 10)} == expected
        assert {mid for mid, _ in store.nearest(EMBEDDER.id, query, 10)} == expected
    assert teammate.owners(["src/up.py"]) == {"src/up.py": ["0000000a"]}
    assert set(teammate.telemetry()) == {"0000000a"}  # my user memory's counters are mine
    assert [e.memory_id for e in teammate.events()] == ["0000000a"]
    assert teammate.surfaced_in_session("s1", 0) == {"0000000a"}
    assert other_project.get("0000000a") is None and other_project.telemetry(["0000000a"]) == {}
    before = other_project.version()
    put(teammate, mem("0000000e", "Another shared one"))
    assert other_project.version() == before != mine.version()


# -- conflict rules ----------------------------------------------------------------------------------------


def test_last_writer_by_updated_wins_and_history_is_in_the_event_log(open_store: Any) -> None:
    store = open_store()
    first = mem("0000000a", "Staging listens on 6443")
    newer = first.with_changes(summary="Staging listens on 7443", updated=T0 + timedelta(hours=2))
    older = first.with_changes(summary="Staging listens on 5443", updated=T0 + timedelta(hours=1))
    put(store, first)
    put(store, newer)
    put(store, older)  # a note from before the newer write, arriving late (a pull)
    assert store.get("0000000a") == newer
    events = {e.event: e.receipts for e in store.events("0000000a")}
    assert (
        events["revised"]["stored_hash"] == first.content_hash
        and events["revised"]["hash"] == newer.content_hash
    )
    assert (
        events["stale"]["hash"] == older.content_hash and events["stale"]["stored_hash"] == newer.content_hash
    )


def test_a_tombstone_keeps_a_deleted_memory_out_until_it_is_edited_again(open_store: Any) -> None:
    store = open_store()
    memory = mem("0000000a", "Retry uploads")
    put(store, memory)
    store.remove("0000000a")
    assert [e.event for e in store.events("0000000a")] == ["deleted"]
    put(store, memory, unless_deleted=True)  # a checkout that has not pulled the deletion syncs its note
    assert store.get("0000000a") is None
    edited = memory.with_changes(
        summary="Retry uploads twice", updated=datetime.now(UTC) + timedelta(minutes=1)
    )
    put(store, edited, unless_deleted=True)  # edited after the deletion: it is back
    assert store.get("0000000a") == edited
    put(store, mem("0000000b", "Scratch", scope="session", session="s"))
    store.remove("0000000b")  # session memory is ephemeral: no tombstone
    assert list(store.events("0000000b")) == []


# -- counters, concurrency, the vector index ---------------------------------------------------------------


def _count(url: str, project: str, n: int) -> None:
    store = PostgresStore(url, Tenant(project, secrets.token_hex(8)))
    try:
        for i in range(n):
            store.put(mem(secrets.token_hex(4), f"memory {i} of a writer {secrets.token_hex(4)}"))
            store.record([Event("0000000a", "surfaced", T0, "s", i), Event("0000000a", "acted", T0)])
    finally:
        store.close()


def test_counters_of_nine_concurrent_writers_add_up(open_store: Any, pg_url: str) -> None:
    store = open_store()
    put(store, mem("0000000a", "Shared gotcha"))
    workers = [
        multiprocessing.get_context("spawn").Process(target=_count, args=(pg_url, "git:p1", 10))
        for _ in range(9)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    tel = store.telemetry(["0000000a"])["0000000a"]
    assert (tel.surfaced, tel.acted) == (90, 90)
    assert store.count(Query()) == 1 + 90  # no add lost either


def test_nearest_uses_an_hnsw_index_per_embedder_and_dimension(open_store: Any, pg_url: str) -> None:
    store = open_store()
    for i in range(20):
        put(store, mem(f"{i:08x}", f"memory number {i} about uploads {i * 7}"))
    store.put_vectors("other-2", [("00000001", [0.6, 0.8])])
    with psycopg.connect(pg_url) as conn:
        indexes = {r[0] for r in conn.execute("SELECT name FROM tether_vector_indexes")}
        assert indexes == {
            search.index_name(EMBEDDER.id, EMBEDDER.dimension),
            search.index_name("other-2", 2),
        }
        conn.execute("SET enable_seqscan = off")
        dim = EMBEDDER.dimension
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                f"EXPLAIN SELECT id FROM tether_memories WHERE embedder = '{EMBEDDER.id}' AND dim = {dim}"
                f" ORDER BY vector::vector({dim}) <=> (SELECT vector FROM tether_memories LIMIT 1)::vector({dim})"
                " LIMIT 5"
            )
        )
    assert search.index_name(EMBEDDER.id, dim) in plan
    found = store.nearest(EMBEDDER.id, EMBEDDER.embed(["memory number 3 about uploads 21"])[0], 3)
    assert found[0][0] == "00000003"
