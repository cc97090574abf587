"""The SQLite index's schema: connection settings and the named, ordered migrations that build it.

Migrations are functions recorded by name in a `migrations` table, so any database, empty or old, is
brought to the current schema by running the ones it has not seen.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.model.timestamps import iso, utcnow

# Long enough to ride out nine sessions writing at once, short enough that a wedged lock surfaces as an
# error instead of a hung hook (hooks have their own, shorter deadline).
BUSY_TIMEOUT_MS = 15_000
# A hook waits less: SQLite's busy wait cannot be interrupted by the hook's deadline (a signal is only
# handled once the C call returns), so the wait itself must end well before that deadline.
HOOK_BUSY_TIMEOUT_MS = 1_000


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run several statements inside the current transaction (`executescript` would commit it first)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
    if statement.strip():
        conn.execute(statement)


class _InTransaction:
    """A connection whose `executescript` stays inside the migration's transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def executescript(self, script: str) -> None:
        run_script(self._conn, script)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _migrate_core(conn: sqlite3.Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            summary TEXT NOT NULL,
            details TEXT NOT NULL DEFAULT '',
            category TEXT NOT NULL,
            scope TEXT NOT NULL,
            files TEXT NOT NULL DEFAULT '[]',
            priority TEXT NOT NULL DEFAULT 'normal',
            pinned INTEGER NOT NULL DEFAULT 0,
            origin TEXT NOT NULL DEFAULT 'user',
            supersedes TEXT,
            status TEXT NOT NULL DEFAULT 'active',
            session TEXT,
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            note_path TEXT,
            note_mtime_ns INTEGER,
            note_size INTEGER
        );
        CREATE INDEX memories_hash ON memories(content_hash);
        CREATE INDEX memories_status ON memories(status, scope);
        CREATE UNIQUE INDEX memories_note ON memories(note_path) WHERE note_path IS NOT NULL;
        CREATE TABLE file_refs (
            memory_rowid INTEGER NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
            path TEXT NOT NULL,
            is_dir INTEGER NOT NULL,
            PRIMARY KEY (memory_rowid, path)
        ) WITHOUT ROWID;
        CREATE INDEX file_refs_path ON file_refs(path);
        CREATE TABLE links (
            memory_rowid INTEGER NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
            target TEXT NOT NULL
        );
        CREATE INDEX links_target ON links(target);
        CREATE VIRTUAL TABLE fts_words USING fts5(summary, details, files, tokenize='porter unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE fts_trigram USING fts5(text, tokenize='trigram');
        CREATE TABLE embeddings (
            memory_rowid INTEGER PRIMARY KEY REFERENCES memories(rowid) ON DELETE CASCADE,
            embedder TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL
        );
        CREATE INDEX embeddings_embedder ON embeddings(embedder);
        CREATE TABLE telemetry (
            memory_id TEXT PRIMARY KEY,
            surfaced INTEGER NOT NULL DEFAULT 0,
            acted INTEGER NOT NULL DEFAULT 0,
            first_surfaced TEXT,
            last_surfaced TEXT,
            last_acted TEXT
        );
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL,
            session TEXT,
            turn INTEGER,
            event TEXT NOT NULL,
            receipts TEXT NOT NULL DEFAULT '{}',
            at TEXT NOT NULL
        );
        CREATE INDEX events_memory ON events(memory_id, seq);
        CREATE INDEX events_session ON events(session, turn);
        CREATE TABLE note_problems (
            path TEXT PRIMARY KEY,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            problem TEXT NOT NULL
        );
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            started TEXT NOT NULL,
            seen TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
    )


def _migrate_repomap(conn: sqlite3.Connection) -> None:
    from tether.store.sqlite.repomap import migrate_repomap

    migrate_repomap(conn)


def _migrate_pinned_index(conn: sqlite3.Connection) -> None:
    # Recall lists the pinned memories on every prompt: a partial index holds just those few rows instead
    # of a scan over every memory.
    conn.execute("CREATE INDEX memories_pinned ON memories(pinned) WHERE pinned = 1")


def _migrate_index_id(conn: sqlite3.Connection) -> None:
    # Files kept beside the index (the vector cache) name the database they were made from: a deleted and
    # rebuilt index starts its counters over, and must not trust a cache of the old one.
    conn.execute(
        "INSERT OR REPLACE INTO meta VALUES ('index.id', ?)", (os.urandom(8).hex(),)
    )  # `secrets.token_hex`'s bytes, without its import


def _migrate_anchors(conn: sqlite3.Connection) -> None:
    # A memory's anchors (`tether.model.anchor`) as JSON: read with the memory, never queried on their own
    # (recall reaches anchored memories through their files, which always include each anchor's path).
    conn.execute("ALTER TABLE memories ADD COLUMN anchors TEXT NOT NULL DEFAULT '[]'")


