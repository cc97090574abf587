"""The work tree as git sees it: the files that exist now, and the index's blob id of each file git finds
unmodified (DESIGN §3: what lets a refresh after a pull read only what the pull changed).

Listing it takes two `git ls-files`: `--stage` (paths and blob ids, quick) and `--modified` (which files
differ from the index, slower right after a checkout or pull: git re-hashes the files it wrote in the
index's last second, its racy entries). `WorkTreeListing` hands out the first while the second runs, so a
scan can read the files whose blob changed meanwhile.

    listing = WorkTreeListing(root)     # both started; `paths` and `staged` are there
    tree = listing.result()             # the `WorkTree`, once `--modified` is in

`in_progress` names the work in progress: the files changed since HEAD, latest first, or in a clean tree the files
of the branch's own commits, for a session's first prompt, before the agent has touched anything.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tether.errors import TetherError
from tether.repo.git import TETHER_DIR, finish, git, split_z, start

if TYPE_CHECKING:
    import subprocess

_STAGE = re.compile(r"[0-7]{6} ([0-9a-f]{40}|[0-9a-f]{64}) ([0-3])\t")
_MODIFIED = ("ls-files", "-z", "--modified")
# Changed since HEAD (staged or not, deletions left out) and untracked (a new directory as one "dir/" entry,
# not listed file by file), both relative to the root and inside it, tether's notes left out (not stat'ed:
# thousands of notes would cost more than the code).
_OUTSIDE_NOTES = ("--", ".", f":(exclude){TETHER_DIR}")
_CHANGED = (
    "diff",
    "--name-only",
    "-z",
    "--relative",
    "--no-renames",
    "--diff-filter=d",
    "HEAD",
    *_OUTSIDE_NOTES,
)
_UNTRACKED = (
    "ls-files",
    "-z",
    "--others",
    "--exclude-standard",
    f"--exclude={TETHER_DIR}",  # an exclude pattern is not walked into; a pathspec's exclusion still is
    "--directory",
    "--no-empty-directory",
    *_OUTSIDE_NOTES,
)
# A session's first prompt takes the latest few (as many as the session's own touched files it passes later);
# more changed files than a task of the quality evaluation may touch is a sweep (a rename, a reformat, a
# dependency bump), which says nothing about what the session is about.
IN_PROGRESS_MOST = 5
IN_PROGRESS_OVER = 30
# What a session's first prompt waits for git at most: a tree of some thousands of files answers in tens of
# ms (benchmarks/bench_first_prompt.py); a giant one, or a machine under load, goes without.
IN_PROGRESS_WAIT = 1.0


@dataclass(frozen=True)
class WorkTree:
    """The files that exist now (as `list_files` lists them) and what git knows of their content."""

    files: list[str]
    # Tracked path -> the index's blob id, for files git finds unmodified in the work tree (by the stat it
    # keeps in the index, comparing content when the stat moved). A file whose cached parse was made from
    # that blob needs no stat and no read: after a pull, only what the pull or a local edit changed is read.
    clean: dict[str, str]
    object_format: str  # "sha1" or "sha256": how `blob_id` hashes content to compare with `clean`

    # A listing already finished (outside git, or listed at once): what `WorkTreeListing` offers early.

    @property
    def paths(self) -> list[str]:
        return self.files

    @property
    def staged(self) -> dict[str, str]:
        return self.clean

    def result(self) -> WorkTree:
        return self


class WorkTreeListing:
    """`list_work_tree` in two steps. At once: `paths` (tracked, deleted ones included, and untracked not
    ignored; `.tether/` left out) and `staged` (the index's blob id of every tracked path without a
    conflict, modified or not). `result()` waits for `--modified` and gives the `WorkTree`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._modified = start(root, _MODIFIED)
        self.paths: set[str] = set()
        self.staged: dict[str, str] = {}
        try:
            listing = git(root, "ls-files", "-z", "--stage", "--cached", "--others", "--exclude-standard")
        except BaseException:
            self._modified.kill()
            self._modified.communicate()
            raise
        for entry in split_z(listing.stdout):
            m = _STAGE.match(entry)
            path = entry if m is None else entry[m.end() :]  # untracked: --stage prints only the path
            if path.startswith(TETHER_DIR):
                continue
            self.paths.add(path)
            if m is not None and m.group(2) == "0":  # stages 1-3: a conflict, no one blob is the file
                self.staged[path] = m.group(1)
        sha256 = any(len(oid) == 64 for oid in self.staged.values())
        self.object_format = "sha256" if sha256 else "sha1"

    def result(self) -> WorkTree:
        modified = set(split_z(finish(self.root, _MODIFIED, self._modified).stdout))
        files = sorted(self.paths - {p for p in modified if not os.path.lexists(self.root / p)})
        clean = {p: oid for p, oid in self.staged.items() if p not in modified}
        return WorkTree(files, clean, self.object_format)


