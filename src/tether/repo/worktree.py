"""The work tree as git sees it: the files that exist now, and the index's blob id of each file git finds
unmodified (DESIGN §3: what lets a refresh after a pull read only what the pull changed).

Listing it takes two `git ls-files`: `--stage` (paths and blob ids, quick) and `--modified` (which files
differ from the index, slower right after a checkout or pull: git re-hashes the files it wrote in the
index's last second, its racy entries). `WorkTreeListing` hands out the first while the second runs, so a
scan can read the files whose blob changed meanwhile.

    listing = WorkTreeListing(root)     # both started; `paths` and `staged` are there
    tree = listing.result()             # the `WorkTree`, once `--modified` is in
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tether.repo.git import TETHER_DIR, finish, git, split_z, start

_STAGE = re.compile(r"[0-7]{6} ([0-9a-f]{40}|[0-9a-f]{64}) ([0-3])\t")
_MODIFIED = ("ls-files", "-z", "--modified")


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
