"""Incremental sync from the notes into the index (DESIGN §2).

A note is re-read only when its size or mtime changed. A note that fails to parse is recorded as a problem
(for `tether doctor`) and skipped; it is never rewritten or deleted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tether.embed import Embedder
from tether.errors import NoteError
from tether.model.memory import Memory
from tether.notes import format as notes
from tether.store.base import NoteRef
from tether.store.sqlite.store import SQLiteStore


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[NoteError] = field(default_factory=list)

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


def sync(store: SQLiteStore, sources: list[tuple[Path | None, str]], embedder: Embedder | None) -> SyncReport:
    """Bring the index up to date with the note directories in `sources` ((directory, scope) pairs).

    Changed notes are embedded with `embedder`; with None they are indexed without a vector."""
    report = SyncReport()
    # Read the index before the disk: notes are written before they are indexed, so every note the index
    # knows at this point is on disk during the scan unless it was really deleted. The other order lets a
    # note that another process writes and indexes in between look deleted, and its row be dropped.
    known = store.note_refs()
    problems = store.note_problems()
    on_disk: dict[str, tuple[NoteRef, str]] = {}
    for directory, scope in sources:
        for path, ref in scan(directory).items():
            on_disk[path] = (ref, scope)
    changed: list[tuple[Memory, NoteRef, bool]] = []
    claimed: dict[str, str] = {mid: path for path, (mid, _) in known.items() if path in on_disk}
    for path, (ref, scope) in sorted(on_disk.items()):
        if path in known and known[path][1] == ref:
            continue
        if path in problems and problems[path][0] == ref:
            report.problems.append(NoteError(path, problems[path][1]))
            continue
        try:
            memory = notes.read(Path(path), scope)
        except NoteError as exc:
            store.set_note_problem(ref, exc.problem)
            report.problems.append(exc)
            continue
        except FileNotFoundError:
            continue
        owner = claimed.get(memory.id)
        if owner is not None and owner != path:
            problem = f"duplicate id {memory.id}: {owner} has it too; give one of them a new 8-hex id"
            store.set_note_problem(ref, problem)
            report.problems.append(NoteError(path, problem))
            continue
        claimed[memory.id] = path
        changed.append((memory, ref, path in known))
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
