"""Which memory each write changed (the `changes` table): what a warm store keeps of the memories it read
outlives the writes that did not touch them.

Every write to a memory bumps the index's write counter (`vectors.version` in `meta`: once per memory put or
removed, once per batch of vectors) and logs, in the same transaction and under the counter's new value,
the id it changed (`*` for every row, a reindex's clear; NULL for none, vectors only) and whether it changed
what the full-text indexes hold (a pin, an archive, a moved anchor, a note rewritten with the same text do
not: their bm25 statistics, and so every term's postings, stand). A reader holding what it read as of
counter m, the index now at c, drops only what the versions in (m, c] changed, and only when the log holds
every one of them: a write by a tether that does not log (an older one, mid-upgrade), or a range pruned
away, leaves a gap, and the reader drops everything, as it did before the log.

    >>> log(conn, "3f1c2a9b", "vectors.version", text=False)  # doctest: +SKIP
    >>> changed_since(conn, 11, 12)  # doctest: +SKIP
    Changes(ids={'3f1c2a9b'}, text=False)
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

# Versions kept in the log: a reader further behind than this many writes re-reads everything (a reindex of
# 2,000 notes is one such burst; a reader that slept through it would re-read most rows anyway).
KEPT = 2_000
# The whole index changed (`SQLiteStore.clear`).
EVERY = "*"


@dataclass(frozen=True)
class Changes:
    """What the writes of a range of versions changed: these memories, and the full-text indexes or not."""

    ids: set[str]
    text: bool


def log(conn: sqlite3.Connection, memory_id: str | None, counter_key: str, *, text: bool = True) -> None:
    """Record that the write which just bumped `counter_key` changed `memory_id`, and the full-text
    indexes' content too unless `text` is False (inside its transaction)."""
    conn.execute(
        "INSERT OR REPLACE INTO changes (version, memory_id, text)"
        " SELECT CAST(value AS INTEGER), ?, ? FROM meta WHERE key = ?",
        (memory_id, int(text), counter_key),
    )
    conn.execute(
        "DELETE FROM changes WHERE version <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?) - ?",
        (counter_key, KEPT),
    )


def changed_since(conn: sqlite3.Connection, since: int, now: int) -> Changes | None:
    """What the writes after version `since` up to `now` changed; None when that cannot be known (a gap in
    the log, a counter that went back, or a write that changed every row)."""
    if now < since:
        return None
    if now == since:
        return Changes(set(), False)
    rows = conn.execute(
        "SELECT memory_id, text FROM changes WHERE version > ? AND version <= ?", (since, now)
    ).fetchall()
    if len(rows) != now - since:  # `version` is the key: one row per version, so none is missing
        return None
    ids = {mid for mid, _ in rows if mid is not None}
    return None if EVERY in ids else Changes(ids, any(text for _, text in rows))


def counter_of(version: str) -> tuple[str, int]:
    """`SQLiteStore.version()` (`index id:write counter`) as its two parts."""
    index_id, _, counter = version.rpartition(":")
    return index_id, int(counter)


__all__ = ["EVERY", "KEPT", "Changes", "changed_since", "counter_of", "log"]
