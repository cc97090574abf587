"""The periodic lifecycle passes, in slices, off a session start's path (DESIGN §6).

The soft-archive pass and the cleanup hint's count of stale memories read every memory's telemetry (at 10k
memories 107-260 ms and 250-720 ms), for rules measured in weeks, so they run at most every 6 hours
(`ARCHIVE_EVERY`, `cleanup.CHECK_EVERY`). A session start in its own process still runs them when due. With
the resident process up they run there instead, between requests, a slice at a time (`DuePasses.step`: a
few hundred memories per slice), and a session start answered by it runs none of them. What a pass has to
say (memories archived, the cleanup hint) waits in the index for the next session start (`take_hints`).

    passes = DuePasses(ws)
    while not passes.step(0.01):  # between requests
        ...
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta

from tether.lifecycle.archive import archive_candidates, archive_ignored, archived_hint
from tether.lifecycle.cleanup import Candidate, hint_check, hint_from, stale_among
from tether.memories import Memories
from tether.model.memory import Memory
from tether.model.timestamps import due
from tether.store.base import Query

# A session start runs the soft-archive pass at most this often: it reads every memory's telemetry (220 ms
# at 10k memories) for a rule measured in weeks (6 showings over 45 days). `tether maintain` always runs it.
ARCHIVE_EVERY = timedelta(hours=6)
META_ARCHIVE_PASS = "archive.last_hook_pass"
# What the passes found for the next session start to say (a JSON list of lines).
META_HINTS = "housekeeping.pending_hints"
# Memories read per part: their telemetry, files and (for the few that may be ignored) event log. At 10k
# memories on a 2-core machine at load 9, parts of 200 took 50-260 ms each; parts of 50 mostly under 8 ms
# (the longest step, 19-28 ms, is the one read of every id).
CHUNK = 50


def archive_due(ws: Memories) -> bool:
    return due(ws.store.get_meta(META_ARCHIVE_PASS), ws.clock(), ARCHIVE_EVERY)


def add_hint(ws: Memories, hint: str) -> None:
    with ws.store.transaction():
        hints = _hints(ws)
        ws.store.set_meta(META_HINTS, json.dumps([*hints, hint]))


def take_hints(ws: Memories) -> list[str]:
    """What the passes left for a session start to say, once (another session start gets none of it)."""
    if not ws.store.get_meta(META_HINTS):
        return []  # one read on every session start: nothing waiting
    with ws.store.transaction():
        hints = _hints(ws)
        ws.store.set_meta(META_HINTS, "[]")
    return hints


def _hints(ws: Memories) -> list[str]:
    try:
        value = json.loads(ws.store.get_meta(META_HINTS) or "[]")
    except ValueError:
        return []
    return [str(h) for h in value] if isinstance(value, list) else []


class DuePasses:
    """The due passes of `ws` as steps: `step(seconds)` runs them for about that long, True when done."""

    def __init__(self, ws: Memories, *, chunk: int = CHUNK) -> None:
        self.ws = ws
        self.chunk = max(1, chunk)
        self._steps = self._run()
        self.done = False
        self.slices = 0

    def step(self, seconds: float) -> bool:
        if self.done:
            return True
        self.slices += 1
        end = time.monotonic() + seconds
        for _ in self._steps:
            if time.monotonic() >= end:
                return False
        self.done = True
        return True

    def _run(self) -> Iterator[None]:
        """The passes, yielding between parts (and around each read of every id and each write)."""
        ws = self.ws
        ids: list[str] | None = None
        if archive_due(ws):
            ids = self._ids()
            yield
            yield from self._archive(ids)
        check = hint_check(ws, in_hook=True)
        if check is None:
            return
        yield
        if ids is None:
            ids = self._ids()
            yield
        found: list[Candidate] = []
        for part in self._parts(ids):
            found += stale_among(ws, part) if part else []
            yield
        hint = hint_from(ws, check, found, in_hook=True)
        if hint:
            yield
            add_hint(ws, hint)

    def _archive(self, ids: list[str]) -> Iterator[None]:
        ws, now = self.ws, self.ws.clock()
        archived: list[Memory] = []
        for part in self._parts(ids):
            for memory, streak in archive_candidates(ws, part) if part else []:
                yield
                archived.append(archive_ignored(ws, memory, streak))  # writes a note: a step of its own
            yield
        ws.store.set_meta(META_ARCHIVE_PASS, now.isoformat())
        if archived:
            yield
            ws.log(f"archived {len(archived)} ignored memories: {', '.join(m.id for m in archived)}")
            add_hint(ws, archived_hint(archived))
        yield

    def _ids(self) -> list[str]:
        return sorted(mid for mid, _ in self.ws.store.note_refs().values())

    def _parts(self, ids: list[str]) -> Iterator[list[Memory]]:
        """`lifecycle_pool` in parts of `chunk` (read part by part: the whole at 10k is one long read)."""
        for start in range(0, len(ids), self.chunk):
            query = Query(status=("active",), scope="project", ids=tuple(ids[start : start + self.chunk]))
            yield [m for m in self.ws.find(query) if not m.pinned]
