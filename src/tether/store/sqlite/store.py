"""The SQLite index (DESIGN §2, §7): the default `Store`.

The index is derived from the notes and can always be rebuilt; it also keeps what notes don't: telemetry,
the event log, session state and the repo map. WAL mode with a busy timeout lets many agent sessions
read and write at once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tether.model.labels import keywords
from tether.model.memory import Memory
from tether.model.timestamps import iso
from tether.model.wikilinks import link_key
from tether.store.base import Event, NoteRef, Query, Telemetry, TextHit
from tether.store.sqlite import changes, vectors
from tether.store.sqlite.errors import translate, translating
from tether.store.sqlite.memo import PRELOAD_MAX, Memo
from tether.store.sqlite.owners import PathOwners, read_owners
from tether.store.sqlite.postings import TRIGRAM, WORDS, TermPostings, fts_quote
from tether.store.sqlite.prefetch import Prefetch
from tether.store.sqlite.repomap import RepoMapTables
from tether.store.sqlite.rows import COLUMNS, chunks, dt, memory_of, where
from tether.store.sqlite.schema import BUSY_TIMEOUT_MS, TELEMETRY_TOTALS, bump_totals, connect, summed_totals


@translating
class SQLiteStore:
    """`Store` over one SQLite file. Thread-confined; open one per process.

    Raises `StoreUnavailable` / `StoreDamaged` (never sqlite3's exceptions), from opening on."""

    def __init__(self, path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS, *, warm: bool = False) -> None:
        """`warm`: a long-lived process (the resident, the MCP server) that will search again, so it keeps
        each search term's postings between queries (`tether.store.sqlite.postings`) and each path's owners
        (`tether.store.sqlite.owners`)."""
        self.path = path
        try:
            self.conn = connect(path, busy_timeout_ms)
        except sqlite3.Error as exc:
            raise translate(exc) from exc
        self._depth = 0
        # Memories read by id, kept across the writes that did not change them (`memo`); a warm store reads
        # every active one at once, the first time.
        self._memo = Memo(self.conn, preload=PRELOAD_MAX if warm else 0)
        self._nearest_calls = 0
        self._vectors: vectors.Loaded | None = None
        self._postings = TermPostings(self.conn) if warm else None
        self._owners = PathOwners(self.conn) if warm else None
        self._prefetch = Prefetch()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (BEGIN IMMEDIATE, so concurrent writers queue instead of failing late)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self.conn.execute("ROLLBACK")
            raise
        self._depth = 0
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    def repomap(self) -> RepoMapTables:
        return RepoMapTables(self.conn)

    # -- memories ---------------------------------------------------------------------------------

    def _bump_vectors(self, memory_id: str | None, *, text: bool = True) -> None:
        """Every write may change the set of active vectors: invalidate the vector cache, and log which
        memory it changed (`changes.EVERY`: all of them; None: none) and whether the full-text indexes'
        content changed (`text`)."""
        self.conn.execute(
            "INSERT INTO meta VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (_VECTORS_VERSION,),
        )
        changes.log(self.conn, memory_id, _VECTORS_VERSION, text=text)

    def put(
        self,
        memory: Memory,
        note: NoteRef | None = None,
        vector: Sequence[float] | None = None,
        embedder: str | None = None,
    ) -> None:
        files_text = " ".join(p.replace("/", " ").replace(".", " ").replace("_", " ") for p in memory.files)
        # Tags and aliases weigh as the summary does: they are what the note is called and filed under.
        words = (
            f"{memory.summary} {keywords(memory.tags, memory.aliases)}".strip(),
            memory.details,
            files_text,
        )
        with self.transaction():
            row = self.conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory.id,)).fetchone()
            values = (
                memory.id,
                memory.summary,
                memory.details,
                memory.category,
                memory.scope,
                json.dumps(list(memory.files)),
                memory.priority,
                int(memory.pinned),
                memory.origin,
                memory.supersedes,
                memory.status,
                memory.session,
                iso(memory.created),
                iso(memory.updated),
                memory.content_hash,
                json.dumps([a.to_front() for a in memory.anchors]) if memory.anchors else "[]",
                json.dumps(list(memory.tags)),
                json.dumps(list(memory.aliases)),
                note.path if note else None,
                note.mtime_ns if note else None,
                note.size if note else None,
            )
            if note is not None:
                # A note file renamed by hand keeps its id: drop a stale row that claims the same path.
                # Through `remove`, so the stale row's full-text entries go too: FTS tables have no
                # foreign keys, and a reused rowid would collide with them.
                for (stale,) in self.conn.execute(
                    "SELECT id FROM memories WHERE note_path = ? AND id != ?", (note.path, memory.id)
                ).fetchall():
                    self.remove(stale)
                self.conn.execute("DELETE FROM note_problems WHERE path = ?", (note.path,))
            # Whether the full-text indexes hold this memory's words as they are (a pin, an archive): then
            # they are left alone, and the change log says so (kept postings stay exact).
            same_text = False
            if row is None:
                cursor = self.conn.execute(
                    "INSERT INTO memories (id, summary, details, category, scope, files, priority, pinned, origin,"
                    " supersedes, status, session, created, updated, content_hash, anchors, tags, aliases,"
                    " note_path, note_mtime_ns, note_size) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    values,
                )
                rowid = int(cursor.lastrowid or 0)
            else:
                rowid = int(row[0])
                self.conn.execute(
                    "UPDATE memories SET id=?, summary=?, details=?, category=?, scope=?, files=?, priority=?,"
                    " pinned=?, origin=?, supersedes=?, status=?, session=?, created=?, updated=?,"
                    " content_hash=?, anchors=?, tags=?, aliases=?, note_path=?, note_mtime_ns=?, note_size=?"
                    " WHERE rowid = ?",
                    (*values, rowid),
                )
                self.conn.execute("DELETE FROM file_refs WHERE memory_rowid = ?", (rowid,))
                self.conn.execute("DELETE FROM links WHERE memory_rowid = ?", (rowid,))
                same_text = self._indexed_text(rowid) == (*words, memory.text)
                if not same_text:
                    self.conn.execute("DELETE FROM fts_words WHERE rowid = ?", (rowid,))
                    self.conn.execute("DELETE FROM fts_trigram WHERE rowid = ?", (rowid,))
            self.conn.executemany(
                "INSERT OR IGNORE INTO file_refs VALUES (?, ?, ?)",
                [(rowid, path, int(path.endswith("/"))) for path in memory.files],
            )
            self.conn.executemany("INSERT INTO links VALUES (?, ?)", [(rowid, k) for k in memory.link_keys])
            if not same_text:
                self.conn.execute(
                    "INSERT INTO fts_words (rowid, summary, details, files) VALUES (?, ?, ?, ?)",
                    (rowid, *words),
                )
                self.conn.execute("INSERT INTO fts_trigram (rowid, text) VALUES (?, ?)", (rowid, memory.text))
            if vector is not None and embedder is not None:
                self.conn.execute(
                    "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)",
                    (rowid, embedder, len(vector), vectors.pack(vector)),
                )
            elif row is not None:
                self.conn.execute("DELETE FROM embeddings WHERE memory_rowid = ?", (rowid,))
            self._bump_vectors(memory.id, text=not same_text)

    def _indexed_text(self, rowid: int) -> tuple[str, ...] | None:
        """What the two full-text indexes hold for a row: the word index's three columns, the trigram's text."""
        words = self.conn.execute(
            "SELECT summary, details, files FROM fts_words WHERE rowid = ?", (rowid,)
        ).fetchone()
        grams = self.conn.execute("SELECT text FROM fts_trigram WHERE rowid = ?", (rowid,)).fetchone()
        return (*words, *grams) if words and grams else None

    def remove(self, memory_id: str) -> None:
        with self.transaction():
            self._bump_vectors(memory_id)
            row = self.conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                return
            for table in ("fts_words", "fts_trigram"):
                self.conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row[0],))
            self.conn.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))

    def get(self, memory_id: str) -> Memory | None:
        row = self.conn.execute(
            f"SELECT {', '.join(COLUMNS)} FROM memories WHERE id = ?", (memory_id,)
        ).fetchone()
        return memory_of(row) if row else None

    def find(self, query: Query) -> list[Memory]:
        clause, params = where(query)
        sql = f"SELECT {', '.join(COLUMNS)} FROM memories{clause} ORDER BY created, id"
        if query.limit is not None:
            sql += f" LIMIT {int(query.limit)}"
        return [memory_of(row) for row in self.conn.execute(sql, params)]

    def memories(self, ids: Iterable[str]) -> dict[str, Memory]:
        """The memories with these ids, whatever their status; unknown ids are left out."""
        meta = dict(self.conn.execute(_VERSION_SQL, (_INDEX_ID, _VECTORS_VERSION)))
        self._memo.check(str(meta.get(_INDEX_ID, "-")), int(meta.get(_VECTORS_VERSION, 0)))
        return self._memo.read(ids)

    def count(self, query: Query) -> int:
        clause, params = where(query)
        return int(self.conn.execute(f"SELECT count(*) FROM memories{clause}", params).fetchone()[0])

    def by_hash(self, content_hash: str) -> list[Memory]:
        rows = self.conn.execute(
            f"SELECT {', '.join(COLUMNS)} FROM memories WHERE content_hash = ?", (content_hash,)
        )
        return [memory_of(row) for row in rows]

    def linking(self, targets: Sequence[str]) -> list[str]:
        """Ids of memories whose details link to any of `targets` (ids or names; `links` holds link keys)."""
        targets = list(dict.fromkeys(link_key(t) for t in targets))
        if not targets:
            return []
        marks = ",".join("?" * len(targets))
        rows = self.conn.execute(
            f"SELECT DISTINCT m.id FROM links l JOIN memories m ON m.rowid = l.memory_rowid WHERE l.target IN ({marks})",
            list(targets),
        )
        return [row[0] for row in rows]

    # -- notes ------------------------------------------------------------------------------------

    def note_refs(self) -> dict[str, tuple[str, NoteRef]]:
        rows = self.conn.execute(
            "SELECT note_path, id, note_mtime_ns, note_size FROM memories WHERE note_path IS NOT NULL"
        )
        return {path: (mid, NoteRef(path, mtime, size)) for path, mid, mtime, size in rows}

    def note_path(self, memory_id: str) -> str | None:
        row = self.conn.execute("SELECT note_path FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return str(row[0]) if row and row[0] else None

    def note_problems(self) -> dict[str, tuple[NoteRef, str]]:
        rows = self.conn.execute("SELECT path, mtime_ns, size, problem FROM note_problems")
        return {path: (NoteRef(path, mtime, size), problem) for path, mtime, size, problem in rows}

    def set_note_problem(self, note: NoteRef, problem: str | None) -> None:
        with self.transaction():
            if problem is None:
                self.conn.execute("DELETE FROM note_problems WHERE path = ?", (note.path,))
            else:
                self.conn.execute(
                    "INSERT OR REPLACE INTO note_problems VALUES (?, ?, ?, ?)",
                    (note.path, note.mtime_ns, note.size, problem),
                )

    def clear(self) -> None:
        """Drop every derived memory row (telemetry, events and sessions stay): the start of a reindex.

        Session memories live only here (they have no note): they keep their rows, search entries and
        vectors."""
        with self.transaction():
            self._bump_vectors(changes.EVERY)
            derived = "SELECT rowid FROM memories WHERE scope != 'session'"
            for table in ("fts_words", "fts_trigram"):
                self.conn.execute(f"DELETE FROM {table} WHERE rowid IN ({derived})")
            self.conn.execute("DELETE FROM note_problems")
            # file_refs, links and embeddings go with their rows (ON DELETE CASCADE).
            self.conn.execute("DELETE FROM memories WHERE scope != 'session'")

    # -- search -----------------------------------------------------------------------------------

    def text(
        self, words: Sequence[str], limit: int, *, trigram: bool = True, among: Sequence[str] | None = None
    ) -> list[TextHit]:
        """bm25 over both FTS indexes for any of `words` (OR), best first, active memories only.

        Strengths are minus SQLite's bm25 (which is lower-is-better), so higher is better outside. Inactive
        memories are left out inside the query, before the limit: archived ones never crowd out active ones.
        bm25's term statistics are the whole index's, with or without `among`."""
        if not words or (among is not None and not among):
            return []
        if self._postings is not None:
            return self._text_from_postings(words, limit, trigram=trigram, among=among)
        # Driven by the FTS match, each hit looked up by rowid (`CROSS JOIN` keeps that order): a
        # `rowid IN (subquery)` instead makes FTS5 evaluate the match once per listed row (100x slower).
        condition, params = "m.status = 'active'", []
        if among is not None:
            condition += f" AND m.id IN ({','.join('?' * len(among))})"
            params = list(among)
            limit = len(among)
        hits: dict[str, list[float]] = {}
        word_query = " OR ".join(fts_quote(w) for w in words)
        # Summary matches weigh most: it is the one line a person wrote to say what the memory is about.
        for mid, score in self.conn.execute(
            f"SELECT m.id, {WORDS.bm25} FROM fts_words f CROSS JOIN memories m"
            f" ON m.rowid = f.rowid WHERE fts_words MATCH ? AND {condition} ORDER BY 2 LIMIT ?",
            (word_query, *params, limit),
        ):
            hits.setdefault(mid, [0.0, 0.0])[0] = -score
        grams = [w for w in words if len(w) >= 3] if trigram else []
        if grams:
            gram_query = " OR ".join(fts_quote(w) for w in grams)
            for mid, score in self.conn.execute(
                f"SELECT m.id, {TRIGRAM.bm25} FROM fts_trigram f CROSS JOIN memories m"
                f" ON m.rowid = f.rowid WHERE fts_trigram MATCH ? AND {condition} ORDER BY 2 LIMIT ?",
                (gram_query, *params, limit),
            ):
                hits.setdefault(mid, [0.0, 0.0])[1] = -score
        return [TextHit(mid, s[0], s[1]) for mid, s in hits.items()]

    def _text_from_postings(
        self, words: Sequence[str], limit: int, *, trigram: bool, among: Sequence[str] | None
    ) -> list[TextHit]:
        """`text` from the terms' kept postings: the same hits, in the same order, as its two queries."""
        assert self._postings is not None
        version = self.version()
        if among is not None:
            limit = len(among)
        hits: dict[str, list[float]] = {}
        for mid, score in self._postings.ranked(WORDS, words, limit, version=version, among=among):
            hits.setdefault(mid, [0.0, 0.0])[0] = score
        grams = [w for w in words if len(w) >= 3] if trigram else []
        if grams:
            for mid, score in self._postings.ranked(TRIGRAM, grams, limit, version=version, among=among):
                hits.setdefault(mid, [0.0, 0.0])[1] = score
        return [TextHit(mid, s[0], s[1]) for mid, s in hits.items()]

    def prepare(self, seconds: float) -> bool:
        """Make now, in a long-lived process's quiet moment of about `seconds`, what a warm store's next
        searches would make first (`tether.store.sqlite.prefetch`); True when nothing is left to make for
        this version of the index. A store that is not warm has nothing to make."""
        if self._postings is None:
            return True
        assert self._owners is not None
        return self._prefetch.step(self, self._postings, self._owners, seconds)

    def version(self) -> str:
        """The database's id and its write counter (bumped in the same transaction as every write)."""
        # One query for both (recall asks a few times per prompt).
        meta = {
            key: str(value) for key, value in self.conn.execute(_VERSION_SQL, (_INDEX_ID, _VECTORS_VERSION))
        }
        return f"{meta.get(_INDEX_ID) or '-'}:{meta.get(_VECTORS_VERSION) or '0'}"

    def describe(self) -> dict[str, Any]:
        version = self.conn.execute("SELECT sqlite_version()").fetchone()[0]
        events = int(self.conn.execute("SELECT count(*) FROM events").fetchone()[0])
        return {"backend": "sqlite", "version": f"SQLite {version}", "events": events}

    def nearest(self, embedder: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """Exact cosine top-k over the active memories' vectors (`tether.store.sqlite.vectors`).

        From its second query on, a process is warm (the MCP server, a library user): numpy pays off."""
        identity = self.version()
        kept = self._vectors
        if kept is None or (kept.embedder, kept.identity) != (embedder, identity):
            # Kept while no write came: the cache file's ids are read and its vectors mapped once, not on
            # every query (3-9 ms at 10k memories, most of a warm prompt's recall).
            kept = self._vectors = vectors.Loaded(
                embedder, identity, *vectors.load(self.conn, self.path, embedder, identity)
            )
        if not kept.ids:
            return []
        self._nearest_calls += 1
        # A warm store keeps the matrix by column for sparse queries (9 ms to make at 10k, once per write).
        keep = self._postings is not None and len(kept.ids) * kept.dim * 4 <= vectors.COLUMNS_MAX_BYTES
        warm, columns = self._nearest_calls > 1, kept.columns if keep else None
        top = vectors.top_cosines(kept.blob, len(kept.ids), kept.dim, vector, k, warm=warm, columns=columns)
        return [(kept.ids[row], cosine) for row, cosine in top]

    def held(self) -> dict[str, int]:
        """Bytes kept between queries: the loaded vectors (mapped from the cache file) and their copy by column."""
        return self._vectors.held() if self._vectors is not None else {}

    def missing_vectors(self, embedder: str) -> list[Memory]:
        rows = self.conn.execute(
            f"SELECT {', '.join('m.' + c for c in COLUMNS)} FROM memories m"
            " LEFT JOIN embeddings e ON e.memory_rowid = m.rowid AND e.embedder = ? WHERE e.memory_rowid IS NULL",
            (embedder,),
        )
        return [memory_of(row) for row in rows]

    def put_vectors(self, embedder: str, items: Iterable[tuple[str, Sequence[float]]]) -> None:
        with self.transaction():
            self._bump_vectors(None, text=False)
            for mid, vector in items:
                self.conn.execute(
                    "INSERT OR REPLACE INTO embeddings SELECT rowid, ?, ?, ? FROM memories WHERE id = ?",
                    (embedder, len(vector), vectors.pack(vector), mid),
                )

    def drop_vectors(self, keep: str | None = None) -> None:
        with self.transaction():
            self._bump_vectors(None, text=False)
            self.conn.execute("DELETE FROM embeddings WHERE embedder != ?", (keep or "",))

    def owners(self, paths: Sequence[str]) -> dict[str, list[str]]:
        """Active memories naming each exact path (file or directory ref)."""
        if self._owners is not None:
            return self._owners.owners(paths, version=self.version())
        return read_owners(self.conn, paths)

    def record(self, events: Iterable[Event]) -> None:
        with self.transaction():
            surfaced = acted = 0
            for event in events:
                at = iso(event.at)
                self.conn.execute(
                    "INSERT INTO events (memory_id, session, turn, event, receipts, at) VALUES (?,?,?,?,?,?)",
                    (event.memory_id, event.session, event.turn, event.event, json.dumps(event.receipts), at),
                )
                if event.event == "surfaced":
                    surfaced += 1
                    self.conn.execute(
                        "INSERT INTO telemetry (memory_id, surfaced, first_surfaced, last_surfaced)"
                        " VALUES (?, 1, ?, ?) ON CONFLICT(memory_id) DO UPDATE SET surfaced = surfaced + 1,"
                        " first_surfaced = coalesce(first_surfaced, excluded.first_surfaced),"
                        " last_surfaced = excluded.last_surfaced",
                        (event.memory_id, at, at),
                    )
                elif event.event == "acted":
                    acted += 1
                    self.conn.execute(
                        "INSERT INTO telemetry (memory_id, acted, last_acted) VALUES (?, 1, ?)"
                        " ON CONFLICT(memory_id) DO UPDATE SET acted = acted + 1, last_acted = excluded.last_acted",
                        (event.memory_id, at),
                    )
            bump_totals(self.conn, surfaced, acted)

    def telemetry(self, ids: Sequence[str] | None = None) -> dict[str, Telemetry]:
        out: dict[str, Telemetry] = {}
        sql = "SELECT memory_id, surfaced, acted, first_surfaced, last_surfaced, last_acted FROM telemetry"
        parts: Iterable[Sequence[str] | None] = chunks(list(ids)) if ids is not None else [None]
        for chunk in parts:
            rows = (
                self.conn.execute(sql)
                if chunk is None
                else self.conn.execute(
                    sql + f" WHERE memory_id IN ({','.join('?' * len(chunk))})", list(chunk)
                )
            )
            for mid, surfaced, acted, first, last, last_acted in rows:
                out[mid] = Telemetry(surfaced, acted, dt(first), dt(last), dt(last_acted))
        return out

    def feedback_totals(self) -> tuple[int, int]:
        kept = dict(self.conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", TELEMETRY_TOTALS))
        try:
            return int(kept[TELEMETRY_TOTALS[0]]), int(kept[TELEMETRY_TOTALS[1]])
        except (KeyError, ValueError):  # not kept, or unreadable: the counters themselves
            return summed_totals(self.conn)

    def events(self, memory_id: str | None = None, limit: int = 100) -> Iterator[Event]:
        sql = "SELECT memory_id, event, at, session, turn, receipts FROM events"
        params: list[Any] = []
        if memory_id is not None:
            sql += " WHERE memory_id = ?"
            params.append(memory_id)
        sql += " ORDER BY seq DESC LIMIT ?"
        params.append(limit)
        for mid, event, at, session, turn, receipts in self.conn.execute(sql, params).fetchall():
            yield Event(mid, event, dt(at) or datetime.now(UTC), session, turn, json.loads(receipts))

    def surfaced_in_session(self, session: str, since_turn: int) -> set[str]:
        rows = self.conn.execute(
            "SELECT DISTINCT memory_id FROM events WHERE session = ? AND event = 'surfaced' AND turn > ?",
            (session, since_turn),
        )
        return {row[0] for row in rows}

    # -- sessions and meta ------------------------------------------------------------------------

    def session_state(self, session: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT state FROM sessions WHERE id = ?", (session,)).fetchone()
        return json.loads(row[0]) if row else None

    def put_session_state(self, session: str, state: dict[str, Any], now: datetime) -> None:
        at = iso(now)
        self.conn.execute(
            "INSERT INTO sessions (id, started, seen, state) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET seen = excluded.seen, state = excluded.state",
            (session, at, at, json.dumps(state)),
        )

    def session_count(self, since: datetime | None = None) -> int:
        if since is None:
            return int(self.conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
        return int(
            self.conn.execute("SELECT count(*) FROM sessions WHERE started > ?", (iso(since),)).fetchone()[0]
        )

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


# Bumped in the same transaction as every write to a memory (the name is older than its second use): it
# versions the vector cache file and the caches of a warm store, and keys the change log.
_VECTORS_VERSION = "vectors.version"
# A random id made with the database (migration 0004): caches beside the index name the database they
# were made from, since a rebuilt index starts its version counter over.
_INDEX_ID = "index.id"
_VERSION_SQL = "SELECT key, value FROM meta WHERE key IN (?, ?)"
