"""`Workspace`: the library API over one project's memory (and the user's), used by every adapter.

>>> ws = Workspace.open(Path("."))  # doctest: +SKIP
>>> ws.add("Staging API listens on 6443", files=["deploy/staging.yaml"]).memory.id  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.config import Config
from tether.embed import Embedder, HashedEmbedder
from tether.errors import NoProjectError, NoteError, NotFoundError, SecretError, ValidationError
from tether.fs import file_lock, write_atomic
from tether.model.memory import (
    CATEGORIES,
    Memory,
    check_choice,
    check_id,
    from_dict,
    new_id,
    normalize_files,
    to_dict,
    validate,
)
from tether.model.timestamps import utcnow
from tether.notes import format as notes
from tether.notes.sync import SyncReport, sync
from tether.project import Paths, resolve
from tether.store.base import Event, Query
from tether.store.sqlite.schema import BUSY_TIMEOUT_MS, HOOK_BUSY_TIMEOUT_MS
from tether.store.sqlite.store import SQLiteStore

if TYPE_CHECKING:
    from tether.embed.warm.client import RemoteEmbedder


@dataclass(frozen=True)
class Added:
    memory: Memory
    created: bool  # False when the same knowledge already existed and was returned instead


@dataclass
class Problem:
    kind: str  # note | dead-ref | config | index
    where: str
    message: str


@dataclass
class Doctor:
    problems: list[Problem] = field(default_factory=list)
    memories: int = 0
    notes: int = 0


class Workspace:
    """One project's memory plus the user's, with the derived index. Open one per process."""

    def __init__(
        self,
        paths: Paths,
        *,
        embedder: Embedder | None = None,
        cwd: Path | None = None,
        clock: Any = None,
        recover: bool = False,
        light: bool = False,
    ) -> None:
        self.paths = paths
        # A hook process must never wait on loading an embedding model: `light` reaches a real model only
        # through the warm embedding process (`tether.embed.warm.client`); without one, notes are indexed
        # without vectors and recall skips the semantic channel.
        self.light = light
        # How many semantic queries this process has made: from the second on it is warm (see recall).
        self.semantic_queries = 0
        self.cwd = (cwd or Path.cwd()).resolve()
        self.config = Config.load(*paths.config_files)
        self._embedder = embedder
        self._injected = embedder is not None
        self._warm: RemoteEmbedder | None = None
        self._warm_asked = False
        self.clock = clock or utcnow
        self.last_sync: SyncReport | None = None
        self.recovered: Path | None = None
        busy = HOOK_BUSY_TIMEOUT_MS if light else BUSY_TIMEOUT_MS
        try:
            self.store = SQLiteStore(paths.index, busy)
        except sqlite3.DatabaseError:
            if not recover:
                raise
            # The index is derived: a damaged one is moved aside (kept for inspection) and rebuilt from the
            # notes. Only telemetry is lost with it, never a memory.
            self.recovered = self._move_aside(paths.index)
            self.log(f"index was damaged; moved to {self.recovered} and rebuilt from the notes")
            self.store = SQLiteStore(paths.index, busy)

    def _move_aside(self, index: Path) -> Path:
        target = index.with_name(f"{index.name}.damaged-{self.clock():%Y%m%dT%H%M%S}")
        os.replace(index, target)
        for suffix in ("-wal", "-shm"):
            index.with_name(index.name + suffix).unlink(missing_ok=True)
        return target

    @classmethod
    def open(
        cls,
        cwd: Path,
        *,
        home: Path | None = None,
        require_project: bool = True,
        embedder: Embedder | None = None,
        sync_notes: bool = True,
        clock: Any = None,
        recover: bool = False,
        light: bool = False,
    ) -> Workspace:
        """Open the memory for `cwd`. `recover=True` rebuilds a damaged index from the notes instead of
        raising (the CLI does; hooks don't: they fail open and stay fast)."""
        paths = resolve(cwd, home, require_project=require_project)
        ws = cls(paths, embedder=embedder, cwd=cwd, clock=clock, recover=recover, light=light)
        if sync_notes:
            try:
                ws.sync()
            except sqlite3.DatabaseError:
                if not recover:
                    raise
                ws.store.close()  # damage past the header shows only when pages are read
                ws.recovered = ws._move_aside(paths.index)
                ws.store = SQLiteStore(paths.index)
                ws.sync()
        return ws

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def root(self) -> Path | None:
        return self.paths.root

    @property
    def embedder(self) -> Embedder:
        """The configured embedder. In a light workspace with a real model, the warm process's, for queries:
        one that fails there answers a zero vector (it matches nothing), so recall goes on without the
        semantic channel instead of failing."""
        if self._embedder is None:
            spec = str(self.config["embedder"])
            warm = self._warm_embedder() if self.model_via_warm_process else None
            if spec == "hashed":
                self._embedder = HashedEmbedder()
            elif warm is not None:
                from tether.embed.warm.client import FailOpenQueries

                self._embedder = FailOpenQueries(warm, self.log)
            else:
                from tether.embed.providers import make_embedder

                self._embedder = make_embedder(spec)
        return self._embedder

    def _warm_embedder(self) -> RemoteEmbedder | None:
        """The warm embedding process serving this project's model, if one answers ready (asked once)."""
        if not self._warm_asked:
            self._warm_asked = True
            from tether.embed.warm.client import RemoteEmbedder, socket_path, supported

            spec = str(self.config["embedder"])
            if self.config["embed_server.enabled"] and supported():
                timeout = int(self.config["embed_server.timeout_ms"]) / 1000
                remote = RemoteEmbedder(socket_path(self.paths.index, spec), spec, timeout=timeout)
                if remote.ready():
                    self._warm = remote
        return self._warm

    def _vector_embedder(self) -> Embedder | None:
        """What embeds memories as they are indexed. In a hook with a real model: the warm process, or
        None without one (the notes are indexed without vectors; the next command embeds them)."""
        if self.model_via_warm_process:
            return self._warm_embedder()
        return self.embedder

    def _warm_failure(self) -> tuple[type[Exception], ...]:
        """The errors a hook survives by indexing without vectors: the warm process's (none elsewhere)."""
        if not self.model_via_warm_process:
            return ()
        from tether.embed.providers import EmbedderError  # already loaded by the warm process's client

        return (EmbedderError,)

    def log(self, message: str, *, exc: bool = False) -> None:
        """One line in `.tether/logs/tether.log` (never raises: logging must not break a hook)."""
        import traceback

        try:
            self.paths.logs.mkdir(parents=True, exist_ok=True)
            detail = ""
            if exc:
                detail = " | " + traceback.format_exc().strip().splitlines()[-1]
            with open(self.paths.logs / "tether.log", "a", encoding="utf-8") as handle:
                handle.write(f"{self.clock():%Y-%m-%dT%H:%M:%S} {message}{detail}\n")
        except OSError:
            pass

    # -- notes and index --------------------------------------------------------------------------

    def sources(self) -> list[tuple[Path | None, str]]:
        return [(self.paths.project_notes, "project"), (self.paths.user_notes, "user")]

    @property
    def heavy_embedder(self) -> bool:
        """A real model is configured (not passed in): loading it takes seconds, too long for a hook."""
        return not self._injected and str(self.config["embedder"]) not in ("hashed", "")

    @property
    def model_via_warm_process(self) -> bool:
        """A hook with a real model configured: it reaches the model only through the warm process."""
        return self.light and self.heavy_embedder

    @property
    def semantic_available(self) -> bool:
        """Whether recall can embed a query: always, except in a hook with a real model and no warm process."""
        return not self.model_via_warm_process or self._warm_embedder() is not None

    def sync(self, *, full: bool = False) -> SyncReport:
        """Index what changed in the notes. A light workspace (a hook) trusts the note directories' mtimes:
        tether's own writes (temp file + rename) and new or deleted notes change them, an editor saving in
        place may not; such an edit is picked up by the next command or session start (`full`)."""
        stamps = self._dir_stamps()
        if self.light and not full and self.store.get_meta(_STAMPS) == stamps:
            self.last_sync = SyncReport()
            if self.heavy_embedder and self.store.get_meta(_PENDING) and self._warm_embedder():
                self.embed_missing()  # indexed by a hook before the warm process was up
            return self.last_sync
        embedder = self._vector_embedder()
        try:
            self.last_sync = sync(self.store, self.sources(), embedder)
        except self._warm_failure() as exc:
            self.log(f"indexed without vectors: {exc}")
            self.last_sync = sync(self.store, self.sources(), None)
            embedder = None
        if embedder is not None and self.heavy_embedder:
            self.embed_missing()  # notes a hook indexed without vectors
        elif embedder is None and self.last_sync.changed:
            self.store.set_meta(_PENDING, "1")
        self.store.set_meta(_STAMPS, stamps)
        return self.last_sync

    def _dir_stamps(self) -> str:
        stamps = []
        for directory, _ in self.sources():
            try:
                stamps.append(str(directory.stat().st_mtime_ns) if directory else "-")
            except OSError:
                stamps.append("-")
        return ",".join(stamps)

    def reindex(self, *, embeddings_only: bool = False) -> SyncReport:
        """Rebuild the index from the notes (telemetry and sessions are kept)."""
        if embeddings_only:
            self.store.drop_vectors(keep=None)
            return self.embed_missing()
        self.store.clear()
        return self.sync()

    def embed_missing(self) -> SyncReport:
        """Embed the memories indexed without a vector of the current embedder. A hook embeds a few through
        the warm process and leaves more (or all, without one) to the next command."""
        report = SyncReport()
        embedder = self._vector_embedder()
        if embedder is None:
            return report
        missing = self.store.missing_vectors(embedder.id)
        if self.light and len(missing) > _HOOK_EMBED_MAX:
            self.store.set_meta(_PENDING, "")  # too many for a hook: the next command embeds them
            return report
        try:
            for start in range(0, len(missing), 256):
                batch = missing[start : start + 256]
                vectors = embedder.embed([m.text for m in batch])
                self.store.put_vectors(embedder.id, [(m.id, v) for m, v in zip(batch, vectors, strict=True)])
                report.updated.extend(m.id for m in batch)
        except self._warm_failure() as exc:
            self.log(f"left memories without vectors: {exc}")
            return report
        if self.store.get_meta(_PENDING):
            self.store.set_meta(_PENDING, "")
        return report

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialize writers across processes, so a duplicate check and its write are one step."""
        with file_lock(self.paths.tether_dir / ".lock"):
            yield

    def _notes_dir(self, scope: str) -> Path:
        if scope == "project":
            if self.paths.project_notes is None:
                raise NoProjectError(
                    "no .tether/ here for project memory: run `tether init`, or use --scope user"
                )
            return self.paths.project_notes
        return self.paths.user_notes

    def _note_path(self, memory: Memory) -> Path | None:
        if memory.scope == "session":
            return None
        known = self.store.note_path(memory.id)
        if known is not None:
            return Path(known)
        return self._notes_dir(memory.scope) / notes.note_name(memory)

    def _write(self, memory: Memory, path: Path | None = None) -> Memory:
        """Write the note (atomically) and index it. The note is durable before the index knows of it."""
        from tether.store.base import NoteRef

        vector, embedder_id = self._vector(memory.text)
        target = path if path is not None else self._note_path(memory)
        if target is None:
            self.store.put(memory, None, vector, embedder_id)
            return memory
        problem = self.store.note_problems().get(str(target))
        if problem is not None:
            # The note was broken by hand after it was indexed: writing the indexed version would throw
            # the hand edit away. Notes that fail to parse are never overwritten.
            raise NoteError(
                str(target), f"{problem[1]}; fix the note by hand (or delete it) before changing this memory"
            )
        write_atomic(target, notes.render(memory))
        stat = target.stat()
        self.store.put(memory, NoteRef(str(target), stat.st_mtime_ns, stat.st_size), vector, embedder_id)
        return memory

    def _vector(self, text: str) -> tuple[list[float] | None, str | None]:
        """A memory's vector and its embedder's id; none in a hook that cannot reach the model."""
        embedder = self._vector_embedder()
        if embedder is None:
            self.store.set_meta(_PENDING, "1")
            return None, None
        try:
            return embedder.embed([text])[0], embedder.id
        except self._warm_failure() as exc:
            self.log(f"indexed without a vector: {exc}")
        self.store.set_meta(_PENDING, "1")
        return None, None

    # -- writing ----------------------------------------------------------------------------------

    def add(
        self,
        summary: str,
        *,
        details: str = "",
        category: str = "context",
        files: Sequence[str] = (),
        scope: str = "project",
        pinned: bool = False,
        priority: str = "normal",
        origin: str = "user",
        supersedes: str | None = None,
        session: str | None = None,
        allow_secret: bool = False,
        memory_id: str | None = None,
    ) -> Added:
        """Add a memory, or return the existing one holding the same knowledge in the same scope."""
        check_choice("scope", scope, ("project", "user", "session"))
        root = self.root if scope != "user" else None
        memory = validate(
            Memory(
                id=memory_id or new_id(),
                summary=summary,
                details=details,
                category=category,
                scope=scope,
                files=normalize_files(list(files), root, self.cwd),
                priority=priority,
                pinned=pinned,
                origin=origin,
                supersedes=check_id(supersedes) if supersedes else None,
                session=session,
                created=self.clock(),
                updated=self.clock(),
            )
        )
        if not allow_secret:
            check_secret(memory.text)
        if scope == "project":
            self._notes_dir(scope)
        with self._lock():
            for existing in self.store.by_hash(memory.content_hash):
                if existing.scope == memory.scope and (scope != "session" or existing.session == session):
                    return Added(existing, created=False)
            old = None
            if memory.supersedes:
                old = self.get(memory.supersedes)
            self._write(memory)
            if old is not None:
                self._supersede(old, memory)
        return Added(memory, created=True)

    def _supersede(self, old: Memory, new: Memory) -> None:
        self._write(old.with_changes(status="superseded", updated=self.clock()))
        now = self.clock()
        self.store.record(
            [
                Event(old.id, "superseded", now, receipts={"by": new.id}),
                Event(old.id, "acted", now, receipts={"via": "supersede"}),
            ]
        )

    def supersede(self, old_id: str, new_id_: str) -> Memory:
        old, new = self.get(old_id), self.get(new_id_)
        if old.id == new.id:
            raise ValidationError("a memory cannot supersede itself")
        with self._lock():
            updated = self._write(new.with_changes(supersedes=old.id, updated=self.clock()))
            self._supersede(old, updated)
        return updated

    def edit(self, memory_id: str, **changes: Any) -> Memory:
        """Change fields of a memory (summary, details, category, files, priority, pinned, scope excluded)."""
        memory = self.get(memory_id)
        if "files" in changes:
            root = self.root if memory.scope != "user" else None
            changes["files"] = normalize_files(list(changes["files"]), root, self.cwd)
        allow_secret = bool(changes.pop("allow_secret", False))
        record_acted = bool(changes.pop("record_acted", True))
        updated = validate(memory.with_changes(**changes, updated=self.clock()))
        if not allow_secret and updated.text != memory.text:
            check_secret(updated.text)
        if updated == memory.with_changes(updated=updated.updated):
            return memory
        with self._lock():
            self._write(updated)
            if record_acted:
                self.store.record([Event(memory.id, "acted", self.clock(), receipts={"via": "edit"})])
        return updated

    def set_status(self, memory_id: str, status: str, reason: str = "") -> Memory:
        memory = self.get(memory_id)
        if memory.status == status:
            return memory
        with self._lock():
            updated = self._write(memory.with_changes(status=status, updated=self.clock()))
            event = {"archived": "archived", "active": "restored"}.get(status, status)
            self.store.record(
                [Event(memory.id, event, self.clock(), receipts={"reason": reason} if reason else {})]
            )
        return updated

    def archive(self, memory_id: str, reason: str = "") -> Memory:
        return self.set_status(memory_id, "archived", reason)

    def restore(self, memory_id: str) -> Memory:
        return self.set_status(memory_id, "active")

    def delete(self, memory_id: str) -> Memory:
        """Delete a memory for good: its note file too."""
        memory = self.get(memory_id)
        with self._lock():
            path = self._note_path(memory)
            if path is not None:
                path.unlink(missing_ok=True)
            self.store.remove(memory.id)
        return memory

    def pin(self, memory_id: str, pinned: bool = True) -> Memory:
        memory = self.get(memory_id)
        if memory.pinned == pinned:
            return memory
        with self._lock():
            updated = self._write(memory.with_changes(pinned=pinned, updated=self.clock()))
            self.store.record(
                [Event(memory.id, "acted", self.clock(), receipts={"via": "pin" if pinned else "unpin"})]
            )
        return updated

    def ack(
        self, memory_id: str, session: str | None = None, turn: int | None = None, via: str = "ack"
    ) -> Memory:
        memory = self.get(memory_id)
        self.store.record([Event(memory.id, "acted", self.clock(), session, turn, {"via": via})])
        return memory

    # -- reading ----------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        mid = check_id(memory_id)
        memory = self.store.get(mid)
        if memory is None:
            raise NotFoundError(f"no memory {mid}: `tether list --all` shows every id")
        return memory

    def chain(self, memory: Memory) -> list[Memory]:
        """What `memory` replaced, oldest last, and what replaced it, newest first."""
        out: list[Memory] = []
        seen = {memory.id}
        for newer in self.store.find(Query(status=None)):
            if newer.supersedes == memory.id and newer.id not in seen:
                out.append(newer)
                seen.add(newer.id)
        current = memory
        while current.supersedes and current.supersedes not in seen:
            older = self.store.get(current.supersedes)
            if older is None:
                break
            out.append(older)
            seen.add(older.id)
            current = older
        return out

    def find(self, query: Query | None = None) -> list[Memory]:
        return self.store.find(query or Query())

    def links(self, memory: Memory) -> tuple[list[Memory], list[Memory]]:
        """Memories this one links to, and memories linking to it (by id or by note name)."""
        outgoing: list[Memory] = []
        for target in memory.links:
            found = self._resolve_link(target)
            if found is not None and found.id != memory.id:
                outgoing.append(found)
        path = self._note_path(memory)
        names = [memory.id, notes.slug(memory.summary)]
        if path is not None:
            names.append(path.stem)
        incoming = [m for mid in self.store.linking(names) if mid != memory.id and (m := self.store.get(mid))]
        return outgoing, incoming

    def _resolve_link(self, target: str) -> Memory | None:
        target = target.strip()
        if len(target) == 8:
            found = self.store.get(target.lower())
            if found:
                return found
        for path, (mid, _) in self.store.note_refs().items():
            stem = Path(path).stem
            if stem == target or stem.split("-", 1)[-1] == target:
                return self.store.get(mid)
        return None

    def search(
        self, query: str, *, limit: int = 10, category: str | None = None, files: Sequence[str] = ()
    ) -> list[Any]:
        """Ranked search (full text and semantic, with the recall fusion). Nothing is recorded."""
        from tether.recall.recaller import Recaller

        if category is not None:
            check_choice("category", category, CATEGORIES)
        return Recaller(self).search(query, files=list(files), limit=limit, category=category)

    # -- export / import --------------------------------------------------------------------------

    def export(self) -> Iterator[dict[str, Any]]:
        for memory in self.store.find(Query(status=None)):
            if memory.scope != "session":
                yield to_dict(memory)

    def import_lines(self, lines: Iterable[str]) -> tuple[int, int]:
        """Import JSON lines from `export`. Validates every line before writing any. Returns (new, same)."""
        incoming: list[Memory] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                incoming.append(from_dict(json.loads(line)))
            except (json.JSONDecodeError, TypeError, KeyError) as exc:
                raise ValidationError(
                    f"line {number}: not a tether memory ({exc}); export with `tether export`"
                ) from None
            except ValidationError as exc:
                raise ValidationError(f"line {number}: {exc}") from None
        conflicts = []
        for memory in incoming:
            existing = self.store.get(memory.id)
            if existing is not None and to_dict(existing) != to_dict(memory):
                conflicts.append(memory.id)
        if conflicts:
            raise ValidationError(
                f"{len(conflicts)} id(s) already exist with different content ({', '.join(conflicts[:5])}): "
                "nothing was imported; remove or edit those memories first"
            )
        new = same = 0
        with self._lock():
            for memory in incoming:
                if self.store.get(memory.id) is not None:
                    same += 1
                    continue
                self._notes_dir(memory.scope)
                self._write(memory)
                new += 1
        return new, same

    # -- health -----------------------------------------------------------------------------------

    def doctor(self) -> Doctor:
        report = Doctor()
        sync_report = self.sync()
        for problem in sync_report.problems:
            report.problems.append(Problem("note", problem.path, problem.problem))
        report.memories = self.store.count(Query(status=None))
        report.notes = len(self.store.note_refs())
        for memory, _ in self.dead_refs():
            report.problems.append(
                Problem(
                    "dead-ref",
                    memory.id,
                    f"every file it names is gone ({', '.join(memory.files)}): "
                    f"`tether edit {memory.id} --file NEW` or `tether rm {memory.id}`",
                )
            )
        missing = len(self.store.missing_vectors(self.embedder.id))
        if missing:
            report.problems.append(
                Problem(
                    "index",
                    str(self.paths.index),
                    f"{missing} memories lack {self.embedder.id} vectors: run `tether reindex`",
                )
            )
        return report

    def dead_refs(self) -> list[tuple[Memory, list[str]]]:
        """Active memories whose every named path is gone from the work tree."""
        if self.root is None:
            return []
        from tether.repo.map import RepoMap

        repo = RepoMap.open(self.root, self.store.conn)
        out = []
        for memory in self.store.find(Query(scope="project")):
            if memory.files and not any(repo.exists(path) for path in memory.files):
                out.append((memory, list(memory.files)))
        return out


_STAMPS = "notes.dir_stamps"
# Set when a hook indexed memories without vectors (no warm process yet): a later hook that finds one warm
# embeds them, so they need not wait for the next command.
_PENDING = "vectors.pending"
# The most missing vectors a hook embeds through the warm process (`embed_client.MAX_TEXTS` a request).
_HOOK_EMBED_MAX = 32


def check_secret(text: str) -> None:
    from tether.model.secrets import find_secret

    found = find_secret(text)
    if found:
        raise SecretError(
            f"refused: the text looks like a credential ({found}); remove it, or pass --allow-secret "
            "if it is not a real secret"
        )


def environ_session() -> str | None:
    return os.environ.get("TETHER_SESSION") or None
