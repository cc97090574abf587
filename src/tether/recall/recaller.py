"""Recall (DESIGN §4): rank memories by what the agent touches and asks, with a receipt for each.

Channels (file affinity, co-change, full text, semantic, pinned) each give a ranked list; reciprocal-rank
fusion adds their rank credit, bounded magnitudes add how strong each hit was, and feedback, recency,
blast radius and priority adjust. The constants live in `tether.recall.scoring`.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from operator import mul
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import ValidationError
from tether.model.memory import Memory, normalize_path
from tether.model.prompt import clauses, path_terms, sanitize
from tether.model.text import terms, terms_in
from tether.recall import scoring
from tether.store.base import Event, Query, Telemetry

if TYPE_CHECKING:
    from tether.repo.map import RepoMap
    from tether.workspace import Workspace

CHANNELS = ("file", "path", "cochange", "text", "semantic", "pinned")


@dataclass
class Candidate:
    memory_id: str
    rrf: dict[str, float] = field(default_factory=dict)  # channel → rank credit
    magnitude: dict[str, float] = field(default_factory=dict)  # signal → bounded magnitude
    evidence: dict[str, Any] = field(
        default_factory=dict
    )  # what fired: file path, co-change path, cosine, ...
    memory: Memory | None = None
    score: float = 0.0
    multiplier: float = 1.0

    @property
    def has_evidence(self) -> bool:
        return bool(
            self.evidence.get("file")
            or self.evidence.get("names")
            or self.evidence.get("co-change")
            or self.evidence.get("pinned")
            or self.evidence.get("text_match")
            or self.evidence.get("sem", 0.0) >= scoring.SEM_GATE
        )


@dataclass
class Recalled:
    """One memory returned by recall, with its score and the signals that fired."""

    memory: Memory
    score: float
    signals: dict[str, float]
    receipt: str
    rank: int

    def line(self) -> str:
        star = "★ " if self.memory.pinned or self.memory.priority == "high" else ""
        return f"{star}[{self.memory.category}] {self.memory.id} — {self.memory.summary} (via {self.receipt})"

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
            "score": round(self.score, 4),
            "signals": {k: round(v, 4) for k, v in self.signals.items()},
            "receipt": self.receipt,
            "rank": self.rank,
            "has_details": bool(m.details),
        }


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


class Recaller:
    """Recall over one workspace. Cheap to create; one per request is fine."""

    def __init__(self, workspace: Workspace, repo: RepoMap | None = None) -> None:
        self.ws = workspace
        self.store = workspace.store
        self._repo = repo

    @property
    def repo(self) -> RepoMap | None:
        if self._repo is None and self.ws.root is not None:
            from tether.repo.map import RepoMap

            self._repo = RepoMap.open(self.ws.root, self.store.conn)
        return self._repo

    # -- public -----------------------------------------------------------------------------------

    def recall(
        self,
        prompt: str = "",
        files: Sequence[str] = (),
        *,
        session: str | None = None,
        turn: int | None = None,
        limit: int | None = None,
        budget: int | None = None,
        record: bool = True,
        channels: Collection[str] = CHANNELS,
        require_evidence: bool = True,
    ) -> RecallResult:
        """Rank memories for a prompt and the files being touched, filter, budget, and record surfacings.

        >>> Recaller(ws).recall("why does upload retry?", ["src/upload.py"]).memories  # doctest: +SKIP
        """
        unknown = set(channels) - set(CHANNELS)
        if unknown:
            raise ValidationError(
                f"unknown channel(s) {', '.join(sorted(unknown))}: use {', '.join(CHANNELS)}"
            )
        limit = int(self.ws.config["recall.limit"]) if limit is None else limit
        budget = int(self.ws.config["recall.budget"]) if budget is None else budget
        query = sanitize(prompt or "")
        touched = self._normalize(files)
        ranked = self._rank(query, touched, session, channels)
        quiet: set[str] = set()
        if session and turn is not None:
            cooldown = int(self.ws.config["recall.cooldown_turns"])
            quiet = self.store.surfaced_in_session(session, turn - cooldown)
        chosen: list[Recalled] = []
        used = 0
        for candidate in ranked:
            if len(chosen) >= limit:
                break
            if (require_evidence and not candidate.has_evidence) or candidate.memory_id in quiet:
                continue
            recalled = self._recalled(candidate, len(chosen) + 1)
            cost = len(recalled.line()) + 1
            if used + cost > budget and not candidate.memory.pinned:  # type: ignore[union-attr]
                continue
            used += cost
            chosen.append(recalled)
        if record and chosen:
            now = self.ws.clock()
            self.store.record(
                Event(r.memory.id, "surfaced", now, session, turn, {"receipt": r.receipt, "score": r.score})
                for r in chosen
            )
        return RecallResult(query, touched, chosen, len(ranked))

    def search(
        self, query: str, *, files: Sequence[str] = (), limit: int = 10, category: str | None = None
    ) -> list[Recalled]:
        """Text-first search with the same fusion; pinned-only matches are left out. Nothing is recorded."""
        ranked = self._rank(sanitize(query) or query, self._normalize(files), None, CHANNELS)
        out: list[Recalled] = []
        for candidate in ranked:
            memory = candidate.memory
            assert memory is not None
            if category and memory.category != category:
                continue
            evidence = dict(candidate.evidence)
            evidence.pop("pinned", None)
            probe = Candidate(candidate.memory_id, evidence=evidence)
            if not probe.has_evidence:
                continue
            out.append(self._recalled(candidate, len(out) + 1))
            if len(out) >= limit:
                break
        return out

    def explain(
        self, memory_id: str, prompt: str = "", files: Sequence[str] = (), session: str | None = None
    ) -> tuple[Candidate, int | None]:
        """The full score breakdown of one memory for this context, and its rank among those injectable."""
        memory = self.ws.get(memory_id)
        ranked = self._rank(
            sanitize(prompt or ""), self._normalize(files), session, CHANNELS, include=memory.id
        )
        rank = 0
        for candidate in ranked:
            if candidate.has_evidence:
                rank += 1
            if candidate.memory_id == memory.id:
                return candidate, (rank if candidate.has_evidence else None)
        return Candidate(memory.id, memory=memory), None

    # -- ranking ----------------------------------------------------------------------------------

    def _normalize(self, files: Sequence[str]) -> list[str]:
        out: dict[str, None] = {}
        for path in files:
            try:
                out.setdefault(normalize_path(path, self.ws.root, self.ws.cwd).rstrip("/"), None)
            except ValidationError:
                continue  # a file outside the repository says nothing about its memories
        return list(out)

    def _rank(
        self,
        query: str,
        touched: list[str],
        session: str | None,
        channels: Collection[str],
        include: str | None = None,
    ) -> list[Candidate]:
        pool: dict[str, Candidate] = {}

        def candidate(mid: str) -> Candidate:
            return pool.setdefault(mid, Candidate(mid))

        words = terms(query)
        parts = clauses(query)
        touched_terms = path_terms(touched) if touched else []
        if "file" in channels and touched:
            self._file_channel(touched, candidate)
        if "path" in channels and touched:
            self._path_channel(touched_terms, candidate)
        if "cochange" in channels and touched:
            self._cochange_channel(touched, pool, candidate)
        if "text" in channels and words:
            self._text_channel(words, candidate)
        if "semantic" in channels and query.strip() and self.ws.semantic_available:
            sem_query = query
            if scoring.SEMANTIC_WITH_PATH_TERMS and touched:
                sem_query = f"{query} {' '.join(touched_terms)}"
            self._semantic_channel(sem_query, candidate)
        if "pinned" in channels:
            for rank, memory in enumerate(
                sorted(self.store.find(Query(pinned=True)), key=lambda m: m.updated, reverse=True), 1
            ):
                c = candidate(memory.id)
                c.rrf["pinned"] = scoring.rrf(rank)
                c.evidence["pinned"] = True
        if include:
            candidate(include)
        if not pool:
            return []
        memories = self.store.memories(pool)
        telemetry = self.store.telemetry(list(memories))
        now = self.ws.clock()
        ranked: list[Candidate] = []
        by_hash: dict[str, Candidate] = {}
        for mid, c in pool.items():
            found = memories.get(mid)
            if found is None:
                continue
            memory = found
            if memory.status != "active" and mid != include:
                continue
            if memory.scope == "session" and memory.session != session:
                continue
            c.memory = memory
            if "text" in c.evidence:
                c.evidence["text_match"] = self._covers(memory, words, parts, c)
            if "path" in c.rrf:
                named = names_file(memory, touched)
                if named:
                    c.evidence["names"] = named
                    c.magnitude["names"] = scoring.NAMED_FILE_HIT
            self._adjust(c, telemetry.get(mid, Telemetry()), now)
            # The same knowledge in project and user scope takes one slot; project is the narrower claim.
            twin = by_hash.get(memory.content_hash)
            if twin is not None and twin.memory is not None:
                if twin.memory.scope == "project" or memory.scope != "project":
                    continue
                ranked.remove(twin)
            by_hash[memory.content_hash] = c
            ranked.append(c)
        ranked.sort(key=lambda c: (not (c.memory and c.memory.pinned), -c.score, c.memory_id))
        return ranked

    def _file_channel(self, touched: list[str], candidate: Any) -> None:
        refs: dict[str, str] = {}  # ref path → touched file it matches
        for path in touched:
            for ref in refs_naming(path):
                refs.setdefault(ref, path)
        owners = self.store.owners(list(refs))
        hits: dict[str, tuple[float, str]] = {}
        for ref, mids in owners.items():
            if not self._exists(ref):
                continue  # a dead reference loses the file signal at once
            magnitude = scoring.file_hit(len(mids), is_dir=ref.endswith("/"))
            for mid in mids:
                if mid not in hits or hits[mid][0] < magnitude:
                    hits[mid] = (magnitude, ref)
        repo = self.repo
        # One fan-in lookup per touched file, however many memories name it.
        blast = {path: scoring.blast(repo.fan_in(path)) for path in set(refs.values())} if repo else {}
        ranks = competition_ranks({mid: magnitude for mid, (magnitude, _) in hits.items()})
        for mid, (magnitude, ref) in hits.items():
            c = candidate(mid)
            c.rrf["file"] = scoring.rrf(ranks[mid])
            c.magnitude["file"] = magnitude
            c.evidence["file"] = ref
            if blast:
                c.magnitude["blast"] = blast[refs[ref]]

    def _cochange_channel(self, touched: list[str], pool: dict[str, Candidate], candidate: Any) -> None:
        repo = self.repo
        if repo is None:
            return
        neighbours: dict[str, tuple[str, float]] = {}
        for path in touched:
            for other, confidence in repo.neighbours(path, scoring.COCHANGE_PER_FILE):
                if (
                    other not in touched
                    and other not in neighbours
                    and len(neighbours) < scoring.COCHANGE_TOTAL
                ):
                    neighbours[other] = (path, confidence)
        if not neighbours:
            return
        owners = self.store.owners(list(neighbours))
        for path, mids in owners.items():
            for mid in mids:
                existing = pool.get(mid)
                if existing is not None and "file" in existing.evidence:
                    continue
                c = candidate(mid)
                c.rrf["cochange"] = scoring.rrf(scoring.COCHANGE_RANK)
                c.magnitude["co-change"] = scoring.COCHANGE_HIT
                c.evidence["co-change"] = path

    def _path_channel(self, touched_terms: list[str], candidate: Any) -> None:
        """Memories whose text mentions the touched files' names and directories ("when editing render.tsx")."""
        hits = [h for h in self.store.text_search(touched_terms, limit=50, trigram=False) if h.words]
        if not hits:
            return
        best = max(-h.words for h in hits)
        ranks = competition_ranks({h.id: -h.words for h in hits})
        for hit in hits:
            c = candidate(hit.id)
            c.rrf["path"] = scoring.rrf(ranks[hit.id])
            if scoring.PATH_TEXT_MAX:
                c.magnitude["path"] = scoring.PATH_TEXT_MAX * min(1.0, -hit.words / best)

    def _text_channel(self, words: list[str], candidate: Any) -> None:
        hits = self.store.text_search(words, limit=50)
        if not hits:
            return
        best = max(-h.words for h in hits) if hits else 0.0
        for rank, hit in enumerate(sorted((h for h in hits if h.words), key=lambda h: h.words), 1):
            c = candidate(hit.id)
            c.rrf["text"] = scoring.rrf(rank)
            c.evidence["text"] = -hit.words
            c.evidence["text_rank"] = rank
            c.evidence["text_best"] = best
        for rank, hit in enumerate(sorted((h for h in hits if h.trigram), key=lambda h: h.trigram), 1):
            c = candidate(hit.id)
            c.rrf["trigram"] = scoring.rrf(rank)
            c.evidence.setdefault("text", 0.0)
            c.evidence["text_best"] = best

    def _semantic_channel(self, query: str, candidate: Any) -> None:
        ids, blob, dim = self.store.vectors(self.ws.embedder.id)
        if not ids:
            return
        query_vector = self.ws.embedder.embed([query])[0]
        self.ws.semantic_queries += 1
        # From its second query on, a process is warm (the MCP server, a library user): numpy pays off.
        warm = self.ws.semantic_queries > 1
        top = top_cosines(blob, len(ids), dim, query_vector, scoring.SEM_CANDIDATES, warm=warm)
        for rank, (index, cosine) in enumerate(top, 1):
            if cosine <= 0.05:
                break  # orthogonal: not even a shared topic
            c = candidate(ids[index])
            c.rrf["semantic"] = scoring.rrf(rank)
            c.evidence["sem"] = cosine
            c.magnitude["sem"] = scoring.sem_magnitude(cosine)

    def _covers(self, memory: Memory, words: list[str], parts: list[list[str]], c: Candidate) -> bool:
        """Whether the memory answers enough of the query, or of one of its clauses, to be a real match.

        Terms match by prefix of the memory's words, so `deploy` finds `deploys` and `deployment`."""
        found = terms_in(f"{memory.summary}\n{memory.details}\n{' '.join(memory.files)}", words)
        coverage = len(found) / len(words) if words else 0.0
        c.evidence["coverage"] = coverage
        c.magnitude["text"] = scoring.text_magnitude(
            float(c.evidence.get("text", 0.0)), float(c.evidence.get("text_best", 0.0)), coverage
        )
        needed = 1 if len(words) <= 2 else scoring.TEXT_EVIDENCE_MIN_TERMS
        if len(found) >= needed and coverage >= scoring.TEXT_EVIDENCE_COVERAGE:
            return True
        # The strongest few full-text matches count when they share several of the query's terms, even
        # if a long query's other terms are about something else.
        if len(found) >= needed and int(c.evidence.get("text_rank", 10**6)) <= scoring.TEXT_EVIDENCE_TOP_RANK:
            return True
        # A compound question ("which port, which host, what command?") spreads its terms over several
        # answers: a memory covering most of one multi-term clause is a real match too.
        return any(
            len(part) >= 2 and len(found.intersection(part)) / len(part) >= scoring.CLAUSE_EVIDENCE_COVERAGE
            for part in parts
        )

    def _adjust(self, c: Candidate, telemetry: Telemetry, now: Any) -> None:
        memory = c.memory
        assert memory is not None
        anchor = telemetry.last_acted or memory.created
        c.magnitude["recency"] = scoring.recency(anchor, now)
        fb = scoring.feedback(telemetry.surfaced, telemetry.acted)
        if fb:
            c.magnitude["feedback"] = fb
        base = sum(c.rrf.values()) + sum(c.magnitude.values())
        c.multiplier = scoring.HIGH_PRIORITY_FACTOR if memory.priority == "high" and base > 0 else 1.0
        c.score = base * c.multiplier

    def _exists(self, ref: str) -> bool:
        repo = self.repo
        if repo is not None and repo.exists(ref):
            return True
        return self.ws.root is not None and (self.ws.root / ref).exists()

    def _recalled(self, c: Candidate, rank: int) -> Recalled:
        assert c.memory is not None
        return Recalled(c.memory, c.score, signals(c), receipt(c), rank)