def list_work_tree(root: Path) -> WorkTree:
    """`list_files` in git, with the blob ids of the files whose work-tree content is the index's."""
    return WorkTreeListing(root).result()


def in_progress(
    root: Path, most: int = IN_PROGRESS_MOST, over: int = IN_PROGRESS_OVER, wait: float = IN_PROGRESS_WAIT
) -> list[str]:
    """The work tree's changes since HEAD: files modified, staged, added or untracked (not ignored; `.tether/`
    left out), relative to `root`, the latest modified first, at most `most`; none when more than `over`
    changed, and none outside git, when git cannot say, or when it takes more than `wait` seconds (a hint
    for a prompt, never an error nor a wait). A clean tree's work in progress is its branch's own commits
    (`_committed`)."""
    import subprocess

    started: list[subprocess.Popen[bytes]] = []
    paths: set[str] = set()
    deadline = time.monotonic() + wait
    try:
        started.extend(start(root, args) for args in (_CHANGED, _UNTRACKED))
        for proc in started:
            # Without commits there is no HEAD to diff (None): the untracked files remain.
            out = _output(proc, deadline) or b""
            paths.update(p for p in split_z(out) if not p.endswith("/"))  # "dir/": a new directory
    except (TetherError, subprocess.TimeoutExpired):
        return []
    finally:
        _stop(started)
    if not paths:
        return _committed(root, most, over, deadline)
    if len(paths) > over:
        return []
    changed: list[tuple[int, str]] = []
    for path in paths:
        try:
            changed.append((os.stat(root / path).st_mtime_ns, path))
        except OSError:
            continue  # gone since git listed it
    return [path for _, path in sorted(changed, key=lambda c: (-c[0], c[1]))[:most]]


# Where a branch's own commits start: it left the remote's default branch, else a local main or master.
_TRUNKS = (
    "refs/remotes/origin/HEAD",
    "refs/heads/main",
    "refs/heads/master",
    "refs/remotes/origin/main",
    "refs/remotes/origin/master",
)
# A commit's header in `_committed`'s log (a byte no commit id holds, and no path git writes unquoted starts with).
_COMMIT_MARK = "\x01"


def _committed(root: Path, most: int, over: int, deadline: float) -> list[str]:
    """A clean tree's work in progress: the files the branch's own commits changed since it left the trunk
    (`_TRUNKS`; on the trunk itself, its commits the remote does not have yet), the latest commit's first, at
    most `most`, still in the tree, `.tether/` left out. The latest commits are read until `most` files are
    found; none when one of those commits changed more than `over` files (a sweep), on the trunk at the
    remote's commit, or when git cannot say within the `deadline` (`time.monotonic()`)."""
    import subprocess

    def run(*args: str) -> bytes:
        proc = start(root, args)
        try:
            return _output(proc, deadline) or b""
        finally:
            _stop([proc])

    try:
        refs = run("for-each-ref", "--format=%(refname)", *_TRUNKS).decode(errors="replace").split()
        trunk = next((ref for ref in _TRUNKS if ref in refs), None)
        base = run("merge-base", "HEAD", trunk).decode(errors="replace").strip() if trunk else ""
        if not base:
            return []
        log = run(
            "log",
            "-z",
            f"--format={_COMMIT_MARK}%H",
            "--name-only",
            "--no-renames",
            "--diff-filter=d",
            "--relative",
            f"{base}..HEAD",
            *_OUTSIDE_NOTES,
        )
    except (TetherError, subprocess.TimeoutExpired):
        return []
    found: dict[str, None] = {}
    commit: set[str] = set()
    for entry in split_z(log):
        if entry.startswith(_COMMIT_MARK):
            if len(found) >= most:
                break  # the latest commits hold enough
            commit = set()
            continue
        path = entry.removeprefix("\n")  # the first path follows its header's line end
        commit.add(path)
        if len(commit) > over:
            return []  # one commit changed more than a task touches: a sweep says nothing of the work
        if path and os.path.lexists(root / path):
            found.setdefault(path, None)
    return list(found)[:most]


def _output(proc: subprocess.Popen[bytes], deadline: float) -> bytes | None:
    """What a git process printed, None when it failed; `subprocess.TimeoutExpired` once `deadline`
    (`time.monotonic()`) has passed."""
    out, _ = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
    return out if proc.returncode == 0 else None


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Kill the processes still running (past a deadline, or left by an error) and reap them."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
