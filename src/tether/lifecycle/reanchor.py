"""Anchors follow the code: after a sync and a repo-map refresh, every anchor is resolved again (DESIGN §1).

Cheap when nothing moved: the pass remembers, per anchored file, its size and mtime and a digest of the
anchors on it, plus the store's version; with the version unchanged only the files are stat'ed. A file that
changed has its anchors resolved (`tether.anchors.resolve`: where they were, by symbol, by fingerprint near
then anywhere, widened to their definition, else lost), and a note is rewritten only when one of its
anchors actually moved, was renamed, widened, lost or found again: a body edited in place is no churn.

    report = reanchor(ws)          # Reanchored(moved=[(id, old, new)], lost=[(id, anchor)], found=[...])
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from tether.memories import Memories
from tether.model.anchor import Anchor
from tether.model.memory import Memory
from tether.store.base import Event, Query

# Where the pass keeps what it saw last time (the store's `meta`).
_STATE = "anchors.pass"


@dataclass
class Reanchored:
    moved: list[tuple[str, str, str]] = field(default_factory=list)  # (memory id, old spec, new spec)
    lost: list[tuple[str, Anchor]] = field(default_factory=list)
    found: list[tuple[str, Anchor]] = field(default_factory=list)  # lost anchors whose code came back
    checked: int = 0  # anchors resolved (0 when no anchored file changed)

    @property
    def changed(self) -> bool:
        return bool(self.moved or self.lost or self.found)


def reanchor(ws: Memories, *, force: bool = False) -> Reanchored:
    """Resolve the anchors of every project memory whose anchored file changed; rewrite the notes that moved."""
    report = Reanchored()
    if ws.root is None:
        return report
    root = ws.root
    state = _load(ws.store.get_meta(_STATE))
    saved = state.get("files")
    stamps: dict[str, list[object]] = saved if isinstance(saved, dict) else {}
    unchanged = not force and state.get("version") == ws.store.version()
    if unchanged and all(_stamp(root / path) == stamp[:2] for path, stamp in stamps.items()):
        return report
    anchored: dict[str, list[Memory]] = {}
    for memory in ws.find(Query(status=None, scope="project")):
        for path in dict.fromkeys(a.path for a in memory.anchors):
            anchored.setdefault(path, []).append(memory)
    changes: dict[str, dict[Anchor, Anchor]] = {}  # memory id → old anchor → new
    fresh: dict[str, list[object]] = {}
    for path, memories in sorted(anchored.items()):
        stamp = _stamp(root / path)
        digest = _digest(a for m in memories for a in m.anchors if a.path == path)
        fresh[path] = [*stamp, digest]
        if not force and stamps.get(path) == fresh[path]:
            continue
        # A file whose anchors changed: tree-sitter's loader, imported here only.
        from tether.anchors.resolve import FileView, resolve

        view = FileView.read(root, path)
        for memory in memories:
            for anchor in memory.anchors:
                if anchor.path != path:
                    continue
                report.checked += 1
                now = resolve(anchor, view).anchor
                if _moved(anchor, now):
                    changes.setdefault(memory.id, {})[anchor] = now
    for memory_id, moves in changes.items():
        current = ws.store.get(memory_id)
        if current is None:
            continue
        anchors = tuple(moves.get(a, a) for a in current.anchors)
        if anchors == current.anchors:
            continue
        ws.edit(memory_id, anchors=anchors, record_acted=False)
        for old, new in moves.items():
            if new.lost and not old.lost:
                report.lost.append((memory_id, new))
            elif old.lost and not new.lost:
                report.found.append((memory_id, new))
            else:
                report.moved.append((memory_id, _shown(old), _shown(new)))
        ws.store.record(
            [
                Event(
                    memory_id,
                    "reanchored",
                    ws.clock(),
                    receipts={
                        "moves": [[_shown(o), _shown(n), "lost" if n.lost else ""] for o, n in moves.items()]
                    },
                )
            ]
        )
    if changes:  # the notes just written changed the digests: stamp what is on disk now
        for memory in ws.find(Query(status=None, scope="project", ids=tuple(changes))):
            for path in dict.fromkeys(a.path for a in memory.anchors):
                holders = [m for m in anchored.get(path, []) if m.id not in changes] + [memory]
                fresh[path] = [
                    *_stamp(root / path),
                    _digest(a for m in holders for a in m.anchors if a.path == path),
                ]
    ws.store.set_meta(_STATE, json.dumps({"version": ws.store.version(), "files": fresh}, sort_keys=True))
    if report.changed:
        ws.log(
            f"anchors followed the code: {len(report.moved)} moved, {len(report.lost)} lost, {len(report.found)} found"
        )
    return report


def dead_anchors(ws: Memories) -> list[tuple[Memory, list[Anchor]]]:
    """Active project memories with anchors whose code is gone (they are about their files only)."""
    out = []
    for memory in ws.find(Query(scope="project")):
        lost = [a for a in memory.anchors if a.lost]
        if lost:
            out.append((memory, lost))
    return out


def _moved(old: Anchor, new: Anchor) -> bool:
    """A change worth a rewrite: anything but a fingerprint refreshed in place (a body edited under its symbol)."""
    if old.lost != new.lost:
        return True
    if new.lost:
        return False
    if replace(old, fingerprint="") != replace(new, fingerprint=""):
        return True
    return not old.fingerprint and bool(new.fingerprint)


def _shown(anchor: Anchor) -> str:
    lines = f":{anchor.lines[0]}-{anchor.lines[1]}" if anchor.lines else ""
    return f"{anchor.path}{'::' + anchor.symbol if anchor.symbol else ''}{lines}"


def _stamp(path: os.PathLike[str]) -> list[object]:
    try:
        st = os.stat(path)
    except OSError:
        return [0, -1]
    return [st.st_mtime_ns, st.st_size]


def _digest(anchors: Iterable[Anchor]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for anchor in anchors:
        h.update(json.dumps(anchor.to_front(), sort_keys=True).encode())
    return h.hexdigest()


def _load(raw: str | None) -> dict[str, object]:
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
