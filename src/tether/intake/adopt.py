"""Adopted rule files (`tether rules adopt`): tether, not the agent, delivers the rules (issue 17 §3).

An agent loads its rule files whole on every session (pydantic-ai: 47,390 characters of CLAUDE.md beside
the 675 tether injects). Adopting keeps the files as the source (`rules sync` still reads them) and has the
agent skip them where it allows that (the installer writes the agent's setting), so recall hands over
the two or three rules a prompt needs instead. What always mattered stays always there: a short *core*,
injected at session start, made of the rules the file marks `<!-- tether: core -->`, then the gotchas of
the root rule files (they govern every file), in file order, within CORE_CHARS.

The state (which settings file was changed, its bytes before, the core's ids) is the user's, on this
machine: `$TETHER_HOME/adopted/<project>.json`. A rebuilt index must not forget how to undo.

    core = choose_core(ws)       # the memories to keep in front of the agent
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import ValidationError
from tether.fs import write_atomic
from tether.intake.rulefiles import find_rule_files, read_rule_file, rule_scope
from tether.memories import Memories
from tether.model.memory import Memory
from tether.store.base import Query

__all__ = [
    "CORE_CHARS",
    "CORE_HEADER",
    "Adoption",
    "choose_core",
    "core_lines",
    "core_lines_for",
    "load",
    "save",
    "state_path",
]

# About 300 tokens: a tenth of what pydantic-ai's CLAUDE.md costs, and as much as the two or three recalled
# memories of a prompt. The core is for the rules a wrong first edit would break, not a second rule file.
CORE_CHARS = 1200
CORE_HEADER = "=== Project rules (core; the rule files are delivered by tether) ==="


@dataclass
class Adoption:
    """What `rules adopt` changed for one agent, enough to undo it byte for byte."""

    agent: str
    settings: str  # absolute path of the settings file written
    before: str | None  # its text before (None: it did not exist)
    after: str  # its text as adopt wrote it: undo restores `before` only over this
    excluded: list[str]  # what the setting now excludes (absolute paths)
    created_dirs: list[str] = field(default_factory=list)  # directories adopt made for the file
    core: list[str] = field(default_factory=list)  # memory ids of the pinned core


def state_path(ws: Memories) -> Path:
    """Where this project's adoption is recorded, under the user's `$TETHER_HOME`."""
    if ws.root is None:
        raise ValidationError(
            "rules adopt needs a project: run it inside a repository with `tether init` done"
        )
    key = hashlib.sha256(str(ws.root.resolve()).encode()).hexdigest()[:16]
    return ws.paths.home / "adopted" / f"{key}.json"


def load(ws: Memories) -> list[Adoption]:
    """The project's adoptions (one per agent), or [] when the rule files were never adopted."""
    path = state_path(ws)
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ValidationError(
            f"{path}: cannot read the adoption record ({exc}); delete it to start over"
        ) from exc
    return [Adoption(**item) for item in data.get("agents", [])]


def save(ws: Memories, adoptions: list[Adoption]) -> None:
    path = state_path(ws)
    if not adoptions:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"root": str(ws.root), "agents": [asdict(a) for a in adoptions]}
    write_atomic(path, json.dumps(payload, indent=1) + "\n")


def choose_core(ws: Memories, budget: int = CORE_CHARS) -> list[Memory]:
    """The rule memories to inject at every session start once the agent no longer loads the files.

    Marked `core` first (the file says so), then gotchas of root rule files; each rule's injected line
    counts against `budget` (the block's header and footer do not), and a rule that does not fit is left
    for recall (a later, shorter one may still fit).
    """
    if ws.root is None:
        return []
    by_hash = {
        (m.origin, m.content_hash): m
        for m in ws.find(Query(status=("active",), origin="rules:", scope="project"))
    }
    marked: list[Memory] = []
    gotchas: list[Memory] = []
    from tether.intake.ruletext import render  # adopting reads the rules; a session start does not

    for path in find_rule_files(ws.root):
        try:
            units = read_rule_file(ws.root, path)
        except ValidationError:
            continue  # `rules sync` reports it
        for unit in units:
            item = render(unit, ws.root)
            memory = by_hash.get((f"rules:{path}", item.content_hash)) if item is not None else None
            if item is None or memory is None:
                continue
            if item.core:
                marked.append(memory)
            elif memory.category == "gotcha" and rule_scope(path) == "":
                gotchas.append(memory)
    chosen: list[Memory] = []
    used = 0
    for memory in [*marked, *gotchas]:
        cost = len(core_lines_for([memory])[0]) + 3  # as injected, with "- " and the newline
        if used + cost <= budget and memory not in chosen:
            chosen.append(memory)
            used += cost
    return chosen


def core_lines(ws: Memories, skip: set[str]) -> list[str]:
    """The core's lines for session start (ids in `skip` are already shown), or [] when not adopted."""
    try:
        ids = [mid for adoption in load(ws) for mid in adoption.core]
    except ValidationError:
        return []
    memories = [ws.store.get(mid) for mid in dict.fromkeys(ids) if mid not in skip]
    return core_lines_for([m for m in memories if m is not None and m.status == "active"])


def core_lines_for(memories: list[Memory]) -> list[str]:
    """The injected line of each core memory."""
    return [f"★ [{m.category}] {m.id} — {m.summary} (via core rule)" for m in memories]
