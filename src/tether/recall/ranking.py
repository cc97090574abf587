"""Recall's candidates in rank order, each scored only when the order reaches it (DESIGN §4.3).

A prompt brings a few hundred candidates (a file's owners, its directory's, each channel's top 50) and an
injection has three slots: most candidates cannot reach them, yet scoring one (its coverage of the query,
its recency and feedback, its magnitudes summed) is most of a warm recall's own work. What the channels
found already bounds what scoring can make of a candidate: scoring only lowers its file hit (breadth), may
drop its path credit and code magnitude, and adds at most a text magnitude (the bm25 share, times a coverage
of at most 1), a named-file hit, recency and feedback at their ceilings, then multiplies by priority's
factor and the out-of-scope discount (`bound`). `Ranking` scores the candidate whose bound is the highest
left, and hands a scored one out once no candidate left unscored can reach it: the order is the full
sort's, candidate for candidate, and every candidate handed out is scored in full. A recall stops reading
once its slots are filled; reading to the end (search, explain, `list(ranking)`) scores everyone, each to
the same floats as a sort after scoring all would (`tests/test_ranking.py` checks both).

    >>> ranking = Ranking(candidates, score, touched=True)  # doctest: +SKIP
    >>> next(iter(ranking)).score  # doctest: +SKIP
    0.71
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterator

from tether.recall import scoring
from tether.recall.evidence import Candidate, magnitude_values

# A bound is widened by this share (and a tiny constant) so that float rounding in the scores' sums, a
# few units in the last place, can never lift a score above it.
_SLACK = 1e-9


def bound(c: Candidate, touched: bool, recency: float, feedback: float) -> float:
    """The highest score `Recaller`'s scoring can give `c` (its memory set), from what the channels found;
    `recency` and `feedback` are the magnitudes scoring will give it.

    The magnitudes scoring sets are taken as it sets them, or at their ceiling where that depends on the
    query's coverage (the text magnitude) or on the memory's text (a named file); the rest as they stand."""
    memory = c.memory
    assert memory is not None
    e, m, rrf = c.evidence, c.magnitude, c.rrf
    total: float = sum(rrf.values()) + recency + feedback + sum(filter(None, magnitude_values(m)))
    exact = m.file is not None and exact_file(c)
    if m.file is not None:
        total -= m.file * (1.0 - scoring.breadth(len(memory.files)))
    if exact and not scoring.PATH_ON_EXACT_FILE:  # its path magnitude is set, its path credit dropped
        total += scoring.PATH_TEXT_MAX - (m.path or 0.0) - rrf.get("path", 0.0)
    if exact and not scoring.CODE_ON_EXACT_FILE:
        total -= m.code or 0.0
    if e.text is not None:  # the text magnitude: the bm25 share times a coverage of at most 1
        best = e.text_best or 0.0
        if best > 0.0:
            total += scoring.TEXT_MAX * min(max(e.text, 0.0) / best, 1.0)
    if "path" in rrf and not (exact and not scoring.PATH_ON_EXACT_FILE):
        total += scoring.NAMED_FILE_HIT
    if memory.priority == "high" and total > 0.0:
        total *= scoring.HIGH_PRIORITY_FACTOR
    if touched and memory.files and e.file is None and e.cochange is None:
        total *= scoring.OUT_OF_SCOPE_FACTOR
    return total + (abs(total) + 1.0) * _SLACK


def exact_file(c: Candidate) -> bool:
    """Whether `c`'s file hit is on a touched file itself, not on a directory holding one."""
    return bool(c.evidence.file) and not c.evidence.file.endswith("/")  # type: ignore[union-attr]


def order(c: Candidate) -> tuple[bool, float, bool, str]:
    """The sort key of a scored candidate: pinned ones with evidence first, then by score (project over
    user on a tie: the narrower claim), then by id."""
    memory = c.memory
    assert memory is not None
    return (not (memory.pinned and c.relevant), -c.score, memory.scope != "project", c.memory_id)


class Ranking(Collection[Candidate]):
    """The candidates of one recall, best first, scored as iteration reaches them; the same knowledge twice
    (one content hash) keeps only its best-ranked copy (and `include`, always).

    `score(c)` scores a candidate in full (it may only lower what `bound` allows); pinned candidates are
    scored at once (they rank by evidence before score)."""

    def __init__(
        self,
        candidates: list[Candidate],
        score: Callable[[Candidate], object],
        bound: Callable[[Candidate], float],
        *,
        include: str | None = None,
    ) -> None:
        self._score = score
        self._include = include
        self._digests = {c.memory.content_hash for c in candidates if c.memory is not None}
        self._out: list[Candidate] = []
        self._seen: set[str] = set()
        self._scored: list[tuple[tuple[bool, float, bool, str], Candidate]] = []
        self._waiting: list[tuple[float, int, Candidate]] = []
        self.bounds: dict[str, float] = {}  # each candidate's bound, as it stood before any was scored
        for n, c in enumerate(candidates):
            assert c.memory is not None
            if c.memory.pinned:
                score(c)
                self._scored.append((order(c), c))
            else:
                self.bounds[c.memory_id] = ceiling = bound(c)
                self._waiting.append((-ceiling, n, c))
        heapq.heapify(self._scored)
        heapq.heapify(self._waiting)

    def __len__(self) -> int:
        """How many candidates the ranking holds (one per content hash, and `include`)."""
        if self._include is not None:
            return sum(1 for _ in self)
        return len(self._digests)

    def __contains__(self, item: object) -> bool:
        return any(c is item for c in self)

    def __iter__(self) -> Iterator[Candidate]:
        at = 0
        while True:
            if at < len(self._out):
                yield self._out[at]
                at += 1
            elif not self._advance():
                return

    def _advance(self) -> bool:
        """Hand out the next candidate (into `_out`); False when none is left."""
        scored, waiting = self._scored, self._waiting
        while True:
            if scored:
                key, c = scored[0]
                # Handed out when nothing unscored can rank before it: pinned with evidence, or a better
                # score than any bound left (strictly: a tie would be broken by scope and id).
                if not waiting or not key[0] or -waiting[0][0] < c.score:
                    heapq.heappop(scored)
                    assert c.memory is not None
                    digest = c.memory.content_hash
                    if digest in self._seen and c.memory_id != self._include:
                        continue
                    self._seen.add(digest)
                    self._out.append(c)
                    return True
            if not waiting:
                return False
            c = heapq.heappop(waiting)[2]
            self._score(c)
            heapq.heappush(scored, (order(c), c))


__all__ = ["Ranking", "bound", "exact_file", "order"]
