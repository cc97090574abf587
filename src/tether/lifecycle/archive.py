"""Soft-archive (DESIGN §6): memories shown again and again and never used step out of recall by themselves.

Every decision reads the telemetry and the event log and the workspace clock, so tests can run the
calendar forward and the same data always gives the same answer. Archiving is reversible
(`tether restore`) and never touches pinned memories.

>>> archived = archive_pass(ws)  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tether.memories import Memories
from tether.model.memory import Memory
from tether.recall.scoring import ignored_after
from tether.store.base import Query, Telemetry

# DESIGN §6: shown 6+ times over 45+ days and never followed up. Six showings is twice the per-prompt
# budget of three, so an agent had real chances to use it; 45 days spans several work cycles, so one busy
# week of a memory that doesn't apply to it cannot archive it.
ARCHIVE_MIN_SURFACED = 6
ARCHIVE_MIN_DAYS = 45


@dataclass(frozen=True)
class Streak:
    """Showings since the memory was last acted on (or restored): how long it has been ignored."""

    count: int
    first: datetime | None
    last: datetime | None

    @property
    def days(self) -> float:
        if self.first is None or self.last is None:
            return 0.0
        return (self.last - self.first).total_seconds() / 86400.0


def ignored_streak(ws: Memories, memory_id: str) -> Streak:
    """Surfacings of `memory_id` after its last `acted` or `restored` event, from the event log.

    A restore resets the streak: a person who brings a memory back has vouched for it, and must not see
    it archived again at the next session start for the same old showings.
    """
    count = 0
    first: datetime | None = None
    last: datetime | None = None
    for event in ws.store.events(memory_id, limit=1_000_000):
        if event.event in ("acted", "restored"):
            break
        if event.event == "surfaced":
            count += 1
            first = event.at if first is None or event.at < first else first
            last = event.at if last is None or event.at > last else last
    return Streak(count, first, last)


def _may_be_ignored(tel: Telemetry, min_count: int, min_days: float) -> bool:
    """Cheap necessary condition from the counters, so the event log is read only for real suspects."""
    if tel.surfaced < min_count or tel.last_surfaced is None or tel.first_surfaced is None:
        return False
    start = tel.first_surfaced
    if tel.last_acted is not None:
        if tel.last_acted >= tel.last_surfaced:
            return False
        start = max(start, tel.last_acted)
    return (tel.last_surfaced - start).total_seconds() / 86400.0 >= min_days


def lifecycle_pool(ws: Memories) -> list[Memory]:
    """Memories the statistics may act on: active project memories that are not pinned.

    User memory is left alone: its telemetry is per project index, and a memory ignored in this
    repository may be the one that matters in the next. Pinned memories are the person's veto.
    """
    return [m for m in ws.find(Query(status=("active",), scope="project")) if not m.pinned]


def archive_candidates(ws: Memories, among: list[Memory] | None = None) -> list[tuple[Memory, Streak]]:
    """Active, unpinned project memories (of `among`, a part of `lifecycle_pool`, when given) shown 6+
    times over 45+ days since anyone last acted on them, or more times where the project's agent follows up
    less often (`scoring.ignored_after` at `Memories.pull_rate`); none while nothing was ever acted on: an
    agent that reads only what the hooks inject leaves every memory unpulled, which says nothing of one."""
    needed = ignored_after(ws.pull_rate(), ARCHIVE_MIN_SURFACED)
    if needed is None:
        return []
    pool = lifecycle_pool(ws) if among is None else among
    telemetry = ws.store.telemetry([m.id for m in pool])
    out = []
    for memory in pool:
        tel = telemetry.get(memory.id)
        if tel is None or not _may_be_ignored(tel, needed, ARCHIVE_MIN_DAYS):
            continue
        streak = ignored_streak(ws, memory.id)
        if streak.count >= needed and streak.days >= ARCHIVE_MIN_DAYS:
            out.append((memory, streak))
    return out


def archive_ignored(ws: Memories, memory: Memory, streak: Streak) -> Memory:
    reason = f"ignored: shown {streak.count} times over {streak.days:.0f} days, never acted on"
    return ws.archive(memory.id, reason=reason)


def archive_pass(ws: Memories) -> list[Memory]:
    """Soft-archive every ignored memory (session start, `tether maintain`). Reversible: `tether restore`."""
    archived = [archive_ignored(ws, memory, streak) for memory, streak in archive_candidates(ws)]
    if archived:
        ws.log(f"archived {len(archived)} ignored memories: {', '.join(m.id for m in archived)}")
    return archived


def archived_hint(archived: list[Memory]) -> str:
    """What a session start says about memories the pass archived."""
    return (
        f"tether: archived {len(archived)} "
        + ("memory that was" if len(archived) == 1 else "memories that were")
        + " shown 6+ times over 45+ days and never used (`tether list --archived`, `tether restore ID`)."
    )
