"""The repo map (DESIGN §3): what exists, what was renamed, what changes together, what is imported.

Making a `RepoMap` is cheap and the lookups are single indexed queries, so a hook can ask on every prompt;
`refresh` talks to git and the file system and runs at session start and on sync. Its rows live behind
the `RepoMapStore` protocol (the SQLite index's tables, or the in-memory store's):

    repo = RepoMap(root, store.repomap())
    repo.refresh().renames                        # [(old, new), ...] since the last refresh
    repo.neighbours("src/tether/recall.py")       # [("src/tether/fusion.py", 0.62), ...]

Co-change, in short: every non-merge commit touching at most `MAX_COMMIT_FILES` files counts once for
each file it touches and once for each pair of them; confidence of b given a is pairs(a, b) / count(a).
Counts follow renames: a path's history moves with it, so a renamed file keeps its neighbours.
History is processed once: the map remembers how far it read (the last commit, or the tips of a read
stopped part way: `tether.repo.watermark`) and reads only what HEAD has beyond it; if that is no longer in
HEAD's history (rebase, force-push, reset), history is read again from scratch and no renames are reported,
since the old ones may not have happened on the new history. The refresh itself is `tether.repo.refresh`.
"""

from __future__ import annotations

import os
import posixpath
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tether.repo.cochange import REPOMAP_VERSION
from tether.repo.git import git, head_stamp
from tether.repo.git import probe as git_probe
from tether.store.base import RepoMapStore

if TYPE_CHECKING:
    from tether.repo.refresh import Progress, RefreshReport

# Minimum shared commits for a neighbour: one shared commit is often an accident (a drive-by fix in
# the same commit); two independent ones are a pattern.
MIN_SUPPORT = 2
# Minimum confidence: a file that changed 100 times and once or twice with b is not coupled to b.
MIN_CONFIDENCE = 0.1


# -- the facade -------------------------------------------------------------------------------------


