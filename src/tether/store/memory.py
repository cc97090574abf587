"""`InMemoryStore`: the reference implementation of every protocol in `tether.store.base`, in plain Python.

What httpx's MockTransport is to its transports: a real, complete backend with no database, which the
contract suite (`tests/test_store_contract.py`) runs beside SQLite so the protocols say what a backend must
do, not what SQLite happens to do. Full text is a small BM25 over stemmed words (summary weighted like
SQLite's index) and trigram substrings; nearest neighbours are an exact cosine scan. Transactions are
atomic: a failing block leaves the store as it was.

>>> store = InMemoryStore()
>>> store.put(Memory(id="0a1b2c3d", summary="Uploads retry three times"))
>>> [hit.id for hit in store.text(["upload"], limit=5)]
['0a1b2c3d']
"""

from __future__ import annotations

import copy
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tether.model.labels import keywords
from tether.model.memory import Memory
from tether.model.wikilinks import link_key
from tether.store.base import (
    CachedImports,
    CoChangeWrite,
    Event,
    NoteRef,
    Query,
    RecentCommit,
    RecentLines,
    Telemetry,
    TextHit,
)

# SQLite's word index weighs summary 4, details 1, file words 2 (`tether.store.sqlite.store.text`).
_FIELD_WEIGHTS = (4.0, 1.0, 2.0)
_TOKEN = re.compile(r"\w+")
_SUFFIXES = ("ations", "ation", "ments", "ment", "ings", "ing", "ies", "ers", "er", "ed", "es", "s")


def stem(word: str) -> str:
    """A crude suffix stripper standing in for Porter's: `uploads`, `uploading`, `uploaded` → `upload`."""
    word = unicodedata.normalize("NFKD", word.lower())
    word = "".join(ch for ch in word if not unicodedata.combining(ch))
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _words(text: str) -> list[str]:
    return [stem(w) for w in _TOKEN.findall(text)]


@dataclass
class _State:
    memories: dict[str, Memory] = field(default_factory=dict)
    notes: dict[str, NoteRef] = field(default_factory=dict)  # memory id → its note
    problems: dict[str, tuple[NoteRef, str]] = field(default_factory=dict)
    vectors: dict[str, tuple[str, list[float]]] = field(default_factory=dict)  # id → (embedder, vector)
    events: list[Event] = field(default_factory=list)
    telemetry: dict[str, Telemetry] = field(default_factory=dict)
    sessions: dict[str, tuple[datetime, dict[str, Any]]] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)


