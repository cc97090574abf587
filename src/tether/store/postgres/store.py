"""`PostgresStore`: the shared half of a team's memory (`MemoryStore`, `SearchIndex`, `EventLog`).

One database holds many projects and users (`tether.store.postgres.tenancy`); a store sees its tenant's
rows only. The word channel is a weighted `tsvector` (summary above file words above details, as in the
SQLite index), the trigram channel pg_trgm substring matches, and `nearest()` pgvector's HNSW index, one
per embedder and dimension (exact cosine, which the SQLite index computes, is the reference the store
benchmark measures it against). Telemetry counters are incremented in SQL (`surfaced = surfaced + 1`),
never read, changed and written back, so concurrent sessions on many machines lose no count.

Two rules make a shared store safe to sync many checkouts into (DESIGN §2, issue 13):
- **last writer by `updated` wins**: a put older than the stored row is refused and recorded as a
  `stale` event; a put that changes the content records a `revised` event with the old hash and time, so
  the history of a memory is in the event log even when two machines wrote it;
- **deletions leave a tombstone** (a `deleted` event): a sync that would bring back a memory deleted after
  its note was last written (`unless_deleted`, a checkout that has not pulled the deletion) is refused.

Not thread-safe (one per process, like the SQLite index); the pool serves a process that opens and
closes transactions, and keeps a connection warm between them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from tether.model.labels import keywords
from tether.model.memory import Memory
from tether.model.wikilinks import link_key
from tether.store.base import Event, NoteRef, Query, Telemetry, TextHit
from tether.store.postgres import eventlog, rows, schema, search
from tether.store.postgres.errors import translate, translating
from tether.store.postgres.schema import TEXT_CONFIG, opening
from tether.store.postgres.tenancy import Tenant

Conn = psycopg.Connection[tuple[Any, ...]]

# psycopg reports what it could not clean up (a rollback on a connection a hook's deadline interrupted
# mid-query) as a logged warning, which Python's last-resort handler prints to stderr, i.e. into the
# agent's hook output. The failure itself reaches tether as an exception and the hook's log.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


@translating
class PostgresStore:
    """The memories, search entries, vectors, telemetry and events of one tenant in a team database.

    >>> store = PostgresStore("postgresql:///tether", Tenant("git:1f0c...", "a3b4..."))  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        tenant: Tenant,
        *,
        connect_timeout: float = 10.0,
        max_connections: int = 4,
        build_indexes: bool = True,
    ) -> None:
        self.url = url
        self._build = build_indexes
        self.tenant = tenant
        self._params = rows.tenant_params(tenant)
        self._timeout = connect_timeout
        options: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, round(connect_timeout)),
            "application_name": "tether",
        }
        # A short-lived process (a hook) talks over the one connection it opens; a long-lived one (the MCP
        # server, the UI) keeps a pool that reconnects after a server restart.
        self._pool: ConnectionPool[Conn] | None = None
        if max_connections > 1:
            self._pool = ConnectionPool(
                url,
                min_size=1,
                max_size=max_connections,
                open=False,
                num_workers=1,
                timeout=connect_timeout,
                name="tether",
                kwargs=options,
            )
        self._single: Conn | None = None
        self._held: Conn | None = None
        self._depth = 0
        self._touched: set[tuple[str, str]] = set()
        self._pending_indexes: set[tuple[str, int]] = set()
        self._indexed: set[tuple[str, int]] = set()
        # The pool connects in the background while a connection of our own migrates: a refused or
        # unknown server fails at once with its reason (the pool would retry, and only log why).
        if self._pool is not None:
            self._pool.open(wait=False)
        try:
            conn = psycopg.connect(url, **options)
            try:
                database_id, self._indexed = opening(conn)
                # Which database and tenant this is: a checkout's note bookkeeping is only good for one.
                self.identity = f"{database_id}:{tenant.project or ''}:{tenant.user}"
            except BaseException:
                conn.close()
                raise
            if self._pool is None:
                self._single = conn
            else:
                conn.close()
        except psycopg.Error as exc:
            self.close()
            raise translate(exc) from exc
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._single is not None:
            self._single.close()

    @contextmanager
    def _checkout(self) -> Iterator[Conn]:
        if self._pool is None:
            assert self._single is not None, "the store is closed"
            yield self._single
            return
        with self._pool.connection() as conn:
            yield conn

    # -- connections and transactions ---------------------------------------------------------------

    @contextmanager
    def _conn(self) -> Iterator[Conn]:
        if self._held is not None:
            yield self._held
            return
        with self._checkout() as conn:
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write; nested calls join the outer one. Version counters are bumped at its end,
        in a fixed order, so two writers touching two tenants never deadlock on them."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        with self._checkout() as conn:
            self._held, self._depth = conn, 1
            try:
                with conn.transaction():
                    yield
                    for project, owner in sorted(self._touched):
                        conn.execute(
                            "INSERT INTO tether_versions VALUES (%s, %s, 1) ON CONFLICT (project, owner)"
                            " DO UPDATE SET n = tether_versions.n + 1",
                            (project, owner),
                        )
            finally:
                self._held, self._depth = None, 0
                self._touched.clear()
        if self._pending_indexes:
            self._pending_indexes, pending = set(), self._pending_indexes
            self._build_indexes(pending)

    # -- MemoryStore ------------------------------------------------------------------------------

    def put(
        self,
        memory: Memory,
        note: NoteRef | None = None,
        vector: Sequence[float] | None = None,
        embedder: str | None = None,
        *,
        unless_deleted: bool = False,
    ) -> None:
        """Insert or replace `memory` unless the stored one is newer (`updated`: a `stale` event records
        the refusal), or, with `unless_deleted`, it was deleted after `memory` was last updated. `note` is
        the checkout's business (`tether.store.postgres.team`) and is not kept here."""
        project, owner = self.tenant.key(memory.scope)
        key = {"project": project, "owner": owner, "id": memory.id}
        with self.transaction(), self._conn() as conn:
            old = conn.execute(
                "SELECT updated, content_hash FROM tether_memories"
                " WHERE project = %(project)s AND owner = %(owner)s AND id = %(id)s FOR UPDATE",
                key,
            ).fetchone()
            if old is not None and old[0] > memory.updated:
                self._event(conn, project, owner, memory, "stale", old)
                return
            if old is None and unless_deleted:
                deleted = conn.execute(
                    "SELECT max(at) FROM tether_events WHERE project = %(project)s AND owner = %(owner)s"
                    " AND memory_id = %(id)s AND event = 'deleted'",
                    key,
                ).fetchone()
                if deleted is not None and deleted[0] is not None and deleted[0] >= memory.updated:
                    return
            has_vector = vector is not None and embedder is not None
            values = {
                **key,
                "summary": memory.summary,
                "details": memory.details,
                "category": memory.category,
                "scope": memory.scope,
                "files": list(memory.files),
                "links": list(memory.link_keys),
                "priority": memory.priority,
                "pinned": memory.pinned,
                "origin": memory.origin,
                "supersedes": memory.supersedes,
                "status": memory.status,
                "session": memory.session,
                "created": memory.created,
                "updated": memory.updated,
                "content_hash": memory.content_hash,
                "tags": list(memory.tags),
                "aliases": list(memory.aliases),
                "anchors": json.dumps([a.to_front() for a in memory.anchors]) if memory.anchors else "[]",
                # Tags and aliases weigh as the summary does, as in the SQLite index; a nested tag's parts
                # are words there too (Postgres's parser would read `area/ops` as one file-path token).
                "fsummary": rows.fold(
                    f"{memory.summary} {keywords(memory.tags, memory.aliases).replace('/', ' ')}"
                ),
                "fdetails": rows.fold(memory.details),
                "ffiles": rows.fold(rows.files_text(memory.files)),
                "grams": memory.text.lower(),
                "embedder": embedder if has_vector else None,
                "dim": len(vector) if has_vector and vector is not None else None,
                "vector": rows.vector_literal(vector) if has_vector and vector is not None else None,
            }
            conn.execute(_UPSERT, values)
            if old is not None and old[1] != memory.content_hash:
                self._event(conn, project, owner, memory, "revised", old)
            self._touched.add((project, owner))
            if has_vector and embedder is not None and vector is not None:
                self._want_index(embedder, len(vector))

    def _event(
        self, conn: Conn, project: str, owner: str, memory: Memory, event: str, old: Sequence[Any]
    ) -> None:
        receipts = {
            "stored_hash": old[1],
            "stored_updated": rows.utc(old[0]).isoformat() if old[0] else None,  # type: ignore[union-attr]
            "hash": memory.content_hash,
            "updated": memory.updated.isoformat(),
        }
        conn.execute(
            "INSERT INTO tether_events (project, owner, memory_id, event, receipts, at)"
            " VALUES (%s, %s, %s, %s, %s, now())",
            (project, owner, memory.id, event, json.dumps(receipts)),
        )

    def remove(self, memory_id: str, *, tombstone: bool = True) -> None:
        """Delete the memory; a project or user memory leaves a `deleted` event (`tombstone`)."""
        with self.transaction(), self._conn() as conn:
            gone = conn.execute(
                sql.SQL(
                    "DELETE FROM tether_memories WHERE id = %(id)s AND {}"
                    " RETURNING project, owner, scope, content_hash, updated"
                ).format(rows.VISIBLE),
                {**self._params, "id": memory_id},
            ).fetchall()
            for project, owner, scope, digest, updated in gone:
                self._touched.add((project, owner))
                if tombstone and scope != "session":
                    receipts = {"hash": digest, "updated": rows.utc(updated).isoformat()}  # type: ignore[union-attr]
                    conn.execute(
                        "INSERT INTO tether_events (project, owner, memory_id, event, receipts, at)"
                        " VALUES (%s, %s, %s, 'deleted', %s, now())",
                        (project, owner, memory_id, json.dumps(receipts)),
                    )

    def get(self, memory_id: str) -> Memory | None:
        found = self.memories([memory_id])
        return found.get(memory_id)

    def find(self, query: Query) -> list[Memory]:
        params = dict(self._params)
        statement = sql.SQL('SELECT {} FROM tether_memories{} ORDER BY created, id COLLATE "C"').format(
            rows.SELECT, rows.where(query, params)
        )
        if query.limit is not None:
            statement += sql.SQL(" LIMIT {}").format(sql.Literal(int(query.limit)))
        with self._conn() as conn:
            return [rows.memory(row) for row in conn.execute(statement, params)]

    def count(self, query: Query) -> int:
        params = dict(self._params)
        statement = sql.SQL("SELECT count(*) FROM tether_memories{}").format(rows.where(query, params))
        with self._conn() as conn:
            row = conn.execute(statement, params).fetchone()
        return int(row[0]) if row else 0

    def memories(self, ids: Iterable[str]) -> dict[str, Memory]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        statement = sql.SQL("SELECT {} FROM tether_memories WHERE id = ANY(%(ids)s) AND {}").format(
            rows.SELECT, rows.VISIBLE
        )
        with self._conn() as conn:
            found = {
                m.id: m for m in map(rows.memory, conn.execute(statement, {**self._params, "ids": wanted}))
            }
        return {mid: found[mid] for mid in wanted if mid in found}

    def by_hash(self, content_hash: str) -> list[Memory]:
        statement = sql.SQL("SELECT {} FROM tether_memories WHERE content_hash = %(hash)s AND {}").format(
            rows.SELECT, rows.VISIBLE
        )
        with self._conn() as conn:
            return [rows.memory(r) for r in conn.execute(statement, {**self._params, "hash": content_hash})]

    def owners(self, paths: Sequence[str]) -> dict[str, list[str]]:
        if not paths:
            return {}
        statement = sql.SQL(
            "SELECT p, id FROM tether_memories, unnest(files) AS p WHERE files && %(paths)s::text[]"
            " AND p = ANY(%(paths)s) AND status = 'active' AND {} ORDER BY p, created, id COLLATE \"C\""
        ).format(rows.VISIBLE)
        out: dict[str, list[str]] = {}
        with self._conn() as conn:
            for path, mid in conn.execute(statement, {**self._params, "paths": list(paths)}):
                out.setdefault(path, []).append(mid)
        return out

    def linking(self, targets: Sequence[str]) -> list[str]:
        targets = list(dict.fromkeys(link_key(t) for t in targets))
        if not targets:
            return []
        statement = sql.SQL(
            "SELECT id FROM tether_memories WHERE links && %(targets)s::text[] AND {} ORDER BY created, id"
        ).format(rows.VISIBLE)
        with self._conn() as conn:
            return [r[0] for r in conn.execute(statement, {**self._params, "targets": list(targets)})]

    def version(self) -> str:
        """The database's id and the sum of this tenant's write counters (bumped by every write)."""
        statement = sql.SQL(
            "SELECT (SELECT value FROM tether_meta WHERE key = 'database.id'),"
            " (SELECT coalesce(sum(n), 0) FROM tether_versions WHERE {})"
        ).format(rows.VISIBLE)
        with self._conn() as conn:
            row = conn.execute(statement, self._params).fetchone()
        return f"{row[0] if row else '-'}:{row[1] if row else 0}"

    def clear(self) -> None:
        """Forget this tenant's memories but session ones (telemetry and events stay)."""
        with self.transaction(), self._conn() as conn:
            gone = conn.execute(
                sql.SQL(
                    "DELETE FROM tether_memories WHERE scope != 'session' AND {} RETURNING project, owner"
                ).format(rows.VISIBLE),
                self._params,
            ).fetchall()
            self._touched.update((p, o) for p, o in gone)

    # -- SearchIndex ------------------------------------------------------------------------------

    def text(
        self, words: Sequence[str], limit: int, *, trigram: bool = True, among: Sequence[str] | None = None
    ) -> list[TextHit]:
        """Weighted `ts_rank` over the word index and pg_trgm substring matches, active memories only."""
        if not words or (among is not None and not among):
            return []
        if among is not None:
            limit = len(among)
        with self._conn() as conn:
            return search.text(conn, self._params, words, limit, trigram=trigram, among=among)

    def nearest(self, embedder: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """The top `k` by cosine through the HNSW index of `embedder`'s vectors, best first."""
        if not any(vector) or k <= 0:
            return []
        with self._conn() as conn:
            return search.nearest(conn, self._params, embedder, vector, k)

    def missing_vectors(self, embedder: str) -> list[Memory]:
        statement = sql.SQL(
            "SELECT {} FROM tether_memories WHERE embedder IS DISTINCT FROM %(embedder)s AND {}"
            ' ORDER BY created, id COLLATE "C"'
        ).format(rows.SELECT, rows.VISIBLE)
        with self._conn() as conn:
            return [rows.memory(r) for r in conn.execute(statement, {**self._params, "embedder": embedder})]

    def put_vectors(self, embedder: str, vectors: Iterable[tuple[str, Sequence[float]]]) -> None:
        items = [(mid, list(v)) for mid, v in vectors]
        if not items:
            return
        statement = sql.SQL(
            "UPDATE tether_memories SET embedder = %(embedder)s, dim = %(dim)s, vector = %(vector)s::vector"
            " WHERE id = %(id)s AND {} RETURNING project, owner"
        ).format(rows.VISIBLE)
        with self.transaction(), self._conn() as conn:
            for mid, vector in items:
                values = {**self._params, "embedder": embedder, "dim": len(vector), "id": mid}
                updated = conn.execute(
                    statement, {**values, "vector": rows.vector_literal(vector)}
                ).fetchall()
                self._touched.update((p, o) for p, o in updated)
                self._want_index(embedder, len(vector))

    def drop_vectors(self, keep: str | None = None) -> None:
        statement = sql.SQL(
            "UPDATE tether_memories SET embedder = NULL, dim = NULL, vector = NULL"
            " WHERE embedder IS NOT NULL AND embedder != %(keep)s AND {} RETURNING project, owner"
        ).format(rows.VISIBLE)
        with self.transaction(), self._conn() as conn:
            gone = conn.execute(statement, {**self._params, "keep": keep or ""}).fetchall()
            self._touched.update((p, o) for p, o in gone)

    def _want_index(self, embedder: str, dim: int) -> None:
        if (embedder, dim) not in self._indexed:
            self._pending_indexes.add((embedder, dim))

    def _build_indexes(self, wanted: set[tuple[str, int]]) -> None:
        if not self._build:
            return  # a hook: the next command builds it (a build can outlast the hook's deadline)
        with self._checkout() as conn:
            self._indexed |= search.build_indexes(conn, wanted)

    # -- EventLog ---------------------------------------------------------------------------------

    def record(self, events: Iterable[Event]) -> None:
        """Append events; `surfaced` and `acted` increment the memory's counters in SQL, in one
        transaction, rows locked in a fixed order (concurrent batches never deadlock)."""
        batch = list(events)
        if not batch:
            return
        with self.transaction(), self._conn() as conn:
            eventlog.record(conn, self.tenant, self._params, batch)

    def telemetry(self, ids: Sequence[str] | None = None) -> dict[str, Telemetry]:
        params = dict(self._params)
        statement = sql.SQL(
            "SELECT memory_id, surfaced, acted, first_surfaced, last_surfaced, last_acted FROM tether_telemetry"
            " WHERE {}"
        ).format(rows.VISIBLE)
        if ids is not None:
            statement += sql.SQL(" AND memory_id = ANY(%(ids)s)")
            params["ids"] = list(ids)
        with self._conn() as conn:
            return {
                mid: Telemetry(int(s), int(a), rows.utc(first), rows.utc(last), rows.utc(last_acted))
                for mid, s, a, first, last, last_acted in conn.execute(statement, params)
            }

    def feedback_totals(self) -> tuple[int, int]:
        statement = sql.SQL(
            "SELECT coalesce(sum(surfaced), 0), coalesce(sum(acted), 0) FROM tether_telemetry WHERE {}"
        ).format(rows.VISIBLE)
        with self._conn() as conn:
            row = conn.execute(statement, dict(self._params)).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def events(self, memory_id: str | None = None, limit: int = 100) -> Iterator[Event]:
        params: dict[str, Any] = {**self._params, "limit": limit}
        clause = sql.SQL("")
        if memory_id is not None:
            clause = sql.SQL(" AND memory_id = %(id)s")
            params["id"] = memory_id
        statement = sql.SQL(
            "SELECT memory_id, event, at, session, turn, receipts FROM tether_events WHERE {}{}"
            " ORDER BY seq DESC LIMIT %(limit)s"
        ).format(rows.VISIBLE, clause)
        with self._conn() as conn:
            found = conn.execute(statement, params).fetchall()
        for mid, event, at, session, turn, receipts in found:
            yield Event(mid, event, rows.utc(at) or at, session, turn, json.loads(receipts))

    def surfaced_in_session(self, session: str, since_turn: int) -> set[str]:
        statement = sql.SQL(
            "SELECT DISTINCT memory_id FROM tether_events WHERE session = %(session)s AND event = 'surfaced'"
            " AND turn > %(turn)s AND {}"
        ).format(rows.VISIBLE)
        with self._conn() as conn:
            return {
                r[0]
                for r in conn.execute(statement, {**self._params, "session": session, "turn": since_turn})
            }

    # -- what `tether store status` shows -----------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Server and extension versions, this tenant's counts, and the round-trip latency."""
        with self._conn() as conn:
            return schema.status(conn, self._params)

    def describe(self) -> dict[str, Any]:
        status = self.status()
        return {
            "backend": "postgres",
            "version": f"PostgreSQL {status.pop('server')}",
            "project": self.tenant.project,
            "user": self.tenant.user,
            **status,
        }


_UPSERT = f"""
INSERT INTO tether_memories (project, owner, id, summary, details, category, scope, files, links, priority,
    pinned, origin, supersedes, status, session, created, updated, content_hash, tags, aliases, anchors, words,
    grams, embedder, dim, vector)
VALUES (%(project)s, %(owner)s, %(id)s, %(summary)s, %(details)s, %(category)s, %(scope)s, %(files)s,
    %(links)s, %(priority)s, %(pinned)s, %(origin)s, %(supersedes)s, %(status)s, %(session)s, %(created)s,
    %(updated)s, %(content_hash)s, %(tags)s, %(aliases)s, %(anchors)s,
    setweight(to_tsvector('{TEXT_CONFIG}', %(fsummary)s), 'A') || setweight(to_tsvector('{TEXT_CONFIG}', %(ffiles)s), 'B')
        || setweight(to_tsvector('{TEXT_CONFIG}', %(fdetails)s), 'D'),
    %(grams)s, %(embedder)s, %(dim)s, %(vector)s::vector)
ON CONFLICT (project, owner, id) DO UPDATE SET
    summary = excluded.summary, details = excluded.details, category = excluded.category,
    scope = excluded.scope, files = excluded.files, links = excluded.links, priority = excluded.priority,
    pinned = excluded.pinned, origin = excluded.origin, supersedes = excluded.supersedes,
    status = excluded.status, session = excluded.session, created = excluded.created,
    updated = excluded.updated, content_hash = excluded.content_hash, tags = excluded.tags,
    aliases = excluded.aliases, anchors = excluded.anchors, words = excluded.words,
    grams = excluded.grams, embedder = excluded.embedder, dim = excluded.dim, vector = excluded.vector
WHERE tether_memories.updated <= excluded.updated
"""
