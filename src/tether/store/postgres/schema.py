"""The team database's schema: named, ordered migrations recorded in `tether_migrations`.

As in `tether.store.sqlite.schema`: each migration is a function, run once, in order, inside one
transaction that holds an advisory lock, so several processes opening a fresh database at once neither
race nor run a step twice. Every table is prefixed `tether_`: a team database may be shared with other
applications.

Rows are keyed by tenant (`tether.store.postgres.tenancy`): `project` ('' for user memory) and `owner`
('' for project memory, the user id for user and session memory).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from tether.errors import StoreUnavailable

# The word channel's text search configuration: Snowball's English stemmer, the counterpart of the
# SQLite index's `porter` tokenizer (diacritics are folded in Python before the text reaches it, since
# the `unaccent` extension is not everywhere).
TEXT_CONFIG = "english"
# Any 64-bit number unique to tether: the advisory lock migrations and vector index builds take.
MIGRATION_LOCK = 0x7E7E_0013
EXTENSIONS = ("vector", "pg_trgm")


def _extensions(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    for name in EXTENSIONS:
        try:
            with conn.transaction():
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.FeatureNotSupported) as exc:
            raise StoreUnavailable(
                f"the team database lacks the {name} extension and this role may not create it ({exc}): "
                f"ask its owner to run CREATE EXTENSION {name}"
            ) from None
        except psycopg.errors.UndefinedFile:
            raise StoreUnavailable(
                f"the team database's server has no {name} extension installed: install it there "
                "(pgvector for vector; pg_trgm ships with Postgres' contrib)"
            ) from None


def _core(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    _extensions(conn)
    conn.execute(
        """
        CREATE TABLE tether_meta (key text PRIMARY KEY, value text NOT NULL);
        CREATE TABLE tether_memories (
            pk bigserial PRIMARY KEY,
            project text NOT NULL,
            owner text NOT NULL,
            id text NOT NULL,
            summary text NOT NULL,
            details text NOT NULL DEFAULT '',
            category text NOT NULL,
            scope text NOT NULL,
            files text[] NOT NULL DEFAULT '{}',
            links text[] NOT NULL DEFAULT '{}',
            priority text NOT NULL DEFAULT 'normal',
            pinned boolean NOT NULL DEFAULT false,
            origin text NOT NULL DEFAULT 'user',
            supersedes text,
            status text NOT NULL DEFAULT 'active',
            session text,
            created timestamptz NOT NULL,
            updated timestamptz NOT NULL,
            content_hash text NOT NULL,
            words tsvector NOT NULL,
            grams text NOT NULL,
            embedder text,
            dim integer,
            vector vector,
            UNIQUE (project, owner, id)
        );
        CREATE INDEX tether_memories_id ON tether_memories (id);
        CREATE INDEX tether_memories_tenant ON tether_memories (project, owner, status);
        CREATE INDEX tether_memories_hash ON tether_memories (content_hash);
        CREATE INDEX tether_memories_pinned ON tether_memories (project, owner) WHERE pinned;
        CREATE INDEX tether_memories_files ON tether_memories USING gin (files);
        CREATE INDEX tether_memories_links ON tether_memories USING gin (links);
        CREATE INDEX tether_memories_words ON tether_memories USING gin (words);
        CREATE INDEX tether_memories_grams ON tether_memories USING gin (grams gin_trgm_ops);
        CREATE TABLE tether_telemetry (
            project text NOT NULL,
            owner text NOT NULL,
            memory_id text NOT NULL,
            surfaced bigint NOT NULL DEFAULT 0,
            acted bigint NOT NULL DEFAULT 0,
            first_surfaced timestamptz,
            last_surfaced timestamptz,
            last_acted timestamptz,
            PRIMARY KEY (project, owner, memory_id)
        );
        CREATE TABLE tether_events (
            seq bigserial PRIMARY KEY,
            project text NOT NULL,
            owner text NOT NULL,
            memory_id text NOT NULL,
            session text,
            turn integer,
            event text NOT NULL,
            receipts text NOT NULL DEFAULT '{}',
            at timestamptz NOT NULL
        );
        CREATE INDEX tether_events_memory ON tether_events (project, owner, memory_id, seq);
        CREATE INDEX tether_events_tenant ON tether_events (project, owner, seq);
        CREATE INDEX tether_events_session ON tether_events (session, turn) WHERE event = 'surfaced';
        CREATE TABLE tether_versions (
            project text NOT NULL,
            owner text NOT NULL,
            n bigint NOT NULL,
            PRIMARY KEY (project, owner)
        );
        CREATE TABLE tether_vector_indexes (
            embedder text NOT NULL,
            dim integer NOT NULL,
            name text NOT NULL UNIQUE,
            PRIMARY KEY (embedder, dim)
        );
        """
    )


def _database_id(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    # Part of `version()`: a database dropped and made anew starts its counters over, and a cache keyed by
    # the old one's version must not be trusted.
    conn.execute("INSERT INTO tether_meta VALUES ('database.id', %s)", (secrets.token_hex(8),))


def _labels(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    # Tags and aliases (`tether.model.labels`), read with the memory; their words are in `words` and `grams`.
    conn.execute(
        "ALTER TABLE tether_memories ADD COLUMN tags text[] NOT NULL DEFAULT '{}',"
        " ADD COLUMN aliases text[] NOT NULL DEFAULT '{}'"
    )


def _anchors(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    # A memory's anchors as JSON, read with it, as in the SQLite index (until this, a write through the team
    # database lost a note's anchors).
    conn.execute("ALTER TABLE tether_memories ADD COLUMN anchors text NOT NULL DEFAULT '[]'")


def _link_keys(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    # `links` holds each target as `link_key` makes it (case, spacing and `#heading` aside), as in the
    # SQLite index: a link to "Deploy Checklist" is found from a note titled "deploy checklist".
    from tether.model.wikilinks import link_key

    rows = conn.execute("SELECT pk, links FROM tether_memories WHERE links <> '{}'").fetchall()
    for pk, links in rows:
        targets = links if isinstance(links, list) else []
        keys = [key for key in dict.fromkeys(link_key(str(t)) for t in targets) if key]
        conn.execute("UPDATE tether_memories SET links = %s WHERE pk = %s", (keys, pk))


# Named, ordered, recorded in `tether_migrations`; a new database runs them all from nothing.
MIGRATIONS: tuple[tuple[str, Callable[[psycopg.Connection[tuple[object, ...]]], None]], ...] = (
    ("0001_core", _core),
    ("0002_database_id", _database_id),
    ("0003_labels", _labels),
    ("0004_anchors", _anchors),
    ("0005_link_keys", _link_keys),
)


def opening(conn: psycopg.Connection[tuple[Any, ...]]) -> tuple[str, set[tuple[str, int]]]:
    """Migrate if needed; return the database's id and the (embedder, dimension) pairs with an HNSW
    index. One round trip when the schema is current, which it is for every open but the first: a hook
    opens the database on every prompt, and a team's server may be a network away."""
    try:
        with conn.transaction():
            row = conn.execute(
                "SELECT (SELECT array_agg(name) FROM tether_migrations),"
                " (SELECT value FROM tether_meta WHERE key = 'database.id'),"
                " (SELECT array_agg(ARRAY[embedder, dim::text]) FROM tether_vector_indexes)"
            ).fetchone()
    except psycopg.errors.UndefinedTable:
        row = None
    if row is None or not set(row[0] or ()) >= {name for name, _ in MIGRATIONS}:
        migrate(conn)
        return opening(conn)
    indexed = {(str(e), int(d)) for e, d in row[2] or ()}
    return str(row[1]), indexed


