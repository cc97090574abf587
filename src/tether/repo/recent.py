"""Where work on a file went lately: the lines of the file as it is now that its last few commits changed,
and what is changed and not committed yet (DESIGN §4.2, the recent-change channel).

Code that just changed is where the next change often lands: a follow-up fixes what the last commit did, a
feature grows over a few commits in one region. Recall uses these lines as a soft place, weaker than the
edit's own location: before the agent says where it edits, the file's memories beside the recent work come
first among the file's memories.

For a set of files: one `git rev-list` for where the horizon is (once per HEAD), one `git log` over the
last `horizon` commits for the commits that touched each file (the newest `commits` of each), then one
`git diff -U0` per file from before the oldest of them to the work tree, so the lines are the file's lines
now (the diffs run side by side). Kept per file while HEAD, the file's size
and its modification time stay (`head_stamp`: read from `.git`, no process), so a long-lived process asks
git once per file and commit.

    >>> runs_of("@@ -3,0 +4,2 @@\\n+a\\n+b\\n@@ -10 +12 @@\\n-x\\n+y\\n@@ -20,2 +21,0 @@\\n-p\\n-q\\n")
    [(4, 5), (12, 12), (21, 21)]
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tether.errors import TetherError
from tether.repo.git import finish, git, head_stamp, start

if TYPE_CHECKING:
    import subprocess

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
# Runs kept per file: a rewrite of the whole file says nothing about where in it work went.
RUNS_MAX = 200
# Entries kept per process before all are dropped (bounded memory in a long-lived process).
CACHE_MAX = 256
# Options that keep a diff of the work tree from running anything a configuration names (external diff
# drivers, text conversion filters) and from guessing renames.
_DIFF = ("--literal-pathspecs", "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames")

Runs = list[tuple[int, int]]
_CACHE: dict[tuple[Path, str, int, int], tuple[str, int, int, Runs]] = {}
_BOUNDARY: dict[tuple[Path, int], tuple[str, str]] = {}


def runs_of(diff: str) -> Runs:
    """The changed lines of a `git diff -U0` (first, last), in the new side's lines; a deletion marks the
    line it left behind."""
    runs: Runs = []
    for match in _HUNK.finditer(diff):
        start, count = int(match.group(1)), int(match.group(2) or "1")
        runs.append((max(start, 1), max(start, 1) + max(count, 1) - 1))
        if len(runs) >= RUNS_MAX:
            break
    return runs


def recent_lines(root: Path, paths: Sequence[str], commits: int, horizon: int) -> dict[str, Runs]:
    """For each of `paths` (relative to `root`, in a git work tree) the lines that its last `commits`
    commits among HEAD's last `horizon` changed, and its uncommitted changes, in the file's lines now.
    Nothing for a path outside git, missing, or whose history git cannot read: this is a hint, never an
    error."""
    stamp = head_stamp(root)
    if stamp is None:
        return {}
    out: dict[str, Runs] = {}
    stale: dict[str, tuple[int, int]] = {}
    for path in paths:
        try:
            info = os.stat(root / path)
        except OSError:
            continue
        cached = _CACHE.get((root, path, commits, horizon))
        if cached is not None and cached[:3] == (stamp, info.st_size, info.st_mtime_ns):
            out[path] = cached[3]
        else:
            stale[path] = (info.st_size, info.st_mtime_ns)
    if not stale:
        return out
    try:
        bases = _bases(root, stamp, list(stale), commits, horizon)
        # One diff per file, all started at once: they run side by side, not one after another.
        started = {path: _diff(root, bases.get(path, "HEAD"), path) for path in stale}
        for path, (size, mtime) in stale.items():
            args, proc = started[path]
            diff = finish(root, args, proc, check=False)
            runs = runs_of(diff.stdout.decode("utf-8", "replace")) if diff.returncode == 0 else []
            if len(_CACHE) >= CACHE_MAX:
                _CACHE.clear()
            _CACHE[(root, path, commits, horizon)] = (stamp, size, mtime, runs)
            out[path] = runs
    except (TetherError, OSError):
        return out
    return out


def _diff(root: Path, base: str, path: str) -> tuple[list[str], subprocess.Popen[bytes]]:
    args = [*_DIFF, base, "--", path]
    return args, start(root, args)


def _bases(root: Path, stamp: str, paths: list[str], commits: int, horizon: int) -> dict[str, str]:
    """For each path git's name for the commit before the oldest of its last `commits` commits (`sha^`),
    among HEAD's last `horizon`. A path none of them touched has none (its diff is from HEAD: only what is
    not committed). A path whose oldest commit is the first of the history has none either."""
    bound = _boundary(root, stamp, horizon)
    log = git(
        root,
        "--literal-pathspecs",  # a touched path is a path, whatever it looks like (`:(glob)*`)
        "log",
        "--no-merges",
        "--format=%x01%H %P",
        "--name-only",
        "--no-renames",
        "--relative",  # paths from `root`, as asked
        "HEAD",
        *([f"^{bound}"] if bound else []),
        "--",
        *paths,
        check=False,
    )
    if log.returncode != 0:
        return {}
    seen: dict[str, list[tuple[str, bool]]] = {path: [] for path in paths}
    current: tuple[str, bool] | None = None
    for line in log.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("\x01"):
            sha, *parents = line[1:].split()
            current = (sha, bool(parents))
        elif line and current is not None:
            found = seen.get(line)
            if found is not None and len(found) < commits:
                found.append(current)
    out: dict[str, str] = {}
    for path, found in seen.items():
        if found and found[-1][1]:
            out[path] = f"{found[-1][0]}^"
    return out


def _boundary(root: Path, stamp: str, horizon: int) -> str:
    """The commit `horizon` commits below HEAD (first-parent or not), "" when the history is shorter."""
    cached = _BOUNDARY.get((root, horizon))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    proc = git(root, "rev-list", "-n", "1", f"--skip={horizon}", "HEAD", check=False)
    bound = proc.stdout.decode().strip() if proc.returncode == 0 else ""
    _BOUNDARY[(root, horizon)] = (stamp, bound)
    return bound
