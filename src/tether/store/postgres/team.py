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

from collections.abc import Iterable, Iterator, Sequence
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
        self._paths: dict[str, str] | None = None  # note path → id, read once per transaction

    def syncing(self) -> TeamStore:
        """The view for `tether.notes.sync`: vanished notes keep their shared rows (see the module)."""
        return TeamStore(self.shared, self.local, syncing=True)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Both stores' transactions; the shared one commits first. If the local one then fails, the next
        sync writes the same notes again (puts are idempotent); the other order could leave the checkout
        believing a note was shared when it was not."""
        self._depth += 1
        try:
            with self.local.transaction(), self.shared.transaction():
                yield
        finally:
            self._depth -= 1
            if not self._depth:
                self._paths = None

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
            if note is not None and (self._paths is not None or self.local.note_path(memory.id) != note.path):
                stale = self._owner_of(note.path)
                if stale is not None and stale != memory.id:
                    self.remove(stale)  # the note at this path now holds another memory
            self.shared.put(memory, None, vector, embedder, unless_deleted=self._syncing)
            if note is not None:
                self.local.put(_stand_in(memory), note)
                if self._paths is not None:
                    self._paths[note.path] = memory.id
            elif self.local.note_path(memory.id) is not None:
                self.local.remove(memory.id)

    def _owner_of(self, path: str) -> str | None:
        """The id whose note is at `path` in this checkout. A sync puts thousands of notes in one
        transaction: the bookkeeping is read once for it, not once a note."""
        if self._paths is None:
            paths = {p: mid for p, (mid, _) in self.local.note_refs().items()}
            if not self._depth:
                return paths.get(path)
            self._paths = paths
        return self._paths.get(path)

    def remove(self, memory_id: str) -> None:
        with self.transaction():
            if not self._syncing:
                self.shared.remove(memory_id)
            self.local.remove(memory_id)
            if self._paths is not None:
                for path in [p for p, mid in self._paths.items() if mid == memory_id]:
                    del self._paths[path]

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

    def clear(self) -> None:
        """The start of a reindex: this checkout's bookkeeping, and (outside a sync) the tenant's rows."""
        with self.transaction():
            if not self._syncing:
                self.shared.clear()
            self.local.clear()

    # -- SearchIndex and EventLog -------------------------------------------------------------------

    def text(self, words: Sequence[str], limit: int, *, trigram: bool = True) -> list[TextHit]:
        return self.shared.text(words, limit, trigram=trigram)

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
