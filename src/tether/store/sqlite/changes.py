"""Which memory each write changed (the `changes` table): what a warm store keeps of the memories it read
outlives the writes that did not touch them.

Every write to a memory bumps the index's write counter (`vectors.version` in `meta`: once per memory put or
removed, once per batch of vectors) and logs, in the same transaction and under the counter's new value,
the id it changed: `*` for every row (a reindex's clear), NULL for none (vectors only). A reader holding
memories as of counter m, the index now at c, drops only the ids logged in (m, c], and only when the log
holds every one of those versions: a write by a tether that does not log (an older one, mid-upgrade), or a
range pruned away, leaves a gap, and the reader drops everything, as it did before the log.

    >>> log(conn, "3f1c2a9b")  # doctest: +SKIP
    >>> changed_since(conn, 11, 12)  # doctest: +SKIP
    {'3f1c2a9b'}
"""

from __future__ import annotations

import sqlite3

# Versions kept in the log: a reader further behind than this many writes re-reads everything (a reindex of
# 2,000 notes is one such burst; a reader that slept through it would re-read most rows anyway).
KEPT = 2_000
# The whole index changed (`SQLiteStore.clear`).
EVERY = "*"


def log(conn: sqlite3.Connection, memory_id: str | None, counter_key: str) -> None:
    """Record that the write which just bumped `counter_key` changed `memory_id` (inside its transaction)."""
    conn.execute(
        "INSERT OR REPLACE INTO changes (version, memory_id)"
        " SELECT CAST(value AS INTEGER), ? FROM meta WHERE key = ?",
        (memory_id, counter_key),
    )
    conn.execute(
        "DELETE FROM changes WHERE version <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?) - ?",
        (counter_key, KEPT),
    )


def changed_since(conn: sqlite3.Connection, since: int, now: int) -> set[str] | None:
    """The ids written after version `since` up to `now`; None when that cannot be known (a gap in the log,
    a counter that went back, or a write that changed every row)."""
    if now < since:
        return None
    if now == since:
        return set()
    rows = conn.execute(
        "SELECT version, memory_id FROM changes WHERE version > ? AND version <= ?", (since, now)
    ).fetchall()
    if len(rows) != now - since:  # `version` is the key: one row per version, so none is missing
        return None
    changed = {mid for _, mid in rows if mid is not None}
    return None if EVERY in changed else changed


__all__ = ["EVERY", "KEPT", "changed_since", "log"]
