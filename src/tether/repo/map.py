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
History is processed once: the map remembers the last commit it read and reads only `last..HEAD`; if
that commit is no longer an ancestor of HEAD (rebase, force-push, reset), history is read again from
scratch and no renames are reported, since the old ones may not have happened on the new history.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from tether.errors import TetherError
from tether.repo.cochange import CoChangeCounts
from tether.repo.git import (
    Commit,
    HistoryRestarted,
    WorkTree,
    collapse_renames,
    git,
    head_stamp,
    list_files,
    list_work_tree,
    stream_commits,
    stream_without_renames,
)
from tether.repo.git import probe as git_probe
from tether.repo.imports import fan_in as compute_fan_in
from tether.repo.sources import scan_sources
from tether.store.base import CachedImports, RepoMapStore

# Minimum shared commits for a neighbour: one shared commit is often an accident (a drive-by fix in
# the same commit); two independent ones are a pattern.
MIN_SUPPORT = 2
# Minimum confidence: a file that changed 100 times and once or twice with b is not coupled to b.
MIN_CONFIDENCE = 0.1
# Bump when the counting rules change: an index built under other rules is rebuilt at the next refresh.
REPOMAP_VERSION = "1"
PROGRESS_EVERY = 1000  # commits between progress calls: a terminal line updates a few times a second

# (stage, done, total or None): "history" per `PROGRESS_EVERY` commits read, then "writing".
Progress = Callable[[str, int, int | None], None]
T = TypeVar("T")


