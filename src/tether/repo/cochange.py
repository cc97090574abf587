"""Co-change counts (DESIGN §3): every non-merge commit touching at most `MAX_COMMIT_FILES` files counts
once for each file it touches and once for each pair of them, in path ids, following renames.

    counts = CoChangeCounts(store.path_ids())
    for commit in commits:
        counts.add(commit)
    store.apply_cochange(counts.result())

`present_after` tells what such a write leaves of the present files' rows (a rename moves a row).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain, combinations

from tether.repo.git import Commit
from tether.store.base import CoChangeWrite

# Commits touching more files are sweeps (reformatting, license headers, vendoring, mass renames):
# they would pair every file with every other one, drowning the real couplings, and cost n² pairs.
MAX_COMMIT_FILES = 30
# Bump when the counting rules change: an index built under other rules is rebuilt at the next refresh.
REPOMAP_VERSION = "1"


@dataclass
class CoChangeCounts:
    """Co-change counts accumulated over commits, in path ids, on top of what the index holds."""

    ids: dict[str, int]
    next_id: int = 0
    commits: int = 0
    write: CoChangeWrite = field(default_factory=lambda: CoChangeWrite({}, set(), set(), {}, {}))

    def __post_init__(self) -> None:
        self.next_id = max(self.ids.values(), default=0) + 1
        # The files each counted commit touched, as sorted ids: counted at `result`, in C (a Counter
        # updated per commit costs a first build a tenth of its time in `update`'s own checks).
        self._touched: list[tuple[int, ...]] = []

    def _id(self, path: str) -> int:
        ident = self.ids.get(path)
        if ident is None:
            ident = self.ids[path] = self.next_id
            self.next_id += 1
            self.write.new_ids.add(ident)
            self.write.paths[ident] = path
        return ident

    def add(self, commit: Commit) -> None:
        self.commits += 1
        renames = [(ch.old, ch.path) for ch in commit.changes if ch.old is not None]
        if renames:
            # One commit's renames are simultaneous: take every old path first, then place the new ones.
            moving = [(self.ids.pop(old, None), new) for old, new in renames]
            for ident, new in moving:
                if ident is None:
                    continue
                taken = self.ids.get(new)
                if taken is not None and taken != ident:
                    self.write.dropped.add(taken)  # the path now belongs to the moved file
                self.ids[new] = ident
                self.write.paths[ident] = new
        if commit.size > MAX_COMMIT_FILES or not commit.changes:
            return
        ids = self.ids
        self._touched.append(tuple(sorted({ids.get(ch.path) or self._id(ch.path) for ch in commit.changes})))

    def result(self) -> CoChangeWrite:
        touched = self._touched
        self.write.changes = dict(Counter(chain.from_iterable(touched)))
        # (a, b) with a < b: each commit's ids are sorted.
        self.write.pairs = dict(
            Counter(chain.from_iterable(combinations(t, 2) for t in touched if len(t) > 1))
        )
        return self.write


def present_after(
    counted: Mapping[str, int], ids: Mapping[str, int], write: CoChangeWrite
) -> dict[str, int] | None:
    """The present paths and their fan-in once `write` is applied over rows that held `counted` (present
    path -> fan-in) with the path ids `ids`: a moved id takes its row (present, fan-in) to its new path, a
    dropped one loses it. None when a present path has no id (then read what is stored)."""
    if not write.dropped and all(i in write.new_ids for i in write.paths):
        return dict(counted)  # no row moved (new ids are rows of paths not present yet)
    path_of = {i: p for p, i in ids.items()}
    moved = {i: p for i, p in write.paths.items() if i not in write.new_ids}
    out: dict[str, int] = {}
    for path, n in counted.items():
        ident = ids.get(path)
        if ident is None:
            return None
        if ident not in write.dropped:
            out[moved.get(ident, path_of[ident])] = n
    return out
