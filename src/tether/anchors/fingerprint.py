"""Fingerprints of anchored lines: what lets an anchor find its block again after the code above it changed.

A fingerprint is the first 12 hex of sha256 over the anchored lines with runs of whitespace collapsed (and
leading/trailing whitespace dropped): re-indenting a block or re-aligning it keeps its fingerprint, editing
a word of it does not. Lines are found again by sliding a window of the same height over the file.

>>> lines = ["def f():", "    # never retry", "    return 1"]
>>> fingerprint(lines, 2, 2) == fingerprint(["", "  #   never retry  "], 2, 2)
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

FINGERPRINT_CHARS = 12
# How far from its old place a block is looked for window by window before the whole file is hashed.
NEAR_LINES = 60


def normalize(line: str) -> str:
    return " ".join(line.split())


def digest(normalized: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(normalized).encode("utf-8", "surrogateescape")).hexdigest()[
        :FINGERPRINT_CHARS
    ]


def fingerprint(lines: Sequence[str], first: int, last: int) -> str:
    """The fingerprint of lines `first..last` (1-based, inclusive) of `lines` (raw, unnormalized)."""
    return digest([normalize(line) for line in lines[first - 1 : last]])


class Windows:
    """Every window of a file's lines by height, hashed on first use: the finder of moved blocks."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._normalized: list[str] | None = None
        self._by_height: dict[int, dict[str, list[int]]] = {}

    @property
    def normalized(self) -> list[str]:
        """Every line normalized, made on first use: an anchor found where it was needs only its own lines."""
        if self._normalized is None:
            self._normalized = [normalize(line) for line in self.lines]
        return self._normalized

    def at(self, first: int, last: int) -> str:
        """The fingerprint of lines `first..last`, "" when they run past the end of the file."""
        if first < 1 or last > len(self.lines) or last < first:
            return ""
        return digest([normalize(line) for line in self.lines[first - 1 : last]])

    def find(self, fingerprint: str, height: int, near: int) -> tuple[int, int] | None:
        """The `height`-line block with this fingerprint closest to line `near`, or None.

        Blocks are looked for outwards from `near` first (code added or removed above an anchor moves it
        a little); only past `NEAR_LINES` on both sides is every window of the file hashed."""
        count = len(self.normalized)
        if height < 1 or height > count:
            return None
        if height not in self._by_height:
            lines = self.normalized
            last = count - height + 1  # the last possible first line
            for step in range(NEAR_LINES + 1):
                for start in (near - step, near + step) if step else (near,):
                    if 1 <= start <= last and digest(lines[start - 1 : start - 1 + height]) == fingerprint:
                        return start, start + height - 1
            if last <= 2 * NEAR_LINES + 1:
                return None  # every window was looked at
        table = self._by_height.get(height)
        if table is None:
            table = self._by_height[height] = {}
            lines = self.normalized
            for start in range(len(lines) - height + 1):
                table.setdefault(digest(lines[start : start + height]), []).append(start + 1)
        starts = table.get(fingerprint)
        if not starts:
            return None
        best = min(starts, key=lambda s: (abs(s - near), s))
        return best, best + height - 1
