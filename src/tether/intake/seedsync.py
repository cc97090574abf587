"""`tether seed FILE.json` as a sync (as `tether rules sync` is for rule files): a seed file is versioned data.

Each entry is named by its `id` or `key` field, else by its text (`tether.intake.seeds.read_seed_file`),
and its memory carries that name in a last details line, `Seed from <file>, key <name>`, so the notes
themselves (not the derived index) say which entry a memory is. Syncing a file again:

- an entry whose name and content are unchanged changes nothing;
- an entry whose name is known but whose content changed updates its memory in place (same id, telemetry
  kept); a keyless entry is named by its text, so editing one archives the old memory and adds a new one;
- a memory whose entry is gone from the file is archived (never deleted), and restored if it comes back;
- an entry that moved to the other scope is a new memory (a memory never changes scope), the old archived.

Seeded memories from before entries had names (no trailer) are adopted by their text.

>>> report = seed(ws, Path("seeds.json"))  # doctest: +SKIP
>>> report.added, report.updated, report.archived  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.intake.seeds import read_seed_file
from tether.memories import Memories
from tether.model.memory import Memory, content_hash
from tether.store.base import Query

__all__ = ["TRAILER", "SeedSync", "seed"]

TRAILER = "Seed from "
ARCHIVE_REASON = "seed entry removed from "


@dataclass
class SeedSync:
    """What syncing one seed file did (ids of the memories in each list)."""

    path: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    unchanged: int = 0
    present: int = 0  # new entries whose text another memory (not a seed of this file) already held

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "new": len(self.added),
            "present": self.unchanged + self.present,
            "added": self.added,
            "updated": self.updated,
            "archived": self.archived,
            "restored": self.restored,
        }


def seed(ws: Memories, path: Path, *, allow_secret: bool = False) -> SeedSync:
    """Sync a seed file into memory (module docstring). The file is validated whole before anything is
    written; every write goes through `Memories.add` / `Memories.edit` (validation, secret refusal)."""
    entries = read_seed_file(path, root=ws.root, allow_secrets=allow_secret)
    if ws.root is None and any(m.scope == "project" for _, m in entries):
        raise TetherError(
            f"{path}: has project memories but there is no .tether/ here: run `tether init` first"
        )
    label = _label(ws, path)
    report = SeedSync(label)
    olds = [m for m in ws.find(Query(status=None, origin="seed")) if m.status != "superseded"]
    by_name: dict[str, Memory] = {}
    legacy: dict[str, Memory] = {}
    for memory in olds:
        owner = _owner(memory)
        if owner is None:
            legacy.setdefault(memory.content_hash, memory)
        elif owner[0] == label:
            by_name.setdefault(owner[1], memory)
    wanted: set[str] = set()
    for name, entry in entries:
        wanted.add(name)
        details = _with_trailer(entry.details, label, name)
        old = by_name.get(name)
        if old is None:
            old = legacy.pop(content_hash(entry.summary, entry.details), None)
        if old is not None and old.scope != entry.scope:
            if old.status == "active":
                report.archived.append(ws.archive(old.id, reason=ARCHIVE_REASON + label).id)
            old = None
        if old is None:
            added = ws.add(
                entry.summary,
                details=details,
                category=entry.category,
                files=ws.absolute(entry.files, entry.scope),
                scope=entry.scope,
                pinned=entry.pinned,
                priority=entry.priority,
                origin="seed",
                allow_secret=allow_secret,
                approved=True,  # the person ran `tether seed` on this file
            )
            if added.created:
                report.added.append(added.memory.id)
            else:
                report.present += 1
            continue
        changes: dict[str, Any] = {
            "summary": entry.summary,
            "details": details,
            "category": entry.category,
            "priority": entry.priority,
            "pinned": entry.pinned,
        }
        differs = any(getattr(old, k) != v for k, v in changes.items()) or old.files != entry.files
        if differs:
            ws.edit(
                old.id,
                allow_secret=allow_secret,
                record_acted=False,
                files=ws.absolute(entry.files, entry.scope),
                summary=entry.summary,
                details=details,
                category=entry.category,
                priority=entry.priority,
                pinned=entry.pinned,
            )
        if old.status == "archived" and _archived_by_sync(ws, old.id):
            report.restored.append(ws.restore(old.id).id)
        elif differs:
            report.updated.append(old.id)
        else:
            report.unchanged += 1
    for name, memory in by_name.items():
        if name not in wanted and memory.status == "active":
            report.archived.append(ws.archive(memory.id, reason=ARCHIVE_REASON + label).id)
    return report


def _label(ws: Memories, path: Path) -> str:
    """How memories name their seed file: repo-relative inside the repository, else its file name (a
    user-level seed file kept elsewhere is still one file per name)."""
    resolved = path.resolve()
    if ws.root is not None and resolved.is_relative_to(ws.root.resolve()):
        return resolved.relative_to(ws.root.resolve()).as_posix()
    return path.name


def _with_trailer(details: str, label: str, name: str) -> str:
    trailer = f"{TRAILER}{label}, {name}"
    return f"{details.strip()}\n\n{trailer}" if details.strip() else trailer


def _owner(memory: Memory) -> tuple[str, str] | None:
    """(seed file, entry name) from a seeded memory's trailer, or None for one seeded before names."""
    last = memory.details.rstrip().rpartition("\n")[2]
    if not last.startswith(TRAILER):
        return None
    label, sep, name = last[len(TRAILER) :].rpartition(", ")
    if not sep or not name.startswith(("key ", "text ")):
        return None
    return label, name


def _archived_by_sync(ws: Memories, memory_id: str) -> bool:
    """Whether the memory's latest archive was a seed sync's (its entry was removed), per the event log:
    a person's own archive is a decision the sync must not undo."""
    for event in ws.store.events(memory_id, limit=1000):
        if event.event == "archived":
            return str(event.receipts.get("reason", "")).startswith(ARCHIVE_REASON)
        if event.event == "restored":
            return False
    return False
