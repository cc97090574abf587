"""The lazy ranking (`tether.recall.ranking`): the full sort's order, candidate for candidate, with only the
candidates that can reach the head scored."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tether.model.memory import Memory
from tether.model.prompt import sanitize
from tether.model.timestamps import utcnow
from tether.recall.evidence import CHANNELS, Candidate
from tether.recall.ranking import Ranking, order
from tether.recall.recaller import Recaller
from tether.store.base import Event, Query, Telemetry
from tether.workspace import Workspace


def reference(candidates: list[Candidate]) -> list[Candidate]:
    """Every candidate sorted by `order`, the first copy of each content hash kept: what a recall did before."""
    seen: set[str] = set()
    out = []
    for c in sorted(candidates, key=order):
        assert c.memory is not None
        if c.memory.content_hash not in seen:
            seen.add(c.memory.content_hash)
            out.append(c)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_ranking_hands_out_the_sorted_order_scoring_only_what_can_reach_the_head(seed: int) -> None:
    rng = random.Random(seed)
    scores: dict[str, float] = {}
    slack: dict[str, float] = {}
    candidates = []
    for n in range(200):
        mid = f"{n:08x}"
        summary = f"memory {rng.randrange(170)}"  # some share their text: one slot per content hash
        memory = Memory(mid, summary, pinned=rng.random() < 0.03, scope=rng.choice(["project", "user"]))
        c = Candidate(mid, memory=memory)
        if rng.random() < 0.5:
            c.evidence.file = "src/app.py"  # evidence: a pinned one ranks first
        # Ties on purpose: equal scores are broken by scope, then by id.
        scores[mid] = round(rng.uniform(-0.1, 1.0), 1 if n % 3 else 6)
        slack[mid] = rng.choice([0.0, 0.0, rng.uniform(0.0, 0.5)])  # some bounds are the score itself
        candidates.append(c)
    scored: list[str] = []

    def score(c: Candidate) -> None:
        scored.append(c.memory_id)
        c.score = scores[c.memory_id]

    def bound(c: Candidate) -> float:
        return scores[c.memory_id] + slack[c.memory_id] + 1e-12

    copies = [
        Candidate(c.memory_id, memory=c.memory, evidence=c.evidence, score=scores[c.memory_id])
        for c in candidates
    ]
    expected = [c.memory_id for c in reference(copies)]  # every candidate scored, then sorted
    ranking = Ranking(candidates, score, bound)
    head = []
    for c in ranking:
        head.append(c.memory_id)
        if len(head) == 3:
            break
    assert head == expected[:3]
    assert len(scored) < len(candidates) // 2  # the head needed only a few scored
    assert [c.memory_id for c in ranking] == expected  # read on: the rest, in order, everyone scored once
    assert sorted(scored) == sorted(scores)
    assert len(ranking) == len(expected)


def test_a_candidate_scored_by_id_order_on_equal_bounds_keeps_the_sorts_ties() -> None:
    memories = [
        Memory(f"{n:08x}", f"same score {n}", scope="user" if n == 1 else "project") for n in range(4)
    ]
    candidates = [Candidate(m.id, memory=m) for m in reversed(memories)]

    def score(c: Candidate) -> None:
        c.score = 0.5

    ranking = Ranking(candidates, score, lambda c: 0.5 + 1e-12)
    assert [c.memory_id for c in ranking] == ["00000000", "00000002", "00000003", "00000001"]


class Counting(Recaller):
    """Counts the candidates it scores in full."""

    scored = 0

    def _score(self, c: Candidate, *args: object) -> None:
        type(self).scored += 1
        super()._score(c, *args)  # type: ignore[arg-type]


def filled(ws: Workspace, repo: Path) -> None:
    """Memories that fire every channel's evidence: files, directories, words, paths, telemetry."""
    rng = random.Random(3)
    (repo / "src" / "app" / "billing.py").write_text("def charge_card(amount):\n    return amount\n")
    files = ["src/app/upload.py", "src/app/auth.py", "src/app/", "docs/deploy.md", "src/gone.py", ""]
    words = [
        "upload",
        "retry",
        "chunk",
        "auth",
        "token",
        "deploy",
        "billing",
        "cache",
        "timeout",
        "charge_card",
    ]
    for n in range(120):
        summary = " ".join(rng.sample(words, rng.randint(2, 5))) + f" rule {n % 90}"
        if n % 17 == 0:
            summary += " see upload.py"
        ref = rng.choice(files)
        extra = [rng.choice(files[:4])] if rng.random() < 0.2 else []
        refs = [r for r in [ref, *extra] if r]
        ws.add(
            summary,
            category=rng.choice(["gotcha", "pref", "decision"]),
            files=list(dict.fromkeys(refs)),
            priority="high" if n % 11 == 0 else "normal",
            pinned=n % 29 == 0,
        )
        if n % 13 == 0:  # the same knowledge in user scope: one slot for both
            ws.add(summary, scope="user")
    now = datetime.now(UTC)
    events = []
    for n, memory in enumerate(ws.store.find(Query())[:60]):
        kind = n % 3  # acted on (a bonus), shown and ignored (a penalty), or both
        for _ in range(1 if kind == 0 else 6):
            events.append(Event(memory.id, "surfaced", now - timedelta(days=n)))
        if kind != 1:
            events.append(Event(memory.id, "acted", now - timedelta(days=n)))
    ws.store.record(events)
    for _ in range(40):  # an agent that follows up a third of what it is shown: the penalty from 4 showings
        ws.ack(events[0].memory_id)


