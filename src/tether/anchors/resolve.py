"""Resolving anchors against a file as it is now, and making them from `--at path::Symbol` / `--at path:120-140`.

Order (the issue's, and why): an anchor is first looked for **where it was** (its fingerprint at its lines:
nothing to do, no parse); a symbol anchor then **by its symbol** (the definition's name survives edits of
its body), and when the name is gone, by its fingerprint (the function was renamed, its body kept); a line
range **by its fingerprint**, the copy nearest its old place first (the block moved, or code above it
changed), then, when its lines were edited away, **widened to the definition that held it**. When all of
that fails the anchor is **lost**: kept in the note, so the code coming back (a revert) finds it again,
while the memory is about its file only.

>>> view = FileView("a.py", "def f():\\n    return 1\\n")
>>> make(view, "f", None).lines
(1, 2)
>>> moved = FileView("a.py", "import os\\n\\n\\ndef f():\\n    return 1\\n")
>>> resolve(make(view, "f", None), moved).anchor.lines
(4, 5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tether.anchors.fingerprint import Windows
from tether.anchors.symbols import Definition, definitions, enclosing, language_of
from tether.errors import ValidationError
from tether.model.anchor import Anchor, parse_spec
from tether.model.memory import normalize_path

# Files larger than this are generated or vendored: anchors in them are kept as they are, never re-resolved.
MAX_FILE_BYTES = 2_000_000
# How many of a file's symbols an error names (`--at` with a misspelt symbol).
_SHOWN_SYMBOLS = 20


class FileView:
    """One file's text as anchors see it: its lines, fingerprint windows and (parsed on first use) definitions."""

    def __init__(self, path: str, text: str | None) -> None:
        self.path = path
        self.exists = text is not None
        self.lines = text.splitlines() if text is not None else []
        self.windows = Windows(self.lines)
        self._text = text or ""
        self._definitions: list[Definition] | None = None
        self._parsed = False
        self._resolved: dict[Anchor, Resolution] = {}

    @classmethod
    def read(cls, root: Path, path: str) -> FileView:
        """The file `path` (repo-relative) under `root`; a missing, unreadable or huge file has no lines."""
        try:
            full = root / path
            if full.stat().st_size > MAX_FILE_BYTES:
                return cls(path, None)
            return cls(path, full.read_text(encoding="utf-8", errors="surrogateescape"))
        except OSError:
            return cls(path, None)

    def resolved(self, anchor: Anchor) -> Resolution:
        """`resolve(anchor, self)`, worked out once per anchor for this view: a recall's channels that read
        the same file (the edit's place, the place words) ask alike."""
        if anchor not in self._resolved:
            self._resolved[anchor] = resolve(anchor, self)
        return self._resolved[anchor]

    def definitions(self) -> list[Definition] | None:
        """Definitions in source order; None for a language without a grammar here."""
        if not self._parsed:
            self._parsed = True
            self._definitions = definitions(self.path, self._text) if self.exists else None
        return self._definitions

    def symbol(self, name: str, near: int | None = None) -> Definition | None:
        """The definition `name` names (qualified, or the tail of a longer qualified name), nearest `near`."""
        found = self.named(name)
        if not found:
            return None
        if near is None:
            return found[0]
        return min(found, key=lambda d: (abs(d.start - near), d.start))

    def named(self, name: str) -> list[Definition]:
        defs = self.definitions() or []
        exact = [d for d in defs if d.name == name]
        return exact or [d for d in defs if d.name.endswith("." + name)]

    def innermost(self, first: int, last: int) -> Definition | None:
        holding = enclosing(self.definitions() or [], first, last)
        return holding[-1] if holding else None


@dataclass(frozen=True)
class Resolution:
    """Where an anchor is now. `how`: same | symbol | moved | renamed | widened | fingerprinted | lost."""

    anchor: Anchor
    how: str

    @property
    def lost(self) -> bool:
        return self.anchor.lost


