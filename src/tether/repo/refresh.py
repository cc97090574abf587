"""Bringing the repo map up to date (DESIGN §3): files, renames, co-change and fan-in, from git and the work tree.

History is one streamed `git log`, counted as it arrives, while a thread lists the files and reads the import
lines of those whose content changed (`tether.repo.sources`). A long read (a first build, a pull of
thousands of commits) is saved every `CHECKPOINT_COMMITS` commits with how far it got (its watermark,
`tether.repo.watermark`): a build that is killed continues from its last save, not from nothing. Files and
fan-in are written with the last part, in one short transaction (hooks writing their session state wait
for milliseconds, not for the build).

    report = Refresh(root, tables).run()        # what `RepoMap.refresh` does

The state it keeps (`RepoMapStore.state()`): `last_commit` when history is read up to it; while a read is
stopped part way, `partial` (the watermark's tips) instead, with `partial_scratch` when that read started from
nothing (its renames are not reported: they may not have happened on this history) and `partial_renames`
(the renames read so far, collapsed, reported when the read finishes).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.repo.cochange import REPOMAP_VERSION, CoChangeCounts, present_after
from tether.repo.fanin import FanInChange, fan_in
from tether.repo.git import (
    Change,
    Commit,
    HistoryStream,
    collapse_renames,
    head_stamp,
    list_files,
    stream_commits,
)
from tether.repo.git import probe as git_probe
from tether.repo.inthread import InThread
from tether.repo.sources import scan_sources
from tether.repo.watermark import Watermark, ancestry, recorded
from tether.repo.window import WindowRecorder, plan_window
from tether.repo.worktree import WorkTree, WorkTreeListing
from tether.store.base import CachedImports, RepoMapStore

PROGRESS_EVERY = 1000  # commits between progress calls: a terminal line updates a few times a second
# Commits between saves of a long read: on the 20k-commit benchmark history a quarter of a second of work,
# what a killed build loses at most. Saves cost (a pair met in several parts is written once per part):
# every 2,000 commits made that build 1.07x one written once. Hooks read at most 200 commits, so they
# never save part way.
CHECKPOINT_COMMITS = 5000

# (stage, done, total or None): "history" per `PROGRESS_EVERY` commits read, then "writing".
Progress = Callable[[str, int, int | None], None]


@dataclass(frozen=True)
class RefreshReport:
    renames: list[tuple[str, str]]  # (old, new), chains collapsed; apply as one mapping, not in sequence
    new_commits: int  # non-merge commits read from git by this refresh
    rebuilt: bool  # co-change was computed from scratch (first build, rewritten history, new rules)
    files: int  # files that exist now


class _Moved(Exception):
    """Another refresh wrote the map since this one read its state: plan again from what it wrote."""


@dataclass
class _Plan:
    """What one attempt reads, from the state it found."""

    seen: tuple[str | None, str | None]  # (last_commit, partial) as read: unchanged at every save, or _Moved
    mark: Watermark  # what is read already
    revs: list[str] | None  # what is left to read (None: nothing)
    clear: bool  # forget the stored history at the first write (a read from nothing)
    scratch: bool  # history counted from nothing, by this read or the stopped one it continues
    resumed: bool  # continues a read stopped part way
    renames: list[tuple[str, str]] = field(default_factory=list)  # read and saved so far (not scratch)
    saved: int = 0  # parts saved by this attempt
    # Whether HEAD's history still contains `mark`, told by the log itself: a tip is in HEAD's history
    # exactly when it is HEAD or the parent of a commit `HEAD ^tip...` lists (tips never descend from one
    # another). The tips not seen yet as a parent; confirmed before the first write, None once it is.
    pending: set[str] | None = None
    recorder: WindowRecorder = field(default_factory=WindowRecorder)  # HEAD's last commits streamed


class _Rewritten(Exception):
    """HEAD's history no longer contains what the map read (rebase, force-push, reset): read it all."""


