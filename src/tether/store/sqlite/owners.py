"""Which active memories name a path (the `file_refs` table), for the plain and the warm store.

A path's owners are a posting list of the file refs, and recall asks for them on every prompt: the touched
file and each directory above it (`src/`, `src/auth/`), the directories' lists the longest and the most
often asked for. A warm store (`SQLiteStore(warm=True)`) keeps each path's owners across writes: a write
changes the lists holding the memory it wrote and those of the paths it names now, and the change log
(`tether.store.sqlite.changes`) says which memories those are; when it cannot, everything is read anew.

    >>> owners = PathOwners(conn)  # doctest: +SKIP
    >>> owners.owners(["src/app.py", "src/"], version="ab:12")  # doctest: +SKIP
    {'src/app.py': ['3f1c2a9b'], 'src/': ['0a1b2c3d', '3f1c2a9b']}
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from tether.store.sqlite import changes
from tether.store.sqlite.rows import chunks

# Paths kept before all are dropped and refilled (a path and a short list each): bounded in a long-lived
# process however many files its recalls touch.
PATHS_MAX = 20_000
# Past this many memories written since the last look, every list is read anew (a reindex, a big sync).
CHANGED_MAX = 500


def read_owners(conn: sqlite3.Connection, paths: Sequence[str]) -> dict[str, list[str]]:
    """Active memories naming each exact path (file or directory ref); paths no active memory names are
    left out."""
    out: dict[str, list[str]] = {}
    for chunk in chunks(list(paths)):
        marks = ",".join("?" * len(chunk))
        for path, mid in conn.execute(
            # CROSS JOIN keeps file_refs first: left to itself the planner walks every active memory
            # through the status index (7 ms at 10k memories instead of 0.3).
            f"SELECT f.path, m.id FROM file_refs f CROSS JOIN memories m ON m.rowid = f.memory_rowid"
            f" WHERE f.path IN ({marks}) AND m.status = 'active'",
            chunk,
        ):
            out.setdefault(path, []).append(mid)
    return out


class PathOwners:
    """Each path's owners, read once per version of the index (`SQLiteStore.version()`)."""

    def __init__(self, conn: sqlite3.Connection, max_paths: int = PATHS_MAX) -> None:
        self.conn = conn
        self.max_paths = max_paths
        self._version: str | None = None
        self._owners: dict[str, list[str]] = {}  # path → owners (empty: none)
        self._complete = False  # every path any active memory names is kept (`load_all`): others have none

    def owners(self, paths: Sequence[str], *, version: str) -> dict[str, list[str]]:
        """What `read_owners` returns, in the same order, from the kept lists where it can."""
        if version != self._version or len(self._owners) > self.max_paths:
            self._drop_changed(version)
        missing = [path for path in dict.fromkeys(paths) if path not in self._owners]
        if missing and self._complete:
            for path in missing:
                self._owners[path] = []
        elif missing:
            found = read_owners(self.conn, missing)
            for path in missing:
                self._owners[path] = found.get(path, [])
        # In the order the SQL gives them: chunk by chunk, each chunk's paths as its index walks them (sorted:
        # UTF-8 and code points sort alike), each path's owners as they were read (a list no write touched
        # reads the same again: the index on file_refs walks a path's memories by rowid).
        out: dict[str, list[str]] = {}
        for chunk in chunks(list(paths)):
            for path in sorted(set(chunk)):
                if self._owners[path]:
                    out.setdefault(path, []).extend(self._owners[path])  # a new list: the kept one stays
        return out

    def load_all(self, *, version: str) -> None:
        """Read every path's owners at once (a warm store's quiet moment, `tether.store.sqlite.prefetch`):
        then a path no active memory names is known to have none without a read."""
        if version != self._version or len(self._owners) > self.max_paths:
            self._drop_changed(version)
        if self._complete:
            return
        found: dict[str, list[str]] = {}
        for path, mid in self.conn.execute(
            # Each path's owners by rowid, as `read_owners` walks the index on file_refs.
            "SELECT f.path, m.id FROM file_refs f CROSS JOIN memories m ON m.rowid = f.memory_rowid"
            " WHERE m.status = 'active' ORDER BY f.path, f.memory_rowid"
        ):
            found.setdefault(path, []).append(mid)
        if len(found) <= self.max_paths:
            self._owners = found
            self._complete = True

    def _drop_changed(self, version: str) -> None:
        """Drop the lists a write since the last version may have changed: those holding a memory it wrote
        and those of the paths the memories it wrote name now (all of them when the log cannot say)."""
        found = None
        if self._version is not None and len(self._owners) <= self.max_paths:
            (old_id, old), (new_id, new) = changes.counter_of(self._version), changes.counter_of(version)
            found = changes.changed_since(self.conn, old, new) if old_id == new_id else None
        self._version = version
        if found is None or len(found.ids) > CHANGED_MAX:
            self._owners.clear()
            self._complete = False
            return
        changed = found.ids
        stale = {path for path, mids in self._owners.items() if not changed.isdisjoint(mids)}
        for chunk in chunks(sorted(changed)):
            marks = ",".join("?" * len(chunk))
            stale.update(
                path
                for (path,) in self.conn.execute(
                    f"SELECT f.path FROM memories m JOIN file_refs f ON f.memory_rowid = m.rowid WHERE m.id IN ({marks})",
                    chunk,
                )
            )
        for path in stale:
            self._owners.pop(path, None)
        if self._complete:  # read the changed lists now: a path left out must still mean "none"
            fresh = read_owners(self.conn, sorted(stale))
            for path in stale:
                self._owners[path] = fresh.get(path, [])