def resolve(anchor: Anchor, view: FileView) -> Resolution:
    """Find `anchor` in the file as it is now (see the module's docstring for the order)."""
    if not view.exists:
        return Resolution(replace(anchor, lost=True), "lost")
    lines = anchor.lines
    if lines is not None:
        here = view.windows.at(*lines)
        if here and here == anchor.fingerprint:
            return Resolution(replace(anchor, lost=False), "same")
        if here and not anchor.fingerprint and not anchor.symbol:
            return Resolution(replace(anchor, fingerprint=here, lost=False), "fingerprinted")
    near = lines[0] if lines is not None else None
    if anchor.symbol:
        found = view.symbol(anchor.symbol, near)
        if found is not None:
            return Resolution(_on(anchor, view, found), "symbol")
        block = _block(anchor, view)
        if block is not None:
            renamed = next((d for d in view.definitions() or [] if (d.start, d.end) == block), None)
            symbol = renamed.name if renamed is not None else anchor.symbol
            return Resolution(replace(anchor, symbol=symbol, lines=block, lost=False), "renamed")
        return Resolution(replace(anchor, lost=True), "lost")
    block = _block(anchor, view)
    if block is not None:
        holder = view.innermost(*block) if language_of(view.path) else None
        within = (
            holder.name if holder is not None else ("" if view.definitions() is not None else anchor.within)
        )
        return Resolution(replace(anchor, lines=block, within=within, lost=False), "moved")
    if anchor.within:
        found = view.symbol(anchor.within, near)
        if found is not None:
            widened = Anchor(anchor.path, symbol=found.name)
            return Resolution(_on(widened, view, found), "widened")
    return Resolution(replace(anchor, lost=True), "lost")


def make(view: FileView, symbol: str, lines: tuple[int, int] | None) -> Anchor:
    """A new anchor on `symbol` or `lines` of the file in `view`. Raises `ValidationError` naming what is wrong:
    a missing file, an unknown or ambiguous symbol (with the symbols the file has), lines past its end."""
    path = view.path
    if not view.exists:
        raise ValidationError(
            f"cannot anchor to {path}: no such file in the work tree (or it is not readable)"
        )
    if symbol:
        defs = view.definitions()
        if defs is None:
            raise ValidationError(_no_symbols(path))
        found = view.named(symbol)
        if not found:
            names = list(dict.fromkeys(d.name for d in defs))
            listed = ", ".join(names[:_SHOWN_SYMBOLS]) + (
                f" ({len(names)} in all)" if len(names) > _SHOWN_SYMBOLS else ""
            )
            raise ValidationError(
                f"no symbol {symbol!r} in {path}: "
                + (f"it defines {listed}" if names else "it defines no functions, classes or types")
                + f"; or anchor to lines with {path}:START-END"
            )
        if len({d.name for d in found}) > 1:
            raise ValidationError(
                f"{symbol!r} is ambiguous in {path}: {', '.join(sorted({d.name for d in found}))}; "
                "give the qualified name"
            )
        return _on(Anchor(path, symbol=found[0].name), view, found[0])
    if lines is None:
        raise ValidationError(f"anchor on {path} needs a symbol or lines: {path}::NAME or {path}:START-END")
    first, last = lines
    if last > len(view.lines):
        raise ValidationError(f"{path} has {len(view.lines)} lines: lines {first}-{last} run past its end")
    holder = view.innermost(first, last)
    return Anchor(
        path,
        lines=lines,
        within=holder.name if holder is not None else "",
        fingerprint=view.windows.at(first, last),
    )


def anchors_at(specs: Sequence[str], root: Path | None, cwd: Path) -> tuple[Anchor, ...]:
    """Anchors for `--at` specs (`path::Symbol`, `path:120-140`, paths as the user typed them, from `cwd`)."""
    if root is None:
        raise ValidationError("anchors point into a project's files: anchor project or session memory")
    out: list[Anchor] = []
    for spec in specs:
        path, symbol, lines = parse_spec(spec)
        relative = normalize_path(path, root, cwd)
        if not symbol and lines is None:
            raise ValidationError(
                f"--at {spec!r} names no place: use {relative}::SYMBOL or {relative}:START-END "
                "(--file ties a memory to a whole file)"
            )
        out.append(make(FileView.read(root, relative), symbol, lines))
    return tuple(dict.fromkeys(out))


def _on(anchor: Anchor, view: FileView, definition: Definition) -> Anchor:
    span = (definition.start, definition.end)
    return replace(
        anchor, symbol=definition.name, lines=span, fingerprint=view.windows.at(*span), within="", lost=False
    )


def _block(anchor: Anchor, view: FileView) -> tuple[int, int] | None:
    """The anchored lines found again by their fingerprint, the copy nearest the old place first."""
    if anchor.lines is None or not anchor.fingerprint:
        return None
    first, last = anchor.lines
    return view.windows.find(anchor.fingerprint, last - first + 1, first)


def _no_symbols(path: str) -> str:
    if language_of(path) is None:
        return (
            f"cannot read symbols of {path}: symbols are known for Python, JavaScript, TypeScript, Go and "
            f"Rust; anchor to lines instead ({path}:START-END)"
        )
    return (
        f"cannot read symbols of {path}: the tree-sitter grammar is not installed (reinstall tether: "
        f"tree-sitter and its grammars are dependencies); anchor to lines instead ({path}:START-END)"
    )