def refs_naming(path: str) -> list[str]:
    """The file refs a memory can use to name `path`: the path itself and each directory above it.

    >>> refs_naming("src/auth/routes.py")
    ['src/auth/routes.py', 'src/', 'src/auth/']
    """
    parts = path.split("/")[:-1]
    return [path, *("/".join(parts[:depth]) + "/" for depth in range(1, len(parts) + 1))]


def competition_ranks(scores: dict[str, float]) -> dict[str, int]:
    """1-based ranks, best first, where equal scores share a rank: a tie must not be broken by id order."""
    ordered = sorted(scores.values(), reverse=True)
    first: dict[float, int] = {}
    for index, value in enumerate(ordered, 1):
        first.setdefault(value, index)
    return {key: first[value] for key, value in scores.items()}


def names_file(memory: Memory, touched: Sequence[str]) -> str:
    """The first touched file whose name (with its extension) or path the memory's text mentions."""
    text = f"{memory.summary}\n{memory.details}"
    for path in touched:
        name = path.rsplit("/", 1)[-1]
        if "." in name and len(name) > 4 and name in text:
            return path
    return ""


# Below this many multiply-adds a column loop in plain Python (~0.05 us each) costs less than importing
# numpy (~60 ms), which matters in a hook process that runs on every prompt: hashed query vectors are
# sparse, so 10k memories take ~290k multiply-adds (~15 ms). A warm process, or one that already imported
# numpy, uses numpy (~1 ms at 10k).
PURE_PYTHON_WORK = 1_000_000


