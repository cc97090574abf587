"""Building the repo map off the hook's path: the first build, and a refresh with many commits to read.

A hook has 3 s and a first build on a 20k-commit history takes about one (several on a loaded machine); a
pull of thousands of commits, as long. So a hook reads history in process only when there is little of it
(`HOOK_MAX_COMMITS`: a small project's first build too), and otherwise starts `tether repomap --if-idle` detached and answers from what exists (the notes' text search,
the map as it was). One build per checkout: the builder holds `index.db.repomap-lock` while it works (a
second one exits at once), and a starter stamps `index.db.repomap-starting` so hooks racing in the second
before the builder takes its lock start only one. A killed build keeps what it saved (its read of history is
saved every 5,000 commits, `tether.repo.refresh`), releases its lock with its death, and the next hook or
command starts one that continues from that save.
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager

from tether.fs import WorkerLock
from tether.memories import Memories

# Commits a hook reads in process: a `git log` and the counting of 200 commits take tens of milliseconds;
# a pull of 500 (seconds on a large repository, with rename detection) goes to the background.
HOOK_MAX_COMMITS = 200
# Longer than a builder takes to start and take its lock on a loaded machine; within it, no second start.
START_GRACE_SECONDS = 30.0


def _worker(ws: Memories) -> WorkerLock:
    return WorkerLock(ws.paths.index, "repomap")


def build_lock(ws: Memories, *, wait: bool) -> AbstractContextManager[bool]:
    """Hold the checkout's build lock (True), or yield False at once when another builder has it and
    `wait` is off."""
    return _worker(ws).held(wait=wait)


def building(ws: Memories) -> bool:
    """Whether a builder holds the lock now."""
    return _worker(ws).busy()


def start_build(ws: Memories) -> bool:
    """Start `tether repomap --if-idle` detached unless one is running or was started within
    `START_GRACE_SECONDS`. True when one was started. Never raises (a hook must not fail over this)."""
    if ws.root is None:
        return False
    try:
        from tether.detach import start_once

        argv = [sys.executable, "-m", "tether", "repomap", "--if-idle"]
        log = ws.paths.logs / "repomap.log"
        busy, stamp = lambda: building(ws), _worker(ws).stamp
        if not start_once(argv, log, cwd=ws.root, busy=busy, stamp=stamp, grace=START_GRACE_SECONDS):
            return False
        ws.log("repo map: started a build in the background")
        return True
    except Exception:
        ws.log("repo map: could not start a background build", exc=True)
        return False


def needs_background(ws: Memories) -> bool:
    """Whether a hook should leave the repo map's refresh to a background build: more than
    `HOOK_MAX_COMMITS` commits to read (a first build counts every commit of HEAD; a small project's is
    done in process, at once)."""
    repo = ws.repo_map()
    return repo is not None and repo.backlog() > HOOK_MAX_COMMITS
