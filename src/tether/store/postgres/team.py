"""`TeamStore`: a workspace's `Store` when its team shares a database (issue 13).

The shared protocols (`MemoryStore`, `SearchIndex`, `EventLog`) go to Postgres; the checkout's own ones
(`NoteBook`: which note of *this* checkout holds which memory; `SessionStore`; `RepoMapStore`) stay in
its SQLite index, passed in as `local` (typed as `tether.store.base.Store`: this package never imports
another backend). The local index keeps a one-line stand-in per note (id, summary, scope, times) so its
note bookkeeping works unchanged; every read of a memory goes to the shared store.

What a sync does with the shared rows (the notes stay the reviewed source of project memory):
- **a note changed by `git pull` while another machine wrote the same memory to the store**: the later
  `updated` wins. An older note is not written (a `stale` event records it) and the newer row stays until
  its writer's note arrives by git; a newer note replaces the row (a `revised` event keeps the old hash).
- **shared rows with no note in this checkout** (added on another machine, not yet committed or pulled)
  are kept: a sync only touches the memories of the notes it has seen.
- **a note that disappears from this checkout** (a branch switch, a pull that removed it, a hand `rm`)
  drops only this checkout's bookkeeping: a missing file cannot tell a deletion from a branch that
  predates the memory, and treating a checkout of an old branch as a deletion would delete the team's
  memory. A deletion is explicit — `tether rm --hard` or the UI's delete (MCP `memory_remove` archives,
  which is shared like any edit) — and leaves a tombstone (a `deleted` event). A checkout that has not
  pulled that deletion yet does not bring the memory back: a note is re-indexed over a tombstone only
  when it was edited after the deletion (`updated` later).

`syncing()` is the view the note sync uses (vanished notes keep their rows; a re-put respects
tombstones); the workspace's own view deletes for the team.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from tether.model.memory import Memory
from tether.store.base import Event, NoteRef, Query, RepoMapStore, Store, Telemetry, TextHit
from tether.store.postgres.store import PostgresStore


class TeamStore:
    """`Store` over a shared `PostgresStore` and the checkout's local index."""

    def __init__(self, shared: PostgresStore, local: Store, *, syncing: bool = False) -> None:
        self.shared = shared
        self.local = local
        self._syncing = syncing
        self._depth = 0
        # The local writes of the open transaction, applied once the shared one has committed, and what
        # they do to the note paths (so that a transaction reads the paths as it leaves them).
        self._later: list[Callable[[], None]] = []
        self._effects: list[tuple[str, str, str]] = []
        self._paths: dict[str, str] | None = None  # note path → id, read once per transaction

    def syncing(self) -> TeamStore:
        """The view for `tether.notes.sync`: vanished notes keep their shared rows (see the module)."""
        return TeamStore(self.shared, self.local, syncing=True)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The shared store's transaction; the note bookkeeping it changes is written to the local index
        after that commits, in one short local transaction. The checkout's index is never held locked
        while the team database works (a hook waiting for it would give up after a second), and it never
        records a note as shared before the shared write is: if the local write then fails, the next sync
        writes the same notes again (puts are idempotent). Reads of the note bookkeeping inside the
        transaction see it as it was before."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._depth = 1
        try:
            with self.shared.transaction():
                yield
            later = self._later
        finally:
            self._depth, self._later, self._effects, self._paths = 0, [], [], None
        if later:
            with self.local.transaction():
                for step in later:
                    step()

    def close(self) -> None:
        try:
            self.shared.close()
        finally:
            self.local.close()

    def repomap(self) -> RepoMapStore:
        return self.local.repomap()

    # -- MemoryStore ------------------------------------------------------------------------------

    def put(
        self,
        memory: Memory,
        note: NoteRef | None = None,
        vector: Sequence[float] | None = None,
        embedder: str | None = None,
    ) -> None:
        with self.transaction():
            # The same memory's note at the same path (every edit): nothing else can claim the path.
            same = (
                not self._effects
                and self._paths is None
                and self.local.note_path(memory.id) == getattr(note, "path", None)
            )
            if note is not None and not same:
                stale = self._note_paths().get(note.path)
                if stale is not None and stale != memory.id:
                    self.remove(stale)  # the note at this path now holds another memory
            self.shared.put(memory, None, vector, embedder, unless_deleted=self._syncing)
            mid = memory.id
            if note is not None:
                stand_in = _stand_in(memory)
                self._later.append(lambda: self.local.put(stand_in, note))
                self._effect("put", mid, note.path)
            else:
                self._later.append(lambda: self._drop_local(mid))
                self._effect("remove", mid)

    def _drop_local(self, memory_id: str) -> None:
        if self.local.note_path(memory_id) is not None:
            self.local.remove(memory_id)

    def _effect(self, op: str, memory_id: str = "", path: str = "") -> None:
        self._effects.append((op, memory_id, path))
        if self._paths is not None:
            _apply(self._paths, op, memory_id, path)

    def _note_paths(self) -> dict[str, str]:
        """Note path → id in this checkout, as the open transaction leaves them. A sync puts thousands of
        notes in one transaction: the bookkeeping is read once for it, not once a note."""
        if self._paths is None:
            self._paths = {p: mid for p, (mid, _) in self.local.note_refs().items()}
            for op, memory_id, path in self._effects:
                _apply(self._paths, op, memory_id, path)
        return self._paths

    def remove(self, memory_id: str) -> None:
        with self.transaction():
            if not self._syncing:
                self.shared.remove(memory_id)
            self._later.append(lambda: self.local.remove(memory_id))
            self._effect("remove", memory_id)

    def get(self, memory_id: str) -> Memory | None:
        return self.shared.get(memory_id)

    def find(self, query: Query) -> list[Memory]:
        return self.shared.find(query)

    def count(self, query: Query) -> int:
        return self.shared.count(query)

    def memories(self, ids: Iterable[str]) -> dict[str, Memory]:
        return self.shared.memories(ids)

    def by_hash(self, content_hash: str) -> list[Memory]:
        return self.shared.by_hash(content_hash)

    def owners(self, paths: Sequence[str]) -> dict[str, list[str]]:
        return self.shared.owners(paths)

    def linking(self, targets: Sequence[str]) -> list[str]:
        return self.shared.linking(targets)

    def version(self) -> str:
        return self.shared.version()

    def describe(self) -> dict[str, Any]:
        return {**self.shared.describe(), "notes_here": len(self.local.note_refs())}

    def clear(self) -> None:
        """The start of a reindex: this checkout's bookkeeping, and (outside a sync) the tenant's rows."""
        with self.transaction():
            if not self._syncing:
                self.shared.clear()
            self._later.append(self.local.clear)
            self._effect("clear")

    # -- SearchIndex and EventLog -------------------------------------------------------------------

    def text(
        self, words: Sequence[str], limit: int, *, trigram: bool = True, among: Sequence[str] | None = None
    ) -> list[TextHit]:
        return self.shared.text(words, limit, trigram=trigram, among=among)

    def nearest(self, embedder: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        return self.shared.nearest(embedder, vector, k)

    def missing_vectors(self, embedder: str) -> list[Memory]:
        return self.shared.missing_vectors(embedder)

    def put_vectors(self, embedder: str, vectors: Iterable[tuple[str, Sequence[float]]]) -> None:
        self.shared.put_vectors(embedder, vectors)

    def drop_vectors(self, keep: str | None = None) -> None:
        self.shared.drop_vectors(keep)

    def record(self, events: Iterable[Event]) -> None:
        self.shared.record(events)

    def telemetry(self, ids: Sequence[str] | None = None) -> dict[str, Telemetry]:
        return self.shared.telemetry(ids)

    def feedback_totals(self) -> tuple[int, int]:
        return self.shared.feedback_totals()

    def events(self, memory_id: str | None = None, limit: int = 100) -> Iterator[Event]:
        return self.shared.events(memory_id, limit)

    def surfaced_in_session(self, session: str, since_turn: int) -> set[str]:
        return self.shared.surfaced_in_session(session, since_turn)

    # -- NoteBook and SessionStore: the checkout's own ----------------------------------------------

    def note_refs(self) -> dict[str, tuple[str, NoteRef]]:
        return self.local.note_refs()

    def note_path(self, memory_id: str) -> str | None:
        return self.local.note_path(memory_id)

    def note_problems(self) -> dict[str, tuple[NoteRef, str]]:
        return self.local.note_problems()

    def set_note_problem(self, note: NoteRef, problem: str | None) -> None:
        self.local.set_note_problem(note, problem)

    def session_state(self, session: str) -> dict[str, Any] | None:
        return self.local.session_state(session)

    def put_session_state(self, session: str, state: dict[str, Any], now: datetime) -> None:
        self.local.put_session_state(session, state, now)

    def session_count(self, since: datetime | None = None) -> int:
        return self.local.session_count(since)

    def get_meta(self, key: str) -> str | None:
        return self.local.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self.local.set_meta(key, value)


def _apply(paths: dict[str, str], op: str, memory_id: str, path: str) -> None:
    if op == "clear":
        paths.clear()
        return
    for known in [p for p, mid in paths.items() if mid == memory_id]:
        del paths[known]
    if op == "put":
        paths[path] = memory_id


def _stand_in(memory: Memory) -> Memory:
    """What the local index keeps of a shared memory: enough for its note bookkeeping, none of the text
    search or vectors (those are the shared store's)."""
    return Memory(
        id=memory.id,
        summary=memory.summary,
        category=memory.category,
        scope=memory.scope,
        origin=memory.origin,
        status=memory.status,
        session=memory.session,
        created=memory.created,
        updated=memory.updated,
    )


def _is_a_store(store: TeamStore) -> Store:
    return store  # mypy checks here that a TeamStore is a `Store`