@dataclass(frozen=True)
class RefreshReport:
    renames: list[tuple[str, str]]  # (old, new), chains collapsed; apply as one mapping, not in sequence
    new_commits: int  # non-merge commits read from git by this refresh
    rebuilt: bool  # co-change was computed from scratch (first build, rewritten history, new rules)
    files: int  # files that exist now


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

    def refresh(self, progress: Progress | None = None) -> RefreshReport:
        """Bring files, renames, co-change and fan-in up to date with the work tree and HEAD.

        History is one streamed `git log`, counted as it arrives, while a thread reads the import lines of
        the source files whose content changed (in git, those whose blob, as `git ls-files` tells, is not
        the one their cached parse was made from: a pull reads what it changed, not every file); nothing
        is written until both are done, and then in one short transaction (hooks writing their session
        state wait for milliseconds, not for the build).
        A build killed part way has written nothing: the next refresh starts it again. `progress` is
        called as (stage, done, total or None) for a terminal to show."""
        started = time.time_ns()
        stamp = head_stamp(self.root)
        probe = git_probe(self.root)
        in_git = probe is not None
        prefix, head = probe if probe is not None else ("", None)
        cached = self.tables.cached_imports()
        # The file list and the import scan in a thread, while this one reads history: git ls-files and the
        # scan of the changed files overlap the git log they do not depend on.
        sources = _InThread(self._list_and_parse, in_git, cached)

        for _ in range(3):  # optimistic: another process may refresh between our read and our write
            state = self.tables.state()
            rebuild = (
                state.get("mode") != ("git" if in_git else "dir")
                or state.get("prefix", "") != prefix
                or state.get("version") != REPOMAP_VERSION
            )
            last = state.get("last_commit")
            rev_range: str | None = None
            if in_git and head is not None and (rebuild or last != head):
                if not rebuild and last is not None and self._is_ancestor(last, head):
                    rev_range = f"{last}..{head}"
                else:
                    rebuild = True
                    rev_range = head
            elif in_git and head is None and last is not None:
                rebuild = True  # the branch lost all its commits
            ids = self.tables.path_ids()
            commits, history = self._read_history(rev_range, prefix, ids, progress)
            files, specs, import_rows, import_changed = sources.result()
            file_set = set(files)
            if progress is not None:
                progress("writing", 0, None)

            with self.tables.write():
                if self.tables.state().get("last_commit") != last:
                    continue
                if rebuild:
                    self.tables.clear_history()
                now = self.tables.path_ids()
                if now != ids:  # another refresh listed new files meanwhile: count again on today's ids
                    history = CoChangeCounts(now)
                    for commit in commits:
                        history.add(commit)
                write = history.result()
                self.tables.apply_cochange(write)
                if rebuild or write.paths or self._files_changed(state, files):
                    self.tables.set_files(files)
                self.tables.put_imports(import_rows)
                # The rows read at the start (a row another refresh added meanwhile is for a file it
                # listed, and is checked by mtime, size and digest before any use).
                self.tables.drop_imports(set(cached) - set(specs))
                if rebuild or import_changed or write.paths or self._files_changed(state, files):
                    self._write_fan_in(file_set, specs)
                self.tables.set_state(
                    {
                        "mode": "git" if in_git else "dir",
                        "prefix": prefix,
                        "version": REPOMAP_VERSION,
                        "last_commit": head,
                        "files_digest": _digest(files),
                        "refreshed_at_ns": str(started),
                        "head_stamp": stamp,
                    }
                )
            self._state = None
            renames = [] if rebuild else collapse_renames(commits)
            return RefreshReport(renames, len(commits), rebuild, len(files))
        raise TetherError("The repo map kept changing under this refresh (other sessions refreshing); retry.")

    def _read_history(
        self, rev_range: str | None, prefix: str, ids: dict[str, int], progress: Progress | None
    ) -> tuple[list[Commit], CoChangeCounts]:
        """The commits of `rev_range` (none for None), counted on top of `ids` as they stream in."""
        if rev_range is None:
            return [], CoChangeCounts(dict(ids))
        streams = (stream_commits, stream_without_renames)
        for stream in streams:
            commits: list[Commit] = []
            history = CoChangeCounts(dict(ids))
            try:
                for commit in stream(self.root, rev_range, prefix):
                    commits.append(commit)
                    history.add(commit)
                    if progress is not None and len(commits) % PROGRESS_EVERY == 0:
                        progress("history", len(commits), None)
            except HistoryRestarted:
                continue  # rename detection failed part way: read it all again without
            return commits, history
        raise AssertionError("unreachable: the stream without renames never restarts")

    def built(self) -> bool:
        """Whether a refresh ever completed here (under the current counting rules)."""
        return self._cached_state().get("version") == REPOMAP_VERSION

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

    def backlog(self) -> int:
        """The commits a refresh would read now: 0 when history is up to date, every commit of HEAD when
        it would build from scratch (never built, other rules or root, history rewritten). A few quick
        git calls (`rev-list --count` over 20k commits: ~15 ms)."""
        state = self.tables.state()
        probe = git_probe(self.root)
        if probe is None:
            return 0
        prefix, head = probe
        last = state.get("last_commit")
        if head is None:
            return 0
        scratch = (
            state.get("version") != REPOMAP_VERSION
            or state.get("mode") != "git"
            or state.get("prefix", "") != prefix
            or last is None
        )
        if not scratch and last == head:
            return 0
        if not scratch and last is not None and self._is_ancestor(last, head):
            rev_range = f"{last}..{head}"
        else:
            rev_range = head
        counted = git(self.root, "rev-list", "--count", "--no-merges", rev_range, "--", check=False)
        return int(counted.stdout.strip() or 0) if counted.returncode == 0 else 0

    def _is_ancestor(self, old: str, head: str) -> bool:
        return git(self.root, "merge-base", "--is-ancestor", old, head, check=False).returncode == 0

    @staticmethod
    def _files_changed(state: dict[str, str], files: list[str]) -> bool:
        return state.get("files_digest") != _digest(files)

    def _write_fan_in(self, files: set[str], specs: dict[str, tuple[str, ...]]) -> None:
        counts = compute_fan_in(files, specs)
        stored = self.tables.fan_ins()
        diff = {p: counts.get(p, 0) for p in stored if stored[p] != counts.get(p, 0)}
        self.tables.set_fan_ins(diff)

    def _list_and_parse(
        self, in_git: bool, cached: dict[str, CachedImports]
    ) -> tuple[list[str], dict[str, tuple[str, ...]], dict[str, CachedImports], bool]:
        """The files that exist now, and `scan_sources` of them (in a thread: no store access)."""
        tree = list_work_tree(self.root) if in_git else WorkTree(list_files(self.root, False), {}, "sha1")
        return (tree.files, *scan_sources(self.root, tree, cached))


class _InThread(Generic[T]):
    """`fn(*args)` run in a daemon thread; `result()` waits for it and returns or raises what it did.

    The import scan reads files (the GIL is released while it waits on the disk) while the main thread
    waits on `git log`'s pipe: on a large history the two overlap instead of adding up."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...]) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set when no error was


def _digest(files: list[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for f in files:
        h.update(f.encode("utf-8", errors="surrogateescape") + b"\0")
    return h.hexdigest()
