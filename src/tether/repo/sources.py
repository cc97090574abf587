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
    staged = listing.staged
    waiting = []
    for path in listing.paths:
        old = cached.get(path)
        if old is None and language_of(path) is None:
            continue  # (a cached parse is of a source file: the language depends on the path alone)
        blob = staged.get(path)
        if blob is None:  # untracked or in conflict: no blob, whatever git compares
            scan.one(path, None)
        elif (old is not None and old.digest == blob) or not scan.one(path, blob, wait=True):
            waiting.append(path)  # (its parse's blob: trusted once git finds the file clean)
    tree = listing.result()
    clean = tree.clean
    specs = scan.specs
    for path in waiting:
        blob = clean.get(path)
        old = cached.get(path)
        if old is not None and old.digest == blob:
            specs[path] = old.specs  # what `one` does first, without the call: most files of a pull
        else:
            scan.one(path, blob)
    scan.changed.update(cached.keys() - specs.keys())
    return tree, specs, scan.rows, scan.changed


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
            # os.open and fstat, not open() and stat(): a third of the cost, for the ~800 files of a pull.
            fd = os.open(full, os.O_RDONLY)
        except OSError:
            return True
        try:
            st = os.fstat(fd)
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
            data = _read_all(fd, st.st_size)
        except OSError:
            return True
        finally:
            os.close(fd)
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


def _read_all(fd: int, size: int) -> bytes:
    """The file's content: one read for a file of the `size` fstat gave, more for one that grew since."""
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data  # a short read of a regular file is its end
    parts = [data]
    while chunk := os.read(fd, 1 << 16):
        parts.append(chunk)
    return b"".join(parts)
