"""Which source files a refresh reads for their import lines, and reading them (DESIGN §3, fan-in).

The repo map caches each file's import specs with the stat and the git blob id of the content they were
parsed from. In git, a file that `git ls-files` finds unmodified with the blob its parse was made from is
neither stat-ed nor read: after a pull, the scan reads what the pull (or a local edit) changed, whatever
the history in between (a merge's own changes, a rebase) and however many files did not change.

    >>> tree = WorkTree(["a.py"], {"a.py": blob_id(b"import b")}, "sha1")
    >>> cached = {"a.py": CachedImports(0, 8, blob_id(b"import b"), ("b",))}
    >>> scan_sources(Path("/nonexistent"), tree, cached)[1]  # trusted: not read
    {'a.py': ('b',)}
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Protocol

from tether.repo.git import blob_id
from tether.repo.imports import language_of, parse_imports
from tether.repo.worktree import WorkTree
from tether.store.base import CachedImports

# Larger "source" files are generated or vendored; their imports don't count.
_MAX_SOURCE_BYTES = 2_000_000


class Listing(Protocol):
    """A work tree listing as the scan takes it: `WorkTreeListing` (the paths and staged blobs at once, the
    `WorkTree` when git has compared the files with its index), or a `WorkTree` already finished."""

    @property
    def paths(self) -> Collection[str]: ...

    @property
    def staged(self) -> Mapping[str, str]: ...

    @property
    def object_format(self) -> str: ...

    def result(self) -> WorkTree: ...


def scan_sources(
    root: Path, listing: Listing, cached: dict[str, CachedImports]
) -> tuple[WorkTree, dict[str, tuple[str, ...]], dict[str, CachedImports], set[str]]:
    """Import specs of every source file of the work tree, reading only files whose content may have changed.

    A cached parse is trusted without touching the file when git finds the file unmodified and its blob
    is the one the parse was made from; otherwise (untracked, locally modified, or no git) when the
    file's mtime and size are the parse's; else the file is read, and its blob id tells a touched file
    from a changed one. Whatever git's `--modified` says, a file whose staged blob is not its parse's is
    read unless its stat is the parse's: those are read while git still compares (after a pull, all the
    reading); only the rest wait for it. Returns (the `WorkTree`, specs by path, cache rows to write, the
    paths whose specs changed, appeared or vanished: what fan-in re-resolves). No store access: the repo
    map runs it in a thread."""
    scan = _Scan(str(root), cached, listing.object_format)
    waiting = []
    for path in listing.paths:
        if language_of(path) is None:
            continue
        blob = listing.staged.get(path)
        if blob is None:  # untracked or in conflict: no blob, whatever git compares
            scan.one(path, None)
        elif not scan.one(path, blob, wait=True):
            waiting.append(path)
    tree = listing.result()
    for path in waiting:
        scan.one(path, tree.clean.get(path))
    scan.changed.update(cached.keys() - scan.specs.keys())
    return tree, scan.specs, scan.rows, scan.changed


class _Scan:
    """The specs and cache rows found so far."""

    def __init__(self, base: str, cached: dict[str, CachedImports], object_format: str) -> None:
        self.base = base
        self.cached = cached
        self.object_format = object_format
        self.specs: dict[str, tuple[str, ...]] = {}
        self.rows: dict[str, CachedImports] = {}
        self.changed: set[str] = set()

    def one(self, path: str, blob: str | None, wait: bool = False) -> bool:
        """Scan `path`, whose clean blob is `blob` (None: not clean). With `wait`, `blob` is only staged
        (git has not said whether the file is clean): returns False, scanning nothing, where that matters."""
        old = self.cached.get(path)
        if old is not None and blob is not None and old.digest == blob:
            if wait:
                return False
            self.specs[path] = old.specs
            return True
        full = os.path.join(self.base, path)
        try:
            st = os.stat(full)
        except OSError:
            return True
        # Not for a known blob: one other than the parse's is new content whatever the stat says (a
        # pull within the file system's timestamp granularity can keep mtime and size).
        if old is not None and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size:
            if wait:
                return False
            if blob is None:
                self.specs[path] = old.specs
                return True
        if st.st_size > _MAX_SOURCE_BYTES:
            return True
        try:
            with open(full, "rb") as fh:
                data = fh.read()
        except OSError:
            return True
        digest = blob_id(data, self.object_format)
        if old is not None and old.digest == digest:
            parsed = old.specs  # touched, not changed
        else:
            parsed = tuple(parse_imports(path, data.decode("utf-8", errors="replace")))
            if old is None or old.specs != parsed:
                self.changed.add(path)
        self.specs[path] = parsed
        self.rows[path] = CachedImports(st.st_mtime_ns, st.st_size, digest, parsed)
        return True
