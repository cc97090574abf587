"""The storage protocols, in tether's own types (DESIGN §2). Backends implement them; nothing else writes SQL.

Each protocol is small and separately typed, so a caller states what it needs and a second backend plugs in
without touching recall or lifecycle:

- `MemoryStore`: the memory records, their file references, links and content hashes;
- `SearchIndex`: full text (`text`) and nearest neighbours (`nearest`), scores higher-is-better;
- `EventLog`: surfaced / acted / archived ... events and the per-memory counters derived from them;
- `NoteBook`: which note file holds which memory (and which notes failed to parse): the sync's bookkeeping;
- `SessionStore`: per-session state of the hooks, and small local key-value facts (`meta`);
- `RepoMapStore`: the repo map's tables (files, co-change pairs, fan-in), read by `tether.repo`.

`Store` is all of them at once, which is what the SQLite index and the in-memory reference implementation
(`tether.store.memory`) are. With a shared team database the first three can live elsewhere while the
last three stay in the checkout's own index.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol, TypeVar

from tether.errors import StoreError
from tether.model.memory import Memory

T = TypeVar("T")


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
    supersedes: str | None = None  # the memories replacing this id
    ids: tuple[str, ...] | None = None
    limit: int | None = None


@dataclass(frozen=True)
class TextHit:
    """A full-text match of an active memory: one strength per index, higher is better, 0 = no match there.

    The strengths are comparable within one query of one index (a backend's relevance score, e.g. minus
    SQLite's bm25), not across queries or backends: recall uses their ranks and their share of the best."""

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


def pull_rate(surfaced: int, acted: int) -> float:
    """Acted-on events per showing (`EventLog.feedback_totals`), at most 1; 0 when nothing was acted on:
    how readily a project's agent follows up what it is shown (`tether.recall.scoring.ignored_after`).

    >>> pull_rate(200, 4), pull_rate(0, 0), pull_rate(3, 7)
    (0.02, 0.0, 1.0)
    """
    if acted <= 0:
        return 0.0
    return min(1.0, acted / surfaced) if surfaced else 1.0


@dataclass(frozen=True)
class Event:
    memory_id: str
    event: str  # surfaced | acted | archived | restored | superseded | renamed | ...
    at: datetime
    session: str | None = None
    turn: int | None = None
    receipts: dict[str, Any] = field(default_factory=dict)


class MemoryStore(Protocol):
    def transaction(self) -> AbstractContextManager[None]:
        """One atomic write; nested calls join the outer one."""
        ...

    def put(
        self,
        memory: Memory,
        note: NoteRef | None = None,
        vector: Sequence[float] | None = None,
        embedder: str | None = None,
    ) -> None:
        """Insert or replace a memory (its refs, links, search entries; a vector replaces the old one)."""
        ...

    def remove(self, memory_id: str) -> None: ...

    def get(self, memory_id: str) -> Memory | None: ...

    def find(self, query: Query) -> list[Memory]:
        """Memories matching `query`, oldest first."""
        ...

    def count(self, query: Query) -> int: ...

    def memories(self, ids: Iterable[str]) -> dict[str, Memory]:
        """The memories with these ids, whatever their status; unknown ids are left out."""
        ...

    def by_hash(self, content_hash: str) -> list[Memory]: ...

    def owners(self, paths: Sequence[str]) -> dict[str, list[str]]:
        """Active memories naming each exact path (a file, or a directory ref ending in `/`)."""
        ...

    def linking(self, targets: Sequence[str]) -> list[str]:
        """Ids of memories whose details link to any of `targets` (ids, note names, titles, aliases), each
        compared as `tether.model.wikilinks.link_key`: case, spacing and `#heading` aside."""
        ...

    def version(self) -> str:
        """Changes whenever any memory is written or removed (by any process): a key for caches."""
        ...

    def describe(self) -> dict[str, Any]:
        """`backend` and `version` (the server's, for `tether store status`), and what only this backend can
        say (its event count, a team database's tenant and round trip)."""
        ...

    def clear(self) -> None:
        """Forget every memory but session ones (telemetry and events stay): the start of a reindex."""
        ...

    def close(self) -> None: ...


class SearchIndex(Protocol):
    def text(
        self, words: Sequence[str], limit: int, *, trigram: bool = True, among: Sequence[str] | None = None
    ) -> list[TextHit]:
        """Active memories matching any of `words` (OR), at most `limit` from each index; with `among`, only
        those memories (strengths stay comparable with an unrestricted query's)."""
        ...

    def nearest(self, embedder: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """The `k` active memories whose `embedder` vectors have the highest cosine with `vector`, best first.

        Vectors of another embedder or dimension are never compared: the answer is then empty."""
        ...

    def missing_vectors(self, embedder: str) -> list[Memory]:
        """Memories (any status) without a vector of `embedder`."""
        ...

    def put_vectors(self, embedder: str, vectors: Iterable[tuple[str, Sequence[float]]]) -> None: ...

    def drop_vectors(self, keep: str | None = None) -> None:
        """Drop every vector not of the embedder `keep` (all of them with None)."""
        ...


class EventLog(Protocol):
    def record(self, events: Iterable[Event]) -> None:
        """Append events; `surfaced` and `acted` also count in the memory's telemetry, atomically."""
        ...

    def telemetry(self, ids: Sequence[str] | None = None) -> dict[str, Telemetry]: ...

    def feedback_totals(self) -> tuple[int, int]:
        """Surfaced and acted events over every memory (the telemetry counters summed, deleted memories'
        included): how often this project's agent acts on what it is shown (`Memories.pull_rate`)."""
        ...

    def events(self, memory_id: str | None = None, limit: int = 100) -> Iterator[Event]:
        """Newest first."""
        ...

    def surfaced_in_session(self, session: str, since_turn: int) -> set[str]: ...


class NoteBook(Protocol):
    def note_refs(self) -> dict[str, tuple[str, NoteRef]]:
        """Note path → (memory id, the note's stat when it was indexed)."""
        ...

    def note_path(self, memory_id: str) -> str | None: ...

    def note_problems(self) -> dict[str, tuple[NoteRef, str]]:
        """Notes that failed to parse: path → (their stat, the problem), until they change."""
        ...

    def set_note_problem(self, note: NoteRef, problem: str | None) -> None: ...


class SessionStore(Protocol):
    def transaction(self) -> AbstractContextManager[None]: ...

    def session_state(self, session: str) -> dict[str, Any] | None: ...

    def put_session_state(self, session: str, state: dict[str, Any], now: datetime) -> None: ...

    def session_count(self, since: datetime | None = None) -> int: ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...


class CachedImports(NamedTuple):
    """A source file's import specs, with the stat and content digest they were parsed from. (A tuple:
    a refresh loads one per source file of the repository, at half a frozen dataclass's cost.)"""

    mtime_ns: int
    size: int
    digest: str
    specs: tuple[str, ...]


class RecentCommit(NamedTuple):
    """One commit of HEAD's last ones as the recent-change channel reads them (`tether.repo.window`): its
    name, whether it has a parent (`sha^` names one), and the paths it touched (renames: both)."""

    sha: str
    parent: bool
    paths: tuple[str, ...]


class RecentLines(NamedTuple):
    """A file's recent lines (`tether.repo.recent`) as computed for one HEAD and one stat of the file: the
    commit its diff starts from (`base`: `sha^`, or HEAD's own name) and the lines, in the file's lines."""

    head: str
    commits: int
    horizon: int
    size: int
    mtime_ns: int
    base: str
    runs: tuple[tuple[int, int], ...]


@dataclass
class CoChangeWrite:
    """What one co-change pass changes, in path ids. Applied in one transaction by `apply_cochange`."""

    paths: dict[int, str]  # id -> path for ids that are new or whose path changed
    new_ids: set[int]
    dropped: set[int]  # ids whose path was taken over by a rename onto it: their history goes
    changes: dict[int, int]  # id -> increment
    pairs: dict[tuple[int, int], int]  # (a, b) with a < b -> increment


class RepoMapStore(Protocol):
    """The repo map's rows (`tether.repo.map.RepoMap` is the logic over them). Writers go through `write()`."""

    def write(self) -> AbstractContextManager[None]: ...

    def state(self) -> dict[str, str]: ...

    def set_state(self, values: Mapping[str, str | None]) -> None: ...

    def present(self, path: str) -> bool: ...

    def present_under(self, directory: str) -> bool: ...

    def present_paths(self) -> set[str]: ...

    def ending_with(self, name: str, limit: int) -> list[str]:
        """Present paths that are `name` or end with `/name`, at most `limit`, in path order."""
        ...

    def neighbours(self, path: str, min_count: int, limit: int) -> tuple[int, list[tuple[str, int]]]:
        """(commits touching `path`, [(neighbour, shared commits)]) for present neighbours, strongest first."""
        ...

    def fan_in(self, path: str) -> int: ...

    def change_count(self, path: str) -> int: ...

    def pair_count(self, a: str, b: str) -> int: ...

    def path_ids(self) -> dict[str, int]: ...

    def clear_history(self) -> None: ...

    def apply_cochange(self, write: CoChangeWrite) -> None: ...

    def set_files(self, files: Iterable[str], present: Collection[str] | None = None) -> None:
        """Mark exactly `files` as present (`present`: the `present_paths()` the caller read, if it knows
        them still stored)."""
        ...

    def fan_ins(self) -> dict[str, int]: ...

    def set_fan_ins(self, values: Mapping[str, int]) -> None: ...

    def cached_imports(self) -> dict[str, CachedImports]: ...

    def put_imports(self, rows: Mapping[str, CachedImports]) -> None: ...

    def drop_imports(self, paths: Iterable[str]) -> None: ...

    def recent_touches(
        self, window: str, paths: Collection[str], limit: int
    ) -> dict[str, list[tuple[str, bool]]] | None:
        """For each of `paths` its newest `limit` commits of the recorded window, newest first, as (sha,
        has a parent); None unless the window recorded is `window` (`tether.repo.window.window_key`)."""
        ...

    def put_recent(
        self, window: str, commits: Sequence[RecentCommit], *, keep: int | None, add: bool
    ) -> None:
        """Record `commits` (newest first) as window `window`: above the recorded ones when `add` (then only
        the newest `keep` commits stay), else in their place."""
        ...

    def recent_lines(self, paths: Collection[str]) -> dict[str, RecentLines]: ...

    def put_recent_lines(self, rows: Mapping[str, RecentLines]) -> None: ...


class Store(MemoryStore, SearchIndex, EventLog, NoteBook, SessionStore, Protocol):
    """Everything one workspace keeps: what the SQLite index (and the in-memory store) implement."""

    def repomap(self) -> RepoMapStore:
        """The repo map's tables, in the same database."""
        ...


def translating_errors(
    driver_error: type[Exception], translate: Callable[[Any], Exception]
) -> Callable[[type[T]], type[T]]:
    """A class decorator for a backend: every public method (generators and the context managers it
    returns included) raises what `translate` makes of `driver_error`, never the driver's own exception.

    Each backend names its driver's base exception and its translation (`store.sqlite.errors`,
    `store.postgres.errors`); callers then see only `tether.errors`."""

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def generator(*args: Any, **kwargs: Any) -> Iterator[Any]:
                try:
                    yield from func(*args, **kwargs)
                except driver_error as exc:
                    raise translate(exc) from exc

            return generator

        @functools.wraps(func)
        def plain(*args: Any, **kwargs: Any) -> Any:
            try:
                result = func(*args, **kwargs)
            except driver_error as exc:
                raise translate(exc) from exc
            if isinstance(result, AbstractContextManager) and not isinstance(result, StoreError):
                return translated_context(result)
            return result

        return plain

    @contextmanager
    def translated_context(inner: AbstractContextManager[T]) -> Iterator[T]:
        try:
            with inner as value:
                yield value
        except driver_error as exc:
            raise translate(exc) from exc

    def decorate(cls: type[T]) -> type[T]:
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or not callable(member):
                continue
            setattr(cls, name, wrap(member))
        return cls

    return decorate
