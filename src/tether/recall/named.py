"""Files a prompt names stand for touched files (DESIGN §5): "why does `charge.py` retry twice?" is about
`src/billing/charge.py` before the agent has opened it, as a later read or edit of it would say.

A name counts when it is a path in the project (`src/billing/charge.py`, Claude Code's `@src/billing/charge.py`,
`charge.py:120`, an absolute path inside the root) or a file name with an extension that the repo map knows at
`PLACES` places at most (`charge.py`; not `index.ts` found in forty directories). Nothing outside the root is
ever taken: not `..`, not a symbolic link that leads out, not a URL's path.

    >>> candidates("see `src/a.py:12`, @docs/b.md, Cargo.toml. Not https://x.io/c.py or v1.2")
    ['src/a.py', 'docs/b.md', 'Cargo.toml']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

# At most this many files from one prompt (the hooks pass the last five files touched).
MOST = 5
# A bare file name at more places than this names no one file (`index.ts`, `mod.rs`, `__init__.py`).
PLACES = 3
# At most this many path-like words of one prompt are looked up (each may read the repo map's paths once): a
# pasted log of a thousand paths must not hold the prompt hook for seconds.
LOOKUPS = 20

# Runs of the characters a path is written with; `:` ends one (`a.py:12`, `a.py::f`, a URL's scheme).
_TOKEN = re.compile(r"[\w@./~-]+")
# A file name with an extension that starts with a letter: `charge.py`, `Cargo.toml`; not `v1.2` nor `e.g`.
_FILE_NAME = re.compile(r"[\w.-]*[\w-]\.[A-Za-z][A-Za-z0-9]{0,7}")


class PathIndex(Protocol):
    """What `named_files` asks of the repo map (`tether.repo.map.RepoMap.named`)."""

    def named(self, name: str, most: int) -> list[str]: ...


def candidates(prompt: str) -> list[str]:
    """The path-like words of `prompt`, in order, once each: with a `/` inside, or a file name. Which of them
    name a file is for `named_files` to find out (`and/or`, `e.g` name none)."""
    out: dict[str, None] = {}
    for match in _TOKEN.finditer(prompt):
        start, token = match.start(), match.group()
        if start and prompt[start - 1] == ":" and token.startswith("//"):
            continue  # a URL: scheme://host/path
        token = token.lstrip("@").removeprefix("./").rstrip(".-")
        if not token or token.startswith("~") or ".." in token.split("/"):
            continue
        if "/" in token.strip("/") or _FILE_NAME.fullmatch(token.rstrip("/").rsplit("/", 1)[-1]):
            out.setdefault(token, None)
    return list(out)


def named_files(prompt: str, root: Path | None, index: PathIndex | None) -> list[str]:
    """The project's files `prompt` names, repo-relative, at most `MOST`, in the prompt's order."""
    if root is None or not prompt:
        return []
    base = root.resolve()
    found: dict[str, None] = {}
    for token in candidates(prompt)[:LOOKUPS]:
        for path in _resolve(token, base, index):
            found.setdefault(path, None)
        if len(found) >= MOST:
            break
    return list(found)[:MOST]


def take_named(
    prompt: str, root: Path | None, index: PathIndex | None, touched: Sequence[str]
) -> tuple[list[str], list[str]]:
    """(the files `prompt` names, repo-relative; `touched` with them first, as absolute paths): what the prompt
    hook, `tether recall` and the UI's playground rank with."""
    named = named_files(prompt, root, index)
    if not named or root is None:
        return named, list(touched)
    return named, with_named([str(root / path) for path in named], touched)


def with_named(named: Sequence[str], touched: Sequence[str]) -> list[str]:
    """The named files first (at most `MOST`), then the touched ones: a name in the prompt says where the work
    goes now, the touched files where it went."""
    first = list(named[:MOST])
    return [*first, *(t for t in touched if t not in first)]


def _resolve(token: str, base: Path, index: PathIndex | None) -> list[str]:
    rel = _inside(token, base)
    if rel is None:
        return []
    if _is_file(base, rel):
        return [rel]
    if index is None or token.startswith("/"):
        return []  # an absolute path that is not a file here names nothing else
    return [path for path in index.named(rel, PLACES) if _is_file(base, path)]


def _inside(token: str, base: Path) -> str | None:
    """`token` as a repo-relative path, or None when it is outside the root."""
    if token.startswith("/"):
        try:
            return Path(token).resolve().relative_to(base).as_posix()
        except (ValueError, OSError, RuntimeError):
            return None
    return token.rstrip("/") or None


def _is_file(base: Path, rel: str) -> bool:
    try:
        target = (base / rel).resolve()
        target.relative_to(base)  # a link that leads out of the root names nothing here
        return target.is_file()
    except (ValueError, OSError, RuntimeError):
        return False
