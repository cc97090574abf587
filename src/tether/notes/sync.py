"""Incremental sync from the notes into the index (DESIGN §2), and the vectors that go with it.

A note is re-read only when its size or mtime changed. A note that fails to parse is recorded as a problem
(for `tether doctor`) and skipped; it is never rewritten or deleted. `NoteIndex` keeps one workspace's
index in step: light processes (hooks) trust the note directories' mtimes, and memories indexed without a
vector (a hook that could not reach the model) are embedded by whoever can next.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tether.embed.base import Embedder
from tether.embed.policy import EmbedderPolicy
from tether.errors import NoteError
from tether.fs import sweep_orphans
from tether.model.memory import Memory
from tether.notes import format as notes
from tether.notes.stamps import STAMPS, dir_stamps, last_scan, record_scan
from tether.store.base import NoteRef, Store


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[NoteError] = field(default_factory=list)
    # Every note the sync saw, as it saw it (a sync of every note only): what `NoteIndex.watch` compares with.
    seen: dict[str, NoteRef] = field(default_factory=dict, repr=False, compare=False)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def scan(directory: Path | None) -> dict[str, NoteRef]:
    """Every note file in `directory` with its stat. Hidden files (temp files of atomic writes) are skipped."""
    found: dict[str, NoteRef] = {}
    if directory is None:
        return found
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return found
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.endswith(notes.NOTE_SUFFIX):
            continue
        try:
            stat = entry.stat()
        except FileNotFoundError:
            continue
        found[entry.path] = NoteRef(entry.path, stat.st_mtime_ns, stat.st_size)
    return found


def _on_disk(
    sources: list[tuple[Path | None, str]],
) -> tuple[dict[str, tuple[NoteRef, str]], dict[str, Path]]:
    """Every note file of `sources` with its stat and scope, and the repository each project note must
    stay inside (<root>/.tether/memories: a project's note is a file of the repository, never a link out
    of it to the user's own notes, or to any file a clone wants indexed and shown)."""
    on_disk: dict[str, tuple[NoteRef, str]] = {}
    boundaries: dict[str, Path] = {}
    for directory, scope in sources:
        found = scan(directory)
        on_disk.update((path, (ref, scope)) for path, ref in found.items())
        if scope == "project" and directory is not None:
            boundary = directory.parent.parent  # once a directory: two pathlib parents a note add up
            boundaries.update(dict.fromkeys(found, boundary))
    return on_disk, boundaries


def _read(path: str, scope: str, boundary: Path | None) -> Memory | NoteError | None:
    """The note's memory, the problem that keeps it out (whatever went wrong), or None if it vanished."""
    try:
        return notes.read(Path(path), scope, inside=boundary)
    except NoteError as exc:
        return exc
    except FileNotFoundError:
        return None
    except Exception as exc:  # one note, whatever is wrong with it, never stops a sync
        return NoteError(path, f"could not be read ({type(exc).__name__}: {exc}); fix or remove it")


def _duplicate(memory: Memory, path: str, claimed: dict[str, str]) -> NoteError | None:
    owner = claimed.get(memory.id)
    if owner is not None and owner != path:
        return NoteError(
            path, f"duplicate id {memory.id}: {owner} has it too; give one of them a new 8-hex id"
        )
    claimed[memory.id] = path
    return None


def _indexed_as(known: tuple[str, NoteRef] | None, ref: NoteRef) -> bool:
    """Whether the index's row (`known`: memory id and note stat) is of the note as `ref` found it."""
    if known is None:
        return False
    old = known[1]
    return old.mtime_ns == ref.mtime_ns and old.size == ref.size and old.path == ref.path


def sync(store: Store, sources: list[tuple[Path | None, str]], embedder: Embedder | None) -> SyncReport:
    """Bring the index up to date with the note directories in `sources` ((directory, scope) pairs).

    Changed notes are embedded with `embedder`; with None they are indexed without a vector."""
    report = SyncReport()
    # Read the index before the disk: notes are written before they are indexed, so every note the index
    # knows at this point is on disk during the scan unless it was really deleted. The other order lets a
    # note that another process writes and indexes in between look deleted, and its row be dropped.
    known = store.note_refs()
    problems = store.note_problems()
    on_disk, boundaries = _on_disk(sources)
    report.seen = {path: ref for path, (ref, _) in on_disk.items()}
    changed: list[tuple[Memory, NoteRef, bool]] = []
    claimed: dict[str, str] = {mid: path for path, (mid, _) in known.items() if path in on_disk}
    # Unchanged notes first, by their fields (a dataclass `==` per note was 17 ms of a 10k-note scan); only
    # the rest is sorted and looked at.
    maybe = [item for item in on_disk.items() if not _indexed_as(known.get(item[0]), item[1][0])]
    for path, (ref, scope) in sorted(maybe):
        if path in problems and problems[path][0] == ref:
            report.problems.append(NoteError(path, problems[path][1]))
            continue
        found = _read(path, scope, boundaries.get(path))
        if found is None:
            continue
        problem = found if isinstance(found, NoteError) else _duplicate(found, path, claimed)
        if problem is not None:
            store.set_note_problem(ref, problem.problem)
            report.problems.append(problem)
            continue
        assert isinstance(found, Memory)
        changed.append((found, ref, path in known))
    if changed:
        # No embedder (a hook with a heavy model configured): index now, embed later (`embed_missing`).
        texts = [memory.text for memory, _, _ in changed]
        vectors: list[list[float] | None] = list(embedder.embed(texts)) if embedder else [None] * len(texts)
        with store.transaction():
            for (memory, ref, existed), vector in zip(changed, vectors, strict=True):
                store.put(memory, ref, vector, embedder.id if embedder else None)
                (report.updated if existed else report.added).append(memory.id)
    gone = [(path, mid) for path, (mid, _) in known.items() if path not in on_disk]
    if gone:
        with store.transaction():
            for path, mid in gone:
                if claimed.get(mid) not in (None, path):
                    continue  # the note was renamed: its row was re-pointed above
                store.remove(mid)
                report.removed.append(mid)
    for path, (ref, _) in problems.items():
        if path not in on_disk:
            store.set_note_problem(ref, None)
    return report


# How often a rebuild reports its progress (`Progress`): a terminal line redrawn per note would cost more
# than reading the note.
PROGRESS_EVERY = 250
# (stage, done, total): what a long rebuild reports, for a terminal to show (`tether reindex`).
Progress = Callable[[str, int, "int | None"], None]


def rebuild(
    store: Store,
    sources: list[tuple[Path | None, str]],
    embedder: Embedder | None,
    progress: Progress | None = None,
) -> SyncReport:
    """`tether reindex`: every note read and embedded first, aside, then the index's note-derived rows
    replaced in one transaction. Killed (or failing) before the commit, the index is as it was; telemetry,
    events, sessions, the repo map and session memories (which have no note) are kept. `progress` hears
    ("notes", read, total), ("embedding", done, total) and ("index", 0, None) as it goes."""
    report = SyncReport()
    on_disk, boundaries = _on_disk(sources)
    rows: list[tuple[Memory, NoteRef]] = []
    problems: list[tuple[NoteRef, NoteError]] = []
    claimed: dict[str, str] = {}
    for n, (path, (ref, scope)) in enumerate(sorted(on_disk.items())):
        if progress is not None and n % PROGRESS_EVERY == 0:
            progress("notes", n, len(on_disk))
        found = _read(path, scope, boundaries.get(path))
        if found is None:
            continue
        problem = found if isinstance(found, NoteError) else _duplicate(found, path, claimed)
        if problem is not None:
            problems.append((ref, problem))
            continue
        assert isinstance(found, Memory)
        rows.append((found, ref))
    texts = [memory.text for memory, _ in rows]
    vectors: list[list[float] | None] = [None] * len(texts)
    if embedder is not None:
        vectors = []
        for start in range(0, len(texts), PROGRESS_EVERY):
            if progress is not None:
                progress("embedding", start, len(texts))
            vectors.extend(embedder.embed(texts[start : start + PROGRESS_EVERY]))
    if progress is not None:
        progress("index", 0, None)
    with store.transaction():
        store.clear()
        for (memory, ref), vector in zip(rows, vectors, strict=True):
            store.put(memory, ref, vector, embedder.id if embedder else None)
            report.added.append(memory.id)
        for ref, problem in problems:
            store.set_note_problem(ref, problem.problem)
            report.problems.append(problem)
    return report


# Set when memories were indexed without vectors (a hook with no warm process yet): whoever can embed
# next (a later hook that finds the warm process up, any command) embeds them.
PENDING_VECTORS = "vectors.pending"
# The embedder whose vectors the index holds for every memory: a different one (a new model, or a new
# version of the hashed embedder) makes the next sync embed what lacks a vector.
_EMBEDDED = "vectors.embedder"
# How long a long-lived process (the MCP server, the resident process) trusts the note directories' mtimes
# after a scan of every note (its own, or any process's: `notes.stamps.SCANNED`): an editor's in-place save
# shows within this, the resident's watch (`tether.resident.answers.WATCH_SECONDS`) scans as often, and a
# burst of calls costs one scan.
FRESH_SECONDS = 15.0
# The most missing vectors a hook embeds through the warm process (`embed.warm.client.MAX_TEXTS` a request).
HOOK_EMBED_MAX = 32


class NoteIndex:
    """Keeps one workspace's index in step with its note directories (`sources`: (directory, scope))."""

    def __init__(
        self,
        store: Store,
        sources: list[tuple[Path | None, str]],
        embedders: EmbedderPolicy,
        *,
        light: bool,
        log: Callable[[str], None],
        scratch: Sequence[Path] = (),
    ) -> None:
        self.store = store
        self.sources = sources
        self.scratch = scratch  # other directories tether writes temp files in (beside the index)
        self.embedders = embedders
        self.light = light
        self.log = log
        self._scanned: float | None = None  # time.monotonic() of this process's last scan of every note
        self._seen: dict[str, NoteRef] | None = None  # every note as that scan saw it
        # `watch`'s pass under way: its start, the directories' stamps then, every note, how far it got.
        self._pass: tuple[float, str, list[tuple[str, NoteRef]], int] | None = None

    def sync(self, *, full: bool = False, fresh_within: float | None = None) -> SyncReport:
        """Index what changed in the notes. A light process trusts the note directories' mtimes
        (`tether.notes.stamps`): tether's own writes keep them in step, new or deleted notes change them, an
        editor saving in place may not; such an edit is picked up by the next scan of every note (`full`,
        every command, a session start's when the last one is old: `tether.lifecycle.background`).

        `fresh_within` (seconds): trust the mtimes too while the last scan of every note (this process's,
        or any process's as the index records it) is that recent, so a call costs one `stat` per note
        directory instead of one per note (147 ms at 10k notes); an in-place edit waits that long."""
        stamps = self.dir_stamps()
        recent = fresh_within is not None and self.scanned_within(fresh_within)
        if (recent or (self.light and not full)) and self.store.get_meta(STAMPS) == stamps:
            if self.embedders.heavy and self.store.get_meta(PENDING_VECTORS) and self.embedders.warm():
                self.embed_missing()  # indexed by a hook before the warm process was up
            return SyncReport()
        swept = sweep_orphans([d for d, _ in self.sources] + list(self.scratch), time.time())
        if swept:
            self.log(f"removed temp files left by interrupted writes: {', '.join(map(str, swept))}")
        embedder = self.embedders.writer()
        try:
            report = sync(self.store, self.sources, embedder)
        except self.embedders.failures() as exc:
            self.log(f"indexed without vectors: {exc}")
            report = sync(self.store, self.sources, None)
            embedder = None
        if embedder is not None and (self.embedders.heavy or self.store.get_meta(_EMBEDDED) != embedder.id):
            self.embed_missing()  # notes a hook indexed without vectors, or vectors of another embedder
        elif embedder is None and report.changed:
            self.store.set_meta(PENDING_VECTORS, "1")
        with self.store.transaction():
            self.store.set_meta(STAMPS, stamps)
            record_scan(self.store, len(report.seen))
        self._scanned = time.monotonic()
        self._seen, self._pass = report.seen, None
        return report

    def scanned_within(self, seconds: float) -> bool:
        """Whether a scan of every note (this process's, or any process's) finished under `seconds` ago."""
        if self._scanned is not None and time.monotonic() - self._scanned < seconds:
            return True
        last = last_scan(self.store)
        return last is not None and 0 <= last[0] < seconds

    def watch(self, budget: float) -> bool | None:
        """One slice, of about `budget` seconds, of a pass over every note's stat: what a scan of every note
        does for an editor's in-place save (it may leave the directory's mtime alone), cut into pieces that a
        long-lived process runs between requests, so none waits on a whole scan (0.1-0.9 s at 10k notes).

        True: the pass is over and every note is as this process's last sync saw it, so the pass's start
        counts as a scan for `fresh_within`. False: a note changed, went or came, or there was no scan to
        compare with: sync with `full`. None: the pass goes on at the next call."""
        if self._seen is None:
            return False
        if self._pass is None:
            self._pass = (time.monotonic(), self.dir_stamps(), list(self._seen.items()), 0)
        started, stamps, todo, at = self._pass
        end = time.perf_counter() + budget
        while at < len(todo):
            if at > self._pass[3] and time.perf_counter() > end:  # at least one note a slice
                self._pass = (started, stamps, todo, at)
                return None
            path, ref = todo[at]
            try:
                info = os.stat(path)
            except OSError:
                self._pass = None
                return False
            if info.st_mtime_ns != ref.mtime_ns or info.st_size != ref.size:
                self._pass = None
                return False
            at += 1
        self._pass = None
        if self.dir_stamps() != stamps or self.store.get_meta(STAMPS) != stamps:
            return False  # a note was written, renamed or deleted meanwhile
        self._scanned = max(self._scanned or started, started)
        return True

    def reindex(self, *, embeddings_only: bool = False, progress: Progress | None = None) -> SyncReport:
        """Rebuild the index from the notes, atomically (`rebuild`; telemetry and sessions are kept).
        Callers hold the writer lock, so no note changes between the read and the swap."""
        if embeddings_only:
            self.store.drop_vectors(keep=None)
            return self.embed_missing(progress)
        embedder = self.embedders.writer()
        try:
            report = rebuild(self.store, self.sources, embedder, progress)
        except self.embedders.failures() as exc:
            self.log(f"reindexed without vectors: {exc}")
            report = rebuild(self.store, self.sources, None, progress)
        self.sync(full=True)  # vectors of another embedder, the pending mark, the directories' stamps
        return report

    def embed_missing(self, progress: Progress | None = None) -> SyncReport:
        """Embed the memories indexed without a vector of the current embedder. A hook embeds a few through
        the warm process and leaves more (or all, without one) to the next command. `progress` hears
        ("embedding", done, total)."""
        report = SyncReport()
        embedder = self.embedders.writer()
        if embedder is None:
            return report
        missing = self.store.missing_vectors(embedder.id)
        if self.light and len(missing) > HOOK_EMBED_MAX:
            self.store.set_meta(PENDING_VECTORS, "")  # too many for a hook: the next command embeds them
            return report
        try:
            for start in range(0, len(missing), 256):
                if progress is not None:
                    progress("embedding", start, len(missing))
                batch = missing[start : start + 256]
                vectors = embedder.embed([m.text for m in batch])
                self.store.put_vectors(embedder.id, [(m.id, v) for m, v in zip(batch, vectors, strict=True)])
                report.updated.extend(m.id for m in batch)
        except self.embedders.failures() as exc:
            self.log(f"left memories without vectors: {exc}")
            return report
        if self.store.get_meta(PENDING_VECTORS):
            self.store.set_meta(PENDING_VECTORS, "")
        self.store.set_meta(_EMBEDDED, embedder.id)
        return report

    def dir_stamps(self) -> str:
        """The note directories' mtimes: they move with every note written, renamed or deleted."""
        return dir_stamps([directory for directory, _ in self.sources])
