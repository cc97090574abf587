"""What the UI's seam hands the pages: filters, rows, details, changes, the playground's breakdowns, and
the pure helpers that sort and compare them (no core calls)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tether.model.anchor import Anchor
from tether.model.memory import Memory, to_dict
from tether.notes.pending import Request
from tether.recall.evidence import Candidate
from tether.store.base import Event, Telemetry


@dataclass(frozen=True)
class Filters:
    """What the browse page asks for. Empty strings mean "any"."""

    q: str = ""
    category: str = ""
    scope: str = ""
    origin: str = ""
    state: str = "active"
    file: str = ""
    sort: str = ""
    desc: bool = True
    page: int = 1
    per_page: int = 50


@dataclass(frozen=True)
class Row:
    memory: Memory
    telemetry: Telemetry
    score: float | None = None  # search relevance, when searching

    @property
    def follow_through(self) -> float | None:
        return follow_through(self.telemetry)


@dataclass
class Listing:
    rows: list[Row]
    total: int
    page: int
    pages: int
    sort: str
    notice: str = ""


@dataclass(frozen=True)
class AnchorState:
    """One anchor of a memory: as its note records it, and where it is in its file now."""

    anchor: Anchor  # as the note records it
    now: Anchor | None  # resolved against the file as it is now; None when there is no work tree to read
    how: str = ""  # `tether.anchors.resolve.Resolution.how`: same, symbol, moved, renamed, widened, lost ...

    @property
    def lost(self) -> bool:
        return (self.now or self.anchor).lost


@dataclass(frozen=True)
class Waiting:
    """A request in the pending review queue and the memory it is about (a pin's; an add's, to be written)."""

    request: Request
    memory: Memory | None


@dataclass
class Detail:
    memory: Memory
    telemetry: Telemetry
    note_path: str | None
    files: list[tuple[str, bool]]  # (path, exists)
    links_out: list[Memory]
    links_in: list[Memory]
    unresolved: list[str]
    chain: list[tuple[str, Memory]]  # ("replaced by" | "replaces", memory)
    events: list[Event]
    link_targets: dict[str, str]  # wikilink target text → memory id
    anchors: list[AnchorState] = field(default_factory=list)


@dataclass
class Change:
    """What an action did: the memory after it and each field that changed (name, before, after)."""

    verb: str
    memory: Memory
    diff: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class Explained:
    memory: Memory
    injected: bool
    rank: int | None
    score: float
    receipt: str
    rank_credit: dict[str, float]
    magnitudes: dict[str, float]
    multiplier: float
    evidence: dict[str, Any]

    @classmethod
    def of(cls, c: Candidate, rank: int | None, injected: bool) -> Explained:
        """One candidate's breakdown as `Recaller.explain` gave it."""
        from tether.recall.evidence import receipt

        assert c.memory is not None
        parts = c.breakdown()
        return cls(
            memory=c.memory,
            injected=injected,
            rank=rank,
            score=c.score,
            receipt=receipt(c),
            rank_credit=parts["rank_credit"],
            magnitudes=parts["magnitudes"],
            multiplier=c.multiplier,
            evidence=parts["evidence"],
        )


@dataclass
class Playground:
    query: str  # the prompt as recall sanitized it
    files: list[str]
    block: str  # what the prompt hook would inject ("" when nothing)
    explained: list[Explained]
    candidates: int
    surfaced_before: int
    surfaced_after: int
    # Asked as a session's first prompt: the work in progress, `repo.worktree.in_progress` (None when not asked, or
    # files were given).
    work: list[str] | None = None


def follow_through(tel: Telemetry) -> float | None:
    """Acted over surfaced, capped at 1 (an edit is an action without a showing); None when never shown."""
    if not tel.surfaced:
        return None
    return min(1.0, tel.acted / tel.surfaced)


def sort_rows(rows: list[Row], sort: str, desc: bool) -> list[Row]:
    def missing_last(value: float | None) -> tuple[bool, float]:
        # None sorts after every value in either direction.
        return (value is None, -(value or 0.0) if desc else (value or 0.0))

    if sort == "relevance":
        return sorted(rows, key=lambda r: missing_last(r.score))
    if sort == "surfaced":
        return sorted(rows, key=lambda r: (missing_last(r.telemetry.surfaced), r.memory.id))
    if sort == "acted":
        return sorted(rows, key=lambda r: (missing_last(r.telemetry.acted), r.memory.id))
    if sort == "follow":
        return sorted(rows, key=lambda r: (missing_last(r.follow_through), r.memory.id))
    if sort == "updated":
        return sorted(rows, key=lambda r: (r.memory.updated, r.memory.id), reverse=desc)
    if sort == "age":  # oldest first when descending: "age" grows into the past
        return sorted(rows, key=lambda r: (r.memory.created, r.memory.id), reverse=not desc)
    return sorted(rows, key=lambda r: (r.memory.created, r.memory.id), reverse=desc)


def origin_matches(origin: str, wanted: str) -> bool:
    """`Query.origin`'s rule: exact, or a prefix ending in ':' (`rules:` is every rule file)."""
    return origin.startswith(wanted) if wanted.endswith(":") else origin == wanted


def diff(before: Memory, after: Memory) -> list[tuple[str, str, str]]:
    old, new = to_dict(before), to_dict(after)
    out = []
    for key in ("summary", "details", "category", "files", "priority", "pinned", "status", "supersedes"):
        if old[key] != new[key]:
            out.append((key, shown(old[key]), shown(new[key])))
    if before.anchors != after.anchors:
        specs = [shown([a.spec() for a in m.anchors]) for m in (before, after)]
        out.append(("anchors", specs[0], specs[1]))
    return out


def shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(value) or "(none)"
    if value is None or value == "":
        return "(none)"
    return str(value).lower() if isinstance(value, bool) else str(value)
