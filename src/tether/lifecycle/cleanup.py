"""Cleanup (DESIGN §6): stale memories ranked worst first, the once-per-pass hint, and purge by origin.

>>> [c.memory.id for c in cleanup_candidates(ws)][:3]  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tether.lifecycle.archive import _may_be_ignored, ignored_streak, lifecycle_pool
from tether.memories import Memories
from tether.model.memory import Memory
from tether.model.timestamps import due, iso, parse_iso
from tether.recall.scoring import ignored_after
from tether.store.base import Query, Telemetry

# DESIGN §6 cleanup hint: enough sessions that the statistics mean something, enough memories that
# pruning matters, enough stale ones to be worth a person's minute.
CLEANUP_MIN_SESSIONS = 20
CLEANUP_MIN_ACTIVE = 30
CLEANUP_MIN_CANDIDATES = 10
# A memory nobody acted on for three months (two recency half-lives in `scoring`) has stopped helping.
UNUSED_DAYS = 90
# Ranking weight of a dead reference, in "unanswered showings": a memory about files that are all gone is
# as stale as one ignored six times (the archive threshold).
DEAD_REF_WEIGHT = 6.0
# Ranking weight of idleness: one point per 30 days without use, so a year idle ≈ 12 ignored showings.
IDLE_DAYS_PER_POINT = 30.0

META_LAST_PASS = "cleanup.last_pass"  # ISO time of the last `tether cleanup` (absent: never)
META_HINTED = "cleanup.hinted"  # the value of META_LAST_PASS the hint was given for
# A session start counts the stale candidates at most this often: the count reads every memory's telemetry
# and files (450 ms at 10k memories, on every session start once 20 sessions passed and too few were stale),
# and what makes a memory stale is measured in showings and days. `tether cleanup` always counts.
CHECK_EVERY = timedelta(hours=6)
META_CHECKED = "cleanup.last_hook_check"  # ISO time a session start last counted the candidates


@dataclass
class Candidate:
    """A memory proposed for cleanup, with why and how stale it is (higher `score` is staler)."""

    memory: Memory
    reasons: list[str]
    idle_days: int  # since last acted on, or since created when never
    unanswered: int  # showings since last acted on
    dead: bool
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.memory.id,
            "summary": self.memory.summary,
            "category": self.memory.category,
            "origin": self.memory.origin,
            "reasons": self.reasons,
            "idle_days": self.idle_days,
            "unanswered": self.unanswered,
            "dead_reference": self.dead,
            "score": round(self.score, 2),
        }


def cleanup_candidates(ws: Memories) -> list[Candidate]:
    """Stale memories, worst first: ignored, naming only files that are gone, or long unused.

    Ranked by `score` = idle days / 30 + showings since the last use + 6 for a dead reference; pinned
    memories never appear.
    """
    return ranked(stale_among(ws, lifecycle_pool(ws)))


def ranked(candidates: list[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (-c.score, c.memory.created, c.memory.id))


def stale_among(ws: Memories, pool: list[Memory]) -> list[Candidate]:
    """The candidates among `pool` (a part of `lifecycle_pool`), unranked."""
    now = ws.clock()
    telemetry = ws.store.telemetry([m.id for m in pool])
    # Ignored as the penalty counts it: at the project's pull rate (never while nothing was acted on).
    needed = ignored_after(ws.pull_rate())
    # The pool's own dead references (a candidate is in the pool): one read of the memories, not two.
    from tether.lifecycle.doctor import dead_refs  # the count's, not a session start's

    dead = {m.id: files for m, files in dead_refs(ws, among=pool)}
    out: list[Candidate] = []
    for memory in pool:
        tel = telemetry.get(memory.id) or Telemetry()
        reasons: list[str] = []
        unanswered = 0
        if needed is not None and _may_be_ignored(tel, needed, 0.0):
            unanswered = ignored_streak(ws, memory.id).count
            if unanswered >= needed:
                reasons.append(f"shown {unanswered} times since last used")
        if memory.id in dead:
            reasons.append(f"every file it names is gone ({', '.join(dead[memory.id])})")
        anchor = tel.last_acted or memory.created
        idle = max(0, int((now - anchor).total_seconds() // 86400))
        if idle >= UNUSED_DAYS:
            reasons.append(f"not used for {idle} days")
        if not reasons:
            continue
        score = idle / IDLE_DAYS_PER_POINT + unanswered + (DEAD_REF_WEIGHT if memory.id in dead else 0.0)
        out.append(Candidate(memory, reasons, idle, unanswered, memory.id in dead, score))
    return out


def _pass_marker(ws: Memories) -> str:
    return ws.store.get_meta(META_LAST_PASS) or ""


def cleanup_hint(ws: Memories, *, in_hook: bool = False) -> str | None:
    """The one-time nudge to run `tether cleanup`, or None.

    Given when 20+ sessions started since the last cleanup pass, 30+ memories are active and 10+ are
    stale; then not again until `tether cleanup` marks a new pass. Those are checked cheapest first (two
    counts, then the candidates: every memory's telemetry and files). `in_hook` (a session start): the
    candidates are counted at most every `CHECK_EVERY`; the counts still run every time.
    """
    check = hint_check(ws, in_hook=in_hook)
    if check is None:
        return None
    return hint_from(ws, check, cleanup_candidates(ws), in_hook=in_hook)


@dataclass(frozen=True)
class HintCheck:
    """The cheap half of the hint's conditions, met: the candidates are to be counted."""

    marker: str
    sessions: int
    active: int


def hint_check(ws: Memories, *, in_hook: bool) -> HintCheck | None:
    """Whether the candidates need counting for the hint (two counts and a few keys), or None."""
    marker = _pass_marker(ws)
    if ws.store.get_meta(META_HINTED) == (marker or "never"):
        return None
    since = parse_iso(marker) if marker else None
    sessions = ws.store.session_count(since)
    if sessions < CLEANUP_MIN_SESSIONS:
        return None
    active = sum(ws.store.count(Query(status=("active",), scope=s)) for s in ("project", "user"))
    if active < CLEANUP_MIN_ACTIVE:
        return None
    if in_hook and not due(ws.store.get_meta(META_CHECKED), ws.clock(), CHECK_EVERY):
        return None  # counted within CHECK_EVERY and too few: staleness moves in days, not minutes
    return HintCheck(marker, sessions, active)


def hint_from(ws: Memories, check: HintCheck, found: list[Candidate], *, in_hook: bool) -> str | None:
    """The hint, given the candidates counted after `check` (once: it is marked given)."""
    marker, sessions, active = check.marker, check.sessions, check.active
    candidates = ranked(found)
    if in_hook:
        ws.store.set_meta(META_CHECKED, iso(ws.clock()))
    if len(candidates) < CLEANUP_MIN_CANDIDATES:
        return None
    with ws.store.transaction():
        if ws.store.get_meta(META_HINTED) == (marker or "never"):
            return None  # another session start said it first
        ws.store.set_meta(META_HINTED, marker or "never")
    worst = "; ".join(f"{c.memory.id} {c.memory.summary[:60]} ({c.reasons[0]})" for c in candidates[:3])
    return (
        f"tether: {len(candidates)} of {active} memories look stale after {sessions} sessions "
        f"(worst: {worst}). Ask the user to run `tether cleanup` to review and archive them."
    )


def mark_cleanup_pass(ws: Memories) -> None:
    """Record that a cleanup pass happened now: session counting for the hint starts over."""
    with ws.store.transaction():
        ws.store.set_meta(META_LAST_PASS, iso(ws.clock()))


def cleanup(ws: Memories, ids: list[str]) -> list[Memory]:
    """Archive the chosen candidates and mark the pass. Reversible with `tether restore`."""
    archived = [ws.archive(mid, reason="cleanup") for mid in ids]
    mark_cleanup_pass(ws)
    return archived


def purge_origin(ws: Memories, origin: str) -> list[Memory]:
    """Delete every memory of `origin` for good, notes included (any status)."""
    doomed = [m for m in ws.find(Query(status=None, origin=origin)) if m.scope != "session"]
    return [ws.delete(m.id) for m in doomed]