class InMemoryStore:
    """Every `tether.store.base` protocol over Python dicts. One process, one thread."""

    def __init__(self) -> None:
        self._state = _State()
        self._depth = 0
        self._writes = 0
        self._repomap = InMemoryRepoMap()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        saved = copy.deepcopy(self._state)
        self._depth = 1
        try:
            yield
        except BaseException:
            self._state = saved
            raise
        finally:
            self._depth = 0

    def close(self) -> None:
        pass

    def repomap(self) -> InMemoryRepoMap:
        return self._repomap

    # -- MemoryStore ------------------------------------------------------------------------------

    def put(
        self,
        memory: Memory,
        note: NoteRef | None = None,
        vector: Sequence[float] | None = None,
        embedder: str | None = None,
    ) -> None:
        s = self._state
        self._writes += 1
        with self.transaction():
            if note is not None:
                for stale in [
                    mid for mid, ref in s.notes.items() if ref.path == note.path and mid != memory.id
                ]:
                    self.remove(stale)
                s.problems.pop(note.path, None)
                s.notes[memory.id] = note
            else:
                s.notes.pop(memory.id, None)
            existed = memory.id in s.memories
            s.memories[memory.id] = memory
            if vector is not None and embedder is not None:
                s.vectors[memory.id] = (embedder, list(vector))
            elif existed:
                s.vectors.pop(memory.id, None)

    def version(self) -> str:
        return str(self._writes)

    def describe(self) -> dict[str, Any]:
        return {"backend": "memory", "version": "in-process", "events": len(self._state.events)}

    def remove(self, memory_id: str) -> None:
        self._writes += 1
        s = self._state
        s.memories.pop(memory_id, None)
        s.notes.pop(memory_id, None)
        s.vectors.pop(memory_id, None)

    def get(self, memory_id: str) -> Memory | None:
        return self._state.memories.get(memory_id)

    def find(self, query: Query) -> list[Memory]:
        found = sorted(
            (m for m in self._state.memories.values() if _matches(m, query)), key=lambda m: (m.created, m.id)
        )
        return found if query.limit is None else found[: query.limit]

    def count(self, query: Query) -> int:
        return len(self.find(Query(**{**query.__dict__, "limit": None})))

    def memories(self, ids: Iterable[str]) -> dict[str, Memory]:
        s = self._state.memories
        return {mid: s[mid] for mid in dict.fromkeys(ids) if mid in s}

    def by_hash(self, content_hash: str) -> list[Memory]:
        return [m for m in self._state.memories.values() if m.content_hash == content_hash]

    def owners(self, paths: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for path in paths:
            mids = [m.id for m in self._active() if path in m.files]
            if mids:
                out[path] = mids
        return out

    def linking(self, targets: Sequence[str]) -> list[str]:
        wanted = {link_key(t) for t in targets}
        return [m.id for m in self._state.memories.values() if wanted.intersection(m.link_keys)]

    def clear(self) -> None:
        s = self._state
        for mid in [mid for mid, m in s.memories.items() if m.scope != "session"]:
            self.remove(mid)
        s.problems.clear()

    def _active(self) -> Iterator[Memory]:
        return (m for m in self._state.memories.values() if m.status == "active")

    # -- SearchIndex ------------------------------------------------------------------------------

    def text(
        self, words: Sequence[str], limit: int, *, trigram: bool = True, among: Sequence[str] | None = None
    ) -> list[TextHit]:
        if not words or (among is not None and not among):
            return []
        every = list(self._active())
        wanted_ids = set(among) if among is not None else None
        active = every if wanted_ids is None else [m for m in every if m.id in wanted_ids]
        limit = limit if among is None else len(among)
        wanted = {stem(w) for w in words}
        docs = [
            (m.id, [Counter(_words(t)) for t in (_titles(m), m.details, " ".join(m.files))]) for m in every
        ]
        scores: dict[str, float] = {}
        for mid, fields_ in docs:
            if wanted_ids is not None and mid not in wanted_ids:
                continue
            score = _bm25(fields_, wanted, docs)
            if score > 0:
                scores[mid] = score
        best = dict(sorted(scores.items(), key=lambda kv: -kv[1])[:limit])
        grams: dict[str, float] = {}
        if trigram:
            needles = [w.lower() for w in words if len(w) >= 3]
            for m in active:
                hay = m.text.lower()
                hits = sum(1 for needle in needles if needle in hay)
                if hits:
                    grams[m.id] = float(hits)
            grams = dict(sorted(grams.items(), key=lambda kv: -kv[1])[:limit])
        ids = dict.fromkeys([*best, *grams])
        return [TextHit(mid, best.get(mid, 0.0), grams.get(mid, 0.0)) for mid in ids]

    def nearest(self, embedder: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        scored = []
        for mid, (owner, stored) in self._state.vectors.items():
            memory = self._state.memories.get(mid)
            if owner != embedder or memory is None or memory.status != "active" or len(stored) != len(vector):
                continue
            scored.append((mid, sum(a * b for a, b in zip(stored, vector, strict=True))))
        if not any(vector):
            return []
        return sorted(scored, key=lambda item: -item[1])[:k]

    def missing_vectors(self, embedder: str) -> list[Memory]:
        v = self._state.vectors
        return [m for mid, m in self._state.memories.items() if v.get(mid, ("",))[0] != embedder]

    def put_vectors(self, embedder: str, vectors: Iterable[tuple[str, Sequence[float]]]) -> None:
        self._writes += 1
        for mid, vector in vectors:
            if mid in self._state.memories:
                self._state.vectors[mid] = (embedder, list(vector))

    def drop_vectors(self, keep: str | None = None) -> None:
        v = self._state.vectors
        for mid in [mid for mid, (owner, _) in v.items() if owner != keep]:
            del v[mid]

    # -- EventLog ---------------------------------------------------------------------------------

    def record(self, events: Iterable[Event]) -> None:
        s = self._state
        for event in events:
            s.events.append(event)
            tel = s.telemetry.setdefault(event.memory_id, Telemetry())
            if event.event == "surfaced":
                tel.surfaced += 1
                tel.first_surfaced = tel.first_surfaced or event.at
                tel.last_surfaced = event.at
            elif event.event == "acted":
                tel.acted += 1
                tel.last_acted = event.at

    def telemetry(self, ids: Sequence[str] | None = None) -> dict[str, Telemetry]:
        t = self._state.telemetry
        keys = t if ids is None else [i for i in ids if i in t]
        return {k: copy.copy(t[k]) for k in keys}

    def feedback_totals(self) -> tuple[int, int]:
        t = self._state.telemetry.values()
        return sum(x.surfaced for x in t), sum(x.acted for x in t)

    def events(self, memory_id: str | None = None, limit: int = 100) -> Iterator[Event]:
        found = [e for e in reversed(self._state.events) if memory_id is None or e.memory_id == memory_id]
        yield from found[:limit]

    def surfaced_in_session(self, session: str, since_turn: int) -> set[str]:
        return {
            e.memory_id
            for e in self._state.events
            if e.session == session and e.event == "surfaced" and e.turn is not None and e.turn > since_turn
        }

    # -- NoteBook ---------------------------------------------------------------------------------

    def note_refs(self) -> dict[str, tuple[str, NoteRef]]:
        return {ref.path: (mid, ref) for mid, ref in self._state.notes.items()}

    def note_path(self, memory_id: str) -> str | None:
        ref = self._state.notes.get(memory_id)
        return ref.path if ref else None

    def note_problems(self) -> dict[str, tuple[NoteRef, str]]:
        return dict(self._state.problems)

    def set_note_problem(self, note: NoteRef, problem: str | None) -> None:
        if problem is None:
            self._state.problems.pop(note.path, None)
        else:
            self._state.problems[note.path] = (note, problem)

    # -- SessionStore -----------------------------------------------------------------------------

    def session_state(self, session: str) -> dict[str, Any] | None:
        found = self._state.sessions.get(session)
        return copy.deepcopy(found[1]) if found else None

    def put_session_state(self, session: str, state: dict[str, Any], now: datetime) -> None:
        started = self._state.sessions.get(session, (now, {}))[0]
        self._state.sessions[session] = (started, copy.deepcopy(state))

    def session_count(self, since: datetime | None = None) -> int:
        return sum(1 for started, _ in self._state.sessions.values() if since is None or started > since)

    def get_meta(self, key: str) -> str | None:
        return self._state.meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self._state.meta[key] = value


def _matches(m: Memory, q: Query) -> bool:
    if q.status is not None and m.status not in q.status:
        return False
    if any(
        value is not None and getattr(m, name) != value
        for name, value in (
            ("category", q.category),
            ("scope", q.scope),
            ("session", q.session),
            ("supersedes", q.supersedes),
        )
    ):
        return False
    if q.origin is not None and not (
        m.origin.startswith(q.origin) if q.origin.endswith(":") else m.origin == q.origin
    ):
        return False
    if q.pinned is not None and m.pinned != q.pinned:
        return False
    if q.file is not None and q.file not in m.files:
        return False
    return q.ids is None or m.id in q.ids


def _bm25(fields_: list[Counter[str]], wanted: set[str], docs: list[tuple[str, list[Counter[str]]]]) -> float:
    """BM25 (k1 1.2, b 0.75) per field, weighted like SQLite's index; 0 when no term matches."""
    total = 0.0
    n = len(docs)
    for index, (weight, counts) in enumerate(zip(_FIELD_WEIGHTS, fields_, strict=True)):
        lengths = [sum(d[1][index].values()) for d in docs]
        average = sum(lengths) / n if n else 0.0
        length = sum(counts.values())
        for term in wanted:
            tf = counts.get(term, 0)
            if not tf:
                continue
            df = sum(1 for d in docs if d[1][index].get(term))
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            norm = tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / (average or 1.0)))
            total += weight * idf * norm
    return total


