"""What recall knows about one candidate memory: typed evidence, rank credit and magnitudes, and the receipt.

Each channel (`tether.recall.channels`) fills in what it found; `tether.recall.recaller` adds feedback,
recency and priority and ranks. The receipt (`via file, co-change(src/auth/routes.py), sem 0.59`) and
`signals()` are what the agent and the person see; `breakdown()` is `tether explain`'s full view.

>>> c = Candidate("0a1b2c3d")
>>> c.evidence.file = "src/app.py"
>>> c.has_evidence, receipt(c)
(True, 'file')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

from tether.model.memory import Memory, origin_tag
from tether.recall import scoring

# The ranked lists fused by reciprocal rank ("trigram" is the text channel's second index).
Channel = Literal["file", "path", "cochange", "text", "trigram", "semantic", "pinned", "anchor", "code"]
# The channels a caller can switch on and off (`text` includes its trigram index; `anchor` needs locations;
# `code` reads the touched files).
CHANNELS = ("file", "path", "cochange", "text", "semantic", "pinned", "anchor", "code")


@dataclass
class Evidence:
    """What fired for a memory. None (or "") means that signal did not fire or was not computed."""

    file: str | None = None  # the file or directory ref that names a touched file
    names: str = ""  # a touched file the memory's text names outright (`render.tsx`)
    paths: bool | None = None  # a memory tied to no file whose text holds the touched paths' words
    cochange: str | None = None  # the neighbour (changes with a touched file) this memory is on
    text: float | None = None  # word-index strength; 0.0 when only the trigram index matched
    text_rank: int | None = None  # rank among the word-index matches
    text_best: float | None = None  # the strongest word-index match of this query
    text_match: bool | None = None  # the text covers enough of the query to count as evidence
    coverage: float | None = None  # share of the query's terms the memory holds
    sem: float | None = None  # cosine with the query
    sem_gate: float | None = None  # the embedder's evidence gate for `sem` (`scoring.sem_gate`)
    pinned: bool | None = None
    anchor: str = ""  # the memory's anchor at or near the edit's location (`charge_card()`, `line 120`)
    anchor_distance: int | None = None  # lines from that anchor to the edit (0: on it)
    ident: str = ""  # an identifier the edit writes, or the definition it lands in, that the memory names
    ident_defined: bool | None = None  # ... and it is the definition the edit lands in (evidence on its own)
    code: tuple[str, ...] = ()  # identifiers the touched files' code uses that the memory names
    beside: str = ""  # the first pick it is anchored beside, in the same file (`places.beside_first`)
    beside_distance: int | None = None  # lines from its anchor to that first pick's

    @property
    def sem_strong(self) -> bool:
        """The cosine is past its embedder's gate: similar in meaning, not merely on a shared topic."""
        gate = scoring.SEM_GATE if self.sem_gate is None else self.sem_gate
        return self.sem is not None and self.sem >= gate


@dataclass
class Magnitudes:
    """Bounded score terms added to the rank credit (`tether.recall.scoring` gives each its bound)."""

    file: float | None = None
    blast: float | None = None
    names: float | None = None
    cochange: float | None = None
    path: float | None = None
    text: float | None = None
    sem: float | None = None
    recency: float | None = None
    feedback: float | None = None
    anchor: float | None = None
    ident: float | None = None
    edit: float | None = None  # the edit's words in the memory (`places.anchor_channel`)
    code: float | None = None
    place: float | None = None  # the query in the code around the memory's anchor (`places.place_channel`)
    recent: float | None = None  # its anchor beside the file's recent changes (`places.recent_channel`)
    beside: float | None = None  # its anchor beside the first pick's (`places.beside_first`)

    def total(self) -> float:
        values: tuple[float | None, ...] = magnitude_values(self)
        return sum(value for value in values if value is not None)


# Every magnitude, in field order (the order they are summed in), read at once.
magnitude_values = attrgetter(*(f.name for f in fields(Magnitudes)))


# How fields are named where people and agents see them (`--json`, `explain`, receipts): older names kept.
_SHOWN = {"cochange": "co-change"}


