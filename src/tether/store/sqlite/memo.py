"""The memories a SQLite store has read, kept across the writes that did not change them.

Recall reads a few hundred memories by id per prompt (`SQLiteStore.memories`). Kept, they cost nothing the
next time; but every write bumps the index's version, and dropping them all on each write made the first
prompt after it read them again (7.5 us each: 3 in SQL, 4.5 making the `Memory`). The change log
(`tether.store.sqlite.changes`) says which ids a write touched: only those are dropped, unless the log
cannot tell (then everything is). A warm store (`preload`) reads every active memory at once the first
time, in one query (per row about what a read by id costs: 0.13-0.21 s at 10,000 on a loaded machine, once
per process), so that a long-lived process's recalls never read one unless it changed or is inactive.

`Memory` is frozen, so a kept object is handed out as it is; a changed memory is a new object, which is what
`tether.recall.cache` ties its per-memory work to.

    >>> memo = Memo(conn)  # doctest: +SKIP
    >>> memo.check("ab12", 7); memo.read(["3f1c2a9b"])  # doctest: +SKIP
    {'3f1c2a9b': Memory(...)}
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from tether.model.memory import Memory
from tether.store.sqlite import changes
from tether.store.sqlite.rows import COLUMNS, chunks, memory_of

# A memo larger than this is dropped and refilled: bounded memory in a long-lived process.
MEMO_MAX = 50_000
# A warm store reads every active memory at once up to this many (10.5 MiB held at 10,000, measured with
# tracemalloc); past it, by id as recall asks, as before.
PRELOAD_MAX = 20_000


class Memo:
    """Memories by id as of one version of the index (`check`), read on demand (`read`)."""

    def __init__(self, conn: sqlite3.Connection, *, preload: int = 0) -> None:
        self.conn = conn
        self.preload = preload
        self._kept: dict[str, Memory] = {}
        self._at: tuple[str, int] | None = None  # (index id, write counter) the kept rows are valid at
        self._loaded = False  # every active memory read once since the last full drop

    def check(self, index_id: str, counter: int) -> None:
        """Drop what changed since the last check (everything when the log cannot say)."""
        at = self._at
        if at == (index_id, counter):
            return
        changed = None
        if at is not None and at[0] == index_id and len(self._kept) <= MEMO_MAX:
            changed = changes.changed_since(self.conn, at[1], counter)
        if changed is None:
            self._kept.clear()
            self._loaded = False
        else:
            for mid in changed.ids:
                self._kept.pop(mid, None)
        self._at = (index_id, counter)

    def read(self, ids: Iterable[str]) -> dict[str, Memory]:
        """The memories with these ids, whatever their status, in the order asked; unknown ids left out."""
        if self.preload and not self._loaded:
            self._loaded = True  # tried once per full drop, loaded or not
            self._load_active()
        kept = self._kept
        wanted = list(dict.fromkeys(ids))
        missing = [mid for mid in wanted if mid not in kept]
        for chunk in chunks(missing):
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(
                f"SELECT {', '.join(COLUMNS)} FROM memories WHERE id IN ({marks})", chunk
            ):
                kept[row[0]] = memory_of(row)
        return {mid: kept[mid] for mid in wanted if mid in kept}

    def _load_active(self) -> None:
        count = self.conn.execute("SELECT count(*) FROM memories WHERE status = 'active'").fetchone()[0]
        if count > self.preload:
            return
        kept = self._kept
        for row in self.conn.execute(f"SELECT {', '.join(COLUMNS)} FROM memories WHERE status = 'active'"):
            if row[0] not in kept:  # a kept object stays the same object: what recall's cache is tied to
                kept[row[0]] = memory_of(row)

    def __len__(self) -> int:
        return len(self._kept)
