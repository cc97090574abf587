"""The narrow storage interface, in tether's own types (DESIGN §2).

Everything that holds memories (the SQLite index today) implements `Store`. Nothing outside a store
module writes SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from tether.model.memory import Memory


@dataclass(frozen=True)
class NoteRef:
    """Where a memory's note is, and the stat that says whether it changed since it was indexed."""

    path: str
    mtime_ns: int
    size: int


@dataclass(frozen=True)
class Query:
    """Filters for listing memories. `None` means any."""

    status: tuple[str, ...] | None = ("active",)
    category: str | None = None
    scope: str | None = None
    origin: str | None = None  # exact, or a prefix ending in ':' ("rules:")
    file: str | None = None
    pinned: bool | None = None
    session: str | None = None
    ids: tuple[str, ...] | None = None
    limit: int | None = None


@dataclass(frozen=True)
class TextHit:
    """A full-text match: bm25 from each index (lower is better, as SQLite reports it; 0 = no match)."""

    id: str
    words: float
    trigram: float


@dataclass
class Telemetry:
    surfaced: int = 0
    acted: int = 0
    first_surfaced: datetime | None = None
    last_surfaced: datetime | None = None
    last_acted: datetime | None = None


@dataclass(frozen=True)
class Event:
    memory_id: str
    event: str  # surfaced | acted | archived | restored | superseded | renamed | ...
    at: datetime
    session: str | None = None
    turn: int | None = None
    receipts: dict[str, Any] = field(default_factory=dict)


class Store(Protocol):
    def transaction(self) -> AbstractContextManager[None]: ...

    def put(
        self,
        memory: Memory,
        note: NoteRef | None = None,
        vector: Sequence[float] | None = None,
        embedder: str | None = None,
    ) -> None: ...

    def remove(self, memory_id: str) -> None: ...

    def get(self, memory_id: str) -> Memory | None: ...

    def find(self, query: Query) -> list[Memory]: ...

    def memories(self, ids: Iterable[str]) -> dict[str, Memory]: ...

    def by_hash(self, content_hash: str) -> list[Memory]: ...

    def note_refs(self) -> dict[str, tuple[str, NoteRef]]: ...

    def text_search(self, words: Sequence[str], limit: int, *, trigram: bool = True) -> list[TextHit]: ...

    def vectors(self, embedder: str) -> tuple[list[str], bytes | memoryview, int]: ...

    def missing_vectors(self, embedder: str) -> list[Memory]: ...

    def put_vectors(self, embedder: str, vectors: Iterable[tuple[str, Sequence[float]]]) -> None: ...

    def owners(self, paths: Sequence[str]) -> dict[str, list[str]]: ...

    def dir_refs(self) -> dict[str, list[str]]: ...

    def record(self, events: Iterable[Event]) -> None: ...

    def telemetry(self, ids: Sequence[str]) -> dict[str, Telemetry]: ...

    def events(self, memory_id: str | None = None, limit: int = 100) -> Iterator[Event]: ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def close(self) -> None: ...