@dataclass
class Candidate:
    memory_id: str
    rrf: dict[Channel, float] = field(default_factory=dict)  # channel → rank credit
    magnitude: Magnitudes = field(default_factory=Magnitudes)
    evidence: Evidence = field(default_factory=Evidence)
    memory: Memory | None = None
    score: float = 0.0
    multiplier: float = 1.0

    @property
    def relevant(self) -> bool:
        """Evidence that the memory is about this prompt or these files (being pinned is not)."""
        e = self.evidence
        return bool(
            e.file
            or e.names
            or e.paths
            or e.cochange
            or e.text_match
            or e.sem_strong
            or e.anchor
            or (e.ident and e.ident_defined)
            or len(e.code) >= scoring.CODE_EVIDENCE_NAMES
        )

    @property
    def has_evidence(self) -> bool:
        return self.relevant or bool(self.evidence.pinned)

    def breakdown(self) -> dict[str, Any]:
        """Rank credit, magnitudes and evidence as they fired, for `tether explain`."""
        return {
            "rank_credit": {k: round(v, 4) for k, v in self.rrf.items()},
            "magnitudes": _shown(self.magnitude, rounded=True),
            "multiplier": self.multiplier,
            "evidence": _shown(self.evidence, rounded=True),
        }


def _shown(data: Evidence | Magnitudes, *, rounded: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(data):
        value = getattr(data, f.name)
        if value is None or value == "" or value == ():
            continue
        if rounded and isinstance(value, float):
            value = round(value, 4)
        out[_SHOWN.get(f.name, f.name)] = value
    return out


# How sure a result is: `strong` passed the injection's evidence gate (a file or co-change hit, a real text
# match, a cosine above its embedder's gate); `weak` was only ranked near (search returns those too).
Confidence = Literal["strong", "weak"]


@dataclass
class Recalled:
    """One memory returned by recall or search, with its score, the signals that fired and its confidence."""

    memory: Memory
    score: float
    signals: dict[str, float]
    receipt: str
    rank: int
    confidence: Confidence = "strong"

    def line(self) -> str:
        """`★ [gotcha] [agent] 0a1b2c3d — summary (via file)`: the one format of an injected memory line."""
        return memory_line(self.memory, self.receipt)

    def to_json(self) -> dict[str, Any]:
        m = self.memory
        return {
            "id": m.id,
            "summary": m.summary,
            "category": m.category,
            "scope": m.scope,
            "files": list(m.files),
            "pinned": m.pinned,
            "priority": m.priority,
            "origin": m.origin,
            "score": round(self.score, 4),
            "signals": {k: round(v, 4) for k, v in self.signals.items()},
            "receipt": self.receipt,
            "rank": self.rank,
            "confidence": self.confidence,
            "has_details": bool(m.details),
        }

    @classmethod
    def of(cls, c: Candidate, rank: int) -> Recalled:
        assert c.memory is not None
        return cls(c.memory, c.score, signals(c), receipt(c), rank, "strong" if c.relevant else "weak")


@dataclass
class RecallResult:
    query: str
    files: list[str]
    memories: list[Recalled]
    candidates: int

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "files": self.files,
            "candidates": self.candidates,
            "memories": [r.to_json() for r in self.memories],
        }


def memory_line(memory: Memory, receipt: str) -> str:
    """One injected line: ★ for pinned or high priority, the category, who it comes from, the id, the
    summary and why it surfaced (`tether.model.memory.origin_tag`)."""
    star = "★ " if memory.pinned or memory.priority == "high" else ""
    return f"{star}[{memory.category}] {origin_tag(memory)}{memory.id} — {memory.summary} (via {receipt})"


def signals(c: Candidate) -> dict[str, float]:
    """Signal name → value, for the signals that fired."""
    e, m = c.evidence, c.magnitude
    out: dict[str, float] = {}
    if e.file is not None:
        out["file"] = m.file or 0.0
    if e.names:
        out["names"] = m.names or 0.0
    if e.cochange is not None:
        out["co-change"] = m.cochange or 0.0
    if e.text is not None:
        out["text"] = m.text or 0.0
    if e.sem is not None:
        out["sem"] = e.sem
    if e.pinned:
        out["pinned"] = 1.0
    if e.anchor:
        out["anchor"] = m.anchor or 0.0
    if e.ident:
        out["ident"] = m.ident or 0.0
    if m.edit:
        out["edit"] = m.edit
    if m.place:
        out["place"] = m.place
    if m.recent:
        out["recent"] = m.recent
    if m.beside:
        out["beside"] = m.beside
    if e.code:
        out["code"] = m.code or 0.0
    if m.blast:
        out["blast"] = m.blast
    if m.feedback:
        out["feedback"] = m.feedback
    if c.multiplier != 1.0:
        out["priority"] = c.multiplier
    return out