def _migrate_labels(conn: sqlite3.Connection) -> None:
    # Tags and aliases (`tether.model.labels`) as JSON lists, read with the memory; their words are
    # searched through the full-text tables, like the summary's.
    conn.execute("ALTER TABLE memories ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'")
    conn.execute("ALTER TABLE memories ADD COLUMN aliases TEXT NOT NULL DEFAULT '[]'")


def _migrate_link_keys(conn: sqlite3.Connection) -> None:
    # `links` holds each target as `link_key` makes it (case, spacing and `#heading` aside), so a link to
    # "Deploy Checklist" is found from a note titled "deploy checklist", as Obsidian resolves it.
    from tether.model.wikilinks import link_key

    rows = conn.execute("SELECT memory_rowid, target FROM links").fetchall()
    conn.execute("DELETE FROM links")
    keys = dict.fromkeys((rowid, link_key(target)) for rowid, target in rows)
    conn.executemany("INSERT INTO links VALUES (?, ?)", [(rowid, key) for rowid, key in keys if key])


def _migrate_changes(conn: sqlite3.Connection) -> None:
    # Which memory each bump of the write counter changed (`tether.store.sqlite.changes`): a warm store's
    # caches outlive the writes that did not touch what they hold. Starts empty: a reader older than the
    # log finds a gap and reads everything anew.
    conn.execute("CREATE TABLE changes (version INTEGER PRIMARY KEY, memory_id TEXT, text INTEGER NOT NULL)")


def _migrate_recent(conn: sqlite3.Connection) -> None:
    # The recent-change channel's rows beside the repo map's (`tether.repo.window`, `tether.repo.recent`):
    # a fresh process reads a touched file's recent lines instead of asking git. Start empty: the next
    # refresh records HEAD's last commits, the next recall of a file its lines.
    from tether.store.sqlite.repomap import migrate_recent

    migrate_recent(conn)


def _migrate_pairs_once(conn: sqlite3.Connection) -> None:
    # Each co-change pair once (lower id first) with an index on the other: a refresh writes half the rows.
    from tether.store.sqlite.repomap import migrate_pairs_once

    migrate_pairs_once(conn)


# Meta keys: the telemetry's surfaced and acted counters summed over every memory, kept in step by each write
# of a surfacing or an act (`bump_totals`), so the pull rate recall scales "ignored" by is one lookup
# (`SQLiteStore.feedback_totals`) instead of a scan that takes about 10 ms at 100,000 memories shown.
TELEMETRY_TOTALS = ("telemetry.surfaced", "telemetry.acted")


def summed_totals(conn: sqlite3.Connection) -> tuple[int, int]:
    """The telemetry's surfaced and acted counters summed: what `TELEMETRY_TOTALS` keeps."""
    surfaced, acted = conn.execute("SELECT total(surfaced), total(acted) FROM telemetry").fetchone()
    return int(surfaced), int(acted)


def _migrate_telemetry_totals(conn: sqlite3.Connection) -> None:
    for key, value in zip(TELEMETRY_TOTALS, summed_totals(conn), strict=True):
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))


def bump_totals(conn: sqlite3.Connection, surfaced: int, acted: int) -> None:
    """Add a write's surfacings and acts to `TELEMETRY_TOTALS`, in the transaction that counted them."""
    for key, count in zip(TELEMETRY_TOTALS, (surfaced, acted), strict=True):
        if count:
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?", (count, key))


# Named, ordered, recorded in `migrations`; a new database runs them all from nothing.
MIGRATIONS: tuple[tuple[str, Callable[[sqlite3.Connection], None]], ...] = (
    ("0001_core", _migrate_core),
    ("0002_repomap", _migrate_repomap),
    ("0003_pinned_index", _migrate_pinned_index),
    ("0004_index_id", _migrate_index_id),
    ("0005_anchors", _migrate_anchors),
    ("0006_labels", _migrate_labels),
    ("0007_link_keys", _migrate_link_keys),
    ("0008_changes", _migrate_changes),
    ("0009_recent", _migrate_recent),
    ("0010_repomap_pairs_once", _migrate_pairs_once),
    ("0011_telemetry_totals", _migrate_telemetry_totals),
)


def connect(path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    mode = _switch_to_wal(conn, busy_timeout_ms)
    if mode != "wal":  # pragma: no cover - only on filesystems without shared memory
        raise sqlite3.OperationalError(f"could not switch {path} to WAL mode (got {mode})")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    migrate(conn)
    return conn


def _switch_to_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> str:
    """Put the database in WAL mode, waiting out other processes doing the same.

    SQLite does not call the busy handler for every lock a journal-mode change takes: when
    several processes open a fresh database at once, the switch can fail with "database is
    locked" at once. Retry it with a short backoff until the busy timeout is spent.
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause = 0.005
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode == "wal":
                return "wal"
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply the migrations not yet recorded. Returns the names applied."""
    conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)")
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    if all(name in done for name, _ in MIGRATIONS):
        return []
    applied: list[str] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
        for name, step in MIGRATIONS:
            if name in done:
                continue
            step(_InTransaction(conn))  # type: ignore[arg-type]
            conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, iso(utcnow())))
            applied.append(name)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied
