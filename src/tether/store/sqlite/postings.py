"""Full-text search for a long-lived process: each term's bm25 share in the rows it matches, kept while the
index stands still, and summed into exactly what one FTS5 OR query returns.

FTS5 scores an OR query of phrases with bm25 as a sum over the phrases, in query order, of one share per
phrase: its idf (from how many rows of the whole index match it) times its saturated frequency in the row
(0 where it is absent), a share that does not depend on the other phrases. A one-phrase query returns
exactly that share, so the shares fetched once per term add up, in the same order, to the very doubles the
OR query computes; sorted by them with ties in rowid order (the query's scan order, which its sorter keeps),
the rows come out the same and in the same order. `tests/test_store_sqlite_postings.py` checks that against
the SQL, ties and all.

What it buys: the work of a query is its terms' postings, and the long postings belong to common terms,
which recur from one prompt to the next (the touched files' words, the code's identifiers, the project's
vocabulary); a rare term's are short to fetch. A share depends on the whole index's statistics (how many
rows, how long on average, how many hold the term), so the postings are dropped when a write changed what
the full-text indexes hold; the writes that did not (a pin, an archive, a moved anchor, vectors: the change
log says so, `tether.store.sqlite.changes`) keep them, with the active memories read anew.

    >>> postings = TermPostings(conn)  # doctest: +SKIP
    >>> postings.ranked(Table.WORDS, ["upload", "retry"], 50, version="ab:12")  # doctest: +SKIP
    [('3f1c2a9b', 4.12), ...]
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.store.sqlite import changes

if TYPE_CHECKING:
    import numpy as np

# Postings kept across terms (a rowid and a share each, 16 bytes): at 100k memories a term common to a
# third of them holds 33k; past this the oldest terms go first (~80 MB). The quiet moments' prefetch fills
# up to `PREFETCH_SHARE` of it: at 100,000 memories bench_core's 132 common words hold 1.75M postings in the
# word index and 1.50M in the trigram one, and with 1M (half of the 2M bound before) the prefetch stopped
# after 70 words, the trigram index's none: a prepared store's first sight was 2.6x a bare MATCH in CPU
# time, with all of them held 2.0x. At 10,000 memories they hold 0.32M.
POSTINGS_MAX = 5_000_000
PREFETCH_SHARE = 0.75


@dataclass(frozen=True)
class Table:
    """One FTS5 table and the bm25 call that ranks it (`SQLiteStore.text` uses the same)."""

    name: str
    bm25: str


WORDS = Table("fts_words", "bm25(fts_words, 4.0, 1.0, 2.0)")
TRIGRAM = Table("fts_trigram", "bm25(fts_trigram)")


def fts_quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


class TermPostings:
    """Per-term postings of the FTS5 tables and the active memories' rowids, over one connection."""

    def __init__(self, conn: sqlite3.Connection, max_postings: int = POSTINGS_MAX) -> None:
        self.conn = conn
        self.max_postings = max_postings
        self._version: str | None = None
        self._terms: dict[tuple[str, str], tuple[Any, Any]] = {}  # (table, term) → (rowids, shares)
        self._held = 0
        self._ids: list[str] = []  # the active memories' ids, by position in `_rowids`
        self._rowids: Any = None  # their rowids, ascending (numpy int64)
        self._active: Any = None  # bool mask by rowid
        self._position: dict[str, int] = {}  # id → position in `_ids`

    def ranked(
        self,
        table: Table,
        words: Sequence[str],
        limit: int,
        *,
        version: str,
        among: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """(memory id, minus bm25) of the best `limit` active memories matching any of `words`, best first:
        what `SELECT m.id, -bm25 ... WHERE MATCH 'w1 OR w2 ...' AND m.status = 'active' [AND m.id IN among]
        ORDER BY bm25 LIMIT limit` returns, in its order."""
        import numpy as np

        self._check(version)
        allowed = self._active
        if among is not None:
            allowed = np.zeros(len(allowed), dtype=bool)
            positions = [self._position[mid] for mid in among if mid in self._position]
            allowed[self._rowids[positions]] = True
        # Terms no row holds add nothing (a touched file's identifiers are mostly such).
        lists = [found for found in (self._postings(table, word) for word in words) if len(found[0])]
        if not lists:
            return []
        size = max(len(allowed), *(int(rows[-1]) + 1 for rows, _ in lists))
        total = np.zeros(size, dtype=np.float64)
        hit = np.zeros(size, dtype=bool)
        for rows, shares in lists:  # in query order: each row's sum is built as FTS5 builds it
            total[rows] += shares
            hit[rows] = True
        hit[: len(allowed)] &= allowed
        hit[len(allowed) :] = False
        rows = np.flatnonzero(hit)
        if not len(rows):
            return []
        # FTS5 sorts by its bm25, minus this sum; a stable sort keeps ties in rowid order, as its sorter does.
        best = rows[_top(-total[rows], limit)]
        ids = self._ids
        at = np.searchsorted(self._rowids, best).tolist()
        return [(ids[i], score) for i, score in zip(at, total[best].tolist(), strict=True)]

    def prefetch(self, table: Table, words: Sequence[str], *, version: str, until: float) -> bool:
        """Fetch the postings of `words` not held yet, in order, at least one, until `time.monotonic()`
        passes `until` (then False: call again) or `PREFETCH_SHARE` of the bound is held (queries keep the rest)."""
        import time

        self._check(version)
        fetched = False
        for word in words:
            if self._held > self.max_postings * PREFETCH_SHARE:
                break
            if (table.name, word) in self._terms:
                continue
            if fetched and time.monotonic() > until:
                return False
            self._postings(table, word)
            fetched = True
        return True

    def _check(self, version: str) -> None:
        """Read the active memories anew when the index changed since (every write bumps `version`), and
        drop the postings unless the change log proves the full-text indexes' content the same."""
        if version == self._version:
            return
        import numpy as np

        if self._version is None or not _same_text(self.conn, self._version, version):
            self._terms.clear()
            self._held = 0
        rows = self.conn.execute(
            "SELECT rowid, id FROM memories WHERE status = 'active' ORDER BY rowid"
        ).fetchall()
        self._ids = [mid for _, mid in rows]
        self._rowids = np.fromiter((rowid for rowid, _ in rows), dtype=np.int64, count=len(rows))
        self._active = np.zeros(int(self._rowids[-1]) + 1 if len(rows) else 0, dtype=bool)
        self._active[self._rowids] = True
        self._position = {mid: n for n, mid in enumerate(self._ids)}
        self._version = version

    def _postings(self, table: Table, word: str) -> tuple[np.ndarray, np.ndarray]:
        key = (table.name, word)
        found = self._terms.pop(key, None)
        if found is None:
            import numpy as np

            fetched = self.conn.execute(
                f"SELECT rowid, {table.bm25} FROM {table.name} WHERE {table.name} MATCH ?", (fts_quote(word),)
            ).fetchall()
            rows = np.fromiter((r for r, _ in fetched), dtype=np.int64, count=len(fetched))
            # Minus bm25: exact, so these are FTS5's own shares. Rows come in rowid order, each once.
            shares = -np.fromiter((s for _, s in fetched), dtype=np.float64, count=len(fetched))
            found = (rows, shares)
            self._held += len(rows)
            while self._held > self.max_postings and self._terms:
                oldest = next(iter(self._terms))
                self._held -= len(self._terms.pop(oldest)[0])
        self._terms[key] = found  # most recently used last
        return found


def _same_text(conn: sqlite3.Connection, before: str, after: str) -> bool:
    """Whether every write between two versions of the index left the full-text indexes' content as it was."""
    (old_id, old), (new_id, new) = changes.counter_of(before), changes.counter_of(after)
    found = changes.changed_since(conn, old, new) if old_id == new_id else None
    return found is not None and not found.text


def _top(keys: np.ndarray, limit: int) -> np.ndarray:
    """The positions of the `limit` smallest `keys`, smallest first, equal keys in position order: the first
    `limit` of a stable argsort, without sorting all of them (a common term matches a third of the rows)."""
    import numpy as np

    if limit <= 0 or len(keys) <= 4 * limit:
        return np.argsort(keys, kind="stable")[:limit]
    cut = np.partition(keys, limit - 1)[limit - 1]
    kept = np.flatnonzero(keys <= cut)  # in position order: every key below the cut and all equal to it
    return kept[np.argsort(keys[kept], kind="stable")[:limit]]


__all__ = ["POSTINGS_MAX", "TRIGRAM", "WORDS", "Table", "TermPostings", "fts_quote"]
