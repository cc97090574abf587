"""A file's gotchas as the hooks list them: after a read, and before an edit (DESIGN §5).

Each listing is in the order recall ranks the file's gotchas for the session's latest prompt (`ranked_gotchas`),
grouped by where they are anchored against the lines read or the place edited.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tether.model.memory import Memory, origin_tag
from tether.store.base import Query
from tether.workspace import Workspace

if TYPE_CHECKING:
    from tether.anchors.locations import Location
    from tether.anchors.resolve import FileView
    from tether.model.anchor import Anchor

# A gotcha anchored to lines this close to an edit (twice as far below it, as recall counts) is about the
# place being edited: listed first, and what deny-once pauses for; one anchored to a symbol is when the edit
# lands inside it. The others are elsewhere in the file.
AT_LOCATION_LINES = 15


def gotchas_for(ws: Workspace, path: str) -> list[Memory]:
    """Active gotchas naming `path` or a directory containing it, pinned and high priority first."""
    from tether.recall.channels import refs_naming

    ids = {mid for mids in ws.store.owners(refs_naming(path)).values() for mid in mids}
    if not ids:
        return []
    found = ws.find(Query(ids=tuple(sorted(ids)), category="gotcha"))
    return sorted(found, key=lambda m: (not m.pinned, m.priority != "high", m.created))


@dataclass
class Gotchas:
    """A file's gotchas for one edit: at the edited place (with where), about the whole file, elsewhere in it."""

    here: list[tuple[Memory, str]] = field(
        default_factory=list
    )  # (memory, its anchor's label), nearest first
    file: list[Memory] = field(default_factory=list)
    elsewhere: list[Memory] = field(default_factory=list)


def ranked_gotchas(ws: Workspace, path: str, query: str, places: Sequence[Location] = ()) -> list[Memory]:
    """The gotchas of `path`, pinned and high priority first, each group in the order recall ranks them for
    the session's latest prompt (`query`), the file and the edit's `places` (`Recaller.order`): the prompt,
    the code at their anchors, the file's recent changes and past follow-ups decide, not their age. A ranking
    that fails (a damaged index, a broken embedder) leaves them in `gotchas_for`'s order: the hint still comes."""
    found = gotchas_for(ws, path)
    if len(found) < 2:
        return found
    try:
        ranked = ws.recaller().order(query, [path], [m.id for m in found], places)
    except Exception:
        ws.log(f"ranking the gotchas of {path} failed; listed them by age", exc=True)
        return found
    position = {mid: index for index, mid in enumerate(ranked)}
    found.sort(key=lambda m: (not m.pinned, m.priority != "high", position[m.id]))
    return found


def gotchas_at(ws: Workspace, path: str, places: list[Location], query: str = "") -> Gotchas:
    """The gotchas of `path` sorted by where `places` (edits in that file) land: anchored at or near them
    first, nearest first; then those about the whole file (no anchor on it, or a lost one); then the ones
    anchored elsewhere in the file. Without a place every gotcha is about the whole file. Within each group
    (and among equally near ones) as `ranked_gotchas` orders them for `query`."""
    from tether.anchors.locations import gap
    from tether.anchors.resolve import FileView

    out = Gotchas()
    found = ranked_gotchas(ws, path, query, [p for p in places if p.path == path])
    spans = [p.lines for p in places if p.path == path and p.lines is not None]
    if not spans or ws.root is None:
        out.file = found
        return out
    view = FileView.read(ws.root, path)
    near: list[tuple[float, Memory, str]] = []
    for memory in found:
        anchors = anchors_now(memory, view)
        if not anchors:
            out.file.append(memory)
            continue
        best: tuple[float, str] | None = None
        for anchor in anchors:
            assert anchor.lines is not None
            for span in spans:
                distance, side = gap(anchor.lines, span)
                far = distance * (2.0 if side == "below" else 1.0)
                limit = 0 if anchor.symbol else AT_LOCATION_LINES
                if far <= limit and (best is None or far < best[0]):
                    best = (far, anchor.label())
        if best is None:
            out.elsewhere.append(memory)
        else:
            near.append((best[0], memory, best[1]))
    near.sort(key=lambda item: item[0])  # stable: equally near ones keep the ranked order
    out.here = [(memory, label) for _, memory, label in near]
    return out


def gotchas_read(ws: Workspace, path: str, query: str, lines: tuple[int, int] | None = None) -> Gotchas:
    """The gotchas of `path` for a read of it, in `ranked_gotchas`' order for the session's latest prompt
    (`query`): with the lines read (`lines`), those anchored inside them are `here` (with where), those
    anchored elsewhere in the file `elsewhere`; the rest, and every gotcha of a whole-file read, are about the
    whole `file`."""
    from tether.anchors.locations import gap
    from tether.anchors.resolve import FileView

    found = ranked_gotchas(ws, path, query)
    out = Gotchas()
    if lines is None or ws.root is None:
        out.file = found
        return out
    view = FileView.read(ws.root, path)
    for memory in found:
        anchors = anchors_now(memory, view)
        inside = [a for a in anchors if a.lines and gap(a.lines, lines)[0] == 0]
        if not anchors:
            out.file.append(memory)
        elif inside:
            out.here.append((memory, inside[0].label()))
        else:
            out.elsewhere.append(memory)
    return out


def anchors_now(memory: Memory, view: FileView) -> list[Anchor]:
    """`memory`'s anchors on the file in `view`, resolved against it as it is now, those with lines: an anchor
    stored as lost, or lost now, says nothing of where the gotcha is."""
    found = [view.resolved(a).anchor for a in memory.anchors if a.path == view.path and not a.lost]
    return [a for a in found if not a.lost and a.lines is not None]


def gotcha_line(memory: Memory, where: str = "") -> str:
    """`· ★ gotcha on WHERE: [agent] "summary" [id] — review before editing` (the origin as in
    `memory_line`; `on WHERE` for a memory anchored at the edited place)."""
    star = "★ " if memory.pinned or memory.priority == "high" else ""
    on = f"on {where}: " if where else ""
    return f'· {star}gotcha {on}{origin_tag(memory)}"{memory.summary}" [{memory.id}] — review before editing'


def more_line(count: int, path: str) -> str:
    """The line that counts the gotchas of `path` a hint leaves out, and says where they are."""
    return f"· (+{count} more gotcha{'s' if count > 1 else ''} on {path}: `tether list --file {path} --category gotcha`)"