PROMPTS = [
    ("why does the upload retry fail?", ["src/app/upload.py"]),
    ("rotate the auth token cache", ["src/app/auth.py", "docs/deploy.md"]),
    ("deploy timeout", []),
    ("fix charge_card rounding", ["src/app/billing.py"]),
    ("chunk size", ["src/app/"]),
]


@pytest.fixture
def still(repo: Path, home: Path) -> Iterator[Workspace]:
    """A workspace whose clock stands still: recency and feedback read the clock to the second, so two
    recalls a second boundary apart would score the same memory a few parts in a billion apart."""
    now = utcnow()
    with Workspace.open(repo, home=home, clock=lambda: now) as workspace:
        yield workspace


@pytest.mark.parametrize(("prompt", "files"), PROMPTS)
def test_bounds_hold_and_recall_reads_the_head_of_the_full_ranking(
    still: Workspace, repo: Path, prompt: str, files: list[str]
) -> None:
    ws = still
    filled(ws, repo)
    r = ws.recaller(Counting)
    r.recall(prompt, files, record=False)  # a process's first cosine is plain Python's, later ones numpy's
    touched, places = r.places(files)
    ranking = r._rank(sanitize(prompt), touched, None, CHANNELS, places=places)
    assert isinstance(ranking, Ranking)
    bounds = dict(ranking.bounds)
    everything = list(ranking)
    assert len(everything) == len(ranking) > 10
    telemetry = ws.store.telemetry()
    for c in everything:
        if c.memory_id in bounds:
            assert c.score <= bounds[c.memory_id]
    # The candidates hold what the bound has to allow for: feedback both ways, priority, user copies.
    assert any(telemetry.get(c.memory_id, Telemetry()).acted for c in everything)
    assert any(c.magnitude.feedback and c.magnitude.feedback < 0 for c in everything)
    assert any(c.multiplier > 1.0 for c in everything)
    assert [c.memory_id for c in everything] == [c.memory_id for c in reference(everything)]
    # What a recall injects is the head of that ranking, past the candidates without evidence.
    Counting.scored = 0
    shown = r.recall(prompt, files, record=False)
    assert shown.candidates == len(everything)
    expected = [c for c in everything if c.relevant][: len(shown.memories)]
    assert [(m.memory.id, m.score) for m in shown.memories] == [(c.memory_id, c.score) for c in expected]
    assert shown.memories and Counting.scored < len(everything)