class RepoMap:
    """Files, renames, co-change and fan-in of one project, cached in tether's SQLite index."""

    def __init__(self, root: Path, tables: RepoMapStore) -> None:
        """Cheap: no git, no query until a lookup needs one."""
        self.root = root
        self.tables = tables
        self._state: dict[str, str] | None = None

    # -- lookups (hot path) ---------------------------------------------------------------------

    def _cached_state(self) -> dict[str, str]:
        if self._state is None:
            self._state = self.tables.state()
        return self._state

    def is_git(self) -> bool:
        mode = self._cached_state().get("mode")
        if mode is not None:
            return mode == "git"
        return any((d / ".git").exists() for d in (self.root.resolve(), *self.root.resolve().parents))

    def exists(self, path: str) -> bool:
        """Whether `path` (or, for "dir/", any file under it) exists.

        The map answers as of the last refresh, corrected by one `lstat`: a listed file deleted since
        then does not exist, and a file created since then (changed after the refresh) does."""
        rel = self._rel(path)
        if rel is None:
            return False
        target = self.root / rel
        if rel.endswith("/"):
            if self.tables.present_under(rel):
                return target.is_dir()
            return self._appeared(target)
        if self.tables.present(rel):
            return os.path.lexists(target)
        return self._appeared(target)

    def _appeared(self, target: Path) -> bool:
        try:
            st = target.lstat()
        except OSError:
            return False
        # Appeared since the refresh began. (Files there before it are listed, or ignored on purpose.)
        return st.st_ctime_ns > int(self._cached_state().get("refreshed_at_ns", "0"))

    def named(self, name: str, most: int) -> list[str]:
        """The files `name` (a file name, or the end of a path: `charge.py`, `billing/charge.py`) names here, when
        at most `most` do; none when more do (a name that many files share says no one of them)."""
        rel = self._rel(name)
        if rel is None or rel.endswith("/") or most <= 0:
            return []
        found = self.tables.ending_with(rel, most + 1)
        if len(found) > most:
            return []
        return [p for p in found if os.path.lexists(self.root / p)]

    def neighbours(
        self,
        path: str,
        limit: int = 2,
        *,
        min_count: int = MIN_SUPPORT,
        min_confidence: float = MIN_CONFIDENCE,
    ) -> list[tuple[str, float]]:
        """The files that most often change with `path` and still exist: (path, confidence), strongest
        first. Confidence = shared commits / commits touching `path`; for one `path` it orders exactly
        as the shared count does, so ties fall back to the neighbour's path."""
        rel = self._rel(path)
        if rel is None or rel.endswith("/") or limit <= 0:
            return []
        changes, rows = self.tables.neighbours(rel, max(1, min_count), limit)
        return [(p, n / changes) for p, n in rows if n / changes >= min_confidence]

    def fan_in(self, path: str) -> int:
        """How many files import `path` (0 for unknown paths and directories)."""
        rel = self._rel(path)
        return 0 if rel is None or rel.endswith("/") else self.tables.fan_in(rel)

    def _rel(self, path: str) -> str | None:
        path = path.replace("\\", "/")
        if os.path.isabs(path):
            try:
                path = Path(path).resolve().relative_to(self.root.resolve()).as_posix()
            except ValueError:
                return None
        is_dir = path.endswith("/")
        norm = posixpath.normpath(path)
        if norm.startswith("../") or norm == "..":
            return None
        if norm == ".":
            return None
        return norm + "/" if is_dir else norm

    # -- refresh --------------------------------------------------------------------------------

    def refresh(self, progress: Progress | None = None, *, checkpoint: int | None = None) -> RefreshReport:
        """Bring files, renames, co-change and fan-in up to date with the work tree and HEAD
        (`tether.repo.refresh`). A long read of history is saved every `checkpoint` commits (default
        `CHECKPOINT_COMMITS`): a refresh that is killed continues from its last save. `progress` is called
        as (stage, done, total or None) for a terminal to show."""
        from tether.repo.refresh import CHECKPOINT_COMMITS, Refresh

        self._state = None
        try:
            return Refresh(self.root, self.tables, progress, checkpoint or CHECKPOINT_COMMITS).run()
        finally:
            self._state = None

    def built(self) -> bool:
        """Whether a refresh ever completed here (under the current counting rules): a first build
        stopped part way is not built yet (the next hook starts it again, and it continues)."""
        state = self._cached_state()
        return state.get("version") == REPOMAP_VERSION and state.get("partial_scratch") != "1"

    def fresh(self, seconds: float) -> bool:
        """Whether a refresh finished less than `seconds` ago at today's HEAD (a hook then skips its own:
        the resident process refreshes every few seconds between requests). Reads `.git`, no git process."""
        state = self.tables.state()
        try:
            age = (time.time_ns() - int(state.get("refreshed_at_ns", "0"))) / 1e9
        except ValueError:
            return False
        if state.get("version") != REPOMAP_VERSION or not 0 <= age < seconds:
            return False
        if state.get("mode") == "dir":
            return True
        stamp = head_stamp(self.root)
        if stamp is not None and state.get("head_stamp"):
            return stamp == state["head_stamp"]  # read from .git: no git process
        probe = git_probe(self.root)
        return (probe[1] if probe is not None else None) == state.get("last_commit")

    def size(self) -> int | None:
        """How many files the last refresh listed (None before one recorded it): what a refresh with
        nothing new costs grows with it."""
        try:
            return int(self.tables.state().get("files_count") or "")
        except ValueError:
            return None

    def backlog(self) -> int:
        """The commits a refresh would read now: 0 when history is up to date, every commit of HEAD when
        it would build from scratch (never built, other rules or root, history rewritten), what is left
        of a read stopped part way. A few quick git calls (`rev-list --count` over 20k commits: ~15 ms)."""
        from tether.repo.watermark import continue_from

        probe = git_probe(self.root)
        if probe is None or probe[1] is None:
            return 0
        prefix, head = probe[0], probe[1]
        base = {"mode": "git", "prefix": prefix, "version": REPOMAP_VERSION}
        mark = continue_from(self.root, self.tables.state(), base, head)
        if mark is not None and mark.tips == {head}:
            return 0
        revs = mark.revs(head) if mark is not None else [head]
        counted = git(self.root, "rev-list", "--count", "--no-merges", *revs, "--", check=False)
        return int(counted.stdout.strip() or 0) if counted.returncode == 0 else 0
