"""An anchor: the place inside a file a memory is about (DESIGN §1), and its form in a note's frontmatter.

An anchor is a **symbol** (`charge_card`, `Charger.charge_card`: the definition, found again by name) or a
**line range** (`120-140`), each with a fingerprint of the anchored lines so the place can be found again
when code above it changes or the block moves. A line range inside a definition remembers it (`within`):
when the lines themselves are edited away, the anchor widens to that definition instead of dying. An
anchor whose code is gone is kept, `lost`, and the memory is about its file only until the code returns.

Plain data, no I/O: resolving an anchor against a file is `tether.anchors`.

>>> parse_spec("src/billing/charge.py::Charger.charge_card")
('src/billing/charge.py', 'Charger.charge_card', None)
>>> parse_spec("src/billing/charge.py:120-140")
('src/billing/charge.py', '', (120, 140))
>>> Anchor("src/billing/charge.py", symbol="charge_card", lines=(12, 30)).label()
'charge_card()'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from tether.errors import ValidationError
from tether.model.display import first_control, first_line_break
from tether.model.limits import PATH_MAX

# `path::Symbol` (qualified with dots: `Class.method`), `path:120-140` or `path:120`.
_SYMBOL_SPEC_RE = re.compile(r"^(?P<path>.+?)::(?P<symbol>[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)$")
_LINES_SPEC_RE = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_LINES_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*$")
_FINGERPRINT_RE = re.compile(r"^[0-9a-f]{12}$")
# The frontmatter keys of one anchor, in the order they are written.
KEYS = ("path", "symbol", "lines", "within", "fingerprint", "lost")


@dataclass(frozen=True)
class Anchor:
    """One place in one file. `lines` are 1-based and inclusive, as of the last time the anchor was resolved."""

    path: str
    symbol: str = ""  # the anchor is this definition (qualified: `Class.method`)
    lines: tuple[int, int] | None = None
    within: str = ""  # for a line range: the definition holding it, the range's fallback
    fingerprint: str = ""  # of the anchored lines, whitespace-normalized (`tether.anchors.fingerprint`)
    lost: bool = False  # the code is gone: the memory is about its file only

    @property
    def name(self) -> str:
        """The definition this anchor is on or in ("" for a bare line range)."""
        return self.symbol or self.within

    def label(self) -> str:
        """How the place is named to a person or an agent: `charge_card()`, `lines 120-140`."""
        if self.name:
            return f"{self.name}()"
        if self.lines is None:
            return self.path
        first, last = self.lines
        return f"line {first}" if first == last else f"lines {first}-{last}"

    def spec(self) -> str:
        """The `--at` form: `path::Symbol` or `path:120-140`."""
        if self.symbol:
            return f"{self.path}::{self.symbol}"
        if self.lines is not None:
            return f"{self.path}:{self.lines[0]}-{self.lines[1]}"
        return self.path

    def moved(self, path: str) -> Anchor:
        return replace(self, path=path)

    def to_front(self) -> dict[str, Any]:
        """The frontmatter form: only the keys that say something, lines as `"120-140"`."""
        front: dict[str, Any] = {"path": self.path}
        if self.symbol:
            front["symbol"] = self.symbol
        if self.lines is not None:
            front["lines"] = f"{self.lines[0]}-{self.lines[1]}"
        if self.within:
            front["within"] = self.within
        if self.fingerprint:
            front["fingerprint"] = self.fingerprint
        if self.lost:
            front["lost"] = True
        return front

    @classmethod
    def from_front(cls, data: object) -> Anchor:
        """Read one anchor of a note's frontmatter. Raises `ValidationError` naming the bad key."""
        if isinstance(data, str):
            path, symbol, lines = parse_spec(data)
            return check(cls(path, symbol=symbol, lines=lines))
        if not isinstance(data, dict):
            raise ValidationError("each anchor must be a mapping (path, symbol, lines, fingerprint)")
        unknown = sorted(set(map(str, data)) - set(KEYS))
        if unknown:
            raise ValidationError(f"unknown anchor key(s) {', '.join(unknown)}: use {', '.join(KEYS)}")
        lost = data.get("lost", False)
        if not isinstance(lost, bool):
            raise ValidationError(f"anchor lost must be true or false, not {lost!r}")
        return check(
            cls(
                path=str(data.get("path") or ""),
                symbol=str(data.get("symbol") or ""),
                lines=parse_lines(data["lines"]) if data.get("lines") not in (None, "") else None,
                within=str(data.get("within") or ""),
                fingerprint=str(data.get("fingerprint") or ""),
                lost=lost,
            )
        )


def parse_lines(value: object) -> tuple[int, int]:
    """`"120-140"`, `"120"` or `120` as (first, last). Raises `ValidationError`."""
    match = _LINES_RE.match(str(value))
    if not match or isinstance(value, bool):
        raise ValidationError(f"anchor lines {value!r} must be a line or a range, like 120 or 120-140")
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if first < 1 or last < first:
        raise ValidationError(f"anchor lines {value!r}: lines start at 1 and a range runs forward (120-140)")
    return first, last


def parse_spec(spec: str) -> tuple[str, str, tuple[int, int] | None]:
    """`path::Symbol`, `path:120-140` or `path:120` as (path, symbol, lines); a bare path has neither.

    >>> parse_spec("lib/a.go:7")
    ('lib/a.go', '', (7, 7))
    """
    raw = spec.strip()
    found = _SYMBOL_SPEC_RE.match(raw)
    if found:
        return found.group("path"), found.group("symbol"), None
    if "::" in raw:
        raise ValidationError(
            f"anchor {spec!r}: after '::' give a symbol name, like {raw.split('::')[0]}::charge_card"
        )
    found = _LINES_SPEC_RE.match(raw)
    if found:
        return (
            found.group("path"),
            "",
            parse_lines(f"{found.group('start')}-{found.group('end') or found.group('start')}"),
        )
    return raw, "", None


def check(anchor: Anchor) -> Anchor:
    """Validate one anchor's fields (the path's shape is checked with the memory's files)."""
    path = anchor.path
    if not path or path.endswith("/"):
        raise ValidationError(f"anchor path {path!r} must name a file, relative to the repository root")
    if path.startswith("/") or path.startswith("../") or "/../" in path or path == "..":
        raise ValidationError(f"anchor path {path!r} must be relative to the repository root")
    for name, text in (("path", path), ("symbol", anchor.symbol), ("within", anchor.within)):
        if len(text) > PATH_MAX:
            raise ValidationError(f"anchor {name} of {len(text)} characters, the limit is {PATH_MAX}")
        if first_line_break(text) or first_control(text) or any("\ud800" <= ch <= "\udfff" for ch in text):
            # shown in injected lines and notes: it must not forge a line or hide characters
            raise ValidationError(f"anchor {name} {text!r} holds a line break or a control character")
    if not anchor.symbol and anchor.lines is None:
        raise ValidationError(f"anchor on {path} needs a symbol or lines (path::Symbol or path:120-140)")
    if anchor.fingerprint and not _FINGERPRINT_RE.match(anchor.fingerprint):
        raise ValidationError(f"anchor fingerprint {anchor.fingerprint!r} must be 12 hex characters")
    return anchor
