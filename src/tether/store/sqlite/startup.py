"""`StartIndex`: the few reads and the one write of a session start with nothing to do, on the index file
itself (`tether.quickstart` decides; this module only speaks SQL).

What a hook process imports to open the index the ordinary way (`SQLiteStore`: the store's protocols, the
memory model, `pathlib`, the migrations) is most of a session start's cost at 10,000 memories, where the
work is a handful of indexed reads. This opens the same file with the same connection settings (`schema.connect`)
but only when it is already the index as this version of tether makes it: an existing file, in WAL mode,
with every migration applied. Anything else (no index, a damaged or older one) is `None`, and the caller
takes the ordinary path, which creates, migrates or fails open as it always did.

    index = StartIndex.open("/repo/.tether/index.db")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import sqlite3

TYPE_CHECKING = False  # not `typing`'s: its import is a tenth of this path's budget
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

# `schema.HOOK_BUSY_TIMEOUT_MS`, and every name of `schema.MIGRATIONS` (tests/test_startup.py checks both):
# an index missing one is migrated by the ordinary path first.
BUSY_TIMEOUT_MS = 1_000
MIGRATIONS = (
    "0001_core",
    "0002_repomap",
    "0003_pinned_index",
    "0004_index_id",
    "0005_anchors",
    "0006_labels",
    "0007_link_keys",
    "0008_changes",
    "0009_recent",
    "0010_repomap_pairs_once",
    "0011_telemetry_totals",
)
# `schema.TELEMETRY_TOTALS`'s surfaced key: a session start's showings are added to it as `record` adds them.
SURFACED_TOTAL = "telemetry.surfaced"
# The columns of a pinned memory that a session start's block shows or sorts by.
PINNED_COLUMNS = ("id", "summary", "category", "scope", "files", "origin", "session", "created", "updated")
# Rule file names (`tether.intake.rulefiles.is_rule_file`) end in one of these: the repo map's paths are
# narrowed by them in SQL (LIKE ignores ASCII case: a superset), then by the exact test in Python.
RULE_FILE_ENDINGS = ("AGENTS.md", "CLAUDE.md", "GEMINI.md", ".mdc", "copilot-instructions.md")


class StartIndex:
    """One project's index, opened for a session start that will most likely only read."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, path: str) -> StartIndex | None:
        """The index at `path` when it exists, is in WAL mode and fully migrated; None otherwise (nothing
        is created or changed). Raises `sqlite3.Error` for a file that is not a database."""
        if not os.path.isfile(path) or any(c in path for c in "?#%"):
            return None  # `?`, `#` and `%` would need quoting in a URI: the ordinary path opens those
        conn = sqlite3.connect(
            f"file:{path}?mode=rw",
            uri=True,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.close()
                return None
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            marks = ",".join("?" * len(MIGRATIONS))
            done = conn.execute(
                f"SELECT count(*) FROM migrations WHERE name IN ({marks})", MIGRATIONS
            ).fetchone()[0]
        except BaseException:
            conn.close()
            raise
        if done != len(MIGRATIONS):
            conn.close()
            return None
        return cls(conn)

    def close(self) -> None:
        self.conn.close()

    # -- reads --------------------------------------------------------------------------------------

    def meta(self, keys: Sequence[str]) -> dict[str, str]:
        """The values of those `meta` keys that are set."""
        marks = ",".join("?" * len(keys))
        rows = self.conn.execute(f"SELECT key, value FROM meta WHERE key IN ({marks})", list(keys))
        return {str(key): str(value) for key, value in rows}

    def memories(self) -> int:
        """Every memory in the index, whatever its status (`count(Query(status=None))`)."""
        return int(self.conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def active(self, scope: str) -> int:
        """`count(Query(status=("active",), scope=scope))`."""
        sql = "SELECT count(*) FROM memories WHERE status IN (?) AND scope = ?"
        return int(self.conn.execute(sql, ("active", scope)).fetchone()[0])

    def sessions_since(self, since: str | None) -> int:
        """`session_count`: sessions started after `since` (an ISO time in the store's format), or all."""
        if since is None:
            return int(self.conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
        sql = "SELECT count(*) FROM sessions WHERE started > ?"
        return int(self.conn.execute(sql, (since,)).fetchone()[0])

    def repo_state(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.conn.execute("SELECT key, value FROM repomap_state")}

    def present(self, path: str) -> bool:
        row = self.conn.execute("SELECT present FROM repomap_paths WHERE path = ?", (path,)).fetchone()
        return bool(row and row[0])

    def present_under(self, directory: str) -> bool:
        """Any present path under `directory` (ending in '/'): `RepoMapTables.present_under`."""
        row = self.conn.execute(
            "SELECT 1 FROM repomap_paths WHERE path >= ? AND path < ? AND present = 1 LIMIT 1",
            (directory, directory[:-1] + "0"),
        ).fetchone()
        return row is not None

    def rule_file_candidates(self) -> list[str]:
        """The repo map's present paths whose names may be a rule file's (a superset: narrow them)."""
        likes = " OR ".join("path LIKE ?" for _ in RULE_FILE_ENDINGS)
        sql = f"SELECT path FROM repomap_paths WHERE present = 1 AND ({likes})"
        return [str(p) for (p,) in self.conn.execute(sql, [f"%{end}" for end in RULE_FILE_ENDINGS])]

    def pinned(self) -> list[tuple[str, ...]]:
        """The active pinned memories' `PINNED_COLUMNS`, in `find`'s order (created, id); `files` as JSON."""
        sql = (
            f"SELECT {', '.join(PINNED_COLUMNS)} FROM memories WHERE status IN (?) AND pinned = 1"
            " ORDER BY created, id"
        )
        return [tuple(row) for row in self.conn.execute(sql, ("active",))]

    # -- the write ----------------------------------------------------------------------------------

    def start_session(self, session: str, state: dict[str, object], at: str, surfaced: Iterable[str]) -> bool:
        """Record a new session's state and the memories its start showed (`put_session_state`, then
        `record` of one `surfaced` event each, receipt "pinned", turn 0), in one transaction. False, with
        nothing written, when the session is already known (a resume: the ordinary path merges it)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session,)).fetchone():
                self.conn.execute("ROLLBACK")
                return False
            self.conn.execute(
                "INSERT INTO sessions (id, started, seen, state) VALUES (?, ?, ?, ?)",
                (session, at, at, json.dumps(state)),
            )
            receipts = json.dumps({"receipt": "pinned"})
            shown = 0
            for memory_id in surfaced:
                shown += 1
                self.conn.execute(
                    "INSERT INTO events (memory_id, session, turn, event, receipts, at) VALUES (?,?,?,?,?,?)",
                    (memory_id, session, 0, "surfaced", receipts, at),
                )
                self.conn.execute(
                    "INSERT INTO telemetry (memory_id, surfaced, first_surfaced, last_surfaced)"
                    " VALUES (?, 1, ?, ?) ON CONFLICT(memory_id) DO UPDATE SET surfaced = surfaced + 1,"
                    " first_surfaced = coalesce(first_surfaced, excluded.first_surfaced),"
                    " last_surfaced = excluded.last_surfaced",
                    (memory_id, at, at),
                )
            if shown:
                self.conn.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?",
                    (shown, SURFACED_TOTAL),
                )
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return True
