"""Memories that arrived by git from someone else since the person last looked (`tether review --incoming`).

A note committed by a teammate (or by anyone who could push) is recalled like the person's own. This lists
the notes that commits by other authors added or changed since a marker, the commit the person last marked
as reviewed; the marker lives in `$TETHER_HOME/reviewed.json`, keyed by checkout, so a clone cannot move it.

>>> [(i.memory_id, i.author) for i in incoming(ws)]  # doctest: +SKIP
[('0a1b2c3d', 'Dana <dana@example.com>')]
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from tether.errors import TetherError
from tether.fs import write_atomic
from tether.memories import Memories
from tether.repo.git import git

# The notes' directory inside a project, as git names it (from the project's root).
_NOTES = ".tether/memories/"
# Without a marker, the history read at most: enough for any team's recent memories.
FIRST_LOOK_COMMITS = 500


@dataclass(frozen=True)
class Incoming:
    path: str  # the note, relative to the project's root
    status: str  # git's letter of the latest change: A(dded), M(odified), D(eleted)
    commit: str
    author: str  # "Name <email>"
    memory_id: str | None  # the memory the note holds now (None: deleted, or it does not parse)


def marker_path(ws: Memories) -> Path:
    return ws.paths.home / "reviewed.json"


def marker(ws: Memories) -> str | None:
    """The commit last marked reviewed in this checkout, if any."""
    try:
        data = json.loads(marker_path(ws).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get(str(_root(ws))) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def mark_reviewed(ws: Memories) -> str | None:
    """Set the marker to HEAD: what arrived so far has been seen. Returns HEAD (None in an empty repo)."""
    root = _root(ws)
    head = (
        git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).stdout.decode().strip() or None
    )
    if head is None:
        return None
    path = marker_path(ws)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    data[str(root)] = head
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n", mode=0o600)
    return head


def incoming(ws: Memories) -> list[Incoming]:
    """Notes that commits by authors other than the person (`git config user.email`) added, changed or
    deleted since the marker (the whole recent history without one), newest change per note first."""
    root = _root(ws)
    me = git(root, "config", "user.email", check=False).stdout.decode().strip().lower()
    top = Path(git(root, "rev-parse", "--show-toplevel").stdout.decode().strip())
    since = marker(ws)
    valid = since and git(root, "cat-file", "-e", f"{since}^{{commit}}", check=False).returncode == 0
    revisions = [f"{since}..HEAD"] if valid else ["-n", str(FIRST_LOOK_COMMITS), "HEAD"]
    head = git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        return []  # no commit yet
    proc = git(
        root,
        "log",
        "--no-merges",
        "--no-renames",
        "--format=%x01%H%x02%ae%x02%an",
        "--name-status",
        "-z",
        *revisions,
        "--",
        _NOTES,
    )
    by_path = {os.path.realpath(p): mid for p, (mid, _) in ws.store.note_refs().items()}
    seen: dict[str, Incoming] = {}
    sha = author = email = ""
    tokens = [t for t in proc.stdout.split(b"\0")]
    i = 0
    while i < len(tokens):
        token = tokens[i].decode("utf-8", "replace").lstrip("\n")
        i += 1
        if token.startswith("\x01"):
            sha, email, name = [*token[1:].split("\x02"), "", ""][:3]
            author = f"{name} <{email}>"
            continue
        if not token or i >= len(tokens) or token[0] not in "ACDMTUXB":
            continue
        path = os.fsdecode(tokens[i])
        i += 1
        if email.lower() == me or not sha:
            continue
        absolute = top / path
        try:
            relative = absolute.relative_to(root).as_posix()
        except ValueError:
            continue
        if relative not in seen:  # newest first: the first change seen is the latest
            memory_id = by_path.get(os.path.realpath(absolute))
            seen[relative] = Incoming(relative, token[0], sha[:12], author, memory_id)
    return list(seen.values())


def _root(ws: Memories) -> Path:
    if ws.root is None:
        raise TetherError("incoming memories are a project's: run `tether init` at the repository root first")
    return ws.root.resolve()
