"""Wikilinks: the `[[target]]` and `[[target|shown text]]` links in a memory's details, and the key they are
matched by (`link_key`: case, spacing and `#heading` aside, as Obsidian resolves `[[Note title]]`).

>>> targets("See [[Deploy Checklist#Steps|the list]] and [[3a73c0de]]."), link_key("Deploy  Checklist#Steps")
(('Deploy Checklist#Steps', '3a73c0de'), 'deploy checklist')
"""

from __future__ import annotations

import re

__all__ = ["keys", "link_key", "targets"]

_WIKILINK_RE = re.compile(r"\[\[([^\[\]\n|]+?)(?:\|[^\[\]\n]*)?\]\]")


def targets(details: str) -> tuple[str, ...]:
    """The link targets in `details`, as written, in order, without repeats."""
    seen: dict[str, None] = {}
    for match in _WIKILINK_RE.finditer(details):
        seen.setdefault(match.group(1).strip(), None)
    return tuple(seen)


def link_key(target: str) -> str:
    """A wikilink target as links are matched: its `#heading` dropped, case and spacing aside (Obsidian
    resolves `[[Deploy checklist]]` and `[[deploy  Checklist]]` to one note)."""
    return " ".join(target.partition("#")[0].casefold().split())


def keys(link_targets: tuple[str, ...]) -> tuple[str, ...]:
    """The keys of `link_targets`, without repeats or empty ones: what the index stores and matches."""
    return tuple(key for key in dict.fromkeys(link_key(t) for t in link_targets) if key)
