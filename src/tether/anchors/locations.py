"""Where an edit lands (`Location`), in the syntax `tether recall --file` takes, and how far an anchor is from it.

>>> parse_location("src/billing/charge.py:120")
Location(path='src/billing/charge.py', lines=(120, 120), symbol='', text='')
>>> gap((10, 12), (14, 20)), gap((30, 31), (14, 20)), gap((15, 15), (14, 20))
((2, 'above'), (10, 'below'), (0, 'at'))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tether.errors import ValidationError
from tether.model.anchor import parse_spec
from tether.model.text import STOPWORDS, identifier_parts


@dataclass(frozen=True)
class Location:
    """A place in a file being worked on: lines (1-based, inclusive) and/or a symbol, with the edit's new text."""

    path: str
    lines: tuple[int, int] | None = None
    symbol: str = ""
    text: str = ""  # what the edit writes there: identifiers named in it are evidence too

    @property
    def placed(self) -> bool:
        return self.lines is not None or bool(self.symbol)


def parse_location(spec: str) -> Location:
    """`path`, `path:123`, `path:120-140` or `path::Symbol`."""
    path, symbol, lines = parse_spec(spec)
    return Location(path, lines=lines, symbol=symbol)


def is_location(spec: str) -> bool:
    """Whether `spec` says more than a path (`path:123`, `path::Symbol`)."""
    try:
        return parse_location(spec).placed
    except ValidationError:
        return False


def split_places(specs: Sequence[str], is_file: Callable[[str], bool]) -> tuple[list[str], list[Location]]:
    """Files being touched, and the places named with them: `path:123` and `path::Symbol` (unless a file of
    that very name exists) are places; the rest are paths.

    >>> split_places(["a.py", "b.py:3", "c.py::run"], lambda p: False)[1][0].lines
    (3, 3)
    """
    paths: list[str] = []
    places: list[Location] = []
    for raw in specs:
        try:
            place = None if is_file(raw) else parse_location(raw)
        except ValidationError:
            place = None
        if place is not None and place.placed:
            places.append(place)
        else:
            paths.append(raw)
    return paths, places


def gap(anchor: tuple[int, int], edit: tuple[int, int]) -> tuple[int, str]:
    """Lines between an anchor and an edit, and on which side of the edit the anchor lies (at, above, below).

    An anchor right above the edit (its last line, then the edit) is 1 away."""
    first, last = anchor
    start, end = edit
    if last < start:
        return start - last, "above"
    if first > end:
        return first - end, "below"
    return 0, "at"


_IDENT_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]{3,}")
# An identifier says something when it is not a plain word: snake_case, camelCase, CamelCase with two humps,
# CONSTANT_CASE. `Server` or `value` would match half the memories of a repository.
_DISTINCT_RE = re.compile(r"[a-z0-9][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]|^[A-Z][a-z0-9]+[A-Z]")


def identifiers(text: str, limit: int = 40) -> list[str]:
    """The distinctive identifiers of `text` (snake_case, camelCase, CamelCase), in order, unique.

    >>> identifiers("if retry_count > MaxRetries: raise ModelRetry(value)")
    ['retry_count', 'MaxRetries', 'ModelRetry']
    """
    out: dict[str, None] = {}
    for word in _IDENT_RE.findall(text):
        if _DISTINCT_RE.search(word.strip("_$")):
            out.setdefault(word, None)
            if len(out) >= limit:
                break
    return list(out)


def distinctive(name: str) -> bool:
    """Whether a definition's name says something in a memory's text: an identifier `identifiers` keeps, or
    a capitalized type name (`Charger`); a lowercase word (`refund`) reads as prose.

    >>> [distinctive(n) for n in ("Charger", "refund", "charge_card", "Go")]
    [True, False, True, False]
    """
    return len(name) >= 4 and (bool(_DISTINCT_RE.search(name.strip("_$"))) or name[0].isupper())


def names(text: str, identifier: str) -> bool:
    """Whether `text` names `identifier` as a whole word (case-sensitive: `ModelRetry`, not `modelretry`)."""
    return re.search(rf"(?<![\w$]){re.escape(identifier)}(?![\w$])", text) is not None


_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def words_of(text: str) -> set[str]:
    """Every word and identifier part of `text`, lowercased, stopwords left out (what an edit is about).

    >>> sorted(words_of("retry_count = MaxRetries"))
    ['count', 'max', 'maxretries', 'retries', 'retry', 'retry_count']
    """
    out: set[str] = set()
    for word in _WORD_RE.findall(text):
        lower = word.lower()
        if len(lower) >= 2 and lower not in STOPWORDS:
            out.add(lower)
        parts = identifier_parts(word)
        if len(parts) > 1:
            out.update(p for p in parts if len(p) >= 3 and p not in STOPWORDS)
    return out