def migrate(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    """Apply the migrations not yet recorded, under the advisory lock. Returns the names applied.

    `conn` is in autocommit mode; each run is one transaction."""
    if conn.execute("SELECT to_regclass('tether_migrations')").fetchone() != (None,):
        done = {row[0] for row in conn.execute("SELECT name FROM tether_migrations")}
        if all(name in done for name, _ in MIGRATIONS):
            return []
    applied: list[str] = []
    with conn.transaction():
        # Under the lock, even the bookkeeping table: two processes creating it at once would collide.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS tether_migrations (name text PRIMARY KEY, applied timestamptz)"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM tether_migrations")}
        for name, step in MIGRATIONS:
            if name in done:
                continue
            step(conn)
            conn.execute("INSERT INTO tether_migrations VALUES (%s, now())", (name,))
            applied.append(name)
    return applied


def status(conn: psycopg.Connection[tuple[Any, ...]], visible: dict[str, Any]) -> dict[str, Any]:
    """The server's and extensions' versions, the counts of the tenant `visible` selects (see
    `tether.store.postgres.rows`), and the median of five round trips."""
    server = conn.execute("SHOW server_version").fetchone()
    extensions = dict(
        conn.execute(
            "SELECT extname, extversion FROM pg_extension WHERE extname = ANY(%s)", (list(EXTENSIONS),)
        )
    )
    tenant = sql.SQL("project = ANY(%(projects)s) AND owner = ANY(%(owners)s)")
    counts = conn.execute(
        sql.SQL(
            "SELECT count(*) FILTER (WHERE vector IS NOT NULL), (SELECT count(*) FROM tether_events WHERE {0}),"
            " (SELECT count(DISTINCT project) FROM tether_memories WHERE project != '')"
            " FROM tether_memories WHERE {0}"
        ).format(tenant),
        visible,
    ).fetchone()
    latencies = []
    for _ in range(5):
        start = time.perf_counter()
        conn.execute("SELECT 1").fetchone()
        latencies.append(time.perf_counter() - start)
    vectors, events, projects = counts if counts else (0, 0, 0)
    return {
        "server": server[0] if server else "?",
        "extensions": extensions,
        "vectors": int(vectors),
        "events": int(events),
        "projects_in_database": int(projects),
        "latency_ms": sorted(latencies)[2] * 1000,
    }
