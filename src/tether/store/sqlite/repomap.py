"""The repo map's tables in tether's SQLite index (DESIGN §3). All of the repo map's SQL lives here.

Paths get integer ids so the co-change pairs stay small, and so a rename is one `UPDATE` of a path
rather than a rewrite of every pair that mentions it. A pair is stored once, as (lower id, higher id): a
path's neighbours are a primary-key prefix scan where it is `a` and an index scan where it is `b`. (Both
directions made that one scan, at twice the rows written: 45% of a pull's refresh CPU went to them.)

    >>> conn = sqlite3.connect(":memory:")
    >>> migrate_repomap(conn)
    >>> RepoMapTables(conn).present("src/app.py")
    False
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from tether.errors import TetherError
from tether.store.base import CachedImports, CoChangeWrite, RecentCommit, RecentLines
from tether.store.sqlite.errors import translating

_SCHEMA = """
CREATE TABLE IF NOT EXISTS repomap_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
-- Every path the map knows: listed in the work tree now (present = 1) and/or seen in counted history.
CREATE TABLE IF NOT EXISTS repomap_paths (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    present INTEGER NOT NULL DEFAULT 0,
    changes INTEGER NOT NULL DEFAULT 0,  -- counted commits that touched the path
    fan_in INTEGER NOT NULL DEFAULT 0    -- files importing it
);
-- Co-change: n = counted commits touching both a and b, stored once with a < b.
CREATE TABLE IF NOT EXISTS repomap_pairs (
    a INTEGER NOT NULL,
    b INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (a, b)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS repomap_pairs_b ON repomap_pairs (b);
-- Parsed imports per source file, keyed by the stat and the content digest they were parsed from.
CREATE TABLE IF NOT EXISTS repomap_imports (
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    digest TEXT NOT NULL,
    specs TEXT NOT NULL  -- import specs joined by newlines (see tether.repo.imports)
) WITHOUT ROWID;
"""
# The recent-change channel's rows (`tether.repo.window`, `tether.repo.recent`): HEAD's last commits with
# the paths they touched (`ord` grows with newness), and per file its recent lines as last computed.
_RECENT_SCHEMA = """
CREATE TABLE IF NOT EXISTS repomap_recent_commits (
    ord INTEGER PRIMARY KEY,
    sha TEXT NOT NULL,
    parent INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS repomap_recent_touches (
    path TEXT NOT NULL,
    ord INTEGER NOT NULL,
    PRIMARY KEY (path, ord)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS repomap_recent_lines (
    path TEXT PRIMARY KEY,
    head TEXT NOT NULL,
    commits INTEGER NOT NULL,
    horizon INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    base TEXT NOT NULL,
    runs TEXT NOT NULL  -- "first-last" runs joined by commas
) WITHOUT ROWID;
"""


def migrate_repomap(conn: sqlite3.Connection) -> None:
    """Create the repo map's tables from nothing (idempotent)."""
    conn.executescript(_SCHEMA)
    migrate_recent(conn)


def migrate_recent(conn: sqlite3.Connection) -> None:
    """Create the recent-change channel's tables (idempotent)."""
    conn.executescript(_RECENT_SCHEMA)


def migrate_pairs_once(conn: sqlite3.Connection) -> None:
    """Keep each co-change pair once, as (lower id, higher id), from an index that stored both directions
    (the same counts: nothing is recounted), with the index a path's pairs as `b` are found by."""
    conn.execute("DELETE FROM repomap_pairs WHERE a > b")
    conn.execute("CREATE INDEX IF NOT EXISTS repomap_pairs_b ON repomap_pairs (b)")


@translating
class RepoMapTables:
    """Reads and writes the repo map's rows. Writers go through `write()`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # -- transactions -----------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[None]:
        """One atomic write. `BEGIN IMMEDIATE` serializes concurrent refreshes; inside a caller's
        transaction it nests as a savepoint."""
        conn = self.conn
        if conn.in_transaction:
            conn.execute("SAVEPOINT repomap")
            try:
                yield
            except BaseException:
                conn.execute("ROLLBACK TO repomap")
                conn.execute("RELEASE repomap")
                raise
            conn.execute("RELEASE repomap")
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- state ------------------------------------------------------------------------------------

    def state(self) -> dict[str, str]:
        return dict(self._rows("SELECT key, value FROM repomap_state"))

    def set_state(self, values: Mapping[str, str | None]) -> None:
        for key, value in values.items():
            if value is None:
                self.conn.execute("DELETE FROM repomap_state WHERE key = ?", (key,))
            else:
                self.conn.execute(
                    "INSERT INTO repomap_state (key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    # -- reads on the hot path (a hook calls these on every prompt) --------------------------------

    def present(self, path: str) -> bool:
        row = self._one("SELECT present FROM repomap_paths WHERE path = ?", (path,))
        return bool(row and row[0])

    def present_under(self, directory: str) -> bool:
        """Whether any present path starts with `directory` (which ends in '/')."""
        # '0' is the character after '/', so [dir/, dir0) is exactly the paths under dir/ (index range).
        upper = directory[:-1] + "0"
        row = self._one(
            "SELECT 1 FROM repomap_paths WHERE path >= ? AND path < ? AND present = 1 LIMIT 1",
            (directory, upper),
        )
        return row is not None

    def ending_with(self, name: str, limit: int) -> list[str]:
        """Present paths that are `name` or end with `/name`, at most `limit` (one scan of the paths: a
        prompt naming a file asks this once or twice)."""
        escaped = "".join(f"[{c}]" if c in "*?[" else c for c in name)  # GLOB matches case, as paths do
        rows = self._rows(
            "SELECT path FROM repomap_paths WHERE present = 1 AND (path = ? OR path GLOB ?) ORDER BY path LIMIT ?",
            (name, f"*/{escaped}", limit),
        )
        return [str(p) for (p,) in rows]

    def neighbours(self, path: str, min_count: int, limit: int) -> tuple[int, list[tuple[str, int]]]:
        """(changes of `path`, [(neighbour, shared commits)]) for present neighbours, strongest first."""
        row = self._one("SELECT id, changes FROM repomap_paths WHERE path = ?", (path,))
        if row is None or not row[1]:
            return 0, []
        rows = self._rows(
            "SELECT p.path, r.n FROM (SELECT b AS other, n FROM repomap_pairs WHERE a = ?1 AND n >= ?2 "
            "UNION ALL SELECT a, n FROM repomap_pairs WHERE b = ?1 AND n >= ?2) r "
            "JOIN repomap_paths p ON p.id = r.other WHERE p.present = 1 ORDER BY r.n DESC, p.path LIMIT ?3",
            (row[0], min_count, limit),
        )
        return int(row[1]), [(str(p), int(n)) for p, n in rows]

    def fan_in(self, path: str) -> int:
        row = self._one("SELECT fan_in FROM repomap_paths WHERE path = ? AND present = 1", (path,))
        return int(row[0]) if row else 0

    def change_count(self, path: str) -> int:
        row = self._one("SELECT changes FROM repomap_paths WHERE path = ?", (path,))
        return int(row[0]) if row else 0

    def pair_count(self, a: str, b: str) -> int:
        row = self._one(
            "SELECT r.n FROM repomap_paths pa JOIN repomap_paths pb JOIN repomap_pairs r "
            "ON r.a = min(pa.id, pb.id) AND r.b = max(pa.id, pb.id) WHERE pa.path = ? AND pb.path = ?",
            (a, b),
        )
        return int(row[0]) if row else 0

    # -- co-change writes -------------------------------------------------------------------------

    def path_ids(self) -> dict[str, int]:
        return {str(p): int(i) for i, p in self._rows("SELECT id, path FROM repomap_paths")}

    def clear_history(self) -> None:
        """Forget all co-change history (a rebuild follows)."""
        self.conn.execute("DELETE FROM repomap_pairs")
        self.conn.execute("UPDATE repomap_paths SET changes = 0")

    def apply_cochange(self, w: CoChangeWrite) -> None:
        c = self.conn
        if w.dropped:
            ids = [(i,) for i in w.dropped]
            c.executemany("DELETE FROM repomap_pairs WHERE a = ?", ids)
            c.executemany("DELETE FROM repomap_pairs WHERE b = ?", ids)
            c.executemany("DELETE FROM repomap_paths WHERE id = ?", ids)
        moved = [(i, p) for i, p in w.paths.items() if i not in w.new_ids and i not in w.dropped]
        # Two phases so a swap (a->b, b->a) never trips the UNIQUE constraint on path.
        c.executemany("UPDATE repomap_paths SET path = ? WHERE id = ?", [(f"\0{i}", i) for i, _ in moved])
        c.executemany("UPDATE repomap_paths SET path = ? WHERE id = ?", [(p, i) for i, p in moved])
        c.executemany(
            "INSERT INTO repomap_paths (id, path) VALUES (?, ?)",
            [(i, w.paths[i]) for i in sorted(w.new_ids) if i not in w.dropped],
        )
        c.executemany(
            "UPDATE repomap_paths SET changes = changes + ? WHERE id = ?",
            [(n, i) for i, n in w.changes.items() if i not in w.dropped],
        )
        dropped = w.dropped
        if dropped:
            rows = [(a, b, n) for (a, b), n in w.pairs.items() if a not in dropped and b not in dropped]
        else:  # (a first build's parts: no test per pair)
            rows = [(a, b, n) for (a, b), n in w.pairs.items()]
        c.executemany(
            "INSERT INTO repomap_pairs (a, b, n) VALUES (?, ?, ?) "
            "ON CONFLICT (a, b) DO UPDATE SET n = n + excluded.n",
            rows,  # (a < b: `CoChangeWrite.pairs`)
        )

    # -- files and fan-in -------------------------------------------------------------------------

    def present_paths(self) -> set[str]:
        return {str(p) for (p,) in self._rows("SELECT path FROM repomap_paths WHERE present = 1")}

    def set_files(self, files: Iterable[str], present: Collection[str] | None = None) -> None:
        """Mark exactly `files` as present; forget absent paths that carry no history. Writes only the
        paths whose presence changes (after a pull, what it added and removed), from the `present_paths`
        given or read now."""
        c = self.conn
        now = set(files)
        present = self.present_paths() if present is None else set(present)
        c.executemany("INSERT OR IGNORE INTO repomap_paths (path) VALUES (?)", ((p,) for p in now - present))
        c.executemany("UPDATE repomap_paths SET present = 1 WHERE path = ?", ((p,) for p in now - present))
        gone = [(p,) for p in present - now]
        c.executemany("UPDATE repomap_paths SET present = 0, fan_in = 0 WHERE path = ?", gone)
        c.execute("DELETE FROM repomap_paths WHERE present = 0 AND changes = 0")

    def fan_ins(self) -> dict[str, int]:
        return {
            str(p): int(n) for p, n in self._rows("SELECT path, fan_in FROM repomap_paths WHERE present = 1")
        }

    def set_fan_ins(self, values: Mapping[str, int]) -> None:
        self.conn.executemany(
            "UPDATE repomap_paths SET fan_in = ? WHERE path = ?", [(n, p) for p, n in values.items()]
        )

    def cached_imports(self) -> dict[str, CachedImports]:
        rows = self._rows("SELECT path, mtime_ns, size, digest, specs FROM repomap_imports")
        # The driver's own ints and strs: no conversions (a refresh loads a row per source file).
        return {
            p: CachedImports(m, s, d, tuple(specs.split("\n")) if specs else ()) for p, m, s, d, specs in rows
        }

    def put_imports(self, rows: Mapping[str, CachedImports]) -> None:
        self.conn.executemany(
            "INSERT INTO repomap_imports (path, mtime_ns, size, digest, specs) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size, "
            "digest = excluded.digest, specs = excluded.specs",
            [(p, r.mtime_ns, r.size, r.digest, "\n".join(r.specs)) for p, r in rows.items()],
        )

    def drop_imports(self, paths: Iterable[str]) -> None:
        self.conn.executemany("DELETE FROM repomap_imports WHERE path = ?", ((p,) for p in paths))

    # -- the recent-change channel ----------------------------------------------------------------

    def recent_touches(
        self, window: str, paths: Collection[str], limit: int
    ) -> dict[str, list[tuple[str, bool]]] | None:
        row = self._one("SELECT value FROM repomap_state WHERE key = 'recent_window'", ())
        if row is None or row[0] != window:
            return None
        out: dict[str, list[tuple[str, bool]]] = {}
        wanted = list(dict.fromkeys(paths))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self._rows(
                "SELECT t.path, c.sha, c.parent FROM repomap_recent_touches t "
                "JOIN repomap_recent_commits c ON c.ord = t.ord "
                f"WHERE t.path IN ({','.join('?' * len(chunk))}) ORDER BY t.path, t.ord DESC",
                tuple(chunk),
            )
            for path, sha, parent in rows:
                found = out.setdefault(path, [])
                if len(found) < limit:
                    found.append((sha, bool(parent)))
        return out

    def put_recent(
        self, window: str, commits: Sequence[RecentCommit], *, keep: int | None, add: bool
    ) -> None:
        c = self.conn
        if not add:
            c.execute("DELETE FROM repomap_recent_commits")
            c.execute("DELETE FROM repomap_recent_touches")
        top = int(self._rows("SELECT coalesce(max(ord), 0) FROM repomap_recent_commits")[0][0])
        ords = [(top + len(commits) - i, commit) for i, commit in enumerate(commits)]
        c.executemany(
            "INSERT INTO repomap_recent_commits (ord, sha, parent) VALUES (?, ?, ?)",
            [(o, commit.sha, int(commit.parent)) for o, commit in ords],
        )
        c.executemany(
            "INSERT OR IGNORE INTO repomap_recent_touches (path, ord) VALUES (?, ?)",
            [(path, o) for o, commit in ords for path in commit.paths],
        )
        if keep is not None:
            cutoff = top + len(commits) - keep
            c.execute("DELETE FROM repomap_recent_commits WHERE ord <= ?", (cutoff,))
            c.execute("DELETE FROM repomap_recent_touches WHERE ord <= ?", (cutoff,))
        self.set_state({"recent_window": window})

    def recent_lines(self, paths: Collection[str]) -> dict[str, RecentLines]:
        wanted = list(dict.fromkeys(paths))
        out: dict[str, RecentLines] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self._rows(
                "SELECT path, head, commits, horizon, size, mtime_ns, base, runs FROM repomap_recent_lines "
                f"WHERE path IN ({','.join('?' * len(chunk))})",
                tuple(chunk),
            )
            for path, head, commits, horizon, size, mtime, base, runs in rows:
                out[path] = RecentLines(head, commits, horizon, size, mtime, base, _runs(runs))
        return out

    def put_recent_lines(self, rows: Mapping[str, RecentLines]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO repomap_recent_lines "
            "(path, head, commits, horizon, size, mtime_ns, base, runs) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    p,
                    r.head,
                    r.commits,
                    r.horizon,
                    r.size,
                    r.mtime_ns,
                    r.base,
                    ",".join(f"{a}-{b}" for a, b in r.runs),
                )
                for p, r in rows.items()
            ],
        )

    # -- helpers ----------------------------------------------------------------------------------

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise _missing(exc) from exc

    def _one(self, sql: str, params: tuple[object, ...]) -> tuple[Any, ...] | None:
        try:
            row: tuple[Any, ...] | None = self.conn.execute(sql, params).fetchone()
        except sqlite3.OperationalError as exc:
            raise _missing(exc) from exc
        return row


def _runs(text: str) -> tuple[tuple[int, int], ...]:
    """The runs `put_recent_lines` joined ("3-3,10-12")."""
    if not text:
        return ()
    return tuple((int(a), int(b)) for a, _, b in (run.partition("-") for run in text.split(",")))


def _missing(exc: sqlite3.OperationalError) -> Exception:
    if "no such table" in str(exc):
        return TetherError(f"The repo map's tables are missing from the index ({exc}); run `tether reindex`.")
    return exc