class InMemoryRepoMap:
    """`RepoMapStore` over dicts: path ids, co-change pairs (both directions), fan-in, cached imports."""

    def __init__(self) -> None:
        self._state_values: dict[str, str] = {}
        self._paths: dict[int, list[Any]] = {}  # id → [path, present, changes, fan_in]
        self._pairs: dict[tuple[int, int], int] = {}
        self._imports: dict[str, CachedImports] = {}
        self._recent: list[tuple[int, RecentCommit]] = []  # (ord, commit), ord growing with newness
        self._lines: dict[str, RecentLines] = {}
        self._depth = 0

    @contextmanager
    def write(self) -> Iterator[None]:
        if self._depth:
            yield
            return
        saved = copy.deepcopy((self._state_values, self._paths, self._pairs, self._imports, self._recent))
        self._depth = 1
        try:
            yield
        except BaseException:
            self._state_values, self._paths, self._pairs, self._imports, self._recent = saved
            raise
        finally:
            self._depth = 0

    def state(self) -> dict[str, str]:
        return dict(self._state_values)

    def set_state(self, values: Mapping[str, str | None]) -> None:
        for key, value in values.items():
            if value is None:
                self._state_values.pop(key, None)
            else:
                self._state_values[key] = value

    def _row(self, path: str) -> tuple[int, list[Any]] | None:
        return next(((i, row) for i, row in self._paths.items() if row[0] == path), None)

    def present(self, path: str) -> bool:
        found = self._row(path)
        return bool(found and found[1][1])

    def present_under(self, directory: str) -> bool:
        return any(row[1] and row[0].startswith(directory) for row in self._paths.values())

    def present_paths(self) -> set[str]:
        return {row[0] for row in self._paths.values() if row[1]}

    def ending_with(self, name: str, limit: int) -> list[str]:
        found = (p for p in self.present_paths() if p == name or p.endswith("/" + name))
        return sorted(found)[:limit]

    def neighbours(self, path: str, min_count: int, limit: int) -> tuple[int, list[tuple[str, int]]]:
        found = self._row(path)
        if found is None or not found[1][2]:
            return 0, []
        ident, row = found
        rows = [
            (self._paths[b][0], n)
            for (a, b), n in self._pairs.items()
            if a == ident and n >= min_count and self._paths[b][1]
        ]
        rows.sort(key=lambda item: (-item[1], item[0]))
        return int(row[2]), rows[:limit]

    def fan_in(self, path: str) -> int:
        found = self._row(path)
        return int(found[1][3]) if found and found[1][1] else 0

    def change_count(self, path: str) -> int:
        found = self._row(path)
        return int(found[1][2]) if found else 0

    def pair_count(self, a: str, b: str) -> int:
        ra, rb = self._row(a), self._row(b)
        return self._pairs.get((ra[0], rb[0]), 0) if ra and rb else 0

    def path_ids(self) -> dict[str, int]:
        return {row[0]: i for i, row in self._paths.items()}

    def clear_history(self) -> None:
        self._pairs.clear()
        for row in self._paths.values():
            row[2] = 0

    def apply_cochange(self, write: CoChangeWrite) -> None:
        for ident in write.dropped:
            self._pairs = {k: n for k, n in self._pairs.items() if ident not in k}
            self._paths.pop(ident, None)
        for ident, path in write.paths.items():
            if ident in write.dropped:
                continue
            if ident in write.new_ids:
                self._paths[ident] = [path, 0, 0, 0]
            elif ident in self._paths:
                self._paths[ident][0] = path
        for ident, n in write.changes.items():
            if ident in self._paths:
                self._paths[ident][2] += n
        for (a, b), n in write.pairs.items():
            if a in write.dropped or b in write.dropped:
                continue
            self._pairs[(a, b)] = self._pairs.get((a, b), 0) + n
            self._pairs[(b, a)] = self._pairs.get((b, a), 0) + n

    def set_files(self, files: Iterable[str], present: Collection[str] | None = None) -> None:
        now = set(files)
        known = self.path_ids()
        next_id = max(self._paths, default=0) + 1
        for path in sorted(now - set(known)):
            self._paths[next_id] = [path, 0, 0, 0]
            next_id += 1
        for ident, row in list(self._paths.items()):
            row[1] = int(row[0] in now)
            if not row[1]:
                row[3] = 0
                if not row[2]:
                    del self._paths[ident]

    def fan_ins(self) -> dict[str, int]:
        return {row[0]: int(row[3]) for row in self._paths.values() if row[1]}

    def set_fan_ins(self, values: Mapping[str, int]) -> None:
        ids = self.path_ids()
        for path, n in values.items():
            if path in ids:
                self._paths[ids[path]][3] = n

    def cached_imports(self) -> dict[str, CachedImports]:
        return dict(self._imports)

    def put_imports(self, rows: Mapping[str, CachedImports]) -> None:
        self._imports.update(rows)

    def drop_imports(self, paths: Iterable[str]) -> None:
        for path in paths:
            self._imports.pop(path, None)

    def recent_touches(
        self, window: str, paths: Collection[str], limit: int
    ) -> dict[str, list[tuple[str, bool]]] | None:
        if self._state_values.get("recent_window") != window:
            return None
        out: dict[str, list[tuple[str, bool]]] = {}
        for _, commit in sorted(self._recent, key=lambda row: -row[0]):
            for path in set(commit.paths) & set(paths):
                found = out.setdefault(path, [])
                if len(found) < limit:
                    found.append((commit.sha, commit.parent))
        return out

    def put_recent(
        self, window: str, commits: Sequence[RecentCommit], *, keep: int | None, add: bool
    ) -> None:
        if not add:
            self._recent = []
        top = max((o for o, _ in self._recent), default=0)
        self._recent += [(top + len(commits) - i, commit) for i, commit in enumerate(commits)]
        if keep is not None:
            self._recent = [(o, c) for o, c in self._recent if o > top + len(commits) - keep]
        self._state_values["recent_window"] = window

    def recent_lines(self, paths: Collection[str]) -> dict[str, RecentLines]:
        return {p: self._lines[p] for p in paths if p in self._lines}

    def put_recent_lines(self, rows: Mapping[str, RecentLines]) -> None:
        self._lines.update(rows)


def _titles(memory: Memory) -> str:
    """The summary with the aliases and tags, weighed as one field (as the SQLite index does)."""
    return f"{memory.summary} {keywords(memory.tags, memory.aliases)}".strip()
