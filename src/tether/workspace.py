"""`Workspace`: one project's memory (and the user's), opened with its index: the library's front door.

A workspace *is* its `Memories` (every read and write, `tether.memories`) plus what only an opened
workspace does: open or recover the index, keep it in step with the notes (`tether.notes.sync`), recall
(`tether.recall`), and report its health. Adapters (CLI, hooks, MCP, UI) use this class; the core
packages below it never import it.

>>> ws = Workspace.open(Path("."))  # doctest: +SKIP
>>> ws.add("Staging API listens on 6443", files=["deploy/staging.yaml"]).memory.id  # doctest: +SKIP
>>> ws.recall("which port does staging use?").memories  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.config import Config
from tether.config.database import database_url
from tether.embed.base import Embedder
from tether.embed.policy import EmbedderPolicy
from tether.errors import StoreDamaged, ValidationError
from tether.memories import Added, Memories
from tether.model.limits import PROMPT_TAIL, QUERY_MAX
from tether.model.memory import CATEGORIES, Memory, check_choice
from tether.model.timestamps import utcnow
from tether.notes.sync import NoteIndex, Progress, SyncReport
from tether.project import Paths, resolve
from tether.store.base import Query, Store
from tether.store.sqlite.schema import BUSY_TIMEOUT_MS, HOOK_BUSY_TIMEOUT_MS
from tether.store.sqlite.store import SQLiteStore

if TYPE_CHECKING:
    from tether.lifecycle.doctor import Doctor
    from tether.recall.cache import RecallCache
    from tether.recall.evidence import Candidate, Recalled, RecallResult
    from tether.recall.recaller import Recaller

# Recall, doctor, export and index recovery load where they are used: a session start, which needs none
# of them, would otherwise pay for their imports (tens of milliseconds of a hook's start).

__all__ = ["Added", "Doctor", "Workspace", "environ_session"]


def __getattr__(name: str) -> Any:
    if name == "Doctor":  # `from tether.workspace import Doctor`, as before it loaded lazily
        from tether.lifecycle.doctor import Doctor

        return Doctor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# In the local index's meta: the identity of the shared store its note bookkeeping refers to ('' or
# missing: the index itself holds the memories).
SHARED_MARK = "team.shared"


class Workspace(Memories):
    """One project's memory plus the user's, with the derived index. Open one per process.

    `light` is a hook: it never waits on loading an embedding model (a real model is reached only through
    the warm embedding process), waits less for a busy index, and trusts the note directories' mtimes.
    `warm` is a long-lived process that will search again (the resident process, the MCP server, the web
    UI): its index keeps what later searches reuse (`SQLiteStore`'s `warm`).

    With a team database configured (`TETHER_DATABASE_URL` or `database.url` in `$TETHER_HOME/config.toml`,
    never a committed file) the store is a `TeamStore`: memories, search and events in Postgres, the note
    bookkeeping, sessions and repo map in the checkout's index. `team=False` opens the local index alone
    (what `tether store copy` reads from or writes to).
    """

    def __init__(
        self,
        paths: Paths,
        *,
        embedder: Embedder | None = None,
        cwd: Path | None = None,
        clock: Callable[[], datetime] | None = None,
        recover: bool = False,
        light: bool = False,
        team: bool = True,
        warm: bool = False,
    ) -> None:
        config = Config.for_paths(paths)
        clock = clock or utcnow
        self.light = light
        self.recovered: Path | None = None
        self.last_sync: SyncReport | None = None
        self._busy_ms = HOOK_BUSY_TIMEOUT_MS if light else BUSY_TIMEOUT_MS
        self._warm = warm
        # What recall derives from the memories, kept between this process's recalls until the next write.
        self._recall_cache: RecallCache | None = None  # made by the first recall (`recaller`)
        self._recover = recover
        self._clock_for_recovery = clock
        # Set when the index's note bookkeeping was made for another store: (the local index, the mark of
        # the store it is now for). The next sync of a command starts the bookkeeping over.
        self._moved: tuple[SQLiteStore, str] | None = None
        self.database = database_url(paths.home) if team else None
        self.paths = paths
        store = self._open_store(paths.index)
        embedders = EmbedderPolicy(
            config.text("embedder"),
            paths.index,
            injected=embedder,
            light=light,
            warm_enabled=config.flag("embed_server.enabled"),
            warm_timeout_ms=config.integer("embed_server.timeout_ms"),
            log=lambda message: self.log(message),
        )
        super().__init__(
            paths, store, embedders, config=config, cwd=(cwd or Path.cwd()).resolve(), clock=clock
        )
        self.index = NoteIndex(
            _sync_view(store),
            self.sources(),
            embedders,
            light=light,
            log=self.log,
            scratch=[paths.index.parent],
        )

    @classmethod
    def open(
        cls,
        cwd: Path,
        *,
        home: Path | None = None,
        require_project: bool = True,
        embedder: Embedder | None = None,
        sync_notes: bool = True,
        clock: Callable[[], datetime] | None = None,
        recover: bool = False,
        light: bool = False,
        team: bool = True,
        warm: bool = False,
    ) -> Workspace:
        """Open the memory for `cwd`. `recover=True` rebuilds a damaged index from the notes instead of
        raising (the CLI does; hooks don't: they fail open and stay fast). Only proven damage is recovered:
        a busy, full or read-only index raises `StoreUnavailable` and nothing is moved."""
        paths = resolve(cwd, home, require_project=require_project)
        ws = cls(
            paths, embedder=embedder, cwd=cwd, clock=clock, recover=recover, light=light, team=team, warm=warm
        )
        if sync_notes:
            try:
                if ws._moved and not light:
                    ws._sync_after_a_switch()
                else:
                    ws.sync()
            except StoreDamaged as damage:  # damage past the header shows only when pages are read
                if not recover:
                    raise
                from tether.store.sqlite.recovery import check_damage, move_aside

                ws.store.close()
                check_damage(paths.index, damage)
                ws.recovered = move_aside(paths.index, ws.clock())
                ws.log(f"index was damaged; moved to {ws.recovered} and rebuilt from the notes")
                ws.store = ws._open_store(paths.index)
                ws.index.store = _sync_view(ws.store)
                ws.sync()
        return ws

    def _open_store(self, index: Path) -> Store:
        local = self._open_local(index)
        # The local index says which store its note bookkeeping was made for ('' for itself): after a
        # switch to or from a team database (or to another one), every note is indexed again, or a note
        # the index already knows would never reach the new store (`_sync_after_a_switch`).
        was = local.get_meta(SHARED_MARK) or ""
        if self.database is None:
            self._moved = (local, "") if was else None
            return local
        from tether.store.postgres.connect import open_team

        try:
            team = open_team(
                self.database, local, root=self.paths.root, home=self.paths.home, light=self.light
            )
        except BaseException:
            local.close()
            raise
        self._moved = (local, team.shared.identity) if was != team.shared.identity else None
        return team

    def _sync_after_a_switch(self) -> None:
        """Start the note bookkeeping over and index every note into the store now in use. A hook leaves
        this to the next command (a whole sync can outlast its deadline); the mark is set only once the
        sync is through, so an interrupted one is done again."""
        assert self._moved is not None
        local, mark = self._moved
        local.clear()
        self.sync(full=True)
        local.set_meta(SHARED_MARK, mark)
        self._moved = None

    def _open_local(self, index: Path) -> SQLiteStore:
        try:
            return SQLiteStore(index, self._busy_ms, warm=self._warm)
        except StoreDamaged as damage:
            if not self._recover:
                raise
            from tether.store.sqlite.recovery import check_damage, move_aside

            # The index is derived: a damaged one is moved aside (kept for inspection) and rebuilt from the
            # notes. Only telemetry is lost with it, never a memory.
            check_damage(index, damage)
            self.recovered = move_aside(index, self._clock_for_recovery())
            return SQLiteStore(index, self._busy_ms, warm=self._warm)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the embedder -----------------------------------------------------------------------------

    @property
    def model_via_warm_process(self) -> bool:
        return self.embedders.via_warm_process

    @property
    def semantic_available(self) -> bool:
        return self.embedders.semantic_available

    # -- the index --------------------------------------------------------------------------------

    def sync(self, *, full: bool = False, fresh_within: float | None = None) -> SyncReport:
        """Index what changed in the notes (see `NoteIndex.sync`)."""
        self.last_sync = self.index.sync(full=full, fresh_within=fresh_within)
        return self.last_sync

    def reindex(self, *, embeddings_only: bool = False, progress: Progress | None = None) -> SyncReport:
        """Rebuild the index from the notes, under the writer lock, in one swap (telemetry and sessions
        are kept): a reindex killed midway leaves the index as it was. `progress`: see `notes.sync.rebuild`."""
        with self.lock():
            return self.index.reindex(embeddings_only=embeddings_only, progress=progress)

    def embed_missing(self) -> SyncReport:
        return self.index.embed_missing()

    # -- recall -----------------------------------------------------------------------------------

    def recaller(self, cls: type[Recaller] | None = None) -> Recaller:
        """A `Recaller` over this workspace (`cls` for a variant, as the quality benchmark's tuning uses)."""
        from tether.recall.cache import RecallCache
        from tether.recall.recaller import Recaller, RecallSettings

        cls = cls or Recaller
        if self._recall_cache is None:
            self._recall_cache = RecallCache()
        return cls(
            self.store,
            root=self.root,
            cwd=self.cwd,
            clock=self.clock,
            embedder=self.embedder if self.semantic_available else None,
            repo=self.repo_map(),
            settings=RecallSettings.from_config(self.config),
            cache=self._recall_cache,
        )

    def ack(
        self, memory_id: str, session: str | None = None, turn: int | None = None, via: str = "ack"
    ) -> Memory:
        memory = super().ack(memory_id, session, turn, via)
        if self._recall_cache is not None:
            self._recall_cache.forget_pull_rate()  # this process's recalls see its own pull at once
        return memory

    def recall(self, prompt: str = "", files: Sequence[str] = (), **options: Any) -> RecallResult:
        """What the hooks inject for `prompt` and the touched `files` (see `Recaller.recall`), the files the
        prompt names first, as the prompt hook takes them; only the prompt's tail (`PROMPT_TAIL`) is read, where
        its question is."""
        text = prompt[-PROMPT_TAIL:]
        return self.recaller().recall(text, self._with_named(text, files), **options)

    def explain(
        self, memory_id: str, prompt: str = "", files: Sequence[str] = (), session: str | None = None
    ) -> tuple[Candidate, int | None]:
        """One memory's score breakdown and rank for the context `recall` would rank it in."""
        return self.recaller().explain(memory_id, prompt, self._with_named(prompt, files), session)

    def _with_named(self, prompt: str, files: Sequence[str]) -> list[str]:
        """`files` with the files `prompt` names first (`tether.recall.named`)."""
        from tether.recall.named import take_named

        return take_named(prompt, self.root, self.repo_map(), files)[1]

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        category: str | None = None,
        files: Sequence[str] = (),
        weak: bool = True,
    ) -> list[Recalled]:
        """Ranked search (full text and semantic, with the recall fusion), not gated like injection: each
        result is marked `strong` or `weak` (see `Recaller.search`). Files the query names rank as touched ones,
        as the prompt hook takes them (`tether.recall.named`). Nothing is recorded."""
        if len(query) > QUERY_MAX:
            raise ValidationError(
                f"the query is {len(query)} characters, the limit is {QUERY_MAX}: search with the words or "
                "the error line that matter"
            )
        if category is not None:
            check_choice("category", category, CATEGORIES)
        touched = self._with_named(query, files)
        return self.recaller().search(query, files=touched, limit=limit, category=category, weak=weak)

    # -- export, import, health -------------------------------------------------------------------

    def export(self) -> Iterator[dict[str, Any]]:
        from tether.intake import jsonl

        return jsonl.export(self)

    def import_lines(self, lines: Iterable[str], *, allow_secret: bool = False) -> tuple[int, int]:
        """Import JSON lines from `export`. Checks every line before writing any. Returns (new, same)."""
        from tether.intake import jsonl

        return jsonl.import_lines(self, lines, allow_secret=allow_secret)

    def store_status(self) -> dict[str, Any]:
        """Which backend holds the memories, its version, counts, and the latency of one read (the median
        of five `count` queries) for `tether store status`."""
        import time

        from tether.config.database import committed_database_setting, redact_url

        timings = []
        for _ in range(5):
            started = time.perf_counter()
            self.store.count(Query())
            timings.append(time.perf_counter() - started)
        out: dict[str, Any] = self.store.describe()
        if self.database:
            out["url"] = redact_url(self.database)
        out |= {
            "index": str(self.paths.index),
            "project_memories": self.store.count(Query(status=None, scope="project")),
            "user_memories": self.store.count(Query(status=None, scope="user")),
            "read_ms": round(sorted(timings)[2] * 1000, 3),
        }
        ignored = committed_database_setting(self.paths.config_files[1:])
        if ignored:
            out["ignored"] = [
                f"database.url in {p}: a committed file cannot choose the database" for p in ignored
            ]
        return out

    def doctor(self) -> Doctor:
        from tether.lifecycle.doctor import doctor

        return doctor(self, self.sync())

    def dead_refs(self) -> list[tuple[Memory, list[str]]]:
        """Active memories whose every named path is gone from the work tree."""
        from tether.lifecycle.doctor import dead_refs

        return dead_refs(self)


def _sync_view(store: Store) -> Store:
    """What the note sync writes through: a team store's `syncing()` view (a note missing from this
    checkout keeps the team's row, a tombstone is respected), the store itself otherwise."""
    syncing: Callable[[], Store] | None = getattr(store, "syncing", None)
    return syncing() if syncing is not None else store


def environ_session() -> str | None:
    return os.environ.get("TETHER_SESSION") or None
