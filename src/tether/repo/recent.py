"""Where work on a file went lately: the lines of the file as it is now that its last few commits changed,
and what is changed and not committed yet (DESIGN §4.2, the recent-change channel).

Code that just changed is where the next change often lands: a follow-up fixes what the last commit did, a
feature grows over a few commits in one region. Recall uses these lines as a soft place, weaker than the
edit's own location: before the agent says where it edits, the file's memories beside the recent work come
first among the file's memories.

For a set of files: the commits that touched each file among HEAD's last `horizon` (the newest `commits` of
each), then one `git diff -U0` per file from before the oldest of them to the work tree, so the lines are the
file's lines now (the diffs run side by side). A file those commits added, or moved to its path, is new all
through from before them: its lines are then the ones changed since that commit (a second diff). Where those
commits come from, cheapest first: the file's diff base as last computed at this HEAD, kept in the index with
the lines (`RecentStore`: the lines themselves while the file's size and modification time stay, so a fresh
process with nothing changed runs no git at all); HEAD's last commits as the repo map's refresh recorded them
(`tether.repo.window`); else git: one `git rev-list` for where the horizon is, one `git log` over it for the
files. Kept in the process too while HEAD (read from `.git`, no process), the file's size and its modification
time stay.

    >>> runs_of("@@ -3,0 +4,2 @@\\n+a\\n+b\\n@@ -10 +12 @@\\n-x\\n+y\\n@@ -20,2 +21,0 @@\\n-p\\n-q\\n")
    [(4, 5), (12, 12), (21, 21)]
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tether.errors import TetherError
from tether.repo.git import finish, git, head_commit, head_stamp, start
from tether.repo.window import recordable, window_key
from tether.store.base import RecentLines, RepoMapStore

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


def recent_lines(
    root: Path, paths: Sequence[str], commits: int, horizon: int, tables: RepoMapStore | None = None
) -> dict[str, Runs]:
    """For each of `paths` (relative to `root`, in a git work tree) the lines that its last `commits`
    commits among HEAD's last `horizon` changed, and its uncommitted changes, in the file's lines now.
    Nothing for a path outside git, missing, or whose history git cannot read: this is a hint, never an
    error. `tables`: the repo map's rows for `root` (HEAD's last commits, the lines as last computed)."""
    head = head_commit(root)
    stamp = head or head_stamp(root)
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
    bases: dict[str, str] = {}
    stored = RecentStore(tables, head, commits, horizon) if tables is not None and head else None
    if stored is not None:
        for path, (runs, base) in stored.lines(stale).items():
            if runs is not None:
                out[path] = _keep(root, path, commits, horizon, (stamp, *stale.pop(path), runs))
            else:
                bases[path] = base
        if stale and len(bases) < len(stale):
            bases.update(stored.bases([path for path in stale if path not in bases]))
    try:
        if len(bases) < len(stale):
            found = _bases(root, stamp, [path for path in stale if path not in bases], commits, horizon)
            bases.update({path: found.get(path, head or "HEAD") for path in stale if path not in bases})
        # One diff per file, all started at once: they run side by side, not one after another.
        started = {path: _diff(root, bases[path], path) for path in stale}
        diffs = {path: finish(root, *started[path], check=False) for path in stale}
        # A file its last commits added, or moved here (git sees a new path), is new all through from before
        # them: that says nothing about where in it work went, and would hide the commits after it. Its
        # lines are then those changed since that oldest commit (one more diff, for such files only).
        since = {path: bases[path][:-1] for path, diff in diffs.items() if _added(diff.stdout, bases[path])}
        started = {path: _diff(root, base, path) for path, base in since.items()}
        for path, base in since.items():
            diffs[path], bases[path] = finish(root, *started[path], check=False), base
        computed: dict[str, RecentLines] = {}
        for path, (size, mtime) in stale.items():
            diff = diffs[path]
            runs = runs_of(diff.stdout.decode("utf-8", "replace")) if diff.returncode == 0 else []
            out[path] = _keep(root, path, commits, horizon, (stamp, size, mtime, runs))
            if diff.returncode == 0 and head:
                computed[path] = RecentLines(head, commits, horizon, size, mtime, bases[path], tuple(runs))
    except (TetherError, OSError):
        return out
    if stored is not None and computed:
        stored.put(computed)
    return {path: out[path] for path in paths if path in out}  # in the order asked, wherever each came from


def _keep(root: Path, path: str, commits: int, horizon: int, entry: tuple[str, int, int, Runs]) -> Runs:
    if len(_CACHE) >= CACHE_MAX:
        _CACHE.clear()
    _CACHE[(root, path, commits, horizon)] = entry
    return entry[3]


class RecentStore:
    """What the index keeps for the channel at one HEAD: each file's lines as last computed (used while
    the file's stat stays; its diff's base while HEAD stays) and HEAD's last commits recorded by the repo
    map's refresh (`tether.repo.window`). A store that cannot answer (busy, an older index) is no answer:
    git is asked instead."""

    def __init__(self, tables: RepoMapStore, head: str, commits: int, horizon: int) -> None:
        self.tables, self.head, self.commits, self.horizon = tables, head, commits, horizon

    def lines(self, stats: Mapping[str, tuple[int, int]]) -> dict[str, tuple[Runs | None, str]]:
        """(the lines, or None when the file changed since they were computed; the diff's base) per path
        computed at this HEAD."""
        try:
            rows = self.tables.recent_lines(list(stats))
        except TetherError:
            return {}
        out: dict[str, tuple[Runs | None, str]] = {}
        for path, row in rows.items():
            if (row.head, row.commits, row.horizon) == (self.head, self.commits, self.horizon):
                same = (row.size, row.mtime_ns) == stats[path]
                out[path] = (list(row.runs) if same else None, row.base)
        return out

    def bases(self, paths: list[str]) -> dict[str, str]:
        """The commit each path's diff starts from (as `_bases` says), from the recorded window."""
        asked = [path for path in paths if recordable(path)]
        try:
            touches = self.tables.recent_touches(window_key(self.head, self.horizon), asked, self.commits)
        except TetherError:
            return {}
        if touches is None or self.commits <= 0:
            return {}
        return {path: _base(touches.get(path, [])) or self.head for path in asked}

    def put(self, rows: Mapping[str, RecentLines]) -> None:
        try:
            with self.tables.write():
                self.tables.put_recent_lines(rows)
        except TetherError:
            pass  # a cache: the next process computes them again


def _added(diff: bytes, base: str) -> bool:
    """Whether `diff` (from `base`, a commit's parent `sha^`) adds the file whole: it was not at `base`. Read in
    the header only, before the first hunk (a removed line `-- /dev/null` is `--- /dev/null` in a hunk)."""
    hunk = diff.find(b"\n@@")
    header = diff[: hunk if hunk >= 0 else 4096]
    return base.endswith("^") and b"\n--- /dev/null\n" in header


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
    return {path: base for path, found in seen.items() if (base := _base(found))}


def _base(found: list[tuple[str, bool]]) -> str:
    """Where a path's diff starts, given its last commits newest first as (sha, has a parent): before the
    oldest of them (`sha^`); "" when none touched it or the oldest is the first of the history (then the
    diff is from HEAD: only what is not committed)."""
    return f"{found[-1][0]}^" if found and found[-1][1] else ""


def _boundary(root: Path, stamp: str, horizon: int) -> str:
    """The commit `horizon` commits below HEAD (first-parent or not), "" when the history is shorter."""
    cached = _BOUNDARY.get((root, horizon))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    proc = git(root, "rev-list", "-n", "1", f"--skip={horizon}", "HEAD", check=False)
    bound = proc.stdout.decode().strip() if proc.returncode == 0 else ""
    _BOUNDARY[(root, horizon)] = (stamp, bound)
    return bound
