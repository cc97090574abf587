"""What a session start in its own process leaves to a detached one, so the hook returns (DESIGN §6).

Without the resident process (no Unix sockets, `TETHER_RESIDENT=0`, or the session start that launches
it), a session start is a fresh process, and three pieces of housekeeping cost it more than all the rest
at 10,000 memories: the scan of every note (an editor's in-place save), the repo map's refresh and, once
per 6 hours, the soft-archive pass and the cleanup count. In a small project each is a few milliseconds
and stays in the hook, which then says what it found at once; past `HOOK_MAX_NOTES` notes,
`HOOK_MAX_MEMORIES` memories or `HOOK_MAX_FILES` files, the hook starts `tether maintain --background`
detached instead (one per checkout) and answers from the index as it is. That process scans every note,
refreshes the map, follows renames and anchors, runs the due passes, and leaves what a session start would
have said in the index for the next one (`tether.lifecycle.passes.take_hints`), as the resident process
does between requests.

What that trades: in a large project, a note edited in place just before a session starts is shown as it
was by that session start's pinned block (the background scan, about a second later, indexes it for every
later hook), and the passes' hints come one session start later. Notes tether writes, new and deleted
ones are seen at once (`tether.notes.stamps`).
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager

from tether.fs import WorkerLock
from tether.memories import Memories
from tether.store.base import Query

# A scan of every note costs a hook process 10-15 ms per 1,000 notes on this project's 2-core machine
# (its stat, the index's row, the comparison): 2,000 is about one `python -c pass`.
HOOK_MAX_NOTES = 2000
# The due passes read every memory's telemetry: 42 ms at 1,000 memories in a session start's process.
HOOK_MAX_MEMORIES = 1000
# A repo map refresh with nothing new lists the work tree (git ls-files, untracked included), so its cost
# grows with the files: 90 ms for a checkout of 2,000 untracked files and 10,000 notes.
HOOK_MAX_FILES = 1000
# A session start scans every note when no process did within this (seconds): sessions started together
# (a subagent, a `/clear`) share one scan, and the resident's session starts use the same window.
SCAN_EVERY = 60.0
# Longer than the process takes to start and take its lock on a loaded machine; within it, no second start.
START_GRACE_SECONDS = 30.0


def _worker(ws: Memories) -> WorkerLock:
    return WorkerLock(ws.paths.index, "housekeeping")


def large(ws: Memories, most: int) -> bool:
    """Whether the index holds more than `most` memories (one indexed count, under a millisecond)."""
    return ws.store.count(Query(status=None)) > most


def background_lock(ws: Memories, *, wait: bool) -> AbstractContextManager[bool]:
    """Held by the background process while it works (False at once when another has it, unless `wait`)."""
    return _worker(ws).held(wait=wait)


def running(ws: Memories) -> bool:
    """Whether a background housekeeping process holds its lock now."""
    return _worker(ws).busy()


def start(ws: Memories, why: list[str]) -> bool:
    """Start `tether maintain --background` (`housekeeping.run_background`) detached unless one is running or was started within
    `START_GRACE_SECONDS`; True when one was started. Never raises: a hook must not fail over this."""
    if ws.root is None or not why:
        return False
    try:
        from tether.detach import start_once

        argv = [sys.executable, "-m", "tether", "maintain", "--background"]
        log = ws.paths.logs / "housekeeping.log"
        busy, stamp = lambda: running(ws), _worker(ws).stamp
        if not start_once(argv, log, cwd=ws.root, busy=busy, stamp=stamp, grace=START_GRACE_SECONDS):
            return False
        ws.log(f"housekeeping: left to the background ({', '.join(why)})")
        return True
    except Exception:
        ws.log("housekeeping: could not start it in the background", exc=True)
        return False
