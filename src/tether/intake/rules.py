"""Rule files become memory (DESIGN §6): `tether rules sync` and the session-start re-sync.

Each rule of AGENTS.md, CLAUDE.md, GEMINI.md, `.cursor/rules/*.mdc` and `.github/copilot-instructions.md`
(nested ones too; `tether.intake.rulefiles` finds and splits them) is one `pref` memory with origin
`rules:<path>`, scoped to the file's directory. Syncing is idempotent, and follows edits:

- a rule whose text is unchanged keeps its memory (matched by content hash);
- an edited rule is the removed rule whose text is most like it (difflib ratio ≥ `MATCH_RATIO` on the
  rule text, a small bonus for the same heading): its memory is updated in place, keeping id and telemetry;
- a rule with no such match is new; a memory whose rule is gone is archived (never deleted), and restored
  if the rule comes back.

A rule that looks like it holds a credential is skipped with a warning rather than stored: rule files are
committed, but memory also flows to user scope, team databases and model prompts, and DESIGN §8 promises
no secrets in memory unless explicitly allowed.

>>> report = sync_rules(ws)  # doctest: +SKIP
>>> resync_if_changed(ws)  # cheap when no rule file changed  # doctest: +SKIP
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import TetherError, ValidationError
from tether.fs import file_lock
from tether.intake.rulefiles import read_rule_file
from tether.intake.rulestate import (
    META_FILES,
    META_HASH,
    RENDER_VERSION,
    _root,
    file_hashes,
    fingerprint,
    rule_files,
    unchanged,
)
from tether.intake.ruletext import Rendered, body_of, heading_of, render
from tether.memories import Memories
from tether.model.memory import Memory, check_text
from tether.model.secrets import find_secret
from tether.notes.sync import Progress
from tether.store.base import Query

__all__ = [
    "MATCH_RATIO",
    "RENDER_VERSION",
    "FileSync",
    "Rendered",
    "RulesSync",
    "fingerprint",
    "render",
    "resync_if_changed",
    "sync_rules",
]

# An edited rule keeps most of its words; two different rules of one file rarely share half. Below this
# an edit is treated as remove + add, which costs only the old memory's telemetry.
MATCH_RATIO = 0.5
# Between two equally similar candidates, the one under the same heading is the edited rule.
HEADING_BONUS = 0.05
_CHANGES = ("added", "updated", "archived", "restored", "moved")  # what `FileSync` lists, in its JSON order


@dataclass
class FileSync:
    """What syncing one rule file did."""

    path: str
    added: list[Memory] = field(default_factory=list)
    updated: list[Memory] = field(default_factory=list)
    archived: list[Memory] = field(default_factory=list)
    restored: list[Memory] = field(default_factory=list)
    moved: list[Memory] = field(default_factory=list)  # adopted from a rule file that was renamed or moved
    unchanged: int = 0
    dropped: int = 0  # units that carry no rule (only links, a directory tree)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.archived or self.restored or self.moved)

    def to_json(self) -> dict[str, Any]:
        changes = {kind: [m.id for m in getattr(self, kind)] for kind in _CHANGES}
        counts = {"unchanged": self.unchanged, "dropped": self.dropped}
        return {"path": self.path, **changes, **counts, "warnings": self.warnings, "error": self.error}


@dataclass
class RulesSync:
    files: list[FileSync] = field(default_factory=list)
    removed_files: list[FileSync] = field(default_factory=list)  # rule files that are gone

    @property
    def errors(self) -> list[str]:
        return [f.error for f in self.files if f.error]

    def to_json(self) -> dict[str, Any]:
        return {
            "files": [f.to_json() for f in self.files],
            "removed_files": [f.to_json() for f in self.removed_files],
        }


@contextmanager
def _sync_lock(ws: Memories, wait: bool) -> Iterator[bool]:
    """One rule sync at a time per project (two session starts must not both add the same rule).

    A separate lock from the workspace's writer lock, which every add/edit takes and is not reentrant.
    It lives in the git-ignored logs directory. Yields False when `wait` is off and another sync runs.
    """
    with file_lock(ws.paths.logs / "rules-sync.lock", wait=wait) as held:
        yield held


# -- syncing ----------------------------------------------------------------------------------------


def sync_rules(
    ws: Memories, paths: list[str] | None = None, *, progress: Progress | None = None
) -> RulesSync:
    """Import every rule file (or `paths`): add new rules, update edited ones, archive removed ones.

    A file that cannot be read (not UTF-8, unreadable) is reported in its `FileSync.error` and its
    memories are left as they are; the other files are still synced. `progress` hears ("rules", files
    synced, files) before each file (a terminal shows it: `tether rules sync`).
    """
    root = _root(ws)
    with _sync_lock(ws, wait=True):
        return _sync(ws, root, paths if paths is not None else rule_files(ws), progress=progress)


def _sync(
    ws: Memories,
    root: Path,
    paths: list[str],
    *,
    skip: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> RulesSync:
    """Sync `paths`; with `skip` (the hashes of the last sync), files whose bytes did not change are not
    read again: a re-sync after a pull costs what changed, not every rule file of the project."""
    report = RulesSync()
    present = set(paths)
    hashes = file_hashes(root, paths)
    # Rules of files that are gone: a file renamed or moved (AGENTS.md → docs/AGENTS.md) adopts them below,
    # so they keep their ids, history and usage counts; the rest are archived.
    orphans = [
        m
        for m in ws.find(Query(status=("active",), origin="rules:", scope="project"))
        if m.origin.removeprefix("rules:") not in present
    ]
    for n, path in enumerate(paths):
        if skip is not None and skip.get(path) == hashes[path]:
            continue
        if progress is not None:
            progress("rules", n, len(paths))
        try:
            report.files.append(_sync_file(ws, root, path, orphans))
        except TetherError as exc:
            # E.g. one of its notes was broken by hand (never overwritten): report it, sync the rest.
            ws.log(f"rules sync: {path}: {exc}")
            report.files.append(FileSync(path, error=f"{path}: {exc}"))
    gone: dict[str, FileSync] = {}
    for memory in orphans:
        source = memory.origin.removeprefix("rules:")
        entry = gone.setdefault(source, FileSync(source))
        entry.archived.append(ws.archive(memory.id, reason=f"rule file {source} removed"))
    report.removed_files = list(gone.values())
    with ws.store.transaction():
        ws.store.set_meta(META_HASH, fingerprint(root, paths, hashes))
        ws.store.set_meta(META_FILES, json.dumps(hashes))
    return report


def _sync_file(ws: Memories, root: Path, path: str, orphans: list[Memory]) -> FileSync:
    """Sync one rule file. New rules may adopt `orphans` (rules of removed files, same text or nearly);
    adopted ones are taken out of that list."""
    result = FileSync(path)
    try:
        units = read_rule_file(root, path)
    except ValidationError as exc:
        result.error = str(exc)
        ws.log(f"rules sync: {exc}")
        return result
    wanted: dict[str, Rendered] = {}
    for unit in units:
        item = render(unit, root)
        if item is None:
            result.dropped += 1
            continue
        kind = find_secret(f"{item.summary}\n{item.details}")
        if kind:
            result.warnings.append(
                f"{path}:{unit.line}: skipped a rule that looks like it holds a credential ({kind}); "
                "rephrase it with a placeholder to have it remembered"
            )
            continue
        try:
            check_text("the rule", f"{item.summary}\n{item.details}")
        except ValidationError as exc:
            result.warnings.append(f"{path}:{unit.line}: skipped a rule: {exc}")
            continue
        wanted.setdefault(item.content_hash, item)  # the same rule twice in one section is one memory

    origin = f"rules:{path}"
    olds = ws.find(Query(status=None, origin=origin, scope="project"))
    by_hash = {m.content_hash: m for m in olds}
    matched: set[str] = set()
    pending: list[Rendered] = []
    for digest, item in wanted.items():
        old = by_hash.get(digest)
        if old is None or old.id in matched:
            pending.append(item)
            continue
        matched.add(old.id)
        if old.files != item.files or old.category != item.category:
            # The rule file decides both: a marker added to a rule changes its category, not its text.
            ws.edit(old.id, files=ws.absolute(item.files), category=item.category, record_acted=False)
        if old.status == "archived" and _archived_by_sync(ws, old.id):
            result.restored.append(ws.restore(old.id))
        else:
            result.unchanged += 1

    # Superseded memories belong to the person who replaced them; archived ones count only when the
    # sync archived them (a person's own archive is a decision this must not undo).
    spare = [
        m
        for m in olds
        if m.id not in matched
        and (m.status == "active" or (m.status == "archived" and _archived_by_sync(ws, m.id)))
    ]
    for old, item in _pair(spare, pending):
        pending.remove(item)
        spare.remove(old)
        updated = ws.edit(
            old.id,
            summary=item.summary,
            details=item.details,
            category=item.category,
            files=ws.absolute(item.files),
            record_acted=False,
        )
        if updated.status == "archived":
            updated = ws.restore(old.id)
        result.updated.append(updated)
    for old, item in _pair(orphans, pending):
        pending.remove(item)
        orphans.remove(old)
        result.moved.append(
            ws.edit(
                old.id,
                summary=item.summary,
                details=item.details,
                category=item.category,
                files=ws.absolute(item.files),
                origin=origin,
                record_acted=False,
            )
        )
    for item in pending:
        added = ws.add(
            item.summary,
            details=item.details,
            category=item.category,
            files=ws.absolute(item.files),
            origin=origin,
        )
        if added.created:
            result.added.append(added.memory)
        else:
            result.unchanged += 1
    for old in spare:
        if old.status == "active":
            result.archived.append(ws.archive(old.id, reason=f"rule removed from {path}"))
    return result


def _pair(olds: list[Memory], news: list[Rendered]) -> list[tuple[Memory, Rendered]]:
    """Edited rules: greedy best-first pairs of (old memory, new rule) by text similarity."""
    scored = []
    for old in olds:
        old_body = body_of(old.summary, old.details)
        heading = heading_of(old.details)
        for new in news:
            matcher = difflib.SequenceMatcher(None, old_body, new.body, autojunk=False)
            # Upper bounds first (length, then character counts): most pairs of a large edit are
            # refused without the quadratic ratio.
            if matcher.real_quick_ratio() < MATCH_RATIO or matcher.quick_ratio() < MATCH_RATIO:
                continue
            ratio = matcher.ratio()
            if ratio >= MATCH_RATIO:
                bonus = HEADING_BONUS if heading == new.unit.heading else 0.0
                scored.append((ratio + bonus, old.id, new.unit.line, old, new))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    used_old: set[str] = set()
    used_new: set[int] = set()
    pairs = []
    for _, _, _, old, new in scored:
        if old.id in used_old or id(new) in used_new:
            continue
        used_old.add(old.id)
        used_new.add(id(new))
        pairs.append((old, new))
    return pairs


def _archived_by_sync(ws: Memories, memory_id: str) -> bool:
    """Whether the memory's latest archive was the sync's (its rule was removed), per the event log."""
    for event in ws.store.events(memory_id, limit=1000):
        if event.event == "archived":
            reason = str(event.receipts.get("reason", ""))
            return reason.startswith(("rule removed from ", "rule file "))
        if event.event == "restored":
            return False
    return False


def _last_hashes(ws: Memories) -> dict[str, str] | None:
    """The per-file hashes of the last sync; None (sync every file) when there are none readable."""
    try:
        data = json.loads(ws.store.get_meta(META_FILES) or "null")
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    return {str(k): str(v) for k, v in data.items()}


def resync_if_changed(ws: Memories) -> RulesSync | None:
    """Re-sync when a rule file's bytes changed since the last sync (session start). Cheap otherwise:
    one read of the repo map's file list, a hash of the rule files, one meta lookup.

    Never waits: if another session is syncing right now, this one leaves it to them.
    """
    if ws.root is None or unchanged(ws):
        return None
    root = ws.root
    paths = rule_files(ws, cached=True)
    with _sync_lock(ws, wait=False) as locked:
        if not locked or ws.store.get_meta(META_HASH) == fingerprint(root, paths):
            return None
        report = _sync(ws, root, paths, skip=_last_hashes(ws))
    changed = [f.path for f in report.files + report.removed_files if f.changed]
    if changed or report.errors:
        ws.log(f"rules re-synced: changed {changed}; errors {report.errors}")
    return report