@dataclass
class _Part:
    """The commits read since the last save, counted on the path ids they started from."""

    ids: dict[str, int]
    mark: Watermark
    commits: list[Commit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.counts = CoChangeCounts(dict(self.ids))

    def add(self, commit: Commit) -> None:
        self.commits.append(commit)
        self.counts.add(commit)

    def counted_on(self, ids: dict[str, int]) -> CoChangeCounts:
        """The counts on `ids` (today's, when another refresh listed new files meanwhile)."""
        if ids == self.ids:
            return self.counts
        counts = CoChangeCounts(ids)
        for commit in self.commits:
            counts.add(commit)
        return counts


class Refresh:
    """One refresh of the map in `tables` for the checkout at `root` (see the module's docstring)."""

    def __init__(
        self,
        root: Path,
        tables: RepoMapStore,
        progress: Progress | None = None,
        checkpoint: int = CHECKPOINT_COMMITS,
    ) -> None:
        self.root = root
        self.tables = tables
        self.progress = progress
        self.checkpoint = max(1, checkpoint)

    def run(self) -> RefreshReport:
        self._started, self._stamp = time.time_ns(), head_stamp(self.root)
        probe = git_probe(self.root)
        in_git = probe is not None
        prefix, head = probe if probe is not None else ("", None)
        self._base = {"mode": "git" if in_git else "dir", "prefix": prefix, "version": REPOMAP_VERSION}
        # History first: its git log starts now, and the rest of the setup overlaps git's walk of it.
        state = self.tables.state()
        plan = self._plan(state, in_git, head, False)
        history = self._history(plan, head, prefix)
        try:
            return self._run(head, prefix, state, plan, history)
        finally:
            if history is not None:
                history.close()  # (read to its end unless something failed)

    def _run(
        self, head: str | None, prefix: str, state: dict[str, str], plan: _Plan, history: HistoryStream | None
    ) -> RefreshReport:
        in_git = self._base["mode"] == "git"
        # The file list (git ls-files) from now, and the scan of the changed files once the cached parses
        # are read, in threads while this one reads history: they overlap the git log they do not need.
        listing = InThread(self._list, in_git)
        # What the stored fan-in was counted from: the files and specs read here, unless another refresh
        # wrote since `basis` was read (checked again in the write) or the rows are not the ones counted
        # (a lost import cache: the basis names how many there were).
        basis = state.get("fan_in_basis")
        cached = self.tables.cached_imports()
        sources = InThread(self._scan, listing, cached)
        counted = self.tables.fan_ins()
        if basis is not None and basis.partition(":")[0] != str(len(cached)):
            basis = None
        rewritten = False
        for attempt in range(3):  # optimistic: another process may refresh between our read and our write
            if attempt:
                state = self.tables.state()
                plan = self._plan(state, in_git, head, rewritten)
                history = self._history(plan, head, prefix)
            try:
                part, read = self._read(plan, head, history, sources)
                self._confirm(plan, head, finished=True)
                window = plan_window(state, head, plan.recorder) if in_git and head else None
                if self.progress is not None:
                    self.progress("writing", 0, None)
                files, specs, import_rows, changed = sources.result()
                digest = _digest(files)
                known = None if plan.scratch or plan.resumed or plan.saved else basis
                counts = _counted(files, specs, changed, known, cached, counted)
                with self.tables.write():
                    now = self._check(plan)
                    # The basis still stored: no other refresh wrote files or counts since it was read (each
                    # such write sets a new one), and none wrote history (`_check`), so the path ids, the
                    # present files and their counts are the ones read at the start, not read again.
                    still = known is not None and now.get("fan_in_basis") == known
                    if known is not None and not still:
                        counts = fan_in(set(files), specs)  # another refresh counted since `basis` was read
                    write = self._apply(plan, part, part.ids if still else None)
                    # The present files and their counts as stored now (renames carry both to the new path).
                    present = present_after(counted, part.ids, write) if still else None
                    touched = plan.scratch or plan.resumed or plan.saved > 0 or bool(write.paths)
                    # (the digest stored now: one another refresh wrote since `state` was read is of its list)
                    touched = touched or now.get("files_digest") != digest
                    if touched:
                        self.tables.set_files(files, None if present is None else present.keys())
                    self.tables.put_imports(import_rows)
                    # The rows read at the start (a row another refresh added meanwhile is for a file it
                    # listed, and is checked by its blob or stat before any use).
                    self.tables.drop_imports(set(cached) - set(specs))
                    recounted = touched or bool(changed)
                    if recounted:
                        # What `set_files` left stored: the files that stay keep their counts.
                        stored = None if present is None else {p: present.get(p, 0) for p in files}
                        self._write_fan_in(counts, stored)
                    renames = [] if plan.scratch else _collapse(plan.renames, part.commits)
                    if window is not None:
                        window.apply(self.tables)
                    self.tables.set_state(
                        {
                            **self._base,
                            "last_commit": head,
                            "files_digest": digest,
                            "files_count": str(len(files)),
                            "refreshed_at_ns": str(self._started),
                            "head_stamp": self._stamp,
                            "partial": None,
                            "partial_scratch": None,
                            "partial_renames": None,
                            # A new token whenever the counts are written: what the next refresh's count
                            # starts from. (Counts not written stand on the token they have.)
                            **({"fan_in_basis": f"{len(specs)}:{os.urandom(8).hex()}"} if recounted else {}),
                        }
                    )
            except _Moved:
                continue
            except _Rewritten:
                rewritten = True
                continue
            return RefreshReport(renames, read, plan.scratch, len(files))
        raise TetherError("The repo map kept changing under this refresh (other sessions refreshing); retry.")

    # -- planning ---------------------------------------------------------------------------------

    def _plan(self, state: dict[str, str], in_git: bool, head: str | None, rewritten: bool) -> _Plan:
        seen = (state.get("last_commit"), state.get("partial"))
        resumed = "partial" in state
        mark = None if rewritten else recorded(state, self._base, head)
        if mark is None:  # other rules or root, history rewritten: read it all again
            revs = [head] if in_git and head is not None else None
            return _Plan(seen, Watermark(), revs, clear=True, scratch=True, resumed=resumed)
        revs = None if head is None or mark.tips == {head} else mark.revs(head)
        scratch = resumed and state.get("partial_scratch") == "1"
        plan = _Plan(seen, mark, revs, clear=False, scratch=scratch, resumed=resumed)
        plan.pending = {t for t in mark.tips if t != head}
        if resumed and not scratch:
            plan.renames = [(str(a), str(b)) for a, b in json.loads(state.get("partial_renames") or "[]")]
        return plan

    # -- reading, with saves ------------------------------------------------------------------------

    def _history(self, plan: _Plan, head: str | None, prefix: str) -> HistoryStream | None:
        """What `plan` has left to read, its git log started; None when nothing is."""
        if plan.revs is None or head is None:
            return None
        return stream_commits(self.root, plan.mark.revs(head), prefix)

    def _read(
        self, plan: _Plan, head: str | None, history: HistoryStream | None, sources: InThread[Any]
    ) -> tuple[_Part, int]:
        """Read `history` (what `plan` has left), saving every `checkpoint` commits. Returns the part not
        saved yet and the commits read in all."""
        part = _Part(self.tables.path_ids(), plan.mark.copy())
        if history is None or head is None:
            return part, 0
        read = 0
        with history:
            for commit in history:
                part.mark.advance(commit.sha, commit.parents)
                plan.recorder.add(commit)
                if plan.pending:
                    plan.pending.difference_update(commit.parents)
                if commit.merge:
                    continue
                part.add(commit)
                read += 1
                if self.progress is not None and read % PROGRESS_EVERY == 0:
                    self.progress("history", read, None)
                if len(part.commits) >= self.checkpoint and part.mark.savable():
                    self._save(plan, part, sources, head)
                    part = _Part(self.tables.path_ids(), part.mark.copy())
        return part, read

    def _save(self, plan: _Plan, part: _Part, sources: InThread[Any], head: str) -> None:
        """Write `part`'s counts and how far the read got, in one transaction."""
        self._confirm(plan, head)
        renames = [] if plan.scratch else _collapse(plan.renames, part.commits)
        with self.tables.write():
            self._check(plan)
            self._apply(plan, part)
            if plan.saved == 0 and sources.done():
                # The import scan's rows too, once: a continued build then reads no file again.
                self.tables.put_imports(sources.result()[2])
            mark = part.mark.encode()
            self.tables.set_state(
                {
                    **self._base,
                    "last_commit": None,
                    "head_stamp": None,
                    "partial": mark,
                    "partial_scratch": "1" if plan.scratch else None,
                    "partial_renames": json.dumps(renames) if renames else None,
                    "fan_in_basis": None,  # import rows written without the counts: not what they count
                }
            )
        plan.seen, plan.renames, plan.clear = (None, mark), renames, False
        plan.saved += 1

    def _confirm(self, plan: _Plan, head: str | None, finished: bool = False) -> None:
        """Raise `_Rewritten` unless HEAD's history contains what the map read. Once the log is read to
        its end, what it showed tells; a save part way through a long read asks git for the tips not seen
        yet (`git merge-base --is-ancestor`, one per tip)."""
        pending, plan.pending = plan.pending, None
        if not pending:
            return
        if finished or not ancestry(self.root, Watermark(pending), head)():
            raise _Rewritten()

    def _check(self, plan: _Plan) -> dict[str, str]:
        """The state, unless another refresh wrote history since `plan` read it (then `_Moved`)."""
        state = self.tables.state()
        if (state.get("last_commit"), state.get("partial")) != plan.seen:
            raise _Moved()
        return state

    def _apply(self, plan: _Plan, part: _Part, ids: dict[str, int] | None = None) -> Any:
        """Write `part`'s co-change on the path ids stored now (`ids` when the caller knows them)."""
        if plan.clear:
            self.tables.clear_history()
        write = part.counted_on(self.tables.path_ids() if ids is None else ids).result()
        self.tables.apply_cochange(write)
        return write

    # -- files and fan-in ----------------------------------------------------------------------------

    def _write_fan_in(self, counts: dict[str, int], stored: Mapping[str, int] | None = None) -> None:
        """Write the counts that differ from the stored ones (read now unless the caller knows them)."""
        if stored is None:
            stored = self.tables.fan_ins()
        diff = {p: counts.get(p, 0) for p in stored if stored[p] != counts.get(p, 0)}
        self.tables.set_fan_ins(diff)

    def _list(self, in_git: bool) -> WorkTreeListing | WorkTree:
        """The files that exist now (in a thread, as `_scan`: no store access)."""
        return WorkTreeListing(self.root) if in_git else WorkTree(list_files(self.root, False), {}, "sha1")

    def _scan(
        self, listing: InThread[WorkTreeListing | WorkTree], cached: dict[str, CachedImports]
    ) -> tuple[list[str], dict[str, tuple[str, ...]], dict[str, CachedImports], set[str]]:
        """The files that exist now, and `scan_sources` of them."""
        tree, specs, rows, changed = scan_sources(self.root, listing.result(), cached)
        return tree.files, specs, rows, changed


def _counted(
    files: list[str],
    specs: dict[str, tuple[str, ...]],
    changed: set[str],
    basis: str | None,
    cached: dict[str, CachedImports],
    counted: dict[str, int],
) -> dict[str, int]:
    """What `fan_in` counts for `files` and `specs`: `counted` brought up to date (`FanInChange`) when a
    `basis` says it was counted from the `cached` specs and the files it lists, else counted anew."""
    if basis is not None:
        old_specs = {path: row.specs for path, row in cached.items()}
        change = FanInChange.between(counted.keys(), old_specs, files, specs, changed)
        if change is not None:
            return change.applied(counted)
    return fan_in(set(files), specs)


def _collapse(renames: list[tuple[str, str]], commits: list[Commit]) -> list[tuple[str, str]]:
    """`collapse_renames` over the renames collapsed so far (as one commit of simultaneous moves) and then
    `commits`: the same pairs as over all the commits they came from."""
    earlier = Commit("", tuple(Change("R", new, old) for old, new in renames), len(renames))
    return collapse_renames([earlier, *commits])


def _digest(files: list[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for f in files:
        h.update(f.encode("utf-8", errors="surrogateescape") + b"\0")
    return h.hexdigest()
