"""Which source files a refresh reads for their import lines, and reading them (DESIGN §3, fan-in).

The repo map caches each file's import specs with the stat and the git blob id of the content they were
parsed from. In git, a file that `git ls-files` finds unmodified with the blob its parse was made from is
neither stat-ed nor read: after a pull, the scan reads what the pull (or a local edit) changed, whatever
the history in between (a merge's own changes, a rebase) and however many files did not change.

    >>> tree = WorkTree(["a.py"], {"a.py": blob_id(b"import b")}, "sha1")
    >>> cached = {"a.py": CachedImports(0, 8, blob_id(b"import b"), ("b",))}
    >>> scan_sources(Path("/nonexistent"), tree, cached)[0]  # trusted: not read
    {'a.py': ('b',)}
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.repo.git import WorkTree, blob_id
from tether.repo.imports import language_of, parse_imports
from tether.store.base import CachedImports

# Larger "source" files are generated or vendored; their imports don't count.
_MAX_SOURCE_BYTES = 2_000_000


def scan_sources(
    root: Path, tree: WorkTree, cached: dict[str, CachedImports]
) -> tuple[dict[str, tuple[str, ...]], dict[str, CachedImports], set[str]]:
    """Import specs of every source file of `tree`, reading only files whose content may have changed.

    A cached parse is trusted without touching the file when git finds the file unmodified and its blob
    is the one the parse was made from; otherwise (untracked, locally modified, or no git) when the
    file's mtime and size are the parse's; else the file is read, and its blob id tells a touched file
    from a changed one. Returns (specs by path, cache rows to write, the paths whose specs changed, appeared
    or vanished: what fan-in re-resolves). No store access: the repo map runs it in a thread."""
    specs: dict[str, tuple[str, ...]] = {}
    rows: dict[str, CachedImports] = {}
    changed: set[str] = set()
    base = str(root)
    for path in tree.files:
        if language_of(path) is None:
            continue
        old = cached.get(path)
        blob = tree.clean.get(path)
        if old is not None and blob is not None and old.digest == blob:
            specs[path] = old.specs
            continue
        full = os.path.join(base, path)
        try:
            st = os.stat(full)
        except OSError:
            continue
        # Not for a known blob: one other than the parse's is new content whatever the stat says (a
        # pull within the file system's timestamp granularity can keep mtime and size).
        if old is not None and blob is None and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size:
            specs[path] = old.specs
            continue
        if st.st_size > _MAX_SOURCE_BYTES:
            continue
        try:
            with open(full, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        digest = blob_id(data, tree.object_format)
        if old is not None and old.digest == digest:
            parsed = old.specs  # touched, not changed
        else:
            parsed = tuple(parse_imports(path, data.decode("utf-8", errors="replace")))
            if old is None or old.specs != parsed:
                changed.add(path)
        specs[path] = parsed
        rows[path] = CachedImports(st.st_mtime_ns, st.st_size, digest, parsed)
    changed.update(cached.keys() - specs.keys())
    return specs, rows, changed