def top_cosines(
    blob: bytes | memoryview, rows: int, dim: int, query: Sequence[float], k: int, *, warm: bool = False
) -> list[tuple[int, float]]:
    """The `k` best (row, cosine) of `query` against a packed float32 matrix of L2-normalized rows.

    A one-shot process (a hook, a CLI command) computes small products in plain Python and never imports
    numpy; a `warm` process, one that will ask again, imports numpy once and is faster from then on."""
    if len(query) != dim or rows == 0:
        return []  # a vector from another embedder: never compare across spaces
    nonzero = [(i, q) for i, q in enumerate(query) if q]
    if not nonzero:
        return []
    if rows * len(nonzero) <= PURE_PYTHON_WORK and not warm and "numpy" not in sys.modules:
        return top_cosines_python(blob, rows, dim, nonzero, k)
    return top_cosines_numpy(blob, rows, dim, nonzero, k)


def top_cosines_python(
    blob: bytes | memoryview, rows: int, dim: int, nonzero: Sequence[tuple[int, float]], k: int
) -> list[tuple[int, float]]:
    """`top_cosines` without numpy: one strided column per non-zero query dimension, summed per row."""
    flat = memoryview(blob).cast("B").cast("f")
    columns = [flat[i : rows * dim : dim] for i, _ in nonzero]
    weights = [q for _, q in nonzero]
    scores = [sum(map(mul, values, weights)) for values in zip(*columns, strict=True)]
    best = heapq.nlargest(k, range(rows), key=scores.__getitem__)
    return [(i, scores[i]) for i in best]


