"""`tether doctor`: every problem with a workspace's memory, each naming what to do about it.

Notes that do not parse, memories whose every file is gone (dead references), anchors whose code is gone
(dead anchors), and memories lacking a vector of the configured embedder.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tether.memories import Memories
from tether.model.memory import Memory
from tether.notes.sync import SyncReport
from tether.store.base import Query


@dataclass
class Problem:
    kind: str  # note | dead-ref | dead-anchor | config | index
    where: str
    message: str


@dataclass
class Doctor:
    problems: list[Problem] = field(default_factory=list)
    memories: int = 0
    notes: int = 0


def dead_refs(memories: Memories, among: Iterable[Memory] | None = None) -> list[tuple[Memory, list[str]]]:
    """Active project memories (or those of `among`) whose every named path is gone from the work tree."""
    repo = memories.repo_map()
    if repo is None:
        return []
    return [
        (memory, list(memory.files))
        for memory in (memories.find(Query(scope="project")) if among is None else among)
        if memory.files and not any(repo.exists(path) for path in memory.files)
    ]


def doctor(memories: Memories, synced: SyncReport) -> Doctor:
    """The problems of `memories` after the sync that produced `synced`."""
    report = Doctor()
    for problem in synced.problems:
        report.problems.append(Problem("note", problem.path, problem.problem))
    report.memories = memories.store.count(Query(status=None))
    report.notes = len(memories.store.note_refs())
    for memory, _ in dead_refs(memories):
        report.problems.append(
            Problem(
                "dead-ref",
                memory.id,
                f"every file it names is gone ({', '.join(memory.files)}): "
                f"`tether edit {memory.id} --file NEW` or `tether rm {memory.id}`",
            )
        )
    from tether.lifecycle.reanchor import dead_anchors

    for memory, lost in dead_anchors(memories):
        places = ", ".join(f"{a.label()} in {a.path}" for a in lost)
        report.problems.append(
            Problem(
                "dead-anchor",
                memory.id,
                f"the code it is anchored to is gone ({places}); it is about the file now: "
                f"`tether edit {memory.id} --at PATH::SYMBOL` to anchor it again, or `--no-anchors`",
            )
        )
    embedder = memories.embedder
    missing = len(memories.store.missing_vectors(embedder.id))
    if missing:
        report.problems.append(
            Problem(
                "index",
                str(memories.paths.index),
                f"{missing} memories lack {embedder.id} vectors: run `tether reindex`",
            )
        )
    return report