def receipt(c: Candidate) -> str:
    """`file, co-change(auth/routes.py), text 0.62, sem 0.59`: why this memory surfaced."""
    e = c.evidence
    parts: list[str] = []
    if e.pinned:
        parts.append("pinned")
    if e.file is not None:
        parts.append(f"dir({e.file})" if e.file.endswith("/") else "file")
    if e.anchor:
        parts.append(
            f"at {e.anchor}" if not e.anchor_distance else f"near {e.anchor} ({e.anchor_distance} lines)"
        )
    if e.ident:
        parts.append(f"names({e.ident})")
    if e.names:
        parts.append(f"names({e.names.rsplit('/', 1)[-1]})")
    if e.paths:
        parts.append("paths")
    if e.code:
        parts.append(f"code({', '.join(e.code[:2])}{', …' if len(e.code) > 2 else ''})")
    if e.cochange is not None:
        parts.append(f"co-change({Path(e.cochange).as_posix()})")
    if e.beside and e.beside_distance is not None and e.beside_distance <= scoring.ANCHOR_NEAR:
        parts.append(f"beside {e.beside}" + (f" ({e.beside_distance} lines)" if e.beside_distance else ""))
    if e.text_match:
        parts.append(f"text {e.coverage or 0.0:.2f}")
    if e.sem_strong:
        parts.append(f"sem {e.sem:.2f}")
    if c.memory is not None and c.memory.priority == "high":
        parts.append("high")
    if not parts:  # nothing passed a gate (a weak search result): what ranked it near
        if e.text is not None:
            parts.append(f"text {e.coverage or 0.0:.2f}")
        if e.sem is not None:
            parts.append(f"sem {e.sem:.2f}")
    return ", ".join(parts) or "rank only"


def covers(c: Candidate, found: set[str], words: list[str], parts: list[list[str]]) -> bool:
    """Whether `c`'s memory, holding the query's terms `found` (as the start of its words, `deploy` finds
    `deployment`, or by stem, `retries` finds `retry`), answers enough of the query `words`, or of one of its
    clauses `parts`, to be a real text match; sets its coverage and text magnitude on the way."""
    coverage = len(found) / len(words) if words else 0.0
    e = c.evidence
    e.coverage = coverage
    c.magnitude.text = scoring.text_magnitude(e.text or 0.0, e.text_best or 0.0, coverage)
    needed = 1 if len(words) <= 2 else scoring.TEXT_EVIDENCE_MIN_TERMS
    if len(found) >= needed and coverage >= scoring.TEXT_EVIDENCE_COVERAGE:
        return True
    # The strongest few full-text matches count when they share several of the query's terms, even if a long
    # query's other terms are about something else.
    rank = e.text_rank if e.text_rank is not None else 10**6
    if len(found) >= needed and rank <= scoring.TEXT_EVIDENCE_TOP_RANK:
        return True
    # A compound question ("which port, which host, what command?") spreads its terms over several answers: a
    # memory covering most of one multi-term clause is a real match too.
    return any(
        len(part) >= 2 and len(found.intersection(part)) / len(part) >= scoring.CLAUSE_EVIDENCE_COVERAGE
        for part in parts
    )


def names_file(memory: Memory, touched: Sequence[str], text: str | None = None) -> str:
    """The first touched file whose name (with its extension) or path the memory's text mentions (`text`:
    its summary and details, when the caller has them)."""
    if text is None:
        text = f"{memory.summary}\n{memory.details}"
    for path in touched:
        name = path.rsplit("/", 1)[-1]
        if "." in name and len(name) > 4 and name in text:
            return path
    return ""