def top_cosines_numpy(
    blob: bytes | memoryview, rows: int, dim: int, nonzero: Sequence[tuple[int, float]], k: int
) -> list[tuple[int, float]]:
    """`top_cosines` with numpy; a sparse query (the hashed embedder's) multiplies only its columns."""
    import numpy as np

    matrix = np.frombuffer(blob, dtype=np.float32, count=rows * dim).reshape(rows, dim)
    weights = np.asarray([q for _, q in nonzero], dtype=np.float32)
    if len(nonzero) * 4 <= dim:
        product = matrix[:, [i for i, _ in nonzero]] @ weights
    else:
        dense = np.zeros(dim, dtype=np.float32)
        dense[[i for i, _ in nonzero]] = weights
        product = matrix @ dense
    count = min(k, rows)
    head = np.argpartition(-product, count - 1)[:count]
    return [(int(i), float(product[i])) for i in head[np.argsort(-product[head])]]


def signals(c: Candidate) -> dict[str, float]:
    """Signal name → value, for the signals that fired."""
    out: dict[str, float] = {}
    if "file" in c.evidence:
        out["file"] = c.magnitude.get("file", 0.0)
    if "names" in c.evidence:
        out["names"] = c.magnitude.get("names", 0.0)
    if "co-change" in c.evidence:
        out["co-change"] = c.magnitude.get("co-change", 0.0)
    if "text" in c.evidence:
        out["text"] = c.magnitude.get("text", 0.0)
    if "sem" in c.evidence:
        out["sem"] = float(c.evidence["sem"])
    if c.evidence.get("pinned"):
        out["pinned"] = 1.0
    for key in ("blast", "feedback"):
        if c.magnitude.get(key):
            out[key] = c.magnitude[key]
    if c.multiplier != 1.0:
        out["priority"] = c.multiplier
    return out


def receipt(c: Candidate) -> str:
    """`file, co-change(auth/routes.py), text 0.62, sem 0.59`: why this memory surfaced."""
    parts: list[str] = []
    if c.evidence.get("pinned"):
        parts.append("pinned")
    if "file" in c.evidence:
        ref = str(c.evidence["file"])
        parts.append(f"dir({ref})" if ref.endswith("/") else "file")
    if c.evidence.get("names"):
        parts.append(f"names({str(c.evidence['names']).rsplit('/', 1)[-1]})")
    if "co-change" in c.evidence:
        parts.append(f"co-change({Path(str(c.evidence['co-change'])).as_posix()})")
    if c.evidence.get("text_match"):
        parts.append(f"text {float(c.evidence.get('coverage', 0.0)):.2f}")
    if c.evidence.get("sem", 0.0) >= scoring.SEM_GATE:
        parts.append(f"sem {float(c.evidence['sem']):.2f}")
    if c.memory is not None and c.memory.priority == "high":
        parts.append("high")
    return ", ".join(parts) or "rank only"
