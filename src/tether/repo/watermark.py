"""How far the repo map has read history: the tips of what it has counted (DESIGN §3).

History is read in topological order, parents first, so whatever a build has read when it stops is closed
under ancestry: every commit read has all its ancestors read too. Such a set is named exactly by its tips
(the commits read that no commit read descends from), and what is left is `git log HEAD ^tip ...`. A
finished refresh has one tip, HEAD; a build stopped part way has one per line of history open where it
stopped (one on a linear history, a few where branches run side by side). Merges are streamed for this
(they are never counted): after a merge its parents are no longer tips.

    >>> mark = Watermark.of(["a1"])
    >>> mark.advance("b2", ("a1",))
    >>> mark.revs("c3")
    ['c3', '^b2']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tether.repo.git import finish, start

# A stop is saved only while the tips are this few: each becomes a `^tip` argument of the next `git log`
# and an ancestry check of the next refresh. Real histories have a handful open at once; an octopus-heavy
# one past this saves at its next narrow point.
MAX_TIPS = 64


@dataclass
class Watermark:
    """The tips of the commits read so far (none: nothing read)."""

    tips: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, tips: Iterable[str]) -> Watermark:
        return cls({t for t in tips if t})

    @classmethod
    def decode(cls, text: str | None) -> Watermark:
        """From `encode`'s text (space-separated ids); None or "" is nothing read."""
        return cls.of((text or "").split())

    def encode(self) -> str:
        return " ".join(sorted(self.tips))

    def advance(self, sha: str, parents: Iterable[str]) -> None:
        """`sha` was read (its parents before it): it is a tip, and its parents no longer are."""
        self.tips.difference_update(parents)
        self.tips.add(sha)

    def revs(self, head: str) -> list[str]:
        """The revisions left to read up to `head`: `[head, "^tip", ...]`."""
        return [head, *(f"^{t}" for t in sorted(self.tips))]

    def savable(self) -> bool:
        return len(self.tips) <= MAX_TIPS

    def copy(self) -> Watermark:
        return Watermark(set(self.tips))


def continue_from(
    root: Path, state: dict[str, str], base: dict[str, str], head: str | None
) -> Watermark | None:
    """What of HEAD's history the map in `state` has read already (nothing: an empty watermark), or None
    when it must be read again from nothing: built under other rules (`base`: mode, prefix, version) or
    from a history HEAD no longer contains (rebase, force-push, reset; a branch that lost its commits)."""
    mark = recorded(state, base, head)
    if mark is None or ancestry(root, mark, head)():
        return mark
    return None


def recorded(state: dict[str, str], base: dict[str, str], head: str | None) -> Watermark | None:
    """`continue_from` without asking git whether HEAD still contains the watermark (`ancestry`)."""
    if any(state.get(key, "") != value for key, value in base.items()):
        return None
    mark = Watermark.decode(state.get("partial", state.get("last_commit")))
    if head is None or not mark.tips:
        return None if mark.tips or head is not None else mark
    return mark


def ancestry(root: Path, mark: Watermark, head: str | None) -> Callable[[], bool]:
    """Whether HEAD's history contains every tip of `mark`: one `git merge-base --is-ancestor` per tip,
    started now and waited for when the answer is asked (a refresh reads history meanwhile)."""
    args = [("merge-base", "--is-ancestor", t, head) for t in mark.tips if head and t != head]
    checks = [(a, start(root, a)) for a in args]
    return lambda: all(finish(root, a, proc, check=False).returncode == 0 for a, proc in checks)
